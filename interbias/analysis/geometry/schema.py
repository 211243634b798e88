"""geometry.csv: its columns, the rows of one audit, reading, merging and the one-row-per-audit
summary other stages (report, card) read."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.analysis.geometry.disparity import RHO
from interbias.analysis.geometry.linalg import AXES, PAIRS
from interbias.analysis.geometry.stats import CI_METHOD, Audit, Key, disparity_keys
from interbias.utils.errors import AnalysisError

#: Columns of geometry.csv, in order.
COLUMNS = (
    "encoder",
    "encoder_fingerprint",
    "source",
    "subset",
    "layer",
    "metric",
    "axis",
    "axis_b",
    "attribute",
    "group",
    "value",
    "ci_half_width",
    "ci_method",
    "n_resamples",
    "p_value",
    "p_method",
    "n_perm",
    "n_classes",
    "m",
    "chance",
    "tau",
    "d",
    "n_rows",
    "n_texts",
    "n_voices",
    "n_styles",
    "n_failed",
    "seed",
    "note",
)


def to_frame(result: Audit, meta: Mapping[str, Any]) -> pd.DataFrame:
    """geometry.csv rows (:data:`COLUMNS`) of one audit; ``meta`` supplies encoder,
    encoder_fingerprint, source, subset, layer and n_failed."""
    s = result.shape
    base: dict[str, Any] = dict.fromkeys(COLUMNS, "")
    base.update({k: meta.get(k, "") for k in ("encoder", "encoder_fingerprint", "source", "subset", "layer")})
    base.update(s, n_failed=int(meta.get("n_failed", 0)), seed=result.seed)
    rows: list[dict[str, Any]] = []

    def add(metric: str, key: Key | None, value: float, **kw: Any) -> None:
        row = dict(base, metric=metric, value=value, **kw)
        if key is not None and key in result.half_widths:
            hw, n = result.half_widths[key]
            row.update(ci_half_width=hw, ci_method=CI_METHOD, n_resamples=n)
        rows.append(row)

    v = result.values
    for a in AXES:
        f = result.fidelity[a]
        add("F", ("F", a), f.value, axis=a, n_classes=f.n_classes, tau=f.tau)
    chance = result.m / s["d"]
    for a, b in PAIRS:
        add("Lambda", ("Lambda", a, b), v[("Lambda", a, b)], axis=a, axis_b=b, m=result.m, chance=chance)
        add("ell", ("ell", a, b), v[("ell", a, b)], axis=a, axis_b=b, m=result.m)
    for attr in result.attributes:
        perm = result.permutation[attr]
        groups = sorted({k[2] for k in v if k[0] == "F_group" and k[1] == attr})
        for g in groups:
            for a in AXES:
                val = v[("F_group", attr, g, a)]
                note = "fewer than 2 classes in the slice" if math.isnan(val) else ""
                add("F_group", ("F_group", attr, g, a), val, axis=a, attribute=attr, group=g, note=note)
        for a in AXES:
            add(
                "Gamma",
                ("Gamma", attr, a),
                v[("Gamma", attr, a)],
                axis=a,
                attribute=attr,
                group=f"{len(groups)} groups",
                p_value=perm.p_values[a],
                p_method=perm.method,
                n_perm=perm.n_perm,
            )
    for metric, attr, a in disparity_keys(result.attributes):
        key = (metric, attr, a)
        n_groups = len({k[2] for k in v if k[0] == "F_group" and k[1] == attr})
        axis_b = "" if a == "voice" else "voice"
        note = disparity_note(metric, v[key])
        add(
            metric,
            key,
            v[key],
            axis=a,
            axis_b=axis_b,
            attribute=attr,
            group=f"{n_groups} groups",
            m=result.m,
            note=note,
        )
    dec = result.decomposition
    add("decomposition_residual", None, dec.residual if dec else math.nan, note=result.decomposition_note)
    if dec:
        for part, share in dec.shares().items():
            add("variance_share", None, share, axis=part, note="share of tr(Σ_T)")
    return pd.DataFrame(rows, columns=list(COLUMNS))


def disparity_note(metric: str, value: float) -> str:
    """The note of a disparity row: the floor's ρ and the active-region verdict."""
    if metric == "active_margin":
        if math.isnan(value):
            return ""
        verdict = "active" if value > 0 else "inactive (floor 0)"
        return f"ρ²+ℓ²−1 at ρ={RHO:g}: {verdict}"
    return {
        "Dbar": "mean-square probe disparity, measured (Proposition 2)",
        "Dbar_model": "δ·√(Λ/m): Proposition 2 under an isotropic voice displacement",
        "delta": "RMS whitened group displacement in the voice subspace",
        "floor": f"worst-case floor δ·max(0, t₋) at ρ={RHO:g} (Corollary 1)",
    }[metric]


# ---- geometry.csv for other stages (the report) -----------------------------------------------

#: The sem-probe accent disparities in :func:`summary`.
DISPARITY_SUMMARY = ("Dbar", "Dbar_model", "floor", "active_margin")

#: Rows that identify one audit in geometry.csv.
AUDIT_KEY = ("encoder", "layer", "source", "subset")


def read_geometry(path: Path) -> pd.DataFrame:
    """Read geometry.csv (or the folder holding it), checking its columns."""
    p = Path(path)
    if p.is_dir():
        p = p / "geometry.csv"
    if not p.is_file():
        raise AnalysisError(f"geometry file {p} does not exist")
    try:
        frame = pd.read_csv(p, dtype={c: str for c in ("layer", "group", "subset", "source", "encoder", "note")})
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{p}: not a readable CSV ({exc})") from exc
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise AnalysisError(f"{p}: missing geometry column(s) {', '.join(missing)}")
    for c in ("encoder", "layer", "source", "subset", "attribute", "axis", "axis_b", "group", "note"):
        frame[c] = frame[c].fillna("").astype(str)
    return frame


def merge(existing: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    """``existing`` without the audits present in ``new``, then ``new`` (one table, many encoders)."""
    if existing is None or existing.empty:
        return new.reset_index(drop=True)
    new_keys = {tuple(str(x) for x in k) for k in new[list(AUDIT_KEY)].itertuples(index=False)}
    keep = [tuple(str(x) for x in k) not in new_keys for k in existing[list(AUDIT_KEY)].itertuples(index=False)]
    return pd.concat([existing[keep], new], ignore_index=True)[list(COLUMNS)]


def _pick(sub: pd.DataFrame, metric: str, **match: str) -> pd.Series | None:
    sel = sub[sub["metric"] == metric]
    for col, val in match.items():
        sel = sel[sel[col] == val]
    return sel.iloc[0] if len(sel) else None


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per audit: F_sem/voice/expr, Λ and ℓ (sem–voice) with m and chance m/d, Γ_acc
    (accent spread of F_sem|g), Γ_gen (gender spread of F_expr|g) with p-values, the accent
    disparities of the sem probe (:data:`DISPARITY_SUMMARY`), the noise floors (``*_noise``, empty
    without ``--noise-floor``), half-widths
    (``*_hw``) and the decomposition residual. A statistic absent from the table stays empty."""
    rows = []
    for key, sub in frame.groupby(list(AUDIT_KEY), sort=True):
        row: dict[str, Any] = dict(zip(AUDIT_KEY, key, strict=True))

        wanted: list[tuple[str, str, dict[str, str], dict[str, str]]] = [
            *((f"F_{a}", "F", {"axis": a}, {}) for a in AXES),
            ("Lambda", "Lambda", {"axis": "sem", "axis_b": "voice"}, {"m": "m", "chance": "chance"}),
            ("ell", "ell", {"axis": "sem", "axis_b": "voice"}, {}),
            ("Gamma_acc", "Gamma", {"attribute": "accent", "axis": "sem"}, {"p_value": "p"}),
            ("Gamma_gen", "Gamma", {"attribute": "gender", "axis": "expr"}, {"p_value": "p"}),
            *((name, name, {"attribute": "accent", "axis": "sem"}, {}) for name in DISPARITY_SUMMARY),
            *((f"F_{a}_noise", "F_noise", {"axis": a}, {}) for a in AXES),
            ("Lambda_noise", "Lambda_noise", {"axis": "sem", "axis_b": "voice"}, {}),
        ]
        for name, metric, match, extra in wanted:
            r = _pick(sub, metric, **match)
            row[name] = r["value"] if r is not None else math.nan
            row[f"{name}_hw"] = r["ci_half_width"] if r is not None else math.nan
            for col, suffix in extra.items():
                row[f"{name}_{suffix}"] = r[col] if r is not None else math.nan
        r = _pick(sub, "decomposition_residual")
        row["decomposition_residual"] = r["value"] if r is not None else math.nan
        row["n_rows"] = sub["n_rows"].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)
