"""``interbias cm``: countermeasure models — list them, train the study's ResNet-18 CMs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from interbias.cli import app, guarded
from interbias.cli.numeric import check_numbers
from interbias.cli.options import (
    ChainAlias,
    ForceOpt,
    JsonOpt,
    OpSetOpt,
    ParamAlias,
    QuietOpt,
    json_flag,
    operator_or_chain,
)

cm_app = typer.Typer(
    help="Countermeasure (spoofing detector) models: list them, score audio files with one, and train them with the deepfake "
    "gender-fairness study's recipe. Metrics of score files: `interbias scores cm-eval`.",
    epilog="Example: interbias cm models",
    no_args_is_help=True,
)
app.add_typer(cm_app, name="cm")


@cm_app.command(
    "train",
    epilog="Example: interbias cm train --model ResNet18-logspec --config small",
)
@guarded
def train(
    model: Annotated[
        str,
        typer.Option(
            help="CM label: ResNet18-logspec, -cqt, -lfcc, -wavlm, -wav2vec2, AASIST, AASIST-L, LCNN-lfcc, "
            "LCNN-wav2vec2, GMM-lfcc, or LCNN-LFCC-frames (the frame-level region detector of ADD 2023 Track 2)."
        ),
    ],
    corpus: Annotated[
        str | None,
        typer.Option(
            help="synthetic-cm: the offline proxy CM corpus (default when no --manifest); synthetic-had: its "
            "partially fake (spliced) form, for LCNN-LFCC-frames."
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            help="A CM manifest (label bonafide|spoof, split train|dev|eval), e.g. from `interbias data prepare asvspoof5`."
        ),
    ] = None,
    config: Annotated[str, typer.Option(help="paper (the study's recipe) or small (minutes on a CPU).")] = "paper",
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="Override one setting KEY=VALUE, e.g. --set max_epochs=50."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Output folder (default: the label's model folder, where runs find it; AASIST: its trained/ subfolder)."
        ),
    ] = None,
    frontend_path: Annotated[
        Path | None, typer.Option(help="Local Hugging Face folder of the WavLM / wav2vec 2.0 front end.")
    ] = None,
    stop_after: Annotated[
        int | None, typer.Option(help="Stop after this many epochs (resume later by running the same command).")
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default $INTERBIAS_CACHE).")] = None,
    quiet: QuietOpt = False,
    task: Annotated[
        str,
        typer.Option(help="detection (bona fide vs spoof) or recognition (ADD 2023 Track 3: one class per algorithm)."),
    ] = "detection",
    unknown: Annotated[
        list[str] | None, typer.Option(help="recognition: an algorithm held out of training (repeatable).")
    ] = None,
) -> None:
    """Train a CM (ResNet18-<frontend>, LCNN-<frontend>, or AASIST / AASIST-L from a seeded start)
    with the study's recipe: AdamW, class-weighted cross-entropy, ReduceLROnPlateau and early
    stopping on the dev loss, the best epoch's checkpoint; resumes from the last finished epoch of
    the same run. GMM-lfcc trains by EM instead; --task recognition trains one output per
    algorithm with the --unknown ones held out (ADD 2023 Track 3).

    Writes checkpoint.pt, curve.csv, training.json and state.pt (docs/countermeasures.md)."""
    check_numbers("cm train", stop_after=stop_after)
    from interbias.cm.models import CM_MODELS
    from interbias.cm.train import parse_settings, train_model
    from interbias.utils.paths import cache_dir as default_cache
    from interbias.utils.progress import Reporter

    reporter, log = Reporter(quiet=quiet), (lambda m: None) if quiet else (lambda m: typer.echo(m, err=True))
    if corpus == "synthetic-had" or model == "LCNN-LFCC-frames":  # Track 2: the frame-level detector
        from interbias.cm.lcnn_frames import train_frames_cli

        folder, info = train_frames_cli(model, corpus, manifest, cache_dir or default_cache(), config,
                                        parse_settings(set_ or []), out, stop_after, reporter, log)  # fmt: skip
    else:
        data = _checked_data(model, config, set_ or [], frontend_path, corpus, manifest, cache_dir, reporter)
        if task != "detection":
            train_recognition(
                model, data, task, unknown or [], config, set_ or [], out, stop_after, quiet, frontend_path
            )
            return
        if CM_MODELS.get(model).architecture == "gmm":
            train_em(model, data, config, set_ or [], out, stop_after, quiet)
            return
        folder, info = train_model(model, data, preset=config, settings=parse_settings(set_ or []), out=out,
                                   frontend_path=frontend_path, stop_after=stop_after, reporter=reporter, log=log)  # fmt: skip
    _trained(model, folder, info)


def _checked_data(
    model: str, config: str, sets: list[str], frontend_path: Path | None, corpus: str | None,
    manifest: Path | None, cache: Path | None, reporter: object,
) -> Any:  # fmt: skip
    """The training data, read only once every setting is checked (a bad one renders no corpus)."""
    from interbias.cm.models import CM_MODELS
    from interbias.cm.train import checked_config, cm_manifest, parse_settings
    from interbias.utils.paths import cache_dir

    if CM_MODELS.get(model).architecture == "gmm":  # GMM-lfcc trains by EM, with its own settings
        from interbias.cm.gmm import checked_config as checked_gmm_config

        checked_gmm_config(config, parse_settings(sets))
    else:
        checked_config(model, config, parse_settings(sets), frontend_path)
    return cm_manifest(corpus, manifest, cache or cache_dir(), reporter)


def _trained(model: str, folder: Path, info: dict) -> None:
    """The closing lines of ``cm train``: epochs, best epoch, timings and the checkpoint path."""
    typer.echo(
        f"{model}: {info['epochs_done']} epoch(s) ({info['stopped']}), best epoch {info['best_epoch']} "
        f"(val loss {info['best_val_loss']:.4f}); features {info['feature_seconds']:.1f} s, "
        f"training {info['train_seconds']:.1f} s"
    )
    typer.echo(f"checkpoint: {folder / 'checkpoint.pt'}")


def train_em(
    model: str, data: object, config: str, sets: list[str], out: Path | None, stop_after: int | None, quiet: bool
) -> None:
    """``cm train --model GMM-lfcc``: :func:`interbias.cm.gmm_train.train_gmm` (EM, no epochs)."""
    from interbias.cm.gmm_train import train_gmm
    from interbias.cm.train import parse_settings

    log = (lambda m: None) if quiet else (lambda m: typer.echo(m, err=True))
    folder, info = train_gmm(
        model, data, preset=config, settings=parse_settings(sets), out=out, stop_after=stop_after, log=log
    )
    eer = f"{info['dev_eer']:.4f}" if "dev_eer" in info else "- (not finished)"
    typer.echo(f"{model}: {info['iterations']} EM iteration(s) ({info['stopped']}); dev EER {eer}")
    typer.echo(f"checkpoint: {folder / 'checkpoint.pt'}")


def train_recognition(
    model: str, data: object, task: str, unknown: list[str], config: str, sets: list[str], out: Path | None,
    stop_after: int | None, quiet: bool, frontend_path: Path | None = None,
) -> None:  # fmt: skip
    """``cm train --task recognition``: :func:`interbias.cm.recognition.train_recogniser`."""
    from interbias.cm.models import CM_MODELS
    from interbias.cm.recognition import train_recogniser
    from interbias.cm.train import parse_settings
    from interbias.utils.errors import ConfigError

    if task != "recognition":
        raise ConfigError(f"--task {task!r}; valid: detection, recognition")
    if not unknown:
        raise ConfigError("--task recognition: give the held-out algorithm with --unknown ATTACK")
    folder = out or CM_MODELS.get(model).folder() / "recognition"
    log = (lambda m: None) if quiet else (lambda m: typer.echo(m, err=True))
    info = train_recogniser(
        data,
        unknown,
        folder,
        label=model,
        preset=config,
        settings=parse_settings(sets),
        stop_after=stop_after,
        log=log,
        frontend_path=frontend_path,
    )  # type: ignore[arg-type]
    typer.echo(
        f"{model} recognition: known {', '.join(info['classes'])}; unknown {', '.join(unknown)}; "
        f"{info['epochs_done']} epoch(s) ({info['stopped']}), best epoch {info['best_epoch']}"
    )
    typer.echo(f"checkpoint: {folder / 'checkpoint.pt'}")


@cm_app.command("models", epilog="Example: interbias cm models --json")
@guarded
def models(
    as_json: JsonOpt = False,
    wide: Annotated[bool, typer.Option("--wide", help="Full paths, one line per label.")] = False,
) -> None:
    """Each CM label: architecture, front end, whether its checkpoint is here, how to get it
    (paths shortened: $INTERBIAS_CACHE, <site-packages>, ~; --wide prints them in full)."""
    from interbias.cli.tables import echo_wrapped, short_paths
    from interbias.cm.models import model_states

    states = model_states()
    if as_json:
        typer.echo(json.dumps(states, indent=2))
        return
    for s in states:
        echo_wrapped(f"{s['label']:18s} {s['state']:8s} {short_paths(s['detail'], wide=wide)}", wide=wide)


RegionsOption = Annotated[
    Path | None,
    typer.Option(
        help="LCNN-LFCC-frames: write the located fake regions to this segment file (cm-eval location's layout)."
    ),
]
ThresholdOption = Annotated[float, typer.Option(help="--regions: a frame is fake when P(fake) exceeds this.")]
MinRegionOption = Annotated[
    float, typer.Option(help="--regions: runs of fake frames shorter than this (seconds) are dropped.")
]


def _write_scores(out: Path, doc: dict, table: Any, *, force: bool, inputs: list[Path]) -> None:
    """``cm score --out``: JSON (the whole document) or CSV (the table), through the output guard."""
    from interbias.run.outputs import check_output, csv_header, json_header
    from interbias.utils import atomic

    text = json.dumps(doc, indent=2) + "\n"
    check_output(
        out, force=force, inputs=inputs, header=json_header(text) if out.suffix == ".json" else csv_header(table)
    )
    if out.suffix == ".json":
        atomic.write_text(out, text)
    else:
        atomic.write_csv(out, table)


@cm_app.command(
    "score",
    epilog="Example: interbias cm score AASIST a.flac b.wav --out scores.csv",
)
@guarded
def score(
    model: Annotated[str, typer.Argument(help="CM label (interbias cm models).")],
    files: Annotated[list[Path] | None, typer.Argument(help="Audio files to score.")] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(help="Score every utterance of this manifest (label, attack, family, voice, gender kept)."),
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="Checkpoint file or folder (default: the label's model folder).")
    ] = None,
    frontend_path: Annotated[
        Path | None, typer.Option(help="Local Hugging Face folder of the WavLM / wav2vec 2.0 front end.")
    ] = None,
    resampler: Annotated[str, typer.Option(help="How audio at other rates is brought to 16 kHz.")] = "polyphase",
    op: Annotated[
        list[str] | None,
        typer.Option(
            "--op",
            metavar="NAME[:KEY=VALUE,...]",
            help="Score a degraded version: an operator and its parameters (interbias data operators); "
            "repeated, a chain in the order given, e.g. --op codec:codec=gsm --op noise:snr_db=5,kind=gaussian.",
        ),
    ] = None,
    set_: OpSetOpt = None,
    param: ParamAlias = None,
    chain: ChainAlias = None,
    seed: Annotated[int, typer.Option(help="Seed of the operators' draws.")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Write the scores to .csv or .json (default: CSV on stdout).")
    ] = None,
    as_json: Annotated[bool, json_flag("Print JSON (scores and what they mean).")] = False,
    regions: RegionsOption = None,
    threshold: ThresholdOption = 0.5,
    min_region_s: MinRegionOption = 0.05,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
) -> None:
    """Per file: the CM's two logits (spoof, bona fide) and the bona fide posterior, after the
    model's own input policy (docs/countermeasures.md); for the frame detector LCNN-LFCC-frames,
    with --regions, its located fake regions instead. A file that cannot be scored is one line
    on stderr and the exit status is 1; the others are still written."""
    check_numbers("cm score", threshold=threshold, min_region_s=min_region_s)
    from interbias.audio.resample import RESAMPLERS
    from interbias.cm.models import SCORE_CONVENTION, load_cm
    from interbias.cm.score_files import ScoreJob, chain_for, header, jobs_from, score_files, with_manifest_columns
    from interbias.utils.errors import ConfigError
    from interbias.utils.progress import Reporter

    if resampler not in RESAMPLERS:
        raise ConfigError(f"--resampler: {resampler!r} is not one of {', '.join(RESAMPLERS)}")
    if out is not None and out.suffix not in (".csv", ".json"):
        raise ConfigError(f"--out {out}: give a .csv or .json file")
    name, params, specs = operator_or_chain(op, set_, param, chain)
    job = ScoreJob(jobs_from(list(files or []), manifest), name, params, seed, specs)
    chain_for(job.op, job.params, job.chain)  # a bad operator or chain is refused before the model loads
    if regions is not None or model == "LCNN-LFCC-frames":
        from interbias.cm.regions import score_regions_cli

        score_regions_cli(model, job, checkpoint, regions, threshold, min_region_s)
        return
    cm = load_cm(model, path=checkpoint, frontend_path=frontend_path, resampler=resampler)
    table, failed = score_files(cm, job, Reporter(quiet=quiet))
    table = with_manifest_columns(table, manifest)
    doc = {**header(cm, job), "n_scored": len(table), "failed": failed, "scores": table.to_dict(orient="records")}
    if out is not None:
        _write_scores(out, doc, table, force=force, inputs=[*(files or []), *([manifest] if manifest else [])])
    elif as_json:
        typer.echo(json.dumps(doc, indent=2))
    else:
        typer.echo(table.to_csv(index=False), nl=False)
    if out is not None or not as_json:
        typer.echo(f"{model}: {len(table)} file(s) scored; score = {SCORE_CONVENTION}", err=True)
    for line in failed:
        typer.echo(line, err=True)
    if failed:
        raise typer.Exit(1)
