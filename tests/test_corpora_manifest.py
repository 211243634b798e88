from __future__ import annotations

from pathlib import Path

import pytest

from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import ManifestError


def sample() -> Manifest:
    utts = (
        Utterance(
            "a/1",
            "a/1.wav",
            "a",
            gender="female",
            age=31.0,
            accent="us",
            duration_s=2.5,
            attrs={"session": "s1", "mic": "head"},
        ),
        Utterance("b/1", "b/1.wav", "b", gender="male", style="angry"),
    )
    return Manifest("demo", Path("/data"), utts)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_roundtrip(tmp_path: Path, suffix: str) -> None:
    m = sample()
    path = tmp_path / f"m{suffix}"
    m.write(path)
    back = Manifest.read(path)
    assert [u.to_dict() for u in back] == [u.to_dict() for u in m]
    assert back.sha256() == m.sha256()
    assert back.utterances[0].get("mic") == "head" and back.utterances[0].get("age") == "31"


def test_missing_required_column(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("path,gender\nx.wav,female\n")
    with pytest.raises(ManifestError) as exc:
        Manifest.read(p)
    assert str(exc.value) == f"{p}: missing required column(s) speaker; found: gender, path"


def test_duplicate_ids(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("id,path,speaker\nu1,a.wav,s1\nu1,b.wav,s2\n")
    with pytest.raises(ManifestError, match=r"1 duplicate id\(s\); first: 'u1'"):
        Manifest.read(p)


def test_path_escaping_root_rejected(tmp_path: Path) -> None:
    m = Manifest("x", tmp_path, (Utterance("u", "../../etc/passwd", "s"),))
    with pytest.raises(ManifestError, match="escapes the corpus root"):
        m.resolve(m.utterances[0])
