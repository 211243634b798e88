"""``interbias audit repair``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.tables import print_frame
from interbias.utils.keyvalue import comma_list

if TYPE_CHECKING:
    from interbias.repair.run import RepairOutcome

EXAMPLE = "Example: interbias audit repair --encoder CAM++ --corpus synthetic --ablations --out results/repair"


StepsOpt = Annotated[int, typer.Option(help="Training steps (minibatches).")]
BatchOpt = Annotated[int, typer.Option(help="Rows per minibatch.")]
LrOpt = Annotated[float, typer.Option(help="Adam learning rate.")]
HiddenOpt = Annotated[int, typer.Option(help="Hidden units of the residual MLP.")]
TemperatureOpt = Annotated[float, typer.Option(help="Temperature of the contrastive losses.")]
WSemOpt = Annotated[float, typer.Option(help="Weight of the text (sem) contrastive head.")]
WVoiceOpt = Annotated[float, typer.Option(help="Weight of the voice contrastive head.")]
WExprOpt = Annotated[float, typer.Option(help="Weight of the style (expr) contrastive head.")]
WOrthOpt = Annotated[float, typer.Option(help="Weight of the leakage (orthogonality) penalty.")]
WKeepOpt = Annotated[float, typer.Option(help="Weight of the verification term (keeps the base encoder's scores).")]
VoiceShareOpt = Annotated[float, typer.Option(help="Share of training voices in each step's leakage penalty.")]
NoOrthogonalityOpt = Annotated[
    bool, typer.Option("--no-orthogonality", help="Ablation: train without the orthogonality penalty.")
]
NoBalancedSamplingOpt = Annotated[
    bool, typer.Option("--no-balanced-sampling", help="Ablation: uniform instead of group-balanced batches.")
]
AblationsOpt = Annotated[
    bool,
    typer.Option("--ablations", help="Also train and audit the ablations (no-orthogonality, ..., only-sem, ...)."),
]
EmbeddingsOpt = Annotated[
    Path | None,
    typer.Option(
        help="A CSV/parquet grid table instead of an encoder (the `interbias audit geometry --embeddings` format)."
    ),
]
GroupsOpt = Annotated[
    str, typer.Option(help="Comma-separated voice-level group attributes (split strata, sampling, Γ).")
]
OutOpt = Annotated[Path, typer.Option(help="Output folder (adapters, repair.csv, repair-summary.csv).")]


@app.command(epilog=EXAMPLE)
@guarded
def repair(
    encoder: Annotated[str | None, typer.Option(help="Encoder label whose clean-grid embeddings ORCA adapts.")] = None,
    embeddings: EmbeddingsOpt = None,
    corpus: Annotated[str, typer.Option(help="Corpus to embed (a factorial text × voice × style grid).")] = "synthetic",
    corpus_root: Annotated[Path | None, typer.Option(help="Root folder of the corpus on disk.")] = None,
    manifest: Annotated[
        Path | None, typer.Option(help="A manifest file (speaker, text, style, groups) instead of --corpus.")
    ] = None,
    sentences: Annotated[int | None, typer.Option(help="Use only the first N sentences (still balanced).")] = None,
    groups: GroupsOpt = "gender,age_band,accent",
    out: OutOpt = Path("results/repair"),
    seed: Annotated[int, typer.Option(help="Seed of the split, the initial weights and the batches.")] = 0,
    heldout_share: Annotated[float, typer.Option(help="Share of each group's voices held out of training.")] = 0.5,
    steps: StepsOpt = 400,
    batch: BatchOpt = 512,
    lr: LrOpt = 3e-3,
    hidden: HiddenOpt = 256,
    temperature: TemperatureOpt = 0.1,
    w_sem: WSemOpt = 1.0,
    w_voice: WVoiceOpt = 1.0,
    w_expr: WExprOpt = 1.0,
    w_orth: WOrthOpt = 30.0,
    w_keep: WKeepOpt = 100.0,
    voice_share: VoiceShareOpt = 0.5,
    no_orthogonality: NoOrthogonalityOpt = False,
    no_balanced_sampling: NoBalancedSamplingOpt = False,
    ablations: AblationsOpt = False,
    permutations: Annotated[int, typer.Option(help="Speaker-level permutations per attribute in the audits.")] = 100,
    no_jackknife: Annotated[bool, typer.Option("--no-jackknife", help="Skip the jackknife half-widths.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default $INTERBIAS_CACHE).")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda[:N] for the encoder (no fallback).")] = "cpu",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output or tables.")] = False,
) -> None:
    """ORCA repair (TRIAD/ORCA): train an adapter on training voices, audit raw vs repaired on held-out voices.

    Prints the before/after audit (F, Λ, ℓ, Γ ± 95 % half-widths) and the label of the repaired
    encoder (LABEL+orca:HASH) for `interbias run --encoders`. Outputs: docs/repair.md."""
    from interbias.encoders import restore_threads
    from interbias.repair.orca import OrcaConfig
    from interbias.repair.run import RepairOptions, run_repair

    restore_threads()
    config = OrcaConfig(
        hidden=hidden,
        steps=steps,
        batch=batch,
        lr=lr,
        temperature=temperature,
        w_sem=w_sem,
        w_voice=w_voice,
        w_expr=w_expr,
        w_orth=w_orth,
        w_keep=w_keep,
        voice_share=voice_share,
        orthogonality=not no_orthogonality,
        balanced=not no_balanced_sampling,
    )
    outcome = run_repair(
        RepairOptions(
            encoder=encoder,
            embeddings=embeddings,
            corpus=corpus,
            corpus_root=corpus_root,
            manifest=manifest,
            sentences=sentences,
            groups=tuple(comma_list(groups)),
            out=out,
            cache_dir=cache_dir,
            device=device,
            seed=seed,
            heldout_share=heldout_share,
            config=config,
            ablations=ablations,
            n_perm=permutations,
            jackknife=not no_jackknife,
            quiet=quiet,
            command=["interbias", *sys.argv[1:]],
        )
    )
    _print(outcome, quiet)


def _print(outcome: RepairOutcome, quiet: bool) -> None:
    if not quiet:
        cols = ["variant", "Lambda_mean", "dLambda_mean", "dLambda_mean_hw", "eer_clean", "F_sem", "F_voice"]
        cols += ["F_expr", "Lambda_sem_voice", "ell_sem_voice", "Gamma_acc", "Gamma_acc_p", "Gamma_gen", "Gamma_gen_p"]
        print_frame(outcome.summary, f"ORCA on held-out voices ({len(outcome.split.heldout)} voices)", cols, digits=4)
    for note in outcome.notes:
        typer.echo(f"note: {note}")
    typer.echo(f"adapter: {outcome.adapter}")
    typer.echo(f"repaired encoder: {outcome.label}")
    if outcome.heldout_manifest:
        typer.echo(f"held-out voices' manifest: {outcome.heldout_manifest}")
    typer.echo(f"wrote {outcome.out_dir / 'repair.csv'}, repair-summary.csv, repair.json")
