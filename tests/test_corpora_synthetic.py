"""The embedded factorial corpus: grid facts from the spec, and byte-identical rebuilds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora import CORPORA
from interbias.corpora.synthetic import SENTENCES, STYLES, SyntheticSpec, build, make_voices
from interbias.errors import CorpusError
from interbias.manifest import Manifest

runner = CliRunner()
#: 2 accents × 2 genders × 1 age band × 1 voice, 2 styles, 2 sentences: 16 utterances.
SMALL = {
    "accents": ["us", "sc"],
    "age_bands": ["elderly"],
    "voices_per_cell": 1,
    "styles": ["neutral", "whispered"],
    "n_sentences": 2,
}


def test_full_spec_is_the_factorial_grid_without_building() -> None:
    spec = SyntheticSpec()
    voices = make_voices(spec)
    assert len(voices) >= 48 and len({v.id for v in voices}) == len(voices)
    assert {v.gender for v in voices} == {"female", "male"}
    assert {v.age_band for v in voices} == {"young", "adult", "elderly"}
    assert len({v.accent for v in voices}) >= 4
    assert len(spec.styles) >= 7 and set(spec.styles) >= {
        "neutral",
        "happy",
        "sad",
        "angry",
        "fearful",
        "calm",
        "whispered",
    }
    assert spec.n_sentences >= 20 and len(set(SENTENCES[: spec.n_sentences])) == spec.n_sentences
    # every cell of gender × age band × accent holds the same number of voices
    cells = {(v.gender, v.age_band, v.accent) for v in voices}
    assert len(cells) * spec.voices_per_cell == len(voices)
    # no two voices share their settings
    settings = [
        tuple(v.__dict__[k] for k in v.__dict__ if k not in ("id", "gender", "age_band", "accent")) for v in voices
    ]
    assert len(set(settings)) == len(settings)
    # voice settings are derived from the voice id: the same in any subset spec
    sub = make_voices(SyntheticSpec(accents=("sc",), genders=("male",)))
    full = {v.id: v for v in voices}
    assert all(full[v.id] == v for v in sub)


def test_styles_and_ages_are_marked_as_proxies(tiny_corpus) -> None:
    assert all(u.get("proxy") == "age_band,style" for u in tiny_corpus)
    assert set(STYLES) == {"neutral", "happy", "sad", "angry", "fearful", "calm", "whispered"}
    adapter = CORPORA.get("synthetic")
    assert not adapter.needs_root and {"gender", "age_band", "accent", "style"} <= adapter.provides()


def _audio_hashes(manifest: Manifest) -> dict[str, str]:
    return {u.id: hashlib.sha256(manifest.resolve(u).read_bytes()).hexdigest() for u in manifest}


def test_two_builds_in_two_caches_are_byte_identical(tmp_path: Path) -> None:
    spec = SyntheticSpec.from_options(dict(SMALL))
    a, sa = build(spec, tmp_path / "a", workers=2)
    b, sb = build(spec, tmp_path / "b", workers=1)
    assert sa > 0 and sb > 0
    assert len(a) == 16 and a.sha256() == b.sha256()
    ha, hb = _audio_hashes(a), _audio_hashes(b)
    assert ha == hb and {u.id: u.sha256 for u in a} == ha  # recorded hashes are the files' hashes
    assert (a.root / "manifest.jsonl").read_bytes() == (b.root / "manifest.jsonl").read_bytes()
    assert len(set(ha.values())) == len(ha)  # no two utterances are the same audio
    again, seconds = build(spec, tmp_path / "a")
    assert seconds == 0.0 and again.sha256() == a.sha256()


def test_cli_build_prints_counts_and_seconds_then_reuses(tmp_path: Path) -> None:
    args = ["corpus", "build", "synthetic", "--cache-dir", str(tmp_path)]
    args += [f"--set={k}={','.join(v) if isinstance(v, list) else v}" for k, v in SMALL.items()]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("synthetic: built in ") and " s with " in res.stdout
    assert "synthetic: 16 utterances, 4 speakers" in res.stdout
    assert "    whispered                     4 speakers        8 utterances" in res.stdout
    assert res.stderr.startswith("synthetic corpus: rendering: 16 to do\n")  # progress goes to stderr
    again = runner.invoke(app, args + ["--json"])
    info = json.loads(again.output)
    assert info["built_now"] is False and info["build_seconds"] > 0 and info["n_speakers"] == 4
    assert info["manifest_sha256"] == Manifest.read(Path(info["manifest"])).sha256()


def test_cli_build_rejects_other_corpora_and_bad_options(tmp_path: Path) -> None:
    res = runner.invoke(app, ["corpus", "build", "ravdess"])
    assert res.exit_code == 1
    assert res.output.strip() == (
        "error: only the embedded 'synthetic' corpus is built; a corpus on disk is prepared: "
        "interbias corpus prepare ravdess --root DIR"
    )
    res = runner.invoke(app, ["corpus", "build", "synthetic", "--set", "accents=us,xx", "--cache-dir", str(tmp_path)])
    assert res.output.strip().startswith("error: synthetic: unknown accent 'xx'; valid: us, gb")
    with pytest.raises(CorpusError, match="unknown option 'voices'"):
        SyntheticSpec.from_options({"voices": 3})


@pytest.mark.slow
def test_full_corpus_builds_identically_twice(tmp_path: Path) -> None:
    a, sa = build(SyntheticSpec(), tmp_path / "a")
    b, _ = build(SyntheticSpec(), tmp_path / "b")
    assert len(a) == 48 * 7 * 20 and len(a.speakers()) == 48
    assert a.sha256() == b.sha256() and _audio_hashes(a) == _audio_hashes(b)
    print(f"full synthetic build: {sa:.1f} s")
