#!/usr/bin/env bash
# The browser suite: builds the playground, serves the build on a local port, and runs
# tests/browser/*.test.mjs (node:test + playwright-core driving Debian's /usr/bin/chromium).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash web/scripts/setup.sh
npx tsc -p tsconfig.json
npx vite build --logLevel warn

port="${PLAYGROUND_TEST_PORT:-5199}"
if curl -sf "http://127.0.0.1:$port/" > /dev/null 2>&1; then
  echo "run-browser: port $port already serves something (a stale preview?); set PLAYGROUND_TEST_PORT or stop it" >&2
  exit 1
fi
# vite's own script, not npx: $! is then the server itself, and the trap stops it rather than a wrapper.
node node_modules/vite/bin/vite.js preview --host 127.0.0.1 --port "$port" --strictPort > "/tmp/topos-preview-$port.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/" > /dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "/tmp/topos-preview-$port.log" >&2; exit 1; }
  sleep 0.1
done

export PLAYGROUND_URL="http://127.0.0.1:$port/"
node --test --test-concurrency=1 --test-reporter=spec tests/browser/ "$@"
