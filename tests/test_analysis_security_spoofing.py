"""Spoofing: metrics by hand, attack manifests, spoof trials, proxy attacks, E10 end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import TINY, tiny_experiment
from run_helpers import isolated_cache
from scipy.signal import lfilter
from typer.testing import CliRunner

from interbias.analysis.security.spoofing import (
    SPOOF_COLUMNS,
    deception_success_rate,
    dsr_by_cell,
    spoof_summary,
    spoofing_for_run,
    weighted_dsr,
)
from interbias.cli import app
from interbias.corpora.attacks import PREFIX, load_attacks, read_attacks
from interbias.corpora.voicewarp import convert, levinson, pitch_shift, warp_formants, wsola
from interbias.experiments.decision_spec import DEFAULT_POINT
from interbias.experiments.schema import CorpusSpec, SpoofingSpec, load_experiment
from interbias.metrics.verification import eer_from_sweep, threshold_sweep
from interbias.run.calibrate import calibration_columns
from interbias.run.results import COLUMNS
from interbias.trials.sampler import COLUMNS as TRIAL_COLUMNS
from interbias.trials.sampler import draw_trials
from interbias.utils.errors import ManifestError, MetricError, TrialError

REPO = Path(__file__).resolve().parents[1]

# ---- metrics -------------------------------------------------------------------------------


def test_spoof_summary_hand_computed() -> None:
    # bona fide perfectly separated: EER 0 at threshold 0.7 (first point with FNR = FPR = 0)
    scores = [0.9, 0.8, 0.7, 0.1, 0.2, 0.6, 0.75, 0.5, 0.85, 0.3]
    types = ["target"] * 3 + ["nontarget"] * 3 + ["spoof"] * 4
    s = spoof_summary(scores, types)
    assert s.spoof_threshold == 0.7
    assert (s.n_spoof, s.n_spoof_accepted, s.spoof_far) == (4, 2, 0.5)  # 0.75 and 0.85 >= 0.7
    # targets 0.7 0.8 0.9 vs spoofs 0.3 0.5 0.75 0.85: FNR-FPR changes sign between 0.75
    # (1/3, 1/2) and 0.8 (1/3, 1/4): EER = 1/3 + (2/3)(1/3 - 1/3) = 1/3
    assert s.eer_spoof == pytest.approx(1 / 3)
    # a-DCF (ASVspoof 5 costs): best at 0.7, no miss, no non-target, 2 of 4 spoofs accepted:
    # C_fa,cm·P_spf·½ = 20·0.05·½ = 0.5, over min(10·0.05 + 20·0.05, 1·0.9) = 0.9
    assert s.a_dcf == pytest.approx(0.5 / 0.9)
    with pytest.raises(MetricError) as exc:
        spoof_summary([0.1, 0.2], ["target", "nontarget"])
    assert str(exc.value) == "no spoof trials: spoof metrics are undefined"


def test_dsr_is_w_over_a_times_n_and_averages_models() -> None:
    assert deception_success_rate([3, 1, 2], 4) == pytest.approx(6 / 12)
    assert deception_success_rate([3, 1, 2], 4) == pytest.approx(np.mean([3 / 4, 1 / 4, 2 / 4]))
    assert deception_success_rate([0], 10) == 0.0
    with pytest.raises(MetricError) as exc:
        deception_success_rate([5], 4)
    assert str(exc.value) == "wrong-detection counts must lie in [0, A = 4]"
    results = pd.DataFrame(
        {
            "experiment": ["E10"] * 4,
            "cell": ["c1", "c1", "c2", "c2"],
            "model": ["A", "B", "A", "B"],
            "n_spoof": [10, 10, 10, 10],
            "n_spoof_accepted": [7, 2, 0, 1],
        }
    )
    d = dsr_by_cell(results).set_index("cell")
    assert d.loc["c1"].dsr == pytest.approx(9 / 20) and d.loc["c2"].dsr == pytest.approx(1 / 20)
    assert d.loc["c1"].n_models == 2 and d.loc["c1"].models == "A;B"
    results.loc[1, "n_spoof"] = 9
    with pytest.raises(Exception) as exc:
        dsr_by_cell(results)
    assert "encoders scored different numbers of spoof trials ([9, 10])" in str(exc.value)


@pytest.mark.parametrize(
    ("r1", "r2", "base", "published"),
    [  # ADD 2023 Table 5 (DSR_R1, DSR_R2, DSR_R2baseline, WDSR), in per cent
        (37.91, 49.60, 49.80, 44.97),
        (37.80, 27.81, 77.05, 43.63),
        (43.20, 51.58, 23.45, 41.48),
        (33.16, 36.25, 51.30, 38.63),
        (0.00, 35.55, 24.85, 18.76),
        (41.72, 0.00, 0.00, 16.69),
    ],
)
def test_weighted_dsr_reproduces_add2023_table5(r1: float, r2: float, base: float, published: float) -> None:
    # inputs and outputs are rounded to 0.01: the weighted sum can differ by at most 0.01
    assert weighted_dsr(r1, r2, base) == pytest.approx(published, abs=0.01)


# ---- attack manifests and spoof trials ----------------------------------------------------


def _hand_attacks(tmp_path: Path, corpus, speakers: list[str], per: int = 2) -> Path:
    """'Attacks' made of copies of other speakers' corpus files (content does not matter here)."""
    rows = []
    for i, spk in enumerate(speakers):
        others = [u for u in corpus if u.speaker != spk]
        for k in range(per):
            src = others[(i * per + k) % len(others)]
            dst = tmp_path / "att" / f"{spk}-{k}.flac"
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(corpus.resolve(src), dst)
            rows.append(
                {
                    "path": f"att/{spk}-{k}.flac",
                    "target_speaker": spk,
                    "generator": "copy",
                    "source_speaker": src.speaker,
                }
            )
    p = tmp_path / "attacks.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    return p


def test_attack_manifest_reading_and_errors(tmp_path: Path, tiny_corpus) -> None:
    spk = tiny_corpus.speakers()
    path = _hand_attacks(tmp_path, tiny_corpus, spk[:2])
    att = read_attacks(path, tiny_corpus)
    assert len(att) == 4 and att.generators() == ["copy"]
    u = att.utterances[0]
    assert u.id == PREFIX + f"att/{spk[0]}-0" and u.speaker == spk[0] and Path(u.path).is_absolute()
    target = next(x for x in tiny_corpus if x.speaker == spk[0])
    assert (u.gender, u.accent) == (target.gender, target.accent)  # inherited from the target
    assert u.get("source_speaker") != spk[0] and len(u.sha256) == 64
    frame = pd.read_csv(path)
    frame.drop(columns="generator").to_csv(tmp_path / "a1.csv", index=False)
    frame.assign(target_speaker="nobody").to_csv(tmp_path / "a2.csv", index=False)
    frame.assign(path="att/missing.flac").to_csv(tmp_path / "a3.csv", index=False)
    cases = {
        "a1.csv": "missing required column(s) generator; found: path, source_speaker, target_speaker",
        "a2.csv": "1 target speaker(s) are not in corpus 'synthetic'; first: nobody",
        "a3.csv": "4 attack file(s) do not exist; first: att/missing.flac",
    }
    for name, msg in cases.items():
        with pytest.raises(ManifestError) as exc:
            read_attacks(tmp_path / name, tiny_corpus)
        assert str(exc.value) == f"attack manifest {tmp_path / name}: {msg}"


def test_spoof_trials_pair_genuine_enrolment_with_attacks(tmp_path: Path, tiny_corpus) -> None:
    att = read_attacks(_hand_attacks(tmp_path, tiny_corpus, tiny_corpus.speakers(), per=2), tiny_corpus)
    exp = load_experiment(tiny_experiment(tmp_path, trials={"targets": 20, "min_speakers": 4, "spoofs": 15}))
    tl = draw_trials(exp, tiny_corpus, attacks=att)
    again = draw_trials(exp, tiny_corpus, attacks=att)
    assert tl.sha256 == again.sha256 and tl.frame.equals(again.frame)
    f = tl.frame
    assert list(f.columns) == [*TRIAL_COLUMNS, "trial_type"]
    sp = f[f.trial_type == "spoof"]
    assert (sp.label == 0).all() and sp.groupby("stratum").size().tolist() == [15, 15]
    by_id = tiny_corpus.by_id()
    attacks = {u.id: u for u in att.utterances}
    for row in sp.itertuples():
        assert row.enrol in by_id and by_id[row.enrol].speaker == row.enrol_speaker  # a genuine enrolment
        assert attacks[row.test].speaker == row.enrol_speaker == row.test_speaker  # imitating that speaker
        assert by_id[row.enrol].gender == row.stratum.split("=")[1]
    bona = f[f.trial_type != "spoof"]
    assert ((bona.trial_type == "target") == (bona.label == 1)).all()
    plain = draw_trials(exp, tiny_corpus)
    assert list(plain.frame.columns) == TRIAL_COLUMNS  # no attacks: the trial list is unchanged
    assert plain.frame.equals(
        bona.drop(columns="trial_type").reset_index(drop=True).assign(trial_id=np.arange(len(bona), dtype=np.int64))
    )
    assert tl.info["spoof"]["n_spoof_per_stratum"] == 15 and tl.info["spoof"]["attacks_sha256"] == att.sha256


def test_a_stratum_without_attacks_is_an_error(tmp_path: Path, tiny_corpus) -> None:
    females = sorted({u.speaker for u in tiny_corpus if u.gender == "female"})
    att = read_attacks(_hand_attacks(tmp_path, tiny_corpus, females[:2]), tiny_corpus)
    exp = load_experiment(tiny_experiment(tmp_path))
    with pytest.raises(TrialError) as exc:
        draw_trials(exp, tiny_corpus, attacks=att)
    assert str(exc.value) == (
        f"T01: stratum gender=male has no spoof pairs: no attack of {tmp_path / 'attacks.csv'} imitates a speaker "
        "with enrolment utterances there (2 speaker(s) are attacked)"
    )


# ---- proxy attack signal processing ----------------------------------------------------------

SR = 16000


def _voice(f0: float, formant: float, dur: float = 1.5) -> np.ndarray:
    e = np.zeros(int(dur * SR))
    e[:: int(SR / f0)] = 1.0
    r, th = 0.97, 2 * np.pi * formant / SR
    y = lfilter([1.0], [1.0, -2 * r * np.cos(th), r * r], e)
    return 0.3 * y / np.max(np.abs(y))


def _f0(y: np.ndarray) -> float:
    """F0 from the autocorrelation peak between 60 and 400 Hz (FFT autocorrelation)."""
    y = y[2000:-2000]
    spec = np.fft.rfft(y, 2 * len(y))
    c = np.fft.irfft(np.abs(spec) ** 2)[: len(y)]
    lo, hi = SR // 400, SR // 60
    return SR / (lo + int(np.argmax(c[lo:hi])))


def _formant(y: np.ndarray, order: int = 12) -> float:
    seg = y[4000:6048] * np.hanning(2048)
    r = np.correlate(seg, seg, "full")[2047 : 2048 + order]
    a, _ = levinson(r)
    w = np.linspace(0, np.pi, 4096)
    h = 1 / np.abs(np.exp(-1j * np.outer(w, np.arange(order + 1))) @ a)
    return float(w[np.argmax(h)] * SR / (2 * np.pi))


def test_levinson_matches_scipy_toeplitz_solve() -> None:
    from scipy.linalg import solve_toeplitz

    r = np.array([3.0, 1.2, 0.5, 0.1])
    a, err = levinson(r)
    coef = solve_toeplitz(r[:3] * np.array([1 + 1e-9, 1, 1]), -r[1:])
    assert a[0] == 1 and a[1:] == pytest.approx(coef, rel=1e-6)
    assert err == pytest.approx(r[0] + coef @ r[1:], rel=1e-6)


def test_warping_moves_pitch_and_formants_as_asked() -> None:
    x = _voice(100, 500)
    assert _f0(x) == pytest.approx(100, rel=0.02) and _formant(x) == pytest.approx(500, rel=0.03)
    assert np.max(np.abs(wsola(x, 1.0, SR) - x)) < 1e-8  # identity stretch
    assert len(wsola(x, 1.5, SR)) == int(round(len(x) * 1.5)) and _f0(wsola(x, 1.5, SR)) == pytest.approx(100, rel=0.02)
    y, ratio = pitch_shift(x, 1.5, SR)
    assert len(y) == len(x) and ratio == 1.5 and _f0(y) == pytest.approx(150, rel=0.02)
    assert np.linalg.norm(warp_formants(x, 1.0, SR) - x) / np.linalg.norm(x) < 1e-6
    y = warp_formants(x, 1.2, SR)
    assert _f0(y) == pytest.approx(100, rel=0.02) and _formant(y) == pytest.approx(600, rel=0.03)
    y, rec = convert(x, SR, pitch_ratio=1.5, formant_ratio=1.2)
    assert _f0(y) == pytest.approx(150, rel=0.02) and _formant(y) == pytest.approx(600, rel=0.03)
    assert np.sqrt(np.mean(y.astype(float) ** 2)) == pytest.approx(np.sqrt(np.mean(x**2)), rel=1e-3)
    y2, _ = convert(x, SR, pitch_ratio=1.5, formant_ratio=1.2)
    assert np.array_equal(y, y2) and rec["envelope_factor"] == pytest.approx(0.8)


# ---- proxy builders ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tts_attacks(tiny_corpus, session_cache):
    spec = SpoofingSpec(builder="synthetic-tts", options={"similarity": 0.5, "per_target": 4})
    return load_attacks(spec, CorpusSpec("synthetic", options=dict(TINY)), tiny_corpus, session_cache)


def test_tts_proxy_attacks_are_labelled_and_imitate_their_target(tts_attacks, tiny_corpus) -> None:
    assert len(tts_attacks) == 4 * len(tiny_corpus.speakers())
    assert tts_attacks.generators() == ["proxy-tts:espeak-ng-clone(similarity=0.5)"]
    by_spk = {u.speaker: u for u in tiny_corpus}
    corpus_sha = {u.sha256 for u in tiny_corpus}
    used_text = {u.text for u in tiny_corpus}
    for a in tts_attacks.utterances:
        src = a.get("source_speaker")
        assert src != a.speaker and by_spk[src].gender == by_spk[a.speaker].gender
        assert a.get("attack_type") == "tts" and "proxy" in a.get("proxy")
        assert a.sha256 not in corpus_sha and a.text not in used_text  # new audio, unseen sentences
        assert a.duration_s > 1.0


def test_vc_proxy_is_deterministic(tmp_path: Path, tiny_corpus) -> None:
    spec = SpoofingSpec(builder="synthetic-vc", options={"per_target": 1})
    cs = CorpusSpec("synthetic", options=dict(TINY))
    a = load_attacks(spec, cs, tiny_corpus, tmp_path / "c1")
    b = load_attacks(spec, cs, tiny_corpus, tmp_path / "c2")
    assert [u.sha256 for u in a.utterances] == [u.sha256 for u in b.utterances] and a.sha256 == b.sha256
    by_id = tiny_corpus.by_id()
    for u in a.utterances:
        src = by_id[u.get("source_utterance")]
        assert src.speaker == u.get("source_speaker") != u.speaker and src.sha256 != u.sha256
        assert u.get("generator") == "proxy-vc:wsola-lpc-warp(strength=1)"


def test_builder_refuses_other_corpora(tiny_corpus, tmp_path: Path) -> None:
    with pytest.raises(Exception) as exc:
        load_attacks(SpoofingSpec(builder="synthetic-vc"), CorpusSpec("commonvoice"), tiny_corpus, tmp_path)
    assert str(exc.value) == (
        "attack builder synthetic-vc makes proxy attacks for the embedded synthetic corpus only "
        "(this experiment uses 'commonvoice'); give an attack manifest file instead"
    )


# ---- E10 end to end ------------------------------------------------------------------------------


def tiny_variant(tmp_path: Path, name: str) -> Path:
    """conditions/<name>.yaml with its synthetic variant pointed at the tiny corpus."""
    data = yaml.safe_load((REPO / "conditions" / f"{name}.yaml").read_text())
    v = data["variants"]["synthetic"]
    v["corpus"] = {"name": "synthetic", "options": dict(TINY)}
    v["trials"].update({"min_speakers": 3, "utterances_per_speaker": 4, "split_by": ["gender"]})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_e10_runs_offline_and_reports_spoof_far_per_encoder(
    tmp_path: Path, tiny_corpus, tts_attacks, session_cache
) -> None:
    exp = tiny_variant(tmp_path, "E10")
    cache = isolated_cache(tmp_path, session_cache)
    args = ["run", str(exp), "--corpus", "synthetic", "--encoders", "mfcc-stats", "--max-trials", "40"]
    args += ["--cache-dir", str(cache)]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "r"), "-q"])
    assert res.exit_code == 0, res.output
    run_dir = next((tmp_path / "r").iterdir())
    results = pd.read_csv(run_dir / "results.csv")
    assert list(results.columns) == COLUMNS + calibration_columns([DEFAULT_POINT]) + SPOOF_COLUMNS
    trials = pd.read_parquet(run_dir / "trials.parquet")
    from interbias.utils.paths import slug

    for row in results.itertuples():
        sc = pd.read_parquet(run_dir / "scores" / slug(row.model) / f"{slug(row.cell)}.parquet")
        sc = sc.merge(trials[["trial_id", "stratum"]], on="trial_id")
        assert (sc.stratum == row.stratum).all()
        ev = sc[sc.split == "eval"]
        bona = ev[ev.trial_type != "spoof"]
        thr = eer_from_sweep(threshold_sweep(bona.score, bona.label))[1]
        spoof = ev[ev.trial_type == "spoof"].score
        assert row.spoof_threshold == pytest.approx(thr)
        assert row.n_spoof == len(spoof) > 0
        assert row.spoof_far == pytest.approx((spoof >= thr).mean())
        assert row.eer == pytest.approx(eer_from_sweep(threshold_sweep(bona.score, bona.label))[0])
        assert row.n_target == (bona.label == 1).sum()  # eval bona fide trials only
    dsr = pd.read_csv(run_dir / "spoofing.csv")
    assert dsr.dsr.tolist() == pytest.approx(results.spoof_far.tolist())  # N = 1: DSR = spoof FAR
    assert spoofing_for_run(run_dir).dsr.tolist() == pytest.approx(dsr.dsr.tolist())  # the analyze hook
    fair = pd.read_csv(run_dir / "fairness_groups.csv")
    assert {"spoof_far", "n_spoof"} <= set(fair.columns)
    assert set(fair.group_by) == {"gender", "accent"}


@pytest.mark.slow
def test_e10_real_synthetic_with_campplus(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        ["run", "E10", "--corpus", "synthetic", "--encoders", "CAM++,mfcc-stats", "--out", str(tmp_path / "r"), "-q"],
    )
    assert res.exit_code == 0, res.output
    run_dir = next((tmp_path / "r").iterdir())
    results = pd.read_csv(run_dir / "results.csv")
    assert set(results.model) == {"CAM++", "mfcc-stats"} and results.spoof_far.between(0, 1).all()
    dsr = pd.read_csv(run_dir / "spoofing.csv").set_index("cell")
    for cell, sub in results.groupby("cell"):
        assert dsr.loc[cell].dsr == pytest.approx(sub.spoof_far.mean())  # equal A: DSR = mean spoof FAR
    assert (run_dir / "fairness.csv").is_file()
