"""The demo figures the README and the guides quote are the committed reference's
(docs/demo_figures.json, written from a `make demo` run by benchmarks/demo_figures.py): every
marked region of those documents must equal its rendering from the reference. With
INTERBIAS_DEMO_RUN=<run dir> the reference is also recomputed from that run and compared."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("demo_figures", ROOT / "benchmarks" / "demo_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quoted_demo_figures_equal_the_reference() -> None:
    m = _script()
    ref = json.loads(m.REFERENCE.read_text())
    texts = m.regions(ref)
    seen = set()
    for name in m.DOCUMENTS:
        found = m.found_regions((ROOT / name).read_text())
        for region, body in found.items():
            assert body == texts[region], (
                f"{name}: region {region} differs from docs/demo_figures.json; rerun make demo-figures"
            )
            seen.add(region)
    assert seen == set(texts)  # every region is quoted somewhere


def test_rendering_follows_the_reference() -> None:
    m = _script()
    ref = json.loads(m.REFERENCE.read_text())
    changed = {**ref, "n_resolved": ref["n_resolved"] + 1}
    assert m.regions(changed)["readme-summary"] != m.regions(ref)["readme-summary"]
    assert f"Of the {ref['n_effects']} effects {ref['n_resolved']} are resolved" in m.regions(ref)["readme-summary"]
    assert all(f"{v:.3f}" in m.regions(ref)["guide-table"] for v in ref["eer"].values())


@pytest.mark.skipif(not os.environ.get("INTERBIAS_DEMO_RUN"), reason="set INTERBIAS_DEMO_RUN to a make demo run")
def test_reference_equals_the_demo_run() -> None:
    m = _script()
    ref = json.loads(m.REFERENCE.read_text())
    now = m.figures(Path(os.environ["INTERBIAS_DEMO_RUN"]))
    assert {k: v for k, v in now.items() if k != "run"} == {k: v for k, v in ref.items() if k != "run"}


def test_demo_figures_are_quoted_only_inside_the_generated_regions() -> None:
    """A demo figure copied by hand outside a region goes stale when the demo changes (the guide
    once quoted 859 speakers and an MDE of 0.071 that the demo no longer gave): outside the
    regions, the documents hold none of the reference's headline figures."""
    m = _script()
    ref = json.loads(m.REFERENCE.read_text())
    top = ref["top"]
    quoted = {m.f3(v) for v in ref["macro_eer"].values()} | {m.f3(ref["cam_clean_gap_mde"])}
    quoted |= {m.f3(top[k], True) for k in ("estimate", "lo", "hi")} | {m.f3(top["value_from"]), m.f3(top["value_to"])}
    quoted |= {f"{ref['cam_clean_gap_need']} speakers", ref["cam_gap_answer"].split("largest: ")[1].split(":")[0]}
    for name in m.DOCUMENTS:
        outside = m.PATTERN.sub("", (ROOT / name).read_text())
        assert not [q for q in quoted if q in outside], f"{name}: a demo figure outside its demo: region"
