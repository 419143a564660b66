#!/usr/bin/env bash
# Builds the JupyterLab extension that draws topos's cards (web/jupyter) into py/topos/labextension/,
# the prebuilt extension that the topos-autodiff wheel ships (py/pyproject.toml's data-files), and
# links it into .venv's JupyterLab, as `jupyter labextension develop` would for the editable install.
#
#   1. Vite bundles web/jupyter/src (the playground's card drawing, uPlot and dagre inside) into web/jupyter/lib/;
#   2. @jupyterlab/builder (webpack) makes that a prebuilt extension that shares JupyterLab's own packages.
#
# It needs the test environment (py/scripts/setup-venv.sh test): the builder reads which packages
# JupyterLab shares from the installed jupyterlab. Nothing is rebuilt when nothing it is built from
# changed. To ship the extension in a release: run this, then build the wheel (pip wheel ./py).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
python="$root/.venv/bin/python"
out="py/topos/labextension"
link="$root/.venv/share/jupyter/labextensions/topos-cards"

# `jupyter labextension build` would run the builder the same way, after installing web/jupyter's own
# node_modules with jlpm; the builder and the packages it shares are in the repository's node_modules.
core="$("$python" -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')"
stamp="$out/.built-from"
want="$(find web/jupyter/src web/jupyter/package.json web/jupyter/install.json web/jupyter/vite.config.ts \
  web/src/cards web/src/panes web/protocol.ts package-lock.json web/scripts/build-labextension.sh -type f -print0 \
  | sort -z | xargs -0 sha256sum | cat - "$core/package.json" | sha256sum | cut -d' ' -f1)"
# The stamp alone is not enough: uninstalling the editable install removes the files it installed, through the link.
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -f "$out/package.json" ]; then
  echo "build-labextension: building the JupyterLab extension into $out"
  rm -rf "$out"
  npx vite build --config web/jupyter/vite.config.ts --logLevel warn
  # webpack's report is long: shown only when the build fails.
  log="$(mktemp)"
  node node_modules/@jupyterlab/builder/lib/build-labextension.js --core-path "$core" web/jupyter > "$log" 2>&1 \
    || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
  cp web/jupyter/install.json "$out/"
  echo "$want" > "$stamp"
fi

# The editable install may have copied an older build there (its data-files): a link follows every rebuild.
if [ "$(readlink "$link" 2>/dev/null)" != "$root/$out" ]; then
  mkdir -p "$(dirname "$link")"
  rm -rf "$link"
  ln -s "$root/$out" "$link"
fi
