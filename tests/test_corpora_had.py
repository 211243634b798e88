"""The HAD-style corpus: spliced audio matches its ground truth to the sample; same-talker donors;
reference segment files; derived seeds (same spec → same bytes); adapter options refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cm_fixtures import cm_manifest

from interbias.analysis.security.cm import read_segment_labels
from interbias.audio.frontend import FrontEnd, load
from interbias.corpora.had import HADSpec, prepare_synthetic_had, write_had
from interbias.utils.errors import CorpusError

FE = FrontEnd(sample_rate_hz=16000, min_duration_s=0.0, max_duration_s=None)
STEP = 2 / 32768  # two 16-bit steps: the host and donor are re-quantised once when the result is written


def _build(tmp_path: Path, name: str = "had", **kw):
    base = cm_manifest(tmp_path / "data")
    spec = HADSpec(fake_share=0.6, min_segment_s=0.05, max_segment_s=0.1, crossfade_ms=0.0, **kw)
    return base, write_had(base, tmp_path / name, spec)


def test_spliced_audio_matches_the_ground_truth_to_the_sample(tmp_path):
    base, had = _build(tmp_path)
    by_id = base.by_id()
    truth = [json.loads(x) for x in (tmp_path / "had" / "regions.jsonl").read_text().splitlines()]
    fakes = [t for t in truth if t["regions"]]
    assert fakes and len(fakes) < len(truth) and len(truth) == sum(1 for u in base if u.get("label") == "bonafide")
    had_by_id = had.by_id()
    for t in fakes:
        u = had_by_id[t["id"]]
        host = load(base.resolve(by_id[t["id"].removeprefix("had:")]), FE).samples
        y = load(had.resolve(u), FE).samples
        assert len(y) == len(host) == t["n_samples"]
        inside = np.zeros(len(y), bool)
        for r in t["regions"]:
            donor_u = by_id[r["donor"]]
            assert donor_u.speaker == u.speaker and donor_u.get("label") == "spoof"  # the same talker
            d = load(base.resolve(donor_u), FE).samples
            a, n, off = r["start"], r["length"], r["donor_offset"]
            assert np.abs(y[a : a + n] - d[off : off + n]).max() <= STEP
            inside[a : a + n] = True
        assert np.abs(y[~inside] - host[~inside]).max() <= STEP
        assert u.get("fake_regions") == ";".join(f"{r['start']}-{r['start'] + r['length']}" for r in t["regions"])
    ref = read_segment_labels(tmp_path / "had" / "reference_eval.txt", reference=True)
    for t in (t for t in truth if t["split"] == "eval"):
        got = [(round(a * 16000), round(b * 16000)) for a, b in ref[t["id"]].fake_regions]
        assert got == [(r["start"], r["start"] + r["length"]) for r in t["regions"]]
    assert {u.get("split") for u in had} == {"train", "dev", "eval"}


def test_same_spec_same_bytes_other_seed_other_draw(tmp_path):
    _build(tmp_path, "a")
    _build(tmp_path, "b")
    _build(tmp_path, "c", seed=1)
    for name in ("regions.jsonl", "reference_train.txt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "regions.jsonl").read_bytes() != (tmp_path / "c" / "regions.jsonl").read_bytes()


def test_adapter_refuses_bad_options(tmp_path):
    with pytest.raises(CorpusError, match="unknown option 'shares'; valid: crossfade_ms"):
        prepare_synthetic_had(None, tmp_path, {"shares": [1]})
    with pytest.raises(CorpusError, match=r"need 0 < min_segment_s <= max_segment_s"):
        prepare_synthetic_had(None, tmp_path, {"min_segment_s": 0.5, "max_segment_s": 0.1})
