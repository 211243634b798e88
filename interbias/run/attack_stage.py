"""The attack stage of a run (``attacks:`` in the experiment; :mod:`interbias.experiments.attack_spec`):
after scoring, attack chosen eval trials of every stratum and write ``attacks.csv``.

Per stratum and kind, ``attacks.trials`` eval trials are drawn (a permutation from
``derive_rng("attack-trials", seed, stratum, kind)``, the first N kept, sorted by trial id):
non-targets for ``impostor`` (success: the attacked test is accepted, score ≥ threshold),
targets for ``lockout`` (success: rejected). Each test utterance is attacked once per encoder,
method and budget, before any operator, against its trial's enrolment vector under the
reference cell's enrolment chain (every acoustic factor at its reference level); the attacked
audio then passes through each cell's test chain (a codec after the attack) and is embedded by
the encoder's run-time path and cosine-scored against that cell's enrolment vector. A clean
budget (ε = 0, SNR = inf) leaves the audio as it is: its vector is checked to equal the run's bit
for bit, and its rows carry the cell's own scores (``clean_score``, from the scores file).

Each attack keeps its best iterate (:mod:`interbias.encoders.attacks`), and each budget's result is
the best of its own and every smaller budget's of the same method (:func:`nested_best`), so for a
fixed trial the attack's score is monotone in the budget; ``kept_budget`` names the budget whose
audio is used and ``kept_step`` its step (0: the unperturbed audio — nothing within the budget
moved the score toward the attacker's goal).

The threshold is one per encoder: ``attacks.threshold`` (default the EER threshold) chosen on
the dev trials of the reference cells, pooled over strata. Attacked waveforms are cached under
``<cache>/adversarial/`` by the sha256 of the clean samples, the encoder's fingerprint, the
enrolment vector, the attack's parameters, the direction and (NES only) the threshold and seed.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.audio import frontend as audio
from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.stage import ChainItems, Embedder
from interbias.encoders import Encoder
from interbias.encoders.attacks import WHITE_BOX, Attacked, AttackParams, attack, nested_best, white_box
from interbias.experiments.schema import Cell, Experiment
from interbias.metrics.thresholds import ThresholdRule
from interbias.operators import OpContext
from interbias.operators.silence import check_chain_output
from interbias.run.inputs import RunContext
from interbias.run.rundir import ATTACKS
from interbias.run.scoring import cosine_scores
from interbias.trials.sampler import partners
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError, RunError
from interbias.utils.seeding import canonical_json, derive_rng, sha256_text

#: kind -> (trial label attacked, score direction)
KIND_TRIALS = {"impostor": (0, 1), "lockout": (1, -1)}


def check_attack_encoders(exp: Experiment, encoders: list[Encoder]) -> None:
    """Refuse, before any work, a white-box method on an encoder with no differentiable path."""
    if exp.attacks is None or not set(exp.attacks.methods) & set(WHITE_BOX):
        return
    for enc in encoders:
        white_box(enc)


def reference_cells(exp: Experiment) -> list[Cell]:
    """Cells whose acoustic factors all sit at their reference level."""
    refs = {f.name: f.reference for f in exp.acoustic_factors}
    return [c for c in exp.cells() if all(refs.get(f, lv) == lv for f, lv in c.levels)]


def attacked_trials(exp: Experiment, frame: pd.DataFrame, stratum: str, kind: str) -> pd.DataFrame:
    """The ``attacks.trials`` eval trials of ``stratum`` attacked for ``kind`` (module docs)."""
    assert exp.attacks is not None
    label, _ = KIND_TRIALS[kind]
    sub = frame[(frame["stratum"] == stratum) & (frame["label"] == label)]
    if "split" in sub.columns:
        sub = sub[sub["split"] == "eval"]
    order = derive_rng("attack-trials", exp.seed, stratum, kind).permutation(len(sub))
    return sub.iloc[np.sort(order[: exp.attacks.trials])]


def succeeded(trial_kind: str, accepted: bool) -> bool:
    """Whether an attack on a trial succeeded: an impostor trial accepted, a target trial rejected."""
    match trial_kind:
        case "impostor":
            return accepted
        case _:
            return not accepted


def dev_threshold(rule: ThresholdRule, emb: Embedder, cells: list[Cell], frame: pd.DataFrame, enc: Encoder) -> float:
    """The encoder's threshold from the reference cells' dev trials (pooled); ``fixed:X`` as given."""
    if not rule.from_dev:
        return rule.choose([], [])
    scores, labels = [], []
    for cell in cells:
        dev = frame[frame["stratum"] == cell.stratum]
        dev = dev[dev["split"] == "dev"] if "split" in dev.columns else dev.iloc[:0]
        if dev.empty:
            raise RunError(f"threshold {rule.label} needs dev trials; stratum {cell.stratum} has none")
        enrol = np.stack([emb.vectors[(u, cell.enrol_chain.fingerprint, enc.fingerprint)] for u in dev["enrol"]])
        test = np.stack([emb.vectors[(u, cell.test_chain.fingerprint, enc.fingerprint)] for u in dev["test"]])
        idx = np.arange(len(dev))
        scores.append(cosine_scores(enrol, test, idx, idx))
        labels.append(dev["label"].to_numpy())
    try:
        return rule.choose(np.concatenate(scores), np.concatenate(labels))
    except (AnalysisError, ValueError) as exc:
        raise RunError(f"{enc.label}: no {rule.label} dev threshold ({exc})") from None


@dataclass
class AttackCache:
    """Attacked waveforms on disk (``<cache>/adversarial/<key>.npz``), keyed as the module docs say."""

    root: Path

    def get(self, key: str) -> Attacked | None:
        path = self.root / key[:2] / f"{key}.npz"
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=False) as data:
            meta = data["meta"].tolist()
            if len(meta) != 8:  # written before attacks kept their best iterate: recomputed
                return None
            linf, snr, steps, queries, score, start, kept, budget = meta
            return Attacked(data["wave"].astype(np.float32), linf, snr, int(steps), int(queries), score, start,
                            int(kept), budget)  # fmt: skip

    def put(self, key: str, a: Attacked) -> None:
        buf = io.BytesIO()
        meta = [a.linf, a.snr_db, a.steps, a.queries, a.score, a.start_score, a.kept_step, a.budget]
        np.savez(buf, wave=a.wave, meta=np.array(meta, dtype=np.float64))
        path = self.root / key[:2] / f"{key}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_bytes(path, buf.getvalue())


def attack_key(x: np.ndarray, enc: Encoder, enrol: np.ndarray, p: AttackParams, direction: int, extra: Any) -> str:
    """The cache key of one attack (see the module docs)."""
    parts = [hashlib.sha256(np.asarray(a, np.float32).tobytes()).hexdigest() for a in (x, enrol)]
    return sha256_text(canonical_json([parts[0], enc.fingerprint, parts[1], p.to_dict(), direction, extra]))


@dataclass
class Stage:
    """What the attack loop works with (one run's context, its vectors, thresholds and cache)."""

    ctx: RunContext
    emb: Embedder
    thresholds: dict[str, float]
    cache: AttackCache
    exclude: dict[str, frozenset[str]]
    reference: dict[str, Cell]
    scores: dict[tuple[str, str], dict[int, float]] = field(default_factory=dict)

    def cell_score(self, model: str, cell: str, trial_id: int) -> float:
        """The trial's score in the cell's scores file (what the cell measured)."""
        key = (model, cell)
        if key not in self.scores:
            frame = self.ctx.run.read_scores(model, cell)
            self.scores[key] = dict(zip(frame["trial_id"].astype(int), frame["score"].astype(float), strict=True))
        return self.scores[key][trial_id]

    def degrade(self, cell: Cell, wave: np.ndarray, uid: str, rate: int) -> np.ndarray:
        """``wave`` through the cell's test chain, realised as the embedding stage realises it."""
        chain, u = cell.test_chain, self.ctx.scored.by_id()[uid]
        exclude = self.exclude.get(uid, frozenset())
        out, _ = chain.apply(
            wave,
            utterance_sha256=self.emb.sha[uid],
            key=chain.key(exclude),
            make_ctx=lambda rng: OpContext(
                sample_rate_hz=rate,
                utterance_id=u.id,
                speaker=u.speaker,
                rng=rng,
                corpus=self.ctx.scored,
                exclude_speakers=exclude | {u.speaker},
                frontend=self.ctx.exp.frontend,
                cache_dir=self.ctx.cache,
            ),
        )
        if chain.effective:
            check_chain_output(wave, out, rate)
        return out

    def attacked(self, trial: Any, enc: Encoder, p: AttackParams, kind: str, loaded: audio.LoadedAudio) -> Attacked:
        """The attacked test waveform of ``trial`` (from the cache when there)."""
        ref = self.reference[trial.stratum]
        enrol = self.emb.vectors[(trial.enrol, ref.enrol_chain.fingerprint, enc.fingerprint)]
        direction, thr = KIND_TRIALS[kind][1], self.thresholds[enc.label]
        seed = ("attack", self.ctx.exp.seed, int(trial.trial_id), enc.label, p.method, p.budget, kind)
        x = loaded.samples
        if p.is_clean:
            return attack(x, enc, enrol, p, sample_rate_hz=loaded.sample_rate_hz, direction=direction,
                          threshold=thr, rng=derive_rng(*seed))  # fmt: skip
        key = attack_key(x, enc, enrol, p, direction, [thr, list(seed)] if p.method == "nes" else None)
        hit = self.cache.get(key)
        if hit is None:
            hit = attack(x, enc, enrol, p, sample_rate_hz=loaded.sample_rate_hz, direction=direction,
                         threshold=thr, rng=derive_rng(*seed))  # fmt: skip
            self.cache.put(key, hit)
        return hit


def _vectors(ctx: RunContext, picked: pd.DataFrame, cells: list[Cell], refs: list[Cell]) -> Embedder:
    """Every vector the stage reads (mostly from the cache the run just filled)."""
    frame = ctx.trials.frame
    items: ChainItems = {}
    for cell in cells:
        sub = picked[picked["stratum"] == cell.stratum]
        for chain, ids in ((cell.enrol_chain, sub["enrol"]), (cell.test_chain, sub["test"])):
            items.setdefault(chain.fingerprint, (chain, set()))[1].update(ids)
    for cell in refs:
        dev = frame[frame["stratum"] == cell.stratum]
        dev = dev[dev["split"] == "dev"] if "split" in dev.columns else dev.iloc[:0]
        items.setdefault(cell.enrol_chain.fingerprint, (cell.enrol_chain, set()))[1].update(dev["enrol"])
        items.setdefault(cell.test_chain.fingerprint, (cell.test_chain, set()))[1].update(dev["test"])
    db = EmbeddingCache(ctx.cache / "embeddings.sqlite")
    emb = Embedder(
        ctx.scored, ctx.encoders, db, ctx.exp.frontend, ctx.reporter, exclude=partners(frame), known_sha=ctx.shas
    )
    emb.run(items, ctx.executor, ahead="attacks")
    db.close()
    failed = sorted({m for m in emb.failures.values()})
    if failed:
        raise RunError(f"{len(failed)} utterance(s) have no embedding, e.g. {failed[0]}")
    return emb


def run_attacks(ctx: RunContext) -> str | None:
    """Attack, rescore and write ``attacks.csv`` (module docs); its file name, or None without ``attacks``."""
    spec = ctx.exp.attacks
    if spec is None:
        return None
    frame, cells, refs = ctx.trials.frame, ctx.exp.cells(), reference_cells(ctx.exp)
    picked = pd.concat(
        [attacked_trials(ctx.exp, frame, s, k).assign(kind=k) for s in ctx.trials.strata for k in spec.kinds]
    )
    short = [
        f"{s} {k}"
        for s in ctx.trials.strata
        for k in spec.kinds
        if not len(picked[(picked["stratum"] == s) & (picked["kind"] == k)])
    ]
    if short:
        raise RunError(f"no eval trials to attack for {', '.join(short)}")
    emb = _vectors(ctx, picked, cells, refs)
    rule = ThresholdRule.parse(spec.threshold)
    stage = Stage(
        ctx,
        emb,
        {e.label: dev_threshold(rule, emb, refs, frame, e) for e in ctx.encoders},
        AttackCache(ctx.cache / "adversarial"),
        partners(frame),
        {c.stratum: c for c in refs},
    )
    params = [spec.params(m, b) for m in spec.methods for b in spec.budgets]
    rows: list[dict[str, Any]] = []
    with ctx.reporter.task("attacks", len(picked) * len(ctx.encoders) * len(params)) as advance:
        for trial in picked.itertuples(index=False):
            rows += _attack_trial(stage, trial, params, [c for c in cells if c.stratum == trial.stratum], advance)
    atomic.write_csv(ctx.run.file(ATTACKS), pd.DataFrame(rows))
    return ATTACKS


def _attack_trial(stage: Stage, trial: Any, params: list[AttackParams], cells: list[Cell], advance: Any) -> list[dict]:
    """Rows of one trial: every encoder × attack × cell of its stratum."""
    ctx, emb = stage.ctx, stage.emb
    test = ctx.scored.by_id()[trial.test]
    loaded = audio.load(ctx.scored.resolve(test), ctx.exp.frontend, vad=True, span=test.span)
    rate, rows = loaded.sample_rate_hz, []
    direction = KIND_TRIALS[trial.kind][1]
    for enc in ctx.encoders:
        thr = stage.thresholds[enc.label]
        hits = nested_best([(p, stage.attacked(trial, enc, p, trial.kind, loaded)) for p in params], direction)
        for p, hit in zip(params, hits, strict=True):
            for cell in cells:
                enrol = emb.vectors[(trial.enrol, cell.enrol_chain.fingerprint, enc.fingerprint)]
                clean = emb.vectors[(trial.test, cell.test_chain.fingerprint, enc.fingerprint)]
                attacked = enc.embed([stage.degrade(cell, hit.wave, trial.test, rate)])[0]
                scores = [stage.cell_score(enc.label, cell.id, int(trial.trial_id)), 0.0]
                if hit.linf == 0:  # the clean audio itself: its vector must be the run's, its score the cell's
                    if attacked.tobytes() != clean.tobytes():
                        raise RunError(f"{enc.label}: {trial.test} in {cell.id} embeds differently from the run")
                    scores[1] = scores[0]
                else:
                    scores[1] = float(cosine_scores(enrol[None, :], attacked[None, :], np.zeros(1, np.int64),
                                                    np.zeros(1, np.int64))[0])  # fmt: skip
                accepted = bool(scores[1] >= thr)
                rows.append(
                    {
                        "model": enc.label,
                        "cell": cell.id,
                        **dict(cell.levels),
                        "stratum": trial.stratum,
                        "kind": trial.kind,
                        "method": p.method,
                        "norm": p.norm,
                        "budget": p.budget,
                        "trial_id": int(trial.trial_id),
                        "enrol": trial.enrol,
                        "test": trial.test,
                        "enrol_speaker": trial.enrol_speaker,
                        "test_speaker": trial.test_speaker,
                        "label": int(trial.label),
                        "threshold": thr,
                        "clean_score": float(scores[0]),
                        "score": float(scores[1]),
                        "success": int(succeeded(trial.kind, accepted)),
                        "linf": hit.linf,
                        "snr_db": hit.snr_db,
                        "steps": hit.steps,
                        "queries": hit.queries,
                        "kept_budget": hit.budget,
                        "kept_step": hit.kept_step,
                    }
                )
            advance(1)
    return rows
