"""Splicing: ground truth exact to the sample, cross-fade weights, refusals, segment-file lines."""

from __future__ import annotations

import numpy as np
import pytest

from interbias.analysis.security.cm import parse_segment_line
from interbias.corpora.splice import Region, check_regions, place_regions, segment_line, splice
from interbias.utils.errors import CorpusError
from interbias.utils.seeding import derive_rng


def test_splice_is_exact_to_the_sample():
    host = np.arange(100, dtype=np.float32)
    d1, d2 = -np.arange(1, 51, dtype=np.float32), np.full(30, 7.0, dtype=np.float32)
    regions = [Region(10, 5, "a", 3), Region(40, 20, "b", 2)]
    y = splice(host, regions, [d1, d2])
    assert len(y) == 100
    expect = host.copy()
    expect[10:15] = d1[3:8]  # -4 .. -8
    expect[40:60] = 7.0
    assert np.array_equal(y, expect)
    assert y[9] == 9 and y[10] == -4 and y[14] == -8 and y[15] == 15 and y[39] == 39 and y[59] == 7 and y[60] == 60


def test_crossfade_ramps_inside_the_region_only():
    host, donor = np.zeros(20, dtype=np.float32), np.ones(20, dtype=np.float32)
    y = splice(host, [Region(5, 8, "d", 0)], [donor], crossfade=2)
    # weights (i + 1) / (c + 1) = 1/3, 2/3 in, then 2/3, 1/3 out; host outside untouched
    assert y[:5].tolist() == [0] * 5 and y[13:].tolist() == [0] * 7
    assert y[5:13] == pytest.approx([1 / 3, 2 / 3, 1, 1, 1, 1, 2 / 3, 1 / 3])


@pytest.mark.parametrize(
    ("regions", "message"),
    [
        ([Region(3, 0)], "splice: region 0 has length 0 samples; a spliced segment needs length > 0"),
        ([Region(0, 11)], "splice: region 0 is 11 samples long, longer than the utterance (10 samples)"),
        ([Region(6, 5)], "splice: region 0 [6, 11) runs outside the utterance's 10 samples"),
        ([Region(1, 3), Region(3, 2)], "splice: region 1 [3, 5) overlaps region 0 (ends at 4)"),
        ([Region(5, 2), Region(1, 2)], "splice: region 1 starts at 1, before region 0 (5)"),
    ],
)
def test_bad_regions_are_one_line_each(regions, message):
    with pytest.raises(CorpusError) as exc:
        check_regions(regions, 10)
    assert str(exc.value) == message
    with pytest.raises(CorpusError, match="shorter than twice the cross-fade"):
        check_regions([Region(0, 3)], 10, crossfade=2)


def test_segment_line_reads_back_to_the_sample():
    sr = 16000
    line = segment_line("u1", [(8859, 16131), (25591, 34337)], 39314, sr)
    lab = parse_segment_line(line, where="t", reference=True)
    assert lab.fake and [(round(a * sr), round(b * sr)) for a, b in lab.fake_regions] == [(8859, 16131), (25591, 34337)]
    assert [round(b * sr) for _, b, _ in lab.segments][-1] == 39314
    assert segment_line("g", [], 16000, sr) == "g 0.0000000-1.0000000-T 1"
    with pytest.raises(CorpusError, match="white space"):
        segment_line("a b", [], 10, sr)


def test_placed_regions_are_disjoint_and_inside():
    for i in range(50):
        rng = derive_rng("t-splice", i)
        lengths = rng.integers(1, 40, size=3).tolist()
        starts = place_regions(rng, 150, lengths)
        check_regions([Region(s, n) for s, n in zip(starts, lengths, strict=True)], 150)
    with pytest.raises(CorpusError, match="do not fit"):
        place_regions(derive_rng("x"), 10, [6, 6])
