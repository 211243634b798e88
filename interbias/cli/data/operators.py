"""``interbias data degrade`` and ``interbias data operators``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from interbias.cli import guarded
from interbias.cli.data import data_app
from interbias.cli.options import ForceOpt, JsonOpt, OpSetOpt, ParamAlias, json_flag, op_settings
from interbias.cli.tables import echo_wrapped


@data_app.command(epilog="Example: interbias data degrade in.wav out.wav --op codec:codec=gsm")
@guarded
def degrade(
    src: Annotated[Path, typer.Argument(metavar="IN", help="Input audio file (WAV, FLAC, ...).")],
    dst: Annotated[Path, typer.Argument(metavar="OUT", help="Output audio file (at the input's rate).")],
    op: Annotated[
        list[str],
        typer.Option(
            "--op",
            metavar="NAME[:KEY=VALUE,...]",
            help="The operator and its parameters, e.g. codec:codec=gsm (see `interbias data operators`); "
            "repeated, a chain in the order given, as in cm score.",
        ),
    ],
    set_: OpSetOpt = None,
    param: ParamAlias = None,
    seed: Annotated[int, typer.Option(help="Seed for the operator's random draws.")] = 0,
    corpus: Annotated[str, typer.Option(help="Corpus whose talkers babble/crosstalk draw.")] = "synthetic",
    as_json: Annotated[bool, json_flag("Print the record as JSON.")] = False,
    force: ForceOpt = False,
) -> None:
    """Degrade one file with an operator (or a chain of them) so you can hear a condition; an
    existing OUT is replaced only with --force."""
    from interbias.operators.degrade import degrade_file, refuse_overwrite
    from interbias.operators.spec import with_settings
    from interbias.run.outputs import check_output

    def talkers() -> Any:
        from interbias.corpora import load_corpus
        from interbias.experiments.sections import CorpusSpec
        from interbias.utils.paths import cache_dir

        typer.echo(f"talkers come from corpus {corpus!r} (prepared on first use under {cache_dir()})", err=True)
        return load_corpus(CorpusSpec(name=corpus), cache=cache_dir())

    name, params, specs = with_settings(op, op_settings(set_, param))
    refuse_overwrite(src, dst)  # the input, refused always in the operator's own words
    check_output(dst, force=force, option="OUT")
    info = degrade_file(src, dst, name, params, seed=seed, talkers=talkers, chain_specs=specs)
    if as_json:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    typer.echo(f"{info['label']} -> {dst} ({info['sample_rate_hz']} Hz, {info['subtype']})")
    if info["clipped_samples"]:
        echo_wrapped(
            f"note: {info['clipped_samples']} sample(s) over full scale (peak {info['peak']:.3g}) were clipped "
            "to it in the file written",
            "  ",
        )
    for rec in info["realised"]:
        echo_wrapped(realised_text(rec), "  ")
        in_file, achieved = rec.get("snr_db_in_file"), rec.get("snr_db_achieved")
        if in_file is not None and achieved is not None and abs(in_file - achieved) > SNR_SLACK_DB:
            echo_wrapped(
                f"note: the {info['subtype']} file written holds {in_file:.1f} dB SNR, not {achieved:.1f}: its "
                "quantisation (or clipping) adds noise of its own at this signal level",
                "  ",
            )
    if info["realised"]:
        echo_wrapped("  (--json: every realised value in full)")
    if info["channels_in"] > 1:
        typer.echo(f"  note: the {info['channels_in']}-channel input was averaged to mono")


#: How far the written file's SNR may fall from the mix's before ``degrade`` says so (dB).
SNR_SLACK_DB = 0.1


@data_app.command("operators", epilog="Example: interbias data operators --json")
@guarded
def list_operators(as_json: JsonOpt = False) -> None:
    """The degradation operators, their parameters, and what runs on this machine."""
    from interbias.operators.degrade import operator_entries

    entries = operator_entries()
    if as_json:
        typer.echo(json.dumps(entries, indent=2, default=str))
        return
    for e in entries:
        state = "yes" if e["available"] else f"NO ({e.get('why_not', '')})"
        echo_wrapped(f"{e['name']}  available: {state}")
        echo_wrapped(plain_text(e["description"]), "  ")
        for p in e["parameters"]:
            req = "required" if p["required"] else f"default {p['default']}"
            span = f"  {p['unit']} in [{p['range'][0]:g}, {p['range'][1]:g}]" if "range" in p else ""
            kind = str(p["type"]).replace("|", " | ")
            echo_wrapped(f"{p['name']}=  {kind}  ({req}){span}", "  ")
        for c in e.get("codecs", []):
            here = "yes" if c["available"] else f"NO: {c['why_not']}"
            echo_wrapped(
                f"codec={c['codec']:10s} {c['bitrates']:>28s}  default {c['default_bitrate']}  [{here}]", "    "
            )


def plain_text(text: str) -> str:
    """A docstring's reStructuredText as plain text: ``code`` and :role:`name` lose their marks."""
    import re

    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def realised_text(rec: dict[str, Any], most: int = 60) -> str:
    """One realised record as ``key=value`` pairs, floats to 4 significant digits; a value
    longer than ``most`` characters is summarised (a list by its length and ends, a mapping by
    its keys) so the line wraps at words; ``--json`` has every value in full."""
    parts = []
    for key, value in rec.items():
        text = f"{value:.4g}" if isinstance(value, float) else json.dumps(value, default=str)
        if len(text) > most and isinstance(value, list) and value:
            ends = (value[0], value[-1])
            scalar = not any(isinstance(v, (list, dict)) for v in ends)
            text = f"[{len(value)} items: {ends[0]} ... {ends[1]}]" if scalar else f"[{len(value)} items]"
        elif len(text) > most and isinstance(value, dict):
            text = "{" + ", ".join(map(str, value)) + "}"
        parts.append(f"{key}={text}")
    return ", ".join(parts)
