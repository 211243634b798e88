"""Manifest labels that would silently mislabel trials, refused with one line each.

- **One speaker spelled two ways.** A spreadsheet or editor round trip changes names: case
  (``SPK01``/``spk01``), stray or doubled whitespace and non-breaking spaces, Unicode
  composed/decomposed forms (NFC ``é`` against NFD ``e`` + combining accent), full-width
  characters and zero-width marks, leading zeros dropped from numeric ids (``0042``/``42``),
  numeric ids turned into floats or scientific notation (``1001.0``, ``1.001E+03``). Two names
  that agree after undoing all of these (:func:`speaker_key`) would make a second speaker out
  of one (its same-speaker pairs drawn as non-target trials): refused, naming both spellings.
- **One audio file listed twice** (two rows whose paths resolve to the same file, or to the
  same segment of it): a target trial between them scores a file against itself. Refused,
  naming the lines. Distinct segments of one recording are distinct utterances.
- **The same audio content in two files** (equal sha256 over the bytes): the same, caught
  when the run reads the trial files (:func:`check_distinct_audio`).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from interbias.utils.errors import ManifestError

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$")


def speaker_key(name: str) -> str:
    """``name`` with what a spreadsheet or editor may change undone: NFKC (composed forms,
    non-breaking and full-width characters), zero-width marks removed, whitespace runs to one
    space and trimmed, case folded, and a numeric name written as its integer when whole."""
    s = unicodedata.normalize("NFKC", name).translate(_INVISIBLE)
    s = " ".join(s.split()).casefold()
    if _NUMBER.match(s):
        try:
            value = Decimal(s)
        except InvalidOperation:
            return s
        if value.is_finite() and value == value.to_integral_value():
            return str(int(value))
    return s


def check_speaker_spellings(utts: Sequence[Any], lines: Sequence[int], *, where: str) -> None:
    """Refuse speaker names that are one name spelled differently (see module docs)."""
    spellings: dict[str, dict[str, int]] = {}
    for u, ln in zip(utts, lines, strict=True):
        spellings.setdefault(speaker_key(u.speaker), {}).setdefault(u.speaker, ln)
    clashes = [names for names in spellings.values() if len(names) > 1]
    if clashes:
        first = "; ".join(" vs ".join(f"{n!r} (line {ln})" for n, ln in names.items()) for names in clashes[:3])
        raise ManifestError(
            f"{where}: {len(clashes)} speaker name(s) spelled more than one way (case, spaces, Unicode form, "
            f"leading zeros or a number turned into a float), which would split one speaker in two; first: {first}; "
            "write each speaker's name one way"
        )


def check_distinct_paths(
    resolved: Sequence[str], lines: Sequence[int] | None, *, where: str, spans: Sequence[Any] | None = None
) -> None:
    """Refuse two rows whose audio paths resolve (links followed) to one file and name the same
    span of it (``spans``: each row's (offset, duration), ``None`` for the whole file)."""
    seen: dict[tuple[str, Any], int] = {}
    dups: list[tuple[str, int, int]] = []
    for i, path in enumerate(resolved):
        real = os.path.realpath(path)
        key = (real, spans[i] if spans is not None else None)
        if key in seen:
            dups.append((real, seen[key], i))
        else:
            seen[key] = i
    if dups:

        def at(i: int) -> str:
            return f"line {lines[i]}" if lines else f"row {i + 1}"

        first = "; ".join(f"{p} ({at(a)} and {at(b)})" for p, a, b in dups[:3])
        raise ManifestError(
            f"{where}: {len(dups)} row(s) name an audio file another row names already (a trial would score a file "
            f"against itself); first: {first}; list each file once"
        )


def check_distinct_audio(shas: Mapping[str, str], *, where: str) -> None:
    """Refuse utterances (id -> sha256 of the audio bytes) whose audio is byte-identical."""
    by_sha: dict[str, list[str]] = {}
    for uid, sha in sorted(shas.items()):
        by_sha.setdefault(sha, []).append(uid)
    dups = [ids for ids in by_sha.values() if len(ids) > 1]
    if dups:
        first = "; ".join(" = ".join(repr(i) for i in ids[:3]) for ids in dups[:3])
        raise ManifestError(
            f"{where}: {len(dups)} audio file(s) appear under more than one utterance with identical bytes (sha256), "
            f"so a trial between them scores a file against itself; first: {first}; keep one copy of each"
        )


def partly_labelled(utts: Sequence[Any], attributes: Sequence[str], *, where: str) -> str | None:
    """A line counting utterances left out because they leave an attribute the experiment
    selects by empty while other utterances of their speaker give it (they drop out of every
    stratum), or ``None`` when there are none."""
    for attr in attributes:
        have: set[str] = set()
        lack: dict[str, list[str]] = {}
        for u in utts:
            if u.get(attr) is None:
                lack.setdefault(u.speaker, []).append(u.id)
            else:
                have.add(u.speaker)
        partly = sorted(spk for spk in lack if spk in have)
        if partly:
            n = sum(len(lack[spk]) for spk in partly)
            first = ", ".join(f"{lack[spk][0]!r} (speaker {spk!r})" for spk in partly[:3])
            return (
                f"{where}: {n} utterance(s) of {len(partly)} speaker(s) leave {attr!r} empty while other utterances "
                f"of the same speaker give it; they are left out of every stratum; first: {first}"
            )
    return None
