"""Statistics of the geometry audit: speaker-level permutation tests of the group spreads,
the two-way text/voice jackknife, and :func:`audit`, which runs the whole audit on a grid."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from interbias.analysis.geometry.disparity import PROBE_AXES, disparity_statistics
from interbias.analysis.geometry.linalg import (
    AXES,
    PAIRS,
    TAU_REL,
    Decomposition,
    EmbeddingGrid,
    Fidelity,
    UnbalancedGridError,
    axis_subspaces,
    fidelities,
    grid_decomposition,
    group_fidelities,
    leakage,
    spreads,
)
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

DEFAULT_ATTRIBUTES = ("gender", "age_band", "accent")
Z95 = 1.959963984540054
CI_METHOD = "jackknife-2way"


# ---- speaker-level permutation test ----------------------------------------------------------


def distinct_arrangements(labels: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Every distinct ordering of the multiset ``labels``, in lexicographic order."""
    counts = Counter(labels)
    keys = sorted(counts)
    current: list[str] = []

    def rec() -> Iterator[tuple[str, ...]]:
        if len(current) == len(labels):
            yield tuple(current)
            return
        for k in keys:
            if counts[k]:
                counts[k] -= 1
                current.append(k)
                yield from rec()
                current.pop()
                counts[k] += 1

    yield from rec()


def n_arrangements(labels: Sequence[str]) -> int:
    """``n! / Π_g n_g!``."""
    out = math.factorial(len(labels))
    for c in Counter(labels).values():
        out //= math.factorial(c)
    return out


@dataclass(frozen=True)
class PermutationTest:
    observed: dict[str, float]
    p_values: dict[str, float]
    method: str  # "exact" or "monte-carlo"
    n_perm: int


def permutation_test(
    grid: EmbeddingGrid,
    attribute: str,
    *,
    n_perm: int,
    rng: np.random.Generator,
    tau: float | None = None,
    tau_rel: float = TAU_REL,
    advance: Callable[[int], None] | None = None,
) -> PermutationTest:
    """Speaker-level permutation p-values of ``Γ_a`` for one grouping attribute.

    Null: voices are exchangeable between groups. The voices' group labels are shuffled (group
    sizes kept) and ``Γ_a`` recomputed. When the distinct arrangements number at most ``n_perm``
    all are enumerated and ``p = #{Γ* ≥ Γ_obs} / N`` (the observed arrangement included);
    otherwise ``p = (1 + #{Γ* ≥ Γ_obs}) / (n_perm + 1)`` over ``n_perm`` shuffles drawn from ``rng``.
    """
    if n_perm < 1:
        raise AnalysisError(f"permutations must be >= 1; got {n_perm}")
    vg = dict(zip(grid.voice, grid.groups[attribute], strict=True))
    voices = sorted(vg)
    labels = [vg[v] for v in voices]
    row_voice = np.searchsorted(np.asarray(voices, dtype=object), grid.voice)
    observed = spreads(group_fidelities(grid, grid.groups[attribute], tau=tau, tau_rel=tau_rel))
    exact = n_arrangements(labels) <= n_perm
    arrangements: Iterator[Sequence[str]]
    if exact:
        arrangements, total = distinct_arrangements(labels), n_arrangements(labels)
    else:
        base = np.asarray(labels, dtype=object)
        arrangements, total = (base[rng.permutation(len(base))] for _ in range(n_perm)), n_perm
    hits = dict.fromkeys(AXES, 0)
    for arr in arrangements:
        g = spreads(group_fidelities(grid, np.asarray(arr, dtype=object)[row_voice], tau=tau, tau_rel=tau_rel))
        for axis in AXES:
            hits[axis] += int(g[axis] >= observed[axis] - 1e-12)
        if advance:
            advance(1)
    p = {a: hits[a] / total if exact else (1 + hits[a]) / (n_perm + 1) for a in AXES}
    p = {a: math.nan if math.isnan(observed[a]) else p[a] for a in AXES}
    return PermutationTest(observed, p, "exact" if exact else "monte-carlo", total)


# ---- the audit ---------------------------------------------------------------------------------

Key = tuple[str, ...]
#: The leakage pair of each probe axis with the voice axis (keys of ``("Lambda", a, b)``).
VOICE_PAIR = {"sem": ("sem", "voice"), "expr": ("voice", "expr")}


def disparity_keys(attributes: Sequence[str]) -> list[Key]:
    """The ``(metric, attribute, axis)`` keys :func:`disparity_statistics` fills."""
    keys: list[Key] = []
    for attr in attributes:
        keys.append(("delta", attr, "voice"))
        keys += [(k, attr, a) for a in PROBE_AXES for k in ("Dbar", "Dbar_model", "floor", "active_margin")]
    return keys


def default_m(grid: EmbeddingGrid) -> int:
    """One ``m`` for every pair: ``min_a (C_a − 1)`` capped at ``⌊d/2⌋`` (two subspaces can then
    be disjoint)."""
    s = grid.shape
    return max(1, min(s["n_texts"] - 1, s["n_voices"] - 1, s["n_styles"] - 1, s["d"] // 2))


def statistics(
    grid: EmbeddingGrid, attributes: Sequence[str], m: int, *, tau: float | None = None, tau_rel: float = TAU_REL
) -> tuple[dict[Key, float], dict[str, Fidelity]]:
    """Every point statistic, keyed ``("F", a)``, ``("F_group", attr, g, a)``, ``("Gamma", attr,
    a)``, ``("Lambda", a, b)``, ``("ell", a, b)`` and the disparities of
    :mod:`interbias.analysis.geometry.disparity` (:func:`disparity_keys`). ``F_a`` is ``nan`` when the rows hold one class
    of ``a`` (a jackknife replicate of a 2-text grid); Λ and ℓ are ``nan`` when ``m`` exceeds some
    axis's ``C_a − 1``. Also returns the :class:`Fidelity` records of the defined axes."""
    n_cls = {a: len(set(grid.labels(a))) for a in AXES}
    usable = {a: grid.labels(a) for a in AXES if n_cls[a] >= 2}
    fid = fidelities(grid.x, usable, tau=tau, tau_rel=tau_rel)
    out: dict[Key, float] = {("F", a): fid[a].value if a in fid else math.nan for a in AXES}
    for attr in attributes:
        by_group = group_fidelities(grid, grid.groups[attr], tau=tau, tau_rel=tau_rel)
        for g, vals in by_group.items():
            out.update({("F_group", attr, g, a): v for a, v in vals.items()})
        out.update({("Gamma", attr, a): v for a, v in spreads(by_group).items()})
    if m <= min(n_cls.values()) - 1:
        bases = axis_subspaces(grid.x, {a: grid.labels(a) for a in AXES}, m, tau=tau, tau_rel=tau_rel)
        for a, b in PAIRS:
            lk = leakage(bases[a], bases[b])
            out[("Lambda", a, b)], out[("ell", a, b)] = lk.aggregate, lk.peak
        leak = {(a, "voice"): (out[("Lambda", *pair)], out[("ell", *pair)]) for a, pair in VOICE_PAIR.items()}
        out.update(disparity_statistics(grid, bases, leak, attributes, tau=tau, tau_rel=tau_rel))
    else:
        for a, b in PAIRS:
            out[("Lambda", a, b)] = out[("ell", a, b)] = math.nan
        out.update({(k, attr, a): math.nan for k, attr, a in disparity_keys(attributes)})
    return out, fid


def jackknife_half_widths(
    by_text: Sequence[Mapping[Key, float]], by_voice: Sequence[Mapping[Key, float]], keys: Sequence[Key]
) -> dict[Key, tuple[float, int]]:
    """``(1.96·√(V_text + V_voice), finite replicates)`` per key, with the delete-one variance
    ``V = (k−1)/k Σ_i (θ_(i) − θ̄)²`` over each family of ``k`` leave-one-out values; ``nan``
    unless every replicate is finite."""
    out = {}
    for key in keys:
        var, finite, complete = 0.0, 0, True
        for family in (by_text, by_voice):
            vals = np.asarray([rep.get(key, math.nan) for rep in family], dtype=float)
            finite += int(np.isfinite(vals).sum())
            if len(vals) < 2 or not np.isfinite(vals).all():
                complete = False
                continue
            var += (len(vals) - 1) / len(vals) * float(np.sum((vals - vals.mean()) ** 2))
        out[key] = (Z95 * math.sqrt(var) if complete else math.nan, finite)
    return out


@dataclass(frozen=True)
class Audit:
    """Every statistic of one audit with its half-width, the permutation tests and the check."""

    shape: dict[str, int]
    attributes: tuple[str, ...]
    values: dict[Key, float]
    fidelity: dict[str, Fidelity]
    half_widths: dict[Key, tuple[float, int]]
    permutation: dict[str, PermutationTest]
    m: int
    decomposition: Decomposition | None
    decomposition_note: str
    seed: int


def audit(
    grid: EmbeddingGrid,
    *,
    attributes: Sequence[str] | None = None,
    m: int | None = None,
    tau: float | None = None,
    tau_rel: float = TAU_REL,
    n_perm: int = 200,
    jackknife: bool = True,
    seed: int,
    advance: Callable[[int], None] | None = None,
) -> Audit:
    """F, Λ/ℓ, F_{a|g}, Γ with permutation p-values and jackknife half-widths, and the
    decomposition check (its refusal recorded when the grid is unbalanced).

    The permutations of attribute ``A`` draw from ``derive_rng("geometry-permutation", seed, A)``.
    ``advance(1)`` is called once per permutation and per jackknife replicate."""
    attributes = tuple(grid.groups) if attributes is None else tuple(attributes)
    unknown = [a for a in attributes if a not in grid.groups]
    if unknown:
        raise AnalysisError(
            f"unknown group attribute(s) {', '.join(unknown)}; have: {', '.join(grid.groups) or '(none)'}"
        )
    m = default_m(grid) if m is None else int(m)
    values, fid = statistics(grid, attributes, m, tau=tau, tau_rel=tau_rel)
    if math.isnan(values[("Lambda", *PAIRS[0])]):
        raise AnalysisError(f"leakage: m={m} exceeds min_a (C_a − 1) = {min(f.n_classes - 1 for f in fid.values())}")
    try:
        dec: Decomposition | None = grid_decomposition(grid.x, grid.text, grid.voice, grid.style)
        note = f"balanced: {dec.rows_per_cell} row(s) per (text, voice, style) cell"
    except UnbalancedGridError as exc:
        dec, note = None, str(exc)
    perm = {
        attr: permutation_test(
            grid,
            attr,
            n_perm=n_perm,
            rng=derive_rng("geometry-permutation", seed, attr),
            tau=tau,
            tau_rel=tau_rel,
            advance=advance,
        )
        for attr in attributes
    }
    half: dict[Key, tuple[float, int]] = {}
    if jackknife:
        families = []
        for col in (grid.text, grid.voice):
            reps = []
            for unit in sorted(set(col)):
                reps.append(statistics(grid.subset(col != unit), attributes, m, tau=tau, tau_rel=tau_rel)[0])
                if advance:
                    advance(1)
            families.append(reps)
        half = jackknife_half_widths(families[0], families[1], list(values))
    return Audit(grid.shape, attributes, values, fid, half, perm, m, dec, note, seed)


def work_units(grid: EmbeddingGrid, attributes: Sequence[str], n_perm: int, jackknife: bool) -> int:
    """How many times :func:`audit` calls ``advance`` (for a progress bar)."""
    perms = sum(
        min(n_perm, n_arrangements([g for _, g in sorted(dict(zip(grid.voice, grid.groups[a], strict=True)).items())]))
        for a in attributes
    )
    return perms + (grid.shape["n_texts"] + grid.shape["n_voices"] if jackknife else 0)
