"""What a run of an experiment would embed, without embedding it: the experiment resolved, its
corpus read from the cache (built when missing, as ``interbias run`` builds it), its trials drawn
and its (utterance, chain) items listed as the run lists them, with each item's waveform length.

Shared by ``gpu_check.py --plan`` (the run's batching on these lengths) and
``bench_prepare.py`` (preparation of a sample of these items)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from _common import ROOT


@dataclass
class RunPlan:
    """An experiment's embedding work: ``items`` (utterance id, chain) in the run's order."""

    exp: Any
    manifest: Any
    items: list[tuple[str, Any]]
    #: utterance id -> speakers a talker-drawing operator must avoid for it (its trial partners).
    exclude: dict[str, frozenset[str]]

    def lengths(self, rate_hz: int = 16000) -> list[int]:
        """Each item's waveform length in samples from the manifest's durations, cut at the
        front end's ``max_duration_s`` (the operators keep a waveform's length; voice activity
        trimming is not applied, so lengths are at most what the run embeds)."""
        by_id = self.manifest.by_id()
        cap = self.exp.frontend.max_duration_s
        out = []
        for uid, _chain in self.items:
            seconds = float(by_id[uid].duration_s or 0.0)
            out.append(int(round((min(seconds, cap) if cap else seconds) * rate_hz)))
        return out


def run_plan(name: str = "E14", corpus: str | None = "synthetic") -> RunPlan:
    """The plan of ``interbias run NAME --corpus CORPUS`` (corpus built into the cache if missing)."""
    from interbias.corpora import load_corpus
    from interbias.embedding.stage import chains_for_cells
    from interbias.experiments.schema import find_experiment, load_experiment
    from interbias.run.inputs import draw_inputs
    from interbias.trials.external import external_trials
    from interbias.trials.sampler import partners
    from interbias.utils.paths import cache_dir

    exp = load_experiment(find_experiment(name, ROOT / "conditions"), corpus=corpus)
    manifest = load_corpus(exp.corpus, cache=cache_dir())
    trials, _ = draw_inputs(exp, manifest, external_trials(exp, manifest))
    chains = chains_for_cells(exp.cells(), trials.for_stratum)
    items = [(uid, chain) for _fp, (chain, uids) in sorted(chains.items()) for uid in sorted(uids)]
    return RunPlan(exp, manifest, items, partners(trials.frame))
