"""Run directories built directly from speaker-clustered synthetic scores (no audio, no encoder).

Trials: per stratum ``n`` speakers; each speaker has ``m_target`` target trials and enrols
``m_nontarget`` non-target trials against the next speakers of its stratum (cyclically), so
every speaker appears equally often. Scores: target ``mu_t + u_s + sigma·e``, non-target
``mu_n + v_e + v_t + sigma·e`` with speaker effects ``u ~ N(0, tau²)``, ``v ~ N(0, tau_n²)``.
The population EER of such a cell is Φ(−(mu_t − mu_n) / (s_t + s_n)) with
s_t² = tau² + sigma², s_n² = 2·tau_n² + sigma² (two normals: the crossing where both error
rates are equal).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from interbias.metrics import verification as metrics
from interbias.utils.paths import slug
from interbias.utils.seeding import derive_rng


@dataclass(frozen=True)
class ScoreModel:
    mu_t: float = 2.0
    mu_n: float = 0.0
    tau: float = 0.6
    tau_n: float = 0.2
    sigma: float = 1.0

    def population_eer(self, mu_t: float | None = None) -> float:
        s_t = (self.tau**2 + self.sigma**2) ** 0.5
        s_n = (2 * self.tau_n**2 + self.sigma**2) ** 0.5
        return NormalDist().cdf(-((self.mu_t if mu_t is None else mu_t) - self.mu_n) / (s_t + s_n))


def clustered_trials(strata: Mapping[str, int], m_target: int, m_nontarget: int) -> pd.DataFrame:
    rows = []
    for st, n in strata.items():
        spk = [f"{slug(st)}_{i:03d}" for i in range(n)]
        for i, s in enumerate(spk):
            rows += [(st, True, s, s)] * m_target
            rows += [(st, False, s, spk[(i + k) % n]) for k in range(1, m_nontarget + 1)]
    frame = pd.DataFrame(rows, columns=["stratum", "label", "enrol_speaker", "test_speaker"])
    frame.insert(0, "trial_id", np.arange(len(frame), dtype=np.int64))
    return frame


def clustered_scores(trials: pd.DataFrame, model: ScoreModel, mu_t: float, rng: np.random.Generator) -> np.ndarray:
    """Scores of every trial in ``trials`` (one cell; target mean ``mu_t``)."""
    speakers = sorted(set(trials["enrol_speaker"]) | set(trials["test_speaker"]))
    u = dict(zip(speakers, rng.normal(0, model.tau, len(speakers)), strict=True))
    v = dict(zip(speakers, rng.normal(0, model.tau_n, len(speakers)), strict=True))
    noise = rng.normal(0, model.sigma, len(trials))
    lab = trials["label"].to_numpy(bool)
    e, t = trials["enrol_speaker"].tolist(), trials["test_speaker"].tolist()
    target = mu_t + np.array([u[s] for s in e])
    non = model.mu_n + np.array([v[a] + v[b] for a, b in zip(e, t, strict=True)])
    return np.where(lab, target, non) + noise


def write_run(
    folder: Path,
    trials: pd.DataFrame,
    cells: Mapping[tuple[str, tuple[str, ...]], tuple[np.ndarray, np.ndarray]],
    factors: Sequence[tuple[str, str, str]],
    *,
    experiment: str = "S01",
    families: Mapping[str, str] | None = None,
    run_json: Mapping | None = None,
) -> Path:
    """Write a run directory. ``cells``: (model, levels) -> (trial_ids, scores); ``factors``:
    (name, type, reference) per slot. The stratum of a cell's trials is not checked."""
    folder.mkdir(parents=True, exist_ok=True)
    trials.to_parquet(folder / "trials.parquet", index=False)
    sha = hashlib.sha256(trials.to_csv(index=False).encode()).hexdigest()
    (folder / "trials.json").write_text(json.dumps({"sha256": sha, "n": len(trials)}))
    levels_of: dict[str, list[str]] = {name: [] for name, _, _ in factors}
    for _, levels in cells:
        for (name, _, _), lv in zip(factors, levels, strict=True):
            if lv not in levels_of[name]:
                levels_of[name].append(lv)
    resolved = {
        "name": experiment,
        "use": "gap",
        "corpus": "synthetic",
        "factors": [
            {
                "name": n,
                "type": ty,
                "reference": ref,
                "levels": {lv: (lv if ty == "population" else []) for lv in levels_of[n]},
            }
            | ({"attribute": n} if ty == "population" else {"apply_to": "test"})
            for n, ty, ref in factors
        ],
    }
    (folder / "experiment.resolved.json").write_text(json.dumps(resolved))
    (folder / "run.json").write_text(json.dumps(dict(run_json or {"run_id": folder.name})))
    label_of = dict(zip(trials["trial_id"].tolist(), trials["label"].tolist(), strict=True))
    rows = []
    for (model, levels), (ids, scores) in cells.items():
        cell = ",".join(f"{n}={lv}" for (n, _, _), lv in zip(factors, levels, strict=True))
        labels = np.array([label_of[int(i)] for i in ids], dtype=bool)
        path = folder / "scores" / slug(model) / f"{slug(cell)}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"trial_id": ids, "label": labels, "score": scores, "dropped": False}).to_parquet(
            path, index=False
        )
        row = {"experiment": experiment, "dataset": "synthetic", "model": model}
        row.update(family=(families or {}).get(model, "sv"), cell=cell)
        for slot, (name, _, ref), lv in zip("abc", factors, levels, strict=False):
            row.update({f"factor_{slot}": name, f"level_{slot}": lv, f"ref_{slot}": ref})
        row.update(
            eer=metrics.eer(scores, labels),
            eer_legacy=metrics.eer_legacy(scores, labels),
            min_dcf=metrics.min_dcf(scores, labels),
            n_target=int(labels.sum()),
            n_nontarget=int((~labels).sum()),
            trials_sha256=sha,
            checkpoint_sha256=f"ckpt-{slug(model)}",
        )
        rows.append(row)
    pd.DataFrame(rows).to_csv(folder / "results.csv", index=False)
    return folder


GENDER_NOISE = [("gender", "population", "female"), ("noise", "acoustic", "clean")]


def gender_noise_run(
    folder: Path,
    means: Mapping[str, Mapping[tuple[str, str], float]],
    *,
    n: int = 12,
    m: int = 6,
    seed: str = "run",
    experiment: str = "S01",
    run_json: Mapping | None = None,
) -> Path:
    """A gender × noise run: ``means[model][(gender, noise)]`` is the target-score mean of that
    cell; every cell of a gender scores that gender's trials."""
    trials = clustered_trials({"gender=female": n, "gender=male": n}, m, m)
    cells = {}
    for model, by_cell in means.items():
        for (gender, noise), mu in by_cell.items():
            part = trials[trials["stratum"] == f"gender={gender}"]
            rng = derive_rng("synthetic-run", seed, model, gender, noise)
            cells[(model, (gender, noise))] = (
                part["trial_id"].to_numpy(),
                clustered_scores(part, ScoreModel(), mu, rng),
            )
    return write_run(folder, trials, cells, GENDER_NOISE, experiment=experiment, run_json=run_json)


# Runs whose EER is known by hand and does not move under speaker resampling: 4 speakers (one
# stratum), each with 3 target trials and 3 non-target trials against the next speaker (the same
# pair three times), so every resample keeps the shares of each score pattern. ``perfect``
# (targets 1.0, non-targets 0.0): EER 0, minDCF 0. ``third`` (targets 1.0, 1.0, 0.2;
# non-targets 0.5, 0.0, 0.0): at threshold 0.5 one target in three is missed and one
# non-target in three accepted, below it no miss and one in three accepted: EER = 1/3; minDCF
# (p 0.01, normalised: P_miss + 99·P_fa) is 1/3, at threshold 1.0 (P_miss 1/3, P_fa 0).
PATTERNS = {"perfect": ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]), "third": ([1.0, 1.0, 0.2], [0.5, 0.0, 0.0])}
FACTORS = [("noise", "acoustic", "clean")]


def pattern_trials(n: int) -> pd.DataFrame:
    rows = []
    for i in range(n):
        s, o = f"s{i}", f"s{(i + 1) % n}"
        rows += [("all", True, s, s)] * 3 + [("all", False, s, o)] * 3
    frame = pd.DataFrame(rows, columns=["stratum", "label", "enrol_speaker", "test_speaker"])
    frame.insert(0, "trial_id", np.arange(len(frame)))
    return frame


def pattern_run(folder: Path, n: int, models: dict[str, dict[str, str]], **kwargs: object) -> Path:
    trials = pattern_trials(n)
    cells = {}
    for model, by_level in models.items():
        for level, pattern in by_level.items():
            tgt, non = PATTERNS[pattern]
            scores = np.array([x for _ in range(n) for x in (*tgt, *non)])
            cells[(model, (level,))] = (trials["trial_id"].to_numpy(), scores)
    return write_run(folder, trials, cells, FACTORS, **kwargs)  # type: ignore[arg-type]
