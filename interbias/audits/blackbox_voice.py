"""The black-box protocol's voice axis and its per-group invariance ratios (TRIAD/ORCA IV, R_voice).

**Voice variants** (``prepare --voice-variants N``): a trial that keeps every text and style of its
base trial and changes only the voice. A non-target family's test utterance is re-spoken by
another speaker ``X`` (not the enrolled one, not the base test's); a target family's enrolment
*and* test are both re-spoken by ``X`` (the label stays ``target``). ``X`` is drawn ``N`` times
among the speakers of the replaced speaker's group (``level`` ``within:X``) and ``N`` times among
the other groups' speakers (``across:X``); a group is the joint value of the ``--groups``
attributes. Refused when a group holds a single speaker (no within-group variant exists).

**Per-group ratios** (``analyze``): for every axis present and every group of each attribute
(the base trial's enrolled speaker's group), ``R_{a|g}`` = share of the group's axis-``a`` variants
whose decision differs from their base trial's, with a 95 % percentile interval from a speaker
bootstrap (the enrolled speakers resampled with replacement within each group, every family of a
drawn speaker kept; ``n_boot`` draws from ``derive_rng("blackbox-bootstrap", seed, attr, axis)``);
and the worst-to-best ratio ``max_g R_{a|g} / min_g R_{a|g}`` with its interval from the same
draws (undefined — ``nan`` — when the best group's ratio is 0; ``n`` counts the draws where it
was defined).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from interbias.utils.errors import AnalysisError

#: The voice axis splits into these two kinds (the ``level`` prefix).
KINDS = ("within", "across")
#: Bootstrap draws of the per-group intervals.
N_BOOT = 1000


def joint_groups(manifest: Any, groups: Sequence[str]) -> dict[str, str]:
    """Each speaker's joint group (``|``-joined values of ``groups``; ``all`` with no attributes)."""
    out: dict[str, str] = {}
    for u in manifest:
        out[u.speaker] = "|".join(str(u.get(a)) for a in groups) if groups else "all"
    return out


def check_voice_axis(group_of: Mapping[str, str], groups: Sequence[str]) -> None:
    """Refuse a voice axis when some group has a single speaker (or there is only one group)."""
    sizes: dict[str, int] = {}
    for g in group_of.values():
        sizes[g] = sizes.get(g, 0) + 1
    lonely = sorted(g for g, n in sizes.items() if n < 2)
    what = " × ".join(groups) or "(no groups)"
    if lonely:
        raise AnalysisError(
            f"blackbox prepare: a voice axis needs at least 2 speakers in every group of {what}; "
            f"{len(lonely)} of {len(sizes)} groups have one (first: {lonely[0]!r}); pass coarser --groups"
        )
    if len(sizes) < 2:
        raise AnalysisError(f"blackbox prepare: a voice axis needs at least 2 groups of {what}; found 1")


def voice_rows(
    base: dict[str, Any],
    index: Mapping[tuple[str, str, str], Any],
    group_of: Mapping[str, str],
    first_text: str,
    n: int,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """The voice variants of one base row (a row dict of :func:`interbias.audits.blackbox.prepare`)."""
    target = base["label"] == "target"
    replaced = base["test_speaker"]
    text, style = base["text"], base["style"]
    excluded = {base["enrol_speaker"], replaced}
    usable = [
        s
        for s in sorted(group_of)
        if s not in excluded and (s, text, style) in index and (not target or (s, first_text, style) in index)
    ]
    rows = []
    for pairing in KINDS:
        same = pairing == "within"
        pool = [s for s in usable if (group_of[s] == group_of[replaced]) == same]
        for i in rng.permutation(len(pool))[:n]:
            spk = pool[int(i)]
            row = dict(base, axis="voice", level=f"{pairing}:{spk}", test_speaker=spk, _test=index[(spk, text, style)])
            row["test"] = row["_test"].id
            if target:
                row.update(enrol_speaker=spk, _enrol=index[(spk, first_text, style)])
                row["enrol"] = row["_enrol"].id
            rows.append(row)
    return rows


# ---- analysis -------------------------------------------------------------------------------------


def _flips(frame: pd.DataFrame) -> pd.DataFrame:
    """Variant rows with ``flip`` (decision differs from the base's) and the base's enrolled speaker."""
    base = frame[frame["axis"] == "base"].set_index("family")
    var = frame[frame["axis"] != "base"].copy()
    ref = base.loc[var["family"]]
    var["flip"] = var["decision"].to_numpy() != ref["decision"].to_numpy()
    var["base_speaker"] = ref["enrol_speaker"].to_numpy()
    levels = var["level"].astype(str) if "level" in var.columns else pd.Series([""] * len(var), index=var.index)
    var["kind"] = [
        f"voice:{lv.split(':', 1)[0]}" if ax == "voice" else ax for ax, lv in zip(var["axis"], levels, strict=True)
    ]
    return var


def _row(metric: str, **kw: Any) -> dict[str, Any]:
    """A result row (the table's other columns are left empty)."""
    return {"metric": metric, **kw}


def voice_rows_overall(frame: pd.DataFrame, has_scores: bool) -> list[dict[str, Any]]:
    """``invariance_violation`` (and ``mean_abs_shift``) of the ``voice:within``/``voice:across`` kinds."""
    var = _flips(frame)
    rows = []
    base_score = frame[frame["axis"] == "base"].set_index("family")["score"] if has_scores else None
    for kind in (f"voice:{k}" for k in KINDS):
        sel = var[var["kind"] == kind]
        rows.append(
            _row("invariance_violation", axis=kind, value=sel["flip"].mean() if len(sel) else math.nan, n=len(sel))
        )
        if base_score is not None:
            shift = np.abs(sel["score"].to_numpy() - base_score.loc[sel["family"]].to_numpy())
            rows.append(_row("mean_abs_shift", axis=kind, value=shift.mean() if len(sel) else math.nan, n=len(sel)))
    return rows


def group_invariance_rows(
    frame: pd.DataFrame, groups: Sequence[str], *, seed: int, n_boot: int = N_BOOT
) -> list[dict[str, Any]]:
    """``invariance_violation_group`` per attribute × group × axis with speaker-bootstrap intervals,
    and ``invariance_worst_to_best`` per attribute × axis."""
    from interbias.utils.seeding import derive_rng

    var = _flips(frame)
    base = frame[frame["axis"] == "base"]
    rows: list[dict[str, Any]] = []
    axes = [a for a in ("style", "text", "noise", "voice", "voice:within", "voice:across") if _has(var, a)]
    for attr in groups:
        of_speaker = dict(zip(base["enrol_speaker"], base[attr].astype(str), strict=True))
        names = sorted(of_speaker)
        by_group = {g: [s for s in names if of_speaker[s] == g] for g in sorted(set(of_speaker.values()))}
        for axis in axes:
            sel = var[var["axis"] == axis] if axis == "voice" else var[var["kind"] == axis]
            flips = sel.groupby("base_speaker")["flip"].agg(["sum", "count"]).reindex(names, fill_value=0)
            rng = derive_rng("blackbox-bootstrap", seed, attr, axis)
            rows += _group_rows(attr, axis, by_group, flips, rng, n_boot)
    return rows


def _has(var: pd.DataFrame, axis: str) -> bool:
    return bool((var["axis"] == axis).any() if axis == "voice" else (var["kind"] == axis).any())


def _group_rows(
    attr: str,
    axis: str,
    by_group: Mapping[str, list[str]],
    flips: pd.DataFrame,
    rng: np.random.Generator,
    n_boot: int,
) -> list[dict[str, Any]]:
    """One attribute × axis: the groups' ratios with intervals and the worst-to-best ratio."""
    hits, counts = flips["sum"].to_numpy(dtype=float), flips["count"].to_numpy(dtype=float)
    pos = {s: i for i, s in enumerate(flips.index)}
    boot = {}
    rows = []
    for g, speakers in by_group.items():
        idx = np.asarray([pos[s] for s in speakers])
        draws = idx[rng.integers(0, len(idx), size=(n_boot, len(idx)))]
        num, den = hits[draws].sum(axis=1), counts[draws].sum(axis=1)
        boot[g] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
        n = float(counts[idx].sum())
        value = float(hits[idx].sum()) / n if n else math.nan
        lo, hi = _interval(boot[g])
        rows.append(
            _row("invariance_violation_group", axis=axis, attribute=attr, group=g, value=value, n=int(n))
            | {"ci_low": lo, "ci_high": hi, "note": f"speaker bootstrap, {n_boot} draws"}
        )
    values = np.asarray([r["value"] for r in rows], dtype=float)
    mat = np.vstack(list(boot.values()))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio_boot = np.where(mat.min(axis=0) > 0, mat.max(axis=0) / mat.min(axis=0), np.nan)
    defined = values.min() > 0 if np.isfinite(values).all() else False
    lo, hi = _interval(ratio_boot)
    note = "max/min over groups" if defined else "undefined: the best group's ratio is 0 (or a group has no variants)"
    rows.append(
        _row(
            "invariance_worst_to_best",
            axis=axis,
            attribute=attr,
            group=f"{len(by_group)} groups",
            value=float(values.max() / values.min()) if defined else math.nan,
            n=int(np.isfinite(ratio_boot).sum()),
        )
        | {"ci_low": lo, "ci_high": hi, "note": note}
    )
    return rows


def _interval(draws: np.ndarray) -> tuple[float, float]:
    finite = draws[np.isfinite(draws)]
    if not len(finite):
        return math.nan, math.nan
    lo, hi = np.quantile(finite, [0.025, 0.975])
    return float(lo), float(hi)
