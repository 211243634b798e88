"""Band limits and tone: low-, high- and band-pass filters, channel presets, shelf EQ.

Who computes what:

* ``lowpass``, ``highpass``, ``bandpass``, ``narrowband``, ``wideband``: a Butterworth filter
  of ``order`` designed by ``scipy.signal.butter`` as second-order sections and applied
  forward and backward by ``scipy.signal.sosfiltfilt`` (zero phase: no delay, magnitude
  response squared, so the cutoff sits at −6 dB and the roll-off is 2 × 6·order dB/octave).
  ``narrowband`` is the telephone band 300–3400 Hz, ``wideband`` 50–7000 Hz (ITU-T G.722).
* ``shelf``: pedalboard's (Spotify, C++) ``LowShelfFilter`` at ``bass_hz`` with ``bass_db``
  and ``HighShelfFilter`` at ``treble_hz`` with ``treble_db`` (Q 0.707), the bass and treble
  controls of sox (defaults 100 Hz and 3 kHz).

A cutoff at or above the input's Nyquist frequency is an error at apply time (the rate is
known then), never silently moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from interbias.operators import OpContext, Operator, check_ranges, register_operator
from interbias.utils.errors import OperatorError

#: Band edges of the presets, Hz.
PRESETS = {"narrowband": (300.0, 3400.0), "wideband": (50.0, 7000.0)}
SHELF_Q = 0.707

FilterKind = Literal["lowpass", "highpass", "bandpass", "narrowband", "wideband", "shelf"]

#: The parameters each kind takes (the others must be left unset).
_TAKES = {
    "lowpass": {"cutoff_hz", "order"},
    "highpass": {"cutoff_hz", "order"},
    "bandpass": {"low_hz", "high_hz", "order"},
    "narrowband": {"order"},
    "wideband": {"order"},
    "shelf": {"bass_db", "treble_db", "bass_hz", "treble_hz"},
}
_OPTIONAL = ("cutoff_hz", "low_hz", "high_hz", "bass_db", "treble_db", "bass_hz", "treble_hz")


def butterworth(x: np.ndarray, kind: str, edges: tuple[float, ...], order: int, rate_hz: int) -> np.ndarray:
    """Zero-phase Butterworth filtering (scipy.signal.butter + sosfiltfilt), float64 out."""
    from scipy.signal import butter, sosfiltfilt

    nyquist = rate_hz / 2
    for f in edges:
        if f >= nyquist:
            raise OperatorError(f"filter: {f:g} Hz is at or above the Nyquist frequency ({nyquist:g} Hz) of the input")
    btype = {"lowpass": "lowpass", "highpass": "highpass"}.get(kind, "bandpass")
    sos = butter(order, edges if len(edges) > 1 else edges[0], btype=btype, fs=rate_hz, output="sos")
    x64 = np.asarray(x, np.float64)
    padlen = min(len(x64) - 1, 3 * (2 * len(sos) + 1))
    return sosfiltfilt(sos, x64, padlen=max(0, padlen))


def shelves(x: np.ndarray, bass: tuple[float, float], treble: tuple[float, float], rate_hz: int) -> np.ndarray:
    """Low shelf (hz, dB) then high shelf (hz, dB), by pedalboard."""
    import pedalboard

    board = pedalboard.Pedalboard(
        [
            pedalboard.LowShelfFilter(cutoff_frequency_hz=bass[0], gain_db=bass[1], q=SHELF_Q),
            pedalboard.HighShelfFilter(cutoff_frequency_hz=treble[0], gain_db=treble[1], q=SHELF_Q),
        ]
    )
    return board(np.asarray(x, np.float32), float(rate_hz)).astype(np.float64)


@register_operator
@dataclass(frozen=True)
class Filter(Operator):
    """Butterworth ``lowpass``/``highpass`` at ``cutoff_hz``, ``bandpass`` ``low_hz``–``high_hz``,
    presets ``narrowband`` (300–3400 Hz) and ``wideband`` (50–7000 Hz), or ``shelf`` EQ
    (``bass_db`` at ``bass_hz``, ``treble_db`` at ``treble_hz``)."""

    kind: FilterKind
    cutoff_hz: float | None = None
    low_hz: float | None = None
    high_hz: float | None = None
    order: int = 8
    bass_db: float | None = None
    treble_db: float | None = None
    bass_hz: float | None = None
    treble_hz: float | None = None
    name = "filter"
    recorded = ()  # its record stays in the realised column
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {
        "cutoff_hz": (20.0, 48000.0, "Hz"),
        "low_hz": (20.0, 48000.0, "Hz"),
        "high_hz": (20.0, 48000.0, "Hz"),
        "order": (1, 16, "(Butterworth order)"),
        "bass_db": (-24.0, 24.0, "dB"),
        "treble_db": (-24.0, 24.0, "dB"),
        "bass_hz": (20.0, 1000.0, "Hz"),
        "treble_hz": (1000.0, 16000.0, "Hz"),
    }

    def validate(self) -> None:
        takes = _TAKES[self.kind]
        for pname in _OPTIONAL:
            if getattr(self, pname) is not None and pname not in takes:
                raise OperatorError(f"filter.{pname}: applies only to kind={'/'.join(_kinds_taking(pname))}")
        check_ranges(self)
        match self.kind:
            case "lowpass" | "highpass" if self.cutoff_hz is None:
                raise OperatorError(f"filter kind={self.kind} needs cutoff_hz")
            case "bandpass" if self.low_hz is None or self.high_hz is None:
                raise OperatorError("filter kind=bandpass needs low_hz and high_hz")
            case "bandpass" if self.low_hz >= self.high_hz:  # type: ignore[operator]
                raise OperatorError(f"filter: low_hz {self.low_hz:g} Hz must be below high_hz {self.high_hz:g} Hz")
            case "shelf" if self.bass_db is None and self.treble_db is None:
                raise OperatorError("filter kind=shelf needs bass_db or treble_db (dB)")

    def edges(self) -> tuple[float, ...]:
        """The cutoff(s) in Hz of a Butterworth kind."""
        if self.kind in PRESETS:
            return PRESETS[self.kind]
        match self.kind:
            case "bandpass":
                return (self.low_hz, self.high_hz)  # type: ignore[return-value]
            case _:
                return (self.cutoff_hz,)  # type: ignore[return-value]

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        sample_rate_hz = ctx.sample_rate_hz
        match self.kind:
            case "shelf":
                bass = (self.bass_hz or 100.0, self.bass_db or 0.0)
                treble = (self.treble_hz or 3000.0, self.treble_db or 0.0)
                if treble[0] >= sample_rate_hz / 2:
                    raise OperatorError(f"filter: treble_hz {treble[0]:g} Hz is at or above the Nyquist frequency")
                y = shelves(x, bass, treble, sample_rate_hz)
                record: dict[str, Any] = {"library": "pedalboard", "bass_hz": bass[0], "bass_db": bass[1]}
                record.update({"treble_hz": treble[0], "treble_db": treble[1]})
            case _:
                edges = self.edges()
                y = butterworth(x, self.kind, edges, self.order, sample_rate_hz)
                record = {"library": "scipy.signal", "edges_hz": list(edges), "order": self.order}
        out = y.astype(np.float32)
        over = np.abs(out) > 1.0
        return out, {"kind": self.kind, **record, "samples_over_full_scale": int(over.sum())}


def _kinds_taking(pname: str) -> list[str]:
    return [k for k, ps in _TAKES.items() if pname in ps]
