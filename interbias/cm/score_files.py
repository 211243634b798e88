"""``interbias cm score``: one CM's logits and bona fide posterior for audio files or a manifest's
utterances, optionally through one operator or a chain of them (the degraded version of each file).

Each file is loaded at the CM's 16 kHz with the chosen resampler and no duration limits, then
(with ``--op``, once or several times) degraded by the operators in order at 16 kHz with seeds derived
from the file's sha256, the chain's fingerprint and ``seed`` (as ``interbias data degrade``), then
fitted by the model's
input policy and scored. A file that cannot be scored (not audio, empty, no signal, the
operator failed, less than :data:`interbias.cm.scoring.MIN_SIGNAL_S` of signal: the CM runs'
rule) is one line in ``failed`` and has no row; nothing is replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.utils.errors import AudioError, OperatorError

#: Columns of the score table.
COLUMNS = (
    "model", "file", "id", "label", "attack", "duration_s", "logit_spoof", "logit_bonafide", "log_odds", "score",
)  # fmt: skip

#: Manifest columns ``cm score --manifest`` keeps after :data:`COLUMNS` (those the manifest has),
#: so a breakdown such as ``scores cm-eval track1 --by family`` reads the score file alone.
KEPT_COLUMNS = ("speaker", "gender", "family", "voice", "text_id", "split")


@dataclass
class ScoreJob:
    """What to score: ``items`` are (file, id, label, attack) tuples; ``op``/``params`` one
    operator, or ``chain`` the ``--op`` specs (``NAME[:KEY=VALUE,...]``) in order."""

    items: list[tuple[Path, str, str, str]]
    op: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    chain: list[str] = field(default_factory=list)


def jobs_from(files: list[Path], manifest: Path | None) -> list[tuple[Path, str, str, str]]:
    """(file, id, label, attack) for each file, or each utterance of a manifest (label and attack
    from its columns when it has them)."""
    from interbias.corpora.manifest import Manifest
    from interbias.utils.errors import ConfigError

    if bool(files) == (manifest is not None):
        raise ConfigError("cm score: give audio FILES or --manifest M, not both and not neither")
    if manifest is None:
        return [(Path(f), Path(f).stem, "", "") for f in files]
    m = Manifest.read(Path(manifest))
    return [(m.resolve(u), u.id, str(u.get("label") or ""), str(u.get("attack") or "")) for u in m]


def with_manifest_columns(table: pd.DataFrame, manifest: Path | None) -> pd.DataFrame:
    """``table`` with the :data:`KEPT_COLUMNS` that ``manifest`` has, matched by utterance id
    (without a manifest, ``table`` as it is)."""
    from interbias.corpora.manifest import Manifest

    if manifest is None:
        return table
    m = Manifest.read(Path(manifest))
    have = [c for c in KEPT_COLUMNS if c in m.columns() and c not in table.columns]
    by_id = m.by_id()
    extra = {c: [by_id[uid].get(c) or "" for uid in table["id"]] for c in have}
    return table.assign(**extra) if have else table


def chain_for(op: str | None, params: dict[str, str], chain: list[str] | tuple[str, ...] = ()) -> Any:
    """The chain of one ``--op`` with its ``--set`` parameters, or of several ``--op`` specs in order
    (None: no operator); an operator that mixes in other talkers is refused (``cm score`` has no
    corpus to draw them from)."""
    from interbias.operators import Chain, make_operator
    from interbias.operators.degrade import chain_op

    if op is not None and chain:
        raise OperatorError("cm score: give one operator (--op with --set) or a chain (several --op), not both")
    if op is None and params:
        raise OperatorError("cm score: --set needs one --op")
    if chain:
        built, where = Chain(tuple(chain_op(s) for s in chain)), "--op"
    elif op is not None:
        built, where = Chain((make_operator(op, params, where="--op"),)), f"--op {op}"
    else:
        return None
    if built.draws_talkers:
        raise OperatorError(f"{where}: an operator mixes in other talkers; cm score has no corpus to draw them from")
    return built


def load_one(path: Path, fe: Any, chain: Any, seed: int) -> np.ndarray:
    """The file at the CM's rate, degraded by ``chain`` when given (module docstring)."""
    from interbias.audio.frontend import load
    from interbias.cm.scoring import check_cm_signal
    from interbias.operators import OpContext
    from interbias.operators.silence import check_chain_output
    from interbias.utils.paths import cache_dir
    from interbias.utils.seeding import sha256_file

    x = load(path, fe).samples
    check_cm_signal(x, fe.sample_rate_hz, str(path))
    if chain is None:
        return x
    y, _ = chain.apply(
        x,
        utterance_sha256=sha256_file(path),
        key=f"{chain.fingerprint}~seed{seed}",
        make_ctx=lambda rng: OpContext(
            sample_rate_hz=fe.sample_rate_hz, utterance_id=path.stem, speaker="", rng=rng, corpus=None,
            frontend=fe, cache_dir=cache_dir(),
        ),
    )  # fmt: skip
    if chain.effective:
        check_chain_output(x, y, fe.sample_rate_hz)
    return y


def score_files(cm: Any, job: ScoreJob, reporter: Any, *, batch_size: int = 16) -> tuple[pd.DataFrame, list[str]]:
    """The score table (:data:`COLUMNS`) of ``job`` under ``cm`` and one line per failed file."""
    from interbias.audio.frontend import FrontEnd
    from interbias.cm.models import posterior

    fe = FrontEnd(cm.policy.sample_rate_hz, 0.0, None, cm.policy.resampler)
    chain = chain_for(job.op, job.params, job.chain)
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    pending: list[tuple[tuple[Path, str, str, str], np.ndarray]] = []

    def flush() -> None:
        logits = cm.logits([w for _, w in pending], batch_size=batch_size)
        post = posterior(logits)
        for ((path, uid, label, attack), w), z, p in zip(pending, logits, post, strict=True):
            rows.append(
                {
                    "model": cm.card.label, "file": str(path), "id": uid, "label": label, "attack": attack,
                    "duration_s": len(w) / fe.sample_rate_hz, "logit_spoof": float(z[0]),
                    "logit_bonafide": float(z[1]), "log_odds": float(z[1] - z[0]), "score": float(p),
                }
            )  # fmt: skip
        pending.clear()

    with reporter.task(f"{cm.card.label}: scoring {len(job.items)} file(s)", len(job.items)) as advance:
        for item in job.items:
            try:
                pending.append((item, load_one(item[0], fe, chain, job.seed)))
            except (AudioError, OperatorError) as exc:
                msg = str(exc)
                failed.append(msg if msg.startswith(str(item[0])) else f"{item[0]}: {msg}")
            if len(pending) >= batch_size:
                flush()
            advance(1)
        if pending:
            flush()
    return pd.DataFrame(rows, columns=list(COLUMNS)), failed


def header(cm: Any, job: ScoreJob) -> dict[str, Any]:
    """What the scores mean and where they came from (the JSON output's head)."""
    from interbias.cm.models import SCORE_CONVENTION

    chain = chain_for(None, {}, job.chain)
    return {
        "model": cm.provenance(),
        "score_convention": SCORE_CONVENTION,
        "operator": None if job.op is None else {"op": job.op, "params": job.params, "seed": job.seed},
        "chain": None if not job.chain else {"specs": job.chain, "label": chain.label, "seed": job.seed},
    }
