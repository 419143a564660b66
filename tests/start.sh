#!/usr/bin/env bash
# `npm start`: set up, then run the gallery examples and print their readings.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/py/scripts/setup-venv.sh"
for example in "$root"/docs/examples/*.py; do
  echo "== $(basename "$example")"
  "$root/.venv/bin/python" "$example"
done
