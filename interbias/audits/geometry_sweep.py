"""Several audits in one command: ``geometry --encoders A,B,C`` (one audit per encoder, then the
across-encoder table and r(Λ, D̄); :mod:`interbias.analysis.geometry.across`) and ``geometry
--layers a:b`` (one audit per hidden layer of an SSL encoder). Every audit is the single-encoder
audit of :func:`interbias.audits.geometry.run_geometry`, written to the same
geometry.csv."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd

from interbias.analysis.geometry.across import COLUMNS, Across, across_encoders, across_figure, across_frame
from interbias.audits.geometry import GeometryOptions, GeometryOutcome, run_geometry
from interbias.audits.source import encoder_options
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError, EncoderError
from interbias.utils.progress import Reporter


def parse_layers(text: str) -> list[int]:
    """``a:b`` → ``[a, …, b]`` (inclusive, ``0 ≤ a ≤ b``)."""
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise AnalysisError(f"--layers {text!r}: give a range a:b of layer numbers, e.g. 1:12") from None
    if not 0 <= a <= b:
        raise AnalysisError(f"--layers {text!r}: needs 0 <= a <= b")
    return list(range(a, b + 1))


def run_layers(options: GeometryOptions, layers: list[int], reporter: Reporter | None = None) -> list[GeometryOutcome]:
    """One audit per layer of ``options.encoder`` (an encoder with selectable layers)."""
    if options.encoder is None or options.layer is not None:
        raise AnalysisError("--layers sweeps one --encoder (without --layer or --embeddings)")
    try:
        encoder_options(options.encoder, layers[0])
    except EncoderError:
        raise AnalysisError(f"--layers sweeps SSL layers; {options.encoder} has no selectable layers") from None
    return [run_geometry(dataclasses.replace(options, layer=layer), reporter) for layer in layers]


def _row(outcome: GeometryOutcome, attribute: str) -> dict[str, object]:
    f = outcome.frame

    def pick(metric: str, col: str = "value", **match: str) -> float:
        sel = f[f["metric"] == metric]
        for k, v in match.items():
            sel = sel[sel[k] == v]
        return float(sel[col].iloc[0]) if len(sel) and str(sel[col].iloc[0]) != "" else math.nan

    sem = {"attribute": attribute, "axis": "sem"}
    return {
        "encoder": f["encoder"].iloc[0],
        "layer": f["layer"].iloc[0],
        "Lambda": pick("Lambda", axis="sem", axis_b="voice"),
        "Lambda_hw": pick("Lambda", "ci_half_width", axis="sem", axis_b="voice"),
        "ell": pick("ell", axis="sem", axis_b="voice"),
        "Dbar": pick("Dbar", **sem),
        "Dbar_hw": pick("Dbar", "ci_half_width", **sem),
        "Dbar_model": pick("Dbar_model", **sem),
        "floor": pick("floor", **sem),
        "active_margin": pick("active_margin", **sem),
    }


def run_across(
    options: GeometryOptions,
    encoders: list[str],
    *,
    attribute: str = "accent",
    n_boot: int | None = None,
    reporter: Reporter | None = None,
) -> tuple[list[GeometryOutcome], Across]:
    """An audit per encoder, then across.csv and across.png (+ .pdf, .svg) in ``options.out``."""
    if len(encoders) != len(set(encoders)):
        raise AnalysisError(f"--encoders lists an encoder twice: {','.join(encoders)}")
    if len(encoders) < 3:
        raise AnalysisError(
            f"--encoders needs at least 3 encoders for r(Λ, D̄) (got {len(encoders)}: {','.join(encoders)}); "
            "audit one encoder with --encoder"
        )
    if options.encoder is not None or options.embeddings is not None:
        raise AnalysisError("give --encoders instead of --encoder/--embeddings, not both")
    if attribute not in options.groups:
        raise AnalysisError(f"--across-attribute {attribute!r} is not one of --groups {','.join(options.groups)}")
    outcomes = [run_geometry(dataclasses.replace(options, encoder=e), reporter) for e in encoders]
    table = pd.DataFrame([_row(o, attribute) for o in outcomes], columns=list(COLUMNS))
    grids = {row["encoder"]: o.grid for row, o in zip(table.to_dict("records"), outcomes, strict=True)}
    ranks = {row["encoder"]: o.m for row, o in zip(table.to_dict("records"), outcomes, strict=True)}
    kw = {} if n_boot is None else {"n_boot": n_boot}
    result = across_encoders(table, grids, ranks, attribute=attribute, tau_rel=options.tau_rel, **kw)  # type: ignore[arg-type]
    write_across(Path(options.out), result)
    return outcomes, result


def write_across(out: Path, result: Across) -> None:
    """across.csv and the figure (png, pdf, svg)."""
    from interbias.analysis.reporting.plots import png, vectors

    atomic.write_csv(out / "across.csv", across_frame(result))
    figure = across_figure(result)
    atomic.write_bytes(out / "across.png", png(figure))
    for fmt, data in vectors(figure).items():
        atomic.write_bytes(out / f"across.{fmt}", data)
