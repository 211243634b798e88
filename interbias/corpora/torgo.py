"""TORGO (Rudzicz et al. 2012): dysarthric and control speakers, two microphones per prompt.

Layout (the F, FC, M and MC archives, extracted in one folder or side by side)::

    ROOT/F01/Session1/wav_arrayMic/0001.wav     (or ROOT/F/F01/Session1/...)
    ROOT/F01/Session1/wav_headMic/0001.wav
    ROOT/F01/Session1/prompts/0001.txt

Speaker folders are ``F0x``/``M0x`` (speakers with dysarthria) and ``FC0x``/``MC0x`` (controls);
the first letter gives gender. Each prompt is recorded by an array and a head-mounted
microphone: the ``mic`` attribute says which, and the utterance id names both session and
mic, so an experiment chooses one microphone (``population: {mic: array}``) rather than
pairing two recordings of one utterance. ``pathology`` is ``dysarthria`` or ``none``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.common import HeaderCache, check_options, describe_dir, layout_error, rel, require_root
from interbias.corpora.manifest import Manifest, Utterance

EXPECTED = "speaker folders F01, FC01, M01, MC01 … with Session*/wav_arrayMic|wav_headMic/*.wav"
_SPEAKER = re.compile(r"([FM])(C?)(\d\d)")
MICS = {"wav_arrayMic": "array", "wav_headMic": "head"}


def _speaker_dirs(root: Path) -> list[Path]:
    found = [p for p in root.iterdir() if p.is_dir() and _SPEAKER.fullmatch(p.name)]
    for group in ("F", "FC", "M", "MC"):
        sub = root / group
        if sub.is_dir():
            found += [p for p in sub.iterdir() if p.is_dir() and _SPEAKER.fullmatch(p.name)]
    return sorted(found, key=lambda p: p.name)


def prepare_torgo(root: Path, cache: Path | None = None, options: dict[str, Any] | None = None) -> Manifest:
    """The manifest of TORGO under ``root`` (both microphones; paths relative to ``root``)."""
    check_options("torgo", options or {}, ())
    root = require_root("torgo", root, EXPECTED)
    speakers = _speaker_dirs(root)
    if not speakers:
        raise layout_error("torgo", root, EXPECTED, describe_dir(root))
    names = [p.name for p in speakers]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise layout_error("torgo", root, "each speaker folder once", f"{dup} twice")
    headers = HeaderCache(cache, "torgo", root)
    utts = []
    for sdir in speakers:
        sex, control, _ = _SPEAKER.fullmatch(sdir.name).groups()  # type: ignore[union-attr]
        for session in sorted(p for p in sdir.iterdir() if p.is_dir() and p.name.startswith("Session")):
            for mic_dir, mic in MICS.items():
                wav_dir = session / mic_dir
                if not wav_dir.is_dir():
                    continue
                for path in sorted(p for p in wav_dir.iterdir() if p.is_file() and p.suffix.lower() == ".wav"):
                    prompt = session / "prompts" / f"{path.stem}.txt"
                    text = prompt.read_text(encoding="utf-8", errors="replace").strip() if prompt.is_file() else None
                    r = rel(path, root)
                    info = headers.info(r)
                    utts.append(
                        Utterance(
                            id=f"{sdir.name}/{session.name}/{mic}/{path.stem}",
                            path=r,
                            speaker=sdir.name,
                            gender="female" if sex == "F" else "male",
                            session=session.name,
                            text=text or None,
                            duration_s=info.duration_s,
                            sample_rate_hz=info.sample_rate_hz,
                            attrs={
                                "pathology": "none" if control else "dysarthria",
                                "mic": mic,
                                "prompt": path.stem,
                            },
                        )
                    )
    headers.save()
    if not utts:
        raise layout_error(
            "torgo",
            root,
            "Session*/wav_arrayMic or wav_headMic folders of .wav files",
            f"speaker folders {', '.join(names[:6])} without any",
        )
    return Manifest("torgo", root, tuple(utts))


register(
    CorpusAdapter(
        name="torgo",
        description="TORGO: dysarthric (F0x/M0x) and control (FC0x/MC0x) speakers, array and head mics",
        prepare=prepare_torgo,  # type: ignore[arg-type]
        expects=EXPECTED,
        attributes=("gender", "session", "text", "pathology", "mic", "prompt"),
    )
)
