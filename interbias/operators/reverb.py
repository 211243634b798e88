"""Reverberation: convolution with a room impulse response (IR), time-aligned to the input.

* ``rt60_s``: a bank of ``bank_size`` shoebox rooms simulated with pyroomacoustics (image
  source method; wall absorption and reflection order from Sabine's formula through
  ``inverse_sabine``). Room sizes and source/microphone positions come from generators
  derived from (RT60, rate, room index), so the bank is the same everywhere; it is computed
  once and cached under ``OpContext.cache_dir``. Because the image method overshoots long
  RT60s, each room is re-simulated (up to 4 times) with the requested RT60 scaled by
  target/measured until its measured RT60 (Schroeder T30) is within 10 % of the target.
* ``ir_dir``: impulse responses from a folder the user provides (first channel of each file).

The output is shifted so the IR's direct path lands at lag 0 — reverberation adds a tail,
not a delay — and scaled to the input's RMS level (the gain is recorded), so reverberation
changes the sound, not the level. The direct path of a simulated room comes from its
geometry; of a user's IR, from its onset (:func:`direct_path_onset`).
"""

from __future__ import annotations

import importlib.util
import io
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from interbias.audio import frontend as audio
from interbias.audio.rooms import (  # the room simulation lives in interbias.audio (shared with the corpus)
    BANK_VERSION,
    direct_path_onset,
    simulate_room,
)
from interbias.operators import OpContext, Operator, register_operator
from interbias.operators.noise import AUDIO_SUFFIXES, file_listing
from interbias.utils import atomic
from interbias.utils.errors import AudioError, OperatorError, see_docs

DEFAULT_BANK_SIZE = 8
RT60_RANGE_S = (0.1, 1.5)
_bank_lock = threading.Lock()
_banks: dict[tuple[float, int, int], tuple[list[np.ndarray], list[dict[str, Any]]]] = {}


def bank_path(cache_dir: Path, rt60_s: float, rate_hz: int, size: int) -> Path:
    return Path(cache_dir) / "rir" / f"shoebox-v{BANK_VERSION}-rt{rt60_s:g}-fs{rate_hz}-n{size}.npz"


def room_bank(
    rt60_s: float, rate_hz: int, size: int, cache_dir: Path | None
) -> tuple[list[np.ndarray], list[dict[str, Any]]]:
    """The bank's impulse responses and room records: from memory, the cache, or simulated."""
    key = (rt60_s, rate_hz, size)
    with _bank_lock:
        if key in _banks:
            return _banks[key]
        path = bank_path(cache_dir, rt60_s, rate_hz, size) if cache_dir is not None else None
        bank = _read_bank(path) if path is not None and path.is_file() else None
        if bank is None:
            irs, rooms = [], []
            for i in range(size):
                h, info = simulate_room(rt60_s, rate_hz, i)
                irs.append(h)
                rooms.append(info.__dict__)
            bank = (irs, rooms)
            if path is not None:
                buf = io.BytesIO()
                arrays = {f"ir_{i}": h for i, h in enumerate(irs)}
                np.savez(buf, rooms=np.array(json.dumps(rooms)), **arrays)  # type: ignore[arg-type]
                atomic.write_bytes(path, buf.getvalue())
        _banks[key] = bank
        return bank


def _read_bank(path: Path) -> tuple[list[np.ndarray], list[dict[str, Any]]] | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            rooms = json.loads(str(data["rooms"]))
            irs = [np.asarray(data[f"ir_{i}"], np.float64) for i in range(len(rooms))]
    except (OSError, ValueError, KeyError):
        return None  # a torn or foreign file: simulate again and overwrite it
    return irs, rooms


@register_operator
@dataclass(frozen=True)
class Reverb(Operator):
    """Convolve with a room impulse response: simulated for ``rt60_s`` seconds (a bank of
    ``bank_size`` rooms, default 8), or drawn from the files in ``ir_dir``."""

    rt60_s: float | None = None
    ir_dir: str | None = None
    bank_size: int | None = None
    name = "reverb"
    recorded = ("rir_id",)
    stochastic = True

    def __post_init__(self) -> None:
        if self.rt60_s is not None and self.bank_size is None:
            object.__setattr__(self, "bank_size", DEFAULT_BANK_SIZE)

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if importlib.util.find_spec("pyroomacoustics") is None:
            return False, "pyroomacoustics is not installed: only ir_dir works"
        return True, ""

    def validate(self) -> None:
        if (self.rt60_s is None) == (self.ir_dir is None):
            raise OperatorError(
                "reverb: give exactly one of rt60_s (simulated rooms) or ir_dir (your impulse responses)"
            )
        if self.rt60_s is not None:
            lo, hi = RT60_RANGE_S
            if not lo <= self.rt60_s <= hi:
                raise OperatorError(f"reverb.rt60_s: {self.rt60_s} s is outside [{lo}, {hi}]")
            if not 1 <= self.bank_size <= 64:  # type: ignore[operator]
                raise OperatorError(f"reverb.bank_size: {self.bank_size} is outside [1, 64]")
        elif self.bank_size is not None:
            raise OperatorError("reverb.bank_size: applies only to simulated rooms (rt60_s)")

    def check_resources(self) -> None:
        if self.rt60_s is not None:
            ok, why = self.available()
            if not ok:
                raise OperatorError(f"reverb: rt60_s is unavailable on this machine: {why}; {see_docs('operators')}")
        else:
            self.ir_files()

    @property
    def reads_files(self) -> bool:  # type: ignore[override]
        return self.ir_dir is not None

    def recorded_input(self) -> tuple[str, str] | None:
        return None if self.rt60_s is not None else ("ir_dir", "recorded room impulse responses")

    def inputs(self, corpus: Any) -> Any:
        """The room bank's version (simulated rooms) or the impulse-response folder's files."""
        if self.rt60_s is not None:
            return {"bank": BANK_VERSION}
        try:
            folder, files = self.ir_files()
        except OperatorError as exc:  # the operator fails on use; the key says why
            return {"unavailable": str(exc)}
        return {"files": file_listing(folder, files)}

    def ir_files(self) -> tuple[Path, list[Path]]:
        folder = Path(self.ir_dir).expanduser()  # type: ignore[arg-type]
        if not folder.is_dir():
            raise OperatorError(f"reverb: ir_dir {folder} does not exist or is not a folder; {see_docs('operators')}")
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES)
        if not files:
            raise OperatorError(
                f"reverb: ir_dir {folder} holds no audio files ({', '.join(AUDIO_SUFFIXES)}); {see_docs('operators')}"
            )
        return folder, files

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"rir_id": record.get("ir")}

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        sample_rate_hz = ctx.sample_rate_hz
        if self.rt60_s is not None:
            irs, rooms = room_bank(self.rt60_s, sample_rate_hz, self.bank_size, ctx.cache_dir)  # type: ignore[arg-type]
            index = int(ctx.rng.integers(len(irs)))
            h, peak = irs[index], int(rooms[index]["direct_path_sample"])
            source: dict[str, Any] = {"ir": f"shoebox-v{BANK_VERSION}/{index}", "room": rooms[index]}
        else:
            folder, files = self.ir_files()
            path = files[int(ctx.rng.integers(len(files)))]
            try:
                data, file_rate = audio.decode(path)
            except AudioError as exc:
                raise OperatorError(f"reverb: cannot use impulse response {path}: {exc}") from exc
            if data.shape[0] == 0 or not np.isfinite(data).all():
                raise OperatorError(f"reverb: impulse response {path} is empty or holds non-finite samples")
            h = audio.resample(data[:, 0], file_rate, sample_rate_hz).astype(np.float64)
            peak = direct_path_onset(h, sample_rate_hz)
            source = {"ir": str(path.relative_to(folder)), "ir_rate_hz": file_rate, "channels": int(data.shape[1])}
        from scipy.signal import fftconvolve

        x64 = np.asarray(x, np.float64)
        y = fftconvolve(x64, h)[peak : peak + len(x)]
        rms_in, rms_out = np.sqrt(np.mean(x64**2)), np.sqrt(np.mean(y**2))
        if rms_out == 0:
            raise OperatorError("reverb: the reverberant signal is silent (is the input silent?)")
        gain = rms_in / rms_out
        return (y * gain).astype(np.float32), {
            **source,
            "direct_path_sample": peak,
            "ir_samples": len(h),
            "level_gain": float(gain),
        }
