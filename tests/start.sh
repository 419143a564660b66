#!/usr/bin/env bash
# `npm start`: set up what serving needs (idempotent; no test oracles), build the site, and
# serve it on http://127.0.0.1:5173/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash web/scripts/setup.sh
npx vite build --logLevel warn
echo
echo "topos playground: http://127.0.0.1:5173/"
echo "the docs, every block live: http://127.0.0.1:5173/docs/index.html"
echo
exec npx vite preview --host 127.0.0.1 --port 5173 --strictPort
