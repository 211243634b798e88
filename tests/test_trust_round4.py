"""Issue 53's numbered cases: each a traceback, hang, lost record or misleading line of the
fourth trust round, and what happens now."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.cli import app

runner = CliRunner()


# ---- case 3: two speakers per stratum (one distinct non-target pair) ---------------------------


def test_the_corrected_df_without_clusters_is_nan_not_a_zero_division() -> None:
    from interbias.analysis.effects import Correction

    one_pair = Correction(None, 2.0, 1.0, 2.0, 0.0)  # type: ignore[arg-type]
    assert np.isnan(one_pair.df(np.array([1.0, 2.0]), np.array([0.1, 0.1]), 1000)).all()
    one_speaker = Correction(None, 2.0, 1.0, 0.0, 5.0)  # type: ignore[arg-type]
    assert np.isnan(one_speaker.df(np.array([1.0]), np.array([0.1]), 1000)).all()
    fine = Correction(None, 10.0, 3.0, 18.0, 40.0)  # type: ignore[arg-type]
    assert np.isfinite(fine.df(np.array([1.0]), np.array([0.1]), 1000)).all()


@pytest.fixture(scope="module")
def two_speaker_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    means = {"M": {(g, n): mu for g in ("female", "male") for n, mu in (("clean", 1.0), ("noisy", 0.5))}}
    return gender_noise_run(tmp_path_factory.mktemp("two") / "r", means, n=2, m=1)


@pytest.mark.parametrize(
    "args",
    [
        ["analyze"],
        ["report"],
        ["plan"],
        ["plan", "--bootstrap-design", "speaker", "--bootstrap", "200"],
        ["card", "M", "--out", "{tmp}"],
    ],
)
def test_two_speakers_per_stratum_give_no_interval_not_a_traceback(
    two_speaker_run: Path, args: list[str], tmp_path: Path
) -> None:
    res = runner.invoke(app, [*(a.format(tmp=tmp_path) for a in args), str(two_speaker_run)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output and "ZeroDivisionError" not in res.output
    assert res.exit_code == 0, res.output


# ---- case 1: a kill after the cells are written (attack stage, results) keeps the operations ---


@pytest.mark.slow  # 19 s; test_crash_resume kills runs in make test
def test_a_kill_after_the_cells_keeps_the_operations_record(tmp_path: Path, tiny_corpus) -> None:
    import signal

    import pandas as pd
    from conftest import tiny_experiment
    from run_helpers import manifest_file, only_run_dir, run_args, run_child

    manifest = manifest_file(tiny_corpus, tmp_path / "m")
    exp = tiny_experiment(
        tmp_path, name="K01", corpus={"manifest": str(manifest)}, trials={"targets": 20, "min_speakers": 4}
    )
    ref = run_child(run_args(exp, tmp_path / "ref", tmp_path / "ref-cache"))
    assert ref.returncode == 0, ref.stderr
    want = pd.read_parquet(only_run_dir(tmp_path / "ref") / "operations.parquet")
    assert len(want) > 0
    args = run_args(exp, tmp_path / "out", tmp_path / "cache")
    killed = run_child(args, env={"INTERBIAS_CRASH_AT": "write:results.csv"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    again = run_child(args)
    assert again.returncode == 0, again.stderr
    run_dir = only_run_dir(tmp_path / "out")
    assert (run_dir / "operations.parquet").read_bytes() == (
        only_run_dir(tmp_path / "ref") / "operations.parquet"
    ).read_bytes()


# ---- case 4: windows bounded; a hop longer than the window refused ------------------------------


def test_a_hop_longer_than_the_window_or_a_tiny_hop_is_refused() -> None:
    from interbias.experiments.sections import parse_frontend
    from interbias.utils.errors import ConfigError

    with pytest.raises(ConfigError) as exc:
        parse_frontend({"long_audio": "window", "window_s": 1, "hop_s": 2}, "x.yaml")
    assert str(exc.value) == (
        "x.yaml: frontend.hop_s: 2 s is longer than window_s 1 s: the audio between windows would not be "
        "embedded; use hop_s <= window_s"
    )
    with pytest.raises(ConfigError) as exc:
        parse_frontend({"long_audio": "window", "window_s": 1, "hop_s": 0.001}, "x.yaml")
    assert str(exc.value) == (
        "x.yaml: frontend.hop_s: 0.001 s puts 1000 windows of 1 s on each sample, more than 10; use hop_s >= 0.1 s"
    )
    fe = parse_frontend({"long_audio": "window", "window_s": 1, "hop_s": 0.1}, "x.yaml")
    assert (fe.window_s, fe.hop_s) == (1.0, 0.1)


def test_window_count_matches_the_spans_and_a_runaway_file_is_one_counted_failure(tmp_path: Path) -> None:
    import soundfile as sf

    from interbias.audio.frontend import FrontEnd
    from interbias.audio.windows import MAX_WINDOWS, window_count, window_spans
    from interbias.corpora.manifest import Manifest, Utterance
    from interbias.embedding.tasks import EmbedContext, EmbedTask, prepare
    from interbias.operators import Chain

    for n, w, h in [(160000, 3.0, 1.5), (32000, 3.0, 1.5), (96000, 3.0, 3.0), (100001, 1.0, 0.3), (16000, 1.0, 1.0)]:
        assert window_count(n, 16000, w, h) == len(window_spans(n, 16000, w, h))
    rate, seconds = 16000, 240  # 240 s at window 1 s, hop 0.1 s: 2,391 windows, over the limit
    t = np.arange(seconds * rate) / rate
    sf.write(str(tmp_path / "long.wav"), (0.2 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), rate)
    man = Manifest("t", tmp_path, (Utterance(id="long", path="long.wav", speaker="s"),))
    fe = FrontEnd(long_audio="window", window_s=1.0, hop_s=0.1)
    task = EmbedTask("long", "0" * 64, frozenset(), ((Chain(), ("enc",)),))
    ready, failed = prepare(EmbedContext(fe, man, tmp_path), task)
    assert ready == [] and len(failed) == 1
    assert failed[0].error == (
        f"long: 240.0 s of audio needs 2391 windows of 1 s every 0.1 s, more than {MAX_WINDOWS} "
        "(frontend.long_audio: window); raise hop_s or window_s, or cut the recording"
    )


# ---- case 2: every effect of a model resolved (one acoustic factor, clean vs a loud noise) -------


def test_a_report_where_every_effect_is_resolved_is_written(tmp_path: Path) -> None:
    from synthetic_runs import ScoreModel, clustered_scores, clustered_trials, write_run

    from interbias.analysis.reporting.plots import forest_rows
    from interbias.utils.seeding import derive_rng

    trials = clustered_trials({"all": 20}, 8, 8)
    cells = {
        ("M", (lv,)): (trials.trial_id.to_numpy(), clustered_scores(trials, ScoreModel(), mu, derive_rng("c2", lv)))
        for lv, mu in (("clean", 3.0), ("n20", -0.5))
    }
    run = write_run(tmp_path / "r", trials, cells, [("noise", "acoustic", "clean")])
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert (run / "report.md").is_file()
    import pandas as pd

    findings = pd.read_csv(run / "findings.csv")
    assert findings["resolved"].all()
    rows, left = forest_rows(findings, ["main"], findings["resolved"])
    assert len(rows) == len(findings) and left == 0


# ---- case 10: every numeric setting finite and in range, or one line ---------------------------


@pytest.mark.parametrize(
    "setting,message",
    [
        ("sample_rate_hz=0", "cm train: sample_rate_hz must be a finite number >= 1000, got 0"),
        ("duration_s=0", "cm train: duration_s must be a finite number > 0, got 0.0"),
        ("lr=nan", "cm train: lr must be a finite number > 0, got nan"),
        ("weight_decay=-1", "cm train: weight_decay must be a finite number >= 0, got -1.0"),
    ],
)
def test_cm_train_settings_are_finite_and_in_range(setting: str, message: str) -> None:
    from interbias.cm.train import TrainConfig
    from interbias.utils.errors import ConfigError

    key, value = setting.split("=")
    with pytest.raises(ConfigError) as exc:
        TrainConfig().override({key: value})
    assert str(exc.value) == message


def test_region_rule_weights_wdsr_floor_and_margins_refuse_nan_negative_and_inf(two_speaker_run: Path) -> None:
    from interbias.analysis.security.cm_eval import parse_floats
    from interbias.analysis.security.spoofing import weighted_dsr
    from interbias.cm.lcnn_frames import RegionRule
    from interbias.utils.errors import ConfigError, MetricError

    with pytest.raises(ConfigError, match="min_region_s be >= 0"):
        RegionRule(0.5, float("nan")).check()
    with pytest.raises(MetricError) as exc:
        parse_floats("0.5,nan", "--weights")
    assert str(exc.value) == "--weights: each value must be a finite number >= 0, got nan"
    with pytest.raises(MetricError, match=r"--alpha must be a finite number >= 0, got -0\.4"):
        weighted_dsr(0.5, 0.3, 0.2, alpha=-0.4)
    with pytest.raises(MetricError, match=r"--r2 must be a finite number >= 0, got -0\.3"):
        weighted_dsr(0.5, -0.3, 0.2)
    res = runner.invoke(app, ["analyze", str(two_speaker_run), "--gap-floor", "nan"])
    assert res.exit_code == 1
    assert res.output.strip().splitlines()[-1] == "error: --gap-floor must be a finite number >= 0, got nan"
    res = runner.invoke(
        app, ["runs", "compare", str(two_speaker_run), str(two_speaker_run), "--paired", "--equivalence", "inf"]
    )
    assert res.exit_code == 1 and res.output.strip() == "error: --equivalence must be a finite number > 0, got inf"


# ---- case 11: listings name every adapter and every CM label -----------------------------------


def test_corpus_prepare_help_names_every_adapter_and_cm_models_lists_the_frame_detector() -> None:
    import re

    from interbias.corpora import CORPORA

    res = runner.invoke(app, ["corpus", "prepare", "--help"], env={"COLUMNS": "400"})
    text = re.sub(r"\s+", " ", res.output.replace("│", " "))
    missing = [name for name in CORPORA.names() if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]
    assert missing == [], missing
    res = runner.invoke(app, ["cm", "models"])
    assert res.exit_code == 0 and any(line.startswith("LCNN-LFCC-frames") for line in res.output.splitlines())


def test_the_wide_hint_is_given_only_by_commands_that_have_the_option(capsys) -> None:
    import click
    import pandas as pd

    from interbias.cli.tables import print_frame

    frame = pd.DataFrame({f"column_{i}": [1.23456789] * 40 for i in range(30)})

    def shown(params: list[click.Parameter]) -> str:
        with click.Context(click.Command("x", params=params)):
            print_frame(frame, "t", full="t.csv")
        return " ".join(capsys.readouterr().out.split())

    assert "--wide" not in shown([]) and "full table: t.csv)" in shown([])
    assert "full table: t.csv, or --wide prints everything)" in shown([click.Option(["--wide"], is_flag=True)])


# ---- case 6: a CM checkpoint's training input policy is read back ------------------------------


def test_a_checkpoint_trained_at_8_khz_is_scored_at_8_khz_with_its_own_duration() -> None:
    from interbias.cm.models import trained_policy
    from interbias.cm.train import TrainConfig

    cfg = TrainConfig().override({"sample_rate_hz": "8000"})
    policy = trained_policy({**cfg.__dict__, "n_samples": cfg.n_samples}, "tile")
    assert (policy.sample_rate_hz, policy.n_samples) == (8000, 32000)  # 4 s at 8 kHz, not 2 s at 16 kHz
    assert trained_policy({"n_samples": 64000}, "tile").sample_rate_hz == 16000  # older checkpoints


# ---- case 7: a fairness gap from two speakers per group is not declared ------------------------


@pytest.mark.parametrize("per_group,tested", [(2, False), (6, True)])
def test_the_fairness_speaker_test_needs_five_speakers_per_group(per_group: int, tested: bool) -> None:
    from interbias.analysis.groups.fairness_cluster import SpeakerBootstrap, clustered_z
    from interbias.utils.seeding import derive_rng

    rng = derive_rng("case7", per_group)
    spk = [f"{g}{i}" for g in "ab" for i in range(per_group)]
    enrol = np.repeat(spk, 20)
    group = np.array([s[0] for s in enrol])
    error = rng.random(len(enrol)) < np.where(group == "a", 0.05, 0.6)  # a large gap
    boot = SpeakerBootstrap.draw(enrol, enrol, group, n_boot=200, rng=rng)
    ones = np.ones(len(enrol))
    _z, p, _se, note = clustered_z(
        boot, (error * (group == "a"), ones * (group == "a")), (error * (group == "b"), ones * (group == "b"))
    )
    if tested:
        assert note == "" and p < 0.05
    else:
        assert np.isnan(p) and note == (
            "not tested: a group's trials hold 2 speaker(s), fewer than 5 (the speaker bootstrap cannot estimate "
            "the spread)"
        )


def test_the_energy_vad_does_not_keep_a_dc_offset() -> None:
    from interbias.audio.frontend import SPEECH_FLOOR_DBFS
    from interbias.audio.vad import energy_mask

    rate = 16000
    x = np.full(2 * rate, 0.2)  # a DC offset through the file, a 200 Hz burst in its second half
    x[rate:] += 0.1 * np.sin(2 * np.pi * 200 * np.arange(rate) / rate)
    mask = energy_mask(x.astype(np.float32), rate, SPEECH_FLOOR_DBFS)
    assert not mask[:rate].any() and mask[rate:].all()


def test_a_main_effect_is_not_said_averaged_over_a_factor_with_one_level_in_the_results(tmp_path: Path) -> None:
    """The noisy cells errored (no rows): gender's main effect is the clean level's gap alone,
    and its label says so instead of 'averaged over noise'."""
    import pandas as pd

    means = {"M": {(g, "clean"): mu for g, mu in (("female", 2.0), ("male", 1.6))}}
    run = gender_noise_run(tmp_path / "r", means, n=12, m=6)
    res = runner.invoke(app, ["analyze", str(run), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    effects = set(pd.read_csv(run / "findings.csv")["effect"])
    assert "main gender=male − gender=female (at noise=clean: the only level in the results)" in effects
    assert not any("averaged over noise" in e for e in effects)
