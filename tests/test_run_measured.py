"""What a results row measured (interbias/run/measured.py), written once: an export of a run with a
dev split and of a spoofing run holds exactly the row's trials, and re-scoring the export gives
the row's numbers; every score-file reader speaks one label vocabulary."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from conftest import tiny_experiment

from interbias.analysis.groups.fairness import read_score_table
from interbias.analysis.security.cm import read_cm_frame
from interbias.cli.scores.metrics import read_scores
from interbias.metrics.verification import summarize
from interbias.run.conductor import RunOptions, run
from interbias.run.export import export_scores
from interbias.run.measured import LABELS, bona_fide, in_split, kept, measured, read_score_file
from interbias.utils.errors import MetricError

SMALL = {"targets": 12, "min_speakers": 3}


def _run(tmp: Path, session_cache: Path, exp: Path) -> Path:
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "r", quiet=True, command=["t"], cache_dir=session_cache
    )
    return run(opts).run_dir


@pytest.fixture(scope="module")
def split_run(tmp_path_factory, tiny_corpus, session_cache) -> Path:
    tmp = tmp_path_factory.mktemp("split")
    return _run(tmp, session_cache, tiny_experiment(tmp, name="M01", trials={**SMALL, "dev_share": 0.5}))


@pytest.fixture(scope="module")
def spoof_run(tmp_path_factory, tiny_corpus, session_cache) -> Path:
    """A run whose attacks are other speakers' files, quietened (so not byte-identical)."""
    tmp = tmp_path_factory.mktemp("spoof")
    rows = []
    for i, spk in enumerate(tiny_corpus.speakers()):
        src = [u for u in tiny_corpus if u.speaker != spk][i]
        x, sample_rate_hz = sf.read(tiny_corpus.resolve(src), dtype="float32")
        sf.write(tmp / f"att-{i}.flac", 0.5 * x, sample_rate_hz)
        rows.append(
            {"path": f"att-{i}.flac", "target_speaker": spk, "generator": "copy", "source_speaker": src.speaker}
        )
    pd.DataFrame(rows).to_csv(tmp / "attacks.csv", index=False)
    exp = tiny_experiment(tmp, name="M02", trials=SMALL, spoofing={"attacks": str(tmp / "attacks.csv")})
    return _run(tmp, session_cache, exp)


def _rescored(run_dir: Path, out: Path, fmt: str) -> None:
    """Every exported file re-scored by `interbias scores metrics`' reader gives its row's numbers."""
    report = export_scores(run_dir, fmt, out)
    results = pd.read_csv(run_dir / "results.csv", dtype={"cell": str})
    assert len(report.files) == len(results) > 0
    for entry, row in zip(report.files, results.itertuples(index=False), strict=True):
        scores, labels = read_scores(out / entry["file"])
        assert (len(scores), int(labels.sum())) == (row.n_target + row.n_nontarget, row.n_target)
        got = summarize(scores, labels)
        assert (got["eer"], got["min_dcf"], got["auc"]) == (row.eer, row.min_dcf, row.auc), entry["file"]
        assert entry["n_not_measured"] > 0  # dev or spoof trials were left out, and counted


@pytest.mark.parametrize("fmt", ["wespeaker", "csv"])
def test_export_of_a_dev_split_run_rescores_to_the_row(split_run: Path, tmp_path: Path, fmt: str) -> None:
    assert (pd.read_parquet(split_run / "trials.parquet")["split"] == "dev").any()
    _rescored(split_run, tmp_path / fmt, fmt)


def test_export_of_a_spoofing_run_rescores_to_the_row(spoof_run: Path, tmp_path: Path) -> None:
    trials = pd.read_parquet(spoof_run / "trials.parquet")
    assert (trials["trial_type"] == "spoof").any()
    _rescored(spoof_run, tmp_path / "ws", "wespeaker")


def test_measured_is_eval_bona_fide_and_kept() -> None:
    frame = pd.DataFrame(
        {
            "split": ["eval", "dev", "eval", "eval"],
            "trial_type": ["target", "target", "spoof", "nontarget"],
            "dropped": [False, False, False, True],
        }
    )
    assert measured(frame).tolist() == [True, False, False, False]
    assert in_split(frame, "dev").tolist() == [False, True, False, False]
    assert bona_fide(frame).tolist() == [True, True, False, True]
    assert kept(frame).tolist() == [True, True, True, False]
    bare = pd.DataFrame({"x": [1, 2]})  # no split, no types, nothing dropped: every trial measured
    assert measured(bare).tolist() == [True, True] and not in_split(bare, "dev").any()


def test_every_reader_speaks_one_label_vocabulary(tmp_path: Path) -> None:
    words = sorted(LABELS)
    csv = tmp_path / "s.csv"
    pd.DataFrame({"score": np.linspace(0, 1, len(words)), "label": [w.upper() for w in words]}).to_csv(csv, index=False)
    want = [LABELS[w] for w in words]
    assert read_scores(csv)[1].tolist() == want
    assert read_cm_frame(csv)["label"].tolist() == want
    assert read_score_table(csv)["label"].tolist() == want
    sv = tmp_path / "s.score"
    sv.write_text("".join(f"e{i} t{i} 0.{i} {w}\n" for i, w in enumerate(words)))
    cm = tmp_path / "s.cm"
    cm.write_text("".join(f"u{i} 0.{i} {w}\n" for i, w in enumerate(words)))
    assert read_scores(sv)[1].tolist() == want and read_cm_frame(cm)["label"].tolist() == want


def test_score_file_problems_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "b.score"
    bad.write_text("e t 0.5 target\n\ne t nan nontarget\n")
    with pytest.raises(MetricError, match=r"b\.score: line 3: score 'nan' is not a finite number$"):
        read_score_file(bad, error=MetricError)
    bad.write_text("e t 0.5 maybe\n")
    with pytest.raises(MetricError, match=r"line 1: label 'maybe' is not one of 1/0, true/false"):
        read_score_file(bad, error=MetricError)
    with pytest.raises(MetricError, match="expected 'ID SCORE LABEL'"):
        read_cm_frame(tmp_path / "b.score")
