"""CM experiments (``countermeasures:`` in an experiment YAML, e.g. E19): score a CM manifest's
dev and eval utterances through each cell's operator chain with each CM, and write the CM
fairness tables (:mod:`interbias.analysis.cm_fairness`).

The YAML's ``countermeasures`` entry: ``models`` (CM labels, :mod:`interbias.cm.models`),
optional ``bootstrap`` (replicates, default 200) and ``threshold`` (default ``eer``). The
factors must be two acoustic factors (test side); the corpus a CM manifest (``asvspoof5``,
``synthetic-cm`` or a manifest file with label and split columns); ``synthetic`` means its CM
form, ``synthetic-cm`` (:mod:`interbias.corpora.cm_corpus`, options are its spec's fields).

Run directory ``<out>/<experiment>-cm-<hash>/`` (the hash covers the resolved experiment, the
CM manifest and every checkpoint's sha256): ``results.csv``, ``cm_scores.csv``,
``cm_`` + the fairness report's two files (comparisons, per-group values),
``cm_tables.csv`` + ``cm_tables.md`` (Tables I–V), ``cm_interaction.csv``, ``cm_track1.csv``
(ASVspoof 5 Track 1 metrics per model × cell, pooled and per attack), ``cm_report.md``,
``cm_gap.png``, ``run.json`` (docs/outputs.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.utils import atomic
from interbias.utils.errors import ConfigError
from interbias.utils.seeding import canonical_json, sha256_text

KEYS = ("models", "bootstrap", "threshold")


def cm_spec(exp: Any) -> dict[str, Any] | None:
    """The validated ``countermeasures`` entry of an experiment, or None for an SV experiment."""
    from interbias.cm.models import CM_MODELS

    raw = exp.raw.get("countermeasures")
    if raw is None:
        return None
    where = exp.path.name if exp.path else exp.name
    if not isinstance(raw, dict) or not raw.get("models"):
        raise ConfigError(f"{where}: countermeasures: needs models: [label, ...]")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: countermeasures: unknown key {unknown[0]!r}; valid: {', '.join(KEYS)}")
    for label in raw["models"]:
        CM_MODELS.get(str(label))
    acoustic = exp.acoustic_factors
    if len(exp.factors) != 2 or len(acoustic) != 2 or any(lv.enrol.effective for f in acoustic for lv in f.levels):
        raise ConfigError(f"{where}: a countermeasure experiment has two acoustic factors applied to the test side")
    cm_frontend(exp)
    return {
        "models": [str(m) for m in raw["models"]],
        "bootstrap": int(raw.get("bootstrap", 200)),
        "threshold": str(raw.get("threshold", "eer")),
    }


#: ``frontend:`` keys a CM run cannot honour: each CM's input policy sets the length.
LENGTH_KEYS = ("min_duration_s", "max_duration_s")


def cm_frontend(exp: Any) -> Any:
    """The front end a CM experiment loads audio with: the CMs' 16 kHz, no duration limits (each
    CM's input policy fits the length), the YAML's ``frontend.resampler``. A duration key, or a
    rate other than 16 kHz, is refused: the CM path could not honour it."""
    from interbias.audio.frontend import FrontEnd
    from interbias.cm.frontends import SAMPLE_RATE_HZ

    raw = exp.raw.get("frontend") or {}
    where = exp.path.name if exp.path else exp.name
    for key in LENGTH_KEYS:
        if key in raw:
            raise ConfigError(
                f"{where}: frontend.{key}: a countermeasure experiment cannot honour it "
                "(each CM's input policy sets the input length); remove it"
            )
    if exp.frontend.sample_rate_hz != SAMPLE_RATE_HZ:
        raise ConfigError(
            f"{where}: frontend.sample_rate_hz: the CMs take {SAMPLE_RATE_HZ} Hz audio, "
            f"not {exp.frontend.sample_rate_hz}; remove it"
        )
    return FrontEnd(SAMPLE_RATE_HZ, 0.0, None, exp.frontend.resampler)


def choose_models(spec: dict[str, Any], encoders: list[str], default: tuple[str, ...]) -> list[str]:
    """``--encoders`` when it names CMs; the experiment's models when it is left at its SV default."""
    from interbias.cm.models import CM_MODELS

    if tuple(encoders) == tuple(default):
        return spec["models"]
    bad = [e for e in encoders if e not in CM_MODELS]
    if bad:
        raise ConfigError(
            f"this is a countermeasure experiment: --encoders must name CM models ({', '.join(CM_MODELS.names())}); "
            f"not: {', '.join(bad)}"
        )
    return list(encoders)


def run_cm_experiment(options: Any, reporter: Any = None, *, exp: Any = None) -> Any:
    """``interbias run`` of a countermeasure experiment (``RunOptions`` in, ``RunOutcome`` out):
    the SV conductor's options and outcome, this module's conductor. ``exp``: the experiment as
    loaded and checked by :func:`interbias.run.preflight.experiment_for_run` (None: loaded here)."""
    from interbias.run.conductor import Reporter, RunOptions, RunOutcome

    reporter = reporter or Reporter(quiet=options.quiet)
    return run_cm(options, reporter, default_encoders=RunOptions.encoders, outcome=RunOutcome, exp=exp)


def run_cm(options: Any, reporter: Any, *, default_encoders: tuple[str, ...], outcome: Any, exp: Any = None) -> Any:
    """Score, analyse and write a CM experiment (module docstring); returns a ``RunOutcome``."""
    from interbias.cm.report import write_outputs
    from interbias.corpora import check_runnable, load_corpus
    from interbias.corpora.cm_corpus import check_cm_manifest
    from interbias.experiments.schema import find_experiment, load_experiment
    from interbias.run.rundir import RunDir
    from interbias.utils.paths import cache_dir, conditions_dir

    t0 = time.perf_counter()
    if exp is None:  # called directly, not through the preflight
        exp = load_experiment(find_experiment(options.experiment, conditions_dir()), corpus=options.corpus)
        check_runnable(exp, root=options.corpus_root)
    spec = cm_spec(exp)
    assert spec is not None  # the caller dispatches only CM experiments
    labels = choose_models(spec, list(options.encoders), default_encoders)
    cache = Path(options.cache_dir or cache_dir())
    if exp.corpus.name == "synthetic" and not exp.corpus.manifest:  # its CM form: bona fide vs proxy attacks
        from interbias.corpora.cm_corpus import prepare_synthetic_cm

        manifest = prepare_synthetic_cm(None, cache, dict(exp.corpus.options), reporter)
    else:
        manifest = load_corpus(exp.corpus, root=options.corpus_root, cache=cache, reporter=reporter)
    check_cm_manifest(manifest)
    frontend = cm_frontend(exp)
    models = load_models(labels, resampler=frontend.resampler)
    run_id = (
        f"{exp.name}-cm-"
        + sha256_text(
            canonical_json([exp.resolved(), manifest.sha256(), {k: m.checkpoint_sha256 for k, m in models.items()}])
        )[:12]
    )
    folder = Path(options.out) / run_id
    folder.mkdir(parents=True, exist_ok=True)
    scores, failed = score_all(exp, manifest, models, cache, reporter, frontend)
    atomic.write_csv(folder / "cm_scores.csv", scores)
    ctx = {"exp": exp, "spec": spec, "models": models, "run_id": run_id, "failed": failed, "manifest": manifest}
    results = write_outputs(folder, scores, ctx)
    record = {
        "run_id": run_id, "experiment": exp.resolved(), "command": options.command, "models": {k: m.provenance() for k, m in models.items()}, "frontend": frontend.record(),
        "manifest_sha256": manifest.sha256(), "n_failed": {k: len(v) for k, v in failed.items()},
        "failed_first": {k: v[:5] for k, v in failed.items() if v}, "seconds": round(time.perf_counter() - t0, 2),
    }  # fmt: skip
    RunDir(folder).write_run_json(record)
    return outcome(folder, results, len(scores), 0, 0, [])


def load_models(labels: list[str], *, resampler: str = "polyphase") -> dict[str, Any]:
    from interbias.cm.models import load_cm

    return {label: load_cm(label, resampler=resampler) for label in labels}


def score_all(
    exp: Any, manifest: Any, models: dict, cache: Path, reporter: Any, frontend: Any
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Scores of every cell (dev + eval in the reference cell, eval elsewhere) and failures per cell."""
    from interbias.cm.report import grid
    from interbias.cm.scoring import score_cell
    from interbias.utils.errors import EncoderError

    for label, cm in models.items():  # a checkpoint trained at another rate is refused, not fed 16 kHz
        if cm.policy.sample_rate_hz != frontend.sample_rate_hz:
            raise EncoderError(
                f"{label}: its checkpoint was trained on {cm.policy.sample_rate_hz} Hz audio; this experiment's "
                f"front end gives {frontend.sample_rate_hz} Hz (score it with interbias cm score, which uses the "
                "checkpoint's own rate)"
            )
    _, ref, _ = grid(exp)
    dev = sorted((u for u in manifest if u.get("split") == "dev"), key=lambda u: u.id)
    ev = sorted((u for u in manifest if u.get("split") == "eval"), key=lambda u: u.id)
    frames, failed = [], {}
    cells = exp.cells()
    with reporter.task(f"{exp.name}: scoring {len(models)} CM(s)", len(cells)) as advance:
        for cell in cells:
            utts = dev + ev if cell.id == ref else ev
            frame, bad = score_cell(models, manifest, utts, cell, cache, frontend)
            frames.append(frame)
            failed[cell.id] = bad
            advance(1)
    return pd.concat(frames, ignore_index=True), failed
