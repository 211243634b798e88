"""The paired gate on an E16-like grid (gender × clean, Gaussian and crosstalk noise at 25, 15
and 5 dB): one noise level made 5 dB worse (15 → 10 dB) exits 1, an operator-draw null (the
same chains, another draw) exits 0. Scores are simulated per trial: a shared part (speaker
effects and trial noise, :mod:`synthetic_runs`), a target-score loss growing as the SNR falls
and the noise draw's own per-trial noise; clean cells are the same scores in both runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from synthetic_runs import ScoreModel, clustered_scores, clustered_trials, write_run
from typer.testing import CliRunner

from interbias.cli import app
from interbias.trials.sampler import TrialList
from interbias.utils.seeding import derive_rng

FACTORS = [("gender", "population", "female"), ("noise", "acoustic", "clean")]
LEVELS = ["clean"] + [f"{k}_{s}" for k in ("gaussian", "crosstalk") for s in (25, 15, 5)]


def _loss(snr_db: float) -> tuple[float, float]:
    """(target-score loss, sd of the draw's per-trial noise) at ``snr_db``."""
    return 1.6 * 10 ** (-snr_db / 20), 0.8 * 10 ** (-snr_db / 40)


def _run(folder: Path, trials, *, draw: int, snr_of: dict[str, float]) -> Path:
    cells = {}
    for gender in ("female", "male"):
        part = trials[trials["stratum"] == f"gender={gender}"]
        lab = part["label"].to_numpy(bool)
        shared = clustered_scores(part, ScoreModel(), 2.0, derive_rng("gate", gender))
        for level in LEVELS:
            scores = shared.copy()
            if level != "clean":
                loss, sd = _loss(snr_of[level])
                rng = derive_rng("gate-draw", gender, level, draw)
                scores = scores - loss * lab + rng.normal(0, sd, len(part))
            cells[("M", (gender, level))] = (part["trial_id"].to_numpy(), scores)
    folder = write_run(folder, trials, cells, FACTORS, experiment="E16")
    return _with_utterances(folder, trials)


def _with_utterances(folder: Path, trials: pd.DataFrame) -> Path:
    """The run's trial list with utterance columns and its recorded sha256 (as ``run`` writes it)."""
    frame = trials.assign(
        enrol=trials["enrol_speaker"] + "_e" + trials["trial_id"].astype(str),
        test=trials["test_speaker"] + "_t" + trials["trial_id"].astype(str),
        label=trials["label"].astype(np.int8),
    )
    frame.to_parquet(folder / "trials.parquet", index=False)
    (folder / "trials.json").write_text(json.dumps(TrialList(frame).meta()))
    return folder


def _gate(base: Path, new: Path) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["runs", "compare", str(base), str(new), "--paired", "--bootstrap", "300"])
    return res.exit_code, res.output


def test_a_five_db_step_fails_the_gate_and_draw_nulls_pass(tmp_path: Path) -> None:
    trials = clustered_trials({"gender=female": 40, "gender=male": 40}, 10, 10)
    snr = {lv: float(lv.split("_")[1]) for lv in LEVELS if lv != "clean"}
    base = _run(tmp_path / "base", trials, draw=0, snr_of=snr)
    for draw in (1, 2):
        code, out = _gate(base, _run(tmp_path / f"null{draw}", trials, draw=draw, snr_of=snr))
        assert code == 0, out
        assert "left out of the family: 4 identical scores in both runs (identical inputs)" in out
        assert "smallest detectable regression" in out
    worse = _run(tmp_path / "worse", trials, draw=1, snr_of={**snr, "gaussian_15": 10.0})
    code, out = _gate(base, worse)
    assert code == 1, out
    flagged = [line for line in out.splitlines() if line.startswith("regression: E16 /")]
    assert flagged and all("noise=gaussian_15" in line for line in flagged), out
