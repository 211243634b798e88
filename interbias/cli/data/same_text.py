"""``interbias data build same-text``: the same-text CM set, built and summarised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer


def build_same_text_cli(
    options: dict[str, Any],
    cache_dir: Path | None,
    workers: int | None,
    speakers: int | None,
    *,
    as_json: bool,
    quiet: bool,
) -> None:
    """Build (or reuse) the set and print what it holds, what was left out and what failed."""
    from interbias.corpora.same_text import NAME, PEAK, SameTextSpec, build_same_text, family_counts
    from interbias.utils.errors import CorpusError
    from interbias.utils.paths import cache_dir as default_cache
    from interbias.utils.progress import Reporter

    if speakers is not None:
        raise CorpusError(f"{NAME}: --speakers does not apply (its voices are the installed synthesisers)")
    spec = SameTextSpec.from_options(options)
    built = build_same_text(spec, cache_dir or default_cache(), workers=workers, reporter=Reporter(quiet=quiet))
    path = built.manifest.root / "manifest.jsonl"
    counts = family_counts(built.manifest)
    record = built.record
    if as_json:
        out = {
            "manifest": str(path), "manifest_sha256": built.manifest.sha256(), "built_now": built.built_now,
            "build_seconds": round(built.seconds, 2), "families": {k: {"voices": v, "files": n} for k, (v, n) in counts.items()},
            "left_out": built.left_out, "failures": built.failures, "attenuated": record.get("attenuated", []),
            "texts": record.get("texts", []), "packages": record.get("packages", {}),
        }  # fmt: skip
        typer.echo(json.dumps(out, indent=2))
        return
    when = f"built in {built.seconds:.1f} s" if built.built_now else "already built (reused)"
    typer.echo(f"{NAME}: {when}; {len(record.get('texts', []))} texts, bona fide: {record.get('bonafide')}")
    for family, (voices, files) in counts.items():
        typer.echo(f"  {family:12s} {voices:3d} voice(s) {files:5d} files")
    for line in built.left_out:
        typer.echo(f"left out: {line}")
    for line in built.failures:
        typer.echo(f"failed: {line}")
    if record.get("attenuated"):
        n = len(record["attenuated"])
        typer.echo(f"attenuated to a peak of {PEAK:g} (else they would clip): {n} file(s), see gain_db")
    typer.echo(f"manifest: {path} (sha256 {built.manifest.sha256()[:16]}…)")
    typer.echo(f"next: interbias cm score GMM-lfcc --manifest {path} --out scores.csv")
    typer.echo("      interbias scores cm-eval track1 scores.csv --by family")
