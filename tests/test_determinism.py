"""Two runs in fresh places agree byte for byte; the embedding cache and the finished-cell records
serve nothing computed under another encoder file, operator version, front end or audio content."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from conftest import tiny_experiment
from encoder_fixtures import make_onnx
from run_helpers import manifest_file, outputs

from interbias.encoders import ENCODERS, load_from_layouts
from interbias.operators.noise import Noise
from interbias.run import conductor as runner
from interbias.run.conductor import RunOptions, run
from interbias.utils.errors import OperatorError
from interbias.utils.paths import slug

SMALL = {"targets": 10, "min_speakers": 4}


@pytest.fixture(scope="module")
def data(tmp_path_factory, tiny_corpus):
    tmp = tmp_path_factory.mktemp("det")
    manifest = manifest_file(tiny_corpus, tmp / "m", copy_audio=True)
    exp = tiny_experiment(tmp, name="D01", corpus={"manifest": str(manifest)}, trials=SMALL)
    return tmp, manifest, exp


def _opts(exp: Path, out: Path, cache: Path, encoders: list[str] | None = None) -> RunOptions:
    return RunOptions(
        experiment=str(exp), encoders=encoders or ["mfcc-stats"], out=out, cache_dir=cache, quiet=True, command=["t"]
    )


@pytest.fixture(scope="module")
def baseline(data, tmp_path_factory):
    """The reference run and its embedding cache folder."""
    _, _, exp = data
    tmp = tmp_path_factory.mktemp("base")
    return run(_opts(exp, tmp / "out", tmp / "cache")), tmp / "cache"


@pytest.mark.numerics  # same machine, same dispatch: bytes (tests/test_dispatch.py reruns it under another)
def test_two_fresh_runs_are_byte_identical(data, baseline, tmp_path: Path) -> None:
    _, _, exp = data
    baseline, _ = baseline
    again = run(_opts(exp, tmp_path / "out", tmp_path / "cache"))  # new directory, cold cache
    assert again.n_embedded == baseline.n_embedded > 0 and again.n_cached == 0
    assert again.run_dir.name == baseline.run_dir.name
    assert outputs(again.run_dir) == outputs(baseline.run_dir)
    assert len(outputs(again.run_dir)) == 2 + 4  # results, trials, four cells' scores
    for name in ("trials.json", "experiment.resolved.json"):
        assert (again.run_dir / name).read_bytes() == (baseline.run_dir / name).read_bytes()


def test_another_encoder_file_is_never_served_from_the_cache(data, tmp_path: Path, monkeypatch) -> None:
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    _, _, exp = data
    card = dataclasses.replace(ENCODERS.get("RawNet3"), embedding_dim=16)
    first = make_onnx(tmp_path / "a", "waveform")
    model = onnx.load(str(first / "model.onnx"))  # the same graph with other weights: another file
    conv = next(t for t in model.graph.initializer if t.name == "conv_w")
    conv.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(conv) * 1.5, "conv_w"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "model.onnx").write_bytes(model.SerializeToString())
    encoders = {}
    monkeypatch.setattr(runner, "load_encoders", lambda labels, device, **_: [encoders["now"]])
    cache = tmp_path / "cache"
    done = {}
    for name, folder in (("a", first), ("b", tmp_path / "b"), ("a again", first)):
        encoders["now"] = load_from_layouts(card, path=str(folder))
        done[name] = run(_opts(exp, tmp_path / name, cache))
    a, b, a2 = done["a"], done["b"], done["a again"]
    assert a.results.checkpoint_sha256.iloc[0] != b.results.checkpoint_sha256.iloc[0]
    assert b.n_cached == 0 and b.n_embedded == a.n_embedded > 0  # nothing of a's served to b
    assert a2.n_embedded == 0 and a2.n_cached == a.n_embedded  # a's own embeddings are
    assert not np.array_equal(_scores(a.run_dir), _scores(b.run_dir))
    assert np.array_equal(_scores(a.run_dir), _scores(a2.run_dir))


def _scores(run_dir: Path) -> np.ndarray:
    return np.concatenate(
        [pd.read_parquet(p).score.to_numpy() for p in sorted((run_dir / "scores").rglob("*.parquet"))]
    )


def test_an_operator_version_change_recomputes_only_its_chain(data, baseline, tmp_path: Path, monkeypatch) -> None:
    _, _, exp = data
    shutil.copytree(baseline[1], tmp_path / "cache")  # a warm cache: the first run embeds nothing
    opts = _opts(exp, tmp_path / "out", tmp_path / "cache")
    before = run(opts)
    assert before.n_embedded == 0
    trials = pd.read_parquet(before.run_dir / "trials.parquet")
    n10_items, clean_items = len(set(trials.test)), len(set(trials.enrol))  # noise cells: clean enrol, n10 test
    monkeypatch.setattr(Noise, "version", Noise.version + 1)
    after = run(opts)
    assert after.run_dir == before.run_dir
    assert after.cells_done_before == 2  # the clean cells; the noise cells are scored again
    assert after.n_embedded == n10_items and after.n_cached == clean_items  # noise items again, clean ones cached
    noisy = after.results[after.results.level_b == "n10"]
    assert (noisy.chain_fingerprint != before.results[before.results.level_b == "n10"].chain_fingerprint).all()


def test_other_front_end_settings_are_never_served_from_the_cache(data, baseline, tmp_path: Path) -> None:
    _, manifest, _ = data
    baseline, baseline_cache = baseline
    short = tiny_experiment(
        tmp_path, name="D01", corpus={"manifest": str(manifest)}, trials=SMALL, frontend={"max_duration_s": 1.5}
    )
    cache = tmp_path / "cache"
    shutil.copytree(baseline_cache, cache)  # holds the baseline's embeddings
    out = run(_opts(short, tmp_path / "out", cache))
    assert out.n_cached == 0 and out.n_embedded == baseline.n_embedded
    assert out.results.n_truncated.sum() > 0
    assert not np.array_equal(_scores(out.run_dir), _scores(baseline.run_dir))


def test_changed_audio_makes_a_new_run_that_embeds_only_the_changed_file(data, baseline, tmp_path: Path) -> None:
    _, manifest, _ = data
    folder = tmp_path / "m"
    shutil.copytree(manifest.parent, folder)
    exp = tiny_experiment(tmp_path, name="D01", corpus={"manifest": str(folder / "manifest.csv")}, trials=SMALL)
    shutil.copytree(baseline[1], tmp_path / "cache")  # same audio bytes: served from this cache
    opts = _opts(exp, tmp_path / "out", tmp_path / "cache")
    before = run(opts)
    assert before.n_embedded == 0
    trials = pd.read_parquet(before.run_dir / "trials.parquet")
    victim = trials.enrol.iloc[0]  # an enrolment utterance (clean on both cells of its stratum)
    stratum = trials.stratum.iloc[0]
    rows = pd.read_csv(folder / "manifest.csv")
    path = folder / rows.loc[rows.id == victim, "path"].iloc[0]
    old_sha = hashlib.sha256(path.read_bytes()).hexdigest()
    wave, sample_rate_hz = sf.read(path)
    sf.write(path, wave[::-1] * 0.5, sample_rate_hz)  # same manifest row, audio no run has seen
    assert hashlib.sha256(path.read_bytes()).hexdigest() != old_sha
    kept = outputs(before.run_dir)
    after = run(opts)
    assert after.run_dir != before.run_dir  # other audio: a new run; the old one describes the old audio
    assert outputs(before.run_dir) == kept
    assert after.cells_done_before == 0
    assert after.n_embedded == 1 + (victim in set(trials.test))  # its clean item (and its noisy one)
    now = outputs(after.run_dir)
    in_stratum = before.results.stratum == stratum
    changed = [r.cell for r in after.results.itertuples() if now[_scores_key(r)] != kept[_scores_key(r)]]
    assert sorted(changed) == sorted(before.results[in_stratum].cell)


def _scores_key(row) -> str:
    return f"scores/{slug(row.model)}/{slug(row.cell)}.parquet"


def test_a_changed_cell_whose_new_score_fails_keeps_its_row(data, baseline, tmp_path: Path, monkeypatch) -> None:
    """Code changed under the same revision: the noise cells are scored again; when that fails
    they keep their earlier rows (results.csv never shrinks) and the error says so."""
    _, _, exp = data
    shutil.copytree(baseline[1], tmp_path / "cache")
    opts = _opts(exp, tmp_path / "out", tmp_path / "cache")
    before = run(opts)

    def broken(self, x, ctx):
        raise OperatorError("noise operator broken")

    monkeypatch.setattr(Noise, "version", Noise.version + 1)
    monkeypatch.setattr(Noise, "apply", broken)
    after = run(opts)
    assert after.run_dir == before.run_dir and after.cells_done_before == 2
    assert len(after.errored_cells) == 2 and all(e.endswith("; its earlier row is kept") for e in after.errored_cells)
    assert pd.read_csv(after.run_dir / "results.csv").equals(pd.read_csv(before.run_dir / "results.csv"))
