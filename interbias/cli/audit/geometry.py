"""``interbias audit geometry``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
    from interbias.audits.geometry import GeometryOptions, GeometryOutcome


EncodersOpt = Annotated[
    str | None, typer.Option(help="Comma-separated encoders (at least 3): an audit each, then r(Λ, D̄) across them.")
]
LayersOpt = Annotated[str | None, typer.Option(help="Sweep the layers a:b of an SSL --encoder (one audit each).")]
AttributeOpt = Annotated[str, typer.Option(help="The group attribute of D̄ in the --encoders table.")]
BootstrapOpt = Annotated[int, typer.Option(help="Voice-bootstrap draws of the interval of r (--encoders).")]
NoiseOpt = Annotated[
    bool, typer.Option("--noise-floor", help="Also audit the synthetic corpus's replicate cells (rendering noise).")
]


@audit_app.command(epilog="Example: interbias audit geometry --encoder CAM++ --sentences 8")
@guarded
def geometry(
    encoder: Annotated[
        str | None, typer.Option(help="Encoder label to embed the corpus's clean grid with (e.g. CAM++).")
    ] = None,
    embeddings: EmbeddingsOpt = None,
    corpus: CorpusOpt = "synthetic",
    corpus_root: CorpusRootOpt = None,
    manifest: ManifestOpt = None,
    layer: Annotated[int | None, typer.Option(help="Layer N, passed to encoders that take one (SSL).")] = None,
    sentences: SentencesOpt = None,
    groups: GroupsOpt = "gender,age_band,accent",
    out: Annotated[Path, typer.Option(help="Output folder (geometry.csv, geometry.json, geometry.png).")] = Path(
        "results/geometry"
    ),
    permutations: Annotated[int, typer.Option(help="Speaker-level permutations per attribute.")] = 200,
    no_jackknife: Annotated[
        bool, typer.Option("--no-jackknife", help="Skip the text/voice jackknife half-widths.")
    ] = False,
    m: Annotated[int | None, typer.Option(help="Subspace rank for Λ and ℓ (default min_a(C_a − 1), ≤ d/2).")] = None,
    tau_rel: Annotated[float, typer.Option(help="Ridge τ = tau_rel·tr(Σ_W)/d.")] = 1e-3,
    label: Annotated[str | None, typer.Option(help="Name of an --embeddings table's rows (default file stem).")] = None,
    save_embeddings: Annotated[
        bool, typer.Option("--save-embeddings", help="Also write the grid as an --embeddings parquet table.")
    ] = False,
    cache_dir: CacheDirOpt = None,
    device: Annotated[str, typer.Option(help="cpu or cuda[:N] (no fallback).")] = "cpu",
    encoders: EncodersOpt = None,
    layers: LayersOpt = None,
    across_attribute: AttributeOpt = "accent",
    bootstrap: BootstrapOpt = 200,
    noise_floor: NoiseOpt = False,
    quiet: Annotated[bool, quiet_flag("No progress output or tables.")] = False,
) -> None:
    """Geometry audit (TRIAD/ORCA): axis fidelities F, leakage Λ/ℓ, group spreads Γ on a factorial grid."""
    check_numbers("audit geometry", layer=layer, sentences=sentences, permutations=permutations)
    check_numbers("audit geometry", m=m, tau_rel=tau_rel, bootstrap=bootstrap)
    from interbias.audits.geometry import GeometryOptions, run_geometry

    options = GeometryOptions(
        encoder=encoder,
        embeddings=embeddings,
        corpus=corpus,
        corpus_root=corpus_root,
        manifest=manifest,
        layer=layer,
        sentences=sentences,
        groups=tuple(comma_list(groups)),
        out=out,
        cache_dir=cache_dir,
        device=device,
        n_perm=permutations,
        jackknife=not no_jackknife,
        m=m,
        tau_rel=tau_rel,
        label=label,
        save_embeddings=save_embeddings,
        noise_floor=noise_floor,
        quiet=quiet,
        command=["interbias", *sys.argv[1:]],
    )
    if encoders is not None or layers is not None:
        _several(options, encoders, layers, across_attribute, bootstrap)
        return
    _report(run_geometry(options), encoder is not None, quiet)


def _report(outcome: GeometryOutcome, embedded: bool, quiet: bool) -> None:
    """The table (unless quiet), failures, embedding counts and what was written."""
    if not quiet:
        _print_table(outcome)
    if outcome.n_failed:
        typer.echo(f"warning: {outcome.n_failed} utterance(s) failed and were left out (see geometry.json)", err=True)
    if embedded:
        typer.echo(f"embedded {outcome.n_embedded}, from cache {outcome.n_cached}")
    typer.echo(f"wrote {outcome.out_dir / 'geometry.csv'}, geometry.json, geometry.png")


def _print_table(outcome: GeometryOutcome) -> None:
    """The headline statistics (F, Λ, ℓ, Γ) with their intervals, and the decomposition note."""
    frame = outcome.frame
    shown = ["F", "Lambda", "ell", "Gamma", "Dbar", "floor", "F_noise", "Lambda_noise"]
    head = frame[frame["metric"].isin(shown)].copy()
    head["statistic"] = [
        " ".join(str(x) for x in (r.metric, r.attribute, r.axis, r.axis_b) if str(x) != "") for r in head.itertuples()
    ]
    row = frame.iloc[0]
    title = f"{row['encoder']} {row['source']} {row['subset']}: geometry (± 95 %, text/voice jackknife)"
    print_frame(head, title, ["statistic", "value", "ci_half_width", "p_value", "m", "chance", "note"])
    typer.echo(f"decomposition: {outcome.decomposition_note}")


def _several(options: GeometryOptions, encoders: str | None, layers: str | None, attribute: str, n_boot: int) -> None:
    """``--encoders`` (the across-encoder table and r) or ``--layers`` (one audit per layer)."""
    from interbias.audits.geometry_sweep import parse_layers, run_across, run_layers
    from interbias.utils.errors import AnalysisError

    if encoders is not None and layers is not None:
        raise AnalysisError("give --encoders or --layers, not both")
    if layers is not None:
        outcomes = run_layers(options, parse_layers(layers))
        for o in outcomes:
            if not options.quiet:
                _print_table(o)
        typer.echo(f"wrote {options.out / 'geometry.csv'} ({len(outcomes)} layers), geometry.json, geometry.png")
        return
    labels = comma_list(encoders or "")
    _, result = run_across(options, labels, attribute=attribute, n_boot=n_boot)
    if not options.quiet:
        print_frame(result.table, f"across encoders: Λ sem–voice and D̄ (sem probe, {attribute})", list(result.table))
    typer.echo(
        f"r(Λ, D̄) = {result.r:.3f} [{result.ci_low:.3f}, {result.ci_high:.3f}] (95 % voice bootstrap, "
        f"{result.n_defined}/{result.n_boot} draws defined)"
    )
    typer.echo(f"wrote {options.out / 'across.csv'}, across.png, geometry.csv")
