"""RAVDESS (Livingstone & Russo 2018): 24 actors reading two statements in eight emotions.

Layout (the audio-only speech release ``Audio_Speech_Actors_01-24.zip``)::

    ROOT/Actor_01/03-01-05-02-01-02-01.wav      (or ROOT/<one folder>/Actor_01/...)

The file name holds seven two-digit fields: modality (03 audio-only), vocal channel
(01 speech, 02 song), emotion (01 neutral, 02 calm, 03 happy, 04 sad, 05 angry, 06 fearful,
07 disgust, 08 surprised), intensity (01 normal, 02 strong), statement (01 "Kids are talking
by the door", 02 "Dogs are sitting by the door"), repetition (01, 02) and actor (01–24; odd
actors are male, even actors female). Only speech files are kept: song files (vocal channel
02, from the song release) are not speech verification material and are left out by rule.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.common import HeaderCache, check_options, describe_dir, layout_error, rel, require_root
from interbias.corpora.manifest import Manifest, Utterance

EMOTIONS = {
    "01": "neutral",
    "02": "calm",
    "03": "happy",
    "04": "sad",
    "05": "angry",
    "06": "fearful",
    "07": "disgust",
    "08": "surprised",
}
INTENSITY = {"01": "normal", "02": "strong"}
STATEMENTS = {"01": "Kids are talking by the door.", "02": "Dogs are sitting by the door."}
EXPECTED = "Actor_01 … Actor_24 folders of MM-VV-EE-II-SS-RR-AA.wav files (the Audio_Speech_Actors_01-24 release)"
_NAME = re.compile(r"(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)\.wav")
_ACTOR_DIR = re.compile(r"Actor_(\d\d)")


def _actor_dirs(root: Path) -> list[Path]:
    here = sorted(p for p in root.iterdir() if p.is_dir() and _ACTOR_DIR.fullmatch(p.name))
    if here:
        return here
    nested = sorted(
        p
        for sub in root.iterdir()
        if sub.is_dir()
        for p in sub.iterdir()
        if p.is_dir() and _ACTOR_DIR.fullmatch(p.name)
    )
    return nested


def prepare_ravdess(root: Path, cache: Path | None = None, options: dict[str, Any] | None = None) -> Manifest:
    """The manifest of a RAVDESS speech release under ``root`` (paths relative to ``root``)."""
    check_options("ravdess", options or {}, ())
    root = require_root("ravdess", root, EXPECTED)
    actors = _actor_dirs(root)
    if not actors:
        raise layout_error("ravdess", root, EXPECTED, describe_dir(root))
    headers = HeaderCache(cache, "ravdess", root)
    utts = []
    for adir in actors:
        actor = _ACTOR_DIR.fullmatch(adir.name).group(1)  # type: ignore[union-attr]
        files = sorted(p for p in adir.iterdir() if p.is_file() and p.suffix.lower() == ".wav")
        for path in files:
            m = _NAME.fullmatch(path.name)
            if not m:
                raise layout_error(
                    "ravdess", root, "file names MM-VV-EE-II-SS-RR-AA.wav (seven two-digit fields)", rel(path, root)
                )
            modality, channel, emo, inten, stmt, rep, file_actor = m.groups()
            problems = []
            if file_actor != actor:
                problems.append(f"actor field {file_actor} in folder {adir.name}")
            if modality != "03":
                problems.append(f"modality {modality} (audio-only files have 03)")
            if channel not in ("01", "02"):
                problems.append(f"vocal channel {channel} (01 speech, 02 song)")
            if emo not in EMOTIONS or inten not in INTENSITY or stmt not in STATEMENTS or rep not in ("01", "02"):
                problems.append(f"emotion/intensity/statement/repetition {emo}/{inten}/{stmt}/{rep}")
            if problems:
                raise layout_error(
                    "ravdess", root, "valid RAVDESS file-name fields", f"{rel(path, root)}: {problems[0]}"
                )
            if channel != "01":
                continue  # song
            r = rel(path, root)
            info = headers.info(r)
            utts.append(
                Utterance(
                    id=f"{adir.name}/{path.stem}",
                    path=r,
                    speaker=adir.name,
                    gender="male" if int(actor) % 2 == 1 else "female",
                    style=EMOTIONS[emo],
                    text=STATEMENTS[stmt],
                    duration_s=info.duration_s,
                    sample_rate_hz=info.sample_rate_hz,
                    attrs={
                        "emotion": EMOTIONS[emo],
                        "intensity": INTENSITY[inten],
                        "statement": stmt,
                        "repetition": rep,
                        "corpus_label": path.stem,
                    },
                )
            )
    headers.save()
    if not utts:
        raise layout_error("ravdess", root, EXPECTED + " with vocal channel 01 (speech)", "only song files")
    return Manifest("ravdess", root, tuple(utts))


register(
    CorpusAdapter(
        name="ravdess",
        description="RAVDESS speech: 24 actors, 8 emotions × 2 intensities × 2 statements × 2 repetitions",
        prepare=prepare_ravdess,  # type: ignore[arg-type]
        expects=EXPECTED,
        attributes=("gender", "style", "emotion", "intensity", "statement", "repetition"),
    )
)
