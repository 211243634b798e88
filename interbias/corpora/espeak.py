"""Offline speech synthesis through the libespeak-ng shipped in the ``espeakng-loader`` wheel.

Driven through ctypes in synchronous mode; one process-wide engine guarded by a lock
(libespeak-ng keeps global state). Output is 16-bit mono PCM at the engine's rate
(22 050 Hz for the shipped data).
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

import numpy as np

from interbias.utils.errors import CorpusError

_AUDIO_OUTPUT_SYNCHRONOUS = 0x02
_ESPEAK_CHARS_UTF8 = 1
_POS_CHARACTER = 1
# espeak_PARAMETER enum
RATE, VOLUME, PITCH, RANGE = 1, 2, 3, 4

_SYNTH_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


class Espeak:
    """A libespeak-ng engine reading voices from ``data_dir`` (a writable copy of the data)."""

    _lock = threading.Lock()

    def __init__(self, data_dir: Path) -> None:
        try:
            import espeakng_loader
        except ImportError as exc:  # pragma: no cover - dependency is pinned
            raise CorpusError("espeakng-loader is not installed; it ships libespeak-ng") from exc
        self._lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self._lib.espeak_Initialize.restype = ctypes.c_int
        self._lib.espeak_Initialize.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
        ]
        self._lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self._lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self._lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
        self._lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_uint),
            ctypes.c_void_p,
        ]
        self._chunks: list[np.ndarray] = []

        def _collect(wav, n, _events):
            if n > 0 and wav:
                self._chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
            return 0

        self._callback = _SYNTH_CALLBACK(_collect)
        sample_rate_hz = self._lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, str(data_dir.parent).encode(), 0)
        if sample_rate_hz <= 0:
            raise CorpusError(f"espeak-ng failed to initialise with data at {data_dir}")
        self.sample_rate_hz = int(sample_rate_hz)
        self._lib.espeak_SetSynthCallback(self._callback)

    def set_random_seed(self, seed: int) -> None:
        """Seed libespeak-ng's own random draws (e.g. the breath noise) for the next calls."""
        self._lib.espeak_ng_SetRandSeed(int(seed))

    def synth(
        self, text: str, voice: str, *, words_per_min: int, pitch: int, pitch_range: int, volume: int = 100
    ) -> np.ndarray:
        """Synthesise ``text`` with ``voice`` (an espeak voice name); int16 samples.

        ``words_per_min`` is the speaking rate in words per minute; ``pitch`` and ``pitch_range`` are 0–100 within the
        voice's own pitch settings; ``volume`` is 0–200 (100 = normal)."""
        with self._lock:
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise CorpusError(f"espeak-ng does not know the voice {voice!r}")
            for param, value in ((RATE, words_per_min), (PITCH, pitch), (RANGE, pitch_range), (VOLUME, volume)):
                self._lib.espeak_SetParameter(param, int(value), 0)
            self._chunks = []
            buf = ctypes.create_string_buffer(text.encode("utf-8"))
            err = self._lib.espeak_Synth(buf, len(buf), 0, _POS_CHARACTER, 0, _ESPEAK_CHARS_UTF8, None, None)
            if err != 0:
                raise CorpusError(f"espeak-ng synthesis failed (code {err}) for voice {voice!r}")
            self._lib.espeak_Synchronize()
            if not self._chunks:
                raise CorpusError(f"espeak-ng produced no audio for voice {voice!r}")
            return np.concatenate(self._chunks)
