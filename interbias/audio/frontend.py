"""Audio front end: decode in process, mono, resample to the encoder rate, check, truncate.

Every change the front end makes to a file's audio is recorded on the returned
:class:`LoadedAudio` (downmixed, resampled from, truncated) so runs can count them; anything
that makes a file unusable raises :class:`AudioError` with a message naming the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# the resamplers live in interbias.audio.resample; their names stay importable from here
from interbias.audio.resample import RESAMPLERS as RESAMPLERS
from interbias.audio.resample import resample, resampler_record
from interbias.audio.segments import span_samples, trim_padding
from interbias.audio.vad import keep_speech
from interbias.utils.errors import AudioError
from interbias.utils.paths import not_a_file
from interbias.utils.seeding import sha256_file

#: Rates a front end may resample to (Hz): below the first nothing speech-like is left, above
#: the second a few seconds of audio would need gigabytes.
RATE_LIMITS_HZ = (1000, 384000)
#: Peak-to-peak amplitude (full scale 2) below which a file holds no signal at all.
SILENCE_PEAK_TO_PEAK = 1e-6
#: Largest sample magnitude accepted from a file, in full scale (1.0). Float audio lies in
#: [-1, 1]; processing can overshoot by a few dB (2.0 is +6 dBFS), while integer PCM values
#: stored as float reach hundreds or thousands: those are refused rather than embedded at a
#: level no encoder was trained on.
MAX_FLOAT_PEAK = 2.0
#: Loudest 20 ms frame (mean square, dB re full scale) under which an input holds no speech:
#: about the quantisation noise of 16-bit audio (one LSB is -90.3 dBFS). A file that never rises
#: above it (digital silence, -96 dBFS dither) fails in every cell, before any chain runs.
SPEECH_FLOOR_DBFS = -90.0
#: Frame length of :func:`loudest_frame_db` (the framing of interbias.audio.level).
SPEECH_FRAME_S = 0.02

#: FrontEnd fields the fingerprint records only when not at their defaults.
_CHOICES = ("resampler", "vad", "long_audio", "window_s", "hop_s", "trim_silence")

#: A segment of a file: offset and duration in s (``None``: from the start, to the end).
Span = tuple[float | None, float | None]

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
    #: How audio at another rate is brought to ``sample_rate_hz``: a key of :data:`RESAMPLERS`.
    resampler: str = "polyphase"
    #: Voice activity detection applied to every input before any chain
    #: (:mod:`interbias.audio.vad`): ``none``, ``energy``, ``webrtc`` or ``silero``.
    vad: str = "none"
    #: Files longer than the limit: ``truncate`` at ``max_duration_s``, or embed by ``window``s
    #: of ``window_s`` every ``hop_s`` (:mod:`interbias.audio.windows`).
    long_audio: str = "truncate"
    window_s: float = 3.0
    hop_s: float = 1.5
    #: Remove leading and trailing digital silence (:func:`interbias.audio.segments.trim_padding`)
    #: from every file before its checks; off by default.
    trim_silence: bool = False

    def fingerprint(self) -> dict[str, Any]:
        """What the embedding cache key and run.json record of these rules: the rate, the
        duration limits and, for any resampler but the default, its method and parameters (so
        the default's fingerprint, and every cache key made before resamplers were a choice,
        stays as it was); a VAD other than ``none`` and ``trim_silence`` likewise."""
        out: dict[str, Any] = {k: v for k, v in dataclasses.asdict(self).items() if k not in _CHOICES}
        if self.resampler != "polyphase":
            out["resampler"] = resampler_record(self.resampler)
        if self.vad != "none":
            out["vad"] = self.vad
        if self.long_audio != "truncate":
            out.update(long_audio=self.long_audio, window_s=self.window_s, hop_s=self.hop_s)
        if self.trim_silence:
            out["trim_silence"] = True
        return out

    def record(self) -> dict[str, Any]:
        """The rules as run.json records them: every field, the resampler with its method and parameters."""
        out = {**dataclasses.asdict(self), "resampler": resampler_record(self.resampler)}
        if self.vad == "none":  # as run.json recorded front ends before the VAD was a choice
            del out["vad"]
        if self.long_audio == "truncate":  # likewise for long recordings
            for k in ("long_audio", "window_s", "hop_s"):
                del out[k]
        if not self.trim_silence:  # likewise for trimming
            del out["trim_silence"]
        return out


@dataclass(frozen=True)
class LoadedAudio:
    samples: np.ndarray  # float32 mono in [-1, 1], at ``sample_rate_hz``
    sample_rate_hz: int
    source_rate_hz: int
    source_channels: int
    truncated: bool
    #: Kept-speech share of the front end's VAD (``None`` without one).
    speech_share: float | None = None
    #: (first sample, samples) of the file read, for a segment (``None``: the whole file).
    segment: tuple[int, int] | None = None
    #: Samples of digital silence removed (leading, trailing) under ``trim_silence`` (else ``None``).
    trimmed: tuple[int, int] | None = None

    def record(self) -> dict[str, Any]:
        """What the front end did to this file, as a run records it per utterance: source rate,
        channels, truncation, and where present the VAD's speech share, the segment read
        (``segment``: first sample and samples at the source rate) and the padding trimmed
        (``trimmed``: leading and trailing samples at the source rate)."""
        out: dict[str, Any] = {
            "source_rate_hz": self.source_rate_hz,
            "channels": self.source_channels,
            "truncated": self.truncated,
        }
        if self.speech_share is not None:
            out["speech_share"] = self.speech_share
        if self.segment is not None:
            out["segment"] = list(self.segment)
        if self.trimmed is not None:
            out["trimmed"] = list(self.trimmed)
        return out

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate_hz


def rate_changes(source_rates: Iterable[int], rate_hz: int) -> dict[str, Any]:
    """Counts of what the front end did to the rate of each of ``source_rates`` (one entry
    per utterance and side): ``n_resampled`` (either way), ``n_upsampled`` and
    ``n_downsampled``, and the source rates of each, sorted (``upsampled_from``,
    ``downsampled_from``: ``"8000"`` or ``"8000;11025"``, empty when none)."""
    up: set[int] = set()
    down: set[int] = set()
    n_up = n_down = 0
    for source_rate_hz in source_rates:
        if source_rate_hz < rate_hz:
            n_up += 1
            up.add(int(source_rate_hz))
        elif source_rate_hz > rate_hz:
            n_down += 1
            down.add(int(source_rate_hz))
    return {
        "n_resampled": n_up + n_down,
        "n_upsampled": n_up,
        "n_downsampled": n_down,
        "upsampled_from": ";".join(map(str, sorted(up))),
        "downsampled_from": ";".join(map(str, sorted(down))),
    }


def decode(path: Path) -> tuple[np.ndarray, int]:
    """Decode ``path`` to float32 samples of shape (frames, channels) and its sample rate."""
    path = Path(path)
    problem = not_a_file(path)
    if problem:
        raise AudioError(f"{path}: {problem}")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: file is empty (0 bytes)")
    if path.suffix.lower() in _AV_SUFFIXES:
        return _decode_av(path)
    import soundfile as sf

    try:
        data, sample_rate_hz = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # libsndfile raises LibsndfileError / RuntimeError / TypeError
        raise AudioError(f"{path}: cannot decode audio ({_short(exc)})") from exc
    return data, int(sample_rate_hz)


def decode_span(path: Path, span: Span) -> tuple[np.ndarray, int, int]:
    """The samples of ``span`` (offset, duration in s; :func:`interbias.audio.segments.span_samples`)
    of ``path``, its sample rate and the first sample read. libsndfile reads only the span;
    other containers are decoded whole and cut."""
    path = Path(path)
    if path.suffix.lower() in _AV_SUFFIXES or not_a_file(path) or path.stat().st_size == 0:
        data, rate = decode(path)  # refuses a missing or empty file in decode's words
        first, n = span_samples(*span, rate, data.shape[0], where=str(path))
        return data[first : first + n], rate, first
    import soundfile as sf

    try:
        with sf.SoundFile(str(path)) as fh:
            rate = int(fh.samplerate)
            first, n = span_samples(*span, rate, fh.frames, where=str(path))
            fh.seek(first)
            data = fh.read(n, dtype="float32", always_2d=True)
    except AudioError:
        raise
    except Exception as exc:  # libsndfile raises LibsndfileError / RuntimeError / TypeError
        raise AudioError(f"{path}: cannot decode audio ({_short(exc)})") from exc
    if data.shape[0] != n:
        raise AudioError(f"{path}: the segment's {n} samples from sample {first} decode to {data.shape[0]}")
    return data, rate, first


def _decode_av(path: Path) -> tuple[np.ndarray, int]:
    import av

    try:
        with av.open(str(path)) as container:
            stream = next((s for s in container.streams if s.type == "audio"), None)
            if stream is None:
                raise AudioError(f"{path}: no audio stream")
            sample_rate_hz = int(stream.codec_context.sample_rate)
            chunks = []
            for frame in container.decode(stream):
                arr = frame.to_ndarray()
                if frame.format.is_planar:
                    arr = arr.T
                else:
                    arr = arr.reshape(-1, len(frame.layout.channels))
                if np.issubdtype(arr.dtype, np.signedinteger):
                    arr = arr.astype(np.float32) / float(np.iinfo(arr.dtype).max + 1)
                chunks.append(arr.astype(np.float32))
    except AudioError:
        raise
    except Exception as exc:
        raise AudioError(f"{path}: cannot decode audio ({_short(exc)})") from exc
    if not chunks:
        raise AudioError(f"{path}: decoded to no samples")
    return np.concatenate(chunks, axis=0), sample_rate_hz


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def load(path: Path, frontend: FrontEnd = FrontEnd(), *, vad: bool = False, span: Span | None = None) -> LoadedAudio:
    """Decode (only ``span``, offset and duration in s, where given: :func:`decode_span`),
    downmix to mono (channel mean), trim digital silence (``frontend.trim_silence``), resample,
    check and truncate one file; with ``vad``, keep only the speech the front end's VAD finds,
    before truncating (utterances to embed; noise and other talkers' audio are loaded without)."""
    return load_decoded(*read(path, span), path, frontend, vad=vad)


def read(path: Path, span: Span | None = None) -> tuple[np.ndarray, int, tuple[int, int] | None]:
    """The decoded samples (frames, channels) of ``path``, or of ``span`` of it, their rate, and
    the segment read (first sample, samples; ``None`` for the whole file)."""
    if span is None:
        data, source_rate_hz = decode(path)
        return data, source_rate_hz, None
    data, source_rate_hz, first = decode_span(path, span)
    return data, source_rate_hz, (first, int(data.shape[0]))


def load_decoded(
    data: np.ndarray,
    source_rate_hz: int,
    segment: tuple[int, int] | None,
    path: Path,
    frontend: FrontEnd,
    *,
    vad: bool = False,
) -> LoadedAudio:
    """:func:`load` of samples :func:`read` decoded from ``path`` (``interbias data info`` judges
    what it has decoded with this same code)."""
    channels = data.shape[1]
    if data.shape[0] == 0:
        raise AudioError(f"{path}: file holds no samples")
    check_range(data, path)
    mono = data.mean(axis=1) if channels > 1 else data[:, 0]
    if channels > 1 and float(np.ptp(mono)) < SILENCE_PEAK_TO_PEAK and float(np.ptp(data)) >= SILENCE_PEAK_TO_PEAK:
        raise AudioError(
            f"{path}: its {channels} channels cancel when averaged to mono (one is the other inverted): "
            "the downmix is silence; keep one channel"
        )
    trimmed = None
    if frontend.trim_silence:
        mono, lead, trail = trim_padding(mono)
        trimmed = (lead, trail)
    loaded = prepare(mono, source_rate_hz, frontend, where=str(path), channels=channels, vad=vad)
    return dataclasses.replace(loaded, segment=segment, trimmed=trimmed)


def check_range(data: np.ndarray, path: Path) -> None:
    """Refuse decoded samples that are not finite or reach past :data:`MAX_FLOAT_PEAK` × full
    scale (integer values stored as float): every command that reads audio refuses them alike."""
    if not np.isfinite(data).all():
        bad = int((~np.isfinite(data)).sum())
        raise AudioError(f"{path}: {bad} non-finite (NaN/Inf) sample(s)")
    peak = float(np.abs(data).max()) if data.size else 0.0
    if peak > MAX_FLOAT_PEAK:
        raise AudioError(
            f"{path}: samples reach {peak:.4g}, more than {MAX_FLOAT_PEAK:g}× full scale (float audio lies in [-1, 1]; "
            "these look like integer values stored as float): rescale the file"
        )


def prepare(
    mono: np.ndarray,
    source_rate_hz: int,
    frontend: FrontEnd,
    *,
    where: str,
    channels: int = 1,
    require_signal: bool = True,
    vad: bool = False,
) -> LoadedAudio:
    """Apply the front end's rate, minimum and maximum to mono samples at ``source_rate_hz``; with
    ``require_signal``, audio without any signal (:func:`check_signal`) is refused; with ``vad``
    (an input to embed), the front end's VAD (:mod:`interbias.audio.vad`) keeps the speech before
    truncation (without a VAD, less than the minimum of signal is refused:
    :func:`check_signal_duration`), and under ``long_audio: window`` audio shorter than one
    window is refused."""
    if not np.isfinite(mono).all():
        raise AudioError(f"{where}: non-finite (NaN/Inf) samples")
    duration = len(mono) / source_rate_hz
    if duration < frontend.min_duration_s:
        raise AudioError(f"{where}: {duration:.3f} s is shorter than the minimum {frontend.min_duration_s:g} s")
    if require_signal:
        check_signal(mono, where=where)
        check_speech_floor(mono, source_rate_hz, where=where)
        if vad and frontend.vad == "none":  # an input to embed, no VAD to measure its speech
            check_signal_duration(mono, source_rate_hz, frontend.min_duration_s, where=where)
    x = resample(mono, source_rate_hz, frontend.sample_rate_hz, frontend.resampler)
    share = None
    if vad and frontend.vad != "none":
        x, share = keep_speech(
            x, frontend.sample_rate_hz, frontend.vad, frontend.min_duration_s, where, SPEECH_FLOOR_DBFS
        )
    if vad and frontend.long_audio == "window" and len(x) < round(frontend.window_s * frontend.sample_rate_hz):
        raise AudioError(
            f"{where}: {len(x) / frontend.sample_rate_hz:.3f} s{' of speech' if share is not None else ''} is shorter "
            f"than the {frontend.window_s:g} s window (frontend.long_audio: window); nothing to embed"
        )
    truncated = False
    if frontend.max_duration_s is not None and frontend.long_audio == "truncate":
        limit = int(round(frontend.max_duration_s * frontend.sample_rate_hz))
        if len(x) > limit:
            x = x[:limit]
            truncated = True
    return LoadedAudio(
        samples=np.ascontiguousarray(x, dtype=np.float32),
        sample_rate_hz=frontend.sample_rate_hz,
        source_rate_hz=int(source_rate_hz),
        source_channels=int(channels),
        truncated=truncated,
        speech_share=share,
    )


def check_signal(mono: np.ndarray, *, where: str) -> None:
    """Refuse audio without any signal: every sample equal (all zeros, or a constant DC
    value), i.e. a peak-to-peak range under :data:`SILENCE_PEAK_TO_PEAK`. Such a file has
    no speech for an encoder to describe; it is a failed utterance, not a score."""
    if len(mono) == 0:
        raise AudioError(f"{where}: holds no samples")
    span = float(np.max(mono) - np.min(mono))
    if span < SILENCE_PEAK_TO_PEAK:
        level = float(mono[0])
        what = "all samples are zero" if level == 0.0 else f"all samples hold the constant value {level:.6g}"
        raise AudioError(f"{where}: no signal ({what}); nothing to embed")


def loudest_frame_db(x: np.ndarray, sample_rate_hz: int) -> float:
    """Mean square of the loudest whole 20 ms frame of ``x`` (all of ``x`` when shorter), dB re
    full scale (``-inf`` for all zeros)."""
    flen = min(len(x), max(1, int(round(SPEECH_FRAME_S * sample_rate_hz))))
    n = len(x) // flen
    power = float((x[: n * flen].astype(np.float64).reshape(n, flen) ** 2).mean(axis=1).max())
    return float(10 * np.log10(power)) if power > 0 else float("-inf")


def check_speech_floor(mono: np.ndarray, sample_rate_hz: int, *, where: str) -> None:
    """Refuse an input whose loudest 20 ms frame is under :data:`SPEECH_FLOOR_DBFS`: it holds
    no speech, whatever chain follows (decided once, on the input, the same in every cell)."""
    loudest = loudest_frame_db(mono, sample_rate_hz)
    if loudest < SPEECH_FLOOR_DBFS:
        raise AudioError(
            f"{where}: near-silence: its loudest 20 ms frame is {loudest:.1f} dBFS, under the floor "
            f"{SPEECH_FLOOR_DBFS:g} dBFS (16-bit quantisation noise); nothing to embed"
        )


def signal_duration_s(x: np.ndarray, sample_rate_hz: int) -> float:
    """Seconds of ``x`` in 20 ms frames (the last one shorter) whose power about the frame's
    own mean (its variance) reaches :data:`SPEECH_FLOOR_DBFS`: the audio that holds any signal,
    with digital silence and a constant DC offset left out."""
    flen = max(1, int(round(SPEECH_FRAME_S * sample_rate_hz)))
    starts = np.arange(0, len(x), flen)
    sizes = np.diff(np.append(starts, len(x)))
    x64 = x.astype(np.float64)
    mean = np.add.reduceat(x64, starts) / sizes
    power = np.add.reduceat(x64**2, starts) / sizes - mean**2
    return float(sizes[power >= 10 ** (SPEECH_FLOOR_DBFS / 10)].sum()) / sample_rate_hz


def check_signal_duration(
    mono: np.ndarray, sample_rate_hz: int, min_duration_s: float, *, where: str, purpose: str = "nothing to embed"
) -> None:
    """Without a VAD, the minimum duration applies to the audio that holds signal
    (:func:`signal_duration_s`), not to the file's length: a click in two seconds of digital
    silence is refused, not embedded as an utterance. Recorded audio has a noise floor above
    :data:`SPEECH_FLOOR_DBFS` and passes whole."""
    held = signal_duration_s(mono, sample_rate_hz)
    if held < min_duration_s:
        raise AudioError(
            f"{where}: only {held:.3f} s of its {len(mono) / sample_rate_hz:.3f} s holds signal above "
            f"{SPEECH_FLOOR_DBFS:g} dBFS (the rest is digital silence), shorter than the minimum "
            f"{min_duration_s:g} s; {purpose}"
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
    data, sample_rate_hz = decode(path)
    return data.shape[0] / sample_rate_hz, sample_rate_hz, data.shape[1]


def write_flac16(path: Path, x: np.ndarray, sample_rate_hz: int) -> tuple[int, str]:
    """Write ``x`` (floats in [−1, 1]) as 16-bit PCM FLAC, rounding to the nearest step and
    clipping; returns the number of samples and the sha256 of the file written."""
    import soundfile as sf

    q = np.clip(np.round(np.asarray(x) * 32767.0), -32768, 32767).astype(np.int16)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), q, sample_rate_hz, subtype="PCM_16", format="FLAC")
    return len(q), sha256_file(path)
