#!/bin/sh
# The device check (tests/bench/device_check.py) with the GPU's own facts first, for a machine lent
# with a GPU; it runs anywhere else too and says what it lacks. Arguments go to device_check.py
# (--quick, --no-browser, --json PATH). Usage: sh tests/bench/device_check.sh --quick
cd "$(dirname "$0")/../.." || exit 1
echo "== nvidia-smi"
if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi 2>&1 | head -15; else echo "no nvidia-smi"; fi
echo "== vulkaninfo --summary"
if command -v vulkaninfo >/dev/null 2>&1; then
    vulkaninfo --summary 2>&1 | grep -E "deviceName|driverName|apiVersion" | head -8
else
    echo "no vulkaninfo"
fi
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
    for candidate in .venv/bin/python python3 python; do
        if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import numpy" >/dev/null 2>&1; then
            PYTHON="$candidate"
            break
        fi
    done
fi
if [ -z "$PYTHON" ]; then
    echo "no Python with numpy here: the device check cannot run"
    exit 1
fi
echo "== $PYTHON: $("$PYTHON" -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)')"
"$PYTHON" -c "import wgpu; print('wgpu-py', wgpu.__version__)" 2>&1 | tail -1
echo "== tests/bench/device_check.py $*"
exec "$PYTHON" tests/bench/device_check.py "$@"
