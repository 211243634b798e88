"""Security hygiene, checked on the package's own source and on real inputs: YAML is safe-loaded,
checkpoints load with ``weights_only=True``, no shell or pickle, and manifest paths stay under
the folder they are relative to."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest
from run_helpers import REPO
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora.attacks import read_attacks
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import ManifestError

PACKAGE = REPO / "interbias"
SAFE_LOADERS = {"SafeLoader", "CSafeLoader"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _safe_loader_classes(tree: ast.Module) -> set[str]:
    """Classes of a module that subclass yaml's SafeLoader (directly)."""
    return {
        c.name
        for c in ast.walk(tree)
        if isinstance(c, ast.ClassDef) and any(_dotted(b).split(".")[-1] in SAFE_LOADERS for b in c.bases)
    }


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def unsafe_calls(source: str, where: str) -> list[str]:
    """Every call in ``source`` that breaks the rules, as ``where:line: what``."""
    tree = ast.parse(source)
    safe = SAFE_LOADERS | _safe_loader_classes(tree)
    aliases = {}  # local name -> dotted origin, for ``from X import Y [as Z]``
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n.split(".")[0] in ("pickle", "dill", "marshal", "shelve") for n in names):
                problems.append(f"{where}:{node.lineno}: imports {', '.join(names)}")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        head, _, rest = name.partition(".")
        name = f"{aliases[head]}.{rest}".rstrip(".") if head in aliases else name
        line = f"{where}:{node.lineno}: {name}"
        if name in ("yaml.load", "yaml.load_all"):
            loader = _keyword(node, "Loader") or (node.args[1] if len(node.args) > 1 else None)
            if loader is None or _dotted(loader).split(".")[-1] not in safe:
                problems.append(f"{line} without a safe Loader")
        elif name in ("yaml.unsafe_load", "yaml.full_load", "yaml.unsafe_load_all", "yaml.full_load_all"):
            problems.append(line)
        elif name == "torch.load":
            flag = _keyword(node, "weights_only")
            if not (isinstance(flag, ast.Constant) and flag.value is True):
                problems.append(f"{line} without weights_only=True")
        elif name.startswith("subprocess.") or name in ("os.system", "os.popen") or name.startswith("os.spawn"):
            shell = _keyword(node, "shell")
            if name in ("os.system", "os.popen") or name.startswith("os.spawn"):
                problems.append(line)
            elif shell is not None and not (isinstance(shell, ast.Constant) and shell.value is False):
                problems.append(f"{line} with shell=")
            elif node.args and isinstance(node.args[0], ast.Constant | ast.JoinedStr | ast.BinOp):
                problems.append(f"{line} with a command string (give a list)")
        elif name in ("eval", "exec", "numpy.load", "np.load"):
            allow = _keyword(node, "allow_pickle")
            if name in ("eval", "exec") or not (isinstance(allow, ast.Constant) and allow.value is False):
                problems.append(line)
    return problems


def test_the_rules_catch_what_they_are_for() -> None:
    bad = """
import yaml, torch, subprocess, os, numpy as np
from torch import load as tl
yaml.load(text)
yaml.load(text, Loader=yaml.Loader)
yaml.unsafe_load(text)
torch.load(p)
torch.load(p, weights_only=False)
tl(p)
subprocess.run(f"ffmpeg -i {x}", shell=True)
subprocess.run("ls")
os.system("rm x")
np.load(p)
eval("1")
import pickle
"""
    found = unsafe_calls(bad, "x.py")
    assert [f.split(": ", 1)[1] for f in found] == [
        "imports pickle",
        "yaml.load without a safe Loader",
        "yaml.load without a safe Loader",
        "yaml.unsafe_load",
        "torch.load without weights_only=True",
        "torch.load without weights_only=True",
        "torch.load without weights_only=True",
        "subprocess.run with shell=",
        "subprocess.run with a command string (give a list)",
        "os.system",
        "np.load",
        "eval",
    ]
    good = """
import yaml, torch, subprocess, numpy as np
class Rec(yaml.SafeLoader):
    pass
yaml.safe_load(text)
yaml.load(text, Loader=Rec)
yaml.load(text, Loader=yaml.CSafeLoader)
torch.load(p, map_location="cpu", weights_only=True)
subprocess.run([exe, "-encoders"], shell=False)
np.load(p, allow_pickle=False)
"""
    assert unsafe_calls(good, "y.py") == []


def test_the_package_source_follows_them() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50
    problems = [p for f in files for p in unsafe_calls(f.read_text(encoding="utf-8"), str(f.relative_to(REPO)))]
    assert problems == []


def test_a_manifest_path_that_escapes_its_root_is_rejected(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "a").mkdir(parents=True)
    (tmp_path / "secret.wav").write_bytes(b"RIFF")
    (root / "a" / "link.wav").symlink_to(tmp_path / "secret.wav")
    (root / "a" / "ok.wav").write_bytes(b"RIFF")
    m = Manifest("m", root, ())
    assert m.resolve(Utterance("ok", "a/ok.wav", "s")) == (root / "a" / "ok.wav").resolve()
    for path in ("../secret.wav", "a/../../secret.wav", "a/link.wav"):
        with pytest.raises(ManifestError) as info:
            m.resolve(Utterance("u1", path, "s"))
        assert str(info.value) == f"utterance 'u1': path {path!r} escapes the corpus root {root.resolve()}"


def test_run_refuses_a_manifest_whose_paths_escape_its_root(tmp_path: Path, tiny_corpus) -> None:
    from conftest import tiny_experiment

    data = tmp_path / "data"
    data.mkdir()
    rows = [{"path": str(tiny_corpus.resolve(u)), "speaker": u.speaker, "gender": u.gender} for u in tiny_corpus]
    rows[2]["path"] = "../elsewhere/x.flac"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.flac").write_bytes(tiny_corpus.resolve(tiny_corpus.utterances[2]).read_bytes())
    pd.DataFrame(rows).to_csv(data / "m.csv", index=False)
    exp = tiny_experiment(tmp_path, name="S01")
    args = ["run", str(exp), "--manifest", str(data / "m.csv"), "--out", str(tmp_path / "o"), "-q"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1
    assert res.output == (
        f"error: {data / 'm.csv'}: 1 of {len(rows)} audio path(s) cannot be read (relative paths resolve against "
        f"{data}); first: line 4 '../elsewhere/x.flac' (escapes the corpus root)\n"
    )
    assert not (tmp_path / "o").exists()


def test_an_attack_manifest_path_that_escapes_its_folder_is_rejected(tmp_path: Path, tiny_corpus) -> None:
    (tmp_path / "att").mkdir()
    outside = tmp_path / "x.flac"
    outside.write_bytes(tiny_corpus.resolve(tiny_corpus.utterances[0]).read_bytes())
    spk = tiny_corpus.speakers()[0]
    pd.DataFrame([{"path": "../x.flac", "target_speaker": spk, "generator": "copy"}]).to_csv(
        tmp_path / "att" / "attacks.csv", index=False
    )
    with pytest.raises(ManifestError) as info:
        read_attacks(tmp_path / "att" / "attacks.csv", tiny_corpus)
    assert str(info.value) == (
        f"attack manifest {tmp_path / 'att' / 'attacks.csv'}: 1 relative path(s) escape its folder "
        f"{(tmp_path / 'att').resolve()}; first: ../x.flac"
    )
