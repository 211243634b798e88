"""The run of a speaker-verification experiment: the conductor (:func:`interbias.run.conductor.run`)."""

from __future__ import annotations

from interbias.run.conductor import run

__all__ = ["run"]
