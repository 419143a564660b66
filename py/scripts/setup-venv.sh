#!/usr/bin/env bash
# Creates (or refreshes) the repository's Python environment in .venv:
# the engine installed editable with its dev extra (pytest, hypothesis, torch,
# safetensors, jax, wgpu). Re-running is cheap: it reinstalls only when
# py/pyproject.toml changed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.venv"
python="${PYTHON:-python3}"
stamp="$venv/.topos-installed"
want="$(sha256sum "$root/py/pyproject.toml" | cut -d' ' -f1)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  "$python" -m venv "$venv"
fi
extra=()
# The CPU build of torch lies on this workplace's disk; elsewhere pip takes it from PyPI.
[ -d /opt/wheels ] && extra+=(--find-links /opt/wheels)
echo "setup: installing topos[dev] into $venv (first time takes a few minutes)"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "${extra[@]}" -e "$root/py[dev]"
echo "$want" > "$stamp"
