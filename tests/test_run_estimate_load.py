"""Estimates say what they assume: every core free, and the load now (``os.getloadavg``); a
busy machine (1-minute load at least half the cores) gets one warning."""

from __future__ import annotations

import pytest
from conftest import wide_lines

from interbias.run import estimate as est_mod
from interbias.run.estimate import Estimate, busy_note, shared_jobs


def test_shared_jobs_split_the_cores_with_the_load() -> None:
    assert shared_jobs(2, 16, 3.0) == 2.0  # fits beside the load
    assert shared_jobs(16, 16, 0.0) == 16.0
    assert shared_jobs(16, 16, 16.0) == pytest.approx(8.0)  # 16 × 16 / 32
    assert shared_jobs(4, 2, None) == 4.0  # no load average: the cores-free figure


def test_the_cost_line_states_cores_free_and_the_load_now(monkeypatch) -> None:
    monkeypatch.setattr(est_mod, "machine_load", lambda: (4, 6.0))
    cores, load = est_mod.machine_load()
    e = Estimate("E16", "synthetic", n_strata=1, n_chains=2, n_cells=2, n_rows=2, trials_per_stratum=10)
    e.n_utterances, e.n_items, e.n_embeddings, e.utterances_from = 10, 20, 20, "built"
    e.seconds, e.cores, e.jobs, e.load = 60.0, cores, 4, load
    e.seconds_now = 60.0 * 4 / shared_jobs(4, cores, load)
    text = " ".join(e.lines())
    assert "1 stratum × 2 chain setting(s)" in text
    assert "about 60 s with all 4 cores free; at the load now (1-min load 6.0) about 2.5 min" in text
    assert busy_note(4, 6.0).startswith("note: the machine is busy (1-min load 6.0 on 4 cores)")
    assert busy_note(4, 1.9) is None and busy_note(4, None) is None


def test_validate_prints_the_load_and_warns_once_when_busy(monkeypatch, tmp_path) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app

    monkeypatch.setattr("os.getloadavg", lambda: (99.0, 99.0, 99.0))
    res = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["validate", "conditions/E16.yaml", "--encoders", "mfcc-stats"])
    assert res.exit_code == 0, res.output
    assert not wide_lines(res.output)
    flat = " ".join(res.output.split())
    assert "free; at the load now (1-min load 99.0)" in flat
    assert flat.count("note: the machine is busy (1-min load 99.0") == 1
