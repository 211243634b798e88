"""Additive noise at a signal-to-noise ratio measured on active speech.

Kinds:

* ``gaussian``, ``pink``, ``brown``: synthetic noise whose power spectral density is flat,
  ∝ 1/f, or ∝ 1/f² above 20 Hz (flat below, no DC), drawn from the operator's generator.
* ``environmental``: a segment of a recording from a folder the user provides
  (``noise_dir``, else ``$INTERBIAS_NOISE_DIR``); interbias ships no noise recordings, and a
  missing or empty folder is an error, never synthetic noise in its place.
* ``music``: the same from a folder of music recordings (``noise_dir``, else
  ``$INTERBIAS_MUSIC_DIR``); nothing stands in for it when the folder is missing or empty.
* ``babble``: ``n_talkers`` (default 6) other speakers of the corpus, each at equal active
  power; ``crosstalk``: one other speaker. The trial's own speakers
  (``OpContext.exclude_speakers``) are never drawn.

The record names the file or utterances used and, for each, the segment: ``offset_s`` into
it, for the input's duration, wrapping to its start (``looped``) when it is shorter.
It also holds the achieved SNR.
"""

from __future__ import annotations

import dataclasses
import os
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from interbias.audio import frontend as audio
from interbias.operators import OpContext, Operator, register_operator
from interbias.operators.levels import active_mask, active_power, mix_at_snr
from interbias.utils.errors import AudioError, OperatorError, see_docs
from interbias.utils.seeding import content_sha256

NoiseKind = Literal["gaussian", "pink", "brown", "environmental", "babble", "crosstalk", "music"]

#: Environment variable naming the noise folder when ``noise_dir`` is not given.
NOISE_DIR_ENV = "INTERBIAS_NOISE_DIR"
#: Environment variable naming the music folder (kind ``music``) when ``noise_dir`` is not given.
MUSIC_DIR_ENV = "INTERBIAS_MUSIC_DIR"
#: Kinds that read recordings from a folder, and the environment variable of each.
FOLDER_KINDS = {"environmental": NOISE_DIR_ENV, "music": MUSIC_DIR_ENV}
#: What each folder kind's recordings are called in messages.
FOLDER_WHAT = {"environmental": "noise", "music": "music"}
#: The kinds whose number of talkers ``n_talkers`` sets (crosstalk is one talker).
COUNTED_TALKERS = ("babble",)
#: File suffixes read from a noise folder.
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3", ".m4a", ".opus", ".aac", ".webm")
#: Below this frequency coloured noise is flat (keeps brown noise from being all rumble), Hz.
COLOUR_FLOOR_HZ = 20.0
DEFAULT_TALKERS = 6

_EXPONENT = {"gaussian": 0.0, "pink": 1.0, "brown": 2.0}


def coloured_noise(n: int, rate_hz: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """Gaussian noise with power spectral density ∝ 1/max(f, 20 Hz)^exponent and no DC.

    White noise shaped in the frequency domain (one real FFT of length ``n``)."""
    white = rng.standard_normal(n)
    if exponent == 0:
        return white
    spec = np.fft.rfft(white)
    freqs = np.fft.rfftfreq(n, 1.0 / rate_hz)
    gain = np.maximum(freqs, COLOUR_FLOOR_HZ) ** (-exponent / 2)
    gain[0] = 0.0
    return np.fft.irfft(spec * gain, n)


def circular_segment(x: np.ndarray, n: int, offset: int) -> np.ndarray:
    """``n`` samples of ``x`` from ``offset``, wrapping around (looping) when ``x`` is shorter."""
    idx = (offset + np.arange(n)) % len(x)
    return x[idx]


def noise_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES)


def file_listing(folder: Path, files: list[Path]) -> list[list[Any]]:
    """(path below ``folder``, sha256 of its bytes) of each file: a file added, removed, renamed
    or with other content changes the listing, whatever its size and times say
    (:func:`~interbias.utils.seeding.content_sha256`)."""
    return [[f.relative_to(folder).as_posix(), content_sha256(f)] for f in files]


def talker_pool(corpus: Any) -> dict[str, Any]:
    """The utterances a talker-drawing operator may mix in: (id, speaker, path, sha256) of each
    utterance of ``corpus``, sorted by id, with the corpus root when a file's sha256 is not
    recorded (then the root decides which audio the path is); a segment's row ends with its
    offset and duration."""
    rows = sorted(
        [u.id, u.speaker, u.path, u.sha256 or "", *([list(u.span)] if u.span else [])] for u in corpus.utterances
    )
    pool: dict[str, Any] = {"talkers": rows}
    if any(not r[3] for r in rows):
        pool["root"] = str(Path(corpus.root).resolve())
    return pool


@dataclass(frozen=True)
class TalkerIndex:
    """A corpus's talkers indexed once: each speaker's utterances sorted by id, the speakers
    sorted, and (memoised per excluded set: one per trial stratum and speaker) the speakers
    left outside a set. What a draw sees is what scanning the manifest each time gave."""

    by_speaker: dict[str, tuple[Any, ...]]
    speakers: tuple[str, ...]
    outside: dict[frozenset[str], tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, corpus: Any) -> TalkerIndex:
        groups: dict[str, list[Any]] = {}
        for u in corpus.utterances:
            groups.setdefault(u.speaker, []).append(u)
        by_speaker = {spk: tuple(sorted(us, key=lambda u: u.id)) for spk, us in groups.items()}
        return cls(by_speaker, tuple(sorted(by_speaker)))

    def speakers_outside(self, exclude: frozenset[str]) -> tuple[str, ...]:
        """The sorted speakers not in ``exclude``."""
        got = self.outside.get(exclude)
        if got is None:
            if len(self.outside) >= MEMO_EXCLUDED:
                self.outside.clear()
            got = self.outside[exclude] = tuple(s for s in self.speakers if s not in exclude)
        return got


#: Corpora indexed so far, by object identity (an index lives as long as its corpus).
_INDEXES: dict[int, tuple[weakref.ref[Any], TalkerIndex]] = {}
#: Excluded sets memoised per index before it starts again.
MEMO_EXCLUDED = 4096


def talker_index(corpus: Any) -> TalkerIndex:
    """``corpus``'s :class:`TalkerIndex`, built on first use and kept while ``corpus`` lives
    (a manifest is immutable, so one index serves every application of a run)."""
    key = id(corpus)
    hit = _INDEXES.get(key)
    if hit is not None and hit[0]() is corpus:
        return hit[1]
    index = TalkerIndex.of(corpus)

    def forget(ref: weakref.ref[Any], key: int = key) -> None:
        if _INDEXES.get(key, (None,))[0] is ref:
            del _INDEXES[key]

    _INDEXES[key] = (weakref.ref(corpus, forget), index)
    return index


@lru_cache(maxsize=128)  # talker clips (≤ 10 s each after the front end) and their active power
def _talker_cached(path: str, frontend: audio.FrontEnd, span: audio.Span | None = None) -> tuple[np.ndarray, float]:
    clip = audio.load(Path(path), frontend, span=span).samples
    clip.setflags(write=False)
    talker = np.asarray(clip, np.float64)
    return clip, active_power(talker, active_mask(talker, frontend.sample_rate_hz))


@lru_cache(maxsize=16)  # noise recordings can be long
def _decode_cached(path: str, rate_hz: int) -> tuple[np.ndarray, int]:
    data, file_rate_hz = audio.decode(Path(path))
    mono = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
    if not np.isfinite(mono).all():
        raise AudioError(f"{path}: non-finite (NaN/Inf) samples")
    out = audio.resample(mono, file_rate_hz, rate_hz)
    out.setflags(write=False)
    return out, file_rate_hz


@register_operator
@dataclass(frozen=True)
class Noise(Operator):
    """Add noise of ``kind`` at ``snr_db`` (dB, active-speech power over noise power).

    ``noise_dir`` (environmental, music): folder of recordings, else ``$INTERBIAS_NOISE_DIR``
    (``$INTERBIAS_MUSIC_DIR`` for music).
    ``n_talkers`` (babble only, default 6; crosstalk is one talker)."""

    kind: NoiseKind
    snr_db: float
    noise_dir: str | None = None
    n_talkers: int | None = None
    name = "noise"
    recorded = ("snr_db_requested", "snr_db_achieved", "noise_kind", "noise_file", "noise_offset_s", "noise_talkers")
    stochastic = True
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {
        "snr_db": (-20.0, 80.0, "dB"),
        "n_talkers": (2, 64, "talkers"),
    }

    def __post_init__(self) -> None:
        if self.kind in COUNTED_TALKERS and self.n_talkers is None:
            object.__setattr__(self, "n_talkers", DEFAULT_TALKERS)
        env = FOLDER_KINDS.get(self.kind)
        if env and self.noise_dir is None and os.environ.get(env):
            # Resolved now, so the folder is part of the fingerprint and the cache key.
            object.__setattr__(self, "noise_dir", os.environ[env])
            object.__setattr__(self, "_dir_source", env)

    @property
    def draws_talkers(self) -> bool:  # type: ignore[override]
        return self.kind in ("babble", "crosstalk")

    @property
    def reads_files(self) -> bool:  # type: ignore[override]
        return self.kind in FOLDER_KINDS

    def validate(self) -> None:
        if not -20.0 <= self.snr_db <= 80.0:
            raise OperatorError(f"noise.snr_db: {self.snr_db} dB is outside [-20, 80]")
        if self.noise_dir is not None and self.kind not in FOLDER_KINDS:
            raise OperatorError(f"noise.noise_dir: applies only to kind=environmental or music, not kind={self.kind}")
        if self.n_talkers is not None and self.kind not in COUNTED_TALKERS:
            raise OperatorError(
                f"noise.n_talkers: applies only to kind=babble (crosstalk is one talker), not kind={self.kind}"
            )
        if self.kind in COUNTED_TALKERS and not 2 <= self.n_talkers <= 64:  # type: ignore[operator]
            raise OperatorError(f"noise.n_talkers: {self.n_talkers} is outside [2, 64]")

    def check_resources(self) -> None:
        if self.kind in FOLDER_KINDS:
            self.noise_folder()

    def recorded_input(self) -> tuple[str, str] | None:
        if self.kind not in FOLDER_KINDS:
            return None
        return "noise_dir", {"music": "recorded music"}.get(self.kind, "recorded noise")

    def inputs(self, corpus: Any) -> Any:
        """The talker pool (babble, crosstalk) or the noise folder's files (environmental, music)."""
        if self.draws_talkers:
            return None if corpus is None else talker_pool(corpus)
        if self.kind in FOLDER_KINDS:
            try:
                folder, files = self.noise_folder()
            except OperatorError as exc:  # the operator fails on use; the key says why
                return {"unavailable": str(exc)}
            return {"files": file_listing(folder, files)}
        return None

    def noise_folder(self) -> tuple[Path, list[Path]]:
        """The noise folder and its audio files; one clear error when either is missing."""
        what = FOLDER_WHAT.get(self.kind, "noise")
        if self.noise_dir is None:
            raise OperatorError(
                f"noise kind={self.kind} needs a folder of {what} recordings: set the noise_dir parameter "
                f"or the {FOLDER_KINDS[self.kind]} environment variable (interbias ships no {what} recordings; {see_docs('operators')})"
            )
        source = getattr(self, "_dir_source", "noise_dir")
        folder = Path(self.noise_dir).expanduser()
        if not folder.is_dir():
            raise OperatorError(
                f"noise kind={self.kind}: {source} {folder} does not exist or is not a folder; {see_docs('operators')}"
            )
        files = noise_files(folder)
        if not files:
            raise OperatorError(
                f"noise kind={self.kind}: {source} {folder} holds no audio files ({', '.join(AUDIO_SUFFIXES)}); "
                f"{see_docs('operators')}"
            )
        return folder, files

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        talkers = record.get("talkers") or []
        return {
            "snr_db_requested": float(self.snr_db),
            "snr_db_achieved": record.get("snr_db_achieved"),
            "noise_kind": record.get("kind"),
            "noise_file": record.get("file") or ";".join(t["utterance"] for t in talkers) or None,
            "noise_offset_s": record.get("offset_s", talkers[0]["offset_s"] if talkers else None),
            "noise_talkers": len(talkers) or None,
        }

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        n, sample_rate_hz = len(x), ctx.sample_rate_hz
        if self.kind in _EXPONENT:
            noise = coloured_noise(n, sample_rate_hz, _EXPONENT[self.kind], ctx.rng)
            source: dict[str, Any] = {}
        elif self.kind in FOLDER_KINDS:
            noise, source = self._environmental(n, ctx)
        else:
            noise, source = self._talkers(n, ctx)
        y, rec = mix_at_snr(x, noise, self.snr_db, sample_rate_hz)
        return y, {"kind": self.kind, **source, **rec}

    def _environmental(self, n: int, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        folder, files = self.noise_folder()
        path = files[int(ctx.rng.integers(len(files)))]
        try:
            samples, file_rate = _decode_cached(str(path), ctx.sample_rate_hz)
        except AudioError as exc:
            raise OperatorError(f"noise kind={self.kind}: cannot use noise file {path}: {exc}") from exc
        if len(samples) == 0:
            raise OperatorError(f"noise kind={self.kind}: noise file {path} holds no samples")
        looped = len(samples) < n
        offset = int(ctx.rng.integers(len(samples) if looped else len(samples) - n + 1))
        return circular_segment(np.asarray(samples, np.float64), n, offset), {
            "file": str(path.relative_to(folder)),
            "noise_dir": str(folder),
            "offset_s": offset / ctx.sample_rate_hz,
            "file_duration_s": len(samples) / ctx.sample_rate_hz,
            "file_rate_hz": file_rate,
            "looped": looped,
        }

    def _talkers(self, n: int, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        k = self.n_talkers if self.kind in COUNTED_TALKERS else 1
        if ctx.corpus is None:
            raise OperatorError(f"noise kind={self.kind} draws other talkers from a corpus, but none was given")
        exclude = frozenset(ctx.exclude_speakers) | {ctx.speaker}
        index = talker_index(ctx.corpus)
        speakers = index.speakers_outside(exclude)
        if len(speakers) < k:  # type: ignore[operator]
            raise OperatorError(
                f"noise kind={self.kind} needs {k} other speaker(s); the corpus has {len(speakers)} "
                f"outside the {len(exclude)} speaker(s) of this utterance's trials"
            )
        frontend = ctx.frontend or audio.FrontEnd(sample_rate_hz=ctx.sample_rate_hz)
        if frontend.sample_rate_hz != ctx.sample_rate_hz:
            frontend = dataclasses.replace(frontend, sample_rate_hz=ctx.sample_rate_hz)
        mix = np.zeros(n)
        used = []
        for si in ctx.rng.choice(len(speakers), size=k, replace=False):
            spk = speakers[int(si)]
            utts = index.by_speaker[spk]
            u = utts[int(ctx.rng.integers(len(utts)))]
            try:
                clip, power = _talker_cached(str(ctx.corpus.resolve(u)), frontend, u.span)
                talker = np.asarray(clip, np.float64)
            except (AudioError, OperatorError) as exc:
                raise OperatorError(f"noise kind={self.kind}: cannot use talker utterance {u.id}: {exc}") from exc
            looped = len(talker) < n
            offset = int(ctx.rng.integers(len(talker) if looped else len(talker) - n + 1))
            mix += circular_segment(talker, n, offset) / np.sqrt(power)
            used.append(
                {
                    "utterance": u.id,
                    "speaker": spk,
                    "offset_s": offset / ctx.sample_rate_hz,
                    "talker_duration_s": len(talker) / ctx.sample_rate_hz,
                    "looped": looped,
                }
            )
        return mix, {"talkers": used}
