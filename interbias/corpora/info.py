"""Counts of a manifest per attribute: how many speakers and utterances carry each value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interbias.corpora.manifest import Manifest
from interbias.utils.errors import CorpusError
from interbias.utils.registry import Registry

#: Attributes that identify a recording rather than describe a speaker or condition.
SKIP = {"id", "path", "speaker", "sha256", "duration_s", "text", "sample_rate_hz", "age", "offset", "duration"}
#: Attributes with more distinct values than this are summarised by their count only.
MAX_LEVELS = 40


@dataclass
class AttributeCounts:
    name: str
    #: value -> (speakers, utterances), for attributes with at most ``MAX_LEVELS`` values.
    values: dict[str, tuple[int, int]] = field(default_factory=dict)
    n_distinct: int = 0
    n_missing: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n_distinct": self.n_distinct, "n_missing_utterances": self.n_missing}
        if self.values:
            out["values"] = {k: {"speakers": s, "utterances": u} for k, (s, u) in self.values.items()}
        return out


@dataclass
class ManifestSummary:
    name: str
    n_utterances: int
    n_speakers: int
    total_duration_s: float | None
    attributes: list[AttributeCounts]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n_utterances": self.n_utterances,
            "n_speakers": self.n_speakers,
            "total_duration_s": self.total_duration_s,
            "attributes": {a.name: a.as_dict() for a in self.attributes},
        }


def summarize(manifest: Manifest) -> ManifestSummary:
    """Speakers and utterances per value of every attribute (fields and ``attrs``)."""
    names = [c for c in manifest.columns() if c not in SKIP]
    attributes = []
    for name in names:
        utts: dict[str, int] = {}
        spks: dict[str, set[str]] = {}
        missing = 0
        for u in manifest:
            value = u.get(name)
            if value is None:
                missing += 1
                continue
            utts[value] = utts.get(value, 0) + 1
            spks.setdefault(value, set()).add(u.speaker)
        counts = AttributeCounts(name, n_distinct=len(utts), n_missing=missing)
        if len(utts) <= MAX_LEVELS:
            counts.values = {v: (len(spks[v]), utts[v]) for v in sorted(utts)}
        attributes.append(counts)
    durations = [u.duration_s for u in manifest if u.duration_s is not None]
    total = round(sum(durations), 3) if len(durations) == len(manifest) else None
    return ManifestSummary(manifest.name, len(manifest), len(manifest.speakers()), total, attributes)


def crosstab(
    manifest: Manifest, rows: str, columns: str
) -> tuple[dict[tuple[str, str], tuple[int, int]], list[str], list[str]]:
    """Speakers and utterances per (``rows`` value, ``columns`` value), e.g. split × gender
    (the seed paper's Fig. 2): ({(r, c): (speakers, utterances)}, row values, column values),
    values sorted; utterances missing either attribute are not counted."""
    utts: dict[tuple[str, str], int] = {}
    spks: dict[tuple[str, str], set[str]] = {}
    for u in manifest:
        r, c = u.get(rows), u.get(columns)
        if r is None or c is None:
            continue
        key = (str(r), str(c))
        utts[key] = utts.get(key, 0) + 1
        spks.setdefault(key, set()).add(u.speaker)
    out = {k: (len(spks[k]), utts[k]) for k in sorted(utts)}
    return out, sorted({r for r, _ in out}), sorted({c for _, c in out})


@dataclass(frozen=True)
class Section:
    """One part of ``interbias data info`` after the counts and the audio: its key in the
    ``--json`` object, its text lines (at most 80 columns) and its JSON value."""

    key: str
    lines: list[str]
    data: Any


#: Further parts of ``interbias data info``, each a function of the manifest returning a
#: :class:`Section` (or ``None`` when it has nothing to say), shown in the order registered;
#: a module registers one with ``@INFO_SECTIONS.register(NAME)`` and is imported by the
#: command (:func:`info_sections`).
INFO_SECTIONS: Registry[Callable[[Manifest], Section | None]] = Registry("data info section", CorpusError)


def info_sections(manifest: Manifest) -> list[Section]:
    """The registered sections that have something to say about ``manifest``."""
    return [s for make in INFO_SECTIONS.registered() if (s := make(manifest)) is not None]


def read_for_info(path: Path, *, root: Path | None = None) -> Manifest:
    """A manifest as ``interbias data info`` reads it: CSV/JSONL without checking its audio
    paths (a file that cannot be read is reported, not an error), a Lhotse pair as
    :func:`interbias.corpora.read_manifest` reads it."""
    from interbias.corpora import lhotse

    if root is not None and not Path(root).is_dir():
        raise CorpusError(
            f"data root {root} does not exist or is not a folder (the manifest's paths resolve against it)"
        )
    if path.is_dir() or lhotse.is_lhotse_file(path):
        return lhotse.read_lhotse(*lhotse.find_pair(path), root=root, name=path.name if path.is_dir() else None)
    return Manifest.read(path, root=root)
