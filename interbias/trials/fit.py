"""Whether a manifest can serve an experiment: :func:`judge_manifest`.

The experiment's needs come from one place, :func:`interbias.experiments.requirements.requirements`;
this module counts what a manifest has against them with the sampler's own rules (the population
filter and the front end's known-duration minimum of :func:`interbias.trials.sampler.eligible_utterances`,
a stratum's enrolment and test selectors, K + 1 utterances per speaker for K-utterance models).
``run --manifest`` refuses a corpus with shortfalls before any embedding, ``validate --manifest``
lists them, and ``data info`` can list which catalogue experiments a corpus serves
(:func:`catalogue_fit`).
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

from interbias.corpora.info import INFO_SECTIONS, Section
from interbias.corpora.manifest import Manifest
from interbias.experiments.requirements import Shortfall, manifest_form, requirements
from interbias.experiments.schema import Experiment, load_experiment
from interbias.experiments.sections import PopulationLevel
from interbias.trials.sampler import eligible_utterances, matches_selectors
from interbias.utils.errors import InterbiasError
from interbias.utils.paths import conditions_dir


def judge_manifest(exp: Experiment, manifest: Manifest, *, label: str | None = None) -> list[Shortfall]:
    """One :class:`Shortfall` per thing ``manifest`` lacks for ``exp`` (empty: it can serve it):
    each attribute the experiment selects or stratifies by that no utterance carries, then the
    speakers per stratum, counted in total with the dev split ("E16 needs ≥ 22 speakers per
    gender (15 evaluation + 7 dev); calls.csv has 20 female, 24 male"). Recorded inputs are
    not judged here: levels that need them are left out visibly
    (:func:`interbias.experiments.requirements.leave_out_missing`). ``label``: how the
    corpus is named (default: the experiment's manifest file name, else the manifest's name)."""
    name = label or (Path(exp.corpus.manifest).name if exp.corpus.manifest else manifest.name)
    if not exp.draws_trials:
        return [Shortfall(f"{exp.name} is a {exp.kind} experiment", f"it scores its own corpus, not {name}")]
    req = requirements(exp)
    out = []
    for need in req.attributes:
        if not any(u.get(need.attribute) is not None for u in manifest):
            out.append(
                Shortfall(
                    f"{exp.name} selects by {need.text()}",
                    f"{name} has no {need.attribute} column",
                    f"add {'an' if need.attribute[:1] in 'aeiou' else 'a'} {need.attribute} column to the manifest",
                )
            )
    out += level_values(exp, manifest, name) if not out else []
    if out or req.speakers is None:
        return out
    counts, short_utts = usable_speakers(exp, manifest, req.speakers.utterances)
    if all(n >= req.speakers.total for n in counts.values()):
        return out
    have = ", ".join(f"{n} {stratum}" for stratum, n in counts.items())
    also = f" (speakers with ≥ {req.speakers.utterances} utterances; {short_utts} have fewer)" if short_utts else ""
    out.append(
        Shortfall(
            f"{exp.name} needs {req.speakers.text()}",
            f"{name} has {have}{also}",
            "record more speakers, or copy the experiment file and lower trials.min_speakers",
        )
    )
    return out


def level_values(exp: Experiment, manifest: Manifest, name: str) -> list[Shortfall]:
    """One shortfall per population factor with levels whose values no utterance carries
    (``F``/``M`` where the experiment names ``female``/``male``), naming the values there are."""
    out = []
    for f in exp.population_factors:
        attr = str(f.attribute)
        present = {v for u in manifest if (v := u.get(attr)) is not None}
        levels = [lv for lv in f.levels if isinstance(lv, PopulationLevel)]
        lacking = [lv for lv in levels if lv.values and not lv.values & present]
        if lacking:
            values = sorted(frozenset().union(*(lv.values for lv in lacking)))
            there = ", ".join(sorted(present)[:10]) + (", …" if len(present) > 10 else "")
            out.append(
                Shortfall(
                    f"{exp.name} stratifies by {attr} = {', '.join(values)}",
                    f"no utterance of {name} has it ({attr} values there: {there})",
                    "relabel them, or copy the experiment file and name your values in its levels",
                )
            )
    return out


def usable_speakers(exp: Experiment, manifest: Manifest, utterances: int) -> tuple[dict[str, int], int]:
    """Per stratum (named by its level when one population factor defines the strata): the
    speakers with at least ``utterances`` utterances that pass the population filter and the
    stratum's selectors; and how many speakers of some stratum have some but fewer."""
    utts, _ = eligible_utterances(exp, manifest)
    pops = exp.population_factors
    counts: dict[str, int] = {}
    few: set[tuple[str, str]] = set()
    for st in exp.strata():
        per: dict[str, int] = {}
        for u in utts:
            if matches_selectors(u, st.enrol) or matches_selectors(u, st.test):
                per[u.speaker] = per.get(u.speaker, 0) + 1
        label = st.levels[0][1] if len(pops) == 1 else st.name
        counts[label] = sum(n >= utterances for n in per.values())
        few |= {(st.name, s) for s, n in per.items() if n < utterances}
    return counts, len(few)


def serves(exp: Experiment, manifest: Manifest) -> bool:
    """Whether ``manifest`` gives ``exp`` everything :func:`judge_manifest` checks."""
    return not judge_manifest(exp, manifest)


def corpus_strata(exp: Experiment, manifest: Manifest) -> dict[str, dict[str, int]]:
    """Per stratum of ``exp`` (by name, as the trial list names it): the speakers and utterances
    of ``manifest`` that pass the population filter and the stratum's selectors (what the
    corpus offered; the trial list records what was drawn from it)."""
    utts, _ = eligible_utterances(exp, manifest)
    out = {}
    for st in exp.strata():
        mine = [u for u in utts if matches_selectors(u, st.enrol) or matches_selectors(u, st.test)]
        out[st.name] = {"speakers": len({u.speaker for u in mine}), "utterances": len(mine)}
    return out


def catalogue_fit(manifest: Manifest, *, label: str | None = None) -> dict[str, list[Shortfall]]:
    """Per catalogue experiment (``conditions/*.yaml``, by name): what ``manifest`` lacks for it
    in the form ``run --manifest`` runs it (empty: the corpus serves it). For ``data info``'s
    list of the experiments a corpus can serve."""
    out = {}
    for path in sorted(conditions_dir().glob("*.yaml")):
        exp = load_experiment(path)
        try:
            form = manifest_form(exp) if exp.draws_trials else exp
        except InterbiasError as exc:
            out[exp.name] = [Shortfall(f"{exp.name} cannot run on a manifest", str(exc))]
            continue
        out[exp.name] = judge_manifest(form, manifest, label=label)
    return out


@INFO_SECTIONS.register("catalogue")
def catalogue_section(manifest: Manifest) -> Section:
    """``data info``'s list of the catalogue experiments ``manifest`` can serve as ``run NAME
    --manifest`` runs them, and for each other one the first thing it lacks (80 columns)."""
    fit = catalogue_fit(manifest)
    serves = [name for name, lacks in fit.items() if not lacks]
    lines = ["", "catalogue experiments (interbias run NAME --manifest ...):"]
    lines += textwrap.wrap(
        "serves: " + (", ".join(serves) or "none"), width=80, initial_indent="  ", subsequent_indent="    "
    )
    for name, lacks in fit.items():
        if lacks:
            more = f" (and {len(lacks) - 1} more)" if len(lacks) > 1 else ""
            lines += textwrap.wrap(
                f"{name}: {lacks[0].line()}{more}",
                width=80,
                initial_indent="  ",
                subsequent_indent="    ",
                break_long_words=False,
                break_on_hyphens=False,
            )
    data = {name: [dataclasses.asdict(s) for s in lacks] for name, lacks in fit.items()}
    return Section("catalogue", lines, data)
