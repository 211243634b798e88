"""The :class:`Task` interface: what an experiment kind means, in one object.

Each kind of :data:`interbias.experiments.kinds.KINDS` has one task in the registry
:data:`interbias.run.tasks.TASKS`. A task says whether its run embeds speech with speaker
encoders (:attr:`Task.embeds`: ``--encoders`` then names encoders, ``--precision`` applies),
whether ``--encoders`` names its own models (:meth:`Task.names_models`), what ``run`` checks
of the experiment before any work (:meth:`Task.check`), what ``validate`` estimates of it
(:meth:`Task.estimate`), and runs it (:meth:`Task.run`) inside the run frame
(:mod:`interbias.run.frame`).

Besides the interface: what the estimates of the countermeasure and tracks tasks share (the
split counts of a CM manifest, the manifest as far as it is here, the runs-here text).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from interbias.run.estimate import Estimate
from interbias.run.preflight import Availability, user_data
from interbias.utils.errors import ConfigError

if TYPE_CHECKING:
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment
    from interbias.experiments.sections import CorpusSpec
    from interbias.run.frame import RunOutcome
    from interbias.run.inputs import RunOptions
    from interbias.utils.progress import Reporter

NO_TIME = "time not estimated (no throughput figure for CM scoring or training)"


class Task(ABC):
    """One experiment kind: its checks, its estimate and its run (module docstring)."""

    #: The experiment kind this task runs (``Experiment.kind``).
    kind: ClassVar[str]
    #: Whether the run embeds speech with the speaker encoders ``--encoders`` names.
    embeds: ClassVar[bool] = False

    def names_models(self, options: RunOptions) -> bool:
        """Whether ``--encoders`` names this kind's own models (then their checkpoints are
        judged when loaded, not before the run)."""
        return False

    @abstractmethod
    def check(self, exp: Experiment, options: RunOptions) -> Experiment:
        """The experiment ``run`` runs, checked before any work (the user's data applied)."""

    @abstractmethod
    def estimate(self, exp: Experiment, encoders: Sequence[str], cache: Path) -> Estimate:
        """What ``validate`` says of ``exp``: its grid, whether it runs here, its cost."""

    @abstractmethod
    def run(self, options: RunOptions, reporter: Reporter | None, exp: Experiment) -> RunOutcome:
        """Run ``exp`` as checked by :meth:`check`; rerunning resumes."""


def check_own_data(exp: Experiment, options: RunOptions) -> Experiment:
    """The check of a countermeasure or tracks experiment: its CMs are its own (``--cm`` is
    refused), it scores its own corpus (``--manifest``, ``--data-root`` and ``--trials`` are
    refused, never ignored), and its corpus is checked to be here."""
    from interbias.corpora import check_runnable

    if options.countermeasures is not None:
        raise ConfigError(
            f"{exp.name}: --cm adds CMs to a spoofing verification run; this experiment is of kind {exp.kind} "
            "(its CMs are countermeasures.models, or --encoders)"
        )
    for flag, value in (("--backend", options.backend), ("--dev-share", options.dev_share)):
        if value is not None:
            raise ConfigError(
                f"{exp.name}: {flag} applies to speaker-verification trials; this experiment is of kind {exp.kind}"
            )
    given = [flag for flag, value in (("--manifest", options.manifest), ("--data-root", options.data_root),
                                      ("--trials", options.trials)) if value]  # fmt: skip
    if given:
        raise ConfigError(
            f"{exp.name} is a {exp.kind} experiment: it scores its own corpus ({exp.corpus.name}; "
            f"--corpus-root says where it is), so {', '.join(given)} would be ignored; "
            "a user's manifest runs verification experiments (interbias list)"
        )
    if user_data(options):
        check_runnable(exp, root=options.corpus_root)
    return exp


# ---- what the countermeasure and tracks estimates share ------------------------------------------


def split_counts(manifest: Manifest) -> dict[str, int]:
    """Utterances per split (``train``, ``dev``, ``eval``) of a CM manifest."""
    out = {"train": 0, "dev": 0, "eval": 0}
    for u in manifest:
        split = str(u.get("split"))
        out[split] = out.get(split, 0) + 1
    return out


def built_manifest(folder: Path, name: str) -> tuple[Manifest | None, str]:
    """The manifest of an offline corpus when it is built in ``folder``, else None; and where."""
    from interbias.corpora.manifest import Manifest

    path = folder / "manifest.jsonl"
    if path.is_file():
        return Manifest.read(path, name=name), f"the {name} corpus built in the cache"
    return None, f"the {name} corpus is built at run time"


def manifest_here(
    spec: CorpusSpec, cache: Path, offline: dict[str, Callable[[dict[str, Any]], tuple[str, Path]]]
) -> tuple[Manifest | None, str]:
    """The manifest of the corpus ``spec`` as far as it is here. A ``manifest:`` file is read
    as ``run`` reads it. ``offline`` maps a corpus name to a function giving the folder of its
    built corpus from its options."""
    from interbias.corpora import load_corpus

    if spec.manifest:
        path = Path(spec.manifest).expanduser()
        if not path.exists():
            return None, f"manifest {path} is not here"
        return load_corpus(spec, cache=cache), f"manifest {path.name}"
    if spec.name in offline:
        name, folder = offline[spec.name](dict(spec.options))
        return built_manifest(folder, name)
    return None, f"the {spec.name} manifest is prepared at run time"


def base_estimate(exp: Experiment, kind: str, n_cells: int) -> Estimate:
    """The estimate's grid part for a run without trials (countermeasure, tracks)."""
    label = exp.name + (f" --corpus {exp.variant}" if exp.variant else "")
    est = Estimate(label, exp.corpus.name, kind=kind)
    est.n_strata, est.n_cells = len(exp.strata()), n_cells
    est.n_chains = n_cells // max(1, est.n_strata)
    est.trials_per_stratum = None
    return est


def runs_here_text(why: Availability, missing: list[str]) -> str:
    """``runs here``, else ``does not run here (why)``: the data first, then the CM checkpoints."""
    if not why.runnable:
        return f"does not run here ({why.reason})"
    if len(missing) > 1:
        return f"does not run here ({len(missing)} CM checkpoints are missing; first: {missing[0]})"
    if missing:
        return f"does not run here ({missing[0]})"
    return "runs here"
