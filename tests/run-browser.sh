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
npx vite preview --host 127.0.0.1 --port "$port" --strictPort > /tmp/topos-preview-$port.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/" > /dev/null && break
  sleep 0.1
done

export PLAYGROUND_URL="http://127.0.0.1:$port/"
node --test --test-concurrency=1 --test-reporter=spec tests/browser/ "$@"
