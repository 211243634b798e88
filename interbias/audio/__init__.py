"""Audio in: the front end (:mod:`~interbias.audio.frontend`: decode, mono, resample, duration
rules) and the signal processing shared by the corpus builders and the operators, so that both
measure levels and stretch time the same way:

- :mod:`~interbias.audio.level`: active-speech detector and levels, exact SNR mixing;
- :mod:`~interbias.audio.wsola`: WSOLA time-scale modification (pitch kept);
- :mod:`~interbias.audio.rooms`: shoebox room simulation, RT60 measurement, direct-path onset;
- :mod:`~interbias.audio.resample`: the resamplers (polyphase, torchaudio's sinc).

The front end's public names are importable from here (``from interbias import audio; audio.load``).
"""

from interbias.audio.frontend import (
    MAX_FLOAT_PEAK,
    RATE_LIMITS_HZ,
    SILENCE_PEAK_TO_PEAK,
    FrontEnd,
    LoadedAudio,
    Span,
    check_signal,
    decode,
    info,
    load,
    prepare,
    rate_changes,
    write_flac16,
)

__all__ = [
    "MAX_FLOAT_PEAK",
    "RATE_LIMITS_HZ",
    "SILENCE_PEAK_TO_PEAK",
    "FrontEnd",
    "LoadedAudio",
    "Span",
    "check_signal",
    "decode",
    "info",
    "load",
    "prepare",
    "rate_changes",
    "write_flac16",
]
