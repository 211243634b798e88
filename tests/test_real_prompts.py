"""Real recordings through the user path: Debian's recorded telephone prompts (two professional
voices, en_US_f_Allison and fr_CA_f_June, 8 kHz, with transcripts) in a hand-written CSV
manifest -> ``interbias data info`` -> ``interbias validate`` -> ``interbias run`` ->
``interbias report``.

The experiment is the test's own: a GSM round trip against the clean prompts, the two voices
pooled (one speaker per language, so a language stratum would have no non-target trials). A few
prompts whose digital-silence padding leaves under 1 s of signal are in the manifest on purpose:
``data info`` must report the padding and name exactly those before any run, and the run must
refuse the same ones, say why, and count them; every other file is upsampled from 8 kHz to
mfcc-stats's 16 kHz and counted as such. ``validate --manifest`` and the report name the
manifest measured. Skips where the prompts are not installed; fails under CI, where ``make
test`` installs them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import yaml
from real_audio import prompt_voices_or_skip
from typer.testing import CliRunner

from interbias.audio.frontend import decode, signal_duration_s
from interbias.cli import app
from interbias.corpora.manifest import Manifest
from interbias.corpora.prompts import SOUNDS_DIR, prompts, spoken

cli = CliRunner()
SPOKEN_PER_VOICE = 10
PADDED_PER_VOICE = 2


def choose(voice) -> tuple[list, list]:
    """Prompts at the top of the voice folder: the first with ≥ 1.5 s of signal, and the first
    whose padding leaves under 1 s of signal in a file of 1 s or more."""
    good, padded = [], []
    for p in prompts(voice):
        if "/" in p.id or not spoken(p):
            continue
        x, rate = decode(p.path)
        held, length = signal_duration_s(x[:, 0], rate), len(x) / rate
        if held >= 1.5 and len(good) < SPOKEN_PER_VOICE:
            good.append(p)
        elif length >= 1.0 and held < 1.0 and len(padded) < PADDED_PER_VOICE:
            padded.append(p)
    return good, padded


@pytest.fixture(scope="module")
def prompts_run(tmp_path_factory):
    voices = prompt_voices_or_skip(("en", "fr"))
    tmp = tmp_path_factory.mktemp("prompts")
    rows, padded = ["path,speaker,gender,language"], []
    for v in voices:
        good, pad = choose(v)
        assert len(good) == SPOKEN_PER_VOICE, v
        padded += [f"{v.folder.name}/{p.id}" for p in pad]
        rows += [f"{v.folder.name}/{p.id}.wav,{v.name},{v.gender},{v.language}" for p in good + pad]
    assert padded, "no padded prompt found: the padding assertions would test nothing"
    manifest = tmp / "calls.csv"
    manifest.write_text("\n".join(rows) + "\n")
    exp = tmp / "P01.yaml"
    exp.write_text(
        yaml.safe_dump(
            {
                "name": "P01",
                "title": "Telephone prompts through a GSM round trip",
                "corpus": "manifest",
                "factors": [
                    {
                        "name": "codec",
                        "type": "acoustic",
                        "apply_to": "test",
                        "reference": "clean",
                        "levels": {"clean": [], "gsm": [{"op": "codec", "codec": "gsm"}]},
                    }
                ],
                "trials": {"targets": 60, "min_speakers": 2},
            },
            sort_keys=False,
        )
    )
    info = cli.invoke(app, ["data", "info", str(manifest), "--data-root", str(SOUNDS_DIR), "--json"])
    assert info.exit_code == 0, info.output
    validated = cli.invoke(app, ["validate", str(exp), "--manifest", str(manifest), "--data-root", str(SOUNDS_DIR)])
    assert validated.exit_code == 0, validated.output
    args = ["run", str(exp), "--manifest", str(manifest), "--data-root", str(SOUNDS_DIR), "--encoders", "mfcc-stats"]
    args += ["--out", str(tmp / "results"), "--max-failure-share", "0.4", "--quiet"]
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    run_dir = Path(res.output.split("results: ")[1].splitlines()[0].strip()).parent
    reported = cli.invoke(app, ["report", str(run_dir)])
    assert reported.exit_code == 0, reported.output
    out = {"run_dir": run_dir, "manifest": manifest, "padded": padded, "info": json.loads(info.output)}
    return out | {"validate": validated.output}


def test_every_prompt_is_upsampled_from_8_khz_and_counted(prompts_run) -> None:
    run_dir = prompts_run["run_dir"]
    frontend = json.loads((run_dir / "run.json").read_text())["frontend"]
    assert frontend["sample_rate_hz"] == 16000
    trials = pd.read_parquet(run_dir / "trials.parquet")
    refused = set(prompts_run["padded"])
    # one count per utterance and side of the trials the row measured (those with a refused side
    # are dropped): every file is at 8 kHz
    kept = trials[~trials["enrol"].isin(refused) & ~trials["test"].isin(refused)]
    embedded = kept["enrol"].nunique() + kept["test"].nunique()
    res = pd.read_csv(run_dir / "results.csv", keep_default_na=False)
    assert len(res) == 2
    for row in res.itertuples():
        assert (row.n_upsampled, row.n_resampled, row.n_downsampled) == (embedded, embedded, 0), row.cell
        assert str(row.upsampled_from) == "8000" and row.n_speakers == 2
    report = (run_dir / "report.md").read_text()
    assert "Upsampled audio" in report and "mfcc-stats / codec=gsm: " + f"{embedded} from 8000 Hz" in report


def _edge_silence(path: Path) -> tuple[bool, bool]:
    """Whether the file starts / ends with 20 ms or more of samples within one 16-bit step of zero."""
    x, rate = sf.read(path, dtype="int16")
    quiet = np.abs(x.astype(np.int32)) <= 1
    n = int(0.02 * rate)
    return bool(quiet[:n].all()), bool(quiet[-n:].all())


def test_data_info_reports_padding_and_names_the_refused_before_any_run(prompts_run) -> None:
    audio = prompts_run["info"]["audio"]
    m = Manifest.read(prompts_run["manifest"], root=SOUNDS_DIR)
    edges = [_edge_silence(m.resolve(u)) for u in m]
    assert audio["n_leading_silence"] == sum(a for a, _ in edges) > 0
    assert audio["n_trailing_silence"] == sum(b for _, b in edges) > 0
    assert audio["sample_rates_hz"] == {"8000": len(m)}
    assert {r["id"] for r in audio["refused"]} == set(prompts_run["padded"])


def test_padded_prompts_are_refused_by_name_and_counted(prompts_run) -> None:
    run = json.loads((prompts_run["run_dir"] / "run.json").read_text())
    refused = {f["utterance"] for f in run["failures"]}
    # the run refuses exactly what data info named beforehand
    assert refused == set(prompts_run["padded"]) == {r["id"] for r in prompts_run["info"]["audio"]["refused"]}
    for f in run["failures"]:
        assert "(the rest is digital silence), shorter than the minimum 1 s" in f["error"], f
    res = pd.read_csv(prompts_run["run_dir"] / "results.csv")
    # each refused file fails on each side it appears on, in every cell
    assert res["n_failed"].sum() == len(run["failures"]) > 0


def test_the_run_records_the_manifest_it_measured(prompts_run) -> None:
    run = json.loads((prompts_run["run_dir"] / "run.json").read_text())
    m = Manifest.read(prompts_run["manifest"])
    assert run["corpus"]["name"] == "calls" and run["corpus"]["n_utterances"] == len(m)
    assert run["corpus"]["manifest_sha256"] == m.sha256()
    res = pd.read_csv(prompts_run["run_dir"] / "results.csv")
    assert set(res["dataset"]) == {"calls"}


def test_validate_and_the_report_name_the_manifest_measured(prompts_run) -> None:
    import hashlib

    manifest = prompts_run["manifest"]
    assert "P01: corpus calls.csv," in prompts_run["validate"] and "runs here" in prompts_run["validate"]
    report = (prompts_run["run_dir"] / "report.md").read_text()
    m = Manifest.read(manifest)
    file_sha = hashlib.sha256(manifest.read_bytes()).hexdigest()
    assert f"Corpus: manifest calls.csv ({manifest}, sha256 {file_sha}), {len(m)} utterances." in report
    assert f"all 2 speakers, {len(m)} utterances" in report and m.sha256() in report
    assert "synthetic corpus" not in report
