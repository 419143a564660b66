#!/usr/bin/env bash
# Creates (or refreshes) the repository's Python environment in .venv, in two stages:
#
#   setup-venv.sh serve   what building and serving the site needs (npm start): pip, and
#                         setuptools to build the topos wheel (about 25 MB). The engine
#                         itself runs in the browser, so nothing else.
#   setup-venv.sh test    the above, and the engine installed editable with its dev extra:
#                         pytest, hypothesis and the oracles torch, safetensors, jax, wgpu
#                         (npm test; about 1.5 GB).
#
# Re-running is cheap: a stage reinstalls only when what it installs from changed (this
# script, or py/pyproject.toml for the test stage), and `serve` after `test` installs nothing.
set -euo pipefail
stage="${1:-}"
case "$stage" in
  serve | test) ;;
  *) echo "usage: py/scripts/setup-venv.sh serve|test" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.venv"
python="${PYTHON:-python3}"
# The build tool: setuptools 77 is the first to read the SPDX `license` of py/pyproject.toml.
build_tools=("setuptools>=77")

digest() { cat "$@" | sha256sum | cut -d' ' -f1; }
# Each stage's stamp holds the hash of what it was installed from.
serve_stamp="$venv/.topos-serve-installed"
serve_want="$(digest "$0")"
test_stamp="$venv/.topos-test-installed"
test_want="$(digest "$0" "$root/py/pyproject.toml")"
current() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ] && [ -x "$venv/bin/python" ]; }

pip_options=()
# The CPU build of torch lies on this workplace's disk; elsewhere pip takes it from PyPI.
[ -d /opt/wheels ] && pip_options+=(--find-links /opt/wheels)

if ! current "$serve_stamp" "$serve_want"; then
  if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv"
    "$python" -m venv "$venv"
  fi
  echo "setup: installing pip and setuptools into $venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "${pip_options[@]}" "${build_tools[@]}"
  echo "$serve_want" > "$serve_stamp"
fi

if [ "$stage" = test ] && ! current "$test_stamp" "$test_want"; then
  # The engine's distribution was called "topos" before (on PyPI that name is another project's):
  # an editable install of this checkout under the old name goes.
  if "$venv/bin/python" -m pip show topos 2>/dev/null | grep -qx "Editable project location: $root/py"; then
    "$venv/bin/python" -m pip uninstall --quiet --yes topos
  fi
  echo "setup: installing topos-autodiff[dev] into $venv (the test oracles: the first time takes a few minutes)"
  "$venv/bin/python" -m pip install --quiet "${pip_options[@]}" -e "$root/py[dev]"
  echo "$test_want" > "$test_stamp"
fi
