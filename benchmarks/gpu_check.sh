#!/usr/bin/env bash
# CAM++ on the GPU: throughput (× real time) and CPU/GPU agreement (cosine distance ≤ 1e-4).
# Sized to finish in under 5 minutes (60 short utterances; a 290 s hard limit).
# Usage (fresh checkout): make gpu-check, or make venv then
#   benchmarks/gpu_check.sh [--device cuda:0] [--n 60] [--batch 32]
# Exit: 0 PASS, 1 FAIL (agreement), 2 no CUDA device (nothing run), 124 over the time limit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
py="${PYTHON:-}"
if [[ -z "$py" ]]; then
    if [[ -x "$root/.venv/bin/python" ]]; then py="$root/.venv/bin/python"; else py="python3"; fi
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export INTERBIAS_CACHE="${INTERBIAS_CACHE:-$root/.cache/interbias}"
exec timeout 290 "$py" "$here/gpu_check.py" "$@"
