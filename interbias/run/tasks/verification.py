"""The verification task: a speaker-verification experiment (the default kind), run by the
conductor (:func:`interbias.run.conductor.run`), checked by the preflight's verification
checks (:func:`interbias.run.preflight.verification_for_run`) and estimated by
:func:`interbias.run.tasks.verification_estimate.verification_estimate`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from interbias.run.conductor import RunOutcome, run
from interbias.run.estimate import Estimate
from interbias.run.preflight import verification_for_run
from interbias.run.tasks.base import Task
from interbias.run.tasks.verification_estimate import verification_estimate

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment
    from interbias.run.inputs import RunOptions
    from interbias.utils.progress import Reporter

__all__ = ["VERIFICATION", "VerificationTask", "run"]


class VerificationTask(Task):
    """Speaker verification: trials drawn per stratum, embedded by ``--encoders``, scored per cell."""

    kind = "verification"
    embeds = True

    def check(self, exp: Experiment, options: RunOptions) -> Experiment:
        return verification_for_run(exp, options)

    def estimate(self, exp: Experiment, encoders: Sequence[str], cache: Path) -> Estimate:
        return verification_estimate(exp, encoders, cache)

    def run(self, options: RunOptions, reporter: Reporter | None, exp: Experiment) -> RunOutcome:
        return run(options, reporter, exp=exp)


VERIFICATION = VerificationTask()
