"""The inputs of a run, loaded and checked before its directory exists.

:class:`RunOptions` is what ``interbias run`` was asked; :func:`load_inputs` takes the
experiment as the preflight loaded it (:func:`interbias.run.tasks.experiment_for_run`) and
loads the rest: a speaker plan, the executor and every encoder, the corpus manifest (checked),
an external trial list or attack set, then draws the trials and the score-normalisation cohort,
reads every trial utterance's file once and computes the run id
(:func:`interbias.run.results.run_id`). The result, :class:`RunContext`, is everything the
conductor's stages (:mod:`interbias.run.conductor`) work with; a refusal here leaves nothing behind.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interbias.corpora import check_manifest, load_corpus, needed_attributes
from interbias.corpora.attacks import AttackSet, load_attacks
from interbias.corpora.fingerprint import corpus_verdict
from interbias.corpora.manifest import Manifest
from interbias.corpora.manifest_checks import check_distinct_audio, partly_labelled
from interbias.embedding.executors import Executor
from interbias.embedding.stage import audio_digests
from interbias.encoders import Encoder
from interbias.experiments.schema import Experiment
from interbias.run.backend_set import RunBackends
from interbias.run.frame import AfterRun
from interbias.run.normalise import cohort_audio_sha256, norm_label
from interbias.run.results import revision, run_id
from interbias.run.rundir import RunDir
from interbias.trials.cohort import Cohort, draw_cohort
from interbias.trials.external import external_trials
from interbias.trials.fit import judge_manifest
from interbias.trials.sampler import TrialList, draw_trials, shortfall
from interbias.trials.speaker_budget import PlanRequest, apply_plan, check_drawn
from interbias.utils.errors import RunError, ShortfallError
from interbias.utils.paths import cache_dir as default_cache_dir
from interbias.utils.progress import Reporter


@dataclass
class RunOptions:
    experiment: str
    encoders: Sequence[str] = ("CAM++", "GE2E", "mfcc-stats")
    corpus: str | None = None
    corpus_root: Path | None = None
    out: Path = Path("results")
    device: str = "cpu"
    max_trials: int | None = None
    max_failure_share: float = 0.01
    cache_dir: Path | None = None
    quiet: bool = False
    #: A user's manifest (CSV/JSONL/Lhotse) replacing the experiment's corpus, its data root,
    #: and an external trial list (with its format) replacing the sampled one.
    manifest: Path | None = None
    data_root: Path | None = None
    trials: Path | None = None
    trials_format: str | None = None
    #: A folder of recorded noise for the experiment's environmental-noise levels (``--noise-dir``).
    noise_dir: Path | None = None
    #: Trim leading and trailing digital silence from every input (``--trim-silence``; sets ``frontend.trim_silence``).
    trim_silence: bool = False
    #: The scoring back-end (``--backend``; sets ``scoring.backend``); None: the experiment's.
    backend: str | None = None
    #: The dev split's share of speakers (``--dev-share``; sets ``trials.dev_share``); None: the experiment's.
    dev_share: float | None = None
    #: Who computes embeddings: ``local`` (this process) or ``ray`` (see interbias.embedding.executors).
    executor: str = "local"
    #: Ray cluster address for ``executor="ray"`` (None: a local Ray instance).
    address: str | None = None
    #: A plan.csv of ``interbias plan``: draw the speakers per stratum it asks for this experiment.
    plan: Path | None = None
    #: Worker processes of the local executor (None: automatic, see interbias.embedding.executors).
    jobs: int | None = None
    #: Inference runtime where an encoder offers it: auto, eager or onnxruntime (None: $INTERBIAS_RUNTIME, else auto).
    runtime: str | None = None
    #: Numeric precision of the encoders: fp32 (default), tf32 or bf16 (interbias.embedding.device).
    precision: str = "fp32"
    #: CM labels that score every trial's test audio (``--cm``; sets ``spoofing.countermeasures``); None: the YAML's.
    countermeasures: tuple[str, ...] | None = None
    command: list[str] = field(default_factory=lambda: list(sys.argv))
    #: The after-run hook of every kind (:data:`interbias.run.frame.AfterRun`: a
    #: :class:`~interbias.run.frame.RunEnd` in, :class:`~interbias.run.frame.Analyses` out), called
    #: by the run frame once the task's rows are written: ``interbias run`` passes
    #: :func:`interbias.analysis.after_run.after_run` (the spoofing table, attributes.parquet,
    #: fairness; a CM run's results rows and tables); None writes none (the run layer does not
    #: import the analysis).
    after_run: AfterRun | None = None


@dataclass
class RunContext:
    """Everything a run works with once its inputs are loaded and checked: the experiment, the
    corpus (``manifest``) and what is embedded (``scored``: the corpus plus any attack audio),
    the encoders and who runs them, the trial list, the run directory and its identity."""

    options: RunOptions
    reporter: Reporter
    exp: Experiment
    manifest: Manifest
    scored: Manifest
    encoders: list[Encoder]
    executor: Executor
    cache: Path
    trials: TrialList
    attacks: AttackSet | None
    run: RunDir
    run_id: str
    rev: str
    timings: dict[str, float]
    t0: float
    #: sha256 of every trial utterance's file and, per stratum, one digest of them (part of the run id).
    shas: dict[str, str] = field(default_factory=dict)
    audio: dict[str, str] = field(default_factory=dict)
    #: The score-normalisation cohort (``scoring.norm`` other than none) and its utterances left out per model.
    cohort: Cohort | None = None
    cohort_missing: dict[str, int] = field(default_factory=dict)
    #: The run's fitted scoring back-ends (:mod:`interbias.run.backend_stage`; None before they are fitted).
    backends: RunBackends | None = None
    #: The countermeasures that score every trial's test audio (label -> loaded CM; :mod:`interbias.run.cm_stage`).
    cms: dict[str, Any] = field(default_factory=dict)

    def models(self) -> list[str]:
        """results ``model`` labels in order: each encoder, then its normalised version."""
        out = []
        for e in self.encoders:
            out += [e.label] + ([norm_label(e.label, self.exp.scoring)] if self.cohort else [])
        return out


def read_corpus(
    exp: Experiment, options: RunOptions, cache: Path, reporter: Reporter, timings: dict[str, float]
) -> tuple[Manifest, TrialList | None, AttackSet | None]:
    """The corpus manifest (checked), the external trial list if the experiment names one, and
    the attack set if it has spoofing; their times go into ``timings``."""
    t = time.perf_counter()
    named = Path(exp.corpus.manifest).name if exp.corpus.manifest else exp.corpus.name
    reporter.info(f"corpus {named}: {'reading' if exp.corpus.manifest else 'preparing'} manifest")
    manifest = load_corpus(exp.corpus, root=options.corpus_root, cache=cache, reporter=reporter)
    if exp.corpus.manifest and (short := judge_manifest(exp, manifest)):  # one line per missing thing
        raise ShortfallError([s.line() for s in short])
    check_manifest(exp, manifest)
    for left in exp.left_out:
        reporter.notice(f"{exp.name}: {left.line()}", wrap=True)
    if (verdict := corpus_verdict(manifest)) is not None:
        (reporter.notice if verdict.status == "differs" else reporter.info)(verdict.line, wrap=True)
    if note := partly_labelled(
        manifest.utterances, needed_attributes(exp), where=f"{exp.name}: corpus {manifest.name!r}"
    ):
        reporter.notice(note)
    listed = external_trials(exp, manifest, max_trials=options.max_trials)
    timings["corpus_s"] = time.perf_counter() - t
    attacks = None
    if listed is not None and exp.spoofing is not None:
        raise RunError(f"{exp.name}: spoof trials are sampled; an external trial list (trials.list) cannot carry them")
    if exp.spoofing is not None:
        t = time.perf_counter()
        attacks = load_attacks(exp.spoofing, exp.corpus, manifest, cache)
        timings["attacks_s"] = time.perf_counter() - t
    return manifest, listed, attacks


def draw_inputs(
    exp: Experiment,
    manifest: Manifest,
    listed: TrialList | None,
    *,
    max_trials: int | None = None,
    attacks: AttackSet | None = None,
    request: PlanRequest | None = None,
) -> tuple[TrialList, Cohort | None]:
    """The trials (``listed``, else drawn; a plan's speakers checked) and the score-normalisation
    cohort (None without ``scoring.norm``); what cannot be drawn is one typed error line
    (``validate`` calls this too, so it refuses what ``run`` refuses)."""
    trials = listed if listed is not None else draw_trials(exp, manifest, max_trials=max_trials, attacks=attacks)
    if request is not None and listed is None:
        check_drawn(request, trials.strata)
    cohort = draw_cohort(exp, manifest, trials.frame) if exp.scoring.norm != "none" else None
    return trials, cohort


def with_plan(options: RunOptions, exp: Experiment, reporter: Reporter) -> tuple[Experiment, PlanRequest | None]:
    """``exp`` drawing the speakers per stratum ``options.plan`` asks for, and that request
    (``exp`` and None without a plan); a plan of another experiment is refused, before any work."""
    if options.plan is None:
        return exp, None
    exp, request = apply_plan(exp, Path(options.plan))
    reporter.info(request.describe(Path(options.plan), exp))
    return exp, request


def load_inputs(
    options: RunOptions,
    exp: Experiment,
    request: PlanRequest | None,
    who: tuple[Executor, list[Encoder]],
    reporter: Reporter,
    t0: float,
    cms: dict[str, Any] | None = None,
) -> RunContext:
    """Load and check every input besides the experiment (:func:`with_plan` applied) and the
    executor and encoders (``who``, loaded since ``t0``; ``cms``: the loaded countermeasures of
    :mod:`interbias.run.cm_stage`), then draw the trials: before the run
    directory exists, so a refusal leaves nothing behind."""
    executor, encoders = who
    timings: dict[str, float] = {"load_encoders_s": time.perf_counter() - t0}
    cache = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    manifest, listed, attacks = read_corpus(exp, options, cache, reporter, timings)
    t = time.perf_counter()
    trials, cohort = draw_inputs(exp, manifest, listed, max_trials=options.max_trials, attacks=attacks, request=request)
    timings["trials_s"] = time.perf_counter() - t
    if listed is None and (short := shortfall(trials.info)):
        reporter.notice(short, wrap=True)
    scored = attacks.extend(manifest) if attacks else manifest  # attack audio is embedded too
    t = time.perf_counter()
    shas, audio = audio_digests(trials, scored)  # every trial file read once: its bytes are part of the run id
    bona = manifest.by_id()  # attack audio may be made from corpus files; the corpus itself may not repeat
    check_distinct_audio({u: h for u, h in shas.items() if h and u in bona}, where=f"corpus {manifest.name!r}")
    timings["audio_sha256_s"] = time.perf_counter() - t
    shas = {**shas, **cohort_audio_sha256(cohort, manifest)} if cohort is not None else shas  # cohort audio too
    rev = revision()
    attacks_sha256 = attacks.sha256 if attacks else None
    rid = run_id(exp, manifest, encoders, rev=rev, max_trials=options.max_trials, listed=listed,
                 attacks_sha256=attacks_sha256, audio_sha256=shas,
                 countermeasures={k: m.checkpoint_sha256 for k, m in (cms or {}).items()},
                 operator_files=operator_files(exp))  # fmt: skip
    return RunContext(
        options=options,
        reporter=reporter,
        exp=exp,
        manifest=manifest,
        scored=scored,
        encoders=encoders,
        executor=executor,
        cache=cache,
        trials=trials,
        attacks=attacks,
        run=RunDir(Path(options.out) / rid),
        run_id=rid,
        rev=rev,
        timings=timings,
        t0=t0,
        shas=shas,
        audio=audio,
        cohort=cohort,
        cms=dict(cms or {}),
    )


def operator_files(exp: Experiment) -> dict[str, str]:
    """Chain fingerprint -> the sha256 fingerprint of the files its operators read from disk,
    for every chain of ``exp``'s cells that reads any (the run id includes them)."""
    out: dict[str, str] = {}
    for cell in exp.cells():
        for chain in (cell.enrol_chain, cell.test_chain):
            if chain.fingerprint not in out and (fp := chain.files_fingerprint()):
                out[chain.fingerprint] = fp
    return out
