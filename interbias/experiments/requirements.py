"""What an experiment needs from a corpus, in one place.

:func:`requirements` derives from an experiment definition the records a corpus is judged
against: the attributes it selects or stratifies by (:class:`AttributeNeed`), the speakers each
stratum needs in total, the dev split included (:class:`SpeakerNeed`, by the split rule
:func:`dev_count` that the sampler itself applies), the recordings its operators read from
folders (:class:`InputNeed`: noise, music, impulse responses) and the countermeasure
checkpoints it loads. :func:`interbias.trials.fit.judge_manifest` judges a manifest against
them: one :class:`Shortfall` per missing thing, with its fix.

A run on a user's manifest (``run --manifest``, ``validate --manifest``) uses the experiment's
own definition through :func:`manifest_form`: ``--noise-dir DIR`` supplies recorded noise
(:func:`with_noise_dir`); levels whose recordings are still missing are left out visibly
(:func:`leave_out_missing`, an :class:`~interbias.experiments.sections.LeftOut` per factor),
never substituted; what the run needs is stated from these records (``requires``), never from
the text that names the catalogue's own corpus, and a variant's description (which describes
its corpus) gives way to the experiment's own.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interbias.experiments import yamlfile
from interbias.experiments.sections import AcousticLevel, LeftOut, PopulationLevel, short_levels
from interbias.operators.spec import op_mapping
from interbias.utils.errors import ConfigError, OperatorError

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment

#: The command-line option that supplies each kind of recording (others: the YAML's folder).
INPUT_OPTIONS = {"recorded noise": "--noise-dir DIR"}


def natural(value: str) -> tuple[int, float, str]:
    """Sort key putting numeric values in numeric order (2 before 10) ahead of the others."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


@dataclass(frozen=True)
class AttributeNeed:
    """An attribute the experiment selects or stratifies by, and the values it uses (``None``: any)."""

    attribute: str
    values: tuple[str, ...] | None

    def text(self) -> str:
        """``gender (female, male)``."""
        return self.attribute + (f" ({', '.join(self.values)})" if self.values else "")


@dataclass(frozen=True)
class SpeakerNeed:
    """Speakers each stratum needs: ``evaluation`` + ``dev`` (the dev split's share rounded as
    the sampler rounds it), each with at least ``utterances`` usable utterances; ``per`` names
    the strata (an attribute, or ``stratum``)."""

    evaluation: int
    dev: int
    utterances: int
    per: str

    @property
    def total(self) -> int:
        return self.evaluation + self.dev

    def text(self) -> str:
        """``≥ 22 speakers per gender (15 evaluation + 7 dev)``."""
        split = f" ({self.evaluation} evaluation + {self.dev} dev)" if self.dev else ""
        return f"≥ {self.total} speakers per {self.per}{split}"


@dataclass(frozen=True)
class InputNeed:
    """Recordings the operators of some levels read from a folder: ``what`` ("recorded noise"),
    the operator parameter that names the folder, the folder the definition gives (``None``:
    none) and whether it is here."""

    what: str
    param: str
    folder: str | None
    levels: tuple[tuple[str, str], ...]
    available: bool

    @property
    def fix(self) -> str:
        """``--noise-dir DIR``, else where the definition expects them."""
        if self.what in INPUT_OPTIONS:
            return INPUT_OPTIONS[self.what]
        if self.folder:
            return f"recordings in {self.folder} (the {self.param} its levels name)"
        return f"a folder of them in the operator's {self.param}"

    def text(self) -> str:
        """``recorded noise for environmental_25/15/5 (--noise-dir DIR)``."""
        return f"{self.what} for {short_levels(tuple(lv for _, lv in self.levels))} ({self.fix})"


@dataclass(frozen=True)
class Requirements:
    """Everything :func:`requirements` derives from one experiment."""

    experiment: str
    attributes: tuple[AttributeNeed, ...]
    speakers: SpeakerNeed | None
    inputs: tuple[InputNeed, ...]
    checkpoints: tuple[str, ...]

    def text(self) -> str:
        """What a corpus must give, as the ``requires`` of a manifest run: ``a manifest with
        gender (female, male); ≥ 22 speakers per gender (15 evaluation + 7 dev), each with ≥ 2
        utterances; recorded noise for environmental_25/15/5 (--noise-dir DIR)``."""
        parts = ["a manifest" + (" with " + ", ".join(a.text() for a in self.attributes) if self.attributes else "")]
        if self.speakers is not None:
            parts.append(f"{self.speakers.text()}, each with ≥ {self.speakers.utterances} utterances")
        parts += [need.text() for need in self.inputs]
        if self.checkpoints:
            parts.append("the checkpoints of " + ", ".join(self.checkpoints))
        return "; ".join(parts)


@dataclass(frozen=True)
class Shortfall:
    """One thing a corpus lacks for an experiment: what is needed, what the corpus has, the fix."""

    need: str
    have: str
    fix: str = ""

    def line(self) -> str:
        """``E16 needs ≥ 22 speakers per gender (15 evaluation + 7 dev); calls.csv has 20 female,
        24 male: <fix>``."""
        return f"{self.need}; {self.have}" + (f": {self.fix}" if self.fix else "")


def dev_count(n: int, dev_share: float) -> int:
    """Speakers of a group of ``n`` the dev split takes: round(dev_share · n), kept within
    [1, n − 1] when n ≥ 2 (a lone speaker goes to evaluation). The sampler's split rule."""
    if n < 2:
        return 0
    return min(max(int(math.floor(dev_share * n + 0.5)), 1), n - 1)


def speakers_needed(min_speakers: int, dev_share: float | None) -> tuple[int, int]:
    """(evaluation, dev) speakers of the smallest group in which both splits hold
    ``min_speakers`` (dev 0 without a split)."""
    least = max(1, min_speakers)
    if dev_share is None:
        return least, 0
    for n in itertools.count(2):
        dev = dev_count(n, dev_share)
        if dev >= least and n - dev >= least:
            return n - dev, dev
    raise AssertionError("unreachable")  # pragma: no cover


def requirements(exp: Experiment) -> Requirements:
    """The records of what ``exp`` needs from a corpus (see the module docstring)."""
    attrs: dict[str, set[str] | None] = {a: set(v) for a, v in exp.population.items()}
    for f in exp.population_factors:
        values = set().union(*(lv.values for lv in f.levels if isinstance(lv, PopulationLevel)))
        known = attrs.get(str(f.attribute), set())
        attrs[str(f.attribute)] = None if known is None else known | values
    needs = tuple(AttributeNeed(a, tuple(sorted(v, key=natural)) if v else None) for a, v in attrs.items())
    speakers = None
    if exp.trials.list_file is None:
        evaluation, dev = speakers_needed(exp.trials.min_speakers, exp.trials.dev_share)
        pops = exp.population_factors
        per = str(pops[0].attribute) if len(pops) == 1 else "stratum"
        speakers = SpeakerNeed(evaluation, dev, exp.trials.enrol_utterances + 1, per)
    return Requirements(exp.name, needs, speakers, input_needs(exp), tuple(exp.cm_labels))


def input_needs(exp: Experiment) -> tuple[InputNeed, ...]:
    """The recordings ``exp``'s operators read from folders, one record per (kind, folder),
    with the levels that use it and whether the folder is here."""
    found: dict[tuple[str, str, str | None], list[tuple[str, str]]] = {}
    available: dict[tuple[str, str, str | None], bool] = {}
    for factor in exp.acoustic_factors:
        for level in factor.levels:
            assert isinstance(level, AcousticLevel)
            for op in (*level.enrol.ops, *level.test.ops):
                if (got := op.recorded_input()) is None:
                    continue
                key = (got[1], got[0], getattr(op, got[0], None))
                if (factor.name, level.name) not in found.setdefault(key, []):
                    found[key].append((factor.name, level.name))
                available[key] = available.get(key, True) and _here(op)
    return tuple(InputNeed(w, p, f, tuple(found[(w, p, f)]), available[(w, p, f)]) for w, p, f in found)


def _here(op: Any) -> bool:
    try:
        op.check_resources()
    except OperatorError:
        return False
    return True


def manifest_form(exp: Experiment, *, noise_dir: Path | None = None) -> Experiment:
    """``exp`` as it runs on a user's manifest (the module docstring): recorded noise from
    ``noise_dir``, levels whose recordings are missing left out, ``requires`` stated from
    :func:`requirements`, the experiment's own description in place of a variant's."""
    if noise_dir is not None:
        exp = with_noise_dir(exp, noise_dir)
    needs = requirements(exp).text()  # the left-out levels' recordings included: what would add them
    exp = leave_out_missing(exp)
    raw = copy.deepcopy(exp.raw)
    description = exp.description
    if exp.variant is not None and exp.path is not None:  # a variant's description describes its corpus
        description = str(yamlfile.load(exp.path).get("description", ""))
        raw["description"] = description
    raw["requires"] = needs
    return replace(exp, requires=needs, description=description, raw=raw)


def with_noise_dir(exp: Experiment, folder: Path) -> Experiment:
    """``exp`` with every environmental-noise operator reading ``folder`` (``--noise-dir``), in
    its chains and in its resolved definition; an error when no level uses recorded noise or
    the folder is not there."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"--noise-dir {folder}: not a folder (it should hold recorded noise, e.g. .wav files)")
    raw = copy.deepcopy(exp.raw)
    count = [0]

    def visit(node: Any) -> Any:
        if isinstance(node, str) and node.startswith("noise:"):
            node = op_mapping(node, where=f"{exp.name}: factors")
        if isinstance(node, dict) and node.get("op") == "noise" and node.get("kind") == "environmental":
            count[0] += 1
            return {**node, "noise_dir": str(path)}
        if isinstance(node, dict):
            return {k: visit(v) for k, v in node.items()}
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node

    raw["factors"] = visit(raw.get("factors"))
    if not count[0]:
        raise ConfigError(f"--noise-dir: {exp.name} has no level with recorded (environmental) noise")
    return reparsed(exp, raw)


def leave_out_missing(exp: Experiment) -> Experiment:
    """``exp`` without the acoustic levels whose recordings are not here, each left-out group
    recorded in ``left_out`` (and in the resolved definition); a reference level that needs
    them is an error (every contrast is measured against it)."""
    missing = [need for need in input_needs(exp) if not need.available]
    if not missing:
        return exp
    drop: dict[str, dict[str, InputNeed]] = {}
    for need in missing:
        for factor, level in need.levels:
            drop.setdefault(factor, {}).setdefault(level, need)
    for factor in exp.acoustic_factors:
        if (need := drop.get(factor.name, {}).get(factor.reference)) is not None:
            raise ConfigError(
                f"{exp.name}: the reference level {factor.name}={factor.reference} needs {need.what}: {need.fix}"
            )
    raw = copy.deepcopy(exp.raw)
    for spec in raw["factors"]:
        gone = drop.get(spec.get("name"), {})
        spec["levels"] = {k: v for k, v in spec["levels"].items() if k not in gone}
    left_out = []
    for factor in exp.acoustic_factors:
        for need in dict.fromkeys(drop.get(factor.name, {}).values()):
            levels = tuple(lv for f, lv in need.levels if f == factor.name)
            left_out.append(LeftOut(factor.name, levels, need.what, need.fix))
    out = reparsed(exp, raw)
    out_raw = {**out.raw, "left_out": [lo.record() for lo in (*exp.left_out, *left_out)]}
    return replace(out, left_out=(*exp.left_out, *left_out), raw=out_raw)


def reparsed(exp: Experiment, raw: dict[str, Any]) -> Experiment:
    """``exp`` read again from the definition ``raw`` (its variant already applied), keeping
    its variant name and what was left out."""
    from interbias.experiments.schema import parse_experiment

    body = {k: v for k, v in raw.items() if k != "left_out"}
    where = exp.path.name if exp.path is not None else exp.name
    out = parse_experiment(body, where=where, path=exp.path)
    keep = {"left_out": raw["left_out"]} if "left_out" in raw else {}
    return replace(out, variant=exp.variant, left_out=exp.left_out, raw={**out.raw, **keep})
