"""``interbias run``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from interbias.cli import app, guarded
from interbias.cli.numeric import check_numbers
from interbias.cli.options import DataRootOpt, NoiseDirOpt, QuietOpt, json_flag
from interbias.cli.tables import print_frame
from interbias.run.frame import errored_split, errored_words, stage_words
from interbias.run.results import SUMMARY_COLUMNS

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment
    from interbias.run.frame import Analyses, RunEnd, RunOutcome
from interbias.utils.errors import EncoderError, RunError
from interbias.utils.keyvalue import comma_list


def encoder_labels(text: str) -> list[str]:
    """The labels of ``--encoders``; "" or only commas (nothing to embed, an empty results.csv) is an error."""
    labels = comma_list(text)
    if not labels:
        raise EncoderError(f"--encoders names no encoder ({text!r}); give comma-separated labels, e.g. CAM++,GE2E")
    return labels


def check_precision_used(precision: str, exp: Experiment) -> None:
    """``--precision`` other than fp32 is for runs that embed with speaker encoders (the
    countermeasure and tracks runs load their models in fp32): anything else is an error, not ignored."""
    from interbias.run.tasks import task_of

    if precision != "fp32" and not task_of(exp).embeds:
        raise RunError(f"--precision {precision} applies to speaker-verification experiments; this one runs in fp32")


def after_run_analyses(end: RunEnd) -> Analyses:
    """The analyses ``interbias run`` writes beside results.csv, for every run kind
    (:func:`interbias.analysis.after_run.after_run`, imported only when a run ends)."""
    from interbias.analysis.after_run import after_run

    return after_run(end)


PlanOpt = Annotated[
    Path | None,
    typer.Option(
        help="plan.csv of `interbias plan`: draw the speakers per stratum it asks for this experiment "
        "(the most any of its effects needs) and the target and non-target trials per stratum that keep the "
        "pilot's trials per speaker."
    ),
]
AddressOption = Annotated[
    str | None,
    typer.Option(help="Ray address for --executor ray: auto, HOST:6379 or ray://HOST:10001 (default: a local Ray)."),
]
JobsOption = Annotated[
    int | None,
    typer.Option(
        help="Worker processes for --executor local: on CPU they embed, on CUDA they decode and degrade the audio "
        "for this process, which drives the GPU (default for runs of 256+ utterances: the cores on CPU, all but one "
        "on CUDA; else 1). 1 works in this process. Each process uses $INTERBIAS_THREADS threads (default 1)."
    ),
]
RuntimeOption = Annotated[
    str | None,
    typer.Option(
        help="Inference runtime where an encoder offers it: auto, eager or onnxruntime "
        "(default $INTERBIAS_RUNTIME, else auto)."
    ),
]
PrecisionOption = Annotated[
    str,
    typer.Option(help="Numeric precision of the encoders: fp32, tf32 (CUDA only) or bf16 (recorded in run.json)."),
]

MaxFailureShareOption = Annotated[
    float,
    typer.Option(help="Share of a cell's trials that may be dropped for failed utterances before the cell errors."),
]
ManifestOption = Annotated[
    Path | None,
    typer.Option(
        help="Your corpus: a CSV/JSONL manifest (path, speaker, any attributes) or a Lhotse "
        "recordings+supervisions pair (a file of it, or their folder). Replaces the experiment's corpus."
    ),
]
TrimSilenceOption = Annotated[
    bool,
    typer.Option(
        "--trim-silence",
        help="Trim leading and trailing digital silence from every input before its checks "
        "(sets frontend.trim_silence; in the cache key and run.json).",
    ),
]
BackendOption = Annotated[
    str | None,
    typer.Option(
        help="Scoring back-end: cosine, whiten+lnorm, lda+cosine or plda, fitted on the dev "
        "split's clean embeddings, or whiten+lnorm+adapt / plda+adapt, then adapted to each "
        "condition's unlabelled dev embeddings (sets scoring.backend; docs/guide/backends.md).",
    ),
]
DevShareOption = Annotated[
    float | None,
    typer.Option(
        help="Share of each stratum's speakers drawn as a speaker-disjoint dev split (sets trials.dev_share), "
        "on which calibration, back-ends and `interbias fuse` are fitted.",
    ),
]
CmOption = Annotated[
    str | None,
    typer.Option(
        "--cm",
        help="Comma-separated CM labels that also score every trial's test audio in a spoofing experiment "
        "(e.g. ResNet18-logspec); the run then writes sasv_fusion.csv (ASV + CM fusion).",
    ),
]
TrialsOption = Annotated[
    Path | None,
    typer.Option(
        help="Score this trial list instead of sampling: VoxCeleb '1|0 enrol test' or "
        "Kaldi/WeSpeaker 'enrol test target|nontarget', names matched by manifest id or relative path."
    ),
]


@app.command(epilog="Example: interbias run E16 --corpus synthetic --encoders CAM++,mfcc-stats")
@guarded
def run(
    experiment: Annotated[str, typer.Argument(help="Experiment id (E16) or a path to its YAML file.")],
    corpus: Annotated[str | None, typer.Option(help="Corpus (or variant) to run on, e.g. synthetic.")] = None,
    corpus_root: Annotated[Path | None, typer.Option(help="Root folder of the corpus on disk.")] = None,
    encoders: Annotated[str, typer.Option(help="Comma-separated encoder labels.")] = "CAM++,GE2E,mfcc-stats",
    out: Annotated[Path, typer.Option(help="Parent folder of run directories.")] = Path("results"),
    device: Annotated[str, typer.Option(help="cpu or cuda[:N] (no fallback).")] = "cpu",
    max_trials: Annotated[int | None, typer.Option(help="Cap on trials per stratum (half targets).")] = None,
    max_failure_share: MaxFailureShareOption = 0.01,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default $INTERBIAS_CACHE).")] = None,
    quiet: QuietOpt = False,
    manifest: ManifestOption = None,
    data_root: DataRootOpt = None,
    trials: TrialsOption = None,
    noise_dir: NoiseDirOpt = None,
    trim_silence: TrimSilenceOption = False,
    trials_format: Annotated[
        str | None, typer.Option(help="Trial list format: auto (default), voxceleb or kaldi.")
    ] = None,
    executor: Annotated[
        str, typer.Option(help="Who computes embeddings: local (this process) or ray (a Ray cluster).")
    ] = "local",
    address: AddressOption = None,
    jobs: JobsOption = None,
    runtime: RuntimeOption = None,
    precision: PrecisionOption = "fp32",
    cm: CmOption = None,
    plan: PlanOpt = None,
    backend: BackendOption = None,
    dev_share: DevShareOption = None,
    wide: Annotated[bool, typer.Option("--wide", help="Also print the results table in full.")] = False,
    as_json: Annotated[bool, json_flag("Print the closing summary as JSON.")] = False,
) -> None:
    """Run an experiment: draw its trials once, embed, score every cell × encoder.

    Writes results/<run_id>/: every file and column is explained in docs/outputs.md."""
    check_numbers("run", max_trials=max_trials, max_failure_share=max_failure_share, jobs=jobs, dev_share=dev_share)
    _note_jobs(jobs)
    from interbias.run.conductor import RunOptions
    from interbias.run.tasks import experiment_for_run, run_experiment

    started = time.monotonic()
    options = RunOptions(
        experiment=experiment,
        after_run=after_run_analyses,
        encoders=encoder_labels(encoders),
        corpus=corpus,
        corpus_root=corpus_root,
        out=out,
        device=device,
        max_trials=max_trials,
        max_failure_share=max_failure_share,
        cache_dir=cache_dir,
        quiet=quiet,
        manifest=manifest,
        data_root=data_root,
        trials=trials,
        trials_format=trials_format,
        noise_dir=noise_dir,
        trim_silence=trim_silence,
        backend=backend,
        dev_share=dev_share,
        executor=executor,
        address=address,
        plan=plan,
        jobs=jobs,
        runtime=runtime,
        precision=precision,
        countermeasures=tuple(comma_list(cm)) if cm is not None else None,
        command=["interbias", *sys.argv[1:]],
    )
    exp = experiment_for_run(options)  # the one load and check of the experiment, before any work
    check_precision_used(precision, exp)
    outcome = run_experiment(options, exp=exp)
    _report(outcome, quiet, time.monotonic() - started, wide=wide, as_json=as_json)


def closing(outcome: RunOutcome, seconds: float) -> dict[str, Any]:
    """What a finished run tells: rows, cells, models, failures, time, where and what next."""
    from interbias.run.rundir import RESULTS, RUN_JSON, RunDir

    rj = RunDir(outcome.run_dir).read_json(RUN_JSON) or {}
    frame = outcome.results
    return {
        "run_dir": str(outcome.run_dir),
        "rows": len(frame),
        "cells": int(frame["cell"].nunique()) if "cell" in frame else None,
        "models": int(frame["model"].nunique()) if "model" in frame else None,
        "failed_utterances": rj.get("n_failures"),
        "errored_cells": len(outcome.errored_cells),
        "seconds": round(seconds, 1),
        "embedded": outcome.n_embedded,
        "from_cache": outcome.n_cached,
        "cells_reused": outcome.cells_done_before,
        "batch_fallbacks": rj.get("counts", {}).get("batch_fallbacks", 0),
        "oom_retries": rj.get("counts", {}).get("oom_retries", 0),
        "batch_fallback_reasons": rj.get("batch_fallback_reasons", {}),
        "results": str(RunDir(outcome.run_dir).file(RESULTS)),
        "macro_eer": {m: round(v, 6) for m, (v, _) in macro_eer(frame).items()},
        "next": f"interbias report {outcome.run_dir}" if outcome.report is None else f"read {outcome.report}",
    }


def macro_eer(results: Any) -> dict[str, tuple[float, int]]:
    """Per model (in the table's order): its EER averaged over the run's cells with equal weight
    (the macro EER of ``analyze`` for one experiment) and the number of cells averaged; cells
    without an EER are left out, a model with none is left out. Empty without ``model``, ``cell``
    and ``eer`` columns or with more than one row per model and cell (a tracks run's groups)."""
    import pandas as pd

    if not {"model", "cell", "eer"} <= set(results.columns) or results.duplicated(["model", "cell"]).any():
        return {}
    out = {}
    for model, grp in results.groupby("model", sort=False):
        vals = pd.to_numeric(grp["eer"], errors="coerce").dropna()
        if len(vals):
            out[str(model)] = (float(vals.mean()), len(vals))
    return out


def macro_line(results: Any) -> str | None:
    """``macro EER per model (mean over 8 cells): CAM++ 0.109, GE2E 0.226``; a model averaged over
    fewer cells than another (cells without an EER) names its count; None without EERs."""
    from interbias.cli.tables import fmt

    per = macro_eer(results)
    if not per:
        return None
    counts = {n for _, n in per.values()}
    if len(counts) == 1:
        n = counts.pop()
        head = f"macro EER per model (mean over {n} cell{'' if n == 1 else 's'})"
        return f"{head}: " + ", ".join(f"{m} {fmt(v)}" for m, (v, _) in per.items())
    return "macro EER per model (mean over its cells): " + ", ".join(
        f"{m} {fmt(v)} ({n} cell{'' if n == 1 else 's'})" for m, (v, n) in per.items()
    )


def glue_values(text: str) -> str:
    """``text`` with each ``label 0.123`` pair joined by a no-break space, so wrapping never
    parts a model from its value (:func:`interbias.utils.progress.wrapped` prints it as a space)."""
    import re

    return re.sub(r"(\S) (\d+\.\d+)", "\\1\u00a0\\2", text)


def embedding_lines(info: dict[str, Any]) -> list[str]:
    """The closing lines about the embedding stage (``info``: :func:`closing`): what was
    embedded or reused, the batches that fell back to one at a time and the out-of-memory
    halvings, and a warning with the first reason when a batch fell back."""
    lines = [
        f"embedded {info['embedded']}, cached {info['from_cache']}, cells reused {info['cells_reused']}, "
        f"batch fallbacks {info['batch_fallbacks']}, OOM halvings {info['oom_retries']}"
    ]
    if info["batch_fallbacks"]:
        why = "; ".join(f"{k}: {v}" for k, v in sorted(info["batch_fallback_reasons"].items()))
        lines.append(
            f"warning: {info['batch_fallbacks']} network batch(es) failed and were embedded one at a time "
            f"(slower; run.json counts.batch_fallbacks); first reason: {why}"
        )
    return lines


def _report(outcome: RunOutcome, quiet: bool, seconds: float, *, wide: bool = False, as_json: bool = False) -> None:
    """A few closing lines (rows, failures, time, where the results are, the macro EER per model,
    the next command); the results table with --wide; exit 1 on errored cells."""
    import json

    from interbias.cli.tables import echo_wrapped

    info = closing(outcome, seconds)
    if as_json:
        typer.echo(json.dumps(info, indent=1))
    else:
        if wide and not quiet:
            print_frame(outcome.results, f"{outcome.run_dir.name}: results", list(SUMMARY_COLUMNS), wide=True)
            from interbias.run.rundir import RunDir

            spoofing = RunDir(outcome.run_dir).read_spoofing()
            if spoofing is not None:
                print_frame(spoofing, "deception success rate over encoders (DSR = W / (A × N))", wide=True)
        fails = "unknown" if info["failed_utterances"] is None else info["failed_utterances"]
        echo_wrapped(
            f"{outcome.run_dir.name}: {info['rows']} rows ({info['cells']} cells × {info['models']} "
            f"model{'' if info['models'] == 1 else 's'}), "
            f"{fails} failed utterance(s), {errored_words(outcome.errored_cells)}, {_duration(seconds)}"
        )
        for line in embedding_lines(info):
            echo_wrapped(line)
        note_restarts(outcome.run_dir)
        typer.echo(f"results: {info['results']}")  # one line: make demo reads it
        if (macro := macro_line(outcome.results)) is not None:
            echo_wrapped(glue_values(macro))
        typer.echo(f"next: {info['next']}")
    if outcome.errored_cells:  # one line; run.json lists every errored cell
        n = len(outcome.errored_cells)
        first = outcome.errored_cells[0]
        cells, stages = errored_split(outcome.errored_cells)
        parts = [f"{len(cells)} cell{'s' if len(cells) > 1 else ''}"] if cells else []
        parts += [stage_words(stages)] if stages else []
        what = ", ".join(parts)
        more = f"{what} errored (all listed in run.json errored_cells); first: " if n > 1 else ""
        typer.echo(f"error: {more}{first}", err=True)
        raise typer.Exit(1)


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _note_jobs(jobs: int | None) -> None:
    """Say on stderr that a ``--jobs`` above the cap is capped (:func:`interbias.embedding.jobs.jobs_note`)."""
    from interbias.embedding.jobs import jobs_note

    note = jobs_note(jobs)
    if note:
        typer.echo(note, err=True)


def note_restarts(run_dir: Path) -> None:
    """Say when worker processes died and were restarted (run.json ``executor.worker_restarts``):
    the results are complete, but a run that keeps losing workers is slower and worth a look;
    and when completion records failed their checksum (``records_redone``): scored again."""
    from interbias.cli.tables import echo_wrapped
    from interbias.run.rundir import RUN_JSON, RunDir

    record = RunDir(run_dir).read_json(RUN_JSON) or {}
    n = int((record.get("executor") or {}).get("worker_restarts") or 0)
    if n:
        echo_wrapped(
            f"note: worker processes died {n} time(s) and their work was redone in fresh ones (the results are "
            "complete; run.json executor.worker_restarts; --jobs 1 shows a failure in this process)"
        )
    redone = record.get("records_redone") or {}
    if redone:
        first, why = next(iter(redone.items()))
        echo_wrapped(
            f"note: {len(redone)} completion record(s) failed their checksum and their cells were scored again "
            f"(run.json records_redone); first: {first}: {why}"
        )
