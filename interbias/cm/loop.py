"""The epoch loop of ``interbias cm train``: weighted cross-entropy, AdamW with ReduceLROnPlateau
on the validation loss, early stopping on the validation loss, a checkpoint of the best epoch and
a resumable state (model, optimiser, scheduler, curve) after every epoch. A trainer with
``n_classes`` K > 2 (algorithm recognition) gets weights n/(K·n_c) and no validation EER (NaN)."""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.utils import atomic
from interbias.utils.errors import RunError
from interbias.utils.seeding import derive_rng

CHECKPOINT, STATE, CURVE, INFO = "checkpoint.pt", "state.pt", "curve.csv", "training.json"
CURVE_COLUMNS = ("epoch", "train_loss", "val_loss", "val_eer", "lr", "best", "seconds")


def save(path: Path, obj: Any) -> None:
    """``torch.save`` to bytes, written atomically (a kill never leaves half a file)."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic.write_bytes(path, buf.getvalue())


def class_weights(y: Any, n_classes: int = 2) -> Any:
    """w_c = n / (K·n_c) for the K classes (detection: K = 2, c in 0 = spoof, 1 = bona fide);
    labels < 0 (padding frames of a frame-level detector, cross-entropy's ``ignore_index``) are
    not counted."""
    import torch

    y = y[y >= 0]
    n = len(y)
    counts = torch.bincount(y, minlength=n_classes).double()
    return (n / (n_classes * counts)).float()


def evaluate(model: Any, data: Any, weights: Any, batch: int) -> tuple[float, np.ndarray]:
    """(weighted cross-entropy, class-1 posteriors) of ``data`` in eval mode."""
    import torch

    model.eval()
    logits = []
    with torch.inference_mode():
        for i in range(0, len(data.y), batch):
            logits.append(model(data.x[i : i + batch]))
    z = torch.cat(logits)
    loss = torch.nn.functional.cross_entropy(z, data.y, weight=weights)
    return float(loss), torch.softmax(z.double(), 1)[:, 1].numpy()


def one_epoch(model: Any, opt: Any, data: Any, weights: Any, batch: int, seed: int, epoch: int) -> float:
    """One pass over ``data`` in the derived order; returns the mean of the batch losses."""
    import torch

    model.train()
    order = torch.from_numpy(derive_rng("cm-train", seed, epoch).permutation(len(data.y)))
    losses = []
    # dropout (AASIST) draws from torch's generator: a forked one, seeded from the derived seed
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(derive_rng("cm-dropout", seed, epoch).integers(2**31)))
        for i in range(0, len(order), batch):
            idx = order[i : i + batch]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(data.x[idx]), data.y[idx], weight=weights)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    return float(np.mean(losses))


def resume_state(trainer: Any, header: dict[str, Any]) -> dict[str, Any] | None:
    """The saved state of an earlier run of the same label, config and data; else None."""
    from interbias.cm.models import read_checkpoint

    path = trainer.out / STATE
    if not path.is_file():
        return None
    state = read_checkpoint(path, trainer.label)
    for key in ("label", "config_sha256", "manifest_sha256"):
        if state.get(key) != header[key]:
            raise RunError(
                f"{trainer.out}: holds a training run with another {key.replace('_', ' ')} "
                f"({state.get(key)!s:.16} vs {header[key]!s:.16}); use another --out or delete {path}"
            )
    return state


@dataclass
class Progress:
    """The loop's state: learning curve, best validation loss and its epoch."""

    curve: list[dict[str, Any]] = field(default_factory=list)
    best: float = float("inf")
    best_epoch: int = 0
    scheduler: Any = None


def make_scheduler(opt: Any, cfg: Any) -> Any:
    """ReduceLROnPlateau (mode min, ``lr_factor``, ``lr_patience``) or None when ``lr_factor`` is 1."""
    import torch

    if cfg.lr_factor >= 1.0:
        return None
    return torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=cfg.lr_factor, patience=cfg.lr_patience)


def run_epoch(
    trainer: Any, model: Any, opt: Any, data: tuple[Any, Any, Any], header: dict, epoch: int, p: Progress
) -> None:
    """Train one epoch at the current learning rate, validate, step the scheduler, keep the
    checkpoint when the validation loss improved, save the state."""
    from interbias.metrics.verification import eer

    train, dev, weights = data
    cfg = trainer.cfg
    t = time.perf_counter()
    lr = float(opt.param_groups[0]["lr"])
    tr = one_epoch(model, opt, train, weights, cfg.batch_size, cfg.seed, epoch)
    val, post = evaluate(model, dev, weights, cfg.batch_size)
    if p.scheduler is not None:
        p.scheduler.step(val)
    improved = val < p.best
    if improved:
        p.best, p.best_epoch = val, epoch
        save(trainer.out / CHECKPOINT, {**header, "epoch": epoch, "val_loss": val, "state_dict": model.state_dict()})
    lab = dev.y.numpy().reshape(-1)  # frame-level detectors: every labelled frame is a trial
    kept = lab >= 0
    val_eer = float(eer(post.reshape(-1)[kept], lab[kept])) if int(lab[kept].max()) <= 1 else float("nan")  # K > 2
    seconds = round(time.perf_counter() - t, 3)
    p.curve.append(
        {"epoch": epoch, "train_loss": tr, "val_loss": val, "val_eer": val_eer, "lr": lr, "best": improved,
         "seconds": seconds}
    )  # fmt: skip
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict(), "curve": p.curve}
    if p.scheduler is not None:
        state["scheduler"] = p.scheduler.state_dict()
    save(trainer.out / STATE, {**header, **state, "best_val_loss": p.best, "best_epoch": p.best_epoch})
    atomic.write_csv(trainer.out / CURVE, pd.DataFrame(p.curve, columns=list(CURVE_COLUMNS)))
    mark = " (best)" if improved else ""
    trainer.log(f"epoch {epoch}: lr {lr:.3g}, train loss {tr:.4f}, val loss {val:.4f}, val EER {val_eer:.4f}{mark}")


def train_epochs(
    trainer: Any, net: Any, train: Any, dev: Any, data_sha: str, feat_s: float, *, stop_after: int | None, reporter: Any
) -> dict[str, Any]:
    """Run epochs until early stopping or ``max_epochs`` (or ``stop_after`` epochs in this
    call: a clean stop at an epoch boundary); module docstring for the files."""
    import torch

    from interbias.cm.network import frontend_sha256

    cfg = trainer.cfg
    fe_sha = frontend_sha256(trainer.frontend_path) if trainer.frontend_path else None
    header = trainer.header(data_sha, fe_sha)
    model = net.classifier
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    weights = class_weights(train.y, getattr(trainer, "n_classes", 2))
    trainer.out.mkdir(parents=True, exist_ok=True)
    state = resume_state(trainer, header)
    p = Progress(scheduler=make_scheduler(opt, cfg))
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        p = Progress(list(state["curve"]), float(state["best_val_loss"]), int(state["best_epoch"]), p.scheduler)
        if p.scheduler is not None:
            p.scheduler.load_state_dict(state["scheduler"])
        trainer.log(f"resuming after epoch {state['epoch']} (best so far: epoch {p.best_epoch}, val loss {p.best:.4f})")
    start = len(p.curve) + 1
    epochs = [e for e in range(start, cfg.max_epochs + 1)][: stop_after if stop_after is not None else None]
    stopped = "max_epochs"
    with reporter.task(f"cm train {trainer.label}", len(epochs)) as advance:
        for epoch in epochs:
            if epoch - p.best_epoch > cfg.patience:
                break
            run_epoch(trainer, model, opt, (train, dev, weights), header, epoch, p)
            advance(1)
    done = len(p.curve)
    if done and done - p.best_epoch >= cfg.patience and done < cfg.max_epochs:
        stopped = "early_stopping"
    elif done < cfg.max_epochs:
        stopped = "stopped"
    info = {
        **{k: v for k, v in header.items() if k != "format"},
        "n_train": len(train.y), "n_dev": len(dev.y),
        "n_train_bonafide": n_bonafide(train.y), "n_dev_bonafide": n_bonafide(dev.y),
        "class_weights": [float(w) for w in weights], "epochs_done": done,
        "best_epoch": p.best_epoch, "best_val_loss": p.best, "stopped": stopped,
        "feature_seconds": round(feat_s, 3), "train_seconds": round(sum(r["seconds"] for r in p.curve), 3),
    }  # fmt: skip
    write_info(trainer.out, info)
    return info


def n_bonafide(y: Any) -> int:
    """Bona fide utterances: labels 1 (one label per utterance), or rows without a fake (0) frame."""
    return int((~(y.reshape(len(y), -1) == 0).any(1)).sum())


def write_info(out: Path, info: dict[str, Any]) -> None:
    atomic.write_text(out / INFO, json.dumps(info, indent=2, sort_keys=True) + "\n")
