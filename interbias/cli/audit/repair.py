"""``interbias audit repair``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from interbias.cli import guarded
from interbias.cli.audit import audit_app
from interbias.cli.audit.source import (
    CacheDirOpt,
    CorpusOpt,
    CorpusRootOpt,
    EmbeddingsOpt,
    GroupsOpt,
    ManifestOpt,
    SentencesOpt,
)
from interbias.cli.numeric import check_numbers
from interbias.cli.options import quiet_flag
from interbias.cli.tables import print_frame
from interbias.utils.keyvalue import comma_list

if TYPE_CHECKING:
    from interbias.audits.repair import RepairOutcome
    from interbias.repair.orca import OrcaConfig

EXAMPLE = "Example: interbias audit repair --encoder CAM++ --corpus synthetic --ablations --out results/repair"


#: The older one-flag-per-hyper-parameter spellings of ``--set KEY=VALUE`` (hidden): key -> help.
ORCA_FLAGS = {
    "steps": "Training steps (minibatches).",
    "batch": "Rows per minibatch.",
    "lr": "Adam learning rate.",
    "hidden": "Hidden units of the residual MLP.",
    "temperature": "Temperature of the contrastive losses.",
    "w_sem": "Weight of the text (sem) contrastive head.",
    "w_voice": "Weight of the voice contrastive head.",
    "w_expr": "Weight of the style (expr) contrastive head.",
    "w_orth": "Weight of the leakage (orthogonality) penalty.",
    "w_keep": "Weight of the verification term (keeps the base encoder's scores).",
    "voice_share": "Share of training voices in each step's leakage penalty.",
}
StepsOpt = Annotated[int | None, typer.Option(hidden=True, help=ORCA_FLAGS["steps"])]
BatchOpt = Annotated[int | None, typer.Option(hidden=True, help=ORCA_FLAGS["batch"])]
LrOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["lr"])]
HiddenOpt = Annotated[int | None, typer.Option(hidden=True, help=ORCA_FLAGS["hidden"])]
TemperatureOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["temperature"])]
WSemOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["w_sem"])]
WVoiceOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["w_voice"])]
WExprOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["w_expr"])]
WOrthOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["w_orth"])]
WKeepOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["w_keep"])]
VoiceShareOpt = Annotated[float | None, typer.Option(hidden=True, help=ORCA_FLAGS["voice_share"])]
OrcaSetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="An ORCA hyper-parameter (repeatable), typed against its record; defaults: steps=400, batch=512, "
        "lr=0.003, hidden=256, temperature=0.1, w_sem=1, w_voice=1, w_expr=1, w_orth=30, w_keep=100, "
        "voice_share=0.5 (also head_dim, tau_rel, keep_pairs, m, axes; docs/repair.md). An unknown key is "
        "an error listing the valid ones.",
    ),
]
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
OutOpt = Annotated[Path, typer.Option(help="Output folder (adapters, repair.csv, repair-summary.csv).")]


@audit_app.command(epilog=EXAMPLE)
@guarded
def repair(
    encoder: Annotated[str | None, typer.Option(help="Encoder label whose clean-grid embeddings ORCA adapts.")] = None,
    embeddings: EmbeddingsOpt = None,
    corpus: CorpusOpt = "synthetic",
    corpus_root: CorpusRootOpt = None,
    manifest: ManifestOpt = None,
    sentences: SentencesOpt = None,
    groups: GroupsOpt = "gender,age_band,accent",
    out: OutOpt = Path("results/repair"),
    seed: Annotated[int, typer.Option(help="Seed of the split, the initial weights and the batches.")] = 0,
    heldout_share: Annotated[float, typer.Option(help="Share of each group's voices held out of training.")] = 0.5,
    set_: OrcaSetOpt = None,
    steps: StepsOpt = None,
    batch: BatchOpt = None,
    lr: LrOpt = None,
    hidden: HiddenOpt = None,
    temperature: TemperatureOpt = None,
    w_sem: WSemOpt = None,
    w_voice: WVoiceOpt = None,
    w_expr: WExprOpt = None,
    w_orth: WOrthOpt = None,
    w_keep: WKeepOpt = None,
    voice_share: VoiceShareOpt = None,
    no_orthogonality: NoOrthogonalityOpt = False,
    no_balanced_sampling: NoBalancedSamplingOpt = False,
    ablations: AblationsOpt = False,
    permutations: Annotated[int, typer.Option(help="Speaker-level permutations per attribute in the audits.")] = 100,
    no_jackknife: Annotated[bool, typer.Option("--no-jackknife", help="Skip the jackknife half-widths.")] = False,
    cache_dir: CacheDirOpt = None,
    device: Annotated[str, typer.Option(help="cpu or cuda[:N] for the encoder (no fallback).")] = "cpu",
    quiet: Annotated[bool, quiet_flag("No progress output or tables.")] = False,
) -> None:
    """ORCA repair (TRIAD/ORCA): train an adapter on training voices, audit raw vs repaired on held-out voices.

    Prints the before/after audit (F, Λ, ℓ, Γ ± 95 % half-widths) and the label of the repaired
    encoder (LABEL+orca:HASH) for `interbias run --encoders`. Outputs: docs/repair.md."""
    from interbias.audits.repair import RepairOptions, run_repair
    from interbias.encoders import restore_threads

    flags = dict(steps=steps, batch=batch, lr=lr, hidden=hidden, temperature=temperature, w_sem=w_sem,
                 w_voice=w_voice, w_expr=w_expr, w_orth=w_orth, w_keep=w_keep, voice_share=voice_share)  # fmt: skip
    check_numbers("audit repair", sentences=sentences, heldout_share=heldout_share, permutations=permutations, **flags)
    restore_threads()
    config = orca_config(set_, flags, no_orthogonality=no_orthogonality, no_balanced_sampling=no_balanced_sampling)
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


def orca_config(
    set_: list[str] | None, flags: dict[str, Any], *, no_orthogonality: bool, no_balanced_sampling: bool
) -> OrcaConfig:
    """The ORCA record of ``--set`` items (typed against :class:`OrcaConfig`), the older
    per-hyper-parameter ``flags`` given (each says its ``--set`` spelling on stderr) and the two
    ablation switches; a key given both ways is an error."""
    from interbias.cli.options import older_spelling
    from interbias.repair.orca import OrcaConfig
    from interbias.utils.errors import ConfigError
    from interbias.utils.keyvalue import parse_key_values, typed_settings

    given = {k: v for k, v in flags.items() if v is not None}
    for key in given:
        older_spelling(f"--{key.replace('_', '-')}", f"--set {key}=VALUE", True)
    settings = typed_settings(OrcaConfig, parse_key_values(set_ or [], option="--set", error=ConfigError), "--set")
    both = sorted(set(given) & set(settings))
    if both:
        raise ConfigError(f"--set {both[0]}: also given as --{both[0].replace('_', '-')}")
    switches = {"orthogonality": False} if no_orthogonality else {}
    switches |= {"balanced": False} if no_balanced_sampling else {}
    return OrcaConfig(**{**given, **settings, **switches})


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
