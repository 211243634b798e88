"""Signal levels: active-speech power and exact SNR mixing (moved to :mod:`interbias.audio.level`,
shared with the synthetic corpus; the names stay importable from here)."""

from interbias.audio.level import ACTIVE_RANGE_DB, FRAME_S, active_mask, active_power, mix_at_snr

__all__ = ["ACTIVE_RANGE_DB", "FRAME_S", "active_mask", "active_power", "mix_at_snr"]
