"""The four-term additive contrast and its summaries (DESIGN.md).

For one model and a setting (a ≠ ref_a, b ≠ ref_b) with all four cells measured:
predicted = M(a, ref_b) + M(ref_a, b) − M(ref_a, ref_b); IE = M(a, b) − predicted;
NLI = M(a, b) / predicted, only where predicted > 0. A missing term is listed, never imputed.
Three-factor experiments are contrasted in (a, b) within each level of the third factor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from interbias.errors import AnalysisError

REQUIRED = ("experiment", "model", "factor_a", "level_a", "ref_a", "factor_b", "level_b", "ref_b")
GROUP = ["experiment", "dataset", "model", "family", "factor_a", "ref_a", "factor_b", "ref_b", "factor_c", "level_c"]


@dataclass(frozen=True)
class ContrastTables:
    contrasts: pd.DataFrame
    missing: pd.DataFrame


def _prepare(results: pd.DataFrame) -> pd.DataFrame:
    frame = results.copy()
    for col in GROUP:
        if col not in frame.columns:
            frame[col] = ""
    for col in frame.columns:
        if frame[col].dtype == object:
            frame[col] = frame[col].fillna("")
    return frame


def compute_contrasts(results: pd.DataFrame, metric: str = "eer") -> ContrastTables:
    """Every (a, b) setting per model; complete ones in ``contrasts``, others in ``missing``."""
    frame = _prepare(results)
    frame = frame[frame["factor_b"].astype(str) != ""]
    names = {"ref": f"{metric}_ref", "a": f"{metric}_a", "b": f"{metric}_b", "ab": f"{metric}_ab"}
    rows, missing = [], []
    for key, grp in frame.groupby(GROUP, sort=False, dropna=False):
        info = dict(zip(GROUP, key, strict=True))
        dup = grp.duplicated(["level_a", "level_b"], keep=False)
        if dup.any():
            first = grp[dup].iloc[0]
            raise AnalysisError(
                f"{info['experiment']} / {info['model']}: cell ({first['level_a']}, {first['level_b']}) appears "
                f"{int(dup.sum())} times; one row per experiment × cell × model is expected"
            )
        value = {(r.level_a, r.level_b): float(getattr(r, metric)) for r in grp.itertuples()}
        ref_a, ref_b = info["ref_a"], info["ref_b"]
        levels_a = [x for x in dict.fromkeys(grp["level_a"]) if x != ref_a]
        levels_b = [x for x in dict.fromkeys(grp["level_b"]) if x != ref_b]
        for a in levels_a:
            for b in levels_b:
                terms = {"ref": (ref_a, ref_b), "a": (a, ref_b), "b": (ref_a, b), "ab": (a, b)}
                absent = [t for t, k in terms.items() if k not in value]
                base = {
                    "experiment": info["experiment"],
                    "dataset": info["dataset"],
                    "model": info["model"],
                    "family": info["family"],
                    "factor_a": info["factor_a"],
                    "level_a": a,
                    "ref_a": ref_a,
                    "factor_b": info["factor_b"],
                    "level_b": b,
                    "ref_b": ref_b,
                    "factor_c": info["factor_c"],
                    "level_c": info["level_c"],
                }
                if absent:
                    missing.append(
                        {**base, "missing_terms": ",".join(f"{t}=({terms[t][0]},{terms[t][1]})" for t in absent)}
                    )
                    continue
                m = {t: value[k] for t, k in terms.items()}
                predicted = m["a"] + m["b"] - m["ref"]
                ie = m["ab"] - predicted
                nli = m["ab"] / predicted if predicted > 0 else np.nan
                rows.append(
                    {
                        **base,
                        "metric": metric,
                        names["ref"]: m["ref"],
                        names["a"]: m["a"],
                        names["b"]: m["b"],
                        names["ab"]: m["ab"],
                        "predicted": predicted,
                        "ie": ie,
                        "nli": nli,
                    }
                )
    cols = [
        "experiment",
        "dataset",
        "model",
        "family",
        "factor_a",
        "level_a",
        "ref_a",
        "factor_b",
        "level_b",
        "ref_b",
        "factor_c",
        "level_c",
        "metric",
        *names.values(),
        "predicted",
        "ie",
        "nli",
    ]
    miss_cols = cols[:12] + ["missing_terms"]
    return ContrastTables(pd.DataFrame(rows, columns=cols), pd.DataFrame(missing, columns=miss_cols))


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return np.nan
    return float(np.corrcoef(x, y)[0, 1])


def summarize(contrasts: pd.DataFrame, by: tuple[str, ...] = ("experiment", "family")) -> pd.DataFrame:
    """Per group: n, mean and SD (ddof 1) of IE, percent of IE > 0, mean NLI over positive
    predictions and their count, mean and max prediction, Pearson r(prediction, IE)
    (descriptive: IE contains −prediction, so the two are mathematically coupled)."""
    out = []
    cols = list(by) + [
        "n",
        "mean_ie",
        "sd_ie",
        "pct_positive",
        "mean_nli",
        "n_nli",
        "mean_predicted",
        "max_predicted",
        "r_predicted_ie",
    ]
    if contrasts.empty:
        return pd.DataFrame(columns=cols)
    for key, grp in contrasts.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        ie = grp["ie"].to_numpy(float)
        pred = grp["predicted"].to_numpy(float)
        nli = grp["nli"].to_numpy(float)
        pos = pred > 0
        out.append(
            {
                **dict(zip(by, key, strict=True)),
                "n": len(ie),
                "mean_ie": float(ie.mean()),
                "sd_ie": float(ie.std(ddof=1)) if len(ie) > 1 else np.nan,
                "pct_positive": float(100.0 * (ie > 0).mean()),
                "mean_nli": float(nli[pos].mean()) if pos.any() else np.nan,
                "n_nli": int(pos.sum()),
                "mean_predicted": float(pred.mean()),
                "max_predicted": float(pred.max()),
                "r_predicted_ie": _pearson(pred, ie),
            }
        )
    return pd.DataFrame(out, columns=cols)
