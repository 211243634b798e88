"""Audio front end: decode in process, mono, resample to the encoder rate, check, truncate.

Every change the front end makes to a file's audio is recorded on the returned
:class:`LoadedAudio` (downmixed, resampled from, truncated) so runs can count them; anything
that makes a file unusable raises :class:`AudioError` with a message naming the file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np

from interbias.errors import AudioError

#: Containers decoded with PyAV rather than libsndfile.
_AV_SUFFIXES = {".m4a", ".mp4", ".aac", ".webm", ".opus", ".amr", ".wma"}


@dataclass(frozen=True)
class FrontEnd:
    """Front-end rules applied to every utterance before any operator runs.

    Defaults follow InterBias-SV: 16 kHz, clips shorter than 1 s rejected, longer than
    10 s truncated to their first 10 s.
    """

    sample_rate_hz: int = 16000
    min_duration_s: float = 1.0
    max_duration_s: float | None = 10.0


@dataclass(frozen=True)
class LoadedAudio:
    samples: np.ndarray  # float32 mono in [-1, 1], at ``sample_rate_hz``
    sample_rate_hz: int
    source_rate_hz: int
    source_channels: int
    truncated: bool

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate_hz


def resample(x: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Polyphase resampling (scipy ``resample_poly``, Kaiser window), float32 out."""
    if rate_in == rate_out:
        return np.asarray(x, dtype=np.float32)
    from scipy.signal import resample_poly

    g = gcd(int(rate_in), int(rate_out))
    y = resample_poly(np.asarray(x, dtype=np.float64), rate_out // g, rate_in // g)
    return y.astype(np.float32)


def decode(path: Path) -> tuple[np.ndarray, int]:
    """Decode ``path`` to float32 samples of shape (frames, channels) and its sample rate."""
    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: file does not exist")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: file is empty (0 bytes)")
    if path.suffix.lower() in _AV_SUFFIXES:
        return _decode_av(path)
    import soundfile as sf

    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # libsndfile raises LibsndfileError / RuntimeError / TypeError
        raise AudioError(f"{path}: cannot decode audio ({_short(exc)})") from exc
    return data, int(rate)


def _decode_av(path: Path) -> tuple[np.ndarray, int]:
    import av

    try:
        with av.open(str(path)) as container:
            stream = next((s for s in container.streams if s.type == "audio"), None)
            if stream is None:
                raise AudioError(f"{path}: no audio stream")
            rate = int(stream.codec_context.sample_rate)
            chunks = []
            for frame in container.decode(stream):
                arr = frame.to_ndarray()
                if frame.format.is_planar:
                    arr = arr.T
                else:
                    arr = arr.reshape(-1, len(frame.layout.channels))
                if arr.dtype.kind == "i":
                    arr = arr.astype(np.float32) / float(np.iinfo(arr.dtype).max + 1)
                chunks.append(arr.astype(np.float32))
    except AudioError:
        raise
    except Exception as exc:
        raise AudioError(f"{path}: cannot decode audio ({_short(exc)})") from exc
    if not chunks:
        raise AudioError(f"{path}: decoded to no samples")
    return np.concatenate(chunks, axis=0), rate


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def load(path: Path, frontend: FrontEnd = FrontEnd()) -> LoadedAudio:
    """Decode, downmix to mono (channel mean), resample, check and truncate one file."""
    data, rate = decode(path)
    channels = data.shape[1]
    if data.shape[0] == 0:
        raise AudioError(f"{path}: file holds no samples")
    if not np.isfinite(data).all():
        bad = int((~np.isfinite(data)).sum())
        raise AudioError(f"{path}: {bad} non-finite (NaN/Inf) sample(s)")
    mono = data.mean(axis=1) if channels > 1 else data[:, 0]
    return prepare(mono, rate, frontend, where=str(path), channels=channels)


def prepare(mono: np.ndarray, rate: int, frontend: FrontEnd, *, where: str, channels: int = 1) -> LoadedAudio:
    """Apply the front end's rate, minimum and maximum to mono samples at ``rate``."""
    if not np.isfinite(mono).all():
        raise AudioError(f"{where}: non-finite (NaN/Inf) samples")
    duration = len(mono) / rate
    if duration < frontend.min_duration_s:
        raise AudioError(f"{where}: {duration:.3f} s is shorter than the minimum {frontend.min_duration_s:g} s")
    x = resample(mono, rate, frontend.sample_rate_hz)
    truncated = False
    if frontend.max_duration_s is not None:
        limit = int(round(frontend.max_duration_s * frontend.sample_rate_hz))
        if len(x) > limit:
            x = x[:limit]
            truncated = True
    return LoadedAudio(
        samples=np.ascontiguousarray(x, dtype=np.float32),
        sample_rate_hz=frontend.sample_rate_hz,
        source_rate_hz=int(rate),
        source_channels=int(channels),
        truncated=truncated,
    )


def info(path: Path) -> tuple[float, int, int]:
    """(duration in s, sample rate in Hz, channels) read from the header where possible."""
    path = Path(path)
    if path.suffix.lower() not in _AV_SUFFIXES:
        import soundfile as sf

        try:
            i = sf.info(str(path))
            return i.frames / i.samplerate, int(i.samplerate), int(i.channels)
        except Exception:
            pass
    data, rate = decode(path)
    return data.shape[0] / rate, rate, data.shape[1]


def write_flac16(path: Path, x: np.ndarray, rate: int) -> tuple[int, str]:
    """Write ``x`` (floats in [−1, 1]) as 16-bit PCM FLAC, rounding to the nearest step and
    clipping; returns the number of samples and the sha256 of the file written."""
    import soundfile as sf

    q = np.clip(np.round(np.asarray(x) * 32767.0), -32768, 32767).astype(np.int16)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), q, rate, subtype="PCM_16", format="FLAC")
    return len(q), hashlib.sha256(path.read_bytes()).hexdigest()
