"""What an experiment is: the YAML schema and its records.

- :mod:`~interbias.experiments.schema`: ``Experiment`` (strata, cells), ``load_experiment``,
  variants, ``with_data``; its names are importable from here;
- :mod:`~interbias.experiments.sections`: the sections below the top level, each a record and
  its parser (corpus, population, factors, trials, spoofing, fairness, frontend);
- :mod:`~interbias.experiments.decision_spec`: the decision and score-normalisation sections;
- :mod:`~interbias.experiments.yamlfile`: the strict YAML reader.
"""

from interbias.experiments.schema import (
    TOP_KEYS,
    USES,
    Cell,
    Experiment,
    Stratum,
    find_experiment,
    load_experiment,
    parse_experiment,
    resource_problems,
    with_data,
)

__all__ = [
    "TOP_KEYS",
    "USES",
    "Cell",
    "Experiment",
    "Stratum",
    "find_experiment",
    "load_experiment",
    "parse_experiment",
    "resource_problems",
    "with_data",
]
