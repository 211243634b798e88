"""Segment label lines of manipulated-region location (the Half-Truth layout,
``UTT_ID START-END-T/START-END-F/... LABEL``; :mod:`interbias.metrics.cm` scores them):
:class:`SegmentLabel` and :func:`read_segment_line`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from interbias.utils.errors import CorpusError

SEGMENT_RE = re.compile(r"^(\d+(?:\.\d*)?)-(\d+(?:\.\d*)?)-([TF])$")


@dataclass(frozen=True)
class SegmentLabel:
    """One utterance of a segment file: its segments in seconds and whether it is labelled fake."""

    utterance: str
    segments: tuple[tuple[float, float, bool], ...]  # (start_s, end_s, fake)
    fake: bool

    @property
    def fake_regions(self) -> list[tuple[float, float]]:
        return [(a, b) for a, b, f in self.segments if f]


def read_segment_line(line: str, *, where: str, reference: bool, error: type[Exception] = CorpusError) -> SegmentLabel:
    """One line of a segment file (module docstring), read back: bad input is one ``error`` line; with
    ``reference`` the label must agree with the segments (0 exactly when a segment is F)."""
    parts = line.split()
    if len(parts) != 3:
        raise error(f"{where}: expected 'UTT_ID START-END-T/START-END-F/... LABEL', got {line.strip()!r}")
    utt, segs, label = parts
    if label not in ("0", "1"):
        raise error(f"{where}: label {label!r} is not 1 (genuine) or 0 (fake)")
    out = []
    last_end = 0.0
    for seg in segs.split("/"):
        m = SEGMENT_RE.match(seg)
        if not m:
            raise error(f"{where}: segment {seg!r} is not START-END-T or START-END-F (seconds)")
        a, b, flag = float(m.group(1)), float(m.group(2)), m.group(3) == "F"
        if b <= a:
            raise error(f"{where}: segment {seg!r} ends before it starts")
        if out and a < out[-1][0]:
            raise error(f"{where}: segment {seg!r} is out of order (starts before the previous segment)")
        if a < last_end - 1e-9:
            raise error(f"{where}: segment {seg!r} overlaps the previous one (which ends at {last_end:g} s)")
        last_end = b
        out.append((a, b, flag))
    fake = label == "0"
    if reference and fake != any(f for _, _, f in out):
        raise error(f"{where}: label {label} disagrees with the segments (0 = fake exactly when a segment is F)")
    return SegmentLabel(utt, tuple(out), fake)
