"""Experiment definitions: the typed schema of ``conditions/*.yaml``.

An experiment names a corpus, a population filter, up to three factors (each a population
factor that selects speakers/utterances by a manifest attribute, an acoustic factor whose
levels are operator chains per side, a protocol factor whose levels set the cell's
enrolment K or VAD: :mod:`interbias.experiments.protocol`, or a back-end factor whose levels
set the cell's scoring back-end: :mod:`interbias.experiments.backend_factor`), a trial spec
and a seed. Every problem is reported as
one :class:`ConfigError` naming the file, the key and the valid choices.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from interbias.audio.frontend import FrontEnd
from interbias.experiments import yamlfile
from interbias.experiments.attack_spec import AttackSpec, check_attack_experiment, parse_attacks
from interbias.experiments.backend_factor import BackendLevel, backend_levels
from interbias.experiments.decision_spec import (
    CalibrationSpec,
    OperatingPoint,
    ScoreNormSpec,
    parse_calibration,
    parse_operating_points,
    parse_scoring,
    resolved_scoring,
)
from interbias.experiments.kinds import CountermeasureSpec, Kind, TracksSpec, kind_sections
from interbias.experiments.protocol import (
    ProtocolLevel,
    check_protocol_vads,
    largest_enrolment,
    varies_frontend,
    with_protocol_k,
)
from interbias.experiments.question_spec import KeyEffect, parse_question
from interbias.experiments.sections import (
    TRIAL_LIST_FORMATS,
    AcousticLevel,
    CorpusSpec,
    Factor,
    FairnessSpec,
    LeftOut,
    SpoofingSpec,
    TrialSpec,
    check_keys,
    parse_corpus,
    parse_factor,
    parse_fairness,
    parse_frontend,
    parse_population,
    parse_spoofing,
    parse_trials,
    spoofing_countermeasures,
)
from interbias.metrics.backends import base_kind
from interbias.metrics.verification import P_TARGET
from interbias.operators import Chain
from interbias.utils.errors import ConfigError

TOP_KEYS = {
    "name": "experiment id (E01…E20)",
    "title": "short human title",
    "question": "the question the experiment answers, one line, or {text, effects: [key effects, e.g. 'noise × vad']}",
    "description": "what the experiment measures",
    "use": "contrast | gap | descriptive",
    "corpus": "corpus name or {name, root, manifest}",
    "population": "filter: attribute -> value or list of values",
    "factors": "list of factors (at most 3): population, acoustic, protocol or backend",
    "trials": "trial spec",
    "frontend": "front-end rules",
    "seed": "integer mixed into every derived seed",
    "requires": "what data a run needs, shown when it cannot run",
    "variants": "per-corpus overrides of top-level keys (e.g. synthetic)",
    "spoofing": "attack set whose audio is scored as spoof trials: {attacks: FILE | {builder, options}, "
    "countermeasures: [CM label, ...]}",
    "attacks": "adversarial attacks after scoring: {kinds, methods: fgsm|pgd|nes, norm: linf|snr, budgets, trials, threshold, steps, nes}",
    "fairness": "fairness at a dev threshold: {groups: [attribute or crossing a×b, ...], threshold: eer|fixed:X|far:X}",
    "countermeasures": "a CM experiment: {models: [CM label, ...], bootstrap: N, threshold: eer} (interbias.experiments.kinds)",
    "tracks": "an ADD 2023 tracks experiment: [{track: 2, model, train, threshold, min_region_s, resolution}, {track: 3, unknown, model, train, threshold, tail_size, alpha, corpus}] (interbias.experiments.kinds)",
    "notes": "free text",
    "speaker_attributes": "more attributes that describe a speaker: constant per speaker, else the manifest is refused",
    "utterance_attributes": "attributes that describe recordings and may vary within a speaker",
    "operating_points": f"detection-cost points [{{name, p_target, c_miss, c_fa}}] (default: p_target {P_TARGET:g}, unit costs)",
    "calibration": "linear calibration: {fit_on: reference|each, split: dev}",
    "scoring": "how scores are made: {enrol: embedding-mean|score-mean, norm: none|s-norm|as-norm, top_k, cohort: {speakers, utterances_per_speaker, pool: speaker|utterance}, cohort_chain: clean|matched, calibration: {kind: linear|qmf, measures: [duration, snr, magnitude]}, backend: cosine|whiten+lnorm|lda+cosine|plda|whiten+lnorm+adapt|plda+adapt}",
}
USES = ("contrast", "gap", "descriptive")


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
    #: A protocol factor's overrides (:mod:`interbias.experiments.protocol`): score the first K
    #: enrolment utterances of each trial, and apply this VAD in the front end (``None``: the
    #: trial list's K, the experiment's front end).
    enrol_utterances: int | None = None
    vad: str | None = None
    #: A back-end factor's level's back-end (``None``: the experiment's ``scoring.backend``).
    backend: str | None = None

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
    #: How scores become decisions (:mod:`interbias.experiments.decision_spec`).
    operating_points: tuple[OperatingPoint, ...] = ()
    calibration: CalibrationSpec = field(default_factory=CalibrationSpec)
    scoring: ScoreNormSpec = field(default_factory=ScoreNormSpec)
    #: ``question``: what the experiment asks, one line ("" when the YAML has none).
    question: str = ""
    #: ``question.effects``: the effects the question names, stated first in the answer.
    key_effects: tuple[KeyEffect, ...] = ()
    #: ``attacks``: the adversarial attack stage (:mod:`interbias.experiments.attack_spec`).
    attacks: AttackSpec | None = None
    #: The kind sections (:mod:`interbias.experiments.kinds`); ``kind`` follows from them.
    countermeasures: CountermeasureSpec | None = None
    tracks: TracksSpec | None = None
    kind: Kind = "verification"
    #: Levels left out because they need recordings the user did not give
    #: (:func:`interbias.experiments.requirements.leave_out_missing`).
    left_out: tuple[LeftOut, ...] = ()

    @property
    def draws_trials(self) -> bool:
        """Whether its run draws verification trials from a manifest (a user's, with
        ``--manifest``); a countermeasure or tracks experiment scores its own corpus."""
        return self.countermeasures is None and self.tracks is None

    def resolved(self) -> dict[str, Any]:
        """The resolved definition (variant applied) as plain data, for hashing and run.json."""
        out = {k: v for k, v in self.raw.items() if k != "variants"}
        if "scoring" in out:
            out["scoring"] = resolved_scoring(out.get("scoring"), self.scoring)
            if out["scoring"] == {} and self.raw.get("scoring"):  # it only said backend: cosine
                del out["scoring"]
        out["variant"] = self.variant
        return out

    @property
    def population_factors(self) -> list[Factor]:
        return [f for f in self.factors if f.type == "population"]

    @property
    def spoofing_cms(self) -> tuple[str, ...]:
        """The CMs that score a spoofing run's trials (``spoofing.countermeasures``); empty: none."""
        return self.spoofing.countermeasures if self.spoofing is not None else ()

    @property
    def cm_labels(self) -> tuple[str, ...]:
        """Every CM label a run of this experiment loads: a CM experiment's models, then a spoofing run's CMs."""
        own = self.countermeasures.models if self.countermeasures is not None else ()
        return tuple(own) + self.spoofing_cms

    @property
    def acoustic_factors(self) -> list[Factor]:
        return [f for f in self.factors if f.type == "acoustic"]

    @property
    def protocol_factors(self) -> list[Factor]:
        return [f for f in self.factors if f.type == "protocol"]

    def backend_of(self, cell: Cell) -> str:
        """The back-end that scores ``cell``: its back-end level's, else ``scoring.backend``."""
        return cell.backend if cell.backend is not None else self.scoring.backend

    def backends(self) -> tuple[str, ...]:
        """Every back-end a run scores with: the back-end factor's levels, else ``scoring.backend``."""
        return tuple(lv.backend for lv in backend_levels(self.factors)) or (self.scoring.backend,)

    def frontend_for(self, cell: Cell) -> FrontEnd:
        """The cell's front end: the experiment's, with a protocol level's VAD."""
        return self.frontend if cell.vad is None else replace(self.frontend, vad=cell.vad)

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
            k = vad = backend = None
            for lv in combo:
                if isinstance(lv, BackendLevel):
                    backend = lv.backend
                elif isinstance(lv, AcousticLevel):
                    enrol, test = enrol + lv.enrol, test + lv.test
                elif isinstance(lv, ProtocolLevel):
                    k = lv.enrol_utterances if lv.enrol_utterances is not None else k
                    vad = lv.vad if lv.vad is not None else vad
            out.append(Cell(levels, stratum, enrol, test, self.trials.operator_draws, k, vad, backend))
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
    check_keys(data, TOP_KEYS, where, "top level")
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
            check_keys(override, TOP_KEYS, where, f"variants.{corpus}")
            raw.update(copy.deepcopy(override))
            raw.setdefault("corpus", corpus)
            variant = corpus
        else:
            raw["corpus"] = _override_corpus_name(raw.get("corpus"), corpus)
    for key in variants:
        if not isinstance(variants[key], dict):
            raise ConfigError(f"{where}: variants.{key}: must be a mapping of top-level keys")
        check_keys(variants[key], TOP_KEYS, where, f"variants.{key}")
    name = _req(raw, "name", str, where)
    _check_name(name, where)
    base = path.parent if path is not None else None
    corpus_spec = parse_corpus(raw.get("corpus"), where, base)
    use = raw.get("use", "contrast")
    if use not in USES:
        raise ConfigError(f"{where}: use: {use!r} is not one of {', '.join(USES)}")
    population = parse_population(raw.get("population") or {}, where)
    factors_raw = raw.get("factors")
    if not isinstance(factors_raw, list) or not factors_raw:
        raise ConfigError(f"{where}: factors: a non-empty list of factors is required")
    if len(factors_raw) > 3:
        raise ConfigError(
            f"{where}: factors: at most 3 factors (results have factor_a..factor_c), got {len(factors_raw)}"
        )
    factors = tuple(parse_factor(f, where, i) for i, f in enumerate(factors_raw))
    names = [f.name for f in factors]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: factors: factor names must be unique, got {', '.join(names)}")
    trials = parse_trials(with_protocol_k(factors, raw.get("trials") or {}, where), where, base)
    # the resolved definition names the files it read by their full paths
    if isinstance(raw.get("corpus"), dict) and corpus_spec.manifest:
        raw["corpus"]["manifest"] = corpus_spec.manifest
    if trials.list_file:
        raw["trials"]["list"] = trials.list_file
    frontend = parse_frontend(raw.get("frontend") or {}, where)
    check_protocol_vads(factors, frontend.sample_rate_hz, where)
    seed = _seed(raw.get("seed", 0), where)
    experiment = Experiment(
        name=name,
        title=str(raw.get("title", name)),
        **_question(raw.get("question", ""), where, factors),
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
        spoofing=parse_spoofing(raw.get("spoofing"), where),
        fairness=parse_fairness(raw.get("fairness"), where),
        speaker_level=_names(raw.get("speaker_attributes"), where, "speaker_attributes"),
        utterance_level=_names(raw.get("utterance_attributes"), where, "utterance_attributes"),
        operating_points=parse_operating_points(raw.get("operating_points"), where),
        calibration=parse_calibration(raw.get("calibration"), where),
        scoring=_scoring(raw.get("scoring"), trials, where, varies_frontend(factors)),
        attacks=parse_attacks(raw.get("attacks"), where),
        **kind_sections(raw, where),
    )
    check_backend(experiment, where)
    return check_attack_experiment(experiment, where)


def from_resolved(resolved: dict[str, Any], *, where: str) -> Experiment:
    """The experiment of a run directory's ``experiment.resolved.json``: the definition without
    what the run recorded beside it (``variant``; ``left_out``, which is attached again)."""
    exp = parse_experiment({k: v for k, v in resolved.items() if k not in ("variant", "left_out")}, where=where)
    if not resolved.get("left_out"):
        return exp
    left = tuple(LeftOut.from_record(r) for r in resolved["left_out"])
    return replace(exp, left_out=left, raw={**exp.raw, "left_out": resolved["left_out"]})


def _scoring(raw: Any, trials: TrialSpec, where: str, per_cell_frontend: bool = False) -> ScoreNormSpec:
    """``scoring``, refused when it normalises scores of multi-utterance trial models (the
    cohort statistics are per enrolment utterance) or of cells with their own front ends."""
    spec = parse_scoring(raw, where)
    if spec.norm != "none" and per_cell_frontend:
        raise ConfigError(
            f"{where}: scoring.norm: {spec.norm} is not defined when a protocol factor sets the VAD per cell "
            "(the cohort is embedded under one front end)"
        )
    if spec.norm != "none" and trials.enrol_utterances > 1:
        raise ConfigError(
            f"{where}: scoring.norm: {spec.norm} is not defined for trials.enrol_utterances "
            f"{trials.enrol_utterances} (score normalisation needs one enrolment utterance per trial)"
        )
    return spec


def check_backend(exp: Experiment, where: str) -> None:
    """Every fitted back-end the experiment scores with (``scoring.backend`` or a back-end
    factor's levels) needs a dev split to be fitted on, and scores one enrolment utterance per
    trial (PLDA), without score normalisation or attacks (both score by cosine); a back-end
    factor leaves ``scoring.backend`` at ``cosine``, and an experiment has one at most."""
    factors = [f for f in exp.factors if f.type == "backend"]
    if len(factors) > 1:
        raise ConfigError(
            f"{where}: factors: {factors[0].name} and {factors[1].name} are both back-end factors; one at most"
        )
    if factors and exp.scoring.backend != "cosine":
        raise ConfigError(
            f"{where}: scoring.backend: {exp.scoring.backend} and the back-end factor {factors[0].name} both set the "
            "back-end; the factor's levels name it per cell (remove scoring.backend)"
        )
    if factors and exp.scoring.calibration.quality_aware:
        raise ConfigError(
            f"{where}: scoring.calibration: qmf is fitted once over the reference cells; with the back-end factor "
            f"{factors[0].name} they hold several back-ends' scores (use kind: linear, fitted per back-end)"
        )
    key = f"factors ({factors[0].name}).levels" if factors else "scoring.backend"
    for backend in exp.backends():
        if backend == "cosine":
            continue
        here = f"{where}: {key}: {backend}"
        if exp.trials.dev_share is None:
            raise ConfigError(f"{here} is fitted on the dev split's embeddings: set trials.dev_share")
        if exp.scoring.norm != "none":
            raise ConfigError(
                f"{here} is not defined with scoring.norm {exp.scoring.norm} (the cohort is scored by cosine)"
            )
        if exp.attacks is not None:
            raise ConfigError(f"{here} is not defined with attacks (the attack stage scores by cosine)")
        if base_kind(backend) == "plda" and exp.trials.enrol_utterances > 1:
            raise ConfigError(
                f"{here} scores one enrolment utterance per trial (trials.enrol_utterances is "
                f"{exp.trials.enrol_utterances})"
            )


def with_backend(exp: Experiment, kind: str) -> Experiment:
    """``exp`` with ``scoring.backend: kind`` (``interbias run --backend``), checked as the YAML
    key is; the resolved definition (run.json, the run id) shows it unless it is ``cosine``."""
    raw = copy.deepcopy(exp.raw)
    raw["scoring"] = {**(raw.get("scoring") or {}), "backend": kind}
    where = exp.name
    out = replace(exp, scoring=parse_scoring(raw["scoring"], where), raw=raw)
    check_backend(out, where)
    return out


def _seed(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{where}: seed: must be an integer, got {value!r}")
    return value


def _question(value: Any, where: str, factors: list[Factor]) -> dict[str, Any]:
    """The ``question`` and ``key_effects`` fields of an experiment (:mod:`question_spec`)."""
    asked = parse_question(value, where, {f.name: f.type for f in factors})
    by_name = {f.name: f for f in factors}
    for key in asked.effects:
        for name, level in key.levels:
            f = by_name[name]
            if level not in f.level_names or level == f.reference:
                raise ConfigError(
                    f"{where}: question.effects: {key.text!r}: {level!r} is not a level of {name} other than its "
                    f"reference {f.reference}; levels: {', '.join(n for n in f.level_names if n != f.reference)}"
                )
    return {"question": asked.text, "key_effects": asked.effects}


def _names(value: Any, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key}: a list of attribute names, got {value!r}")
    return tuple(value)


def with_countermeasures(exp: Experiment, labels: Sequence[str]) -> Experiment:
    """``exp`` with ``spoofing.countermeasures`` set to ``labels`` (``interbias run --cm``); the
    resolved definition (run.json, the run id) shows them. Only a spoofing experiment has trials
    whose test audio a CM can judge."""
    if exp.spoofing is None:
        raise ConfigError(
            f"{exp.name}: --cm scores spoof trials with countermeasures; this experiment has no spoofing: section"
        )
    labels = spoofing_countermeasures(list(labels), f"{exp.name}: --cm")
    raw = copy.deepcopy(exp.raw)
    raw["spoofing"] = {**(raw.get("spoofing") or {}), "countermeasures": list(labels)}
    return replace(exp, spoofing=replace(exp.spoofing, countermeasures=labels), raw=raw)


def with_trim_silence(exp: Experiment) -> Experiment:
    """``exp`` with ``frontend.trim_silence: true`` (``interbias run --trim-silence``); the
    resolved definition (run.json, the run id) shows it."""
    raw = copy.deepcopy(exp.raw)
    raw["frontend"] = {**(raw.get("frontend") or {}), "trim_silence": True}
    return replace(exp, frontend=replace(exp.frontend, trim_silence=True), raw=raw)


def with_dev_share(exp: Experiment, share: float) -> Experiment:
    """``exp`` with ``trials.dev_share: share`` (``interbias run --dev-share``): speaker-disjoint
    dev trials for calibration, back-ends and fusion. Refused for a trial list (``trials.list``:
    scored whole, it has no dev split); the resolved definition (run.json, the run id) shows it."""
    if not (isinstance(share, (int, float)) and not isinstance(share, bool) and 0 < share < 1):
        raise ConfigError(f"{exp.name}: --dev-share must be a number strictly between 0 and 1, got {share!r}")
    if exp.trials.list_file is not None:
        raise ConfigError(f"{exp.name}: --dev-share splits sampled trials; this experiment scores a trial list "
                          "(trials.list), which is scored whole")  # fmt: skip
    raw = copy.deepcopy(exp.raw)
    raw["trials"] = {**(raw.get("trials") or {}), "dev_share": float(share)}
    return replace(exp, trials=replace(exp.trials, dev_share=float(share)), raw=raw)


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
        if largest_enrolment(exp.factors, {}, exp.name) is not None:
            raise ConfigError(
                f"{exp.name}: a protocol factor sets enrol_utterances, which applies to sampled trials, "
                "not to an external trial list (--trials)"
            )
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
