"""ASV + CM score fusion (the ASVspoof 5 SASV baselines) and its evaluation per condition and group.

Two fused scores of a trial from its calibrated ASV llr (target vs non-target) and CM llr
(bona fide vs spoof), both natural-log LLRs:

- ``sum``: llr_asv + llr_cm (the sum of calibrated LLRs);
- ``product``: P(target | asv)·P(bona fide | cm) with P = σ(llr + logit π) at the priors
  π_asv, π_cm (the product of posteriors), a score in [0, 1].

:func:`sasv_table` evaluates both per (condition, group): the a-DCF of each fused score
(:func:`interbias.metrics.sasv.a_dcf`, ASVspoof 5 costs) and the concurrent t-EER of the ASV
and CM scores in tandem (:func:`interbias.metrics.sasv.t_eer`; the t-EER takes the two scores
separately, so it is one value per slice, not per fusion).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from interbias.metrics.sasv import ADCFCost, a_dcf, t_eer
from interbias.utils.errors import MetricError

KEYS = ("target", "nontarget", "spoof")
COLUMNS = ["a_dcf_sum", "a_dcf_product", "t_eer", "n_target", "n_nontarget", "n_spoof"]


def _posterior(llr: np.ndarray, prior: float) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * (llr + math.log(prior / (1 - prior)))))


def sum_fusion(asv_llr: object, cm_llr: object) -> np.ndarray:
    """llr_asv + llr_cm per trial."""
    return np.asarray(asv_llr, dtype=np.float64) + np.asarray(cm_llr, dtype=np.float64)


def product_fusion(asv_llr: object, cm_llr: object, *, prior_asv: float = 0.5, prior_cm: float = 0.5) -> np.ndarray:
    """σ(llr_asv + logit π_asv)·σ(llr_cm + logit π_cm) per trial (see the module doc)."""
    for name, p in (("prior_asv", prior_asv), ("prior_cm", prior_cm)):
        if not 0.0 < p < 1.0:
            raise MetricError(f"{name} {p} is outside (0, 1)")
    a = _posterior(np.asarray(asv_llr, dtype=np.float64), prior_asv)
    return a * _posterior(np.asarray(cm_llr, dtype=np.float64), prior_cm)


def sasv_row(frame: pd.DataFrame, cost: ADCFCost) -> dict[str, float | int]:
    """a-DCF of both fusions and the t-EER of one slice: columns ``asv_llr``, ``cm_llr``, ``key``."""
    parts = {k: frame[frame["key"] == k] for k in KEYS}
    if any(not len(p) for p in parts.values()):
        raise MetricError("a slice needs target, nontarget and spoof trials")
    fused = {
        "sum": {k: sum_fusion(p["asv_llr"], p["cm_llr"]) for k, p in parts.items()},
        "product": {k: product_fusion(p["asv_llr"], p["cm_llr"]) for k, p in parts.items()},
    }
    out: dict[str, float | int] = {f"a_dcf_{n}": a_dcf(*(f[k] for k in KEYS), cost)[0] for n, f in fused.items()}
    bona = pd.concat([parts["target"], parts["nontarget"]])
    out["t_eer"] = t_eer(
        parts["target"]["asv_llr"], parts["nontarget"]["asv_llr"], parts["spoof"]["asv_llr"],
        bona["cm_llr"], parts["spoof"]["cm_llr"],
    ).t_eer  # fmt: skip
    out.update({f"n_{k}": len(p) for k, p in parts.items()})
    return out


def sasv_table(frame: pd.DataFrame, by: Sequence[str], cost: ADCFCost = ADCFCost()) -> pd.DataFrame:
    """:func:`sasv_row` per combination of the ``by`` columns (e.g. condition, group), sorted."""
    missing = [c for c in ("asv_llr", "cm_llr", "key", *by) if c not in frame.columns]
    if missing:
        raise MetricError(f"SASV fusion needs column(s) {', '.join(missing)}")
    rows = []
    for key, part in frame.groupby(list(by), sort=True):
        values = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, values, strict=True)), **sasv_row(part, cost)})
    return pd.DataFrame(rows, columns=[*by, *COLUMNS])


def read_fusion_trials(path: object, by: Sequence[str]) -> pd.DataFrame:
    """A CSV of trials with ``asv_llr``, ``cm_llr`` (numbers), ``key`` (target|nontarget|spoof)
    and the ``by`` columns; :class:`MetricError` naming the file and the first bad value."""
    from pathlib import Path

    from interbias.utils.csvfile import read_frame

    frame = read_frame(Path(str(path)), what="SASV fusion trials", error=MetricError)
    missing = [c for c in ("asv_llr", "cm_llr", "key", *by) if c not in frame.columns]
    if missing:
        raise MetricError(f"{path}: lacks column(s) {', '.join(missing)} (needs asv_llr, cm_llr, key)")
    bad_key = sorted(set(frame["key"]) - set(KEYS))
    if bad_key:
        raise MetricError(f"{path}: key {bad_key[0]!r} is not one of {', '.join(KEYS)}")
    for col in ("asv_llr", "cm_llr"):
        values = pd.to_numeric(frame[col], errors="coerce")
        if not np.isfinite(values).all():
            row = int(np.flatnonzero(~np.isfinite(values.to_numpy()))[0])
            raise MetricError(f"{path}: {col} {frame[col].iloc[row]!r} on data line {row + 1} is not a finite number")
        frame[col] = values.astype(np.float64)
    return frame
