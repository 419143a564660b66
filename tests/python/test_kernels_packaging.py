"""The WGSL kernels ship with the Python package.

The canonical files are the repository's kernels/ (the playground serves them);
py/topos/kernels is a symbolic link to them, so an editable install reads them in
place and a built wheel holds copies (setuptools follows the link).
"""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from topos.webgpu import sources

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_reads_the_repository_kernels():
    link = ROOT / "py" / "topos" / "kernels"
    assert link.is_symlink() and link.resolve() == (ROOT / "kernels").resolve()
    assert Path(sources.kernel_directory()).resolve() == (ROOT / "kernels").resolve()
    # Every file is a kernel family except common.wgsl, the shared helpers.
    assert set(sources.kernel_names()) == {p.stem for p in (ROOT / "kernels").glob("*.wgsl")} - {"common"}


def test_a_built_wheel_holds_every_kernel_file(tmp_path):
    # Build from a copy so that the checkout gets no build/ or egg-info folders.
    shutil.copytree(
        ROOT / "py", tmp_path / "py", symlinks=True, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    shutil.copytree(ROOT / "kernels", tmp_path / "kernels")
    shutil.copy(ROOT / "LICENSE", tmp_path / "LICENSE")  # py/LICENSE links to it
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(tmp_path / "dist"),
            str(tmp_path / "py"),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("topos_autodiff-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for kernel in (ROOT / "kernels").glob("*.wgsl"):
            assert archive.read(f"topos/kernels/{kernel.name}") == kernel.read_bytes(), kernel.name
        assert {"topos/webgpu/runner.py", "topos/compiler/wgsl/launch.py", "topos/compiler/kernels.py"} <= names
