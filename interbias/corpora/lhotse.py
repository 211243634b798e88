"""Lhotse manifests as an interbias Manifest, read without the lhotse package.

A Lhotse corpus is a ``RecordingSet`` (one JSON object per line: ``id``, ``sources`` [{``type``,
``channels``, ``source``}], ``sampling_rate``, ``num_samples``, ``duration``, optional
``channel_ids``, ``transforms``) and a ``SupervisionSet`` (``id``, ``recording_id``, ``start``,
``duration``, ``channel``, optional ``text``, ``language``, ``speaker``, ``gender``, ``custom``),
each ``.jsonl`` or ``.jsonl.gz``.

Each supervision becomes one utterance: ``id`` the supervision id, ``path`` the recording's
file source, ``speaker``/``gender``/``text`` as given, ``language`` and every ``custom`` key
as attributes (nested values as canonical JSON). A supervision that covers only part of its
recording (more than :data:`TOLERANCE_S` from either end) becomes a segment row: ``offset`` its
``start``, ``duration`` its duration (an end up to :data:`TOLERANCE_S` past the recording's is
cut to the recording's end), read sample-exactly by the front end
(:mod:`interbias.audio.segments`). What interbias cannot reproduce is an error listing the
offending entries, never approximated: sources that are not one local file (``url``,
``command``, ``memory``, ``shar``, several files), recording ``transforms`` (speed
perturbation, resampling), multi-channel recordings (the front end would downmix the channels a
supervision picks one of), and supervisions that start before or end past their recording.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from interbias.corpora.manifest import Manifest, Utterance, check_unique_ids, jsonl_records
from interbias.utils.errors import ManifestError
from interbias.utils.seeding import canonical_json

#: A supervision may start or end this far (s) from its recording's ends and still count as
#: covering the whole file (Lhotse's own duration-mismatch tolerance is 25 ms).
TOLERANCE_S = 0.025
_SUFFIXES = (".jsonl", ".jsonl.gz")
#: Supervision keys that are not attributes of the utterance.
_SEGMENT_KEYS = {"id", "recording_id", "start", "duration", "channel", "custom", "alignment"}
#: Utterance fields this reader fills from the recording and supervision.
_OWN_KEYS = {"id", "path", "duration_s", "sample_rate_hz", "recording_id", "offset", "duration"}


def is_lhotse_file(path: Path) -> str | None:
    """``"supervisions"`` or ``"recordings"`` when ``path`` is a Lhotse manifest, else ``None``
    (decided by the first record's keys, not the file name)."""
    path = Path(path)
    if not path.is_file() or not path.name.endswith(_SUFFIXES):
        return None
    try:
        for _, record in _records(path):
            if "recording_id" in record:
                return "supervisions"
            if "sources" in record and "sampling_rate" in record:
                return "recordings"
            return None
    except ManifestError:  # not JSON lines at all: whatever reads it next says why
        return None
    return None


def find_pair(path: Path) -> tuple[Path, Path]:
    """(recordings, supervisions) for a folder holding one of each, or for either file of a
    pair whose names differ only in ``recordings``/``supervisions``."""
    path = Path(path)
    if path.is_dir():
        found: dict[str, list[Path]] = {"recordings": [], "supervisions": []}
        for p in sorted(path.iterdir()):
            kind = is_lhotse_file(p)
            if kind:
                found[kind].append(p)
        if len(found["recordings"]) != 1 or len(found["supervisions"]) != 1:
            raise ManifestError(
                f"{path}: a Lhotse folder needs exactly one recordings and one supervisions manifest "
                f"(.jsonl or .jsonl.gz); found {len(found['recordings'])} and {len(found['supervisions'])}"
            )
        return found["recordings"][0], found["supervisions"][0]
    part = is_lhotse_file(path)
    if part is None:
        raise ManifestError(f"{path}: not a Lhotse recordings or supervisions manifest")
    other_part = "recordings" if part == "supervisions" else "supervisions"
    if part not in path.name:
        raise ManifestError(
            f"{path}: a Lhotse {part} manifest whose partner cannot be found by name; "
            f"pass the folder holding both, or name the files *{part}*.jsonl[.gz] and *{other_part}*.jsonl[.gz]"
        )
    stem = path.name.removesuffix(".gz").removesuffix(".jsonl").replace(part, other_part)
    candidates = [path.with_name(stem + suffix) for suffix in _SUFFIXES]
    partner = next((c for c in candidates if c.is_file()), None)
    if partner is None:
        raise ManifestError(f"{path}: its Lhotse {other_part} manifest is missing (looked for {candidates[0].name})")
    return (path, partner) if part == "recordings" else (partner, path)


def read_lhotse(recordings: Path, supervisions: Path, *, root: Path | None = None, name: str | None = None) -> Manifest:
    """One utterance per supervision; relative sources resolve against ``root`` (default: the
    recordings file's folder). Raises :class:`ManifestError` listing every unusable entry."""
    recordings, supervisions = Path(recordings), Path(supervisions)
    recs: dict[str, dict[str, Any]] = {}
    rec_problems: list[str] = []
    for lineno, rec in _records(recordings):
        rid = rec.get("id")
        if not isinstance(rid, str) or not rid:
            rec_problems.append(f"line {lineno}: no id")
            continue
        reason = _recording_problem(rec)
        if reason:
            rec_problems.append(f"line {lineno} {rid!r}: {reason}")
        recs[rid] = rec
    _raise(recordings, rec_problems, "recording(s) interbias cannot read as one whole local file")

    utts: list[Utterance] = []
    lines: list[int] = []
    problems: list[str] = []
    for lineno, sup in _records(supervisions):
        sid = sup.get("id")
        if not isinstance(sid, str) or not sid:
            problems.append(f"line {lineno}: no id")
            continue
        rec = recs.get(str(sup.get("recording_id")))
        if rec is None:
            problems.append(
                f"line {lineno} {sid!r}: recording_id {sup.get('recording_id')!r} is not in {recordings.name}"
            )
            continue
        span = _coverage(sup, rec)
        if isinstance(span, str):
            problems.append(f"line {lineno} {sid!r}: {span}")
            continue
        if not sup.get("speaker"):
            problems.append(f"line {lineno} {sid!r}: no speaker")
            continue
        try:
            utts.append(Utterance.from_dict(_row(sup, rec, span), where=f"{supervisions}:{lineno}"))
        except ManifestError as exc:
            problems.append(str(exc))
            continue
        lines.append(lineno)
    _raise(supervisions, problems, "supervision(s) cannot become utterances")
    if not utts:
        raise ManifestError(f"{supervisions}: no supervisions")
    check_unique_ids(utts, lines, where=str(supervisions))
    manifest = Manifest(name or _stem(supervisions), Path(root) if root else recordings.parent, tuple(utts))
    manifest.check_files(lines, where=str(supervisions))
    return manifest


def _stem(path: Path) -> str:
    base = path.name
    for suffix in (".jsonl.gz", ".jsonl"):
        base = base.removesuffix(suffix)
    return base.replace("_supervisions", "").replace("supervisions_", "") or "lhotse"


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open(path, "rt", encoding="utf-8") if gz else open(path, encoding="utf-8")
        with opener as fh:
            yield from jsonl_records(fh, where=str(path))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read ({exc})") from exc


def _recording_problem(rec: dict[str, Any]) -> str | None:
    sources = rec.get("sources")
    if not isinstance(sources, list) or not sources:
        return "no sources"
    if len(sources) != 1:
        return f"{len(sources)} sources (one file per channel); interbias reads one file per utterance"
    src = sources[0]
    if not isinstance(src, dict) or src.get("type") != "file":
        return f"source type {src.get('type') if isinstance(src, dict) else src!r} (only 'file' is read)"
    if not isinstance(src.get("source"), str) or not src["source"]:
        return "source has no path"
    channels = rec.get("channel_ids") or src.get("channels") or [0]
    if len(channels) != 1:
        return f"{len(channels)} channels; interbias reads mono recordings (a supervision picks one channel)"
    if rec.get("transforms"):
        kinds = ", ".join(str(t.get("name", t)) if isinstance(t, dict) else str(t) for t in rec["transforms"])
        return f"transforms ({kinds}) that interbias does not reproduce"
    for key in ("sampling_rate", "duration"):
        if not isinstance(rec.get(key), (int, float)) or isinstance(rec.get(key), bool):
            return f"no numeric {key}"
    return None


def _coverage(sup: dict[str, Any], rec: dict[str, Any]) -> tuple[float, float] | str | None:
    """``None`` for a supervision covering its whole recording, (offset, duration) in s for one
    covering part of it, or why it cannot be read."""
    try:
        start = float(sup.get("start", 0.0))
        duration = float(sup["duration"])
    except (KeyError, TypeError, ValueError):
        return "no numeric start/duration"
    if not (math.isfinite(start) and math.isfinite(duration)) or start < 0 or duration <= 0:
        return f"start {start:g} s, duration {duration:g} s: need start >= 0 and duration > 0"
    total = float(rec["duration"])
    if start + duration > total + TOLERANCE_S:
        return f"covers {start:g}-{start + duration:g} s of a {total:g} s recording: it ends past the recording"
    if start <= TOLERANCE_S and abs(start + duration - total) <= TOLERANCE_S:
        return None
    return start, min(duration, total - start)


def _row(sup: dict[str, Any], rec: dict[str, Any], span: tuple[float, float] | None) -> dict[str, Any]:
    row: dict[str, Any] = {}
    custom = sup.get("custom") or {}
    if not isinstance(custom, dict):
        raise ManifestError(f"supervision {sup['id']!r}: custom must be a JSON object")
    clash = sorted(set(custom) & (set(sup) | _OWN_KEYS))
    if clash:
        raise ManifestError(f"supervision {sup['id']!r}: custom key(s) {', '.join(clash)} clash with its own fields")
    for key, value in custom.items():
        row[str(key)] = canonical_json(value) if isinstance(value, (dict, list)) else value
    for key, value in sup.items():
        if key not in _SEGMENT_KEYS:
            row[key] = value
    row.update(
        {
            "id": sup["id"],
            "path": rec["sources"][0]["source"],
            "duration_s": float(sup["duration"]),
            "sample_rate_hz": int(rec["sampling_rate"]),
        }
    )
    if span is not None:
        row.update(offset=span[0], duration=span[1], duration_s=span[1])
    if sup["recording_id"] != sup["id"]:
        row["recording_id"] = sup["recording_id"]
    return row


def _raise(path: Path, problems: list[str], what: str) -> None:
    if problems:
        raise ManifestError(f"{path}: {len(problems)} {what}; first: " + "; ".join(problems[:5]))
