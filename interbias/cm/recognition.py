"""ADD 2023 Track 3 (algorithm recognition) end to end: a multi-class CM trained on the known
algorithms of a CM manifest, the recognisers of :mod:`interbias.cm.openset` over its logits,
and the label files ``interbias scores cm-eval recognition`` reads.

An utterance's **algorithm** is ``bonafide`` for bona fide speech, else its ``attack`` value
(ADD 2023 counts real speech as class 0). The held-out ``unknown`` algorithm(s) must be absent
from the training split; every other algorithm of the train split is a known class (sorted).
Training is ``interbias cm train``'s loop (:mod:`interbias.cm.loop`: class-weighted
cross-entropy over K classes, early stopping on the dev loss, deterministic, resumable), on
the train and dev utterances of known classes, at most ``max_per_class`` per split × class.
After training, the best checkpoint's logits of the training utterances are written to
``train_activations.npz``: the activation vectors OpenMax is fitted on.

Entry point for an experiment: :func:`run_track3` (train or resume, fit, recognise the eval
split, write the files); for degraded copies of the eval audio, :func:`load_recogniser` and
:func:`recognise` on waveforms, then :func:`write_recognition`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.cm.openset import UNKNOWN, OpenMax, SoftmaxThreshold, check_open_set, fit_openmax
from interbias.cm.train import Data, TrainConfig, Trainer, featurize, load_waves
from interbias.corpora.cm_corpus import check_cm_manifest
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils import atomic
from interbias.utils.errors import ConfigError, EncoderError
from interbias.utils.seeding import canonical_json, derive_rng, sha256_text

TASK = "recognition"
ACTIVATIONS = "train_activations.npz"
#: Files of :func:`write_recognition`: the reference and one prediction file per recogniser.
LABEL_FILES = {"reference": "reference.txt", "softmax": "softmax.txt", "openmax": "openmax.txt"}


def algorithm(u: Any) -> str:
    """``bonafide`` for bona fide speech, else the utterance's ``attack``."""
    return "bonafide" if u.get("label") == "bonafide" else str(u.get("attack") or "")


def with_algorithms(manifest: Manifest, items: Sequence[tuple[str, str]]) -> Manifest:
    """The utterances named by ``items`` (utterance id, algorithm), in that order, with ``attack``
    set to the algorithm: the way to run Track 3 on a chosen list. An unknown or repeated id, a
    bona fide utterance given another algorithm than ``bonafide`` or a spoof given ``bonafide``,
    is refused."""
    by_id = manifest.by_id()
    utts, seen = [], set()
    for uid, alg in items:
        if uid not in by_id or uid in seen:
            raise ConfigError(
                f"recognition: utterance {uid!r} is {'listed twice' if uid in seen else 'not in the manifest'}"
            )
        seen.add(uid)
        u = by_id[uid]
        if (u.get("label") == "bonafide") != (alg == "bonafide"):
            raise ConfigError(f"recognition: utterance {uid!r} is {u.get('label')} but labelled {alg!r}")
        utts.append(Utterance.from_dict({**u.to_dict(), "attack": alg}))
    return Manifest(manifest.name, manifest.root, tuple(utts))


def check_algorithms(manifest: Manifest) -> None:
    """Refuse a manifest with a spoof that carries no algorithm label (``attack``): it would be
    trained and scored as a class named ''."""
    spoofs = [u for u in manifest if u.get("label") == "spoof"]
    bad = [u.id for u in spoofs if not u.get("attack")]
    if bad:
        raise ConfigError(
            f"recognition: {len(bad)} of {len(spoofs)} spoof utterance(s) of manifest {manifest.name!r} carry no "
            f"algorithm label (attack); recognition needs one per spoof; first: {bad[0]}"
        )


def known_classes(manifest: Manifest, unknown: Sequence[str], known: Sequence[str] | None = None) -> tuple[str, ...]:
    """The classes to train on: ``known``, else every algorithm of the train split but the
    ``unknown`` ones (sorted). Refuses a spoof without an algorithm label, an unknown class
    among ``known``, fewer than two known classes, and a known or unknown class the manifest
    does not hold."""
    check_algorithms(manifest)
    train = [algorithm(u) for u in manifest if u.get("split") == "train"]
    every = {algorithm(u) for u in manifest}
    missing = [x for x in (*unknown, *(known or ())) if x not in every]
    if missing:
        raise ConfigError(
            f"recognition: class {missing[0]!r} is not in the manifest (algorithms: {', '.join(sorted(every))})"
        )
    classes = sorted(known) if known is not None else sorted(set(train) - set(unknown))
    check_open_set([t for t in train if t in classes], classes, unknown)
    return tuple(classes)


def select_known(manifest: Manifest, split: str, classes: Sequence[str], cfg: TrainConfig) -> list[Any]:
    """The utterances of ``split`` whose algorithm is a known class, at most ``max_per_class`` each."""
    out = []
    for c in classes:
        utts = sorted((u for u in manifest if u.get("split") == split and algorithm(u) == c), key=lambda u: u.id)
        if cfg.max_per_class is not None and len(utts) > cfg.max_per_class:
            pick = derive_rng("cm-subset", cfg.seed, split, c).choice(len(utts), cfg.max_per_class, replace=False)
            utts = [utts[i] for i in sorted(pick.tolist())]
        out.extend(utts)
    return out


@dataclass
class RecognitionTrainer(Trainer):
    """:class:`~interbias.cm.train.Trainer` over K known algorithms instead of two labels."""

    classes: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def network(self) -> Any:
        from interbias.cm.network import build_network, seeded_init

        net = build_network(self.label, {"width": self.cfg.width, "n_classes": self.n_classes}, self.frontend_path)
        seeded_init(net.classifier, self.cfg.seed)
        return net

    def run(self, manifest: Manifest, *, stop_after: int | None = None, reporter: Any = None) -> dict[str, Any]:
        import time

        check_cm_manifest(manifest)
        train_u = select_known(manifest, "train", self.classes, self.cfg)
        dev_u = select_known(manifest, "dev", self.classes, self.cfg)
        for name, us in (("train", train_u), ("dev", dev_u)):
            have = {algorithm(u) for u in us}
            if have != set(self.classes):
                lack = sorted(set(self.classes) - have)
                raise ConfigError(f"recognition: the {name} split has no utterance of class {lack[0]!r}")
            self.counts[name] = {c: sum(algorithm(u) == c for u in us) for c in self.classes}
        rows = [[u.id, u.speaker, algorithm(u), u.get("split"), u.sha256] for u in train_u + dev_u]
        data_sha = sha256_text("".join(canonical_json(r) + "\n" for r in rows))
        net = self.network()
        t0 = time.perf_counter()
        train, dev = self.data(net, manifest, train_u), self.data(net, manifest, dev_u)
        info = self.loop(net, train, dev, data_sha, time.perf_counter() - t0, stop_after=stop_after, reporter=reporter)
        for k in ("n_train_bonafide", "n_dev_bonafide"):
            info.pop(k, None)
        info.update(classes=list(self.classes), unknown=list(self.unknown), counts=self.counts)
        from interbias.cm.loop import write_info

        write_info(self.out, info)
        if info["stopped"] != "stopped":
            write_activations(self.out, self.label, train)
        return info

    def data(self, net: Any, manifest: Manifest, utts: list[Any]) -> Data:
        import torch

        x = featurize(net, load_waves(manifest, utts, self.cfg, "zero"))
        y = torch.tensor([self.classes.index(algorithm(u)) for u in utts])
        return Data(x, y, [u.id for u in utts])

    def header(self, data_sha: str, frontend_sha: str | None) -> dict[str, Any]:
        head = super().header(data_sha, frontend_sha)
        head["config"]["n_classes"] = self.n_classes
        return {**head, "task": TASK, "classes": list(self.classes), "unknown": list(self.unknown)}


def classifier_from(label: str, data: dict[str, Any], frontend_path: Any = None) -> Any:
    """The network of a recognition checkpoint's contents, weights loaded (strict), eval mode."""
    from interbias.cm.models import load_strict
    from interbias.cm.network import build_network

    if data.get("task") != TASK:
        raise EncoderError(f"{label}: not a recognition checkpoint (task {data.get('task', 'detection')!r})")
    cfg = dict(data["config"])
    net = build_network(label, cfg, frontend_path or cfg.get("frontend_path") or None)
    load_strict(net.classifier, data["state_dict"], label, Path("checkpoint.pt"))
    net.eval()
    return net


def write_activations(out: Path, label: str, train: Data) -> None:
    """The best checkpoint's logits of the training utterances (``ACTIVATIONS``)."""
    import io

    import torch

    from interbias.cm.models import read_checkpoint

    data = read_checkpoint(out / "checkpoint.pt", label)
    net = classifier_from(label, data)
    with torch.inference_mode():
        av = torch.cat([net.classifier(train.x[i : i + 32]) for i in range(0, len(train.y), 32)]).double().numpy()
    buf = io.BytesIO()
    np.savez(buf, ids=np.asarray(train.ids), y=train.y.numpy(), av=av)
    atomic.write_bytes(out / ACTIVATIONS, buf.getvalue())


def train_recogniser(
    manifest: Manifest,
    unknown: Sequence[str],
    out: Path,
    *,
    label: str = "ResNet18-lfcc",
    preset: str = "small",
    settings: dict[str, str] | None = None,
    frontend_path: Path | None = None,
    stop_after: int | None = None,
    reporter: Any = None,
    log: Callable[[str], None] = print,
    known: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Train (or resume) a K-class ``label`` network on the known algorithms (:func:`known_classes`);
    ``training.json``'s summary."""
    from interbias.cm.models import CM_MODELS
    from interbias.cm.network import torch_threads
    from interbias.cm.train import PRESETS
    from interbias.utils.progress import Reporter

    if preset not in PRESETS:
        raise ConfigError(f"cm train: unknown config {preset!r}; valid: {', '.join(PRESETS)}")
    if CM_MODELS.get(label).architecture not in ("resnet18", "lcnn"):
        raise ConfigError(f"recognition: {label} is not a ResNet18-<frontend> or LCNN-<frontend> network")
    unknown = tuple(unknown)
    classes = known_classes(manifest, unknown, known)
    cfg = PRESETS[preset].override(settings or {})
    fe = Path(frontend_path) if frontend_path else None
    trainer = RecognitionTrainer(label, cfg, Path(out), fe, log, classes=classes, unknown=unknown)
    with torch_threads():
        return trainer.run(manifest, stop_after=stop_after, reporter=reporter or Reporter(quiet=True))


@dataclass
class Recogniser:
    """A trained K-class network and its two recognisers."""

    label: str
    net: Any
    n_samples: int
    softmax: SoftmaxThreshold
    openmax: OpenMax

    def activations(self, waves: list[np.ndarray], batch: int = 16) -> np.ndarray:
        import torch

        from interbias.cm.frontends import fix_length
        from interbias.cm.network import torch_threads

        out = []
        with torch.inference_mode(), torch_threads():
            for i in range(0, len(waves), batch):
                x = torch.from_numpy(np.stack([fix_length(w, self.n_samples) for w in waves[i : i + batch]]))
                out.append(self.net(x).double().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.softmax.classes)))


def load_recogniser(
    folder: Path, *, threshold: float = 0.5, tail_size: int = 20, alpha: int | None = None, distance: str = "euclidean"
) -> Recogniser:
    """The recognisers of a finished training folder: softmax with threshold ``threshold`` and
    OpenMax fitted on ``train_activations.npz`` with rejection threshold ``threshold``."""
    from interbias.cm.models import read_checkpoint

    folder = Path(folder)
    if not (folder / ACTIVATIONS).is_file():
        raise EncoderError(f"{folder}: no {ACTIVATIONS}; finish the training first (run the same command again)")
    info = read_checkpoint(folder / "checkpoint.pt", "recognition")
    label = str(info.get("label"))
    net = classifier_from(label, info)
    classes = tuple(info.get("classes") or ())
    acts = np.load(folder / ACTIVATIONS, allow_pickle=False)
    names = [classes[i] for i in acts["y"]]
    om = fit_openmax(
        acts["av"], names, classes, tail_size=tail_size, alpha=alpha, threshold=threshold, distance=distance
    )
    return Recogniser(label, net, int(info["config"]["n_samples"]), SoftmaxThreshold(classes, threshold), om)


def recognise(rec: Recogniser, ids: Sequence[str], waves: list[np.ndarray], truth: Sequence[str]) -> pd.DataFrame:
    """Per utterance: true algorithm, both recognisers' labels, their top probabilities and
    OpenMax's unknown probability, and the logits."""
    av = rec.activations(waves)
    ps, po = rec.softmax.probabilities(av), rec.openmax.probabilities(av)
    frame = pd.DataFrame(
        {
            "id": list(ids), "truth": list(truth),
            "softmax": rec.softmax.predict(av), "softmax_p": ps.max(axis=1),
            "openmax": rec.openmax.predict(av), "openmax_p": po.max(axis=1), "openmax_p_unknown": po[:, 0],
        }
    )  # fmt: skip
    for j, c in enumerate(rec.softmax.classes):
        frame[f"logit:{c}"] = av[:, j]
    return frame


def write_recognition(out: Path, table: pd.DataFrame, known: Sequence[str]) -> dict[str, Path]:
    """``reference.txt`` (the true algorithm, ``unknown`` for any not among ``known``), ``softmax.txt``
    and ``openmax.txt`` ('UTT LABEL' per line, ``interbias scores cm-eval recognition``'s format) and
    ``recognition_scores.csv``; returns the label files' paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bad = [i for i in table["id"] if len(str(i).split()) != 1]
    if bad:
        raise ConfigError(f"recognition: utterance id {bad[0]!r} holds whitespace; label files need one token")
    ref = [t if t in set(known) else UNKNOWN for t in table["truth"]]
    paths = {}
    for key, name in LABEL_FILES.items():
        labels = ref if key == "reference" else table[key].tolist()
        paths[key] = out / name
        atomic.write_text(paths[key], "".join(f"{i} {lab}\n" for i, lab in zip(table["id"], labels, strict=True)))
    atomic.write_csv(out / "recognition_scores.csv", table)
    return paths


def run_track3(
    manifest: Manifest,
    unknown: Sequence[str],
    out: Path,
    *,
    label: str = "ResNet18-lfcc",
    preset: str = "small",
    settings: dict[str, str] | None = None,
    threshold: float = 0.5,
    tail_size: int = 20,
    alpha: int | None = None,
    known: Sequence[str] | None = None,
    items: Sequence[tuple[str, str]] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Track 3 on a CM manifest (or on the (utterance id, algorithm) ``items`` of it, see
    :func:`with_algorithms`): train (or resume) in ``out/model`` without the ``unknown``
    algorithms, fit the recognisers, recognise every eval utterance (known and held-out),
    write the label files in ``out`` and ``out/track3.json`` (macro precision, recall, F1 per
    recogniser over the known classes); returns that summary."""
    from interbias.audio.frontend import FrontEnd, load
    from interbias.metrics.cm import open_set_f1, recognition_record

    out = Path(out)
    if items is not None:
        manifest = with_algorithms(manifest, items)
    info = train_recogniser(
        manifest, unknown, out / "model", label=label, preset=preset, settings=settings, log=log, known=known
    )
    rec = load_recogniser(out / "model", threshold=threshold, tail_size=tail_size, alpha=alpha)
    utts = sorted((u for u in manifest if u.get("split") == "eval"), key=lambda u: u.id)
    fe = FrontEnd(sample_rate_hz=16000, min_duration_s=0.0, max_duration_s=None)
    waves = [load(manifest.resolve(u), fe, span=u.span).samples for u in utts]
    table = recognise(rec, [u.id for u in utts], waves, [algorithm(u) for u in utts])
    paths = write_recognition(out, table, rec.softmax.classes)
    summary: dict[str, Any] = {"label": label, "known": list(rec.softmax.classes), "unknown": list(unknown)}
    summary.update(threshold=threshold, tail_size=tail_size, alpha=rec.openmax.alpha, epochs=info["epochs_done"])
    ref = [ln.split()[1] for ln in paths["reference"].read_text().splitlines()]
    for key in ("softmax", "openmax"):
        res = open_set_f1(ref, table[key].tolist(), list(rec.softmax.classes))
        summary[key] = recognition_record(res, list(rec.softmax.classes))
    atomic.write_text(out / "track3.json", canonical_json(summary) + "\n")
    return summary
