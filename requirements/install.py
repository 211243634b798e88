"""Install the pinned packages into a virtualenv: with uv when it can, else with pip.

Run by ``make venv`` with the venv's own interpreter (standard library only)::

    .venv/bin/python requirements/install.py

Choices, each printed before anything is installed (override with the environment):

- ``INSTALLER`` = ``auto`` (default) | ``uv`` | ``pip``. ``auto`` uses a ``uv`` on PATH, else
  installs ``uv==UV_VERSION`` from PyPI into the venv with pip, else (that failing) says so and
  uses pip. ``uv`` fails when neither is possible.
- ``TORCH_BUILD`` = ``auto`` (default) | ``cpu`` | ``cuda``. ``auto`` is ``cuda`` where
  ``nvidia-smi -L`` lists a GPU, else ``cpu``. ``cpu`` installs ``torch==2.13.0+cpu`` (the CPU
  wheel, from pip's configured find-links / indexes); ``cuda`` installs PyPI's ``torch==2.13.0``
  (a CUDA build). The installed ``torch.__version__`` is checked at the end.

uv does not read pip's configuration, so pip's ``find-links``, ``index-url``,
``extra-index-url``, ``constraint`` and ``cert`` settings (``pip config list``, files and
``PIP_*`` variables alike) are passed to uv explicitly: both installers see the same sources and
pins, and resolve across indexes the way pip does (``--index-strategy unsafe-best-match``).

Last, the modules a run, its workers, the analysis and the tests import are imported once with
bytecode writing on (``WARM_IMPORTS``): pip compiles what it installs, uv does not, and where
``PYTHONDONTWRITEBYTECODE`` is set no later process would ever write a ``.pyc``, so every run,
corpus-rendering and embedding worker would compile torch & co. from source again (``import
torch`` 4.4 s instead of 2.5 s here). Importing compiles only what is used (about 12 s on two
cores), where ``compileall`` of the whole venv takes 53 s.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

UV_VERSION = "0.13.9"
TORCH_VERSION = "2.13.0"
ROOT = Path(__file__).resolve().parent.parent
REQ = ROOT / "requirements"
PYPI = "https://pypi.org/simple"
#: Imported once after installing, with bytecode writing on (see the module doc).
WARM_IMPORTS = (
    "interbias.cli",
    "interbias.run.conductor",
    "interbias.embedding.executors",
    "interbias.encoders.campplus",
    "interbias.encoders.ge2e",
    "interbias.encoders.mfcc_stats",
    "interbias.corpora.synthetic",
    "interbias.corpora.channel",
    "interbias.corpora.espeak",
    "interbias.analysis.suite",
    "interbias.analysis.after_run",
    "onnxruntime",
    "torch.onnx",
    "scipy.signal",
    "pyroomacoustics",
    "resemblyzer",
    "pyarrow.parquet",
    "pytest",
    "hypothesis",
)


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    print("+", shlex.join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=env)


def pip_config(python: str) -> dict[str, list[str]]:
    """pip's effective settings (``find-links`` etc.) as lists; environment entries win over files."""
    out = subprocess.run([python, "-m", "pip", "config", "list"], check=True, capture_output=True, text=True).stdout
    found: dict[str, tuple[int, list[str]]] = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        scope, _, name = key.rpartition(".")
        rank = 2 if scope.startswith(":env:") else 1 if scope in ("global", "user", "site") else 0
        values = value.strip().strip("'\"").split()
        if name and values and rank >= found.get(name, (-1, []))[0]:
            found[name] = (rank, values)
    return {name: values for name, (_, values) in found.items()}


def uv_source_args(config: dict[str, list[str]]) -> list[str]:
    """pip's package sources and constraints, spelled as uv flags."""
    args = ["--index-strategy", "unsafe-best-match"]
    for url in config.get("index-url", []):
        args += ["--default-index", url]
    for url in config.get("extra-index-url", []):
        args += ["--index", url]
    for place in config.get("find-links", []):
        args += ["--find-links", place]
    for path in config.get("constraint", []):
        args += ["--constraint", path]
    return args


def torch_build() -> str:
    build = os.environ.get("TORCH_BUILD", "auto")
    if build not in ("auto", "cpu", "cuda"):
        sys.exit(f"install: TORCH_BUILD={build!r}; use auto, cpu or cuda")
    if build != "auto":
        return build
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "cpu"
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return "cuda" if listed.returncode == 0 and "GPU" in listed.stdout else "cpu"


def find_uv(python: str) -> str | None:
    """A uv to use: on PATH, else uv==UV_VERSION installed into the venv by pip; None when neither."""
    wanted = os.environ.get("INSTALLER", "auto")
    if wanted not in ("auto", "uv", "pip"):
        sys.exit(f"install: INSTALLER={wanted!r}; use auto, uv or pip")
    if wanted == "pip":
        return None
    system = shutil.which("uv")
    if system:
        return system
    local = Path(python).parent / "uv"
    if not local.exists():
        done = subprocess.run([python, "-m", "pip", "install", "-q", f"uv=={UV_VERSION}"])
        if done.returncode != 0:
            if wanted == "uv":
                sys.exit(f"install: INSTALLER=uv but uv=={UV_VERSION} could not be installed")
            print(f"install: uv=={UV_VERSION} could not be installed; installing with pip instead", flush=True)
            return None
    return str(local)


def install_command(python: str, uv: str | None) -> tuple[list[str], dict[str, str]]:
    """The install command (uv with pip's sources, else pip) and its environment."""
    env = dict(os.environ)
    if not uv:
        return [python, "-m", "pip", "install", "-q"], env
    config = pip_config(python)
    if config.get("cert"):
        env.setdefault("SSL_CERT_FILE", config["cert"][0])
    env.setdefault("UV_LINK_MODE", "copy")
    return [uv, "pip", "install", "--quiet", "--python", python] + uv_source_args(config), env


def install_extra(requirements: str) -> None:
    """``install.py --extra FILE``: only the pins of FILE, into an installed venv (``make docs``)."""
    python = sys.executable
    install, env = install_command(python, find_uv(python))
    run(install + ["-r", requirements], env)


def main() -> None:
    if sys.argv[1:2] == ["--extra"] and len(sys.argv) == 3:
        install_extra(sys.argv[2])
        return
    python = sys.executable
    build = torch_build()
    uv = find_uv(python)
    torch_spec = f"torch=={TORCH_VERSION}+cpu" if build == "cpu" else f"torch=={TORCH_VERSION}"
    install, env = install_command(python, uv)
    if uv:
        base = [uv, "pip", "install", "--quiet", "--python", python]
        # the CUDA build is PyPI's own torch: pip's local find-links hold the CPU wheel only
        install_torch = base + ["--default-index", PYPI] if build == "cuda" else install
        version = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout.strip()
    else:
        # --isolated: pip ignores its configured find-links (the CPU wheel) and takes PyPI's build
        install_torch = install + ["--isolated"] if build == "cuda" else install
        version = "pip"
    print(f"install: {version}; torch build {build} ({torch_spec})", flush=True)
    start = time.perf_counter()
    try:
        run(install_torch + [torch_spec], env)
    except subprocess.CalledProcessError:
        hint = "pip's configured find-links and indexes (pip config list)" if build == "cpu" else "PyPI"
        sys.exit(
            f"install: {torch_spec} could not be installed from {hint}; "
            "TORCH_BUILD=cpu needs a folder or index holding the CPU wheel, TORCH_BUILD=cuda takes PyPI's build"
        )
    run(install + ["-r", str(REQ / "base.txt"), "-r", str(REQ / "dev.txt")], env)
    run(install + ["--no-deps", "-r", str(REQ / "nodeps.txt")], env)
    if uv:
        # uv takes a version's files from the first index that lists it; pip takes the most
        # specific platform wheel. For soundfile that is the difference between its bundled
        # libsndfile (the FLAC bytes of the embedded corpus, audio hashes, results) and whatever
        # libsndfile the system has: take pip's choice, the same wheel a pip install gets.
        sf_pin = next(ln.strip() for ln in (REQ / "base.txt").read_text().splitlines() if ln.startswith("soundfile=="))
        run(
            [python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", "--only-binary=:all:", sf_pin], env
        )
    bundled = subprocess.run([python, "-c", "import _soundfile_data"], capture_output=True).returncode == 0
    if not bundled:
        sys.exit(
            "install: soundfile's wheel without its bundled libsndfile was installed; audio bytes would depend on the system's"
        )
    # torchaudio's wheel is a CUDA build: without its compiled extensions it imports on CPU torch.
    for lib in Path(python).parent.parent.glob("lib/python3*/site-packages/torchaudio/lib/*.so"):
        lib.unlink()
    run(install + ["--no-deps", "--no-build-isolation", "-e", str(ROOT)], env)
    got = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"], check=True, capture_output=True, text=True
    ).stdout.strip()
    wrong = got != f"{TORCH_VERSION}+cpu" if build == "cpu" else got.endswith("+cpu")
    if wrong:
        sys.exit(f"install: torch {got} installed; TORCH_BUILD={build} wants {torch_spec}")
    warm = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    imports = "; ".join(f"import {m}" for m in WARM_IMPORTS)
    if subprocess.run([python, "-c", imports], env=warm, capture_output=True, text=True).returncode != 0:
        failed = [
            m for m in WARM_IMPORTS if subprocess.run([python, "-c", f"import {m}"], capture_output=True).returncode
        ]
        sys.exit(f"install: installed, but {', '.join(failed) or 'a module'} cannot be imported")
    print(f"install: done in {time.perf_counter() - start:.0f} s with {version}; torch {got}", flush=True)


if __name__ == "__main__":
    main()
