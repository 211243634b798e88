"""Debian's recorded telephone prompts (the Asterisk core sounds): real voices at 8 kHz with
transcripts, found where ``apt-get install asterisk-core-sounds-<lang>-wav`` puts them.

Each voice is one folder of Asterisk's sounds directory named ``<lang>_<REGION>_<f|m>_<Name>``
(``en_US_f_Allison``, ``fr_CA_f_June``): one professional speaker per folder, the gender in its
name. The transcripts are ``core-sounds-<lang>.txt.gz`` in the package's documentation folder,
one ``prompt-id: text`` line per prompt (ids are paths under the voice folder without ``.wav``).
Good for mechanics on real audio (upsampling, padding, a CM's bona fide side); not for
population claims: one voice per language.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from interbias.utils.errors import CorpusError

#: Where Debian's asterisk-core-sounds packages install the recordings.
SOUNDS_DIR = Path("/usr/share/asterisk/sounds")
#: Where their transcripts live (``asterisk-core-sounds-<lang>/core-sounds-<lang>.txt.gz``).
DOC_DIR = Path("/usr/share/doc")
#: A voice folder's name: language, region, gender letter, speaker name.
VOICE_FOLDER = re.compile(r"^(?P<lang>[a-z]{2})_(?P<region>[A-Z]{2})_(?P<gender>[fm])_(?P<name>\w+)$")
_GENDER = {"f": "female", "m": "male"}


@dataclass(frozen=True)
class PromptVoice:
    """One recorded voice: its folder, language, region, gender and speaker name (and where the
    documentation folders, holding the transcripts, are)."""

    folder: Path
    language: str
    region: str
    gender: str
    name: str
    doc_dir: Path = DOC_DIR

    @property
    def package(self) -> str:
        """The Debian package that installs this voice."""
        return f"asterisk-core-sounds-{self.language}-wav"

    @property
    def transcripts(self) -> Path:
        return self.doc_dir / f"asterisk-core-sounds-{self.language}" / f"core-sounds-{self.language}.txt.gz"


@dataclass(frozen=True)
class Prompt:
    """One recorded prompt: its id (path under the voice folder, no suffix), file and text."""

    id: str
    path: Path
    text: str


def prompt_voices(sounds_dir: Path = SOUNDS_DIR) -> list[PromptVoice]:
    """The voices installed under ``sounds_dir``, sorted by folder name (none: empty)."""
    if not sounds_dir.is_dir():
        return []
    voices = []
    for folder in sorted(p for p in sounds_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        m = VOICE_FOLDER.match(folder.name)
        if m:
            g = _GENDER[m["gender"]]
            voices.append(PromptVoice(folder, m["lang"], m["region"], g, m["name"]))
    return voices


def prompt_voice(language: str, sounds_dir: Path = SOUNDS_DIR) -> PromptVoice:
    """The installed voice of ``language``, or a :class:`CorpusError` naming the package."""
    for voice in prompt_voices(sounds_dir):
        if voice.language == language:
            return voice
    raise CorpusError(
        f"no recorded prompts of language {language!r} under {sounds_dir}: "
        f"apt-get install asterisk-core-sounds-{language}-wav (Debian)"
    )


def read_transcripts(path: Path) -> dict[str, str]:
    """``prompt-id → text`` from a ``core-sounds-<lang>.txt.gz`` file (comments and lines
    without ``id: text`` skipped)."""
    if not path.is_file():
        raise CorpusError(f"{path}: no transcripts (installed with the asterisk-core-sounds-<lang> package)")
    out: dict[str, str] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith(";") or ":" not in line:
                continue
            key, text = line.split(":", 1)
            if key.strip() and text.strip():
                out[key.strip()] = " ".join(text.split())
    return out


def prompts(voice: PromptVoice) -> list[Prompt]:
    """Every prompt of ``voice`` that has both a WAV file and a transcript, sorted by id."""
    texts = read_transcripts(voice.transcripts)
    found = []
    for key in sorted(texts):
        path = voice.folder / f"{key}.wav"
        if path.is_file():
            found.append(Prompt(key, path, texts[key]))
    return found


def spoken(prompt: Prompt, *, min_words: int = 1) -> bool:
    """Whether the transcript is speech (not a ``[tone description]``) of ``min_words`` words or more."""
    return "[" not in prompt.text and len(prompt.text.split()) >= min_words
