"""``models.lock``: what ``interbias encoders fetch`` pinned, and the check every load makes.

The lock is a JSON file in the models folder (``$INTERBIAS_MODELS/models.lock``). Per label it
records the source repository, the revision asked for, the commit it resolved to, the folder
the files were placed in (relative to the lock's folder when inside it) and each file's sha256
and size. When a label has an entry and is loaded from that folder, every locked file must be
present with its locked sha256: anything else is refused with one line naming the file and
both hashes. A folder the lock does not describe (placed by hand, or another ``path``) loads
as before. The entry's digest (sha256 of its canonical JSON) goes into the encoder's provenance.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interbias.utils.atomic import write_text
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import canonical_json

MODELS_LOCK_NAME = "models.lock"
MODELS_LOCK_VERSION = 1


def models_lock_path() -> Path:
    """``$INTERBIAS_MODELS/models.lock``."""
    from interbias.utils.paths import models_dir

    return models_dir() / MODELS_LOCK_NAME


@dataclass(frozen=True)
class PinnedFile:
    name: str
    sha256: str
    size: int


@dataclass(frozen=True)
class PinEntry:
    """One label's pin: repository, requested revision, resolved commit, folder, files."""

    label: str
    repo: str
    revision: str
    commit: str
    folder: str
    files: tuple[PinnedFile, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "revision": self.revision,
            "commit": self.commit,
            "folder": self.folder,
            "files": {f.name: {"sha256": f.sha256, "size": f.size} for f in sorted(self.files, key=lambda f: f.name)},
        }

    @property
    def digest(self) -> str:
        """sha256 of the entry's canonical JSON (label included)."""
        return hashlib.sha256(canonical_json({"label": self.label, **self.as_dict()}).encode()).hexdigest()

    def folder_path(self, lock_file: Path) -> Path:
        path = Path(self.folder).expanduser()
        return path if path.is_absolute() else lock_file.parent / path

    def provenance(self) -> dict[str, str]:
        return {"repo": self.repo, "commit": self.commit, "digest": self.digest}

    @classmethod
    def from_dict(cls, label: str, data: Mapping[str, Any]) -> PinEntry:
        files = tuple(
            PinnedFile(str(name), str(meta["sha256"]), int(meta["size"])) for name, meta in dict(data["files"]).items()
        )
        return cls(label, str(data["repo"]), str(data["revision"]), str(data["commit"]), str(data["folder"]), files)


def relative_folder(folder: Path, lock_file: Path) -> str:
    """``folder`` relative to the lock's folder when inside it (so the models folder can move), else absolute."""
    folder, base = Path(folder).absolute(), lock_file.parent.absolute()
    try:
        return str(folder.relative_to(base))
    except ValueError:
        return str(folder)


def read_models_lock(path: Path | None = None) -> dict[str, PinEntry]:
    """Every entry of the lock file (empty when there is none); a malformed lock is an error."""
    path = path or models_lock_path()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if int(data.get("version", 0)) != MODELS_LOCK_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {MODELS_LOCK_VERSION}")
        return {label: PinEntry.from_dict(label, entry) for label, entry in dict(data["labels"]).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EncoderError(f"{path} is not a readable models.lock ({type(exc).__name__}: {exc})") from exc


def write_entry(entry: PinEntry, path: Path | None = None) -> Path:
    """Add or replace one label's entry (the file is rewritten atomically, keys sorted)."""
    path = path or models_lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    guard = os.open(path.parent, os.O_RDONLY)  # two fetches at once: one writer at a time (flock on the folder)
    try:
        fcntl.flock(guard, fcntl.LOCK_EX)
        entries = read_models_lock(path)
        entries[entry.label] = entry
        data = {"version": MODELS_LOCK_VERSION, "labels": {label: e.as_dict() for label, e in sorted(entries.items())}}
        write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    finally:
        os.close(guard)  # releases the flock
    return path


def entry_for(label: str, folder: Path, path: Path | None = None) -> PinEntry | None:
    """The lock entry binding ``folder`` for ``label``, if any."""
    path = path or models_lock_path()
    entry = read_models_lock(path).get(label)
    if entry is None or entry.folder_path(path).absolute() != Path(folder).absolute():
        return None
    return entry


def mismatches(
    entry: PinEntry, folder: Path, known: Mapping[str, str] | None = None, *, sizes_only: bool = False
) -> list[str]:
    """One line per locked file that is missing or differs; ``known`` are hashes already computed.
    ``sizes_only`` compares sizes (a quick look; the load check always hashes)."""
    from interbias.encoders import sha256_file

    known = dict(known or {})
    problems = []
    for f in sorted(entry.files, key=lambda f: f.name):
        p = Path(folder) / f.name
        if not p.is_file():
            problems.append(f"{p} is missing (locked sha256 {f.sha256})")
            continue
        if sizes_only:
            if p.stat().st_size != f.size:
                problems.append(f"{p} is {p.stat().st_size} bytes; {MODELS_LOCK_NAME} has {f.size}")
            continue
        found = known.get(f.name) or sha256_file(p)
        if found != f.sha256:
            problems.append(f"{p} does not match {MODELS_LOCK_NAME}: locked sha256 {f.sha256}, found {found}")
    return problems


def enforce(label: str, folder: Path, files: Mapping[str, str]) -> PinEntry | None:
    """The load-time check: raise :class:`EncoderError` when the lock binds ``folder`` and a file
    differs from it; return the binding entry (None for a folder the lock does not describe)."""
    entry = entry_for(label, folder)
    if entry is None:
        return None
    problems = mismatches(entry, folder, files)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise EncoderError(
            f"{label}: {problems[0]}{more}; run `interbias encoders fetch {label}` to restore the locked files "
            f"or `interbias encoders fetch --update {label}` to re-pin"
        )
    return entry
