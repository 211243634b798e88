"""``interbias data build|prepare|info``: make and inspect corpus manifests."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from interbias.cli import guarded
from interbias.cli.data import data_app
from interbias.cli.numeric import check_numbers
from interbias.cli.options import ForceOpt, JsonOpt, QuietOpt, json_flag


def _options(pairs: list[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` pairs; a value with commas becomes a list."""
    from interbias.utils.errors import CorpusError
    from interbias.utils.keyvalue import parse_key_values

    return parse_key_values(pairs, option="--set", error=CorpusError, lists=True)


def _print_summary(manifest: Any, *, as_json: bool, frontend: Any = None) -> None:
    """The counts, then (``frontend`` given) the audio as that front end reads and judges it,
    then the registered sections (:data:`interbias.corpora.info.INFO_SECTIONS`)."""
    from interbias.corpora.info import info_sections, summarize
    from interbias.trials import fit  # noqa: F401  (registers the catalogue section)

    summary = summarize(manifest)
    audit = None
    if frontend is not None:
        from interbias.audits.corpus_audio import audit_audio

        audit = audit_audio(manifest, frontend)
    sections = info_sections(manifest)
    if as_json:
        extra = {"audio": audit.as_dict()} if audit is not None else {}
        extra.update({s.key: s.data for s in sections})
        typer.echo(json.dumps({**summary.as_dict(), **extra}, indent=2))
        return
    _print_counts(summary)
    if audit is not None:
        from interbias.audits.corpus_audio import audit_lines

        typer.echo("\n".join(audit_lines(audit)))
    for s in sections:
        typer.echo("\n".join(s.lines))


def _print_counts(summary: Any) -> None:
    hours = "" if summary.total_duration_s is None else f", {summary.total_duration_s / 3600:.2f} h"
    typer.echo(f"{summary.name}: {summary.n_utterances} utterances, {summary.n_speakers} speakers{hours}")
    for a in summary.attributes:
        missing = f", {a.n_missing} utterances without" if a.n_missing else ""
        if not a.values:
            typer.echo(f"  {a.name}: {a.n_distinct} distinct values{missing}")
            continue
        typer.echo(f"  {a.name} ({a.n_distinct} values{missing}):")
        for value, (spk, utt) in a.values.items():
            typer.echo(f"    {value:24s} {spk:6d} speakers {utt:8d} utterances")


@data_app.command("build", epilog="Example: interbias data build synthetic --speakers 96")
@guarded
def build(
    name: Annotated[
        str,
        typer.Argument(
            help="The corpus to build: synthetic (the embedded corpus) or same-text (recorded prompts and "
            "Debian's synthesisers reading the same texts: a CM set on real audio); others are prepared."
        ),
    ],
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Spec option KEY=VALUE, e.g. --set accents=us,gb --set n_sentences=5 (same-text: texts=N, "
            "rate_hz=N, min_words=N).",
        ),
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default $INTERBIAS_CACHE).")] = None,
    workers: Annotated[int | None, typer.Option(help="Rendering processes (default: CPU count).")] = None,
    speakers: Annotated[
        int | None,
        typer.Option(help="Voices in all, spread evenly over gender × age band × accent (default 48)."),
    ] = None,
    as_json: Annotated[bool, json_flag("Print the counts as JSON.")] = False,
    quiet: QuietOpt = False,
) -> None:
    """Build the embedded synthetic corpus, or the same-text CM set (recorded prompts and
    Debian's synthesisers reading their texts), into the cache (reused when already built)."""
    check_numbers("data build", workers=workers, speakers=speakers)
    if name == "same-text":
        from interbias.cli.data.same_text import build_same_text_cli

        build_same_text_cli(_options(set_ or []), cache_dir, workers, speakers, as_json=as_json, quiet=quiet)
        return
    from interbias.corpora.fingerprint import corpus_verdict
    from interbias.corpora.synthetic import build_info
    from interbias.corpora.tasks import build_corpus
    from interbias.utils.progress import Reporter

    spec, manifest, seconds = build_corpus(
        name, _options(set_ or []), speakers=speakers, cache=cache_dir, workers=workers, reporter=Reporter(quiet=quiet)
    )
    info = build_info(manifest)
    verdict = corpus_verdict(manifest, check_files=True)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "manifest": str(manifest.root / "manifest.jsonl"),
                    "manifest_sha256": manifest.sha256(),
                    "built_now": seconds > 0,
                    "build_seconds": seconds if seconds > 0 else info.get("build_seconds"),
                    "cpu_seconds": info.get("cpu_seconds"),
                    "spec": dataclasses.asdict(spec),
                    "n_utterances": len(manifest),
                    "n_speakers": len(manifest.speakers()),
                    "fingerprint": verdict.record() if verdict is not None else None,
                },
                indent=2,
            )
        )
        return
    if seconds > 0:
        cpu = info.get("cpu_seconds")
        typer.echo(
            f"synthetic: built in {seconds:.1f} s with {info.get('workers')} worker(s)"
            + (f", {cpu:.1f} CPU seconds" if cpu is not None else "")
        )
    else:
        earlier = info.get("build_seconds")
        typer.echo(
            "synthetic: already built (reused)"
            + (f"; it took {earlier:.1f} s with {info.get('workers')} worker(s)" if earlier else "")
        )
    typer.echo(f"manifest: {manifest.root / 'manifest.jsonl'} (sha256 {manifest.sha256()[:16]}…)")
    if verdict is not None:
        typer.echo(verdict.line)
    _print_summary(manifest, as_json=False)


@data_app.command(
    "prepare", epilog="Example: interbias data prepare ravdess --root ~/corpora/ravdess --out ravdess.jsonl"
)
@guarded
def prepare(
    name: Annotated[
        str,
        typer.Argument(
            help="Corpus adapter: add2023, asvspoof5, commonvoice, ears, l2arctic, ravdess, torgo, voxceleb1 "
            "(from their published layout under --root); synthetic, synthetic-cm, synthetic-had are built."
        ),
    ],
    root: Annotated[Path, typer.Option(help="Root folder of the corpus on disk (its published layout).")],
    out: Annotated[Path | None, typer.Option(help="Manifest to write (.jsonl or .csv; default ./NAME.jsonl).")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", metavar="KEY=VALUE", help="Adapter option KEY=VALUE, e.g. split=test.")
    ] = None,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Cache folder for audio headers (default $INTERBIAS_CACHE).")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Read a corpus in its published layout and write its manifest (absolute audio paths);
    an existing manifest file is replaced only with --force (it may be hand-written)."""
    from interbias.corpora.tasks import prepare_corpus
    from interbias.run.outputs import check_output

    target = out or Path(f"{name}.jsonl")
    check_output(target, force=force)
    manifest = prepare_corpus(name, root, _options(set_ or []), cache=cache_dir)
    manifest.write(target)
    typer.echo(f"wrote {target}: {len(manifest)} utterances, {len(manifest.speakers())} speakers")
    if name == "voxceleb1":
        from interbias.corpora.voxceleb1 import official_trial_lists

        lists = official_trial_lists(root)
        typer.echo("official trial lists: " + (", ".join(str(p) for p in lists) if lists else "none found in the root"))


@data_app.command("info", epilog="Example: interbias data info ravdess.jsonl")
@guarded
def info(
    manifest: Annotated[
        Path, typer.Argument(help="A manifest (.csv/.jsonl) or a Lhotse recordings+supervisions pair (file or folder).")
    ],
    as_json: JsonOpt = False,
    by: Annotated[
        str | None,
        typer.Option(help="Two attributes ROWS,COLUMNS (e.g. split,gender): speakers and utterances per pair."),
    ] = None,
    data_root: Annotated[
        Path | None, typer.Option(help="Folder the manifest's relative paths resolve against (default: its folder).")
    ] = None,
    experiment: Annotated[
        str | None,
        typer.Option(help="Judge the audio by this experiment's front end (id or YAML; default 16 kHz, 1 s)."),
    ] = None,
    trim_silence: Annotated[
        bool,
        typer.Option(
            "--trim-silence", help="Judge it with the front end trimming digital silence, as run --trim-silence does."
        ),
    ] = False,
    audio: Annotated[bool, typer.Option(help="Read the audio (--no-audio: the counts only).")] = True,
) -> None:
    """Count speakers and utterances per value of every attribute, then read every utterance as
    a run would: durations, sample rates, channels, clipping, digital-silence padding, and each
    utterance the front end will refuse, with its reason. With --by A,B: speakers and
    utterances per pair of values of A and B (e.g. split × gender), no audio."""
    from interbias.corpora.info import read_for_info

    read = read_for_info(manifest, root=data_root)
    if by is not None:
        _print_crosstab(read, by, as_json=as_json)
        return
    _print_summary(read, as_json=as_json, frontend=_info_frontend(experiment, trim_silence) if audio else None)


def _info_frontend(experiment: str | None, trim_silence: bool) -> Any:
    from interbias.audio.frontend import FrontEnd

    frontend = FrontEnd()
    if experiment is not None:
        from interbias.experiments.schema import find_experiment, load_experiment
        from interbias.utils.paths import conditions_dir

        frontend = load_experiment(find_experiment(experiment, conditions_dir())).frontend
    return dataclasses.replace(frontend, trim_silence=True) if trim_silence else frontend


def _print_crosstab(manifest: Any, by: str, *, as_json: bool) -> None:
    from interbias.corpora.info import crosstab
    from interbias.utils.errors import CorpusError

    names = [n.strip() for n in by.split(",") if n.strip()]
    if len(names) != 2:
        raise CorpusError(f"--by {by!r}: give two attributes as ROWS,COLUMNS, e.g. split,gender")
    counts, rows, cols = crosstab(manifest, *names)
    if not counts:
        raise CorpusError(f"--by {by}: no utterance of {manifest.name} has both {names[0]!r} and {names[1]!r}")
    if as_json:
        cells = [{names[0]: r, names[1]: c, "speakers": s, "utterances": u} for (r, c), (s, u) in counts.items()]
        typer.echo(json.dumps(cells, indent=2))
        return
    typer.echo(f"{manifest.name}: speakers / utterances per {names[0]} (rows) and {names[1]} (columns)")
    width = max(len(names[0]), *map(len, rows))
    cell = max(len(f"{s} / {u}") for s, u in counts.values())
    cell = max(cell, *map(len, cols))
    typer.echo(f"  {names[0]:<{width}}  " + "  ".join(f"{c:>{cell}}" for c in cols))
    for r in rows:
        vals = ["{} / {}".format(*counts[(r, c)]) if (r, c) in counts else "0 / 0" for c in cols]
        typer.echo(f"  {r:<{width}}  " + "  ".join(f"{v:>{cell}}" for v in vals))
