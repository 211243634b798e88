"""Corpus adapters: one module per corpus, each turning a corpus on disk into a Manifest.

Adapters are registered by exact name. ``prepare(root, cache, options)`` reads the corpus's
published layout and metadata; the embedded ``synthetic`` corpus needs no root and builds
itself. Each adapter declares the attributes its manifests carry, so an experiment that
selects by an attribute a corpus lacks (a drift date, a dysarthria label) fails before any
work with one line saying what data it needs (:func:`check_runnable`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interbias.corpora.manifest import Manifest, check_speaker_attributes, speaker_level_attributes
from interbias.utils.errors import CorpusError, DataMissingError, see_docs
from interbias.utils.progress import Reporter
from interbias.utils.registry import Registry

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment

#: Attributes every manifest has.
BASE_ATTRIBUTES = ("id", "path", "speaker")


@dataclass(frozen=True)
class Conditional:
    """An attribute an adapter provides only when ``file`` (relative to the root) exists."""

    attribute: str
    file: str
    why: str


@dataclass(frozen=True)
class CorpusAdapter:
    name: str
    description: str
    #: ``prepare(root, cache_dir, options) -> Manifest`` (with ``reporter=`` when ``shows_progress``)
    prepare: Callable[..., Manifest]
    needs_root: bool = True
    #: What the user must provide, shown when the root is missing.
    expects: str = ""
    #: Attributes (fields or ``attrs`` keys) its manifests carry, beyond id/path/speaker.
    attributes: tuple[str, ...] = ()
    #: Attributes that need an extra file under the root.
    conditional: tuple[Conditional, ...] = ()
    #: ``prepare`` also takes ``reporter=`` (a :class:`interbias.utils.progress.Reporter`) and shows
    #: the progress of a build there (the embedded corpus renders its audio on first use).
    shows_progress: bool = False

    def provides(self) -> set[str]:
        return set(BASE_ATTRIBUTES) | set(self.attributes) | {c.attribute for c in self.conditional}


CORPORA: Registry[CorpusAdapter] = Registry("corpus", CorpusError)


def register(adapter: CorpusAdapter) -> CorpusAdapter:
    CORPORA.register(adapter.name)(adapter)
    return adapter


def load_corpus(spec: Any, *, root: Path | None = None, cache: Path, reporter: Reporter | None = None) -> Manifest:
    """The manifest of an experiment's corpus (a ``CorpusSpec``).

    A ``manifest`` file is read directly; otherwise the named adapter prepares it from
    ``root`` (argument, then the spec's ``root``, then ``$INTERBIAS_CORPORA/<name>``).
    ``reporter`` shows the progress of a corpus that builds itself (``shows_progress``).
    """
    if spec.manifest:
        mroot = root or (Path(spec.root).expanduser() if spec.root else None)
        return read_manifest(Path(spec.manifest).expanduser(), root=mroot, reporter=reporter)
    adapter = CORPORA.get(spec.name)
    corpus_root: Path | None = None
    if adapter.needs_root:
        corpus_root = corpus_root_for(spec, root)
        if not corpus_root.is_dir():
            raise CorpusError(
                f"corpus {spec.name!r} not found at {corpus_root}: pass --corpus-root DIR or set "
                f"INTERBIAS_CORPORA (expected {adapter.expects or 'the published layout'}; {see_docs('corpora')})"
            )
    if adapter.shows_progress and reporter is not None:
        return adapter.prepare(corpus_root, cache, dict(spec.options), reporter=reporter)
    return adapter.prepare(corpus_root, cache, dict(spec.options))


def read_manifest(path: Path, *, root: Path | None = None, reporter: Reporter | None = None) -> Manifest:
    """A user's manifest: CSV or JSONL (``path``, ``speaker``, any attributes), or a Lhotse
    recordings + supervisions pair (either file, or the folder holding both). Every audio
    path must be a readable file; relative paths resolve against ``root`` or the file's folder.
    ``reporter`` shows progress over a large manifest's rows."""
    from interbias.corpora import lhotse

    if root is not None and not Path(root).is_dir():
        raise CorpusError(
            f"data root {root} does not exist or is not a folder (the manifest's paths resolve against it)"
        )
    if path.is_dir() or lhotse.is_lhotse_file(path):
        return lhotse.read_lhotse(*lhotse.find_pair(path), root=root, name=path.name if path.is_dir() else None)
    return Manifest.read(path, root=root, check_files=True, task=reporter.task if reporter is not None else None)


def corpus_root_for(spec: Any, root: Path | None = None) -> Path:
    """Where a corpus lives: ``root``, else the spec's ``root``, else ``$INTERBIAS_CORPORA/<name>``."""
    from interbias.utils.paths import corpora_dir

    return root or (Path(spec.root).expanduser() if spec.root else corpora_dir() / spec.name)


def needed_attributes(exp: Experiment) -> list[str]:
    """Attributes an experiment selects by: its population filter and population factors."""
    names = list(exp.population) + [f.attribute for f in exp.factors if f.type == "population"]
    return list(dict.fromkeys(names))


def check_runnable(exp: Experiment, *, root: Path | None = None) -> None:
    """Raise one :class:`CorpusError` when ``exp`` cannot run on its corpus here, before any work.

    Checks, in order: the corpus has an adapter (or its manifest file exists); the adapter's
    manifests carry every attribute the experiment selects by; the corpus root exists; and
    files that conditional attributes come from exist. The message ends with the
    experiment's ``requires`` text (what data it needs).
    """
    need = f"; needs: {exp.requires.strip()}" if exp.requires.strip() else ""
    spec = exp.corpus
    if spec.manifest:
        if not Path(spec.manifest).exists():
            reason = f"manifest {spec.manifest} does not exist"
            raise DataMissingError(f"{exp.name}: {reason}{need}", key="manifest", reason=reason)
        return
    if spec.name not in CORPORA:
        reason = f"no adapter for corpus {spec.name!r}; valid: {', '.join(CORPORA.names())}"
        raise DataMissingError(f"{exp.name}: {reason}{need}", key="adapter", reason=reason)
    adapter = CORPORA.get(spec.name)
    provided = adapter.provides()
    for attr in needed_attributes(exp):
        if attr not in provided:
            reason = f"it selects by {attr!r}, which {spec.name} manifests do not have"
            raise DataMissingError(
                f"{exp.name} cannot run on corpus {spec.name!r}: {reason} "
                f"(they have: {', '.join(sorted(provided - set(BASE_ATTRIBUTES)))}){need}",
                key="attr",
                reason=reason,
            )
    if not adapter.needs_root:
        return
    corpus_root = corpus_root_for(spec, root)
    if not corpus_root.is_dir():
        where = f"corpus {spec.name!r} not found at {corpus_root}"
        raise DataMissingError(
            f"{exp.name}: {where}: pass --corpus-root DIR or set "
            f"INTERBIAS_CORPORA (expected {adapter.expects or 'the published layout'}){need}",
            key="data",
            reason=f"{where} (pass --corpus-root DIR or set INTERBIAS_CORPORA)",
        )
    wanted = set(needed_attributes(exp))
    for cond in adapter.conditional:
        if cond.attribute in wanted and not (corpus_root / cond.file).exists():
            reason = (
                f"{spec.name} attribute {cond.attribute!r} comes from {corpus_root / cond.file}, which does not exist"
            )
            raise DataMissingError(f"{exp.name}: {reason} ({cond.why}){need}", key="file", reason=reason)


def check_manifest(exp: Experiment, manifest: Manifest) -> None:
    """Raise when no utterance of ``manifest`` carries an attribute ``exp`` selects by, or
    when a speaker-level attribute differs between one speaker's utterances."""
    need = f"; needs: {exp.requires.strip()}" if exp.requires.strip() else ""
    for attr in needed_attributes(exp):
        if not any(u.get(attr) is not None for u in manifest):
            raise CorpusError(
                f"{exp.name}: no utterance of corpus {manifest.name!r} has the attribute {attr!r} it selects by{need}"
            )
    check_speaker_attributes(manifest, speaker_attributes(exp, manifest), where=f"{exp.name}: corpus {manifest.name!r}")


def speaker_attributes(exp: Experiment, manifest: Manifest) -> list[str]:
    """The attributes that must be constant per speaker for experiment ``exp`` on ``manifest``:
    :func:`interbias.corpora.manifest.speaker_level_attributes` with what ``exp`` selects or groups
    speakers by (population filter and factors, split attributes, fairness groups) and the
    attributes it declares (``speaker_attributes``, ``utterance_attributes``)."""
    groups = exp.fairness.groups if exp.fairness is not None else None
    crossed = [part for g in groups or () for part in g.split("×")]  # a crossing reads each of its attributes
    selected = needed_attributes(exp) + list(exp.trials.split_by or ()) + list(dict.fromkeys(crossed))
    return speaker_level_attributes(manifest, selected=selected, declared=exp.speaker_level, exempt=exp.utterance_level)


from interbias.corpora import add2023 as _add2023  # noqa: E402,F401
from interbias.corpora import asvspoof5 as _asvspoof5  # noqa: E402,F401
from interbias.corpora import cm_corpus as _cm_corpus  # noqa: E402,F401
from interbias.corpora import commonvoice as _commonvoice  # noqa: E402,F401
from interbias.corpora import ears as _ears  # noqa: E402,F401
from interbias.corpora import had as _had  # noqa: E402,F401
from interbias.corpora import l2arctic as _l2arctic  # noqa: E402,F401
from interbias.corpora import ravdess as _ravdess  # noqa: E402,F401
from interbias.corpora import synthetic as _synthetic  # noqa: E402,F401
from interbias.corpora import torgo as _torgo  # noqa: E402,F401
from interbias.corpora import voxceleb1 as _voxceleb1  # noqa: E402,F401
