"""Signal levels: active-speech power and exact SNR mixing (moved to :mod:`interbias.dsp.level`,
shared with the synthetic corpus; the names stay importable from here)."""

from interbias.dsp.level import ACTIVE_RANGE_DB, FRAME_S, active_mask, active_power, mix_at_snr

__all__ = ["ACTIVE_RANGE_DB", "FRAME_S", "active_mask", "active_power", "mix_at_snr"]
