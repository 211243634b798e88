"""The synthetic corpus's fingerprint: ``corpus build synthetic`` and ``run`` say whether the
rendered corpus is the reference of the pinned environment, run.json records it and ``compare``
warns when two runs' corpora differ. The tiny test spec has a recorded reference, so this also
checks that this environment renders it byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
from conftest import TINY
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora.fingerprint import REFERENCE, corpus_verdict
from interbias.corpora.manifest import Manifest

runner = CliRunner()
SETS = [f"--set={k}={','.join(v) if isinstance(v, list) else v}" for k, v in TINY.items()]


def test_the_tiny_corpus_equals_its_reference(tiny_corpus) -> None:
    verdict = corpus_verdict(tiny_corpus, check_files=True)
    assert verdict is not None and tiny_corpus.root.name in REFERENCE
    assert verdict.status == "equal", verdict.line
    assert verdict.line.startswith("corpus fingerprint: equals the reference of synthetic-v3-")


def test_corpus_build_says_equal_then_differs_for_an_altered_file(tmp_path: Path, tiny_corpus) -> None:
    cache = tmp_path / "cache"
    copy = cache / "corpora" / tiny_corpus.root.name
    shutil.copytree(tiny_corpus.root, copy)
    res = runner.invoke(app, ["data", "build", "synthetic", *SETS, "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    assert "corpus fingerprint: equals the reference" in res.output
    victim = copy / tiny_corpus.utterances[3].path
    data = bytearray(victim.read_bytes())
    data[-10] ^= 0xFF
    victim.write_bytes(bytes(data))
    res = runner.invoke(app, ["data", "build", "synthetic", *SETS, "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    assert "corpus fingerprint: DIFFERS from the reference" in res.output
    assert "1 file(s) differ from what the manifest records" in res.output
    res = runner.invoke(app, ["data", "build", "synthetic", *SETS, "--cache-dir", str(cache), "--json"])
    assert json.loads(res.output)["fingerprint"]["status"] == "differs"


def test_another_rendering_differs_and_other_manifests_have_no_verdict(tmp_path: Path, tiny_corpus) -> None:
    utts = list(tiny_corpus.utterances)
    utts[0] = type(utts[0])(**{**utts[0].__dict__, "sha256": "0" * 64})  # another environment's bytes
    other = Manifest("synthetic", tiny_corpus.root, tuple(utts))
    verdict = corpus_verdict(other)
    assert verdict is not None and verdict.status == "differs" and "manifest sha256" in verdict.line
    own = Manifest("mine", tmp_path, tiny_corpus.utterances)
    assert corpus_verdict(own) is None


def _run_folder(folder: Path, sha: str, status: str) -> Path:
    folder.mkdir(parents=True)
    pd.DataFrame({"experiment": ["E"], "cell": ["c"], "model": ["M"], "eer": [0.1]}).to_csv(
        folder / "results.csv", index=False
    )
    corpus = {"name": "synthetic", "manifest_sha256": sha, "fingerprint": {"status": status}}
    (folder / "run.json").write_text(json.dumps({"corpus": corpus}))
    return folder


def test_compare_warns_when_two_runs_corpora_differ(tmp_path: Path) -> None:
    a = _run_folder(tmp_path / "a", "a" * 64, "equal")
    b = _run_folder(tmp_path / "b", "b" * 64, "differs")
    res = runner.invoke(app, ["runs", "compare", str(a / "results.csv"), str(b / "results.csv")])
    assert res.exit_code == 0, res.output
    assert "warning: the two runs' corpora differ (manifest sha256 aaaaaaaaaaaa… vs bbbbbbbbbbbb…" in res.output
    assert "fingerprint equal vs differs" in res.output
    same = _run_folder(tmp_path / "c", "a" * 64, "equal")
    res = runner.invoke(app, ["runs", "compare", str(a / "results.csv"), str(same / "results.csv")])
    assert "warning" not in res.output


def test_run_json_carries_the_verdict(tmp_path: Path, tiny_corpus, session_cache) -> None:
    from conftest import tiny_experiment
    from run_helpers import isolated_cache

    from interbias.run.conductor import RunOptions, run

    exp = tiny_experiment(tmp_path, trials={"targets": 10, "min_speakers": 4})
    opts = RunOptions(
        experiment=str(exp),
        encoders=["mfcc-stats"],
        out=tmp_path / "r",
        quiet=True,
        cache_dir=isolated_cache(tmp_path, session_cache),
    )
    info = json.loads((run(opts).run_dir / "run.json").read_text())
    assert info["corpus"]["fingerprint"]["status"] == "equal"
    assert info["corpus"]["fingerprint"]["reference"] == info["corpus"]["manifest_sha256"]
