#!/usr/bin/env bash
# The Python suites: engine, compiler, oracles (PyTorch, XLA), kernels (wgpu-py on lavapipe).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/py/scripts/setup-venv.sh" test
# The npm packages, and the JupyterLab extension that the wheel ships (test_distribution.py builds a wheel with it).
bash "$root/web/scripts/setup.sh"
bash "$root/web/scripts/build-labextension.sh"
cd "$root"
# pytest -n 2 already uses both cores; one BLAS thread per worker keeps them from fighting.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$root/.venv/bin/python" -m pytest tests/python -q -n 2 "$@"
