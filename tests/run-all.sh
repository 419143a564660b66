#!/usr/bin/env bash
# Every test suite, each doing its own set-up. `npm test` runs this.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/tests/run-python.sh"
bash "$root/tests/run-browser.sh"
