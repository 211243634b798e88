"""L2-ARCTIC (Zhao et al. 2018): 24 non-native English speakers reading CMU ARCTIC prompts.

Layout (release v5.0, one folder per speaker)::

    ROOT/ABA/wav/arctic_a0001.wav
    ROOT/ABA/transcript/arctic_a0001.txt
    ROOT/ABA/annotation/, textgrid/    (not used)
    ROOT/suitcase_corpus/              (spontaneous speech; not used)

Each speaker's first language (L1) and gender come from the corpus documentation's speaker
table (:data:`SPEAKERS`). ``accent`` is the L1 (arabic, mandarin, hindi, korean, spanish,
vietnamese), also in ``attrs['l1']``. A speaker folder (one holding ``wav/``) that is not
in the table is an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.common import HeaderCache, check_options, describe_dir, layout_error, rel, require_root
from interbias.corpora.manifest import Manifest, Utterance

#: Speaker -> (L1, gender), from the L2-ARCTIC v5.0 documentation.
SPEAKERS: dict[str, tuple[str, str]] = {
    "ABA": ("arabic", "male"),
    "SKA": ("arabic", "female"),
    "YBAA": ("arabic", "male"),
    "ZHAA": ("arabic", "female"),
    "BWC": ("mandarin", "male"),
    "LXC": ("mandarin", "female"),
    "NCC": ("mandarin", "female"),
    "TXHC": ("mandarin", "male"),
    "ASI": ("hindi", "male"),
    "RRBI": ("hindi", "male"),
    "SVBI": ("hindi", "female"),
    "TNI": ("hindi", "female"),
    "HJK": ("korean", "female"),
    "HKK": ("korean", "male"),
    "YDCK": ("korean", "female"),
    "YKWK": ("korean", "male"),
    "EBVS": ("spanish", "male"),
    "ERMS": ("spanish", "male"),
    "MBMPS": ("spanish", "female"),
    "NJS": ("spanish", "female"),
    "HQTV": ("vietnamese", "male"),
    "PNV": ("vietnamese", "female"),
    "THV": ("vietnamese", "female"),
    "TLV": ("vietnamese", "male"),
}
#: Folders of the release that hold ``wav/`` but are not one read-speech speaker.
NOT_SPEAKERS = {"suitcase_corpus"}
EXPECTED = "speaker folders ABA, SKA, … (the 24 L2-ARCTIC speakers) each with wav/*.wav"


def prepare_l2arctic(root: Path, cache: Path | None = None, options: dict[str, Any] | None = None) -> Manifest:
    """The manifest of L2-ARCTIC under ``root`` (scripted ``wav/`` recordings)."""
    check_options("l2arctic", options or {}, ())
    root = require_root("l2arctic", root, EXPECTED)
    folders = sorted(p for p in root.iterdir() if p.is_dir() and (p / "wav").is_dir() and p.name not in NOT_SPEAKERS)
    if not folders:
        raise layout_error("l2arctic", root, EXPECTED, describe_dir(root))
    unknown = [p.name for p in folders if p.name not in SPEAKERS]
    if unknown:
        raise layout_error("l2arctic", root, EXPECTED, f"unknown speaker folder {unknown[0]}")
    headers = HeaderCache(cache, "l2arctic", root)
    utts = []
    for sdir in folders:
        l1, gender = SPEAKERS[sdir.name]
        for path in sorted(p for p in (sdir / "wav").iterdir() if p.is_file() and p.suffix.lower() == ".wav"):
            tfile = sdir / "transcript" / f"{path.stem}.txt"
            text = tfile.read_text(encoding="utf-8", errors="replace").strip() if tfile.is_file() else None
            r = rel(path, root)
            info = headers.info(r)
            utts.append(
                Utterance(
                    id=f"{sdir.name}/{path.stem}",
                    path=r,
                    speaker=sdir.name,
                    gender=gender,
                    accent=l1,
                    text=text or None,
                    duration_s=info.duration_s,
                    sample_rate_hz=info.sample_rate_hz,
                    attrs={"l1": l1, "prompt": path.stem},
                )
            )
    headers.save()
    if not utts:
        raise layout_error("l2arctic", root, "wav/*.wav files in the speaker folders", "empty wav/ folders")
    return Manifest("l2arctic", root, tuple(utts))


register(
    CorpusAdapter(
        name="l2arctic",
        description="L2-ARCTIC: 24 non-native English speakers (6 L1s × 2 F + 2 M), CMU ARCTIC prompts",
        prepare=prepare_l2arctic,  # type: ignore[arg-type]
        expects=EXPECTED,
        attributes=("gender", "accent", "text", "l1", "prompt"),
    )
)
