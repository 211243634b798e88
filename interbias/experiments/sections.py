"""The sections of an experiment YAML below the top level, each a frozen record and its parser:
``corpus``, ``population``, ``factors`` (population and acoustic levels), ``trials``,
``spoofing``, ``fairness`` and ``frontend``. Protocol factors' levels are parsed by
:mod:`interbias.experiments.protocol`. Every problem is one :class:`ConfigError` naming
the file, the key and the valid choices; :mod:`interbias.experiments.schema` assembles them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from interbias.audio.frontend import RATE_LIMITS_HZ, RESAMPLERS, FrontEnd
from interbias.audio.vad import check_vad
from interbias.audio.windows import LONG_AUDIO, MAX_OVERLAP
from interbias.experiments.backend_factor import BackendLevel, parse_backend_levels
from interbias.experiments.protocol import ProtocolLevel, parse_protocol_levels
from interbias.operators import Chain, parse_chain
from interbias.utils.errors import ConfigError, OperatorError

FACTOR_KEYS = {"name", "type", "attribute", "reference", "levels", "apply_to", "description"}
TRIAL_KEYS = {
    "targets", "nontargets", "min_speakers", "utterances_per_speaker", "dev_share", "split_by", "spoofs",
    "list", "format", "unassigned", "speakers_per_stratum", "operator_draws", "enrol_utterances", "text", "models",
}  # fmt: skip
#: Trial-spec keys that only apply to sampled trial lists.
SAMPLING_KEYS = (
    "targets", "nontargets", "min_speakers", "utterances_per_speaker", "dev_share", "split_by", "spoofs",
    "speakers_per_stratum", "enrol_utterances", "text",
)  # fmt: skip
TRIAL_LIST_FORMATS = ("auto", "voxceleb", "kaldi")
#: ``trials.text`` (:mod:`interbias.trials.text_pairs`).
TEXT_MODES = ("any", "same", "different", "balanced")
#: Upper bound of ``trials.operator_draws`` (SRB repeats each random perturbation 30 times).
MAX_OPERATOR_DRAWS = 100
UNASSIGNED = ("error", "exclude")
FRONTEND_KEYS = {
    "sample_rate_hz",
    "min_duration_s",
    "max_duration_s",
    "resampler",
    "vad",
    "long_audio",
    "window_s",
    "hop_s",
    "trim_silence",
}
SIDES = ("test", "enrol", "both")
FACTOR_TYPES = ("population", "acoustic", "protocol", "backend")
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

    @property
    def values(self) -> frozenset[str]:
        """The values either side selects (empty: any value)."""
        return frozenset(self.enrol or ()) | frozenset(self.test or ())


@dataclass(frozen=True)
class AcousticLevel:
    name: str
    enrol: Chain
    test: Chain


@dataclass(frozen=True)
class Factor:
    name: str
    type: Literal["population", "acoustic", "protocol", "backend"]
    reference: str
    levels: tuple[PopulationLevel | AcousticLevel | ProtocolLevel | BackendLevel, ...]
    attribute: str | None = None

    def level(self, name: str) -> PopulationLevel | AcousticLevel | ProtocolLevel | BackendLevel:
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise KeyError(name)

    @property
    def level_names(self) -> list[str]:
        return [lv.name for lv in self.levels]


@dataclass(frozen=True)
class LeftOut:
    """Levels of an acoustic factor left out of a run because they need recordings the user
    did not give (``need``: "recorded noise"; ``fix``: how to give them). Stated in the run's
    output, run.json (``experiment.left_out``) and the report; never substituted."""

    factor: str
    levels: tuple[str, ...]
    need: str
    fix: str

    def line(self) -> str:
        """``environmental_25/15/5 left out: they need recorded noise: --noise-dir DIR``."""
        return f"{short_levels(self.levels)} left out: they need {self.need}: {self.fix}"

    def record(self) -> dict[str, Any]:
        return {"factor": self.factor, "levels": list(self.levels), "need": self.need, "fix": self.fix}

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> LeftOut:
        return cls(str(r["factor"]), tuple(map(str, r["levels"])), str(r["need"]), str(r["fix"]))


def short_levels(names: tuple[str, ...]) -> str:
    """``environmental_25/15/5`` for levels that share a prefix up to their last ``_``; else
    the names joined by ``, ``."""
    heads = {n.rpartition("_")[0] for n in names}
    if len(names) > 1 and len(heads) == 1 and "" not in heads:
        head = heads.pop()
        return f"{head}_" + "/".join(n.rpartition("_")[2] for n in names)
    return ", ".join(names)


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
    #: Enrolment models of the external list (``model utt1 utt2 …`` per line; :mod:`interbias.trials.models`).
    models_file: str | None = None
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
    #: Enrolment utterances per trial model (K): the model of a trial is K utterances of its
    #: enrolment speaker (distinct sessions and texts where the manifest has them), scored as
    #: ``scoring.enrol`` says; K is 1 unless set.
    enrol_utterances: int = 1
    #: Same-text versus different-text non-target pairs (``any``, ``same``, ``different``,
    #: ``balanced``; :mod:`interbias.trials.text_pairs`); set, the run also writes
    #: text_pairs.csv. ``None``: not set (no table; the draw as ``any``).
    text: str | None = None

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
    #: CM labels that score every trial's test audio (:mod:`interbias.run.cm_stage`); empty: none.
    countermeasures: tuple[str, ...] = ()


@dataclass(frozen=True)
class FairnessSpec:
    """Group attributes and the dev threshold rule of the fairness report."""

    groups: tuple[str, ...] | None = None
    threshold: str = "eer"


# ---- parsing ----------------------------------------------------------------------------------


def check_keys(data: dict[str, Any], valid: Any, where: str, section: str) -> None:
    for key in data:
        if key not in valid:
            raise ConfigError(f"{where}: unknown key {key!r} at {section}; valid: {', '.join(sorted(valid))}")


def resolve_path(value: Any, base: Path | None) -> str | None:
    """A path from the YAML, relative ones resolved against the YAML file's folder."""
    if value is None:
        return None
    p = Path(str(value)).expanduser()
    return str(base / p) if base is not None and not p.is_absolute() else str(p)


def parse_corpus(spec: Any, where: str, base: Path | None = None) -> CorpusSpec:
    if isinstance(spec, str):
        return CorpusSpec(spec)
    if isinstance(spec, dict):
        check_keys(spec, {"name", "root", "manifest", "options"}, where, "corpus")
        if "name" not in spec and "manifest" not in spec:
            raise ConfigError(f"{where}: corpus: needs a 'name' (or a 'manifest' file)")
        options = spec.get("options") or {}
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: corpus.options: must be a mapping")
        return CorpusSpec(
            str(spec.get("name", "manifest")),
            None if spec.get("root") is None else str(spec["root"]),
            resolve_path(spec.get("manifest"), base),
            options,
        )
    raise ConfigError(f"{where}: corpus: required, a corpus name or {{name, root, manifest}}")


def attribute_values(value: Any, where: str) -> tuple[str, ...] | None:
    if value == ANY:
        return None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise ConfigError(f"{where}: expected a value, a list of values, or '*', got {value!r}")


def parse_population(spec: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: population: must map attribute names to values")
    out = {}
    for attr, value in spec.items():
        vals = attribute_values(value, f"{where}: population.{attr}")
        if vals is not None:
            out[str(attr)] = vals
    return out


def parse_factor(spec: Any, where: str, i: int) -> Factor:
    here = f"factors[{i}]"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: {here}: a factor is a mapping")
    check_keys(spec, FACTOR_KEYS, where, here)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: {here}.name: required string")
    here = f"factors[{i}] ({name})"
    ftype = spec.get("type")
    if ftype not in FACTOR_TYPES:
        raise ConfigError(f"{where}: {here}.type: {ftype!r} is not one of {', '.join(FACTOR_TYPES)}")
    levels_raw = spec.get("levels")
    if not isinstance(levels_raw, dict) or not levels_raw:
        raise ConfigError(f"{where}: {here}.levels: a non-empty mapping of level name to definition")
    levels: list[PopulationLevel | AcousticLevel | ProtocolLevel | BackendLevel] = []
    attribute = None
    if ftype in ("protocol", "backend"):
        extra = [k for k in ("attribute", "apply_to") if k in spec]
        if extra:
            raise ConfigError(f"{where}: {here}: {', '.join(extra)} do not apply to a {ftype} factor")
        parse = parse_protocol_levels if ftype == "protocol" else parse_backend_levels
        levels.extend(parse(levels_raw, where, here))
    elif ftype == "population":
        attribute = spec.get("attribute")
        if not isinstance(attribute, str) or not attribute:
            raise ConfigError(f"{where}: {here}.attribute: required for a population factor")
        if "apply_to" in spec:
            raise ConfigError(f"{where}: {here}.apply_to: only acoustic factors have apply_to")
        for lname, ldef in levels_raw.items():
            lw = f"{where}: {here}.levels.{lname}"
            if isinstance(ldef, dict):
                check_keys(ldef, {"enrol", "test", "value"}, where, f"{here}.levels.{lname}")
                if "value" in ldef:
                    if "enrol" in ldef or "test" in ldef:
                        raise ConfigError(f"{lw}: give either value or enrol/test, not both")
                    both = attribute_values(ldef["value"], lw)
                    levels.append(PopulationLevel(str(lname), both, both))
                else:
                    if "enrol" not in ldef or "test" not in ldef:
                        raise ConfigError(f"{lw}: needs both enrol and test (or value)")
                    levels.append(
                        PopulationLevel(
                            str(lname),
                            attribute_values(ldef["enrol"], lw + ".enrol"),
                            attribute_values(ldef["test"], lw + ".test"),
                        )
                    )
            else:
                both = attribute_values(lname if ldef is None else ldef, lw)
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
                    check_keys(ldef, {"enrol", "test"}, where, lw)
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


def parse_trials(spec: Any, where: str, base: Path | None = None) -> TrialSpec:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: trials: must be a mapping")
    check_keys(spec, TRIAL_KEYS, where, "trials")
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
    elif "models" in spec:
        raise ConfigError(f"{where}: trials: models applies to an external list (trials.list)")
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
        split_by = attribute_values(split_by, f"{where}: trials.split_by")
    return TrialSpec(
        list_file=resolve_path(spec.get("list"), base),
        models_file=resolve_path(spec.get("models"), base),
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
        enrol_utterances=_enrol_utterances(spec, where),
        text=_text_mode(spec, where),
    )


def _text_mode(spec: dict[str, Any], where: str) -> str | None:
    value = spec.get("text")
    if value is not None and value not in TEXT_MODES:
        raise ConfigError(f"{where}: trials.text: {value!r} is not one of {', '.join(TEXT_MODES)}")
    k = spec.get("enrol_utterances", 1)
    if value not in (None, "any") and k != 1:
        raise ConfigError(
            f"{where}: trials.text: {value} draws pairs by one enrolment utterance's text; with "
            f"trials.enrol_utterances {k} only text: any (the text_pairs.csv table) is defined"
        )
    return value


def _enrol_utterances(spec: dict[str, Any], where: str) -> int:
    """``trials.enrol_utterances`` (K >= 1); refused when ``utterances_per_speaker`` leaves no
    speaker the K + 1 utterances a target trial needs."""
    k = int(_int_field(spec, "enrol_utterances", 1, where, 1))
    cap = spec.get("utterances_per_speaker")
    if k > 1 and isinstance(cap, int) and cap < k + 1:
        raise ConfigError(
            f"{where}: trials.enrol_utterances: {k} enrolment utterances and one test utterance need {k + 1} "
            f"utterances per speaker, but trials.utterances_per_speaker is {cap}"
        )
    return k


def parse_spoofing(spec: Any, where: str) -> SpoofingSpec | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: spoofing: must be a mapping with an 'attacks' entry")
    check_keys(spec, {"attacks", "countermeasures"}, where, "spoofing")
    cms = spoofing_countermeasures(spec.get("countermeasures"), where)
    attacks = spec.get("attacks")
    if isinstance(attacks, str) and attacks:
        return SpoofingSpec(attacks=attacks, countermeasures=cms)
    if isinstance(attacks, dict):
        check_keys(attacks, {"builder", "options"}, where, "spoofing.attacks")
        builder = attacks.get("builder")
        options = attacks.get("options") or {}
        if not isinstance(builder, str) or not builder:
            raise ConfigError(f"{where}: spoofing.attacks.builder: required string (an attack builder name)")
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: spoofing.attacks.options: must be a mapping")
        return SpoofingSpec(builder=builder, options=dict(options), countermeasures=cms)
    raise ConfigError(
        f"{where}: spoofing.attacks: an attack manifest file (CSV/JSONL) or {{builder: NAME, options: {{...}}}}"
    )


def spoofing_countermeasures(raw: Any, where: str) -> tuple[str, ...]:
    """``spoofing.countermeasures``: a list of distinct CM labels (checked against the CM
    registry when the run starts), or absent."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) and x for x in raw):
        raise ConfigError(f"{where}: spoofing.countermeasures: a list of CM labels, e.g. [ResNet18-logspec]")
    if len(set(raw)) != len(raw):
        raise ConfigError(f"{where}: spoofing.countermeasures: {raw!r} names a CM twice")
    return tuple(raw)


def parse_fairness(spec: Any, where: str) -> FairnessSpec | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: fairness: must be a mapping (groups, threshold)")
    check_keys(spec, {"groups", "threshold"}, where, "fairness")
    groups = spec.get("groups")
    threshold = spec.get("threshold", "eer")
    if not isinstance(threshold, str):
        raise ConfigError(f"{where}: fairness.threshold: eer, fixed:X or far:X, got {threshold!r}")
    from interbias.metrics.thresholds import ThresholdRule
    from interbias.utils.errors import AnalysisError

    try:
        ThresholdRule.parse(threshold)
    except AnalysisError as exc:
        raise ConfigError(f"{where}: fairness.threshold: {exc}") from None
    names = None if groups is None else attribute_values(groups, f"{where}: fairness.groups")
    return FairnessSpec(None if names is None else tuple(fairness_group(n, where) for n in names), threshold)


#: How a crossing of fairness attributes may be written in the YAML: ``gender×age_band``,
#: ``gender x age_band``, ``gender*age_band`` (stored with ×, as ``--group`` writes it).
FAIRNESS_CROSS = re.compile(r"\s*(?:×|\*|\sx\s)\s*")


def fairness_group(name: str, where: str) -> str:
    """One ``fairness.groups`` entry: an attribute, or a crossing of distinct attributes
    (``gender×age_band``: one grouping whose groups are the crossed cells), normalised to
    ``a×b``; an empty or repeated component is refused."""
    parts = [p.strip() for p in FAIRNESS_CROSS.split(name.strip())]
    if any(not p for p in parts) or len(set(parts)) != len(parts):
        raise ConfigError(
            f"{where}: fairness.groups: {name!r}: a crossing names distinct attributes joined by × "
            "(e.g. 'gender×age_band')"
        )
    return "×".join(parts)


def parse_frontend(spec: Any, where: str) -> FrontEnd:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: frontend: must be a mapping")
    check_keys(spec, FRONTEND_KEYS, where, "frontend")
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
    vad = spec.get("vad", base.vad)
    check_vad(vad, raw_rate, where)
    trim = spec.get("trim_silence", base.trim_silence)
    if not isinstance(trim, bool):
        raise ConfigError(f"{where}: frontend.trim_silence: true or false, got {trim!r}")
    return FrontEnd(raw_rate, min_d, max_d, resampler, vad, *_long_audio(spec, base, where), trim_silence=trim)


def _long_audio(spec: dict[str, Any], base: FrontEnd, where: str) -> tuple[str, float, float]:
    """``long_audio``, ``window_s``, ``hop_s``; windows only with ``long_audio: window``, both > 0."""
    mode = spec.get("long_audio", base.long_audio)
    if mode not in LONG_AUDIO:
        raise ConfigError(f"{where}: frontend.long_audio: {mode!r} is not one of {', '.join(LONG_AUDIO)}")
    if mode != "window" and ("window_s" in spec or "hop_s" in spec):
        raise ConfigError(f"{where}: frontend: window_s and hop_s apply with long_audio: window")
    out = []
    for key in ("window_s", "hop_s"):
        value = spec.get(key, getattr(base, key))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) < float("inf"):
            raise ConfigError(f"{where}: frontend.{key}: must be a number of seconds above 0, got {value!r}")
        out.append(float(value))
    window_s, hop_s = out
    if mode == "window" and hop_s > window_s:
        raise ConfigError(
            f"{where}: frontend.hop_s: {hop_s:g} s is longer than window_s {window_s:g} s: the audio between "
            "windows would not be embedded; use hop_s <= window_s"
        )
    if mode == "window" and hop_s < window_s / MAX_OVERLAP:
        raise ConfigError(
            f"{where}: frontend.hop_s: {hop_s:g} s puts {window_s / hop_s:.0f} windows of {window_s:g} s on each "
            f"sample, more than {MAX_OVERLAP}; use hop_s >= {window_s / MAX_OVERLAP:g} s"
        )
    return mode, window_s, hop_s


def _finite(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is not a number")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{value!r} is not finite")
    return out
