"""What the front end will make of a corpus, before any run (``interbias data info``).

Each utterance is read as a run reads it (:func:`interbias.audio.frontend.read`: the whole file
or its segment) and judged by the run's own code: its audio key
(:func:`interbias.embedding.stage.utterance_sha256`, which refuses a file changed since the
manifest recorded its sha256) and :func:`interbias.audio.frontend.load_decoded` with
``vad=True``, the call that prepares an utterance to embed. An utterance it refuses here is
refused in every cell of a run under the same front end, with the same reason.

Besides the verdict, per utterance: duration, sample rate and channels of the audio read,
clipped samples (magnitude at or over :data:`CLIP_LEVEL` in any channel), leading and trailing
digital silence (:func:`interbias.audio.segments.padding` of the mono downmix; a file counts as
padded at an end from :data:`PADDED_MIN_S`) and seconds of signal
(:func:`interbias.audio.frontend.signal_duration_s`, what the no-VAD minimum counts).
"""

from __future__ import annotations

import statistics
import textwrap
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from interbias.audio.frontend import SPEECH_FRAME_S, FrontEnd, load_decoded, read, signal_duration_s
from interbias.audio.segments import padding
from interbias.corpora.manifest import Manifest, Utterance
from interbias.embedding.stage import utterance_sha256
from interbias.utils.errors import AudioError, ManifestError

#: Sample magnitude (full scale 1.0) at or over which a sample counts as clipped: within 0.01 dB
#: of full scale.
CLIP_LEVEL = 0.999
#: Digital silence at an end of a file counts as padding from one 20 ms frame on.
PADDED_MIN_S = SPEECH_FRAME_S
#: Refusals listed in the text report (``--json`` lists every one).
SHOWN_REFUSALS = 20
WIDTH = 80


@dataclass(frozen=True)
class UtteranceAudio:
    """One utterance's audio as read, and the front end's verdict (``refused``: its reason)."""

    id: str
    path: str
    duration_s: float | None = None
    sample_rate_hz: int | None = None
    channels: int | None = None
    clipped_samples: int = 0
    leading_silence_s: float = 0.0
    trailing_silence_s: float = 0.0
    signal_s: float | None = None
    refused: str | None = None


@dataclass(frozen=True)
class AudioAudit:
    frontend: FrontEnd
    utterances: tuple[UtteranceAudio, ...]

    @property
    def readable(self) -> list[UtteranceAudio]:
        return [u for u in self.utterances if u.duration_s is not None]

    @property
    def refused(self) -> list[UtteranceAudio]:
        return [u for u in self.utterances if u.refused is not None]

    def as_dict(self) -> dict[str, Any]:
        """Counts, and every utterance's record (``utterances``) and every refusal (``refused``)."""
        return {
            "frontend": self.frontend.record(),
            **summary(self),
            "refused": [{"id": u.id, "reason": u.refused} for u in self.refused],
            "utterances": [asdict(u) for u in self.utterances],
        }


def audit_audio(manifest: Manifest, frontend: FrontEnd, *, advance: Callable[[int], None] | None = None) -> AudioAudit:
    """Read and judge every utterance of ``manifest`` under ``frontend`` (see the module doc)."""
    out = []
    for u in manifest:
        out.append(_one(manifest, u, frontend))
        if advance is not None:
            advance(1)
    return AudioAudit(frontend, tuple(out))


def _one(manifest: Manifest, u: Utterance, frontend: FrontEnd) -> UtteranceAudio:
    """Measure ``u``'s audio and judge it in the run's order: its audio key first (an
    unreadable or changed file), then the front end."""
    refusal = None
    try:
        path = manifest.resolve(u)
        utterance_sha256(u, manifest)
    except ManifestError as exc:
        return UtteranceAudio(u.id, u.path, refused=_reason(exc, u, manifest))
    except AudioError as exc:
        refusal = _reason(exc, u, manifest)
    try:
        data, rate, segment = read(path, u.span)
    except AudioError as exc:
        return UtteranceAudio(u.id, u.path, refused=refusal or _reason(exc, u, manifest))
    mono = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
    lead, trail = padding(mono)
    finite = bool(np.isfinite(data).all())
    measured = UtteranceAudio(
        u.id,
        u.path,
        duration_s=data.shape[0] / rate,
        sample_rate_hz=rate,
        channels=int(data.shape[1]),
        clipped_samples=int((np.abs(data) >= CLIP_LEVEL).any(axis=1).sum()) if finite else 0,
        leading_silence_s=lead / rate,
        trailing_silence_s=trail / rate,
        signal_s=signal_duration_s(mono, rate) if finite and len(mono) else None,
    )
    if refusal is None:
        try:
            load_decoded(data, rate, segment, path, frontend, vad=True)
        except AudioError as exc:
            refusal = _reason(exc, u, manifest)
    return replace(measured, refused=refusal)


def _reason(exc: Exception, u: Utterance, manifest: Manifest) -> str:
    """The refusal without the path or id the message starts with (the report names the utterance)."""
    text = str(exc)
    try:
        prefixes = [f"{manifest.resolve(u)}: ", f"{u.id}: "]
    except ManifestError:
        prefixes = [f"{u.id}: ", f"utterance {u.id!r}: "]
    for prefix in prefixes:
        text = text.removeprefix(prefix)
    return text


def summary(audit: AudioAudit) -> dict[str, Any]:
    """The counts of an audit: durations, rates, channels, clipping, padding, refusals."""
    read_ = audit.readable
    durations = [u.duration_s for u in read_ if u.duration_s is not None]
    padded_lead = [u for u in read_ if u.leading_silence_s >= PADDED_MIN_S]
    padded_trail = [u for u in read_ if u.trailing_silence_s >= PADDED_MIN_S]
    longest = max((max(u.leading_silence_s, u.trailing_silence_s) for u in padded_lead + padded_trail), default=0.0)
    clipped = [u for u in read_ if u.clipped_samples]
    return {
        "n_utterances": len(audit.utterances),
        "n_read": len(read_),
        "duration_s": {
            "min": min(durations, default=None),
            "median": statistics.median(durations) if durations else None,
            "max": max(durations, default=None),
            "total": round(sum(durations), 3),
        },
        "sample_rates_hz": dict(sorted(Counter(u.sample_rate_hz for u in read_).items())),
        "channels": dict(sorted(Counter(u.channels for u in read_).items())),
        "n_clipped": len(clipped),
        "clipped_samples": sum(u.clipped_samples for u in clipped),
        "n_leading_silence": len(padded_lead),
        "n_trailing_silence": len(padded_trail),
        "longest_silence_s": round(longest, 3),
        "n_refused": len(audit.refused),
    }


def audit_lines(audit: AudioAudit) -> list[str]:
    """The audit as text lines of at most :data:`WIDTH` columns."""
    s, fe = summary(audit), audit.frontend
    trim = "trimmed" if fe.trim_silence else "not trimmed"
    out = [
        f"audio as the front end reads it ({fe.sample_rate_hz} Hz, minimum {fe.min_duration_s:g} s, padding {trim}):"
    ]
    d = s["duration_s"]
    if s["n_read"]:
        out.append(
            f"  duration     min {d['min']:.2f} s, median {d['median']:.2f} s, max {d['max']:.2f} s, "
            f"total {_span(d['total'])}"
        )
        out.append("  sample rate  " + ", ".join(f"{r} Hz: {n}" for r, n in s["sample_rates_hz"].items()))
        out.append("  channels     " + ", ".join(f"{c}: {n}" for c, n in s["channels"].items()))
        out.append(
            f"  clipping     {s['n_clipped']} utterance(s) with samples at full scale ({s['clipped_samples']} in all)"
        )
        out += _padding_lines(s, fe)
    if s["n_read"] < s["n_utterances"]:
        out.append(f"  unreadable   {s['n_utterances'] - s['n_read']} of {s['n_utterances']} utterance(s)")
    return out + _refusal_lines(audit)


def _span(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.2f} h"


def _padding_lines(s: dict[str, Any], fe: FrontEnd) -> list[str]:
    lead, trail = s["n_leading_silence"], s["n_trailing_silence"]
    out = [
        f"  padding      {lead} start, {trail} end with >= {PADDED_MIN_S * 1000:g} ms of digital silence"
        + (f" (longest {s['longest_silence_s']:.2f} s)" if lead or trail else "")
    ]
    if (lead or trail) and not fe.trim_silence:
        out.append("               (run --trim-silence, or frontend.trim_silence: true, removes it)")
    return out


def _refusal_lines(audit: AudioAudit) -> list[str]:
    refused, fe = audit.refused, audit.frontend
    if not refused:
        return [f"  refused      none: the front end accepts all {len(audit.utterances)} utterance(s)"]
    out = [f"  refused      {len(refused)} of {len(audit.utterances)}: each fails in every cell of a run, for:"]
    for u in refused[:SHOWN_REFUSALS]:
        out += textwrap.wrap(f"{u.id}: {u.refused}", WIDTH, initial_indent="    ", subsequent_indent="      ")
    if len(refused) > SHOWN_REFUSALS:
        out.append(f"    … and {len(refused) - SHOWN_REFUSALS} more (--json lists every one)")
    short = [u for u in refused if u.signal_s is not None and u.signal_s < fe.min_duration_s]
    if short:
        out += textwrap.wrap(
            f"{len(short)} of them hold less than {fe.min_duration_s:g} s of signal; trimming cannot add signal: "
            "frontend.min_duration_s in the experiment's YAML sets the minimum.",
            WIDTH,
            initial_indent="  ",
            subsequent_indent="  ",
        )
    return out
