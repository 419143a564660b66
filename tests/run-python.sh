#!/usr/bin/env bash
# The Python suites: engine, compiler, oracles (PyTorch, XLA), kernels (wgpu-py on lavapipe).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/py/scripts/setup-venv.sh" test
cd "$root"
# pytest -n 2 already uses both cores; one BLAS thread per worker keeps them from fighting.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$root/.venv/bin/python" -m pytest tests/python -q -n 2 "$@"
