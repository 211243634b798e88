"""Manifests: one frozen record per utterance, read and written as CSV or JSONL by extension."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from interbias.corpora.manifest_checks import check_distinct_paths, check_speaker_spellings
from interbias.utils import atomic, csvfile
from interbias.utils.errors import ManifestError
from interbias.utils.paths import not_a_file
from interbias.utils.seeding import canonical_json
from interbias.utils.textfile import read_utf8

#: Rows from which reading a manifest shows progress.
PROGRESS_ROWS = 20_000
#: Columns a manifest file must have.
REQUIRED_COLUMNS = ("path", "speaker")

#: Attributes that describe a speaker, not a recording: every utterance of one speaker must
#: carry the same value (or none). A population factor, population filter, split or fairness
#: group on any other attribute not in :data:`UTTERANCE_LEVEL` is speaker-level too; an
#: experiment declares more with ``speaker_attributes: [...]`` or exempts one with
#: ``utterance_attributes: [...]``.
SPEAKER_LEVEL = ("gender", "age", "age_band", "accent", "native_language", "l1", "pathology")
#: Attributes that may differ between one speaker's utterances.
UTTERANCE_LEVEL = (
    "id", "path", "text", "duration_s", "sample_rate_hz", "sha256", "style", "emotion", "intensity",
    "session", "date", "year", "years_from_first", "channel", "device", "proxy", "offset", "duration",
)  # fmt: skip
#: Columns of a segment row: the span of its file, in seconds (NeMo's convention).
SEGMENT_COLUMNS = ("offset", "duration")


@dataclass(frozen=True)
class Utterance:
    """One utterance. ``path`` is relative to the manifest's root (or absolute).

    ``age_band`` and ``style`` carry population labels; on the synthetic corpus they are
    prosodic proxies, which ``attrs['proxy']`` says. Free speaker/recording metadata lives
    in ``attrs`` and is addressable by name like any field. ``offset`` and ``duration`` (s)
    make the utterance a segment of its file (:attr:`span`).
    """

    id: str
    path: str
    speaker: str
    gender: str | None = None
    age: float | None = None
    age_band: str | None = None
    accent: str | None = None
    style: str | None = None
    session: str | None = None
    text: str | None = None
    duration_s: float | None = None
    sample_rate_hz: int | None = None
    sha256: str | None = None
    #: Start of the segment in its file, s (``None``: the file's start).
    offset: float | None = None
    #: Length of the segment, s (``None``: to the file's end).
    duration: float | None = None
    attrs: dict[str, str] = field(default_factory=dict)

    @property
    def span(self) -> tuple[float | None, float | None] | None:
        """(offset, duration) in s of a segment row; ``None`` for a whole file."""
        if self.offset is None and self.duration is None:
            return None
        return (self.offset, self.duration)

    def get(self, attribute: str) -> str | None:
        """The value of a field or free attribute, as a string (``None`` when absent)."""
        if attribute in _FIELD_NAMES and attribute != "attrs":
            value = getattr(self, attribute)
        else:
            value = self.attrs.get(attribute)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    def to_dict(self) -> dict[str, Any]:
        """Fields with values; ``attrs`` flattened into the top level (empty fields dropped)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "attrs":
                continue
            value = getattr(self, f.name)
            if value is not None and value != "":
                out[f.name] = value
        for key in sorted(self.attrs):
            out[key] = self.attrs[key]
        return out

    @classmethod
    def from_dict(cls, row: dict[str, Any], *, where: str = "manifest") -> Utterance:
        known: dict[str, Any] = {}
        attrs: dict[str, str] = {}
        for key, value in row.items():
            if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
                continue
            if key in _FIELD_NAMES and key != "attrs":
                known[key] = value
            elif key == "attrs" and isinstance(value, dict):
                attrs.update({str(k): str(v) for k, v in value.items()})
            else:
                attrs[str(key)] = str(value)
        for col in REQUIRED_COLUMNS:
            if col not in known:
                raise ManifestError(f"{where}: row has no {col!r}")
        _refuse_nameless_path(str(known["path"]), where)
        _check_span(known, where)
        known.setdefault("id", _default_id(known["path"], known.get("offset"), known.get("duration")))
        try:
            for name in ("age", "duration_s"):
                if name in known:
                    known[name] = float(known[name])
            if "sample_rate_hz" in known:
                known["sample_rate_hz"] = int(float(known["sample_rate_hz"]))
        except (ValueError, OverflowError) as exc:
            raise ManifestError(f"{where}: row {known['id']!r} has a non-numeric value: {exc}") from None
        for name in ("age", "duration_s"):
            if name in known and not math.isfinite(known[name]):
                raise ManifestError(f"{where}: row {known['id']!r}: {name} must be finite, got {known[name]!r}")
        for name in ("id", "path", "speaker", "gender", "age_band", "accent", "style", "session", "text", "sha256"):
            if name in known:
                known[name] = str(known[name])
        return cls(**known, attrs=attrs)


_FIELD_NAMES = {f.name for f in fields(Utterance)}


def _refuse_nameless_path(path: str, where: str) -> None:
    """A manifest row names one audio file: a path that ends in a separator, or whose last part
    is empty, ``.`` or ``..`` ("/", "a/", "..") names a folder or nothing."""
    if path.replace("\\", "/").rsplit("/", 1)[-1] in ("", ".", ".."):
        raise ManifestError(f"{where}: path {path!r} has no file name (a row names one audio file)")


def _default_id(path: str, offset: float | None = None, duration: float | None = None) -> str:
    """The path without its extension; a segment's adds ``@OFFSET+DURATION`` (s), so the
    segments of one recording have distinct ids."""
    base = str(Path(path).with_suffix("")).replace("\\", "/")
    if offset is None and duration is None:
        return base
    return f"{base}@{_seconds(offset or 0.0)}+{'end' if duration is None else _seconds(duration)}"


def _seconds(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _check_span(known: dict[str, Any], where: str) -> None:
    """Parse a row's ``offset``/``duration`` (s) in place: finite numbers, offset >= 0,
    duration > 0; anything else is a :class:`ManifestError` naming the row."""
    for name in SEGMENT_COLUMNS:
        if name not in known:
            continue
        raw = known[name]
        try:
            value = math.nan if isinstance(raw, bool) else float(raw)
        except (TypeError, ValueError, OverflowError):
            value = math.nan
        row = known.get("id", known["path"])
        if not math.isfinite(value):
            raise ManifestError(f"{where}: row {row!r}: {name} must be a finite number of seconds, got {raw!r}"[:300])
        if value < 0 or (name == "duration" and value == 0):
            need = "> 0" if name == "duration" else ">= 0"
            raise ManifestError(f"{where}: row {row!r}: {name} must be {need} s, got {raw!r}")
        known[name] = value


@dataclass(frozen=True)
class Manifest:
    """An ordered collection of utterances of one corpus; paths resolve against ``root``."""

    name: str
    root: Path
    utterances: tuple[Utterance, ...]
    #: Attributes of :data:`SPEAKER_LEVEL` this corpus records per utterance (VoxCeleb1's age
    #: is the age at each video's date), so they may vary within a speaker.
    utterance_level: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        seen: dict[str, int] = {}
        dups: list[str] = []
        for u in self.utterances:
            seen[u.id] = seen.get(u.id, 0) + 1
            if seen[u.id] == 2:
                dups.append(u.id)
        if dups:
            raise ManifestError(
                f"manifest {self.name!r} has {len(dups)} duplicate id(s); first: "
                + ", ".join(repr(d) for d in dups[:5])
            )

    def __len__(self) -> int:
        return len(self.utterances)

    def __iter__(self) -> Iterator[Utterance]:
        return iter(self.utterances)

    def by_id(self) -> dict[str, Utterance]:
        return {u.id: u for u in self.utterances}

    @cached_property
    def root_resolved(self) -> Path:
        """``root`` with links resolved, once (:meth:`resolve` uses it for an absolute root; a
        relative root is resolved on each call, against the working folder of the moment)."""
        return self.root.resolve()

    def resolve(self, utt: Utterance) -> Path:
        """Absolute path of ``utt``; a relative path that escapes the root is rejected."""
        p = Path(utt.path)
        if p.is_absolute():
            return p
        try:
            root = self.root_resolved if self.root.is_absolute() else self.root.resolve()
            full = (root / p).resolve()
        except (RuntimeError, OSError) as exc:  # Python 3.11 raises RuntimeError on a link loop
            raise ManifestError(f"utterance {utt.id!r}: path {utt.path!r} is a symbolic-link loop ({exc})") from None
        if root != full and root not in full.parents:
            raise ManifestError(f"utterance {utt.id!r}: path {utt.path!r} escapes the corpus root {root}")
        return full

    def filter(self, keep: Iterable[bool]) -> Manifest:
        kept = tuple(u for u, k in zip(self.utterances, keep, strict=True) if k)
        return Manifest(self.name, self.root, kept, self.utterance_level)

    def sha256(self) -> str:
        """Hash of the manifest's content (records in order, root excluded)."""
        h = hashlib.sha256()
        for u in self.utterances:
            h.update(canonical_json(u.to_dict()).encode("utf-8"))
            h.update(b"\n")
        return h.hexdigest()

    def speakers(self) -> list[str]:
        return sorted({u.speaker for u in self.utterances})

    def columns(self) -> list[str]:
        cols: dict[str, None] = {}
        for u in self.utterances:
            for key in u.to_dict():
                cols.setdefault(key, None)
        order = [f.name for f in fields(Utterance) if f.name in cols]
        return order + sorted(k for k in cols if k not in _FIELD_NAMES)

    # ---- serialisation -------------------------------------------------------------------

    def write(self, path: Path) -> None:
        path = Path(path)
        if path.suffix == ".jsonl":
            text = "".join(json.dumps(u.to_dict(), ensure_ascii=False, sort_keys=False) + "\n" for u in self)
        elif path.suffix == ".csv":
            buf = io.StringIO()
            cols = self.columns()
            # csv quotes a value holding "\n" but not one holding a lone "\r", which readers take
            # for a line end: quote every value then
            carriage = any("\r" in str(v) for u in self for v in u.to_dict().values())
            quoting = csv.QUOTE_ALL if carriage else csv.QUOTE_MINIMAL
            writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", quoting=quoting)
            writer.writeheader()
            for u in self:
                writer.writerow({k: _fmt(v) for k, v in u.to_dict().items()})
            text = buf.getvalue()
        else:
            raise ManifestError(f"{path}: manifest files end in .csv or .jsonl")
        atomic.write_text(path, text)

    @classmethod
    def read(
        cls,
        path: Path,
        *,
        name: str | None = None,
        root: Path | None = None,
        check_files: bool = False,
        task: Callable[[str, int], AbstractContextManager[Callable[[int], None]]] | None = None,
    ) -> Manifest:
        """Read a CSV or JSONL manifest; relative paths resolve against ``root`` or its folder.

        Every problem of one kind (missing columns, empty path/speaker, duplicate ids, one
        speaker spelled two ways and, with ``check_files``, audio paths that cannot be read or
        that name one file twice: :mod:`interbias.corpora.manifest_checks`) is one
        :class:`ManifestError` giving the count and the first offending lines. ``task`` (a
        :meth:`interbias.utils.progress.Reporter.task`) shows progress over the rows of a manifest of
        :data:`PROGRESS_ROWS` rows or more.
        """
        path = Path(path)
        if path.suffix not in (".jsonl", ".csv"):
            raise ManifestError(f"{path}: manifest files end in .csv or .jsonl")
        text = read_utf8(path, what="manifest", error=ManifestError)
        rows: list[dict[str, Any]] = []
        lines: list[int] = []
        if path.suffix == ".jsonl":
            # lines end at "\n" only: JSON strings may hold U+2028, U+0085 and the like raw
            for lineno, row in jsonl_records(text.split("\n"), where=str(path)):
                check_json_types(row, where=f"{path}:{lineno}")
                rows.append(row)
                lines.append(lineno)
            present = set().union(*(r.keys() for r in rows)) if rows else set()
        else:
            present, rows, lines = csv_records(text, where=str(path))
        missing = [c for c in REQUIRED_COLUMNS if c not in present]
        if missing:
            raise ManifestError(
                f"{path}: missing required column(s) {', '.join(missing)}; found: {', '.join(sorted(present)) or '(none)'}"
            )
        if not rows:
            raise ManifestError(f"{path}: manifest has no rows")
        bad = [ln for r, ln in zip(rows, lines, strict=True) if not r.get("path") or not r.get("speaker")]
        if bad:
            raise ManifestError(
                f"{path}: {len(bad)} row(s) with an empty path or speaker; first at line(s) {', '.join(map(str, bad[:5]))}"
            )
        big = task is not None and len(rows) >= PROGRESS_ROWS
        with task(f"reading manifest {path.name}", len(rows) * (1 + check_files)) if big else nullcontext(None) as step:
            advance = step or (lambda n: None)
            utts = []
            for i, (r, ln) in enumerate(zip(rows, lines, strict=True)):
                utts.append(Utterance.from_dict(r, where=f"{path}:{ln}"))
                if i % 1000 == 999:
                    advance(1000)
            advance(len(rows) % 1000)
            check_unique_ids(utts, lines, where=str(path))
            check_speaker_spellings(utts, lines, where=str(path))
            manifest = cls(name or path.stem, Path(root) if root else path.parent, tuple(utts))
            if check_files:
                manifest.check_files(lines, where=str(path), advance=advance)
        return manifest

    def check_files(
        self,
        lines: Sequence[int] | None = None,
        *,
        where: str | None = None,
        advance: Callable[[int], None] | None = None,
    ) -> None:
        """Raise one :class:`ManifestError` if any audio path is missing, empty, not a regular
        file, unreadable or escapes the root, or if two rows name one file; ``lines`` (the file
        line of each utterance) are quoted for the first offenders."""
        problems: list[tuple[int, Utterance, str]] = []
        for i, u in enumerate(self.utterances):
            reason = _unreadable(self, u)
            if reason:
                problems.append((i, u, reason))
            if advance is not None and i % 1000 == 999:
                advance(1000)
        if advance is not None:
            advance(len(self.utterances) % 1000)
        if problems:
            first = ", ".join(
                (f"line {lines[i]} " if lines else "") + f"{u.path!r} ({reason})" for i, u, reason in problems[:5]
            )
            raise ManifestError(
                f"{where or 'manifest ' + repr(self.name)}: {len(problems)} of {len(self)} audio path(s) cannot be read "
                f"(relative paths resolve against {self.root}); first: {first}"
            )
        check_distinct_paths(
            [str(self.resolve(u)) for u in self.utterances],
            lines,
            where=where or f"manifest {self.name!r}",
            spans=[u.span for u in self.utterances],
        )


def speaker_attribute_conflicts(
    utterances: Iterable[Utterance], attributes: Iterable[str]
) -> dict[str, dict[str, list[str]]]:
    """attribute -> speaker -> the distinct values (sorted) of each speaker whose utterances
    disagree on a speaker-level attribute; utterances without the attribute are ignored."""
    attrs = list(dict.fromkeys(attributes))
    values: dict[str, dict[str, set[str]]] = {a: {} for a in attrs}
    for u in utterances:
        for a in attrs:
            v = u.get(a)
            if v is not None:
                values[a].setdefault(u.speaker, set()).add(v)
    return {
        a: {spk: sorted(vals) for spk, vals in sorted(per.items()) if len(vals) > 1}
        for a, per in values.items()
        if any(len(vals) > 1 for vals in per.values())
    }


def check_speaker_attributes(manifest: Manifest, attributes: Iterable[str], *, where: str | None = None) -> None:
    """Raise one :class:`ManifestError` when a speaker's utterances disagree on any of
    ``attributes`` (speaker-level): each such attribute with the number of speakers and the
    first speakers with their conflicting values."""
    conflicts = speaker_attribute_conflicts(manifest.utterances, attributes)
    if not conflicts:
        return
    parts = []
    for attr, per in conflicts.items():
        first = "; ".join(f"{spk!r}: {', '.join(map(repr, vals))}" for spk, vals in list(per.items())[:5])
        parts.append(f"{attr!r} differs within {len(per)} speaker(s) ({first})")
    raise ManifestError(
        f"{where or 'manifest ' + repr(manifest.name)}: speaker-level attribute(s) not constant per speaker: "
        + "; ".join(parts)
        + " (correct the rows, or declare an attribute that describes recordings with "
        "utterance_attributes: [NAME] in the experiment)"
    )


def speaker_level_attributes(
    manifest: Manifest, *, selected: Iterable[str] = (), declared: Iterable[str] = (), exempt: Iterable[str] = ()
) -> list[str]:
    """The attributes that must be constant per speaker in ``manifest``: the built-in
    :data:`SPEAKER_LEVEL` ones, those ``declared`` speaker-level, and those ``selected`` by
    (population factors, filters, splits, groups) unless known utterance-level; less the
    ``exempt`` ones and those the corpus records per utterance."""
    chosen = [*SPEAKER_LEVEL, *declared, *(a for a in selected if a not in UTTERANCE_LEVEL)]
    skip = set(exempt) | set(manifest.utterance_level)
    return [a for a in dict.fromkeys(chosen) if a not in skip]


def csv_records(text: str, *, where: str) -> tuple[set[str], list[dict[str, Any]], list[int]]:
    """(header columns, rows as dicts, line of each row) of manifest CSV text, read strictly
    (:func:`interbias.utils.csvfile.records`; a row with fewer fields than the header is refused, not
    read with its last columns empty)."""
    header, rows, lines = csvfile.records(text, where=where, error=ManifestError)
    return set(header), [dict(zip(header, r, strict=True)) for r in rows], lines


#: JSONL fields that must be text (a number is accepted for ids and speakers).
_TEXT_FIELDS = ("id", "path", "speaker", "gender", "age_band", "accent", "style", "session", "text", "sha256")


def check_json_types(row: dict[str, Any], *, where: str) -> None:
    """Refuse a JSONL value of the wrong type: ``path`` must be text; other fields text or a
    number; ``age``/``duration_s`` finite numbers; ``sample_rate_hz`` a positive integer;
    ``attrs`` a mapping."""
    for key, value in row.items():
        if value is None:
            continue
        if key == "attrs":
            if not isinstance(value, dict):
                raise ManifestError(f"{where}: 'attrs' must be an object, got {_json_kind(value)}")
            continue
        if key == "path" and not isinstance(value, str):
            raise ManifestError(f"{where}: 'path' must be text, got {_json_kind(value)} {value!r}"[:300])
        if isinstance(value, (dict, list, bool)) and key != "attrs":
            raise ManifestError(f"{where}: {key!r} must be text or a number, got {_json_kind(value)}")
        if key in ("age", "duration_s", "sample_rate_hz", *SEGMENT_COLUMNS) and value != "":
            _json_number(key, value, where)


def _json_number(key: str, value: Any, where: str) -> None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ManifestError(f"{where}: {key!r} must be a number, got {value!r}"[:300]) from None
    if not math.isfinite(number):
        raise ManifestError(f"{where}: {key!r} must be a finite number, got {value!r}")
    if key == "sample_rate_hz" and (number <= 0 or not number.is_integer()):
        raise ManifestError(f"{where}: 'sample_rate_hz' must be a positive whole number, got {value!r}")


def _json_kind(value: Any) -> str:
    kinds = ((bool, "true/false"), (dict, "an object"), (list, "a list"), ((int, float), "a number"), (str, "text"))
    return next((name for tp, name in kinds if isinstance(value, tp)), type(value).__name__)


def jsonl_records(lines: Iterable[str], *, where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of JSONL text; a line that is not a JSON
    object is a :class:`ManifestError` naming ``where`` and the line."""
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{where}:{lineno}: not valid JSON ({exc.msg})") from exc
        except RecursionError:
            raise ManifestError(f"{where}:{lineno}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise ManifestError(f"{where}:{lineno}: each line must be a JSON object")
        yield lineno, record


def check_unique_ids(utts: Sequence[Utterance], lines: Sequence[int], *, where: str) -> None:
    """One :class:`ManifestError` listing duplicated ids with the lines that carry them."""
    at: dict[str, list[int]] = {}
    for u, ln in zip(utts, lines, strict=True):
        at.setdefault(u.id, []).append(ln)
    dups = [(uid, lns) for uid, lns in at.items() if len(lns) > 1]
    if dups:
        first = ", ".join(f"{uid!r} (lines {', '.join(map(str, lns[:3]))})" for uid, lns in dups[:5])
        raise ManifestError(
            f"{where}: {len(dups)} duplicate id(s); first: {first} ({sum(len(lns) for _, lns in dups)} rows in all; "
            "an id defaults to the path without its extension: give an 'id' column to disambiguate)"
        )


def _unreadable(manifest: Manifest, u: Utterance) -> str | None:
    """Why ``u``'s audio file cannot be read, or ``None``."""
    try:
        full = manifest.resolve(u)
    except ManifestError as exc:
        return "a symbolic-link loop" if "link loop" in str(exc) else "escapes the corpus root"
    problem = not_a_file(full)
    if problem == "file does not exist":
        return "no such file"
    if problem:
        return problem.removeprefix("is ")
    st = full.stat()
    if st.st_size == 0:
        return "empty file"
    if not os.access(full, os.R_OK):
        return "permission denied"
    return None


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value)
    return value
