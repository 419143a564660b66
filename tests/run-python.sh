#!/usr/bin/env bash
# The Python suites: engine, compiler, oracles (PyTorch, XLA), kernels (wgpu-py on lavapipe).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/py/scripts/setup-venv.sh"
cd "$root"
exec "$root/.venv/bin/python" -m pytest tests/python -q -n 2 "$@"
