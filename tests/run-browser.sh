#!/usr/bin/env bash
# The browser suite: builds the playground, serves the build under a sub-path of a local port
# (as a static host serves a project page: http://127.0.0.1:5199/deploy/topos/), and runs
# tests/browser/*.test.mjs (node:test + playwright-core driving Debian's /usr/bin/chromium).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash web/scripts/setup.sh
# The oracles the tests compare with (CPython's topos, the docs builder's --check) need the full environment.
bash py/scripts/setup-venv.sh test
# The JupyterLab extension, linked into .venv's JupyterLab (tests/browser/jupyterlab.test.mjs).
bash web/scripts/build-labextension.sh
npx tsc -p tsconfig.json
npx vite build --logLevel warn

port="${PLAYGROUND_TEST_PORT:-5199}"
base="/deploy/topos/"
# curl succeeds when anything answers there, whatever the status.
if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
  echo "run-browser: port $port already serves something (a stale server?); set PLAYGROUND_TEST_PORT or stop it" >&2
  exit 1
fi
log="/tmp/topos-static-$port.log"
node tests/browser/static-server.mjs dist --base "$base" --port "$port" > "$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port$base" > /dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done

export PLAYGROUND_URL="http://127.0.0.1:$port$base"
# Test files named on the command line run alone; without any, every file of tests/browser/ runs.
targets=(tests/browser/)
for argument in "$@"; do [[ "$argument" == -* ]] || targets=(); done
# One test file at a time: some tests race a page's clock (an older run overtaken by an edit, a 3 s
# time limit), and two files at once on two cores have not yet been shown to pass every time.
# BROWSER_TEST_CONCURRENCY=2 runs two files at once (each is its own node process and Chromium).
status=0
node --test --test-concurrency="${BROWSER_TEST_CONCURRENCY:-1}" --test-reporter=spec "${targets[@]}" "$@" || status=$?
# The server names every request it could not answer (above all, any outside the sub-path).
if grep -q "static-server: 404" "$log"; then
  echo "run-browser: requests the site could not answer:" >&2
  grep "static-server: 404" "$log" | sort | uniq -c >&2
fi
exit "$status"
