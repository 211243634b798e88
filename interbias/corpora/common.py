"""What every corpus adapter shares: normalised attribute values, audio headers, layout errors.

Adapters map each corpus's own labels onto one vocabulary so that one experiment file works on
real and synthetic corpora (the corpus's own word stays in ``attrs``):

- ``gender``: ``female`` / ``male`` (other self-descriptions are kept as given, lower-case);
- ``age_band``: ``young`` (< 30), ``adult`` (30–59), ``elderly`` (≥ 60) years, assigned by the
  midpoint of the corpus's age bin (Common Voice ``twenties`` → 25 → young; EARS ``26-35`` →
  30.5 → adult); bins are never turned into invented exact ages;
- ``style``: what the recording asked of the speaker, from :data:`STYLE_NAMES` (emotions and
  reading styles); corpus labels with no clear counterpart keep their own name.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from interbias.utils import atomic
from interbias.utils.errors import CorpusError
from interbias.utils.seeding import canonical_json, sha256_text

#: The shared style vocabulary (emotions, then reading styles).
STYLE_NAMES = (
    "neutral",
    "calm",
    "happy",
    "sad",
    "angry",
    "fearful",
    "disgust",
    "surprised",
    "regular",
    "fast",
    "slow",
    "loud",
    "whispered",
    "high_pitch",
    "low_pitch",
)

#: Age bands in years: [low, high) by the midpoint of a corpus's age bin.
AGE_BANDS = (("young", 0.0, 30.0), ("adult", 30.0, 60.0), ("elderly", 60.0, 200.0))

_GENDER = {
    "female": "female",
    "f": "female",
    "woman": "female",
    "female_feminine": "female",
    "male": "male",
    "m": "male",
    "man": "male",
    "male_masculine": "male",
}


def normalise_gender(raw: str | None) -> str | None:
    """``female``/``male`` for the usual spellings; other non-empty values lower-cased."""
    if raw is None:
        return None
    value = str(raw).strip().lower()
    if not value:
        return None
    return _GENDER.get(value, value)


def age_band(midpoint_years: float) -> str:
    """The band of an age (or of an age bin's midpoint), in years."""
    for name, lo, hi in AGE_BANDS:
        if lo <= midpoint_years < hi:
            return name
    raise CorpusError(f"age {midpoint_years} is outside every age band")


def age_band_of_range(text: str) -> str | None:
    """Band of an age range written ``18-25`` / ``76+`` (midpoint rule); ``None`` if unparsable."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-|–|to)\s*(\d+)\s*", text)
    if m:
        return age_band((int(m.group(1)) + int(m.group(2))) / 2)
    m = re.fullmatch(r"\s*(\d+)\s*\+\s*", text)
    if m:
        return age_band(int(m.group(1)) + 5)
    m = re.fullmatch(r"\s*(\d+)\s*", text)
    if m:
        return age_band(int(m.group(1)))
    return None


def layout_error(corpus: str, root: Path, expected: str, found: str) -> CorpusError:
    """One error that says what layout was expected under ``root`` and what is there."""
    return CorpusError(f"{corpus}: {root} does not look like {corpus}: expected {expected}; found {found}")


def describe_dir(root: Path, limit: int = 6) -> str:
    """A short listing of ``root`` for layout errors: ``a/, b.txt, … (N entries)``."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        return f"an unreadable folder ({exc.strerror or exc})"
    if not entries:
        return "an empty folder"
    names = [e.name + ("/" if e.is_dir() else "") for e in entries[:limit]]
    more = f", … ({len(entries)} entries)" if len(entries) > limit else ""
    return ", ".join(names) + more


@dataclass(frozen=True)
class AudioInfo:
    duration_s: float
    sample_rate_hz: int
    channels: int


class HeaderCache:
    """Durations and rates read from audio headers, cached per corpus root.

    Entries are keyed by relative path and reused only while the file's size and mtime are
    unchanged, so a second ``prepare`` of a large corpus reads no headers. A file whose header
    cannot be read is an error naming it (never a silently dropped utterance).
    """

    VERSION = 1

    def __init__(self, cache: Path | None, corpus: str, root: Path) -> None:
        self.root = root
        self.path: Path | None = None
        self._entries: dict[str, list] = {}
        if cache is not None:
            key = sha256_text(canonical_json({"v": self.VERSION, "corpus": corpus, "root": str(root.resolve())}))[:16]
            self.path = Path(cache) / "corpora" / "headers" / f"{corpus}-{key}.json"
            try:
                self._entries = json.loads(self.path.read_text())
            except (OSError, ValueError):
                self._entries = {}
        self._dirty = False

    def info(self, rel: str) -> AudioInfo:
        import soundfile as sf

        full = self.root / rel
        try:
            st = full.stat()
        except OSError as exc:
            raise CorpusError(f"{full}: cannot read ({exc.strerror or exc})") from exc
        entry = self._entries.get(rel)
        if entry and entry[0] == st.st_size and entry[1] == st.st_mtime_ns:
            return AudioInfo(entry[2], entry[3], entry[4])
        if st.st_size == 0:
            raise CorpusError(f"{full}: audio file is empty (0 bytes)")
        try:
            head = sf.info(str(full))
        except Exception as exc:  # libsndfile raises several types
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CorpusError(f"{full}: cannot read the audio header ({first})") from exc
        info = AudioInfo(round(head.frames / head.samplerate, 6), int(head.samplerate), int(head.channels))
        self._entries[rel] = [st.st_size, st.st_mtime_ns, info.duration_s, info.sample_rate_hz, info.channels]
        self._dirty = True
        return info

    def save(self) -> None:
        if self._dirty and self.path is not None:
            atomic.write_text(self.path, json.dumps(self._entries, sort_keys=True))
            self._dirty = False


def rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def check_options(corpus: str, options: dict, valid: Iterable[str]) -> None:
    """Unknown adapter options are an error listing the valid ones."""
    valid = sorted(valid)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise CorpusError(f"{corpus}: unknown option {unknown[0]!r}; valid: {', '.join(valid) or '(none)'}")


def require_root(corpus: str, root: Path | str, expected: str) -> Path:
    """``root`` as a Path, or an error saying it is not a folder and what was expected there."""
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"{corpus}: corpus root {root} is not a folder (expected {expected})")
    return root
