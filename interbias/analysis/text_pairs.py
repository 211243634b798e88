"""Same-text versus different-text non-target pairs (``text_pairs.csv``, written by a run whose
experiment sets ``trials: {text: ...}``).

Per results row (model × cell): the cell's measured trials (:func:`interbias.run.measured.measured`)
split by :func:`interbias.trials.text_pairs.text_relation`; EER and minDCF of all its target
trials against its same-text non-targets, and against its different-text non-targets, with the
counts. With repeated operator draws each metric is the mean over the draws' score columns.
A side with no trials gives NaN metrics.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from interbias.corpora.manifest import Manifest
from interbias.metrics import verification as metrics
from interbias.run.measured import measured
from interbias.run.rundir import RunDir
from interbias.trials.sampler import TrialList
from interbias.trials.text_pairs import RELATIONS, text_relation

COLUMNS = [
    "model",
    "cell",
    "stratum",
    "n_target",
    "n_target_same_text",
    "n_nontarget_same_text",
    "n_nontarget_different_text",
    "n_unknown_text",
    *(f"{m}_{r}_text" for r in RELATIONS for m in ("eer", "min_dcf")),
]


def text_pairs_table(run: RunDir, results: pd.DataFrame, trials: TrialList, manifest: Manifest) -> pd.DataFrame:
    """One row per results row (see the module docs)."""
    relation = pd.Series(text_relation(trials.frame, manifest.by_id()), index=trials.frame["trial_id"].to_numpy())
    rows = []
    for model, cell, stratum in results[["model", "cell", "stratum"]].itertuples(index=False):
        scores = run.read_scores(model, cell)
        sub = trials.for_stratum(stratum).set_index("trial_id").reindex(scores["trial_id"].to_numpy())
        joined = scores.assign(**{c: sub[c].to_numpy() for c in ("split", "trial_type") if c in sub.columns})
        use = measured(joined)
        labels = scores["label"].to_numpy()[use]
        rel = relation.reindex(scores["trial_id"].to_numpy()).to_numpy()[use]
        row = {
            "model": model,
            "cell": cell,
            "stratum": stratum,
            "n_target": int((labels == 1).sum()),
            "n_target_same_text": int(((labels == 1) & (rel == "same")).sum()),
            "n_nontarget_same_text": int(((labels == 0) & (rel == "same")).sum()),
            "n_nontarget_different_text": int(((labels == 0) & (rel == "different")).sum()),
            "n_unknown_text": int((rel == "").sum()),
        }
        draws = [c for c in scores.columns if c == "score" or c.startswith("score_d")]
        for r in RELATIONS:
            pick = (labels == 1) | ((labels == 0) & (rel == r))
            row.update(_metrics(scores.loc[use, draws].to_numpy()[pick], labels[pick], r))
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _metrics(scores: np.ndarray, labels: np.ndarray, relation: str) -> dict[str, float]:
    if not (labels == 1).any() or not (labels == 0).any():
        return {f"eer_{relation}_text": float("nan"), f"min_dcf_{relation}_text": float("nan")}
    parts = [metrics.summarize(scores[:, j], labels) for j in range(scores.shape[1])]
    return {
        f"eer_{relation}_text": float(np.mean([p["eer"] for p in parts])),
        f"min_dcf_{relation}_text": float(np.mean([p["min_dcf"] for p in parts])),
    }
