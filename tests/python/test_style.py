"""Every Python file of the repository passes ruff's linter and formatter, configured in py/pyproject.toml."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG = os.path.join(ROOT, "py", "pyproject.toml")
PATHS = ["py", "tests", "docs"]
RUFF = os.path.join(os.path.dirname(sys.executable), "ruff")


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command):
    result = subprocess.run(
        [RUFF, *command, "--config", CONFIG, "--no-cache", *PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        f"ruff {' '.join(command)} (fix with: ruff {' '.join(command[:1])} --config py/pyproject.toml):\n{result.stdout}{result.stderr}"
    )
