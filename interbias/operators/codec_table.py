"""The codec table: which codecs the ``codec`` operator knows, the rates and bitrates each
accepts and which backend runs it (:mod:`interbias.operators.codec` runs them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

CodecName = Literal[
    "pcm_mulaw",
    "pcm_alaw",
    "g722",
    "g726",
    "gsm",
    "amr_nb",
    "opus",
    "mp3",
    "aac",
    "sbc",
    "msbc",
    "aptx",
    "aptx_hd",
    "speex",
    "codec2",
]


@dataclass(frozen=True)
class CodecSpec:
    """How one codec runs.

    ``rates_hz``: rates the codec accepts; the input's rate is used when listed, otherwise
    ``rate_hz`` (resampling around the codec). ``bitrates``: the allowed values (bits/s);
    ``bitrate_range``: an inclusive range instead, for codecs with continuous rate control.
    """

    backend: Literal["pyav", "pyav-wav", "soundfile", "ffmpeg"]
    rate_hz: int
    default_bitrate: int
    rates_hz: tuple[int, ...] = ()
    bitrates: tuple[int, ...] = ()
    bitrate_range: tuple[int, int] | None = None
    encoder: str = ""
    decoder: str = ""
    sample_fmt: str = "s16"
    stereo: bool = False
    options: dict[str, str] = field(default_factory=dict)
    description: str = ""
    #: A parametric vocoder: the waveform is not kept, so delays are measured on the envelope.
    vocoder: bool = False

    def allowed_bitrates(self) -> str:
        if self.bitrate_range:
            return f"{self.bitrate_range[0]}–{self.bitrate_range[1]} bit/s"
        return ", ".join(str(b) for b in self.bitrates) + " bit/s"


_AMR_NB_MODES = (4750, 5150, 5900, 6700, 7400, 7950, 10200, 12200)
CODEC2_MODES = {3200: "3200", 2400: "2400", 1600: "1600", 1400: "1400", 1300: "1300", 1200: "1200", 700: "700C"}

CODECS: dict[str, CodecSpec] = {
    "pcm_mulaw": CodecSpec(
        "pyav", 8000, 64000, bitrates=(64000,), encoder="pcm_mulaw", decoder="pcm_mulaw",
        description="G.711 µ-law, 8 kHz",
    ),
    "pcm_alaw": CodecSpec(
        "pyav", 8000, 64000, bitrates=(64000,), encoder="pcm_alaw", decoder="pcm_alaw",
        description="G.711 A-law, 8 kHz",
    ),
    "g722": CodecSpec(
        "pyav", 16000, 64000, bitrates=(64000,), encoder="g722", decoder="g722",
        description="G.722 sub-band ADPCM, 16 kHz",
    ),
    "g726": CodecSpec(
        "pyav-wav", 8000, 32000, bitrates=(16000, 24000, 32000, 40000), encoder="g726", decoder="g726",
        description="G.726 ADPCM, 8 kHz (in a WAV container: the decoder needs the code size)",
    ),
    "gsm": CodecSpec("soundfile", 8000, 13000, bitrates=(13000,), description="GSM 06.10 full rate (libsndfile), 8 kHz"),
    "amr_nb": CodecSpec(
        "pyav", 8000, 12200, bitrates=_AMR_NB_MODES, encoder="libopencore_amrnb", decoder="amrnb",
        description="AMR narrowband (opencore), 8 kHz",
    ),
    "opus": CodecSpec(
        "pyav", 48000, 16000, rates_hz=(8000, 12000, 16000, 24000, 48000), bitrate_range=(6000, 510000),
        encoder="libopus", decoder="libopus", description="Opus (libopus), the input's rate when Opus supports it",
    ),
    "mp3": CodecSpec(
        "pyav", 44100, 32000, rates_hz=(8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000),
        bitrate_range=(8000, 320000), encoder="libmp3lame", decoder="mp3float", sample_fmt="s16p",
        description="MP3 (LAME), the input's rate when MP3 supports it",
    ),
    "aac": CodecSpec(
        "pyav", 48000, 32000, rates_hz=(8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000),
        bitrate_range=(8000, 320000), encoder="aac", decoder="aac", sample_fmt="fltp",
        description="AAC-LC (FFmpeg encoder), the input's rate when AAC supports it",
    ),
    "sbc": CodecSpec(
        "pyav", 16000, 64000, rates_hz=(16000, 32000, 44100, 48000), bitrate_range=(32000, 512000),
        encoder="sbc", decoder="sbc",
        description="Bluetooth SBC (A2DP), the input's rate when SBC supports it; the default 64 kbit/s at "
        "16 kHz is ~4 bits per sample, like A2DP's high-quality 328 kbit/s at 44.1 kHz stereo",
    ),
    "msbc": CodecSpec(
        "pyav", 16000, 60000, bitrates=(60000,), encoder="sbc", decoder="sbc", options={"msbc": "1"},
        description="Bluetooth mSBC (HFP wideband speech), 16 kHz",
    ),
    "aptx": CodecSpec(
        "pyav", 16000, 128000, rates_hz=(8000, 16000, 24000, 32000, 44100, 48000), bitrates=(),
        encoder="aptx", decoder="aptx", sample_fmt="s32p", stereo=True,
        description="Bluetooth aptX (4 bits/sample/channel, stereo), the input's rate when supported",
    ),
    "aptx_hd": CodecSpec(
        "pyav", 16000, 192000, rates_hz=(8000, 16000, 24000, 32000, 44100, 48000), bitrates=(),
        encoder="aptx_hd", decoder="aptx_hd", sample_fmt="s32p", stereo=True,
        description="Bluetooth aptX HD (6 bits/sample/channel, stereo), the input's rate when supported",
    ),
    "speex": CodecSpec(
        "ffmpeg", 16000, 16800, rates_hz=(8000, 16000, 32000), bitrate_range=(2150, 44200),
        encoder="libspeex", description="Speex (system ffmpeg CLI), wideband at 16 kHz",
    ),
    "codec2": CodecSpec(
        "ffmpeg", 8000, 3200, bitrates=tuple(sorted(CODEC2_MODES)), encoder="libcodec2",
        description="Codec 2 vocoder (system ffmpeg CLI), 8 kHz", vocoder=True,
    ),
}  # fmt: skip

#: aptX codes 4 bits and aptX HD 6 bits per sample per channel, two channels.
APTX_BITS = {"aptx": 4, "aptx_hd": 6}


def fixed_bitrate(codec: str, rate_hz: int) -> int | None:
    """The bitrate a codec without rate control runs at, at ``rate_hz`` (None: selectable)."""
    if codec in APTX_BITS:
        return APTX_BITS[codec] * 2 * rate_hz
    return None
