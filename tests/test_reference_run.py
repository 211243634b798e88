"""A fixed small run (mfcc-stats, the tiny corpus, gender × noise with enrol and test chains)
against a reference kept under ``tests/data/reference_run``. What must match, and how
(docs/reproducibility.md):

- the trial list (``trials.parquet``): byte for byte, on every machine;
- results.csv (apart from the run id and code revision): every column but the metrics exactly;
  the metrics (rank statistics of the scores) equal unless a near-tie of a target and a
  non-target score (closer than twice :data:`SCORE_TOL`) could flip on another CPU dispatch, and
  then within what those flips can move them;
- every cell's scores file: ids, labels and dropped flags exactly, scores within
  :data:`SCORE_TOL` (float32 cosine products summed by another BLAS kernel or ISA path differ in
  their last bits: 2.4e-7 was seen between OpenBLAS's Haswell and SkylakeX kernels).

Byte identity of a rerun on one machine is pinned elsewhere (tests/test_determinism.py,
tests/test_runner.py). Refactors of the runner, the embedding stage or the run directory that
change any measured number, any trial or any file layout fail here.

Regenerate only for an intended change of output:
``INTERBIAS_REGEN_REFERENCE=1 pytest tests/test_reference_run.py``. With
``INTERBIAS_NUMERICS_REPORT=FILE`` the largest differences seen are written to FILE (JSON; the
dispatch-override check in tests/test_dispatch.py reads it)."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import gender_factor, tiny_experiment
from run_helpers import manifest_file

from interbias.metrics.registry import results_columns
from interbias.run.conductor import RunOptions, run

REFERENCE = Path(__file__).parent / "data" / "reference_run"
#: results.csv columns that name this run rather than what it measured.
VOLATILE = ["run_id", "revision"]
#: Largest difference a score may show against the reference on another machine.
SCORE_TOL = 1e-5
#: results.csv columns that are rank statistics of the scores ("equal up to ties").
METRICS = list(results_columns())

pytestmark = pytest.mark.numerics
SMALL = {"targets": 12, "min_speakers": 4}
CHAINS = {
    "clean": [],
    "n10": [{"op": "noise", "kind": "gaussian", "snr_db": 10}],
    "n5c": [{"op": "noise", "kind": "gaussian", "snr_db": 5}, {"op": "packet_loss", "rate": 0.1}],
}


def _results_without_volatile(path: Path) -> str:
    frame = pd.read_csv(path, keep_default_na=False, dtype=str).drop(columns=VOLATILE)
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return buf.getvalue()


def _outputs(run_dir: Path) -> dict[str, bytes]:
    files = {"trials.parquet": (run_dir / "trials.parquet").read_bytes()}
    files["results.csv"] = _results_without_volatile(run_dir / "results.csv").encode()
    for p in sorted((run_dir / "scores").rglob("*.parquet")):
        files[p.relative_to(run_dir).as_posix()] = p.read_bytes()
    return files


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory, tiny_corpus) -> Path:
    tmp = tmp_path_factory.mktemp("ref")
    manifest = manifest_file(tiny_corpus, tmp / "m")
    noise = {
        "name": "noise",
        "type": "acoustic",
        "apply_to": "test",
        "reference": "clean",
        "levels": CHAINS,
    }
    gender = gender_factor()
    exp = tiny_experiment(tmp, name="R01", corpus={"manifest": str(manifest)}, trials=SMALL, factors=[gender, noise])
    opts = RunOptions(
        experiment=str(exp),
        encoders=["mfcc-stats"],
        out=tmp / "out",
        cache_dir=tmp / "cache",
        quiet=True,
        command=["t"],
    )
    # BLAS and torch at one thread: cosine products summed in another order can flip a near-tie
    # of this 12-trial run, and the reference pins bytes, not the machine's thread count
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    try:
        with threadpool_limits(limits=1):
            torch.set_num_threads(1)
            return run(opts).run_dir
    finally:
        torch.set_num_threads(before)


def _near_tie_flips(ref: pd.DataFrame) -> int:
    """Target/non-target pairs of kept trials whose reference scores lie within 2·SCORE_TOL:
    the pairs another dispatch could order the other way."""
    kept = ref[~ref["dropped"].to_numpy(bool)]
    s = kept["score"].to_numpy(np.float64)
    lab = kept["label"].to_numpy(bool)
    t, n = np.sort(s[lab]), np.sort(s[~lab])
    lo = np.searchsorted(n, t - 2 * SCORE_TOL, side="left")
    hi = np.searchsorted(n, t + 2 * SCORE_TOL, side="right")
    return int((hi - lo).sum())


def compare_scores(got: bytes, want: bytes, name: str) -> tuple[float, int, int, int]:
    """(largest |score difference|, near-tie pairs, targets, non-targets) of one cell; ids,
    labels and dropped flags must be equal and scores within SCORE_TOL."""
    g, w = pd.read_parquet(io.BytesIO(got)), pd.read_parquet(io.BytesIO(want))
    assert list(g.columns) == list(w.columns), name
    for col in g.columns:
        if col != "score":
            assert g[col].equals(w[col]), f"{name}: column {col} differs"
    gs, ws = g["score"].to_numpy(np.float64), w["score"].to_numpy(np.float64)
    assert np.array_equal(np.isnan(gs), np.isnan(ws)), name
    diff = float(np.nanmax(np.abs(gs - ws), initial=0.0))
    assert diff <= SCORE_TOL, f"{name}: a score differs by {diff:.3g} > {SCORE_TOL:g}"
    kept = ~w["dropped"].to_numpy(bool)
    lab = w["label"].to_numpy(bool)
    return diff, _near_tie_flips(w), int((lab & kept).sum()), int((~lab & kept).sum())


def compare_results(got: str, want: str, ties: dict[str, tuple[int, int, int]]) -> float:
    """Every column but :data:`METRICS` equal as text; a metric equal unless its cell has
    near-tie pairs, then within flips × (1/n_target + 1/n_nontarget). Returns the largest
    metric difference."""
    g = pd.read_csv(io.StringIO(got), keep_default_na=False, dtype=str)
    w = pd.read_csv(io.StringIO(want), keep_default_na=False, dtype=str)
    assert list(g.columns) == list(w.columns)
    exact = [c for c in g.columns if c not in METRICS]
    pd.testing.assert_frame_equal(g[exact], w[exact])
    largest = 0.0
    for i, cell in enumerate(w["cell"]):
        flips, nt, nn = ties.get(cell, (0, 1, 1))
        bound = flips * (1 / max(nt, 1) + 1 / max(nn, 1))
        for m in METRICS:
            d = abs(float(g[m].iloc[i]) - float(w[m].iloc[i]))
            largest = max(largest, d)
            assert d <= bound, f"{cell}: {m} {g[m].iloc[i]} vs reference {w[m].iloc[i]} ({flips} near-tie pairs)"
    return largest


def test_a_fresh_run_matches_the_reference_run(fresh_run: Path) -> None:
    got = _outputs(fresh_run)
    if os.environ.get("INTERBIAS_REGEN_REFERENCE"):
        shutil.rmtree(REFERENCE, ignore_errors=True)
        for name, data in got.items():
            (REFERENCE / name).parent.mkdir(parents=True, exist_ok=True)
            (REFERENCE / name).write_bytes(data)
    want = {p.relative_to(REFERENCE).as_posix(): p.read_bytes() for p in sorted(REFERENCE.rglob("*")) if p.is_file()}
    assert sorted(got) == sorted(want)
    assert len(got) == 2 + 6  # trials, results and six cells' scores
    assert got["trials.parquet"] == want["trials.parquet"]  # trials: identical on every machine
    cells = pd.read_csv(io.StringIO(want["results.csv"].decode()), keep_default_na=False, dtype=str)
    by_path = {fresh_run_scores_name(row.model, row.cell): row.cell for row in cells.itertuples(index=False)}
    score_diff, ties = 0.0, {}
    for name in want:
        if name.startswith("scores/"):
            diff, flips, nt, nn = compare_scores(got[name], want[name], name)
            score_diff = max(score_diff, diff)
            ties[by_path[name]] = (flips, nt, nn)
    metric_diff = compare_results(got["results.csv"].decode(), want["results.csv"].decode(), ties)
    report = os.environ.get("INTERBIAS_NUMERICS_REPORT")
    if report:
        Path(report).write_text(
            json.dumps({"max_score_diff": score_diff, "max_metric_diff": metric_diff, "near_ties": ties}) + "\n"
        )


def fresh_run_scores_name(model: str, cell: str) -> str:
    """A cell's scores file, relative to the run directory (the run directory's own naming)."""
    from interbias.run.rundir import RunDir

    return RunDir(Path(".")).scores_path(model, cell).as_posix()


def test_the_run_directory_is_read_back_through_rundir(fresh_run: Path) -> None:
    from interbias.run.rundir import RunDir

    run = RunDir(fresh_run)
    results = run.read_results(dtype={"model": str, "cell": str})
    assert len(results) == 6
    for row in results.itertuples(index=False):
        assert run.scores_path(row.model, row.cell).is_file()
        record = run.cell_record(row.model, row.cell)
        assert record is not None and record["row"]["cell"] == row.cell
        assert len(run.read_scores(row.model, row.cell)) == len(run.read_trials().for_stratum(row.stratum))
    exp = run.experiment()
    assert exp is not None and exp.name == "R01"
    assert [c.id for c in exp.cells()] == list(results["cell"])
    assert run.n_finished_cells() == 6
