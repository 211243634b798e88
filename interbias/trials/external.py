"""External trial lists: a VoxCeleb (``1|0 enrol test``) or Kaldi/WeSpeaker
(``enrol test target|nontarget``) file scored instead of a drawn list
(``trials: {list: FILE}`` or ``interbias run --trials FILE``).

:func:`read_trial_list` goes in steps: parse the file (:func:`parse_trial_file`), match each
name to a manifest entry (:class:`UtteranceIndex`: id, relative path, or a unique path suffix),
check the pairs against the manifest (no self pairs, no repeats, labels agree with speakers),
assign each trial to the one stratum its utterances select, and build the
:class:`interbias.trials.sampler.TrialList` (file order within each stratum).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.corpora.manifest import Manifest, Utterance
from interbias.experiments.schema import Experiment
from interbias.trials.models import check_models, model_columns, model_names, parse_models
from interbias.trials.sampler import COLUMNS, StratumStats, TrialList, format_selectors, matches_selectors
from interbias.utils.errors import TrialError
from interbias.utils.seeding import sha256_file

#: The first lines of an external list's problems quoted in an error.
_SHOW = 5
FORMATS = ("voxceleb", "kaldi")


@dataclass(frozen=True)
class ListedTrial:
    line: int
    enrol: str
    test: str
    label: int


def _voxceleb_line(parts: list[str]) -> bool:
    return len(parts) == 3 and parts[0] in ("0", "1")


def _kaldi_line(parts: list[str]) -> bool:
    return len(parts) == 3 and parts[2] in ("target", "nontarget")


def _read_lines(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every non-blank line."""
    if not path.is_file():
        raise TrialError(f"trial list {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TrialError(f"trial list {path}: cannot read as UTF-8 text ({exc})") from exc
    lines = [(i, ln.split()) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise TrialError(f"trial list {path} is empty")
    return lines


def _detect_format(path: Path, lines: list[tuple[int, list[str]]]) -> str:
    """The one format every line fits (both: an error), else the first line's."""
    first = lines[0][1]
    fits = [f for f, ok in (("voxceleb", _voxceleb_line), ("kaldi", _kaldi_line)) if all(ok(p) for _, p in lines)]
    if len(fits) == 2:  # e.g. "1 a target": never guessed
        raise TrialError(
            f"trial list {path}: every line fits both VoxCeleb ('1|0 enrol test') and Kaldi/WeSpeaker "
            "('enrol test target|nontarget') format; give the format (--trials-format or trials.format)"
        )
    if fits:
        return fits[0]
    if _voxceleb_line(first):
        return "voxceleb"
    if _kaldi_line(first):
        return "kaldi"
    raise TrialError(
        f"trial list {path}: line {lines[0][0]} {' '.join(first)!r} is neither VoxCeleb "
        "('1|0 enrol test') nor Kaldi/WeSpeaker ('enrol test target|nontarget') format"
    )


def parse_trial_file(path: Path, fmt: str = "auto") -> tuple[str, list[ListedTrial]]:
    """(format, trials) of a VoxCeleb (``1|0 enrol test``) or Kaldi/WeSpeaker
    (``enrol test target|nontarget``) trial list; ``auto`` takes the one format every line fits
    (a list that fits both is an error), else the first line's.

    Blank lines are skipped; any other line that does not fit the format is an error quoting
    the count and the first such lines.
    """
    path = Path(path)
    lines = _read_lines(path)
    if fmt == "auto":
        fmt = _detect_format(path, lines)
    if fmt not in FORMATS:
        raise TrialError(f"trial list format {fmt!r} is not one of auto, voxceleb, kaldi")
    expected = "1|0 enrol test" if fmt == "voxceleb" else "enrol test target|nontarget"
    out: list[ListedTrial] = []
    bad: list[str] = []
    for lineno, parts in lines:
        if fmt == "voxceleb" and _voxceleb_line(parts):
            out.append(ListedTrial(lineno, parts[1], parts[2], int(parts[0])))
        elif fmt == "kaldi" and _kaldi_line(parts):
            out.append(ListedTrial(lineno, parts[0], parts[1], int(parts[2] == "target")))
        else:
            bad.append(f"line {lineno} {' '.join(parts)!r}")
    if bad:
        raise TrialError(
            f"trial list {path}: {len(bad)} line(s) not in {fmt} format ({expected!r}); first: "
            + ", ".join(bad[:_SHOW])
        )
    return fmt, out


class UtteranceIndex:
    """Finds a manifest utterance by a trial list's name for it: its id, its relative path,
    or (when exactly one path ends with it at a ``/``) a trailing part of its path."""

    def __init__(self, manifest: Manifest) -> None:
        self.by_id = {u.id: u for u in manifest}
        self.by_path: dict[str, list[Utterance]] = {}
        self.by_suffix: dict[str, list[Utterance]] = {}
        root = manifest.root.resolve()
        for u in manifest:
            rel = u.path.replace("\\", "/").removeprefix("./")
            p = Path(u.path)
            if p.is_absolute():
                try:
                    rel = p.relative_to(root).as_posix()
                except ValueError:
                    rel = p.as_posix()
            self.by_path.setdefault(rel, []).append(u)
            parts = rel.strip("/").split("/")
            for k in range(1, len(parts)):
                self.by_suffix.setdefault("/".join(parts[k:]), []).append(u)

    def find(self, name: str) -> tuple[Utterance | None, str]:
        """(utterance, how it matched: id | path | suffix), or (None, missing | ambiguous)."""
        if name in self.by_id:
            return self.by_id[name], "id"
        key = name.replace("\\", "/").removeprefix("./")
        for kind, table in (("path", self.by_path), ("suffix", self.by_suffix)):
            hits = table.get(key)
            if hits:
                return (hits[0], kind) if len(hits) == 1 else (None, "ambiguous")
        return None, "missing"


def _first(items: list[str]) -> str:
    return ", ".join(items[:_SHOW])


def _attrs(u: Utterance, names: list[str]) -> str:
    return ", ".join(f"{a}={u.get(a)}" for a in names)


def match_names(
    listed: list[ListedTrial], manifest: Manifest, where: str
) -> tuple[dict[str, Utterance], dict[str, int]]:
    """Every name of the list -> its manifest utterance, and how many matched by id, path and
    suffix; names matching nothing or several utterances are an error listing them."""
    index = UtteranceIndex(manifest)
    resolved: dict[str, Utterance] = {}
    matched_by = {"id": 0, "path": 0, "suffix": 0}
    missing: dict[str, int] = {}
    ambiguous: dict[str, int] = {}
    for t in listed:
        for name in (t.enrol, t.test):
            if name in resolved or name in missing or name in ambiguous:
                continue
            u, how = index.find(name)
            if u is not None:
                resolved[name] = u
                matched_by[how] += 1
            elif how == "ambiguous":
                ambiguous[name] = t.line
            else:
                missing[name] = t.line
    n_names = len(resolved) + len(missing) + len(ambiguous)
    if missing:
        raise TrialError(
            f"{where}: {len(missing)} of {n_names} utterance name(s) match no entry of manifest {manifest.name!r} "
            f"({len(manifest)} utterances) by id, relative path or path suffix; first: "
            + _first([f"{n!r} (line {ln})" for n, ln in missing.items()])
        )
    if ambiguous:
        raise TrialError(
            f"{where}: {len(ambiguous)} utterance name(s) match several manifest paths; give full relative paths "
            "or ids; first: " + _first([f"{n!r} (line {ln})" for n, ln in ambiguous.items()])
        )
    return resolved, matched_by


def check_pairs(listed: list[ListedTrial], resolved: dict[str, Utterance], where: str) -> None:
    """A pair of one utterance, a repeated pair or a label that disagrees with the manifest's
    speakers is an error."""
    problems: dict[str, list[str]] = {"self": [], "repeat": [], "label": []}
    seen: dict[tuple[str, str], int] = {}
    for t in listed:
        e, s = resolved[t.enrol], resolved[t.test]
        if e.id == s.id:
            problems["self"].append(f"line {t.line} ({e.id!r})")
        if (e.id, s.id) in seen:
            problems["repeat"].append(f"line {t.line} (as line {seen[(e.id, s.id)]})")
        seen.setdefault((e.id, s.id), t.line)
        if t.label != int(e.speaker == s.speaker):
            problems["label"].append(
                f"line {t.line} ({'target' if t.label else 'nontarget'}, speakers {e.speaker!r} and {s.speaker!r})"
            )
    for key, what in (
        ("self", "pair an utterance with itself"),
        ("repeat", "repeat an earlier (enrol, test) pair"),
        ("label", "have a label that disagrees with the manifest's speakers"),
    ):
        if problems[key]:
            raise TrialError(f"{where}: {len(problems[key])} trial(s) {what}; first: {_first(problems[key])}")


@dataclass
class Assignment:
    """Trials assigned to strata (in file order) and those excluded, by reason."""

    assigned: list[tuple[str, ListedTrial]]
    excluded: dict[str, list[str]]

    @property
    def n_excluded(self) -> int:
        return sum(map(len, self.excluded.values()))


def assign_strata(
    listed: list[ListedTrial], resolved: dict[str, Utterance], exp: Experiment | None, where: str
) -> Assignment:
    """Each trial's one stratum (``all`` without population factors); a trial outside the
    population filter or in no stratum is set aside; one in several strata is an error."""
    strata = exp.strata() if exp is not None else []
    population = exp.population if exp is not None else {}
    shown = sorted({*population, *(a for st in strata for a in st.enrol)})
    out = Assignment([], {"outside_population": [], "no_stratum": []})
    for t in listed:
        e, s = resolved[t.enrol], resolved[t.test]
        if not (matches_selectors(e, population) and matches_selectors(s, population)):
            out.excluded["outside_population"].append(
                f"line {t.line} (enrol {_attrs(e, shown)}; test {_attrs(s, shown)})"
            )
            continue
        if not strata:
            out.assigned.append(("all", t))
            continue
        hits = [st.name for st in strata if matches_selectors(e, st.enrol) and matches_selectors(s, st.test)]
        if len(hits) > 1:
            raise TrialError(
                f"{where}: line {t.line} falls in {len(hits)} strata ({', '.join(hits)}); "
                "the population factors' levels overlap"
            )
        if not hits:
            out.excluded["no_stratum"].append(f"line {t.line} (enrol {_attrs(e, shown)}; test {_attrs(s, shown)})")
            continue
        out.assigned.append((hits[0], t))
    return out


def _refuse_unassigned(got: Assignment, exp: Experiment | None, n_listed: int, where: str) -> None:
    """The error for trials that fit no stratum (unless ``trials.unassigned: exclude``)."""
    strata = exp.strata() if exp is not None else []
    population = exp.population if exp is not None else {}
    parts = []
    if got.excluded["outside_population"]:
        parts.append(
            f"{len(got.excluded['outside_population'])} outside the population filter {format_selectors(population)} "
            f"(first: {_first(got.excluded['outside_population'])})"
        )
    if got.excluded["no_stratum"]:
        parts.append(
            f"{len(got.excluded['no_stratum'])} in no stratum of {', '.join(st.name for st in strata)} "
            f"(first: {_first(got.excluded['no_stratum'])})"
        )
    raise TrialError(
        f"{where}: {got.n_excluded} of {n_listed} trial(s) cannot be assigned to a stratum of "
        f"{exp.name if exp else 'the experiment'}: {'; '.join(parts)}. Edit the list, or set "
        "trials.unassigned: exclude to score only the assigned trials (the excluded ones are counted in trials.json)"
    )


def _strata_rows(
    got: Assignment, resolved: dict[str, Utterance], exp: Experiment | None, where: str
) -> tuple[dict[str, StratumStats], list[tuple[Any, ...]]]:
    """Per stratum (experiment order) its counts and its trial rows; a stratum without both
    targets and non-targets is an error."""
    order = [st.name for st in exp.strata()] if exp is not None else []
    stats: dict[str, StratumStats] = {}
    rows = []
    for name in order or ["all"]:
        mine = [t for st_name, t in got.assigned if st_name == name]
        n_t = sum(t.label for t in mine)
        n_n = len(mine) - n_t
        if n_t == 0 or n_n == 0:
            raise TrialError(
                f"{where}: stratum {name} gets {n_t} target and {n_n} non-target trial(s); "
                "each stratum needs both for its metrics"
            )
        speakers = {resolved[t.enrol].speaker for t in mine} | {resolved[t.test].speaker for t in mine}
        stats[name] = StratumStats(
            name=name,
            n_speakers=len(speakers),
            n_enrol_utterances=len({resolved[t.enrol].id for t in mine}),
            n_test_utterances=len({resolved[t.test].id for t in mine}),
            targets_available=n_t,
            nontargets_available=n_n,
            n_target=n_t,
            n_nontarget=n_n,
            seed=exp.seed if exp is not None else 0,
        )
        for t in mine:
            e, s = resolved[t.enrol], resolved[t.test]
            rows.append((name, e.id, s.id, t.label, e.speaker, s.speaker, t.enrol, t.test))
    return stats, rows


def read_trial_list(
    path: Path,
    manifest: Manifest,
    exp: Experiment | None = None,
    *,
    fmt: str = "auto",
    unassigned: str = "error",
    models_file: Path | None = None,
) -> TrialList:
    """An external trial list as a :class:`TrialList`, in file order within each stratum.

    Names are matched to ``manifest`` by :class:`UtteranceIndex`; names matching nothing (or
    several utterances) are an error listing them, never skipped. Each trial is assigned to
    the one stratum of ``exp``'s population factors whose enrol and test selectors its two
    utterances meet (``all`` without population factors); a trial outside the population
    filter or in no stratum is an error, or with ``unassigned="exclude"`` dropped and counted
    in ``info``. A pair of one utterance, a repeated pair, a label that disagrees with the
    manifest's speakers, and a stratum without both targets and non-targets are errors. With
    ``models_file`` the list's enrolment names are models of several utterances
    (:mod:`interbias.trials.models`).
    """
    path = Path(path)
    fmt, listed = parse_trial_file(path, fmt)
    where = f"trial list {path}"
    models = parse_models(Path(models_file)) if models_file is not None else None
    if models is None:
        resolved, matched_by = match_names(listed, manifest, where)
    else:  # the test names are the list's, the model utterances the models file's: each error names its file
        tests = [ListedTrial(t.line, t.test, t.test, 0) for t in listed]
        resolved, matched_by = match_names(tests, manifest, where)
        names = [(line, name) for line, name in model_names(listed, models, where) if name not in resolved]
        of_models, more = match_names(
            [ListedTrial(ln, n, n, 0) for ln, n in names], manifest, f"models file {models_file}"
        )
        matched_by = {k: n + more[k] for k, n in matched_by.items()}
        resolved = check_models(
            listed, models, {**resolved, **of_models}, where, models_where=f"models file {models_file}"
        )
    check_pairs(listed, resolved, where)
    got = assign_strata(listed, resolved, exp, where)
    if got.n_excluded and unassigned != "exclude":
        _refuse_unassigned(got, exp, len(listed), where)
    stats, rows = _strata_rows(got, resolved, exp, where)
    frame = pd.DataFrame(rows, columns=[*COLUMNS[1:], "enrol_name", "test_name"])
    frame.insert(0, "trial_id", np.arange(len(frame), dtype=np.int64))
    if models is not None:
        for j, (col, ids) in enumerate(model_columns(frame["enrol_name"].tolist(), models, resolved).items()):
            frame.insert(4 + j, col, ids)
    frame["label"] = frame["label"].astype(np.int8)
    info: dict[str, Any] = {
        "experiment": exp.name if exp is not None else None,
        "seed": exp.seed if exp is not None else 0,
        "file": str(path.resolve()),
        "file_sha256": sha256_file(path),
        "format": fmt,
        **(
            {"models_file": str(Path(models_file).resolve()), "models_sha256": sha256_file(Path(models_file))}
            if models_file is not None
            else {}
        ),
        "n_listed": len(listed),
        "matched_by": matched_by,
        "unassigned": unassigned,
        "n_excluded": got.n_excluded,
        "excluded": {k: len(v) for k, v in got.excluded.items()},
        "excluded_first": [x for v in got.excluded.values() for x in v][:20],
    }
    return TrialList(frame, stats, "file", info)


def external_trials(exp: Experiment, manifest: Manifest, *, max_trials: int | None = None) -> TrialList | None:
    """The experiment's external trial list (``trials.list``), or ``None`` when it samples."""
    spec = exp.trials
    if spec.list_file is None:
        return None
    if max_trials is not None:
        raise TrialError("--max-trials cannot be combined with an external trial list (the list is scored whole)")
    models = None if spec.models_file is None else Path(spec.models_file)
    return read_trial_list(
        Path(spec.list_file), manifest, exp, fmt=spec.list_format, unassigned=spec.unassigned, models_file=models
    )
