"""Voice activity detection in the front end (``frontend: {vad: none|energy|webrtc|silero}``).

Applied to each input after the front end's resampling and before any operator chain, so every
cell embeds the same speech; what it keeps is the speech frames, joined in order, and the
kept-speech share (kept samples / samples) goes into the front end's record. An input in which
it finds no speech, or less than the front end's ``min_duration_s``, is refused (one reason,
the same in every cell, the clean cell included).

- ``energy``: 20 ms frames (the last, shorter one judged alone) whose power about the frame's
  mean (its variance: a DC offset carries no speech) is at least
  :data:`ENERGY_RANGE_DB` below the loudest frame's and above
  the front end's speech floor (:data:`interbias.audio.frontend.SPEECH_FLOOR_DBFS`); dependency-free.
- ``webrtc``: the WebRTC VAD (``webrtcvad-wheels``), aggressiveness :data:`WEBRTC_MODE`, 30 ms
  frames of 16-bit PCM; a last partial frame is dropped. Rates 8, 16, 32, 48 kHz.
- ``silero``: silero-vad's bundled model (``silero-vad``, its ONNX/TorchScript model ships in
  the wheel), :func:`get_speech_timestamps` with its defaults. Rates 8 and 16 kHz.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from interbias.utils.errors import AudioError, ConfigError

VADS = ("none", "energy", "webrtc", "silero")
#: Rates each VAD accepts (Hz); ``None``: any.
VAD_RATES: dict[str, tuple[int, ...] | None] = {
    "none": None,
    "energy": None,
    "webrtc": (8000, 16000, 32000, 48000),
    "silero": (8000, 16000),
}
#: An energy-VAD frame is speech when within this many dB of the loudest frame.
ENERGY_RANGE_DB = 40.0
ENERGY_FRAME_S = 0.02
WEBRTC_MODE = 3
WEBRTC_FRAME_S = 0.03


def check_vad(vad: str, sample_rate_hz: int, where: str) -> None:
    """A :class:`ConfigError` for an unknown VAD or one that does not take ``sample_rate_hz``."""
    if vad not in VADS:
        raise ConfigError(f"{where}: frontend.vad: {vad!r} is not one of {', '.join(VADS)}")
    rates = VAD_RATES[vad]
    if rates is not None and sample_rate_hz not in rates:
        raise ConfigError(
            f"{where}: frontend.vad: {vad} does not support {sample_rate_hz} Hz "
            f"(frontend.sample_rate_hz; it takes {', '.join(str(r) for r in rates)} Hz)"
        )


def speech_mask(x: np.ndarray, sample_rate_hz: int, vad: str, floor_db: float) -> np.ndarray:
    """Per sample of ``x``: whether ``vad`` calls it speech (``floor_db``: the energy VAD's floor)."""
    if vad == "energy":
        return energy_mask(x, sample_rate_hz, floor_db)
    fn: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {"webrtc": webrtc_mask, "silero": silero_mask}
    return fn[vad](x, sample_rate_hz)


def energy_mask(x: np.ndarray, sample_rate_hz: int, floor_db: float) -> np.ndarray:
    flen = max(1, int(round(ENERGY_FRAME_S * sample_rate_hz)))
    starts = np.arange(0, len(x), flen)
    x64 = x.astype(np.float64)
    # frame power about the frame's mean: a DC offset is not speech energy
    power = np.array([float(x64[s : s + flen].var()) for s in starts])
    with np.errstate(divide="ignore"):
        db = 10 * np.log10(power)
    threshold = max(float(db.max()) - ENERGY_RANGE_DB, floor_db)
    return np.repeat(db >= threshold, flen)[: len(x)]


def webrtc_mask(x: np.ndarray, sample_rate_hz: int) -> np.ndarray:
    import webrtcvad

    vad = webrtcvad.Vad(WEBRTC_MODE)
    flen = int(round(WEBRTC_FRAME_S * sample_rate_hz))
    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype("<i2")
    mask = np.zeros(len(x), dtype=bool)
    for s in range(0, len(x) - flen + 1, flen):
        mask[s : s + flen] = vad.is_speech(pcm[s : s + flen].tobytes(), sample_rate_hz)
    return mask


def silero_mask(x: np.ndarray, sample_rate_hz: int) -> np.ndarray:
    import torch

    n = torch.get_num_threads()
    try:
        import silero_vad
    except ImportError:
        raise AudioError("frontend.vad: silero needs the silero-vad package (pip install silero-vad)") from None
    finally:
        torch.set_num_threads(n)  # importing silero-vad sets torch to one thread

    model = _silero_model(silero_vad)
    stamps = silero_vad.get_speech_timestamps(
        torch.from_numpy(np.ascontiguousarray(x)), model, sampling_rate=sample_rate_hz
    )
    mask = np.zeros(len(x), dtype=bool)
    for s in stamps:
        mask[int(s["start"]) : int(s["end"])] = True
    return mask


_SILERO: list[object] = []


def _silero_model(module: object) -> object:
    if not _SILERO:
        _SILERO.append(module.load_silero_vad())  # type: ignore[attr-defined]
    return _SILERO[0]


def keep_speech(
    x: np.ndarray, sample_rate_hz: int, vad: str, min_duration_s: float, where: str, floor_db: float
) -> tuple[np.ndarray, float]:
    """``x``'s speech (its speech samples in order) and the kept share; an :class:`AudioError`
    when ``vad`` finds none, or less than ``min_duration_s``."""
    mask = speech_mask(x, sample_rate_hz, vad, floor_db)
    kept = x[mask]
    if not len(kept):
        raise AudioError(f"{where}: the {vad} VAD found no speech; nothing to embed")
    if len(kept) / sample_rate_hz < min_duration_s:
        raise AudioError(
            f"{where}: the {vad} VAD kept {len(kept) / sample_rate_hz:.3f} s of speech, shorter than the minimum "
            f"{min_duration_s:g} s"
        )
    return np.ascontiguousarray(kept, dtype=np.float32), len(kept) / len(x)
