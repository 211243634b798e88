"""The dispatch-override check: the numerically sensitive tests (marker ``numerics``) rerun in a
subprocess under another CPU dispatch on this machine, so a test that only passes with one BLAS
kernel or ISA path fails here rather than on a user's machine (docs/reproducibility.md).

Another dispatch means: OpenBLAS's kernel toggled (``OPENBLAS_CORETYPE`` unset when this
process has it, ``Haswell`` when not: on an AVX-512 CPU OpenBLAS otherwise picks SkylakeX) and
torch's ATen kernels at another capability (``ATEN_CPU_CAPABILITY=avx2``, or ``default`` when
already avx2). onnxruntime offers no such switch: its MLAS library picks kernels from CPUID at
run time (no environment variable or session option selects the ISA), so its part of the check
is the eager-against-onnxruntime tolerance under the other torch and BLAS dispatch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_reference_run import SCORE_TOL

TESTS = Path(__file__).parent
PROBE = (
    "import json, numpy, torch; from threadpoolctl import threadpool_info; "
    "print(json.dumps({'blas': [i.get('architecture') for i in threadpool_info() if i['internal_api'] == 'openblas'], "
    "'aten': torch.backends.cpu.get_cpu_capability()}))"
)


def numerics_files() -> list[Path]:
    """Test files that mark tests ``numerics`` (collecting only these keeps the check quick)."""
    return sorted(
        p for p in TESTS.glob("test_*.py") if p.name != Path(__file__).name and "mark.numerics" in p.read_text()
    )


def other_dispatch(env: dict[str, str]) -> dict[str, str]:
    """``env`` with OpenBLAS's kernel and torch's capability switched (see module docs)."""
    out = dict(env)
    if out.get("OPENBLAS_CORETYPE"):
        del out["OPENBLAS_CORETYPE"]
    else:
        out["OPENBLAS_CORETYPE"] = "Haswell"
    out["ATEN_CPU_CAPABILITY"] = "default" if out.get("ATEN_CPU_CAPABILITY", "").lower() == "avx2" else "avx2"
    return out


def dispatch_of(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_other_dispatch_toggles_openblas_and_torch() -> None:
    env = other_dispatch({"OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2", "X": "1"})
    assert env == {"ATEN_CPU_CAPABILITY": "default", "X": "1"}
    assert other_dispatch({})["OPENBLAS_CORETYPE"] == "Haswell"
    assert other_dispatch({})["ATEN_CPU_CAPABILITY"] == "avx2"


def test_numerics_pass_under_another_cpu_dispatch(tmp_path: Path) -> None:
    here = dict(os.environ)
    env = other_dispatch(here)
    env["INTERBIAS_NUMERICS_REPORT"] = str(tmp_path / "numerics.json")
    mine, theirs = dispatch_of(here), dispatch_of(env)
    # the override took effect where the CPU has more than one path (no AVX-512: one BLAS kernel)
    if mine["aten"] == "AVX512":
        assert theirs["aten"] == "AVX2", theirs
    if "SkylakeX" in (mine["blas"] or []) + (theirs["blas"] or []):
        assert mine["blas"] != theirs["blas"], (mine, theirs)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            "-m",
            "numerics and not slow and not gpu",
        ]
        + [str(p) for p in numerics_files()],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=TESTS.parent,
    )
    assert done.returncode == 0, f"under {theirs} (here {mine}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert " passed" in done.stdout and "deselected" in done.stdout
    report = json.loads((tmp_path / "numerics.json").read_text())
    assert report["max_score_diff"] <= SCORE_TOL
    print(f"dispatch {theirs} against the reference run: {report}")
