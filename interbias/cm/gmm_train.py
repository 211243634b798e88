"""``interbias cm train --model GMM-lfcc``: EM of the two mixtures of :mod:`interbias.cm.gmm`
with a resumable state after every iteration, the checkpoint and ``training.json``.

Outputs in the output folder: ``state.pt`` (both mixtures, the curve, which mixture has
converged: written after every iteration), ``curve.csv`` (mean log-likelihood per frame per
iteration and class), ``checkpoint.pt`` (the final mixtures, once converged or at ``max_iter``)
and ``training.json`` (config, manifest hash, counts, iterations, the dev EER).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from interbias.cm.gmm import (
    CLASSES,
    GMMConfig,
    GMMScorer,
    checked_config,
    em_step,
    frontend,
    init_mixture,
    to_numpy,
    to_torch,
)
from interbias.cm.loop import CHECKPOINT, INFO, STATE, resume_state, save
from interbias.cm.models import CM_MODELS, FORMAT
from interbias.cm.train import load_waves, select, training_manifest_sha256
from interbias.corpora.cm_corpus import check_cm_manifest
from interbias.metrics.verification import eer
from interbias.utils import atomic


@dataclass
class GMMTrainer:
    label: str
    cfg: GMMConfig
    out: Path
    log: Callable[[str], None] = print

    def frames(self, manifest: Any, utts: list[Any]) -> np.ndarray:
        waves = torch.from_numpy(load_waves(manifest, utts, self.cfg, "tile"))  # type: ignore[arg-type]
        with torch.no_grad():
            feats = torch.cat([frontend()(waves[i : i + 32]) for i in range(0, len(waves), 32)]).numpy()
        return feats.astype(np.float64)

    def header(self, data_sha: str) -> dict[str, Any]:
        config = {**asdict(self.cfg), "n_samples": self.cfg.n_samples}
        return {"format": FORMAT, "label": self.label, "task": "detection", "config": config,
                "config_sha256": self.cfg.sha256(), "manifest_sha256": data_sha}  # fmt: skip

    def resume(self, header: dict[str, Any]) -> dict[str, Any] | None:
        return resume_state(self, header) if (self.out / STATE).is_file() else None


def em_loop(t: GMMTrainer, data: dict[str, np.ndarray], header: dict[str, Any], stop_after: int | None) -> dict:
    """EM iterations with a state after each (module docstring); returns the final state."""
    floors = {c: t.cfg.var_floor * data[c].var(axis=0) for c in CLASSES}
    state = t.resume(header)
    if state is None:
        mix = {c: init_mixture(data[c], t.cfg.n_components, t.cfg.seed, c) for c in CLASSES}
        curve: list[dict[str, Any]] = []
        done = dict.fromkeys(CLASSES, False)
    else:
        mix = {c: to_numpy(state["mixtures"][c]) for c in CLASSES}
        curve, done = list(state["curve"]), dict(state["converged"])
        t.log(f"resuming after iteration {len(curve)}")
    steps = 0
    while len(curve) < t.cfg.max_iter and not all(done.values()) and (stop_after is None or steps < stop_after):
        t0 = time.perf_counter()
        row: dict[str, Any] = {"iteration": len(curve) + 1}
        for c in CLASSES:
            row[f"ll_{c}"] = None
            if not done[c]:
                prev = [r[f"ll_{c}"] for r in curve if r.get(f"ll_{c}") is not None]
                mix[c], row[f"ll_{c}"] = em_step(data[c], mix[c], floors[c])
                done[c] = bool(prev) and row[f"ll_{c}"] - prev[-1] < t.cfg.tol
        row["seconds"] = round(time.perf_counter() - t0, 3)
        curve.append(row)
        steps += 1
        snap = {**header, "mixtures": {c: to_torch(mix[c]) for c in CLASSES}, "curve": curve, "converged": done}
        save(t.out / STATE, snap)
        atomic.write_csv(t.out / "curve.csv", pd.DataFrame(curve))
        lls = {c: row[f"ll_{c}"] for c in CLASSES}
        t.log(f"iteration {row['iteration']}: " + ", ".join(f"{c} {v:.4f}" for c, v in lls.items() if v is not None))
    return {"mixtures": mix, "curve": curve, "converged": done}


def train_gmm(
    label: str, manifest: Any, *, preset: str = "paper", settings: dict[str, str] | None = None, out: Path | None = None,
    stop_after: int | None = None, log: Callable[[str], None] = print,
) -> tuple[Path, dict[str, Any]]:  # fmt: skip
    """Train (or resume) ``GMM-lfcc`` on the train split; the dev EER of the result in the summary."""
    cfg = checked_config(preset, settings)
    folder = Path(out) if out else CM_MODELS.get(label).folder()
    folder.mkdir(parents=True, exist_ok=True)
    check_cm_manifest(manifest)
    train_u, dev_u = select(manifest, "train", cfg), select(manifest, "dev", cfg)  # type: ignore[arg-type]
    t = GMMTrainer(label, cfg, folder, log)
    header = t.header(training_manifest_sha256(train_u + dev_u))
    feats = t.frames(manifest, train_u)
    data = {
        c: np.concatenate([f.T for f, u in zip(feats, train_u, strict=True) if u.get("label") == c]) for c in CLASSES
    }
    final = em_loop(t, data, header, stop_after)
    info = {k: v for k, v in header.items() if k != "format"}
    info.update(n_train=len(train_u), n_dev=len(dev_u), iterations=len(final["curve"]), converged=final["converged"])
    finished = all(final["converged"].values()) or len(final["curve"]) >= cfg.max_iter
    info["stopped"] = "converged" if all(final["converged"].values()) else ("max_iter" if finished else "stopped")
    if finished:
        mix = {c: to_torch(final["mixtures"][c]) for c in CLASSES}
        save(folder / CHECKPOINT, {**header, "mixtures": mix})
        llr = GMMScorer(final["mixtures"]).llr(t.frames(manifest, dev_u))
        info["dev_eer"] = float(eer(llr, np.asarray([u.get("label") == "bonafide" for u in dev_u], dtype=int)))
    atomic.write_text(folder / INFO, json.dumps(info, indent=2, sort_keys=True) + "\n")
    return folder, info
