"""Experiment definitions: the typed schema of ``conditions/*.yaml``.

An experiment names a corpus, a population filter, up to three factors (each a population
factor that selects speakers/utterances by a manifest attribute, or an acoustic factor whose
levels are operator chains per side), a trial spec and a seed. Every problem is reported as
one :class:`ConfigError` naming the file, the key and the valid choices.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from interbias import yamlfile
from interbias.audio import RATE_LIMITS_HZ, RESAMPLERS, FrontEnd
from interbias.decision_spec import (
    CalibrationSpec,
    OperatingPoint,
    ScoringSpec,
    parse_calibration,
    parse_operating_points,
    parse_scoring,
)
from interbias.errors import ConfigError, OperatorError
from interbias.operators import Chain, parse_chain

TOP_KEYS = {
    "name": "experiment id (E01…E20)",
    "title": "short human title",
    "description": "what the experiment measures",
    "use": "contrast | gap | descriptive",
    "corpus": "corpus name or {name, root, manifest}",
    "population": "filter: attribute -> value or list of values",
    "factors": "list of factors (at most 3)",
    "trials": "trial spec",
    "frontend": "front-end rules",
    "seed": "integer mixed into every derived seed",
    "requires": "what data a run needs, shown when it cannot run",
    "variants": "per-corpus overrides of top-level keys (e.g. synthetic)",
    "spoofing": "attack set whose audio is scored as spoof trials: {attacks: FILE | {builder, options}}",
    "fairness": "fairness at a dev threshold: {groups: [attribute, ...], threshold: eer|fixed:X|far:X}",
    "countermeasures": "a CM experiment: {models: [CM label, ...], bootstrap: N, threshold: eer} (interbias.cm.experiment)",
    "notes": "free text",
    "speaker_attributes": "more attributes that describe a speaker: constant per speaker, else the manifest is refused",
    "utterance_attributes": "attributes that describe recordings and may vary within a speaker",
    "operating_points": "detection-cost points [{name, p_target, c_miss, c_fa}] (default: p_target 0.01, unit costs)",
    "calibration": "linear calibration: {fit_on: reference|each, split: dev}",
    "scoring": "score normalisation: {norm: none|s-norm|as-norm, top_k, cohort: {speakers, utterances_per_speaker}, cohort_chain: clean|matched}",
}
FACTOR_KEYS = {"name", "type", "attribute", "reference", "levels", "apply_to", "description"}
TRIAL_KEYS = {
    "targets", "nontargets", "min_speakers", "utterances_per_speaker", "dev_share", "split_by", "spoofs",
    "list", "format", "unassigned", "speakers_per_stratum", "operator_draws",
}  # fmt: skip
#: Trial-spec keys that only apply to sampled trial lists.
SAMPLING_KEYS = (
    "targets", "nontargets", "min_speakers", "utterances_per_speaker", "dev_share", "split_by", "spoofs",
    "speakers_per_stratum",
)  # fmt: skip
TRIAL_LIST_FORMATS = ("auto", "voxceleb", "kaldi")
#: Upper bound of ``trials.operator_draws`` (SRB repeats each random perturbation 30 times).
MAX_OPERATOR_DRAWS = 100
UNASSIGNED = ("error", "exclude")
FRONTEND_KEYS = {"sample_rate_hz", "min_duration_s", "max_duration_s", "resampler"}
USES = ("contrast", "gap", "descriptive")
SIDES = ("test", "enrol", "both")
ANY = "*"


@dataclass(frozen=True)
class CorpusSpec:
    name: str
    root: str | None = None
    manifest: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PopulationLevel:
    """Allowed attribute values on each side (``None`` = any value)."""

    name: str
    enrol: tuple[str, ...] | None
    test: tuple[str, ...] | None


@dataclass(frozen=True)
class AcousticLevel:
    name: str
    enrol: Chain
    test: Chain


@dataclass(frozen=True)
class Factor:
    name: str
    type: Literal["population", "acoustic"]
    reference: str
    levels: tuple[PopulationLevel | AcousticLevel, ...]
    attribute: str | None = None

    def level(self, name: str) -> PopulationLevel | AcousticLevel:
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise KeyError(name)

    @property
    def level_names(self) -> list[str]:
        return [lv.name for lv in self.levels]


@dataclass(frozen=True)
class TrialSpec:
    """Per-stratum trial counts: ``targets`` genuine and ``nontargets`` impostor trials at most
    (matched across strata), from strata with at least ``min_speakers`` speakers."""

    targets: int = 2000
    nontargets: int | None = None
    min_speakers: int = 4
    #: At most this many utterances per speaker and side enter a stratum's pools (bounds
    #: the embedding cost); chosen by a derived seed.
    utterances_per_speaker: int | None = None
    #: An external trial list scored instead of sampling (``trials: {list: FILE}``), its
    #: format (``voxceleb``: ``1|0 enrol test``; ``kaldi``: ``enrol test target|nontarget``;
    #: ``auto``: told from the first line) and what happens to a trial that falls in no
    #: stratum (``error``, or ``exclude``: dropped and counted in trials.json).
    list_file: str | None = None
    list_format: str = "auto"
    unassigned: str = "error"
    #: Share of speakers (0 < s < 1) drawn into a speaker-disjoint development split; the
    #: rest form the evaluation split. ``None``: no split (every trial is evaluation).
    dev_share: float | None = None
    #: Attributes the split is stratified by (default: the population factors' attributes).
    split_by: tuple[str, ...] | None = None
    #: Spoof trials per stratum (default: ``targets``), when the experiment has ``spoofing``.
    spoofs: int | None = None
    #: Exactly this many speakers per stratum (drawn by a derived seed), e.g. from ``interbias plan``.
    speakers_per_stratum: int | None = None
    #: Realisations of every chain with a random operator (noise segment, loss pattern, room,
    #: crop position), each scored; results give their mean and between-draw SD.
    operator_draws: int = 1

    @property
    def n_nontargets(self) -> int:
        return self.targets if self.nontargets is None else self.nontargets

    @property
    def n_spoofs(self) -> int:
        return self.targets if self.spoofs is None else self.spoofs


@dataclass(frozen=True)
class SpoofingSpec:
    """Where the attack audio comes from: an attack manifest file, or a registered builder
    (``interbias.corpora.attacks``) with options."""

    attacks: str | None = None
    builder: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FairnessSpec:
    """Group attributes and the dev threshold rule of the fairness report."""

    groups: tuple[str, ...] | None = None
    threshold: str = "eer"


@dataclass(frozen=True)
class Stratum:
    """One combination of population-factor levels; trials are drawn per stratum."""

    name: str
    levels: tuple[tuple[str, str], ...]
    enrol: dict[str, tuple[str, ...] | None]
    test: dict[str, tuple[str, ...] | None]

    @property
    def symmetric(self) -> bool:
        return self.enrol == self.test


@dataclass(frozen=True)
class Cell:
    levels: tuple[tuple[str, str], ...]
    stratum: str
    enrol_chain: Chain
    test_chain: Chain
    #: ``trials.operator_draws``: realisations of the cell's random operators to score.
    n_draws: int = 1

    def draws(self) -> list[tuple[Chain, Chain]]:
        """(enrolment chain, test chain) of each draw; one when neither chain is random."""
        if self.n_draws == 1 or not (self.enrol_chain.stochastic or self.test_chain.stochastic):
            return [(self.enrol_chain, self.test_chain)]
        return [(self.enrol_chain.with_draw(d), self.test_chain.with_draw(d)) for d in range(self.n_draws)]

    @property
    def id(self) -> str:
        return ",".join(f"{f}={lv}" for f, lv in self.levels) or "all"


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    description: str
    use: str
    corpus: CorpusSpec
    population: dict[str, tuple[str, ...]]
    factors: tuple[Factor, ...]
    trials: TrialSpec
    frontend: FrontEnd
    seed: int
    requires: str
    path: Path | None
    raw: dict[str, Any]
    variant: str | None = None
    spoofing: SpoofingSpec | None = None
    fairness: FairnessSpec | None = None
    #: Declared speaker-level / utterance-level attributes (``speaker_attributes``,
    #: ``utterance_attributes``): see :func:`speaker_attributes`.
    speaker_level: tuple[str, ...] = ()
    utterance_level: tuple[str, ...] = ()
    #: How scores become decisions (:mod:`interbias.decision_spec`).
    operating_points: tuple[OperatingPoint, ...] = ()
    calibration: CalibrationSpec = field(default_factory=CalibrationSpec)
    scoring: ScoringSpec = field(default_factory=ScoringSpec)

    def resolved(self) -> dict[str, Any]:
        """The resolved definition (variant applied) as plain data, for hashing and run.json."""
        out = {k: v for k, v in self.raw.items() if k != "variants"}
        out["variant"] = self.variant
        return out

    @property
    def population_factors(self) -> list[Factor]:
        return [f for f in self.factors if f.type == "population"]

    @property
    def acoustic_factors(self) -> list[Factor]:
        return [f for f in self.factors if f.type == "acoustic"]

    def strata(self) -> list[Stratum]:
        pops = self.population_factors
        out = []
        for combo in itertools.product(*[f.levels for f in pops]):
            enrol = {f.attribute: lv.enrol for f, lv in zip(pops, combo, strict=True)}
            test = {f.attribute: lv.test for f, lv in zip(pops, combo, strict=True)}
            levels = tuple((f.name, lv.name) for f, lv in zip(pops, combo, strict=True))
            name = ",".join(f"{f}={lv}" for f, lv in levels) or "all"
            out.append(Stratum(name, levels, enrol, test))
        return out

    def cells(self) -> list[Cell]:
        out = []
        for combo in itertools.product(*[f.levels for f in self.factors]):
            levels = tuple((f.name, lv.name) for f, lv in zip(self.factors, combo, strict=True))
            stratum = (
                ",".join(
                    f"{f.name}={lv.name}" for f, lv in zip(self.factors, combo, strict=True) if f.type == "population"
                )
                or "all"
            )
            enrol, test = Chain(), Chain()
            for lv in combo:
                if isinstance(lv, AcousticLevel):
                    enrol, test = enrol + lv.enrol, test + lv.test
            out.append(Cell(levels, stratum, enrol, test, self.trials.operator_draws))
        return out


# ---- loading --------------------------------------------------------------------------------


def load_experiment(path: Path, *, corpus: str | None = None) -> Experiment:
    """Read and validate ``path``; ``corpus`` selects a variant (or overrides the corpus name)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"experiment file {path} does not exist")
    data = yamlfile.load(path)
    return parse_experiment(data, where=path.name, path=path, corpus=corpus)


def parse_experiment(data: Any, *, where: str, path: Path | None = None, corpus: str | None = None) -> Experiment:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the file must be a mapping of keys")
    _check_keys(data, TOP_KEYS, where, "top level")
    variants = data.get("variants") or {}
    if not isinstance(variants, dict):
        raise ConfigError(f"{where}: variants: must map a corpus name to overrides")
    variant = None
    raw = copy.deepcopy(data)
    if corpus is not None:
        if corpus in variants:
            override = variants[corpus]
            if not isinstance(override, dict):
                raise ConfigError(f"{where}: variants.{corpus}: must be a mapping of top-level keys")
            _check_keys(override, TOP_KEYS, where, f"variants.{corpus}")
            raw.update(copy.deepcopy(override))
            raw.setdefault("corpus", corpus)
            variant = corpus
        else:
            raw["corpus"] = _override_corpus_name(raw.get("corpus"), corpus)
    for key in variants:
        if not isinstance(variants[key], dict):
            raise ConfigError(f"{where}: variants.{key}: must be a mapping of top-level keys")
        _check_keys(variants[key], TOP_KEYS, where, f"variants.{key}")
    name = _req(raw, "name", str, where)
    _check_name(name, where)
    base = path.parent if path is not None else None
    corpus_spec = _corpus(raw.get("corpus"), where, base)
    use = raw.get("use", "contrast")
    if use not in USES:
        raise ConfigError(f"{where}: use: {use!r} is not one of {', '.join(USES)}")
    population = _population(raw.get("population") or {}, where)
    factors_raw = raw.get("factors")
    if not isinstance(factors_raw, list) or not factors_raw:
        raise ConfigError(f"{where}: factors: a non-empty list of factors is required")
    if len(factors_raw) > 3:
        raise ConfigError(
            f"{where}: factors: at most 3 factors (results have factor_a..factor_c), got {len(factors_raw)}"
        )
    factors = tuple(_factor(f, where, i) for i, f in enumerate(factors_raw))
    names = [f.name for f in factors]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: factors: factor names must be unique, got {', '.join(names)}")
    trials = _trials(raw.get("trials") or {}, where, base)
    # the resolved definition names the files it read by their full paths
    if isinstance(raw.get("corpus"), dict) and corpus_spec.manifest:
        raw["corpus"]["manifest"] = corpus_spec.manifest
    if trials.list_file:
        raw["trials"]["list"] = trials.list_file
    frontend = _frontend(raw.get("frontend") or {}, where)
    seed = raw.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"{where}: seed: must be an integer, got {seed!r}")
    return Experiment(
        name=name,
        title=str(raw.get("title", name)),
        description=str(raw.get("description", "")),
        use=use,
        corpus=corpus_spec,
        population=population,
        factors=factors,
        trials=trials,
        frontend=frontend,
        seed=seed,
        requires=str(raw.get("requires", "")),
        path=path,
        raw=raw,
        variant=variant,
        spoofing=_spoofing(raw.get("spoofing"), where),
        fairness=_fairness(raw.get("fairness"), where),
        speaker_level=_names(raw.get("speaker_attributes"), where, "speaker_attributes"),
        utterance_level=_names(raw.get("utterance_attributes"), where, "utterance_attributes"),
        operating_points=parse_operating_points(raw.get("operating_points"), where),
        calibration=parse_calibration(raw.get("calibration"), where),
        scoring=parse_scoring(raw.get("scoring"), where),
    )


def _names(value: Any, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key}: a list of attribute names, got {value!r}")
    return tuple(value)


def with_data(
    exp: Experiment,
    *,
    manifest: Path | None = None,
    data_root: Path | None = None,
    trials: Path | None = None,
    trials_format: str | None = None,
) -> Experiment:
    """``exp`` on a user's manifest and/or an external trial list (``interbias run --manifest
    FILE --data-root DIR --trials FILE --trials-format F``). The resolved definition written
    to run.json and hashed into the run id shows the replacement, with absolute paths."""
    raw = copy.deepcopy(exp.raw)
    corpus, spec = exp.corpus, exp.trials
    if data_root is not None and manifest is None and not corpus.manifest:
        raise ConfigError(
            "--data-root applies to a manifest (--manifest or corpus.manifest); use --corpus-root for a corpus adapter"
        )
    if manifest is not None or data_root is not None:
        mpath = str(Path(manifest).expanduser().resolve()) if manifest is not None else str(corpus.manifest)
        root = str(Path(data_root).expanduser().resolve()) if data_root is not None else None
        if root is None and manifest is None:
            root = corpus.root
        corpus = CorpusSpec("manifest", root, mpath)
        raw["corpus"] = {"manifest": mpath, **({"root": root} if root else {})}
    if trials_format is not None and trials_format not in TRIAL_LIST_FORMATS:
        raise ConfigError(f"--trials-format: {trials_format!r} is not one of {', '.join(TRIAL_LIST_FORMATS)}")
    if trials is not None or trials_format is not None:
        if trials is None and spec.list_file is None:
            raise ConfigError("--trials-format applies to an external trial list (--trials FILE or trials.list)")
        lpath = str(Path(trials).expanduser().resolve()) if trials is not None else spec.list_file
        fmt = trials_format or (spec.list_format if trials is None else "auto")
        spec = TrialSpec(list_file=lpath, list_format=fmt, unassigned=spec.unassigned)
        raw["trials"] = {"list": lpath, "format": fmt, "unassigned": spec.unassigned}
    return replace(exp, corpus=corpus, trials=spec, raw=raw)


def _override_corpus_name(spec: Any, name: str) -> Any:
    if isinstance(spec, dict):
        return {"name": name}
    return name


def _check_keys(data: dict[str, Any], valid: Any, where: str, section: str) -> None:
    for key in data:
        if key not in valid:
            raise ConfigError(f"{where}: unknown key {key!r} at {section}; valid: {', '.join(sorted(valid))}")


def _check_name(name: str, where: str) -> None:
    """An experiment name becomes a folder name under ``--out``: no path separators, no
    ``..``, no leading dot, no control characters."""
    bad = (
        not name
        or "/" in name
        or "\\" in name
        or ".." in name
        or name.startswith(".")
        or any(ord(c) < 32 or ord(c) == 127 for c in name)
        or len(name) > 100
    )
    if bad:
        raise ConfigError(
            f"{where}: name: {name!r} cannot name a run directory (no '/', '\\', '..', leading '.', "
            "control characters; at most 100 characters)"
        )


def _req(data: dict[str, Any], key: str, tp: type, where: str) -> Any:
    if key not in data:
        raise ConfigError(f"{where}: missing required key {key!r}")
    value = data[key]
    if not isinstance(value, tp):
        raise ConfigError(f"{where}: {key}: expected {tp.__name__}, got {value!r}")
    return value


def _relative_to(value: Any, base: Path | None) -> str | None:
    """A path from the YAML, relative ones resolved against the YAML file's folder."""
    if value is None:
        return None
    p = Path(str(value)).expanduser()
    return str(base / p) if base is not None and not p.is_absolute() else str(p)


def _corpus(spec: Any, where: str, base: Path | None = None) -> CorpusSpec:
    if isinstance(spec, str):
        return CorpusSpec(spec)
    if isinstance(spec, dict):
        _check_keys(spec, {"name", "root", "manifest", "options"}, where, "corpus")
        if "name" not in spec and "manifest" not in spec:
            raise ConfigError(f"{where}: corpus: needs a 'name' (or a 'manifest' file)")
        options = spec.get("options") or {}
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: corpus.options: must be a mapping")
        return CorpusSpec(
            str(spec.get("name", "manifest")),
            None if spec.get("root") is None else str(spec["root"]),
            _relative_to(spec.get("manifest"), base),
            options,
        )
    raise ConfigError(f"{where}: corpus: required, a corpus name or {{name, root, manifest}}")


def _values(value: Any, where: str) -> tuple[str, ...] | None:
    if value == ANY:
        return None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise ConfigError(f"{where}: expected a value, a list of values, or '*', got {value!r}")


def _population(spec: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: population: must map attribute names to values")
    out = {}
    for attr, value in spec.items():
        vals = _values(value, f"{where}: population.{attr}")
        if vals is not None:
            out[str(attr)] = vals
    return out


def _factor(spec: Any, where: str, i: int) -> Factor:
    here = f"factors[{i}]"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: {here}: a factor is a mapping")
    _check_keys(spec, FACTOR_KEYS, where, here)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: {here}.name: required string")
    here = f"factors[{i}] ({name})"
    ftype = spec.get("type")
    if ftype not in ("population", "acoustic"):
        raise ConfigError(f"{where}: {here}.type: {ftype!r} is not one of population, acoustic")
    levels_raw = spec.get("levels")
    if not isinstance(levels_raw, dict) or not levels_raw:
        raise ConfigError(f"{where}: {here}.levels: a non-empty mapping of level name to definition")
    levels: list[PopulationLevel | AcousticLevel] = []
    attribute = None
    if ftype == "population":
        attribute = spec.get("attribute")
        if not isinstance(attribute, str) or not attribute:
            raise ConfigError(f"{where}: {here}.attribute: required for a population factor")
        if "apply_to" in spec:
            raise ConfigError(f"{where}: {here}.apply_to: only acoustic factors have apply_to")
        for lname, ldef in levels_raw.items():
            lw = f"{where}: {here}.levels.{lname}"
            if isinstance(ldef, dict):
                _check_keys(ldef, {"enrol", "test", "value"}, where, f"{here}.levels.{lname}")
                if "value" in ldef:
                    if "enrol" in ldef or "test" in ldef:
                        raise ConfigError(f"{lw}: give either value or enrol/test, not both")
                    both = _values(ldef["value"], lw)
                    levels.append(PopulationLevel(str(lname), both, both))
                else:
                    if "enrol" not in ldef or "test" not in ldef:
                        raise ConfigError(f"{lw}: needs both enrol and test (or value)")
                    levels.append(
                        PopulationLevel(
                            str(lname), _values(ldef["enrol"], lw + ".enrol"), _values(ldef["test"], lw + ".test")
                        )
                    )
            else:
                both = _values(lname if ldef is None else ldef, lw)
                levels.append(PopulationLevel(str(lname), both, both))
    else:
        apply_to = spec.get("apply_to")
        if apply_to not in SIDES:
            raise ConfigError(
                f"{where}: {here}.apply_to: {apply_to!r} is not one of {', '.join(SIDES)} (which side the chains degrade)"
            )
        for lname, ldef in levels_raw.items():
            lw = f"{here}.levels.{lname}"
            try:
                if isinstance(ldef, dict):
                    _check_keys(ldef, {"enrol", "test"}, where, lw)
                    enrol = parse_chain(ldef.get("enrol"), where=f"{where}: {lw}.enrol")
                    test = parse_chain(ldef.get("test"), where=f"{where}: {lw}.test")
                else:
                    chain = parse_chain(ldef, where=f"{where}: {lw}")
                    enrol = chain if apply_to in ("enrol", "both") else Chain()
                    test = chain if apply_to in ("test", "both") else Chain()
            except OperatorError as exc:
                raise ConfigError(str(exc)) from None
            levels.append(AcousticLevel(str(lname), enrol, test))
    reference = spec.get("reference")
    names = [lv.name for lv in levels]
    if reference is None:
        raise ConfigError(f"{where}: {here}.reference: required; valid: {', '.join(names)}")
    if str(reference) not in names:
        raise ConfigError(f"{where}: {here}.reference: {reference!r} is not a level; valid: {', '.join(names)}")
    return Factor(name, ftype, str(reference), tuple(levels), attribute)


def _int_field(spec: dict[str, Any], key: str, default: Any, where: str, minimum: int) -> Any:
    value = spec.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{where}: trials.{key}: must be an integer >= {minimum}, got {value!r}")
    return value


def _trials(spec: Any, where: str, base: Path | None = None) -> TrialSpec:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: trials: must be a mapping")
    _check_keys(spec, TRIAL_KEYS, where, "trials")
    if "list" in spec:
        mixed = [k for k in SAMPLING_KEYS if k in spec]
        if mixed:
            raise ConfigError(
                f"{where}: trials: {', '.join(mixed)} only apply to sampled trials, not to an external list"
            )
        if not isinstance(spec["list"], str) or not spec["list"]:
            raise ConfigError(f"{where}: trials.list: a path to a trial list file, got {spec['list']!r}")
    elif "format" in spec or "unassigned" in spec:
        raise ConfigError(f"{where}: trials: format and unassigned apply to an external list (trials.list)")
    fmt = spec.get("format", "auto")
    if fmt not in TRIAL_LIST_FORMATS:
        raise ConfigError(f"{where}: trials.format: {fmt!r} is not one of {', '.join(TRIAL_LIST_FORMATS)}")
    unassigned = spec.get("unassigned", "error")
    if unassigned not in UNASSIGNED:
        raise ConfigError(f"{where}: trials.unassigned: {unassigned!r} is not one of {', '.join(UNASSIGNED)}")
    share = spec.get("dev_share")
    if share is not None and (
        isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < float(share) < 1
    ):
        raise ConfigError(f"{where}: trials.dev_share: must be a number strictly between 0 and 1, got {share!r}")
    if _int_field(spec, "operator_draws", 1, where, 1) > MAX_OPERATOR_DRAWS:
        raise ConfigError(
            f"{where}: trials.operator_draws: at most {MAX_OPERATOR_DRAWS}, got {spec['operator_draws']!r}"
        )
    split_by = spec.get("split_by")
    if split_by is not None:
        if share is None:
            raise ConfigError(f"{where}: trials.split_by: only meaningful with trials.dev_share")
        split_by = _values(split_by, f"{where}: trials.split_by")
    return TrialSpec(
        list_file=_relative_to(spec.get("list"), base),
        list_format=fmt,
        unassigned=unassigned,
        targets=_int_field(spec, "targets", 2000, where, 1),
        nontargets=_int_field(spec, "nontargets", None, where, 1),
        min_speakers=_int_field(spec, "min_speakers", 4, where, 2),
        utterances_per_speaker=_int_field(spec, "utterances_per_speaker", None, where, 2),
        dev_share=None if share is None else float(share),
        split_by=split_by,
        spoofs=_int_field(spec, "spoofs", None, where, 1),
        speakers_per_stratum=_int_field(spec, "speakers_per_stratum", None, where, 2),
        operator_draws=_int_field(spec, "operator_draws", 1, where, 1),
    )


def _spoofing(spec: Any, where: str) -> SpoofingSpec | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: spoofing: must be a mapping with an 'attacks' entry")
    _check_keys(spec, {"attacks"}, where, "spoofing")
    attacks = spec.get("attacks")
    if isinstance(attacks, str) and attacks:
        return SpoofingSpec(attacks=attacks)
    if isinstance(attacks, dict):
        _check_keys(attacks, {"builder", "options"}, where, "spoofing.attacks")
        builder = attacks.get("builder")
        options = attacks.get("options") or {}
        if not isinstance(builder, str) or not builder:
            raise ConfigError(f"{where}: spoofing.attacks.builder: required string (an attack builder name)")
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: spoofing.attacks.options: must be a mapping")
        return SpoofingSpec(builder=builder, options=dict(options))
    raise ConfigError(
        f"{where}: spoofing.attacks: an attack manifest file (CSV/JSONL) or {{builder: NAME, options: {{...}}}}"
    )


def _fairness(spec: Any, where: str) -> FairnessSpec | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: fairness: must be a mapping (groups, threshold)")
    _check_keys(spec, {"groups", "threshold"}, where, "fairness")
    groups = spec.get("groups")
    threshold = spec.get("threshold", "eer")
    if not isinstance(threshold, str):
        raise ConfigError(f"{where}: fairness.threshold: eer, fixed:X or far:X, got {threshold!r}")
    from interbias.errors import AnalysisError
    from interbias.thresholds import ThresholdRule

    try:
        ThresholdRule.parse(threshold)
    except AnalysisError as exc:
        raise ConfigError(f"{where}: fairness.threshold: {exc}") from None
    return FairnessSpec(None if groups is None else _values(groups, f"{where}: fairness.groups"), threshold)


def _frontend(spec: Any, where: str) -> FrontEnd:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: frontend: must be a mapping")
    _check_keys(spec, FRONTEND_KEYS, where, "frontend")
    base = FrontEnd()
    raw_rate = spec.get("sample_rate_hz", base.sample_rate_hz)
    if isinstance(raw_rate, bool) or not isinstance(raw_rate, int):
        raise ConfigError(f"{where}: frontend.sample_rate_hz: must be a whole number of Hz, got {raw_rate!r}")
    low, high = RATE_LIMITS_HZ
    if not low <= raw_rate <= high:
        raise ConfigError(f"{where}: frontend.sample_rate_hz: {raw_rate} Hz is outside {low}..{high} Hz")
    try:
        min_d = _finite(spec.get("min_duration_s", base.min_duration_s))
        max_raw = spec.get("max_duration_s", base.max_duration_s)
        max_d = None if max_raw is None else _finite(max_raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: frontend: durations must be finite numbers ({exc})") from None
    if min_d < 0 or (max_d is not None and max_d <= min_d):
        raise ConfigError(f"{where}: frontend: need 0 <= min_duration_s < max_duration_s")
    resampler = spec.get("resampler", base.resampler)
    if resampler not in RESAMPLERS:
        raise ConfigError(f"{where}: frontend.resampler: {resampler!r} is not one of {', '.join(RESAMPLERS)}")
    return FrontEnd(raw_rate, min_d, max_d, resampler)


def _finite(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is not a number")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{value!r} is not finite")
    return out


def find_experiment(name_or_path: str, conditions_dir: Path) -> Path:
    """``E16`` -> ``conditions/E16.yaml``; a path to a YAML file is used as is."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml"):
        if not p.is_file():
            raise ConfigError(f"experiment file {p} does not exist")
        return p
    candidate = conditions_dir / f"{name_or_path}.yaml"
    if candidate.is_file():
        return candidate
    known = sorted(q.stem for q in conditions_dir.glob("*.yaml")) if conditions_dir.is_dir() else []
    raise ConfigError(f"unknown experiment {name_or_path!r} in {conditions_dir}; valid: {', '.join(known) or '(none)'}")


def resource_problems(exp: Experiment) -> list[str]:
    """What the experiment's operators need on this machine and do not find (noise folders,
    codec backends, room simulation), one message per problem with the levels it affects."""
    by_msg: dict[str, list[str]] = {}
    for factor in exp.acoustic_factors:
        for level in factor.levels:
            assert isinstance(level, AcousticLevel)
            for msg in dict.fromkeys(level.enrol.resource_problems() + level.test.resource_problems()):
                by_msg.setdefault(msg, []).append(f"{factor.name}={level.name}")
    return [f"{msg} (levels {', '.join(levels)})" for msg, levels in by_msg.items()]
