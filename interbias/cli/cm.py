"""``interbias cm``: countermeasure models — list them, train the study's ResNet-18 CMs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded

cm_app = typer.Typer(
    help="Countermeasure (spoofing detector) models: list them and train them with the deepfake "
    "gender-fairness study's recipe. Metrics of score files: `interbias cm-eval`.",
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
    model: Annotated[str, typer.Option(help="CM label: ResNet18-logspec, -cqt, -wavlm or -wav2vec2.")],
    corpus: Annotated[
        str | None, typer.Option(help="synthetic-cm: the offline proxy CM corpus (default when no --manifest).")
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            help="A CM manifest (label bonafide|spoof, split train|dev|eval), e.g. from `interbias corpus prepare asvspoof5`."
        ),
    ] = None,
    config: Annotated[str, typer.Option(help="paper (the study's recipe) or small (minutes on a CPU).")] = "paper",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override one setting KEY=VALUE, e.g. --set max_epochs=50.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default: the label's model folder, where runs find it).")
    ] = None,
    frontend_path: Annotated[
        Path | None, typer.Option(help="Local Hugging Face folder of the WavLM / wav2vec 2.0 front end.")
    ] = None,
    stop_after: Annotated[
        int | None, typer.Option(help="Stop after this many epochs (resume later by running the same command).")
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default $INTERBIAS_CACHE).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Train a ResNet18-<frontend> CM: AdamW, class-weighted cross-entropy, early stopping on the
    dev loss, the best epoch's checkpoint; resumes from the last finished epoch of the same run.

    Writes checkpoint.pt, curve.csv, training.json and state.pt (docs/countermeasures.md)."""
    from interbias.cm.train import cm_manifest, parse_settings, train_model
    from interbias.utils.paths import cache_dir as default_cache
    from interbias.utils.progress import Reporter

    reporter = Reporter(quiet=quiet)
    data = cm_manifest(corpus, manifest, cache_dir or default_cache(), reporter)
    folder, info = train_model(
        model,
        data,
        preset=config,
        settings=parse_settings(set_ or []),
        out=out,
        frontend_path=frontend_path,
        stop_after=stop_after,
        reporter=reporter,
        log=(lambda m: None) if quiet else (lambda m: typer.echo(m, err=True)),
    )
    typer.echo(
        f"{model}: {info['epochs_done']} epoch(s) ({info['stopped']}), best epoch {info['best_epoch']} "
        f"(val loss {info['best_val_loss']:.4f}); features {info['feature_seconds']:.1f} s, "
        f"training {info['train_seconds']:.1f} s"
    )
    typer.echo(f"checkpoint: {folder / 'checkpoint.pt'}")


@cm_app.command("models", epilog="Example: interbias cm models --json")
@guarded
def models(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Each CM label: architecture, front end, whether its checkpoint is here, how to get it."""
    from interbias.cm.models import model_states

    states = model_states()
    if as_json:
        typer.echo(json.dumps(states, indent=2))
        return
    for s in states:
        typer.echo(f"{s['label']:18s} {s['state']:8s} {s['detail']}")
