"""Cells grouped by front end (:mod:`interbias.run.frontends`): one group when the cells share
the experiment's front end, one per VAD when a protocol factor sets it, and each cell handed
the embedder of its own front end."""

from __future__ import annotations

from conftest import NOISE, VAD

from interbias.experiments.schema import parse_experiment
from interbias.run.frontends import CellEmbedders, frontend_groups


def _exp(factors: list):
    return parse_experiment({"name": "P", "corpus": "synthetic", "factors": factors}, where="p.yaml")


def test_cells_of_one_front_end_form_one_group() -> None:
    exp = _exp([NOISE])
    groups = frontend_groups(exp, exp.cells())
    assert list(groups) == [exp.frontend] and len(groups[exp.frontend]) == 2
    assert list(frontend_groups(exp, [])) == [exp.frontend]  # nothing pending: the experiment's own


def test_a_protocol_vad_splits_the_cells_and_each_gets_its_groups_embedder() -> None:
    exp = _exp([VAD, NOISE])
    made: list[tuple[str, list[str]]] = []

    def make(fe, cells):
        made.append((fe.vad, [c.id for c in cells]))
        return f"embedder-{fe.vad}"

    emb = CellEmbedders(exp, exp.cells(), make)  # type: ignore[arg-type]
    assert made == [
        ("none", ["vad=none,noise=clean", "vad=none,noise=n5"]),
        ("energy", ["vad=on,noise=clean", "vad=on,noise=n5"]),
    ]
    assert {c.id: emb.for_cell(c) for c in exp.cells()} == {
        "vad=none,noise=clean": "embedder-none",
        "vad=none,noise=n5": "embedder-none",
        "vad=on,noise=clean": "embedder-energy",
        "vad=on,noise=n5": "embedder-energy",
    }
    cells = exp.cells()
    assert [emb.label(emb.for_cell(c)) for c in (cells[0], cells[-1])] == [
        "2 cells with VAD none",
        "2 cells with VAD energy",
    ]
