"""Cosine scoring of trials from L2-normalised embeddings, BLAS-bound.

Trials are grouped by blocks of consecutive enrolment rows (an O(N) counting sort on the
block number). For each block one of three strategies is taken, whichever a cost model in units
of one multiply-add inside a matrix product says is cheapest:

- ``dense``: one GEMM of the block's enrolment rows against every test row, then each
  trial's score is picked from the product (no gathering at all);
- ``subset``: one GEMM against only the test rows the block's trials use (gathered once);
- ``gather``: gather both rows of every trial and dot them (sparse, scattered blocks).

A gathered float costs about ``_GATHER_COST`` GEMM multiply-adds (random memory access and
no register reuse). Every strategy computes the same float32 dot products up to summation order
(so scores agree with a float64 loop within D·2⁻²³); which strategy runs depends only on the
index arrays and shapes, never on timing, so reruns are byte-identical.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

#: Cost of gathering one float, in GEMM multiply-adds (≈30–100 measured on a 2-core
#: Skylake with OpenBLAS; the strategy choice is insensitive within that range).
_GATHER_COST = 32
#: Most float32 elements of one block's product matrix (64 MiB).
_PRODUCT_BUDGET = 1 << 24
#: Most enrolment rows per block.
_MAX_ROWS = 4096
#: Below n_test / this many trials a block's test rows are found by sorting, not by a scan.
_SORT_FACTOR = 16
#: Trials per chunk in the gather strategy (bounds the gathered memory to 2 × chunk × dim × 4 bytes).
_GATHER_CHUNK = 1 << 14


def rows_per_block(n_test: int) -> int:
    """Enrolment rows per block so that a block × all-tests product stays within budget."""
    return int(max(1, min(_MAX_ROWS, _PRODUCT_BUDGET // max(1, n_test))))


def block_strategy(n_rows: int, n_test: int, n_cols: int, n_trials: int) -> str:
    """The cheapest strategy for a block: ``dense``, ``subset`` or ``gather`` (see module doc).

    Costs in GEMM multiply-adds per embedding dimension: dense = rows·n_test; subset =
    rows·cols + G·cols (gathering the used test rows once); gather = (2G + 1)·trials.
    A strategy whose product matrix would exceed the memory budget is not considered.
    """
    costs = {"gather": (2 * _GATHER_COST + 1) * n_trials}
    if n_rows * n_test <= _PRODUCT_BUDGET:
        costs["dense"] = n_rows * n_test
    if n_rows * n_cols <= _PRODUCT_BUDGET:
        costs["subset"] = n_rows * n_cols + _GATHER_COST * n_cols
    return min(costs, key=lambda strategy: (costs[strategy], strategy))


def _gather_dot(enrol: np.ndarray, test: np.ndarray, e_idx: np.ndarray, t_idx: np.ndarray) -> np.ndarray:
    out = np.empty(len(e_idx), dtype=np.float32)
    for start in range(0, len(e_idx), _GATHER_CHUNK):
        sl = slice(start, start + _GATHER_CHUNK)
        out[sl] = np.einsum("ij,ij->i", enrol[e_idx[sl]], test[t_idx[sl]])
    return out


def cosine_scores(
    enrol: np.ndarray,
    test: np.ndarray,
    enrol_idx: np.ndarray,
    test_idx: np.ndarray,
    *,
    strategies: Counter[str] | None = None,
) -> np.ndarray:
    """score_i = <enrol[enrol_idx_i], test[test_idx_i]> for unit-norm float32 rows.

    Computed in float32 (matrix products grouped by enrolment block, see the module doc),
    returned as float64. ``strategies``, when given, counts the strategy taken for each block.
    """
    enrol = np.ascontiguousarray(enrol, dtype=np.float32)
    test = np.ascontiguousarray(test, dtype=np.float32)
    enrol_idx = np.asarray(enrol_idx, dtype=np.int64)
    test_idx = np.asarray(test_idx, dtype=np.int64)
    n_e, n_t = len(enrol), len(test)
    if len(enrol_idx) == 0:
        return np.empty(0, dtype=np.float64)
    rows = rows_per_block(n_t)
    n_blocks = (n_e + rows - 1) // rows
    order: np.ndarray | None = None
    e_sorted, t_sorted = enrol_idx, test_idx
    bounds = np.array([0, len(enrol_idx)])
    if n_blocks > 1:  # group trials by block: stable radix sort on the block number
        block = enrol_idx // rows
        key_dtype = np.uint16 if n_blocks <= np.iinfo(np.uint16).max else np.int64
        order = np.argsort(block.astype(key_dtype), kind="stable")
        bounds = np.zeros(n_blocks + 1, dtype=np.int64)
        np.cumsum(np.bincount(block, minlength=n_blocks), out=bounds[1:])
        del block
        e_sorted, t_sorted = enrol_idx[order], test_idx[order]
    done = np.empty(len(enrol_idx), dtype=np.float32)  # scores in block order
    mark = np.zeros(n_t, dtype=bool)
    for b in range(len(bounds) - 1):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        if lo == hi:
            continue
        first = b * rows
        block_rows = enrol[first : min(first + rows, n_e)]
        e_blk, t_pos = e_sorted[lo:hi], t_sorted[lo:hi]
        if _SORT_FACTOR * (hi - lo) < n_t:  # few trials: sort them rather than scan all tests
            cols, t_slot = np.unique(t_pos, return_inverse=True)
        else:
            mark[t_pos] = True
            cols = np.flatnonzero(mark)
            mark[cols] = False
            t_slot = None
        strategy = block_strategy(len(block_rows), n_t, len(cols), hi - lo)
        if strategy == "gather":
            done[lo:hi] = _gather_dot(block_rows, test, e_blk - first, t_pos)
        else:
            if strategy == "dense":
                product, width, col = block_rows @ test.T, n_t, t_pos
            else:
                product, width = block_rows @ test[cols].T, len(cols)
                col = np.searchsorted(cols, t_pos) if t_slot is None else t_slot
            flat = np.multiply(e_blk, width)  # row-major position of each trial in the product
            if first:
                flat -= first * width
            flat += col
            np.take(product.ravel(), flat, out=done[lo:hi])
        if strategies is not None:
            strategies[strategy] += 1
    if order is None:
        return done.astype(np.float64)
    out = np.empty(len(enrol_idx), dtype=np.float64)
    out[order] = done
    return out
