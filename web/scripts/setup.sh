#!/usr/bin/env bash
# Set-up for the playground, idempotent and cheap to re-run:
#   1. npm packages (npm ci when package-lock.json changed since the last install),
#   2. the Python environment in .venv (py/scripts/setup-venv.sh),
#   3. Pyodide's core and its numpy/micropip/packaging wheels under public/pyodide/, verified against the lock,
#   4. the topos wheel built from py/ into public/pyodide/ (rebuilt when a file under py/topos changed).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

lock_stamp="node_modules/.topos-package-lock.sha256"
want_lock="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$lock_stamp" ] || [ "$(cat "$lock_stamp")" != "$want_lock" ]; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want_lock" > "$lock_stamp"
fi

bash py/scripts/setup-venv.sh
python="$root/.venv/bin/python"
"$python" web/scripts/fetch_pyodide_assets.py

# The topos wheel: the hash of every file that goes into it decides whether to rebuild.
wheel_stamp="public/pyodide/topos-wheel.json"
want_wheel="$(cd py && find -L topos pyproject.toml -type f \( -name '*.py' -o -name '*.wgsl' -o -name '*.toml' \) -print0 \
  | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if [ ! -f "$wheel_stamp" ] || ! grep -q "\"sources\": \"$want_wheel\"" "$wheel_stamp"; then
  echo "setup: building the topos wheel"
  rm -f public/pyodide/topos-*.whl
  out="$(mktemp -d)"
  # Without build isolation when the environment has setuptools (no network needed), else the usual way.
  if ! "$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$out" ./py 2>/dev/null; then
    "$python" -m pip wheel --quiet --no-deps -w "$out" ./py
  fi
  wheel="$(basename "$(ls "$out"/topos-*.whl)")"
  mv "$out/$wheel" public/pyodide/
  rm -rf "$out" py/build
  sha="$(sha256sum "public/pyodide/$wheel" | cut -d' ' -f1)"
  printf '{"file": "%s", "sha256": "%s", "sources": "%s"}\n' "$wheel" "$sha" "$want_wheel" > "$wheel_stamp"
fi
