"""Codec round trips: encode and decode in process, returned aligned at the input's rate.

Pipeline for input ``x`` at rate ``fs``: resample to the codec's rate, encode, decode,
resample back to ``fs``, remove the round trip's delay, cut to ``len(x)``.

* Backends: PyAV (FFmpeg bundled in the ``av`` wheel) for most codecs, libsndfile
  (``soundfile``) for GSM 6.10, and the system ``ffmpeg`` command (through ffmpeg-python)
  for Speex and Codec2, which the ``av`` wheel lacks. A codec whose backend is missing is
  reported unavailable (:class:`OperatorError` naming what is missing), never replaced.
* Alignment: the delay of each (codec, bitrate, input rate) round trip — encoder look-ahead,
  priming samples (Opus pre-skip, AAC's 1024), filter-bank delay — is measured once per
  process on a fixed delay probe (peak of the cross-correlation of output with
  input) and removed; the input is padded with zeros so the cut never runs short.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import threading
from dataclasses import dataclass
from fractions import Fraction
from math import gcd
from typing import Any

import numpy as np

from interbias.audio.frontend import resample
from interbias.operators import OpContext, Operator, register_operator
from interbias.operators.codec_table import APTX_BITS, CODEC2_MODES, CODECS, CodecName, CodecSpec, fixed_bitrate
from interbias.utils.errors import OperatorError, see_docs
from interbias.utils.seeding import derive_rng

#: Longest codec delay searched for when aligning, seconds.
MAX_DELAY_S = 0.25


# --------------------------------------------------------------------------- availability


def _ffmpeg_encoders() -> tuple[str | None, set[str]]:
    exe = shutil.which("ffmpeg")
    if exe is None:
        return None, set()
    try:
        out = subprocess.run(
            [exe, "-hide_banner", "-encoders"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return exe, set()
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and len(parts[0]) == 6 and parts[0][0] == "A":
            names.add(parts[1])
    return exe, names


_backend_lock = threading.Lock()
_backend_problems: dict[str, Any] = {}


def backend_problem(codec: str) -> str | None:
    """Why ``codec`` cannot run on this machine, or None when it can."""
    spec = CODECS[codec]
    with _backend_lock:
        if codec in _backend_problems:
            return _backend_problems[codec]
        problem: str | None = None
        if spec.backend in ("pyav", "pyav-wav"):
            try:
                import av

                av.codec.Codec(spec.encoder, "w")
                av.codec.Codec(spec.decoder, "r")
            except ImportError:
                problem = "PyAV (the 'av' package) is not installed"
            except Exception as exc:
                problem = f"PyAV's FFmpeg has no {spec.encoder!r} encoder or {spec.decoder!r} decoder ({exc})"
        elif spec.backend == "soundfile":
            try:
                import soundfile as sf

                if "GSM610" not in sf.available_subtypes("WAV"):
                    problem = "this libsndfile cannot write GSM 6.10"
            except ImportError:
                problem = "soundfile is not installed"
        else:
            try:
                import ffmpeg  # noqa: F401  (ffmpeg-python)
            except ImportError:
                problem = "the ffmpeg-python package is not installed"
            else:
                if "ffmpeg_cli" not in _backend_problems:
                    _backend_problems["ffmpeg_cli"] = _ffmpeg_encoders()
                exe, encoders = _backend_problems["ffmpeg_cli"]
                if exe is None:
                    problem = f"needs the ffmpeg command with the {spec.encoder} encoder; no ffmpeg on PATH"
                elif spec.encoder not in encoders:
                    problem = f"{exe} has no {spec.encoder} encoder"
        _backend_problems[codec] = problem
        return problem


def availability() -> dict[str, str | None]:
    """Every codec name mapped to None (runs here) or why it cannot run."""
    return {name: backend_problem(name) for name in CODECS}


# --------------------------------------------------------------------------- backends


def _to_pcm(x: np.ndarray, fmt: str) -> np.ndarray:
    if fmt.startswith("s16"):
        return np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)
    if fmt.startswith("s32"):
        return np.clip(np.round(x.astype(np.float64) * 2147483648.0), -2147483648, 2147483647).astype(np.int32)
    return x.astype(np.float32)


def _frame_to_float(frame: Any) -> np.ndarray:
    """A decoded AudioFrame as float64 mono in [-1, 1] (channel mean)."""
    arr = frame.to_ndarray()
    nch = len(frame.layout.channels)
    if not frame.format.is_planar:
        arr = arr.reshape(-1, nch).T
    if np.issubdtype(arr.dtype, np.signedinteger):
        arr = arr.astype(np.float64) / float(np.iinfo(arr.dtype).max + 1)
    return arr.astype(np.float64).mean(axis=0)


def _pyav_roundtrip(spec: CodecSpec, x: np.ndarray, sample_rate_hz: int, bitrate: int) -> tuple[np.ndarray, int, int]:
    """Encode and decode ``x`` (float mono at ``sample_rate_hz``) with bare codec contexts.

    Returns (decoded float64 mono, its rate, encoded bytes)."""
    import av

    layout = "stereo" if spec.stereo else "mono"
    enc = av.CodecContext.create(spec.encoder, "w")
    enc.sample_rate = sample_rate_hz
    enc.layout = layout
    enc.format = spec.sample_fmt
    enc.time_base = Fraction(1, sample_rate_hz)
    if spec.bitrates or spec.bitrate_range:
        enc.bit_rate = bitrate
    if spec.options:
        enc.options = dict(spec.options)
    enc.open()
    fsize = enc.frame_size or 1024
    pcm = _to_pcm(x, spec.sample_fmt)
    if enc.frame_size and len(pcm) % fsize:
        pcm = np.concatenate([pcm, np.zeros(fsize - len(pcm) % fsize, pcm.dtype)])
    nch = 2 if spec.stereo else 1
    planar = av.AudioFormat(spec.sample_fmt).is_planar
    packets = []
    for start in range(0, len(pcm), fsize):
        chunk = pcm[start : start + fsize]
        arr = np.stack([chunk] * nch) if planar else np.repeat(chunk, nch)[None, :]
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(arr), format=spec.sample_fmt, layout=layout)
        frame.sample_rate = sample_rate_hz
        frame.pts = start
        packets.extend(enc.encode(frame))
    packets.extend(enc.encode(None))
    n_bytes = sum(p.size for p in packets)
    dec = av.CodecContext.create(spec.decoder, "r")
    dec.sample_rate = sample_rate_hz
    dec.layout = layout
    if enc.extradata:
        dec.extradata = enc.extradata
    out, out_rate = [], sample_rate_hz
    for packet in [*packets, None]:
        for frame in dec.decode(packet):
            out.append(_frame_to_float(frame))
            out_rate = frame.sample_rate
    if not out:
        raise OperatorError(f"codec {spec.encoder}: the decoder returned no audio")
    return np.concatenate(out), int(out_rate), n_bytes


def _pyav_wav_roundtrip(
    spec: CodecSpec, x: np.ndarray, sample_rate_hz: int, bitrate: int
) -> tuple[np.ndarray, int, int]:
    """Encode into an in-memory WAV (which carries the code size) and decode it back."""
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="wav") as container:
        stream = container.add_stream(spec.encoder, rate=sample_rate_hz, layout="mono")
        stream.bit_rate = bitrate
        pcm = _to_pcm(x, spec.sample_fmt)
        frame = av.AudioFrame.from_ndarray(pcm[None, :], format=spec.sample_fmt, layout="mono")
        frame.sample_rate = sample_rate_hz
        frame.pts = 0
        n_bytes = 0
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            n_bytes += packet.size
            container.mux(packet)
    data = buf.getvalue()
    out, out_rate = [], sample_rate_hz
    with av.open(io.BytesIO(data), "r", format="wav") as container:
        audio_stream = container.streams.audio[0]
        for frame in container.decode(audio_stream):
            out.append(_frame_to_float(frame))
            out_rate = frame.sample_rate
    if not out:
        raise OperatorError(f"codec {spec.encoder}: the decoder returned no audio")
    return np.concatenate(out), int(out_rate), n_bytes


def _gsm_roundtrip(spec: CodecSpec, x: np.ndarray, sample_rate_hz: int, bitrate: int) -> tuple[np.ndarray, int, int]:
    """GSM 06.10 in a WAV container through libsndfile (written and read in memory)."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(x, -1.0, 1.0), sample_rate_hz, format="WAV", subtype="GSM610")
    n_bytes = buf.tell()
    buf.seek(0)
    y, out_rate = sf.read(buf, dtype="float64")
    return np.asarray(y, dtype=np.float64).reshape(-1), int(out_rate), n_bytes


def _ffmpeg_roundtrip(spec: CodecSpec, x: np.ndarray, sample_rate_hz: int, bitrate: int) -> tuple[np.ndarray, int, int]:
    """Two ffmpeg processes: raw float PCM -> encoded stream (pipe) -> raw float PCM."""
    import ffmpeg

    if spec.encoder == "libcodec2":
        fmt, enc_args = "codec2", {"acodec": "libcodec2", "mode": CODEC2_MODES[bitrate]}
    else:
        fmt, enc_args = "ogg", {"acodec": spec.encoder, "audio_bitrate": bitrate}
    try:
        encoded, _ = (
            ffmpeg.input("pipe:", format="f32le", ar=sample_rate_hz, ac=1)
            .output("pipe:", format=fmt, ar=sample_rate_hz, ac=1, **enc_args)
            .global_args("-hide_banner", "-nostdin", "-loglevel", "error")
            .run(input=np.asarray(x, np.float32).tobytes(), capture_stdout=True, capture_stderr=True)
        )
        raw, _ = (
            ffmpeg.input("pipe:", format=fmt)
            .output("pipe:", format="f32le", ac=1, ar=sample_rate_hz)
            .global_args("-hide_banner", "-nostdin", "-loglevel", "error")
            .run(input=encoded, capture_stdout=True, capture_stderr=True)
        )
    except ffmpeg.Error as exc:
        err = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        raise OperatorError(f"codec {spec.encoder}: ffmpeg failed ({err[-1] if err else exc})") from exc
    except OSError as exc:
        raise OperatorError(f"codec {spec.encoder}: cannot run ffmpeg ({exc})") from exc
    return np.frombuffer(raw, dtype=np.float32).astype(np.float64), sample_rate_hz, len(encoded)


_BACKENDS = {
    "pyav": _pyav_roundtrip,
    "pyav-wav": _pyav_wav_roundtrip,
    "soundfile": _gsm_roundtrip,
    "ffmpeg": _ffmpeg_roundtrip,
}


def encode_decode(codec: str, x: np.ndarray, codec_rate_hz: int, bitrate: int) -> tuple[np.ndarray, int, int]:
    """One round trip of ``x`` (float mono at ``codec_rate_hz``) through ``codec``.

    Returns (decoded float64 mono, the decoder's output rate, encoded bytes); no resampling
    and no alignment, so the output keeps the codec's delay and padding."""
    spec = CODECS[codec]
    problem = backend_problem(codec)
    if problem is not None:
        raise OperatorError(f"codec {codec!r} is unavailable: {problem}")
    try:
        y, out_rate, n_bytes = _BACKENDS[spec.backend](spec, np.asarray(x, np.float64), codec_rate_hz, bitrate)
    except OperatorError:
        raise
    except Exception as exc:  # PyAV / libsndfile raise their own error types
        text = str(exc).strip().splitlines()
        raise OperatorError(f"codec {codec!r} failed: {text[0] if text else type(exc).__name__}") from exc
    if len(y) == 0:
        raise OperatorError(f"codec {codec!r}: the decoder returned no audio")
    if not np.isfinite(y).all():
        raise OperatorError(f"codec {codec!r}: the decoder returned non-finite samples")
    return y, out_rate, n_bytes


# --------------------------------------------------------------------------- alignment


def delay_probe(rate_hz: int, duration_s: float = 2.0) -> np.ndarray:
    """A fixed speech-like signal without periodicity: an aperiodic pulse train (intervals
    2.5–12 ms) through three formant resonators, in syllable-like bursts, over a faint noise
    floor. Being aperiodic, its cross-correlation has one peak, not one per pitch period."""
    from scipy.signal import lfilter

    rng = derive_rng("codec-calibration", rate_hz)  # seed name kept: the probe, hence each delay, stays the same
    n = int(duration_s * rate_hz)
    pulses = np.zeros(n)
    t = int(rng.integers(0, rate_hz // 100))
    while t < n:
        pulses[t] = 1.0 + 0.3 * rng.standard_normal()
        t += int(rng.uniform(0.0025, 0.012) * rate_hz)
    y = np.zeros(n)
    for freq, bw in ((500.0, 80.0), (1500.0, 120.0), (2500.0, 160.0)):
        if freq >= rate_hz / 2:
            continue
        r = np.exp(-np.pi * bw / rate_hz)
        a = [1.0, -2 * r * np.cos(2 * np.pi * freq / rate_hz), r * r]
        y += lfilter([1.0 - r], a, pulses)
    env = (np.sin(2 * np.pi * 3.1 * np.arange(n) / rate_hz + 0.4) > -0.3).astype(float)
    y = y * env + 0.003 * rng.standard_normal(n) * np.abs(y).max()
    return (0.5 * y / np.abs(y).max()).astype(np.float32)


def envelope(x: np.ndarray, rate_hz: int, window_s: float = 0.002) -> np.ndarray:
    """Root-mean-square envelope over a sliding ``window_s`` window (boxcar)."""
    w = max(1, int(round(window_s * rate_hz)))
    return np.sqrt(np.convolve(np.asarray(x, np.float64) ** 2, np.ones(w) / w, mode="same"))


def best_lag(reference: np.ndarray, signal: np.ndarray, max_lag: int) -> int:
    """The lag L in [-max_lag, max_lag] maximising sum_t reference[t]·signal[t + L] (FFT)."""
    from scipy.signal import correlate

    ref = np.asarray(reference, dtype=np.float64)
    sig = np.asarray(signal, dtype=np.float64)
    c = correlate(sig, ref, mode="full", method="fft")
    lags = np.arange(-len(ref) + 1, len(sig))
    keep = np.abs(lags) <= max_lag
    return int(lags[keep][np.argmax(c[keep])])


def voiced_delay_probe(rate_hz: int, duration_s: float, seed: int) -> np.ndarray:
    """A harmonic delay probe for vocoders (which do not keep the waveform): a drifting F0 in bursts of 80–300 ms."""
    rng = derive_rng("vocoder-calibration", rate_hz, seed)  # seed name kept (see delay_probe)
    n = int(duration_s * rate_hz)
    t = np.arange(n) / rate_hz
    f0 = rng.uniform(90, 220) * (1 + 0.2 * np.sin(2 * np.pi * rng.uniform(0.3, 1.0) * t))
    phase = 2 * np.pi * np.cumsum(f0) / rate_hz
    v = sum(np.sin(k * phase) / k for k in range(1, 40) if k * f0.max() < 0.45 * rate_hz)
    env = np.zeros(n)
    pos = int(rng.uniform(0.05, 0.2) * rate_hz)
    while pos < n:
        on = int(rng.uniform(0.08, 0.3) * rate_hz)
        env[pos : pos + on] = rng.uniform(0.3, 1.0)
        pos += on + int(rng.uniform(0.05, 0.2) * rate_hz)
    return (0.4 * v * env / np.abs(v).max()).astype(np.float32)


#: Envelope window for aligning vocoders, seconds, and how many delay probes to use.
VOCODER_WINDOW_S = 0.01
VOCODER_PROBES = 8

_delay_lock = threading.Lock()
_delays: dict[tuple[str, int, int], tuple[int, int]] = {}


def codec_delay(codec: str, bitrate: int, codec_rate_hz: int) -> tuple[int, int]:
    """(delay, decoder rate): how many samples, at the decoder's output rate, the round trip
    delays its input (negative: early). Measured once per process: the peak of the
    cross-correlation of output with input for :func:`delay_probe`; for vocoders, which
    do not keep the waveform, the median over :func:`voiced_delay_probe` draws of the peak of the
    cross-correlation of 10 ms RMS envelopes (good to about ±2 ms)."""
    key = (codec, bitrate, codec_rate_hz)
    with _delay_lock:
        if key in _delays:
            return _delays[key]
    tail = np.zeros(int(2 * MAX_DELAY_S * codec_rate_hz), np.float32)
    if CODECS[codec].vocoder:
        lags, out_rate = [], codec_rate_hz
        for seed in range(VOCODER_PROBES):
            x = voiced_delay_probe(codec_rate_hz, 3.0, seed)
            y, out_rate, _ = encode_decode(codec, np.concatenate([x, tail]), codec_rate_hz, bitrate)
            ref = resample(x, codec_rate_hz, out_rate)
            env_ref, env_y = envelope(ref, out_rate, VOCODER_WINDOW_S), envelope(y, out_rate, VOCODER_WINDOW_S)
            lags.append(best_lag(env_ref, env_y, int(MAX_DELAY_S * out_rate)))
        lag = int(np.round(np.median(lags)))
    else:
        x = delay_probe(codec_rate_hz)
        y, out_rate, _ = encode_decode(codec, np.concatenate([x, tail]), codec_rate_hz, bitrate)
        lag = best_lag(resample(x, codec_rate_hz, out_rate), y, int(MAX_DELAY_S * out_rate))
    with _delay_lock:
        _delays[key] = (lag, out_rate)
    return lag, out_rate


def codec_rate(codec: str, input_rate_hz: int, requested: int | None = None) -> int:
    """The rate ``codec`` runs at for an input at ``input_rate_hz``."""
    spec = CODECS[codec]
    if requested is not None:
        return requested
    return input_rate_hz if input_rate_hz in spec.rates_hz else spec.rate_hz


def roundtrip(
    codec: str, x: np.ndarray, rate_hz: int, bitrate: int, codec_rate_hz: int | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Resample ``x`` to the codec's rate, encode, decode, remove the delay at the decoder's
    rate, resample to ``rate_hz`` and cut to ``len(x)``. Returns (output, record)."""
    crate = codec_rate(codec, rate_hz, codec_rate_hz)
    delay, out_rate = codec_delay(codec, bitrate, crate)
    xc = resample(x, rate_hz, crate)
    clipped = int(np.count_nonzero(np.abs(xc) > 1.0))  # integer-PCM codecs clip at full scale
    # An early codec (negative delay) gets zeros in front: a whole number of samples at both rates.
    step = crate // gcd(crate, out_rate)
    head = -(-max(0, -delay) * crate // out_rate)
    head = -(-head // step) * step
    start = delay + head * out_rate // crate
    # Zeros behind cover the delay plus a margin for the resampler's filter (20 ms).
    tail = int(np.ceil(max(0, delay) * crate / out_rate)) + int(0.02 * crate)
    padded = np.concatenate([np.zeros(head, np.float32), xc, np.zeros(tail, np.float32)])
    y, out_rate2, n_bytes = encode_decode(codec, padded, crate, bitrate)
    if out_rate2 != out_rate:
        raise OperatorError(f"codec {codec!r}: decoder rate changed from {out_rate} to {out_rate2} Hz")
    z = resample(y[start:], out_rate, rate_hz)
    n = len(x)
    if len(z) < n:
        raise OperatorError(f"codec {codec!r}: decoded too few samples to align ({len(z)} < {n})")
    record = {
        "codec_rate_hz": crate,
        "decoded_rate_hz": out_rate,
        "delay_samples": delay,
        "encoded_bytes": int(n_bytes),
        "bitrate_realised_bps": float(n_bytes * 8 * crate / len(padded)),
        "samples_over_full_scale": clipped,
    }
    return z[:n].astype(np.float32), record


# --------------------------------------------------------------------------- operator


@register_operator
@dataclass(frozen=True)
class Codec(Operator):
    """Encode and decode with ``codec`` at ``bitrate`` bits/s (default: the codec's usual rate).

    ``codec_rate_hz`` runs the codec at another rate it supports (default: the input's rate
    when the codec supports it, else its usual rate). Output: the input's rate and length,
    the codec's delay removed (see the module docstring)."""

    codec: CodecName
    bitrate: int | None = None
    codec_rate_hz: int | None = None
    name = "codec"
    recorded = ("codec", "codec_delay_samples")

    def __post_init__(self) -> None:
        spec = CODECS.get(self.codec)
        if self.bitrate is None and spec is not None and self.codec not in APTX_BITS:
            object.__setattr__(self, "bitrate", spec.default_bitrate)

    def validate(self) -> None:
        spec = CODECS[self.codec]
        if self.codec in APTX_BITS:
            if self.bitrate is not None:
                raise OperatorError(
                    f"codec.bitrate: {self.codec} has no rate control (it codes {APTX_BITS[self.codec]} bits "
                    "per sample per channel); leave bitrate out"
                )
        elif spec.bitrate_range:
            lo, hi = spec.bitrate_range
            if not lo <= self.bitrate <= hi:  # type: ignore[operator]
                raise OperatorError(
                    f"codec.bitrate: {self.bitrate} bit/s is outside {spec.allowed_bitrates()} for {self.codec}"
                )
        elif self.bitrate not in spec.bitrates:
            raise OperatorError(
                f"codec.bitrate: {self.bitrate} bit/s is not available for {self.codec} "
                f"(allowed: {spec.allowed_bitrates()})"
            )
        if self.codec_rate_hz is not None:
            allowed = spec.rates_hz or (spec.rate_hz,)
            if self.codec_rate_hz not in allowed:
                raise OperatorError(
                    f"codec.codec_rate_hz: {self.codec} does not run at {self.codec_rate_hz} Hz "
                    f"(allowed: {', '.join(map(str, allowed))})"
                )

    def check_resources(self) -> None:
        problem = backend_problem(self.codec)
        if problem is not None:
            raise OperatorError(
                f"codec {self.codec!r} is unavailable on this machine: {problem}; {see_docs('operators')}"
            )

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"codec": record.get("codec"), "codec_delay_samples": record.get("delay_samples")}

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        crate = codec_rate(self.codec, ctx.sample_rate_hz, self.codec_rate_hz)
        bitrate = self.bitrate if self.bitrate is not None else fixed_bitrate(self.codec, crate)
        y, record = roundtrip(self.codec, x, ctx.sample_rate_hz, bitrate, crate)  # type: ignore[arg-type]
        return y, {"codec": self.codec, "bitrate": bitrate, **record}
