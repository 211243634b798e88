"""Which trials a run scores: drawn once per experiment, the same for every cell and encoder.

- :mod:`~interbias.trials.sampler`: the trial sampler and ``TrialList``; its names are importable
  from here;
- :mod:`~interbias.trials.external`: external VoxCeleb/Kaldi trial lists;
- :mod:`~interbias.trials.speaker_budget`: speakers per stratum and ``run --plan``;
- :mod:`~interbias.trials.cohort`: the score-normalisation cohort, drawn from speakers in no trial.
"""

from interbias.trials.sampler import (
    COLUMNS,
    SPLITS,
    TRIAL_TYPES,
    StratumStats,
    TrialList,
    draw_trials,
    eligible_utterances,
    format_selectors,
    matches_selectors,
    partners,
    population_attributes,
    shortfall,
    split_speakers,
)

__all__ = [
    "COLUMNS",
    "SPLITS",
    "TRIAL_TYPES",
    "StratumStats",
    "TrialList",
    "draw_trials",
    "eligible_utterances",
    "format_selectors",
    "matches_selectors",
    "partners",
    "population_attributes",
    "shortfall",
    "split_speakers",
]
