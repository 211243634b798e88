"""The experiment catalogue: conditions/*.yaml grids, variants, refusals and synthetic runs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import fake_corpora
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora import CORPORA, needed_attributes
from interbias.corpora import ears as ears_mod
from interbias.corpora import l2arctic as l2_mod
from interbias.corpora import ravdess as ravdess_mod
from interbias.corpora.common import AGE_BANDS
from interbias.corpora.synthetic import STYLES, SyntheticSpec, build
from interbias.experiments.schema import load_experiment, parse_experiment

CONDITIONS = Path(__file__).resolve().parent.parent / "conditions"
MINE = ["E01", "E02", "E03", "E04", "E05", "E06", "E07", "E08", "E13", "E14", "E15", "E16", "E17", "E18", "E20"]
NO_SYNTHETIC = {"E02", "E07", "E15", "E17", "E20"}
runner = CliRunner()


def raw(name: str) -> dict[str, Any]:
    return yaml.safe_load((CONDITIONS / f"{name}.yaml").read_text())


def resolved_raw(name: str, variant: str | None = None) -> dict[str, Any]:
    """The YAML with a variant's overrides applied (what ``--corpus VARIANT`` loads)."""
    data = copy.deepcopy(raw(name))
    variants = data.pop("variants", {}) or {}
    if variant:
        data.update(copy.deepcopy(variants[variant]))
    return data


def _chains(data: dict[str, Any]) -> list[dict[str, Any]]:
    steps = []
    for section in [data, *(data.get("variants") or {}).values()]:
        for factor in section.get("factors") or []:
            if factor.get("type") != "acoustic":
                continue
            for level in factor["levels"].values():
                chains = level.values() if isinstance(level, dict) else [level]
                steps += [s for chain in chains for s in (chain or [])]
    return steps


# ---- the catalogue as files ------------------------------------------------------------------


def test_all_fifteen_experiments_are_shipped() -> None:
    names = {p.stem for p in CONDITIONS.glob("*.yaml")}
    assert set(MINE) <= names
    for name in MINE:
        assert raw(name)["name"] == name


def test_list_json_lists_every_experiment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INTERBIAS_CORPORA", str(tmp_path))  # no corpus on disk
    res = runner.invoke(app, ["list", "--json"])
    assert res.exit_code == 0, res.output
    entries = {e["name"]: e for e in json.loads(res.output)}
    assert set(MINE) <= set(entries)
    for name in MINE:
        e = entries[name]
        assert "error" not in e, e
        assert e["corpus"] == raw(name)["corpus"]
        assert e["n_cells"] == len(load_experiment(CONDITIONS / f"{name}.yaml").cells())
        variants = {v["name"] for v in e["variants"]}
        assert ("synthetic" in variants) == (name not in NO_SYNTHETIC)
        assert e["runnable"] is False and e["why_not"].endswith(e["requires"])  # no corpora on this machine
        for v in e["variants"]:
            if v["name"] == "synthetic":
                assert v["runnable"] is True and v["corpus"] == "synthetic"


def test_list_verbose_says_where_each_runs_and_why_not(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INTERBIAS_CORPORA", str(tmp_path))
    res = runner.invoke(app, ["list", "-v"])
    assert res.exit_code == 0, res.output
    blocks = {b.split()[0]: b for b in ("\n" + res.output).split("\nE")[1:]}
    e01 = blocks["01"].splitlines()
    assert e01[0] == "01  Emotional speech  [descriptive]  corpus ravdess, 15 cells"
    assert e01[1].startswith("     emotion (population, ref neutral-neutral): neutral-neutral, neutral-calm,")
    assert e01[2].startswith(f"     runs here: no: E01: corpus 'ravdess' not found at {tmp_path / 'ravdess'}")
    assert e01[3] == "     variant synthetic (--corpus synthetic): 11 cells, runs here: yes"
    assert "E02: corpus 'torgo' not found" in blocks["02"] and "variant" not in blocks["02"]


@pytest.mark.parametrize("name", sorted(p.stem for p in CONDITIONS.glob("*.yaml")))
def test_experiment_and_variants_load(name: str) -> None:
    path = CONDITIONS / f"{name}.yaml"
    exp = load_experiment(path)
    assert exp.name == name and exp.requires.strip()
    for variant in raw(name).get("variants") or {}:
        v = load_experiment(path, corpus=variant)
        assert v.variant == variant and v.corpus.name == variant


# ---- the grids -----------------------------------------------------------------------------------


def _levels(data: dict[str, Any], factor: str) -> dict[str, Any]:
    return next(f for f in data["factors"] if f["name"] == factor)["levels"]


NON_NEUTRAL = ["calm", "happy", "sad", "angry", "fearful", "disgust", "surprised"]
NOISE = {f"{k}_{s}": (k, s) for k in ("gaussian", "environmental", "crosstalk") for s in (25, 15, 5)}


def _noise_grid(levels: dict[str, Any]) -> dict[str, tuple[str, int]]:
    out = {}
    for lname, chain in levels.items():
        if chain:
            (step,) = chain
            assert step["op"] == "noise"
            out[lname] = (step["kind"], step["snr_db"])
    return out


def test_e14_emotion_by_noise_grid() -> None:
    data = raw("E14")
    emotion = _levels(data, "emotion")
    assert list(emotion) == ["neutral", *NON_NEUTRAL]
    assert all(v == {"enrol": "neutral", "test": k} for k, v in emotion.items())
    noise = _levels(data, "noise")
    assert noise["clean"] == [] and _noise_grid(noise) == NOISE
    syn = resolved_raw("E14", "synthetic")
    assert list(_levels(syn, "emotion")) == ["neutral", "calm", "happy", "sad", "angry", "fearful"]
    assert _noise_grid(_levels(syn, "noise")) == {k: v for k, v in NOISE.items() if v[0] != "environmental"}


def test_e16_gender_by_noise_grid_and_e01_pairs() -> None:
    assert _noise_grid(_levels(raw("E16"), "noise")) == NOISE
    assert list(_levels(raw("E16"), "gender")) == ["female", "male"]
    e01 = _levels(raw("E01"), "emotion")
    assert len(e01) == 15
    for emo in NON_NEUTRAL:
        assert e01[f"neutral-{emo}"] == {"enrol": "neutral", "test": emo}
        assert e01[f"{emo}-{emo}"] == {"enrol": emo, "test": emo}


def test_codec_grids_include_the_papers_codecs() -> None:
    codecs = {lv[0]["codec"] for lv in _levels(raw("E05"), "codec").values() if lv}
    assert {"sbc", "aac", "aptx", "aptx_hd"} <= codecs
    assert len(_levels(raw("E15"), "codec")) * len(_levels(raw("E15"), "speech")) == 20
    assert len(raw("E20")["factors"]) == 3 and len(_levels(raw("E20"), "drift")) == 3


def test_no_synthetic_variant_uses_environmental_noise() -> None:
    for name in MINE:
        syn = (raw(name).get("variants") or {}).get("synthetic")
        if syn:
            kinds = {s.get("kind") for s in _chains({"factors": syn.get("factors") or []})}
            assert "environmental" not in kinds, name


# ---- attribute values exist in the corpora -----------------------------------------------------

SYNTHETIC_VOCAB = {
    "gender": {"female", "male"},
    "age_band": {b for b, _, _ in AGE_BANDS},
    "accent": set(SyntheticSpec().accents),
    "style": set(STYLES),
}
REAL_VOCAB: dict[str, dict[str, set[str]]] = {
    "ravdess": {"style": set(ravdess_mod.EMOTIONS.values()), "gender": {"female", "male"}},
    "ears": {"style": set(ears_mod.STYLE_MAP.values()), "style_kind": {"emotion", "reading", "freeform"}},
    "torgo": {"pathology": {"none", "dysarthria"}, "mic": {"array", "head"}},
    "l2arctic": {"accent": {l1 for l1, _ in l2_mod.SPEAKERS.values()}},
    "commonvoice": {"gender": {"female", "male"}, "age_band": {b for b, _, _ in AGE_BANDS}},
    "voxceleb1": {"set": {"dev", "test"}, "age_band": {b for b, _, _ in AGE_BANDS}},
}


def _selections(data: dict[str, Any]) -> list[tuple[str, Any]]:
    out = [(attr, v) for attr, v in (data.get("population") or {}).items()]
    for f in data["factors"]:
        if f["type"] != "population":
            continue
        for lname, ldef in f["levels"].items():
            values = (
                [ldef.get("enrol"), ldef.get("test"), ldef.get("value")] if isinstance(ldef, dict) else [ldef or lname]
            )
            out += [(f["attribute"], v) for v in values if v is not None]
    return out


def _flat(value: Any) -> list[str]:
    if value == "*":
        return []
    return [str(v) for v in (value if isinstance(value, list) else [value])]


@pytest.mark.parametrize("name", MINE)
def test_selected_values_exist_in_each_corpus(name: str) -> None:
    targets = [(None, raw(name)["corpus"])] + [(v, v) for v in raw(name).get("variants") or {}]
    for variant, corpus in targets:
        data = resolved_raw(name, variant)
        adapter = CORPORA.get(corpus)
        vocab = SYNTHETIC_VOCAB if corpus == "synthetic" else REAL_VOCAB[corpus]
        for attr, value in _selections(data):
            assert attr in adapter.provides(), (name, variant, attr)
            if attr in vocab:
                assert set(_flat(value)) <= vocab[attr], (name, variant, attr, value)
            elif attr == "years_from_first":
                assert all(v.isdigit() for v in _flat(value))


# ---- refusals before any work --------------------------------------------------------------------


def _refused(args: list[str], out: Path) -> str:
    res = runner.invoke(app, ["run", *args, "--out", str(out), "--encoders", "mfcc-stats"])
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert not out.exists() or not any(out.iterdir())
    return lines[0]


@pytest.mark.parametrize("name", ["E02", "E07", "E15", "E17", "E20"])
def test_no_synthetic_variant_refuses_with_what_data_is_needed(name: str, tmp_path: Path) -> None:
    exp = load_experiment(CONDITIONS / f"{name}.yaml", corpus="synthetic")
    attr = next(a for a in needed_attributes(exp) if a not in CORPORA.get("synthetic").provides())
    line = _refused([name, "--corpus", "synthetic"], tmp_path / "out")
    assert line == (
        f"error: {name} cannot run here: it selects by {attr!r}, which synthetic manifests do not have. "
        f"It needs: {' '.join(exp.requires.split()).rstrip('.')}. See docs/guide/corpora.md"
    )


def test_missing_corpus_and_missing_dates_refuse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INTERBIAS_CORPORA", str(tmp_path / "corpora"))
    requires = " ".join(load_experiment(CONDITIONS / "E07.yaml").requires.split())
    line = _refused(["E07"], tmp_path / "out")
    assert line == (
        f"error: E07 cannot run here: corpus 'voxceleb1' not found at {tmp_path / 'corpora' / 'voxceleb1'} "
        f"(pass --corpus-root DIR or set INTERBIAS_CORPORA). It needs: {requires.rstrip('.')}. See docs/guide/corpora.md"
    )
    root = fake_corpora.voxceleb1(tmp_path / "vox")  # no video_dates.csv
    line = _refused(["E07", "--corpus-root", str(root)], tmp_path / "out")
    assert line.startswith(
        f"error: E07 cannot run here: voxceleb1 attribute 'years_from_first' comes from {root / 'video_dates.csv'}, "
        "which does not exist. It needs: "
    )
    line = _refused(["E02", "--corpus", "l2arctic"], tmp_path / "out")
    assert line.startswith("error: E02 cannot run here: it selects by 'mic', which l2arctic manifests do not have.")


def test_dated_corpus_passes_the_checks(tmp_path: Path) -> None:
    from interbias.corpora import check_manifest, check_runnable
    from interbias.corpora.voxceleb1 import prepare_voxceleb1

    root = fake_corpora.voxceleb1(tmp_path / "vox", dates=True)
    exp = load_experiment(CONDITIONS / "E07.yaml")
    check_runnable(exp, root=root)
    check_manifest(exp, prepare_voxceleb1(root))


# ---- runs on the synthetic corpus ------------------------------------------------------------------

#: A small corpus with what E01 and E08 select by: 4 accents × 2 genders, 6 styles, 2 sentences.
SMALL = {
    "accents": ["us", "gb", "sc", "wi"],
    "age_bands": ["adult"],
    "voices_per_cell": 1,
    "styles": ["neutral", "calm", "happy", "sad", "angry", "fearful"],
    "n_sentences": 2,
}


def _variant_on(name: str, tmp_path: Path, options: dict[str, Any] | None, min_speakers: int | None) -> Path:
    data = resolved_raw(name, "synthetic")
    data["corpus"] = {"name": "synthetic", **({"options": options} if options else {})}
    if min_speakers:
        data["trials"] = {**data["trials"], "min_speakers": min_speakers}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    parse_experiment(data, where=path.name)
    return path


def _run_ok(path: Path, out: Path, max_trials: int) -> pd.DataFrame:
    res = runner.invoke(
        app, ["run", str(path), "--encoders", "mfcc-stats", "--max-trials", str(max_trials), "--out", str(out), "-q"]
    )
    assert res.exit_code == 0, res.output
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return pd.read_csv(run_dir / "results.csv")


@pytest.mark.parametrize("name,min_speakers", [("E01", 4), ("E08", 2)])
def test_synthetic_variant_runs_on_a_small_spec(name: str, min_speakers, tmp_path: Path, session_cache) -> None:
    path = _variant_on(name, tmp_path, SMALL, min_speakers)
    res = _run_ok(path, tmp_path / "out", 20)
    exp = load_experiment(path)
    assert len(res) == len(exp.cells()) and set(res.cell) == {c.id for c in exp.cells()}
    assert (res.n_failed == 0).all() and res.n_target.nunique() == 1 and res.n_target.iloc[0] > 0
    assert res.eer.between(0, 1).all()


@pytest.fixture(scope="module")
def full_synthetic(session_cache):
    manifest, _ = build(SyntheticSpec(), session_cache)
    return manifest


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in MINE if n not in NO_SYNTHETIC])
def test_every_synthetic_variant_completes(name: str, tmp_path: Path, full_synthetic) -> None:
    res = runner.invoke(
        app,
        ["run", name, "--corpus", "synthetic", "--encoders", "mfcc-stats", "--max-trials", "20"]
        + ["--out", str(tmp_path), "-q"],
    )
    assert res.exit_code == 0, res.output
    (run_dir,) = list(tmp_path.iterdir())
    table = pd.read_csv(run_dir / "results.csv")
    exp = load_experiment(CONDITIONS / f"{name}.yaml", corpus="synthetic")
    assert len(table) == len(exp.cells()) and (table.n_failed == 0).all()
