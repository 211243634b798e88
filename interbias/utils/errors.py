"""Typed errors. The library raises these; the CLI prints their message on one line."""


class InterbiasError(Exception):
    """Base class of every error interbias reports to the user."""


class ConfigError(InterbiasError):
    """An experiment definition (YAML) is invalid."""


class ManifestError(InterbiasError):
    """A manifest file is malformed or refers to unusable audio."""


class CorpusError(InterbiasError):
    """A corpus root is missing, malformed, or cannot be built."""


class ShortfallError(CorpusError):
    """A corpus lacks what an experiment needs; ``lines`` holds one line per missing thing with
    its fix (the CLI prints each on its own line; ``str`` joins them with "; ")."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = tuple(lines)


class AudioError(InterbiasError):
    """One audio file cannot be used (corrupt, empty, too short, non-finite)."""


class OperatorError(InterbiasError):
    """A degradation operator is unknown, misconfigured, or failed on an input."""


class EncoderError(InterbiasError):
    """An encoder is unknown, missing its files, or its checkpoint does not load."""


class TrialError(InterbiasError):
    """A trial list cannot be drawn or read (too few speakers, unknown utterances)."""


class MetricError(InterbiasError):
    """Metric inputs are invalid (no targets, no non-targets, non-finite scores)."""


class AnalysisError(InterbiasError):
    """An analysis input is missing columns or holds unusable values."""


class RunError(InterbiasError):
    """A run cannot proceed (locked run directory, inconsistent earlier state)."""


class CellError(RunError):
    """A cell that could not be scored; ``failures`` are the utterance failures it met (run.json
    counts them like those of a scored cell)."""

    def __init__(self, message: str, failures: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.failures = list(failures or [])


class DataMissingError(CorpusError):
    """An experiment cannot run on its corpus here; ``key`` says why in one word
    (``data``, ``attr``, ``file``, ``manifest``, ``adapter``) and ``reason`` in one clause."""

    def __init__(self, message: str, *, key: str, reason: str) -> None:
        super().__init__(message)
        self.key = key
        self.reason = reason


class ExecutorError(RunError):
    """Embedding work was lost: worker processes kept dying, or an executor left requested
    (utterance, chain, encoder) items without a vector or a counted failure."""


#: The documentation page that explains each missing piece an error can name (paths from the
#: repository root; tests/test_docs.py checks that each exists).
DOCS_PAGES = {
    "corpora": "docs/guide/corpora.md",
    "countermeasures": "docs/countermeasures.md",
    "encoders": "docs/guide/encoders.md",
    "operators": "docs/guide/operators.md",
    "scaling": "docs/guide/scaling.md",
}


def see_docs(topic: str) -> str:
    """The clause an error message ends with to point at the page on ``topic``:
    ``"see docs/guide/corpora.md"``."""
    return f"see {DOCS_PAGES[topic]}"
