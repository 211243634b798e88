"""EARS (Richter et al. 2024): 107 speakers, emotions and reading styles, anechoic, 48 kHz.

Layout (the release's per-speaker archives plus its two metadata files)::

    ROOT/speaker_statistics.json      {"p001": {"age": "36-45", "gender": "male",
                                                "native language": "german", ...}, ...}
    ROOT/transcripts.json             (optional) {"emo_anger_sentences": "...", ...}
    ROOT/p001/emo_anger_sentences.wav, emo_anger_freeform.wav,
              rainbow_03_whisper.wav, sentences_01_fast.wav, freeform_speech_01.wav, ...

File names give the style: ``emo_<emotion>_<sentences|freeform>`` (22 emotions),
``<rainbow|sentences>_<NN>_<style>`` (regular, fast, slow, loud, whisper, highpitch,
lowpitch) and ``freeform_speech_<NN>``. Styles map onto the shared vocabulary
(``anger`` → angry, ``whisper`` → whispered, ``highpitch`` → high_pitch, …; the EARS word is
kept in ``attrs['corpus_style']``); ``style_kind`` is emotion, reading or freeform.
Non-verbal and vegetative recordings (laughing, coughing, …) are not speech and are left
out by rule. Every speaker folder must have an entry in ``speaker_statistics.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.common import (
    HeaderCache,
    age_band_of_range,
    check_options,
    describe_dir,
    layout_error,
    normalise_gender,
    rel,
    require_root,
)
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import CorpusError

EXPECTED = "speaker_statistics.json and speaker folders p001, p002, … of .wav files"
STYLE_MAP = {
    "anger": "angry",
    "fear": "fearful",
    "sadness": "sad",
    "disgust": "disgust",
    "neutral": "neutral",
    "regular": "regular",
    "fast": "fast",
    "slow": "slow",
    "loud": "loud",
    "whisper": "whispered",
    "highpitch": "high_pitch",
    "lowpitch": "low_pitch",
}
_EMO = re.compile(r"emo_([a-z]+)_(sentences|freeform)")
_READ = re.compile(r"(rainbow|sentences)_(\d\d)_([a-z]+)")
_FREE = re.compile(r"freeform_speech_(\d\d)")
_SKIP = ("nonverbal", "vegetative")
_SPEAKER = re.compile(r"p\d{3}")


def _style_of(stem: str) -> tuple[str, str, str] | None:
    """(style, corpus style, kind) of a file stem; ``None`` when it is not a speech file."""
    if stem.startswith(_SKIP):
        return None
    if m := _EMO.fullmatch(stem):
        return STYLE_MAP.get(m.group(1), m.group(1)), m.group(1), "emotion"
    if m := _READ.fullmatch(stem):
        return STYLE_MAP.get(m.group(3), m.group(3)), m.group(3), "reading"
    if _FREE.fullmatch(stem):
        return "freeform", "freeform", "freeform"
    raise ValueError(stem)


def prepare_ears(root: Path, cache: Path | None = None, options: dict[str, Any] | None = None) -> Manifest:
    """The manifest of EARS under ``root`` (speech files only; paths relative to ``root``)."""
    check_options("ears", options or {}, ())
    root = require_root("ears", root, EXPECTED)
    stats_path = root / "speaker_statistics.json"
    speakers = sorted(p for p in root.iterdir() if p.is_dir() and _SPEAKER.fullmatch(p.name))
    if not stats_path.is_file() or not speakers:
        raise layout_error("ears", root, EXPECTED, describe_dir(root))
    try:
        stats = json.loads(stats_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CorpusError(f"ears: {stats_path} is not valid JSON ({exc})") from exc
    if not isinstance(stats, dict):
        raise layout_error("ears", root, "speaker_statistics.json mapping p001… to metadata", type(stats).__name__)
    transcripts: dict[str, str] = {}
    tpath = root / "transcripts.json"
    if tpath.is_file():
        try:
            transcripts = json.loads(tpath.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise CorpusError(f"ears: {tpath} is not valid JSON ({exc})") from exc
    headers = HeaderCache(cache, "ears", root)
    utts = []
    for sdir in speakers:
        meta = stats.get(sdir.name)
        if not isinstance(meta, dict):
            raise layout_error(
                "ears", root, f"an entry for every speaker folder in {stats_path.name}", f"none for {sdir.name}"
            )
        age_raw = str(meta.get("age", "")).strip()
        attrs = {"age_range": age_raw} if age_raw else {}
        lang = str(meta.get("native language", "")).strip().lower()
        if lang:
            attrs["native_language"] = lang
        band = age_band_of_range(age_raw) if age_raw else None
        for path in sorted(p for p in sdir.iterdir() if p.is_file() and p.suffix.lower() == ".wav"):
            try:
                style = _style_of(path.stem)
            except ValueError:
                raise layout_error(
                    "ears",
                    root,
                    "file names emo_<emotion>_<sentences|freeform>, <rainbow|sentences>_NN_<style>, "
                    "freeform_speech_NN, nonverbal_*/vegetative_*",
                    rel(path, root),
                ) from None
            if style is None:
                continue
            name, corpus_style, kind = style
            r = rel(path, root)
            info = headers.info(r)
            utts.append(
                Utterance(
                    id=f"{sdir.name}/{path.stem}",
                    path=r,
                    speaker=sdir.name,
                    gender=normalise_gender(meta.get("gender")),
                    age_band=band,
                    style=name,
                    text=transcripts.get(path.stem),
                    duration_s=info.duration_s,
                    sample_rate_hz=info.sample_rate_hz,
                    attrs={**attrs, "corpus_style": corpus_style, "style_kind": kind, "pathology": "none"},
                )
            )
    headers.save()
    if not utts:
        raise layout_error("ears", root, "speech .wav files in the speaker folders", "none")
    return Manifest("ears", root, tuple(utts))


register(
    CorpusAdapter(
        name="ears",
        description="EARS: 107 speakers, 22 emotions and 7 reading styles, anechoic 48 kHz",
        prepare=prepare_ears,  # type: ignore[arg-type]
        expects=EXPECTED,
        attributes=(
            "gender",
            "age_band",
            "style",
            "text",
            "age_range",
            "native_language",
            "corpus_style",
            "style_kind",
            "pathology",
        ),
    )
)
