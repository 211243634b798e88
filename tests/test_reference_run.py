"""A fixed small run (mfcc-stats, the tiny corpus, gender × noise with enrol and test chains)
against a reference kept under ``tests/data/reference_run``: the trial list, every cell's scores
and results.csv (apart from the run id and code revision) must match what the code produced when
the reference was taken. Refactors of the runner, the embedding stage or the run directory that
change any measured number, any trial or any file layout fail here.

Regenerate only for an intended change of output:
``INTERBIAS_REGEN_REFERENCE=1 pytest tests/test_reference_run.py``."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import manifest_file

from interbias.runner import RunOptions, run

REFERENCE = Path(__file__).parent / "data" / "reference_run"
#: results.csv columns that name this run rather than what it measured.
VOLATILE = ["run_id", "revision"]
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
    gender = {
        "name": "gender",
        "type": "population",
        "attribute": "gender",
        "reference": "female",
        "levels": {"female": "female", "male": "male"},
    }
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
    for name in want:
        assert got[name] == want[name], name


def test_the_run_directory_is_read_back_through_rundir(fresh_run: Path) -> None:
    from interbias.rundir import RunDir

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
