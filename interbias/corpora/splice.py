"""Partially fake audio (ADD 2023 Track 2): bona fide utterances with generated segments spliced in.

**Splicing.** A region is ``(start, length)`` in samples of the host utterance plus the donor
it takes audio from (``donor``, ``donor_offset``). :func:`splice` replaces the host's samples
``[start, start + length)`` with the donor's ``[donor_offset, donor_offset + length)``: the
output has the host's length, and every sample outside the regions is the host's own. With a
cross-fade of ``c`` samples the first ``c`` samples of a region ramp linearly from host to
donor (weights ``(i + 1) / (c + 1)``) and the last ``c`` ramp back; the ground-truth region
is still ``[start, start + length)``. Regions must have positive length, lie inside the host,
be sorted and not overlap, and hold at least ``2c`` samples; anything else is one
:class:`~interbias.utils.errors.CorpusError` line.

**Segment files.** :func:`segment_line` writes one utterance in the layout ``cm-eval
location`` reads (:mod:`interbias.analysis.security.cm`): ``UTT START-END-T/START-END-F/... LABEL``,
seconds = samples / rate printed with 7 decimals (exact for 16 kHz: 1/16000 = 0.0000625 s),
genuine ``T`` segments filling the gaps, label ``0`` when a region is fake.
:func:`read_segment_line` reads a line back (``cm-eval location`` and the ``add2023`` adapter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from interbias.metrics.segments import SEGMENT_RE as SEGMENT_RE  # segment lines live in metrics; kept importable here
from interbias.metrics.segments import SegmentLabel as SegmentLabel
from interbias.metrics.segments import read_segment_line as read_segment_line
from interbias.utils.errors import CorpusError


@dataclass(frozen=True)
class Region:
    """One spliced-in segment: host samples ``[start, start + length)`` from ``donor``."""

    start: int
    length: int
    donor: str = ""
    donor_offset: int = 0

    @property
    def end(self) -> int:
        return self.start + self.length


def check_regions(regions: Sequence[Region], n_samples: int, *, crossfade: int = 0, where: str = "splice") -> None:
    """Refuse a region of zero length, one longer than (or running past) the utterance, unsorted
    or overlapping regions, and a region shorter than twice the cross-fade."""
    last_end = 0
    for i, r in enumerate(regions):
        if r.length <= 0:
            raise CorpusError(f"{where}: region {i} has length {r.length} samples; a spliced segment needs length > 0")
        if r.length > n_samples:
            raise CorpusError(
                f"{where}: region {i} is {r.length} samples long, longer than the utterance ({n_samples} samples)"
            )
        if r.start < 0 or r.end > n_samples:
            raise CorpusError(
                f"{where}: region {i} [{r.start}, {r.end}) runs outside the utterance's {n_samples} samples"
            )
        if i and r.start < regions[i - 1].start:
            raise CorpusError(
                f"{where}: region {i} starts at {r.start}, before region {i - 1} ({regions[i - 1].start})"
            )
        if r.start < last_end:
            raise CorpusError(f"{where}: region {i} [{r.start}, {r.end}) overlaps region {i - 1} (ends at {last_end})")
        if 2 * crossfade > r.length:
            raise CorpusError(
                f"{where}: region {i} ({r.length} samples) is shorter than twice the cross-fade ({crossfade})"
            )
        last_end = r.end


def splice(
    host: np.ndarray, regions: Sequence[Region], donors: Sequence[np.ndarray], *, crossfade: int = 0
) -> np.ndarray:
    """The host with each region replaced by its donor's samples (module docstring)."""
    host = np.asarray(host, dtype=np.float32)
    check_regions(regions, len(host), crossfade=crossfade)
    if len(donors) != len(regions):
        raise CorpusError(f"splice: {len(regions)} region(s) but {len(donors)} donor waveform(s)")
    out = host.copy()
    ramp = (np.arange(1, crossfade + 1, dtype=np.float64) / (crossfade + 1)) if crossfade else None
    for i, (r, d) in enumerate(zip(regions, donors, strict=True)):
        seg = np.asarray(d, dtype=np.float32)[r.donor_offset : r.donor_offset + r.length]
        if r.donor_offset < 0 or len(seg) != r.length:
            raise CorpusError(
                f"splice: region {i} needs donor samples [{r.donor_offset}, {r.donor_offset + r.length}); "
                f"the donor has {len(d)}"
            )
        piece = seg.astype(np.float64)
        if ramp is not None:
            h = host[r.start : r.end].astype(np.float64)
            piece[:crossfade] = (1 - ramp) * h[:crossfade] + ramp * piece[:crossfade]
            piece[-crossfade:] = ramp[::-1] * piece[-crossfade:] + (1 - ramp[::-1]) * h[-crossfade:]
        out[r.start : r.end] = piece.astype(np.float32)
    return out


def seconds(n: int, sample_rate_hz: int) -> str:
    """``n`` samples as seconds with 7 decimals (exact at 16 kHz)."""
    return f"{n / sample_rate_hz:.7f}"


def segment_line(utt: str, fake: Sequence[tuple[int, int]], n_samples: int, sample_rate_hz: int) -> str:
    """One segment-file line: ``fake`` regions ``(start, end)`` in samples, sorted and disjoint,
    with genuine ``T`` segments covering the rest of ``[0, n_samples)``."""
    if any(c.isspace() for c in utt) or not utt:
        raise CorpusError(f"segment file: utterance id {utt!r} is empty or holds white space")
    parts, pos = [], 0
    for a, b in fake:
        if a < pos or b <= a or b > n_samples:
            raise CorpusError(
                f"segment file: {utt}: fake region [{a}, {b}) is empty, unsorted, overlapping or past the end"
            )
        if a > pos:
            parts.append(f"{seconds(pos, sample_rate_hz)}-{seconds(a, sample_rate_hz)}-T")
        parts.append(f"{seconds(a, sample_rate_hz)}-{seconds(b, sample_rate_hz)}-F")
        pos = b
    if pos < n_samples or not parts:
        parts.append(f"{seconds(pos, sample_rate_hz)}-{seconds(max(n_samples, pos + 1), sample_rate_hz)}-T")
    return f"{utt} {'/'.join(parts)} {0 if fake else 1}"


def place_regions(rng: np.random.Generator, n_samples: int, lengths: Sequence[int]) -> list[int]:
    """Starts for segments of ``lengths`` (in this order) inside ``n_samples``, disjoint: the
    slack ``n − Σ lengths`` cut at sorted uniform integer points into the gaps before, between
    and after them."""
    slack = n_samples - int(sum(lengths))
    if slack < 0:
        raise CorpusError(f"splice: segments of {int(sum(lengths))} samples do not fit in {n_samples}")
    cuts = np.sort(rng.integers(0, slack + 1, size=len(lengths)))
    starts, used = [], 0
    for cut, length in zip(cuts.tolist(), lengths, strict=True):
        starts.append(int(cut) + used)
        used += int(length)
    return starts


def parse_region_attr(text: str | None, where: str) -> list[tuple[int, int]]:
    """``"START-END;START-END"`` (samples) of a manifest's ``fake_regions`` attribute."""
    if not text:
        return []
    out = []
    for part in text.split(";"):
        try:
            a, b = (int(x) for x in part.split("-"))
        except ValueError:
            raise CorpusError(f"{where}: fake_regions {text!r}: expected START-END;START-END in samples") from None
        out.append((a, b))
    return out


def region_attr(regions: Sequence[Region]) -> str:
    return ";".join(f"{r.start}-{r.end}" for r in regions)
