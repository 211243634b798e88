"""run/work.py directly: which cell × encoder records are reused, which are scored again, and
the failure-share check on finished cells."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from interbias.experiments.schema import Cell
from interbias.operators import Chain
from interbias.run.results import chain_fingerprint
from interbias.run.rundir import RunDir
from interbias.run.work import check_failure_shares, record_status
from interbias.utils.errors import RunError

CELL = Cell((("g", "f"),), "g=f", Chain(), Chain())


@dataclass
class FakeEncoder:
    label: str = "enc"
    fingerprint: str = "fp1"


class FakeTrials:
    def for_stratum(self, name: str) -> pd.DataFrame:
        return pd.DataFrame({"trial_id": range(10)})


def _write(run: RunDir, **changes: object) -> None:
    record = {
        "row": {"chain_fingerprint": chain_fingerprint(CELL), "n_dropped_trials": 0},
        "encoder_fingerprint": "fp1",
        "trials_sha256": "T",
        "audio_sha256": "A",
        "failures": [],
    }
    record.update(changes)
    run.write_cell("enc", CELL.id, pd.DataFrame({"trial_id": [0], "score": [0.5]}), record)


def test_record_status_new_finished_changed(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r")
    assert record_status(run, CELL, FakeEncoder(), "T", "A") == ("new", None)
    _write(run)
    status, rec = record_status(run, CELL, FakeEncoder(), "T", "A")
    assert status == "finished" and rec is not None and rec["trials_sha256"] == "T"
    for enc, trials, audio in (
        (FakeEncoder(fingerprint="fp2"), "T", "A"),
        (FakeEncoder(), "U", "A"),
        (FakeEncoder(), "T", "B"),
    ):
        assert record_status(run, CELL, enc, trials, audio)[0] == "changed"
    _write(run, row={"no": "chains"})
    assert record_status(run, CELL, FakeEncoder(), "T", "A") == ("changed", None)


def test_finished_cells_over_the_failure_share_stop_the_invocation(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r")
    rec = {"row": {"n_dropped_trials": 3}}
    check_failure_shares(run, FakeTrials(), [(CELL, FakeEncoder(), rec)], 0.3)  # 30 % is allowed
    with pytest.raises(RunError) as exc:
        check_failure_shares(run, FakeTrials(), [(CELL, FakeEncoder(), rec)], 0.2)
    assert str(exc.value) == (
        f"1 finished cell(s) in {run.path} exceed --max-failure-share 0.2: g=f / enc: 3 of 10 trials dropped "
        "(30.0%); nothing was changed (rerun with --max-failure-share 0.3 to use them as they are, or give "
        "another --out to score the run again)"
    )
