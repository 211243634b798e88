"""``interbias audit blackbox prepare|score|analyze``: the matched-pair protocol for score-only systems."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.audit import audit_app
from interbias.cli.audit.source import CacheDirOpt, CorpusOpt, CorpusRootOpt, GroupsOpt, ManifestOpt
from interbias.cli.numeric import check_numbers
from interbias.cli.options import ForceOpt, quiet_flag
from interbias.cli.tables import echo_wrapped, print_frame
from interbias.utils.keyvalue import comma_list

blackbox_app = typer.Typer(
    help="Black-box audit (TRIAD/ORCA IV): matched trial families differing in one attribute, "
    "scored by any system, analysed for invariance violations and group gaps.",
    epilog="Example: interbias audit blackbox prepare --corpus synthetic --out results/blackbox/protocol.csv",
    no_args_is_help=True,
)
audit_app.add_typer(blackbox_app, name="blackbox")


@blackbox_app.command(
    "prepare", epilog="Example: interbias audit blackbox prepare --corpus synthetic --out results/blackbox/protocol.csv"
)
@guarded
def prepare_cmd(
    out: Annotated[Path, typer.Option(help="Protocol CSV to write (one row per trial).")] = Path(
        "results/blackbox/protocol.csv"
    ),
    corpus: CorpusOpt = "synthetic",
    corpus_root: CorpusRootOpt = None,
    manifest: ManifestOpt = None,
    groups: GroupsOpt = "gender,age_band,accent",
    reference_style: Annotated[str, typer.Option(help="Style of every enrolment and base test.")] = "neutral",
    nontargets: Annotated[int, typer.Option(help="Non-target families per enrolled speaker.")] = 2,
    text_variants: Annotated[int, typer.Option(help="Text variants per family.")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of the draws (texts, non-target speakers).")] = 0,
    noise_snr: Annotated[
        str, typer.Option(help="Comma-separated SNRs (dB) of the Gaussian-noise variants ('' for none).")
    ] = "15",
    voice_variants: Annotated[
        int,
        typer.Option(help="Voice variants per family within and across groups (the voice axis; 0: none)."),
    ] = 0,
    cache_dir: CacheDirOpt = None,
    force: ForceOpt = False,
) -> None:
    """Write the matched-pair protocol: base target/non-target trials and variants that change only
    the test's style, only its text, only its noise condition, or only the voice (columns:
    docs/outputs.md)."""
    check_numbers(
        "audit blackbox prepare", nontargets=nontargets, text_variants=text_variants, voice_variants=voice_variants
    )
    from interbias.audits.blackbox import ProtocolOptions, prepare, shortfalls, with_paths
    from interbias.audits.source import load_manifest
    from interbias.run.outputs import check_output, csv_header
    from interbias.utils import atomic
    from interbias.utils.errors import AnalysisError
    from interbias.utils.numbers import require

    try:
        snrs = tuple(float(x) for x in comma_list(noise_snr))
    except ValueError:
        raise AnalysisError(f"--noise-snr {noise_snr!r}: comma-separated numbers (dB)") from None
    for snr in snrs:
        require("--noise-snr", snr, error=AnalysisError)
    m = load_manifest(corpus, corpus_root, manifest, cache_dir)
    opts = ProtocolOptions(reference_style, nontargets, text_variants, seed, snrs, voice_variants)
    drawn = prepare(m, comma_list(groups), opts)
    capped = shortfalls(drawn, opts)
    frame = with_paths(drawn, m, out.parent / "audio")
    check_output(out, force=force, inputs=[p for p in (manifest,) if p], header=csv_header(frame))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_csv(out, frame)
    counts = frame.groupby(["axis", "label"]).size()
    typer.echo("trials: " + ", ".join(f"{a}/{lab} {n}" for (a, lab), n in counts.items()))
    for line in capped:
        echo_wrapped(f"note: {line}")
    typer.echo(f"wrote {out}: score each row's enrol_path against test_path; answer with trial_id,score")


@blackbox_app.command(
    "score", epilog="Example: interbias audit blackbox score results/blackbox/protocol.csv --encoder CAM++"
)
@guarded
def score_cmd(
    protocol: Annotated[Path, typer.Argument(help="protocol.csv of `interbias audit blackbox prepare`.")],
    encoder: Annotated[str, typer.Option(help="A local encoder standing in for the closed system.")] = "CAM++",
    out: Annotated[Path | None, typer.Option(help="Scores CSV (default: scores-<encoder>.csv beside it).")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda[:N].")] = "cpu",
    force: ForceOpt = False,
) -> None:
    """Score a protocol with a local encoder (cosine of enrolment and test embeddings)."""
    from interbias.audits.blackbox import encoder_embedder, read_protocol, score_with
    from interbias.run.outputs import check_output, csv_header
    from interbias.utils import atomic
    from interbias.utils.paths import readable_slug

    frame = read_protocol(protocol)
    scores = score_with(frame, encoder_embedder(encoder, device))
    path = out or protocol.parent / f"scores-{readable_slug(encoder)}.csv"
    check_output(path, force=force, inputs=[protocol], header=csv_header(scores))
    atomic.write_csv(path, scores)
    typer.echo(f"wrote {path} ({len(scores)} trials)")


@blackbox_app.command(
    "analyze",
    epilog="Example: interbias audit blackbox analyze results/blackbox/scores.csv --protocol results/blackbox/protocol.csv",
)
@guarded
def analyze_cmd(
    scores: Annotated[Path, typer.Argument(help="The system's answers: CSV with trial_id and score (or decision).")],
    protocol: Annotated[Path, typer.Option(help="protocol.csv of `interbias audit blackbox prepare`.")] = Path(
        "results/blackbox/protocol.csv"
    ),
    groups: GroupsOpt = "gender,age_band,accent",
    threshold: Annotated[
        float | None, typer.Option(help="Accept scores >= this (default: the base trials' EER threshold).")
    ] = None,
    permutations: Annotated[int, typer.Option(help="Speaker-level permutations per gap.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the permutations.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Result CSV (default: blackbox.csv beside the scores).")] = None,
    quiet: Annotated[bool, quiet_flag("No table.")] = False,
    force: ForceOpt = False,
) -> None:
    """Invariance-violation ratio per axis, accuracy and EER per group, gaps with speaker-level p."""
    check_numbers("audit blackbox analyze", threshold=threshold, permutations=permutations)
    from interbias.audits.blackbox import analyze, read_answers, read_protocol
    from interbias.run.outputs import check_output, csv_header
    from interbias.utils import atomic

    answers = read_answers(scores, read_protocol(protocol))
    result = analyze(answers, comma_list(groups), threshold=threshold, n_perm=permutations, seed=seed)
    path = out or scores.parent / "blackbox.csv"
    check_output(path, force=force, inputs=[scores, protocol], header=csv_header(result.table))
    atomic.write_csv(path, result.table)
    if not quiet:
        print_frame(
            result.table,
            f"black-box audit (threshold {result.threshold:.4g})",
            ["metric", "axis", "attribute", "group", "value", "n", "p_value"],
        )
    typer.echo(f"wrote {path}")
