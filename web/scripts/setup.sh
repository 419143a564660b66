#!/usr/bin/env bash
# Set-up for the playground, idempotent and cheap to re-run; what building and serving the site
# needs, and no more (the test suites add their oracles themselves: py/scripts/setup-venv.sh test):
#   1. npm packages (npm ci when package-lock.json changed since the last install),
#   2. the Python environment in .venv with pip and the build tools (py/scripts/setup-venv.sh serve),
#   3. Pyodide's core and its numpy/micropip/packaging wheels under public/pyodide/, verified against the lock,
#   4. the topos wheel built from py/ into public/pyodide/ (rebuilt when a file under py/topos changed),
#      with bytecode for Pyodide's Python added (web/scripts/compile_wheel.mjs).
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

bash py/scripts/setup-venv.sh serve
python="$root/.venv/bin/python"
"$python" web/scripts/fetch_pyodide_assets.py

# The topos wheel: the hash of every file that goes into it decides whether to rebuild
# (its modules, kernels, the data sets of topos.datasets and their README).
wheel_stamp="public/pyodide/topos-wheel.json"
# The script that adds the bytecode counts too.
want_wheel="$({ (cd py && find -L topos pyproject.toml LICENSE -type f \( -name '*.py' -o -name '*.wgsl' -o -name '*.npz' -o -name '*.md' -o -name '*.toml' -o -name LICENSE \) -print0 \
  | sort -z | xargs -0 sha256sum); sha256sum web/scripts/compile_wheel.mjs; } | sha256sum | cut -d' ' -f1)"
if [ ! -f "$wheel_stamp" ] || ! grep -q "\"sources\": \"$want_wheel\"" "$wheel_stamp"; then
  echo "setup: building the topos wheel"
  # The distribution is topos-autodiff (py/pyproject.toml); a wheel's file name spells it topos_autodiff.
  rm -f public/pyodide/topos_autodiff-*.whl public/pyodide/topos-*.whl
  out="$(mktemp -d)"
  # From a copy of py/ without the JupyterLab extension (topos/labextension, where it was built): the page has no use for it.
  mkdir "$out/py"
  cp -RL py/pyproject.toml py/README.md py/LICENSE py/topos "$out/py/"
  rm -rf "$out/py/topos/labextension"
  # Without build isolation: .venv has the build tools, so no network is needed.
  "$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$out" "$out/py"
  wheel="$(basename "$(ls "$out"/topos_autodiff-*.whl)")"
  mv "$out/$wheel" public/pyodide/
  rm -rf "$out" py/build
  # Bytecode for the page's Python, compiled by Pyodide itself: the page imports topos without compiling it.
  node web/scripts/compile_wheel.mjs "public/pyodide/$wheel"
  sha="$(sha256sum "public/pyodide/$wheel" | cut -d' ' -f1)"
  printf '{"file": "%s", "sha256": "%s", "sources": "%s"}\n' "$wheel" "$sha" "$want_wheel" > "$wheel_stamp"
fi
