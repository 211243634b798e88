"""The estimate of a speaker-verification experiment (``interbias validate``, through the
verification task :mod:`interbias.run.tasks.verification`): whether it runs here (corpus data,
operator resources) and its size and cost:

- grid: strata (population-level combinations) × acoustic levels = cells; cells × encoders =
  results rows; trials per stratum = targets + non-targets (+ spoofs);
- embeddings: per stratum, the utterances that pass its enrol and test filters (at most
  ``utterances_per_speaker`` per speaker and side, in id order), each under every distinct chain
  its cells apply to that side (and under each front end a protocol factor's VAD gives a cell);
  the distinct (utterance, chain) items over strata, × encoders. Where the trials are drawn here
  (the corpus's manifest is here) the items are counted as the run counts them, from the drawn
  trials and cohort (:func:`drawn_items`): the estimate equals run.json's ``embedded``.
  The utterances come from the corpus's manifest when it is here (a ``manifest:`` file, or the
  synthetic corpus already built in the cache), from the synthetic spec when not built (every
  voice × style × sentence), else they are unknown;
- time: Σ over encoders of items × mean utterance duration / throughput, with the throughput
  of :data:`BENCH_X_REALTIME` (× real time per core, ``benchmarks/bench_throughput.py`` on the
  reference 2-core VM) spread over the run's worker processes (one per core from
  :data:`JOBS_FROM` items on), plus :data:`START_S` for loading encoders and workers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias.experiments.backend_factor import backend_levels
from interbias.run.estimate import Estimate, machine_load, shared_jobs
from interbias.run.tasks.base import NO_TIME, runs_here_text
from interbias.utils.errors import ShortfallError

if TYPE_CHECKING:
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment
    from interbias.trials.cohort import Cohort
    from interbias.trials.sampler import TrialList

#: Embedding throughput, × real time per core, of ``benchmarks/bench_throughput.py`` on a 2-core
#: AMD EPYC VM (AVX2): CAM++ and GE2E under onnxruntime (their CPU default), mfcc-stats eager
#: through the executor (decoding included). A faster machine runs in less time than estimated
#: (``make bench`` prints the estimate beside measured runs).
BENCH_X_REALTIME = {"CAM++": 60.1, "GE2E": 94.9, "mfcc-stats": 611.0}
#: Throughput assumed for an encoder the bench has not measured (flagged in the output).
UNMEASURED_X_REALTIME = 20.0
#: Mean utterance duration assumed when the corpus's durations are unknown (s; the synthetic
#: corpus's sentences average about 2.1 s).
DEFAULT_DURATION_S = 2.1
#: Seconds for loading encoders, exporting graphs and starting workers (the demo's 5.5 s + 3 s).
START_S = 9.0
#: Memory one trial of a drawn trial list holds (bytes; pandas' deep size of the demo's and
#: E14's trials.parquet rows, 135–147, rounded up).
TRIAL_BYTES = 150
#: A run starts one worker per core from this many items to embed (interbias.embedding.executors).
JOBS_FROM = 256


def verification_estimate(exp: Experiment, encoders: Sequence[str], cache: Path) -> Estimate:
    """Grid size, trial counts, whether it runs here and the embedding cost of ``exp``."""
    from interbias.run.preflight import availability, check_experiment, repeated_levels

    check_experiment(exp, encoders)  # the grid counted before any cell is built, as ``run`` does
    cells = exp.cells()
    strata = exp.strata()
    t = exp.trials
    label = exp.name + (f" --corpus {exp.variant}" if exp.variant else "")
    est = Estimate(label, Path(exp.corpus.manifest).name if exp.corpus.manifest else exp.corpus.name)
    est.n_strata, est.n_cells = len(strata), len(cells)
    est.n_backends = len(backend_levels(exp.factors))
    est.n_chains = len(cells) // max(1, len(strata)) // max(1, est.n_backends)
    est.n_rows = len(cells) * len(encoders)
    est.trials_per_stratum = t.targets + t.n_nontargets + (t.n_spoofs if exp.spoofing else 0)
    why = availability(exp)
    est.runs_here = runs_here_text(why, [])
    est.notes += [note] if (note := spoofing_cm_note(exp)) else []
    est.notes += [left.line() for left in exp.left_out]
    est.notes += repeated_levels(exp)
    manifest, table, est.utterances_from = corpus_here(exp, cache)
    drawn = None
    if manifest is not None:
        drawn = check_trials(exp, manifest, est)
    elif t.list_file is not None:
        est.trials_per_stratum, est.trials_note = None, f"trials from the list (not read: {est.utterances_from})"
    est.notes += [note] if (note := trial_memory_note(est)) else []
    if table is None:
        return est
    items, n_utts, seconds_audio = embedding_items(exp, table) if drawn is None else drawn_items(exp, table, *drawn)
    est.n_utterances, est.n_items = n_utts, items
    est.n_embeddings = items * len(encoders)
    mean_s = seconds_audio / max(1, n_utts) if seconds_audio else DEFAULT_DURATION_S
    jobs = (os.cpu_count() or 1) if items >= JOBS_FROM else 1
    audio_s = items * mean_s
    per_encoder = [audio_s / BENCH_X_REALTIME.get(e, UNMEASURED_X_REALTIME) for e in encoders]
    est.seconds = START_S + sum(per_encoder) / jobs
    est.cores, est.load = machine_load()
    est.jobs = jobs
    est.seconds_now = START_S + sum(per_encoder) / shared_jobs(jobs, est.cores, est.load)
    unmeasured = [e for e in encoders if e not in BENCH_X_REALTIME]
    if unmeasured:
        est.notes.append(
            f"no throughput figure for {', '.join(unmeasured)}: {UNMEASURED_X_REALTIME:g}× real time assumed"
        )
    return est


def check_trials(exp: Experiment, manifest: Manifest, est: Estimate) -> tuple[TrialList, Cohort | None] | None:
    """Read the external trial list, or draw the trials, and draw the cohort, as ``run`` does
    (:func:`interbias.run.inputs.draw_inputs`): what ``run`` refuses (enrolment above what the
    speakers have, a missing or unmatched list, a cohort the corpus cannot give) is an error. A
    list's trials are counted as listed (``trials_note``). Skipped for spoof trials (their audio
    is made at run time): None; else the trials and the cohort, the items the run embeds."""
    from interbias.run.inputs import draw_inputs
    from interbias.trials.external import external_trials
    from interbias.trials.sampler import drawn_per_stratum, shortfall

    listed = external_trials(exp, manifest)
    if exp.spoofing is not None:
        return None
    trials, cohort = draw_inputs(exp, manifest, listed)
    if listed is None and (short := shortfall(trials.info)):  # what run will say it drew
        est.notes.append(short)
    if listed is None and (drawn := drawn_per_stratum(trials.info)) is not None:
        asked = est.trials_per_stratum
        est.trials_per_stratum, est.trials_drawn = sum(drawn), True
        est.trials_asked = asked if asked is not None and sum(drawn) < asked else None
        dev = drawn_per_stratum({"matched": trials.info.get("dev_matched")})
        est.dev_trials_per_stratum = sum(dev) if dev else 0
    if listed is not None:
        per = trials.frame.groupby("stratum").size()
        spread = f" ({per.min()}–{per.max()} per stratum)" if len(per) > 1 else ""
        est.trials_per_stratum = int(per.max()) if len(per) else 0
        est.trials_note = f"{len(trials.frame)} trials from the list{spread}"
    return trials, cohort


def trial_memory_note(est: Estimate, available: int | None = None) -> str | None:
    """A warning when the trials asked for (not drawn here: the corpus is not here to say how
    many it holds) would not fit this machine's free memory as a trial list
    (:data:`TRIAL_BYTES` each), else None."""
    from interbias.utils.budget import available_bytes, size_text

    if est.trials_drawn or not est.trials_per_stratum:
        return None
    free = available_bytes() if available is None else available
    need = est.trials_per_stratum * max(1, est.n_strata) * TRIAL_BYTES
    if need <= free:
        return None
    return (
        f"{est.trials_per_stratum:,} trials per stratum asked: if the corpus holds that many, the trial list alone "
        f"needs {size_text(need)} of memory (about {TRIAL_BYTES} bytes a trial) and this machine has "
        f"{size_text(free)} free; ask for fewer (trials: targets, nontargets)"
    )


def utterance_table(exp: Experiment, cache: Path) -> tuple[pd.DataFrame | None, str]:
    """The corpus's utterances (id, speaker, duration_s, attributes) as far as they are known
    here without preparing or building anything, and where they came from."""
    _, table, where = corpus_here(exp, cache)
    return table, where


def corpus_here(exp: Experiment, cache: Path) -> tuple[Manifest | None, pd.DataFrame | None, str]:
    """(the manifest when it is here, else None; :func:`utterance_table`'s table and where)."""
    spec = exp.corpus
    if spec.manifest:
        path = Path(spec.manifest).expanduser()
        if not path.is_file():
            return None, None, f"manifest {path} is not here"
        manifest = _read_manifest(path, exp)
        return manifest, _table(manifest), f"manifest {path.name}"
    if spec.name != "synthetic":
        return None, None, f"the {spec.name} manifest is prepared at run time"
    from interbias.corpora.synthetic import SyntheticSpec, corpus_folder, planned_utterances

    synth = SyntheticSpec.from_options(dict(spec.options))
    built = corpus_folder(synth, cache) / "manifest.jsonl"
    if built.is_file():
        manifest = _read_manifest(built, exp, name=spec.name)
        return manifest, _table(manifest), "the synthetic corpus built in the cache"
    planned = pd.DataFrame(planned_utterances(synth)).assign(duration_s=DEFAULT_DURATION_S)
    return None, planned, "the synthetic spec (not built yet: durations assumed)"


def _read_manifest(path: Path, exp: Experiment, name: str | None = None) -> Manifest:
    """The manifest read as ``run`` reads it (an id defaults to the path without its extension);
    what ``run`` refuses of it for ``exp`` (an attribute it selects by that no utterance has, a
    population attribute that varies within a speaker and is not declared in
    ``utterance_attributes``) is an error."""
    from interbias.corpora import check_manifest
    from interbias.corpora.manifest import Manifest
    from interbias.trials.fit import judge_manifest

    manifest = Manifest.read(path, name=name)
    if exp.corpus.manifest and (short := judge_manifest(exp, manifest)):  # as run: one line per missing thing
        raise ShortfallError([s.line() for s in short])
    check_manifest(exp, manifest)
    return manifest


def _table(manifest: Manifest) -> pd.DataFrame:
    """One row per utterance with its fields and free attributes as strings."""
    return pd.DataFrame([{k: str(v) for k, v in u.to_dict().items()} for u in manifest])


def _matching(table: pd.DataFrame, selectors: dict[str, Any]) -> pd.Series:
    keep = pd.Series(True, index=table.index)
    for attr, values in selectors.items():
        if values is None:
            continue
        if attr not in table.columns:
            return pd.Series(False, index=table.index)
        allowed = {str(v) for v in ([values] if isinstance(values, str) else values)}
        keep &= table[attr].astype(str).isin(allowed)
    return keep


def embedding_items(exp: Experiment, table: pd.DataFrame) -> tuple[int, int, float]:
    """(distinct (utterance, chain) items, distinct utterances, their audio seconds) the run
    would embed, from the pools of each stratum (see the module docstring). Linear in the grid:
    each stratum side's pool is selected once, and each chain's items are the union of the
    pools of the sides it applies to (counted, never listed item by item)."""
    from interbias.utils.seeding import canonical_json

    pool = table[_matching(table, dict(exp.population))] if exp.population else table
    cap = exp.trials.utterances_per_speaker
    by_stratum: dict[str, Any] = {s.name: s for s in exp.strata()}
    side_ids: dict[str, frozenset[str]] = {}
    sides_of_chain: dict[str, set[str]] = {}
    for cell in exp.cells():
        stratum = by_stratum[cell.stratum]
        fe = exp.frontend_for(cell).vad  # a protocol VAD embeds the same chain again
        for selectors, chain in ((stratum.enrol, cell.enrol_chain), (stratum.test, cell.test_chain)):
            key = canonical_json(selectors)
            if key not in side_ids:
                side = pool[_matching(pool, selectors)].sort_values("id")
                if cap:
                    side = side.groupby("speaker", sort=False).head(cap)
                side_ids[key] = frozenset(side["id"])
            chain_key = chain.fingerprint + ("" if fe == exp.frontend.vad else f"@{fe}")
            sides_of_chain.setdefault(chain_key, set()).add(key)
    sizes: dict[frozenset[str], int] = {}
    n_items = 0
    for keys in sides_of_chain.values():
        group = frozenset(keys)
        if group not in sizes:
            sizes[group] = len(frozenset().union(*(side_ids[k] for k in group)))
        n_items += sizes[group]
    used = set().union(*(side_ids[k] for keys in sides_of_chain.values() for k in keys)) if sides_of_chain else set()
    return n_items, len(used), _seconds(table, used)


def drawn_items(
    exp: Experiment, table: pd.DataFrame, trials: TrialList, cohort: Cohort | None
) -> tuple[int, int, float]:
    """:func:`embedding_items` counted as the run counts them from the trials (and cohort) it
    draws: the (chain, utterance) items of every cell (:func:`chains_for_cells`; the cohort's
    items where the cells share one front end, as the run's single embedder adds them), per
    front end; equal to run.json's ``embedded`` from an empty embedding cache."""
    from interbias.embedding.stage import chains_for_cells
    from interbias.run.frontends import frontend_groups
    from interbias.run.normalise import add_cohort_items

    cells = exp.cells()
    groups = list(frontend_groups(exp, cells).values())
    n_items, used = 0, set()
    for group in groups:
        items = chains_for_cells(group, trials.for_stratum)
        if cohort is not None and len(groups) == 1:
            add_cohort_items(items, group, cohort, exp.scoring)
        for _, ids in items.values():
            n_items += len(ids)
            used |= ids
    return n_items, len(used), _seconds(table, used)


def _seconds(table: pd.DataFrame, used: set[str]) -> float:
    """The audio seconds of the utterances ``used`` (0 where the table has no durations)."""
    if "duration_s" not in table.columns:
        return 0.0
    durations = pd.to_numeric(table.set_index("id")["duration_s"], errors="coerce")
    return float(durations.reindex(sorted(used)).fillna(DEFAULT_DURATION_S).sum())


def spoofing_cm_note(exp: Experiment) -> str | None:
    """A note on the CM work of a spoofing experiment that names countermeasures
    (:mod:`interbias.run.cm_stage`; whether their checkpoints are here is ``availability``'s);
    None for any other."""
    if not exp.spoofing_cms:
        return None
    from interbias.run.cm_stage import reference_cell

    refs = sum(reference_cell(exp, c) for c in exp.cells())
    return (
        f"countermeasures {', '.join(exp.spoofing_cms)} also score each cell's distinct eval test utterances, and in "
        f"the {refs} reference cell(s) the dev trials' test utterances and the attacks imitating dev speakers; "
        f"{NO_TIME}"
    )
