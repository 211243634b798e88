"""Group fairness at one deployment threshold (the deepfake gender-fairness study, Sections II–III).

A threshold is chosen once on development data — its EER threshold, a fixed value, or the
lowest threshold whose FAR is at most a target — and applied unchanged to every group (and
every evaluation condition) of the evaluation data. A trial is *accepted* when its score is
≥ the threshold. Scores follow the interbias convention: higher = more acceptable, label 1 =
should be accepted (target trial, or bona fide audio for a countermeasure), label 0 = should
be rejected (non-target, or spoof).

The **positive class** states what a "positive" is:

- ``accept`` (speaker verification): predicted positive = accepted, actual positive = label 1;
- ``spoof`` (countermeasure, the deepfake gender-fairness study's setting): predicted positive = rejected (flagged as
  spoof), actual positive = label 0 (spoof).

Per group g, from TP, FP, TN, FN at the threshold:

==================== ================================= ===============================
metric               value                             test compares
==================== ================================= ===============================
statistical_parity   P(Ŷ=1) = (TP+FP) / n              TP+FP of n
equal_opportunity    TPR = TP / (TP+FN)                TP of TP+FN
equality_of_odds     FPR = FP / (FP+TN)                FP of FP+TN
predictive_parity    PPV = TP / (TP+FP)                TP of TP+FP
treatment_equality   TE = FP / FN                      FP of FP+FN (TE = q/(1−q) is
                                                       monotone in q = FP/(FP+FN))
==================== ================================= ===============================

``far`` = P(accept | label 0) and ``frr`` = P(reject | label 1) are reported per group too;
they equal FPR and 1 − TPR (positive ``accept``) or 1 − TPR and FPR (positive ``spoof``), so
they are not tested a second time. A metric whose denominator is zero is NaN with a note saying
which count is zero (TE with FN = 0 included); a z-test whose group has an empty denominator, or
whose pooled proportion is 0 or 1, has no p-value and says so.

A trial belongs to a group when both of its sides do (enrolment and test carry the same value);
other pairs form the ``mixed`` group and trials lacking the attribute the ``missing`` group —
both are reported, not compared. Differences are group_a − group_b for each pair of groups in
sorted order. The default test is clustered by speaker: z = (p̂_a − p̂_b) / SE with SE from a
speaker bootstrap (:mod:`interbias.analysis.groups.fairness_cluster`). ``trial-z`` is the pooled
two-proportion test, z = (p̂_a − p̂_b) / √(p̄(1−p̄)(1/n_a + 1/n_b)), which assumes independent
trials. Both are two-sided; p-values are Holm-adjusted across all comparisons of a report
(statsmodels ``multipletests(method="holm")``), and the report states that family.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from interbias.analysis.groups.fairness_cluster import (
    DEFAULT_BOOT,
    TEST_LABELS,
    SpeakerBootstrap,
    check_test,
    clustered_z,
    group_speakers,
    tested_indicators,
    too_few_speakers,
    unit_rng,
)
from interbias.analysis.stats.cost import check_boot_time
from interbias.experiments.decision_spec import OperatingPoint
from interbias.run.calibrate import group_values
from interbias.utils import atomic
from interbias.utils.budget import TIME_LIMIT_S
from interbias.utils.errors import AnalysisError

POSITIVES = ("accept", "spoof")
MIXED, MISSING, ALL = "mixed", "missing", "all"
#: metric -> (description of its value, of the counts its test compares)
METRICS: dict[str, tuple[str, str]] = {
    "statistical_parity": ("(TP+FP)/n", "TP+FP of n"),
    "equal_opportunity": ("TP/(TP+FN)", "TP of TP+FN"),
    "equality_of_odds": ("FP/(FP+TN)", "FP of FP+TN"),
    "predictive_parity": ("TP/(TP+FP)", "TP of TP+FP"),
    "treatment_equality": ("FP/FN", "FP of FP+FN"),
}
SPOOF_METRIC = "spoof_far"
#: The columns of the two tables ``interbias scores fairness`` prints (present ones only).
GROUP_TABLE = (
    "model",
    "condition",
    "group_by",
    "group",
    "n",
    "speakers",
    "threshold",
    "far",
    "frr",
    *METRICS,
    SPOOF_METRIC,
    "act_dcf",
    "calibration_loss",
    "cdet",
    "note",
)
COMPARISON_TABLE = (
    "model",
    "condition",
    "group_by",
    "metric",
    "group_a",
    "group_b",
    "value_a",
    "value_b",
    "difference",
    "se",
    "z",
    "p_value",
    "p_holm",
    "significant",
    "note",
)


# ---- thresholds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Threshold:
    value: float
    rule: str
    source: str


# ---- counts and metrics ---------------------------------------------------------------------


@dataclass(frozen=True)
class Confusion:
    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn


def confusion(scores: np.ndarray, labels: np.ndarray, threshold: float, positive: str) -> Confusion:
    """TP/FP/TN/FN at ``threshold`` (accept when score ≥ threshold) for the positive class."""
    if positive not in POSITIVES:
        raise AnalysisError(f"positive class {positive!r}: valid: {', '.join(POSITIVES)}")
    accept = np.asarray(scores, dtype=np.float64) >= threshold
    good = np.asarray(labels).astype(bool)
    pred, actual = (accept, good) if positive == "accept" else (~accept, ~good)
    return Confusion(
        tp=int((pred & actual).sum()),
        fp=int((pred & ~actual).sum()),
        tn=int((~pred & ~actual).sum()),
        fn=int((~pred & actual).sum()),
    )


def metric_counts(c: Confusion, name: str) -> tuple[int, int, int, int]:
    """(value numerator, value denominator, test successes, test trials) of a metric."""
    if name == "statistical_parity":
        return c.tp + c.fp, c.n, c.tp + c.fp, c.n
    if name == "equal_opportunity":
        return c.tp, c.tp + c.fn, c.tp, c.tp + c.fn
    if name == "equality_of_odds":
        return c.fp, c.fp + c.tn, c.fp, c.fp + c.tn
    if name == "predictive_parity":
        return c.tp, c.tp + c.fp, c.tp, c.tp + c.fp
    if name == "treatment_equality":
        return c.fp, c.fn, c.fp, c.fp + c.fn
    raise AnalysisError(f"unknown fairness metric {name!r}; valid: {', '.join(METRICS)}")


_ZERO = {
    "statistical_parity": "no trials",
    "equal_opportunity": "TP+FN = 0 (no actual positives)",
    "equality_of_odds": "FP+TN = 0 (no actual negatives)",
    "predictive_parity": "TP+FP = 0 (no predicted positives)",
    "treatment_equality": "FN = 0",
    SPOOF_METRIC: "no spoof trials",
}


def ratio(num: int, den: int) -> float:
    return num / den if den > 0 else math.nan


def two_proportion_ztest(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float, str]:
    """Pooled two-proportion z-test, two-sided: (z, p, note); NaN with a note when undefined."""
    if n1 <= 0 or n2 <= 0:
        return math.nan, math.nan, "not tested: a group has an empty denominator"
    pooled = (x1 + x2) / (n1 + n2)
    if pooled <= 0 or pooled >= 1:
        return math.nan, math.nan, f"not tested: pooled proportion is {pooled:g} (zero variance)"
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    z = (x1 / n1 - x2 / n2) / se
    return z, float(2 * norm.sf(abs(z))), ""


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p-values and rejections (statsmodels); NaN entries stay NaN / not rejected."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=np.float64)
    adj = np.full(len(p), np.nan)
    rej = np.zeros(len(p), dtype=bool)
    ok = np.isfinite(p)
    if ok.any():
        r, a, _, _ = multipletests(p[ok], alpha=alpha, method="holm")
        adj[ok], rej[ok] = a, r
    return adj, rej


# ---- groups -----------------------------------------------------------------------------------


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v == "")


def _labels(values: Sequence[Any]) -> np.ndarray:
    """Each value as ``str``, or ``None`` where :func:`_missing` (mapped once per distinct value)."""
    codes, uniq = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    names = np.array([None if _missing(u) else str(u) for u in uniq] + [None], dtype=object)
    return names[codes]  # the NA sentinel −1 picks the trailing None


def pair_groups(enrol: Sequence[Any], test: Sequence[Any]) -> np.ndarray:
    """Group of each trial: the value both sides share, ``mixed`` when they differ, ``missing``
    when a side lacks it."""
    if len(enrol) != len(test):
        raise ValueError(f"pair_groups: {len(enrol)} enrolment values but {len(test)} test values")
    a, b = _labels(enrol), _labels(test)
    out = np.where(a == b, a, MIXED).astype(object)
    out[pd.isna(a) | pd.isna(b)] = MISSING
    return out


def single_groups(values: Sequence[Any]) -> np.ndarray:
    """Group of each trial from one value per trial (``missing`` when absent)."""
    out = _labels(values)
    out[pd.isna(out)] = MISSING
    return out


# ---- the report ------------------------------------------------------------------------------


@dataclass
class Unit:
    """One evaluation unit (e.g. one model under one condition) with its threshold.

    ``types`` (optional) marks trials as target, nontarget or spoof; spoof trials are left out
    of the confusion counts and give the ``spoof_far`` metric.
    """

    keys: dict[str, str]
    scores: np.ndarray
    labels: np.ndarray
    groups: dict[str, np.ndarray]
    threshold: Threshold
    types: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)
    #: The run's shared calibration (slope, offset) and operating point: adds act_dcf,
    #: calibration_loss and cllr per group (:func:`interbias.run.calibrate.group_values`).
    calibration: tuple[tuple[float, float], OperatingPoint] | None = None
    #: Per trial, its enrolment and test speaker: the clusters of the speaker test.
    speakers: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class FairnessReport:
    """``groups``: one row per unit × attribute × group (plus ``all``); ``comparisons``: one row
    per unit × attribute × metric × pair of groups, Holm-adjusted across the whole report."""

    groups: pd.DataFrame
    comparisons: pd.DataFrame
    positive: str
    alpha: float
    test: str = "speaker"
    #: One sentence: which comparisons form the family, which test, which adjustment.
    family: str = ""

    def write(self, folder: Path) -> list[Path]:
        """The comparisons and the per-group values, named as in a run directory
        (:data:`interbias.run.rundir.FAIRNESS`, :data:`~interbias.run.rundir.FAIRNESS_GROUPS`)."""
        from interbias.run.rundir import FAIRNESS, FAIRNESS_GROUPS

        paths = [Path(folder) / FAIRNESS, Path(folder) / FAIRNESS_GROUPS]
        atomic.write_csv(paths[0], self.comparisons)
        atomic.write_csv(paths[1], self.groups)
        return paths

    def to_json(self) -> str:
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: (None if isinstance(v, float) and not math.isfinite(v) else _plain(v)) for k, v in r.items()}
                for r in frame.to_dict(orient="records")
            ]

        return json.dumps(
            {
                "positive": self.positive,
                "alpha": self.alpha,
                "test": self.test,
                "family": self.family,
                "groups": records(self.groups),
                "comparisons": records(self.comparisons),
            }
        )


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if v is pd.NA:
        return None
    return v


def _group_row(
    keys: dict[str, str], attr: str, group: str, kind: str, c: Confusion, thr: Threshold, positive: str
) -> dict[str, Any]:
    neg_label = c.fp + c.tn if positive == "accept" else c.tp + c.fn  # label-0 trials
    pos_label = c.n - neg_label
    acc_neg = c.fp if positive == "accept" else c.fn  # label-0 trials accepted
    rej_pos = c.fn if positive == "accept" else c.fp  # label-1 trials rejected
    row: dict[str, Any] = {
        **keys,
        "group_by": attr,
        "group": group,
        "kind": kind,
        "positive": positive,
        "threshold": thr.value,
        "threshold_rule": thr.rule,
        "threshold_source": thr.source,
        "n": c.n,
        "n_label1": pos_label,
        "n_label0": neg_label,
        "tp": c.tp,
        "fp": c.fp,
        "tn": c.tn,
        "fn": c.fn,
        "far": ratio(acc_neg, neg_label),
        "frr": ratio(rej_pos, pos_label),
    }
    notes = []
    for name in METRICS:
        num, den, _, _ = metric_counts(c, name)
        row[name] = ratio(num, den)
        if den == 0:
            notes.append(f"{name} undefined: {_ZERO[name]}")
    row["note"] = "; ".join(notes)
    return row


def _comparison(
    unit: Unit,
    attr: str,
    name: str,
    pair: tuple[str, str],
    conf: dict[str, Confusion],
    spoofs: dict[str, tuple[int, int]],
    positive: str,
    cluster: Callable[[str, str, str], tuple[float, float, float, str]] | None,
) -> dict[str, Any]:
    """One metric compared between two groups of one unit: the two-proportion z-test on trial
    counts, or ``cluster(metric, group_a, group_b)`` -> (z, p, SE, note) (the speaker test)."""
    ga, gb = pair
    if name == SPOOF_METRIC:
        (xa, na), (xb, nb) = spoofs[ga], spoofs[gb]
        va, vb, tested = ratio(xa, na), ratio(xb, nb), "accepted of spoof trials"
        notes = [f"{g}: {_ZERO[name]}" for g, n_ in ((ga, na), (gb, nb)) if n_ == 0]
    else:
        na_v, da, xa, na = metric_counts(conf[ga], name)
        nb_v, db, xb, nb = metric_counts(conf[gb], name)
        va, vb, tested = ratio(na_v, da), ratio(nb_v, db), METRICS[name][1]
        notes = [f"{g}: {_ZERO[name]}" for g, d in ((ga, da), (gb, db)) if d == 0]
    if cluster is None:
        z, p, tnote = two_proportion_ztest(xa, na, xb, nb)
        se = math.nan
    else:
        z, p, se, tnote = cluster(name, ga, gb)
    if tnote:
        notes.append(tnote)
    return {
        **unit.keys,
        "group_by": attr,
        "metric": name,
        "positive": positive,
        "group_a": ga,
        "group_b": gb,
        "value_a": va,
        "value_b": vb,
        "difference": va - vb,
        "tested": tested,
        "x_a": xa,
        "n_a": na,
        "x_b": xb,
        "n_b": nb,
        "se": se,
        "z": z,
        "p_value": p,
        "threshold": unit.threshold.value,
        "threshold_rule": unit.threshold.rule,
        "note": "; ".join(notes),
    }


def fairness_report(
    units: Sequence[Unit],
    *,
    positive: str = "accept",
    alpha: float = 0.05,
    test: str = "speaker",
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
    time_limit_s: float | None = TIME_LIMIT_S,
) -> FairnessReport:
    """Per-group metrics and pairwise comparisons of every unit; Holm across all p-values.

    ``test``: ``speaker`` (the speaker-clustered bootstrap test of
    :mod:`interbias.analysis.groups.fairness_cluster`, ``n_boot`` replicates; every unit needs
    ``speakers``) or ``trial-z`` (the two-proportion z-test, which assumes independent trials).
    """
    if positive not in POSITIVES:
        raise AnalysisError(f"positive class {positive!r}: valid: {', '.join(POSITIVES)}")
    check_test(test)
    if test == "speaker" and n_boot < 50:
        raise AnalysisError(f"the speaker test needs at least 50 bootstrap replicates (got {n_boot})")
    if test == "speaker":  # one resample per unit × group column, its totals over the unit's trials
        weights = sum(len(u.scores) * len(u.groups) for u in units)
        each = f"{weights:,} trial weights of {sum(len(u.groups) for u in units)} unit × group column(s)"
        check_boot_time(n_boot, weights, each, limit_s=time_limit_s)
    group_rows: list[dict[str, Any]] = []
    comp_rows: list[dict[str, Any]] = []
    for unit in units:
        s = np.asarray(unit.scores, dtype=np.float64)
        lab = np.asarray(unit.labels).astype(np.int64)
        if len(s) != len(lab):
            raise AnalysisError(f"{unit.keys}: scores ({len(s)}) and labels ({len(lab)}) differ in length")
        if not np.isfinite(s).all():
            raise AnalysisError(f"{unit.keys}: {int((~np.isfinite(s)).sum())} score(s) are NaN or infinite")
        if test == "speaker" and unit.speakers is None:
            raise AnalysisError(
                f"{unit.keys or 'the scores'}: the speaker test needs each trial's speakers "
                "(use --test trial-z for the z-test that assumes independent trials)"
            )
        types = None if unit.types is None else np.asarray(unit.types).astype(str)
        spoof = np.zeros(len(s), bool) if types is None else types == "spoof"
        for attr, glabels in unit.groups.items():
            glabels = np.asarray(glabels, dtype=object)
            if len(glabels) != len(s):
                raise AnalysisError(f"{unit.keys}: group column {attr!r} has {len(glabels)} values for {len(s)} trials")
            pure = sorted({g for g in glabels[~spoof] if g not in (MIXED, MISSING)})
            start = len(group_rows)
            conf, spoofs = _group_rows(unit, attr, glabels, pure, s, lab, spoof, positive, group_rows)
            counts = group_speakers(unit.speakers, glabels.astype(str), pure, ~spoof)
            for row in group_rows[start:]:
                row["speakers"] = counts.get(row["group"], np.nan)
            cluster = (
                None
                if test != "speaker"
                else _cluster(unit, attr, glabels, pure, s, lab, spoof, positive, n_boot, seed)
            )
            names = list(METRICS) + ([SPOOF_METRIC] if types is not None else [])
            for name in names:
                for i, ga in enumerate(pure):
                    for gb in pure[i + 1 :]:
                        row = _comparison(unit, attr, name, (ga, gb), conf, spoofs, positive, cluster)
                        if cluster is None and (few := too_few_speakers(counts, ga, gb)):
                            row.update(z=math.nan, p_value=math.nan, note="; ".join(filter(None, [row["note"], few])))
                        comp_rows.append(row)
    comparisons = _adjusted(pd.DataFrame(comp_rows), alpha, test)
    groups = pd.DataFrame(group_rows)
    if len(groups) and "note" in groups:
        groups = groups[[c for c in groups.columns if c != "note"] + ["note"]]
    return FairnessReport(groups, comparisons, positive, alpha, test, family_statement(comparisons, alpha, test))


def _group_rows(
    unit: Unit,
    attr: str,
    glabels: np.ndarray,
    pure: list[str],
    s: np.ndarray,
    lab: np.ndarray,
    spoof: np.ndarray,
    positive: str,
    out: list[dict[str, Any]],
) -> tuple[dict[str, Confusion], dict[str, tuple[int, int]]]:
    """Append one row per group of ``attr`` (plus ``all``, mixed, missing) to ``out``; return the
    confusion counts and the (accepted, total) spoof counts of each group."""
    bona, thr = ~spoof, unit.threshold.value
    conf: dict[str, Confusion] = {}
    spoofs: dict[str, tuple[int, int]] = {}
    for group, kind, mask in [
        (ALL, "all", np.ones(len(s), bool)),
        *[(g, "group", glabels == g) for g in pure],
        *[(g, g, glabels == g) for g in (MIXED, MISSING) if (glabels[bona] == g).any()],
    ]:
        m = mask & bona
        c = confusion(s[m], lab[m], thr, positive)
        conf[group] = c
        row = _group_row(unit.keys, attr, group, kind, c, unit.threshold, positive)
        if unit.types is not None:
            ms = mask & spoof
            spoofs[group] = (int((s[ms] >= thr).sum()), int(ms.sum()))
            row["n_spoof"] = spoofs[group][1]
            row[SPOOF_METRIC] = ratio(*spoofs[group])
        row.update(unit.info)
        if unit.calibration is not None:
            row.update(group_values(s[m], lab[m], *unit.calibration))
        out.append(row)
    return conf, spoofs


def _cluster(
    unit: Unit,
    attr: str,
    glabels: np.ndarray,
    pure: list[str],
    s: np.ndarray,
    lab: np.ndarray,
    spoof: np.ndarray,
    positive: str,
    n_boot: int,
    seed: int,
) -> Callable[[str, str, str], tuple[float, float, float, str]]:
    """The speaker test of one unit × attribute: one speaker resample over its compared trials."""
    assert unit.speakers is not None
    keep = np.isin(glabels.astype(str), pure)
    enrol, test = (np.asarray(x)[keep] for x in unit.speakers)
    g, sp = glabels[keep].astype(str), spoof[keep]
    boot = SpeakerBootstrap.draw(enrol, test, g, n_boot=n_boot, rng=unit_rng(seed, attr))
    accept = s[keep] >= unit.threshold.value
    good = lab[keep].astype(bool)
    pred, actual = (accept, good) if positive == "accept" else (~accept, ~good)

    def counts(name: str, group: str) -> tuple[np.ndarray, np.ndarray]:
        if name == SPOOF_METRIC:
            m = sp & (g == group)
            return (accept & m).astype(float), m.astype(float)
        x, n = tested_indicators(pred, actual, name)
        m = ~sp & (g == group)
        return (x & m).astype(float), (n & m).astype(float)

    return lambda name, ga, gb: clustered_z(boot, counts(name, ga), counts(name, gb))


def _adjusted(comparisons: pd.DataFrame, alpha: float, test: str) -> pd.DataFrame:
    """Holm across every p-value of the report; ``test`` names the test on each row."""
    if not len(comparisons):
        return comparisons
    adj, rej = holm(comparisons["p_value"].to_numpy(), alpha)
    comparisons["p_holm"] = adj
    sig = pd.array(rej, dtype="boolean")
    sig[~np.isfinite(adj)] = pd.NA
    comparisons["significant"] = sig
    comparisons["n_tests"] = int(np.isfinite(adj).sum())
    comparisons["test"] = test
    order = [c for c in comparisons.columns if c not in ("threshold", "threshold_rule", "note")]
    return comparisons[[*order, "threshold", "threshold_rule", "note"]]


def family_statement(comparisons: pd.DataFrame, alpha: float, test: str) -> str:
    """The family the report adjusts over, in one sentence."""
    if not len(comparisons):
        return "no comparisons (fewer than two groups)"
    n = int(np.isfinite(comparisons["p_value"].to_numpy(dtype=float)).sum())
    units = [c for c in ("experiment", "model", "condition", "cell") if c in comparisons.columns]
    parts = [f"{comparisons[c].nunique()} {c}(s)" for c in units if comparisons[c].nunique() > 1 or c == "model"]
    parts += [
        f"{comparisons['metric'].nunique()} metric(s)",
        f"{len(comparisons.drop_duplicates(['group_by', 'group_a', 'group_b']))} group pair(s)",
    ]
    untested = len(comparisons) - n
    return (
        f"family: {n} comparison(s) ({' x '.join(parts)}"
        + (f"; {untested} not tested" if untested else "")
        + f"), Holm-adjusted together at alpha {alpha:g}; test: {TEST_LABELS[test]}"
    )
