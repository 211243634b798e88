"""``interbias encoders list`` and ``interbias encoders embed``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.encoders import encoders_app
from interbias.cli.numeric import check_numbers
from interbias.cli.options import JsonOpt, json_flag
from interbias.utils.errors import see_docs


@encoders_app.command("list", epilog="Example: interbias encoders list --json")
@guarded
def list_encoders(
    as_json: JsonOpt = False,
    wide: Annotated[bool, typer.Option("--wide", help="Full paths, one line per label.")] = False,
) -> None:
    """Every encoder label: family, backend, dimension, whether its files are here, and where
    (paths shortened: $INTERBIAS_CACHE, <site-packages>, ~; --wide prints them in full)."""
    from interbias.cli.tables import echo_wrapped, short_paths, width
    from interbias.encoders.status import encoder_entries

    entries = encoder_entries()
    if as_json:
        typer.echo(json.dumps(entries, indent=2))
        return
    for e in entries:
        dim = str(e["embedding_dim"] or "-")
        where = short_paths(e["source"] or e["folder"], wide=wide)
        state = "available" if e["status"] == "available" else "missing"
        row = f"{e['label']:17s} {e['family']:8s} {e['backend']:18s} {dim:>5s}  {state:9s}"
        if wide or len(row) + 2 + len(where) <= width():
            typer.echo(f"{row}  {where}")
        else:
            parts = where.split("/")
            if len(where) + 4 > width() and len(parts) > 3:  # the package and the file name
                where = "/".join([*parts[:2], "...", parts[-1]])
            typer.echo(f"{row.rstrip()}\n    {where}")
    missing = [e for e in entries if e["status"] != "available"]
    if missing:
        typer.echo("\nmissing:")
        for e in missing:
            echo_wrapped(short_paths(e["status"][len("missing: ") :], wide=wide), "  ", wide=wide)
        typer.echo("")
        echo_wrapped(f"{see_docs('encoders')}: where each label's files go, and `interbias encoders fetch`")


@encoders_app.command(epilog="Example: interbias encoders embed a.wav b.wav --encoder CAM++")
@guarded
def embed(
    wavs: Annotated[list[Path], typer.Argument(help="Audio files (any format the front end decodes).")],
    encoder: Annotated[str, typer.Option("--encoder", "-e", help="Encoder label (see `interbias encoders list`).")],
    device: Annotated[str, typer.Option(help="cpu or cuda[:N] (no fallback).")] = "cpu",
    model_dir: Annotated[Path | None, typer.Option(help="Folder of the checkpoint (overrides the default).")] = None,
    layer: Annotated[int | None, typer.Option(help="Hidden layer to mean-pool (ssl encoders only).")] = None,
    as_json: Annotated[bool, json_flag("Print JSON (with the embeddings).")] = False,
) -> None:
    """Embed audio files with one encoder: dimension, checkpoint sha256 and the cosine matrix."""
    check_numbers("encoders embed", layer=layer)
    import numpy as np

    from interbias.encoders.status import embed_files

    enc, loaded, X = embed_files(wavs, encoder, device=device, model_dir=model_dir, layer=layer)
    cos = (X @ X.T).astype(float)
    if as_json:
        out = {
            "encoder": enc.provenance(),
            "files": [str(p) for p in wavs],
            "truncated": [a.truncated for a in loaded],
            "dimension": int(X.shape[1]),
            "cosine": np.round(cos, 6).tolist(),
            "embeddings": np.round(X.astype(float), 7).tolist(),
        }
        typer.echo(json.dumps(out))
        return
    typer.echo(f"{enc.label}: {X.shape[1]}-d embeddings, checkpoint sha256 {enc.checkpoint_sha256}")
    names = [p.name for p in wavs]
    width = max(8, *(len(n) for n in names))
    typer.echo(" " * width + "".join(f"{i:>9d}" for i in range(len(names))))
    for i, n in enumerate(names):
        typer.echo(f"{n:>{width}s}" + "".join(f"{v:9.4f}" for v in cos[i]))
