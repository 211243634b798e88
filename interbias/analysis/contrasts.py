"""The additive contrast and its summaries (InterBias-SV), for two- and three-factor experiments.

Two factors x, y (one model; a third factor, if any, held at one level h): for a setting
(x ≠ ref_x, y ≠ ref_y), predicted = M(x, ref_y) + M(ref_x, y) − M(ref_x, ref_y);
IE = M(x, y) − predicted; NLI = M(x, y) / predicted, only where predicted > 0.
Three factors, all away from reference: predicted = M(a,r,r) + M(r,b,r) + M(r,r,c) − 2·M(r,r,r)
(the sum of the three single-factor changes added to the reference); IE and NLI as above.
A setting with a term not measured is listed in ``missing`` with the absent terms, never imputed.

Term columns: ``<metric>_ref`` (the contrast's reference setting), ``<metric>_a|_b|_c`` (the
setting that changes only that factor; empty when the factor is not varied) and
``<metric>_ab`` (the joint cell: every varied factor at its level; for the three-way
contrast that is the a×b×c cell — the name is kept from the two-factor schema). Three-factor experiments give the pairwise contrasts within every level of
the third factor (``contrast`` = "A×B" etc.) and the three-way one ("A×B×C").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from interbias.analysis.stats.replicates import Replicates
from interbias.metrics.registry import chance_levels
from interbias.run.results import NORMALISED, normalise_results
from interbias.utils.errors import AnalysisError

REQUIRED = ("experiment", "model", "factor_a", "level_a", "ref_a")
SLOTS = ("a", "b", "c")
MODEL_KEY = ["experiment", "dataset", "model", "family"]
#: Chance level of metrics that have one (an EER of 0.5; normalised minDCF has none below 1).
CHANCE = chance_levels()
R_NOTE = "descriptive only: IE = observed − prediction, so r(prediction, IE) is mathematically coupled"


@dataclass(frozen=True)
class ContrastTables:
    contrasts: pd.DataFrame
    missing: pd.DataFrame
    #: IE replicates aligned with ``contrasts`` rows (n_contrasts × B), when bootstrapped.
    ie_replicates: np.ndarray | None = None
    #: Per ``contrasts`` row, the IE as Σ coefficient·M(cell): {cell: coefficient}.
    coefficients: tuple[dict[str, float], ...] = ()


def normalised(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` itself when :func:`interbias.analysis.read_results` read it (normalised there,
    once), else :func:`interbias.run.results.normalise_results` of it (a copy): for analyses given a
    table built in memory. Callers only read the table they get."""
    return results if results.attrs.get(NORMALISED) else normalise_results(results)


@dataclass(frozen=True)
class Grid:
    """One experiment × model: its factors (slots in use), references, levels and values."""

    info: dict[str, str]
    slots: tuple[str, ...]
    factor: dict[str, str]
    ref: dict[str, str]
    levels: dict[str, list[str]]
    value: dict[tuple[str, ...], float]
    cell: dict[tuple[str, ...], str]


def grids(results: pd.DataFrame, metric: str) -> list[Grid]:
    """Split a results table into experiment × model grids, checking one row per cell."""
    frame = normalised(results)
    exp_rows = {exp: grp for exp, grp in frame.groupby("experiment", sort=False)}
    out = []
    for key, grp in frame.groupby(MODEL_KEY, sort=False):
        info = dict(zip(MODEL_KEY, key, strict=True))
        slots = tuple(s for s in SLOTS if (grp[f"factor_{s}"] != "").any())
        factor, ref = {}, {}
        for s in slots:
            for col, dest in ((f"factor_{s}", factor), (f"ref_{s}", ref)):
                vals = sorted(set(grp[col]))
                if len(vals) != 1:
                    raise AnalysisError(
                        f"{info['experiment']} / {info['model']}: column {col} takes several values "
                        f"({', '.join(vals)}); one experiment has one set of factors"
                    )
                dest[s] = vals[0]
        level_cols = [f"level_{s}" for s in slots]
        dup = grp.duplicated(level_cols, keep=False)
        if dup.any():
            first = grp[dup].iloc[0]
            same = int((grp[level_cols] == first[level_cols]).all(axis=1).sum())
            raise AnalysisError(
                f"{info['experiment']} / {info['model']}: cell ({', '.join(first[c] for c in level_cols)}) appears "
                f"{same} times; one row per experiment × cell × model is expected"
            )
        value, cell = {}, {}
        for row in grp.itertuples(index=False):
            k = tuple(getattr(row, c) for c in level_cols)
            value[k] = float(getattr(row, metric))
            cell[k] = row.cell
        # levels of the whole experiment: a model lacking a level gets its settings listed missing
        levels = {s: list(dict.fromkeys(exp_rows[info["experiment"]][f"level_{s}"])) for s in slots}
        out.append(Grid(info, slots, factor, ref, levels, value, cell))
    return out


def place(n: int, levels: dict[int, str]) -> tuple[str, ...]:
    """A cell key of ``n`` slots from {slot index: level}."""
    return tuple(levels[i] for i in range(n))


def _settings(g: Grid) -> list[tuple[tuple[str, ...], dict[str, tuple[str, ...]]]]:
    """(varied slots, {term: setting}) for every contrast of a grid."""
    out = []
    n = len(g.slots)
    for varied in itertools.combinations(range(n), 2):
        held = [i for i in range(n) if i not in varied]
        x, y = varied
        sx, sy = g.slots[x], g.slots[y]
        rx, ry = g.ref[sx], g.ref[sy]
        for hl in itertools.product(*[g.levels[g.slots[i]] for i in held]):
            fixed = dict(zip(held, hl, strict=True))
            for lx in [v for v in g.levels[sx] if v != rx]:
                for ly in [v for v in g.levels[sy] if v != ry]:
                    terms = {
                        "ref": place(n, {**fixed, x: rx, y: ry}),
                        sx: place(n, {**fixed, x: lx, y: ry}),
                        sy: place(n, {**fixed, x: rx, y: ly}),
                        "joint": place(n, {**fixed, x: lx, y: ly}),
                    }
                    out.append(((sx, sy), terms))
    if n == 3:
        refs = tuple(g.ref[s] for s in g.slots)
        nonref = [[v for v in g.levels[s] if v != g.ref[s]] for s in g.slots]
        for combo in itertools.product(*nonref):
            terms = {"ref": refs}
            for i, s in enumerate(g.slots):
                terms[s] = tuple(combo[j] if j == i else refs[j] for j in range(3))
            terms["joint"] = tuple(combo)
            out.append((g.slots, terms))
    return out


def _flags(terms: dict[str, float], predicted: float, chance: float | None) -> str:
    flags = []
    if chance is not None and predicted > chance:
        flags.append(f"prediction>{chance:g}")
    if chance is not None and any(v > chance for v in terms.values()):
        flags.append(f"term>{chance:g}")
    if predicted <= 0:
        flags.append("prediction<=0 (no NLI)")
    return ";".join(flags)


def contrast_columns(metric: str) -> list[str]:
    return [
        *MODEL_KEY,
        "contrast",
        *[f"{k}_{s}" for s in SLOTS for k in ("factor", "level", "ref")],
        "metric",
        f"{metric}_ref",
        f"{metric}_a",
        f"{metric}_b",
        f"{metric}_c",
        f"{metric}_ab",
        "predicted",
        "ie",
        "nli",
        "flags",
    ]


def compute_contrasts(
    results: pd.DataFrame, metric: str = "eer", replicates: Replicates | None = None
) -> ContrastTables:
    """Every contrast setting per model; complete ones in ``contrasts``, others in ``missing``.

    With ``replicates``, adds ``ie_lo``/``ie_hi`` (percentile interval of the IE replicates,
    each computed from the same resample for all terms) and the bootstrap stamp columns.
    """
    cols = contrast_columns(metric)
    chance = CHANCE.get(metric)
    rows, missing, ie_reps, coefs = [], [], [], []
    for g in grids(results, metric):
        if len(g.slots) < 2:
            continue
        for varied, terms in _settings(g):
            joint = terms["joint"]
            base = {**g.info, "contrast": "×".join(g.factor[s] for s in varied)}
            for s in SLOTS:
                i = g.slots.index(s) if s in g.slots else None
                base[f"factor_{s}"] = g.factor.get(s, "")
                base[f"level_{s}"] = joint[i] if i is not None else ""
                base[f"ref_{s}"] = g.ref.get(s, "")
            absent = [t for t, k in terms.items() if k not in g.value]
            if absent:
                missing.append({**base, "missing_terms": ",".join(f"{t}=({','.join(terms[t])})" for t in absent)})
                continue
            m = {t: g.value[k] for t, k in terms.items()}
            marg = [t for t in terms if t not in ("ref", "joint")]
            predicted = sum(m[t] for t in marg) - (len(marg) - 1) * m["ref"]
            ie = m["joint"] - predicted
            row = {
                **base,
                "metric": metric,
                f"{metric}_ref": m["ref"],
                **{f"{metric}_{s}": m.get(s, np.nan) for s in SLOTS},
                f"{metric}_ab": m["joint"],
                "predicted": predicted,
                "ie": ie,
                "nli": m["joint"] / predicted if predicted > 0 else np.nan,
                "flags": _flags(m, predicted, chance),
            }
            rows.append(row)
            coef: dict[str, float] = {}
            for t, k in terms.items():
                c = 1.0 if t == "joint" else (len(marg) - 1.0 if t == "ref" else -1.0)
                coef[g.cell[k]] = coef.get(g.cell[k], 0.0) + c
            coefs.append(coef)
            if replicates is not None:
                r = {t: replicates.of(g.info["experiment"], g.info["model"], g.cell[k]) for t, k in terms.items()}
                if any(v is None for v in r.values()):
                    raise AnalysisError(
                        f"no bootstrap replicates for a term of {base['contrast']} in {g.info['model']}"
                    )
                pred_r = sum(r[t] for t in marg) - (len(marg) - 1) * r["ref"]
                ie_reps.append(r["joint"] - pred_r)
    contrasts = pd.DataFrame(rows, columns=cols)
    reps = None
    if replicates is not None:
        reps = np.array(ie_reps).reshape(len(rows), replicates.n_boot)
        lo, hi, n_valid = replicates.ci(reps)
        contrasts["ie_lo"], contrasts["ie_hi"], contrasts["n_boot_valid"] = lo, hi, n_valid
        for k, v in replicates.stamp().items():
            contrasts[k] = v
    miss_cols = cols[: cols.index("metric")] + ["missing_terms"]
    return ContrastTables(contrasts, pd.DataFrame(missing, columns=miss_cols), reps, tuple(coefs))


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return np.nan
    return float(np.corrcoef(x, y)[0, 1])


SUMMARY_BY = ("experiment", "contrast", "family")
PER_MODEL_BY = ("experiment", "contrast", "family", "model")


def summarize(
    contrasts: pd.DataFrame,
    by: tuple[str, ...] = SUMMARY_BY,
    *,
    ie_replicates: np.ndarray | None = None,
    replicates: Replicates | None = None,
) -> pd.DataFrame:
    """Per group: n, mean and SD (ddof 1) of IE, percent of IE > 0, mean NLI over positive
    predictions and their count, mean and max prediction, share of predictions above chance
    (EER 0.5; empty for min_dcf), and Pearson r(prediction, IE) — descriptive: IE contains
    −prediction, so the two are mathematically coupled (``r_note``). With replicates, the
    percentile interval of mean IE (``mean_ie_lo``/``mean_ie_hi``) from the per-replicate means."""
    cols = list(by) + [
        "n",
        "mean_ie",
        "sd_ie",
        "pct_positive",
        "mean_nli",
        "n_nli",
        "mean_predicted",
        "max_predicted",
        "share_predicted_above_chance",
        "r_predicted_ie",
        "r_note",
    ]
    if replicates is not None:
        cols += ["mean_ie_lo", "mean_ie_hi", "n_boot_valid", *replicates.stamp()]
    if contrasts.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for key, grp in contrasts.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        ie = grp["ie"].to_numpy(float)
        pred = grp["predicted"].to_numpy(float)
        nli = grp["nli"].to_numpy(float)
        pos = pred > 0
        chance = CHANCE.get(str(grp["metric"].iloc[0])) if "metric" in grp.columns else 0.5
        row = {
            **dict(zip(by, key, strict=True)),
            "n": len(ie),
            "mean_ie": float(ie.mean()),
            "sd_ie": float(ie.std(ddof=1)) if len(ie) > 1 else np.nan,
            "pct_positive": float(100.0 * (ie > 0).mean()),
            "mean_nli": float(nli[pos].mean()) if pos.any() else np.nan,
            "n_nli": int(pos.sum()),
            "mean_predicted": float(pred.mean()),
            "max_predicted": float(pred.max()),
            "share_predicted_above_chance": float((pred > chance).mean()) if chance is not None else np.nan,
            "r_predicted_ie": _pearson(pred, ie),
            "r_note": R_NOTE,
        }
        if replicates is not None and ie_replicates is not None:
            pos_idx = contrasts.index.get_indexer(grp.index)
            mean_reps = ie_replicates[pos_idx].mean(axis=0)
            lo, hi, n_valid = replicates.ci(mean_reps)
            row.update(mean_ie_lo=float(lo), mean_ie_hi=float(hi), n_boot_valid=int(n_valid), **replicates.stamp())
        out.append(row)
    return pd.DataFrame(out, columns=cols)
