"""The engine's distribution: its name, its license metadata, and a clean build.

"topos" on PyPI is another project, so the distribution is topos-autodiff while the
package it installs is still imported as ``topos``. The license is declared the way
current packaging reads it (an SPDX expression and the license file), which the build
backend accepts without a deprecation warning.
"""

import email
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(tmp_path):
    """Build the wheel from a copy of py/ (so that the checkout gets no build/ or egg-info folders)."""
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
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return build, wheel


def test_the_wheel_is_topos_autodiff_with_an_mit_license_and_builds_without_warnings(tmp_path):
    build, wheel = build_wheel(tmp_path)
    warnings = [
        line
        for line in (build.stdout + build.stderr).splitlines()
        if "Deprecat" in line or "BuildBackendWarning" in line
    ]
    assert warnings == []

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


def test_a_wheel_built_after_the_labextension_ships_it_where_jupyterlab_finds_it(tmp_path):
    # The prebuilt JupyterLab extension that draws the cards (web/jupyter); a no-op when it is built already.
    extension_build = subprocess.run(
        ["bash", str(ROOT / "web/scripts/build-labextension.sh")], capture_output=True, text=True
    )
    assert extension_build.returncode == 0, extension_build.stdout + extension_build.stderr
    _, wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (data,) = {
            name.split("/")[0]
            for name in names
            if name.endswith(".data/data/share/jupyter/labextensions/topos-cards/package.json")
        }
        extension = f"{data}/data/share/jupyter/labextensions/topos-cards"
        package = json.loads(archive.read(f"{extension}/package.json"))
        assert package["name"] == "topos-cards"
        assert package["jupyterlab"]["_build"]["mimeExtension"] == "./mimeExtension"
        # The entry JupyterLab loads first is there, and the renderer of the cards' MIME type in one of the chunks.
        entry = package["jupyterlab"]["_build"]["load"]
        assert entry.startswith("static/remoteEntry.") and f"{extension}/{entry}" in names
        install = json.loads(archive.read(f"{extension}/install.json"))
        assert install["packageName"] == "topos-autodiff"
        chunks = [archive.read(name) for name in names if name.startswith(f"{extension}/static/")]
        assert any(b"application/vnd.topos.card+json" in chunk for chunk in chunks)
