#!/usr/bin/env bash
# `npm run build`: set up (idempotent), build the site into dist/ (or the folder given with
# --outDir, passed on to Vite with any other option), then print its transfer sizes.
# TOPOS_BUILD_ID names the build (the update prompt's "new version"); by default the
# commit, marked "+changes" when the work tree differs from it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash web/scripts/setup.sh

if [ -z "${TOPOS_BUILD_ID:-}" ]; then
  TOPOS_BUILD_ID="$(git describe --always --dirty=+changes 2>/dev/null || echo local)"
fi
export TOPOS_BUILD_ID

out="dist"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --outDir) out="${args[$((i + 1))]}" ;;
    --outDir=*) out="${args[$i]#--outDir=}" ;;
  esac
done

npx vite build --logLevel warn "$@"
node web/scripts/report-size.mjs "$out"
