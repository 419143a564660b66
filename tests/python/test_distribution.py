"""The engine's distribution: its name, its license metadata, and a clean build.

"topos" on PyPI is another project, so the distribution is topos-autodiff while the
package it installs is still imported as ``topos``. The license is declared the way
current packaging reads it (an SPDX expression and the license file), which the build
backend accepts without a deprecation warning.
"""

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_is_topos_autodiff_with_an_mit_license_and_builds_without_warnings(tmp_path):
    # Build from a copy so that the checkout gets no build/ or egg-info folders.
    shutil.copytree(
        ROOT / "py", tmp_path / "py", symlinks=True, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    shutil.copytree(ROOT / "kernels", tmp_path / "kernels")
    shutil.copy(ROOT / "LICENSE", tmp_path / "LICENSE")  # py/LICENSE links to it
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--verbose",
            "-w",
            str(tmp_path / "dist"),
            str(tmp_path / "py"),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    warnings = [
        line
        for line in (build.stdout + build.stderr).splitlines()
        if "Deprecat" in line or "BuildBackendWarning" in line
    ]
    assert warnings == []

    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith("topos_autodiff-")
    with zipfile.ZipFile(wheel) as archive:
        info = next(name.split("/")[0] for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        assert metadata["Name"] == "topos-autodiff"
        assert metadata["License-Expression"] == "MIT"
        assert metadata["License-File"] == "LICENSE"
        assert archive.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
        assert b"MIT License" in (ROOT / "LICENSE").read_bytes()
        # The import name is topos: every module of the wheel lies under topos/.
        modules = [name for name in archive.namelist() if name.endswith(".py")]
        assert modules and all(name.startswith("topos/") for name in modules)
