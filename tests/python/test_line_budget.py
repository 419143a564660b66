"""Files that read in one sitting (tinygrad's line budget).

No Python file in ``py/topos`` may pass 500 lines and no TypeScript file under ``web/`` may pass
400. Generated and built output is left out by asking git for the files it tracks or would track
(ignored paths such as ``web/generated/`` and ``web/docs/`` are not the source). A file may stay
over its budget only while it is named below with the reason; an exception for a file that is
back under budget fails too, so the list cannot outlive the reason.
"""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PYTHON_BUDGET = 500
TYPESCRIPT_BUDGET = 400

# Each exception: the path from the repository root, and why it may be longer for now.
EXCEPTIONS = {}


def source_files():
    """Every file git tracks or would track: built and generated output is ignored, so left out."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [path for path in listed if (ROOT / path).is_file()]


def budget_of(path):
    if path.startswith("py/topos/") and path.endswith(".py"):
        return PYTHON_BUDGET
    if path.startswith("web/") and path.endswith((".ts", ".mts", ".tsx")) and "/node_modules/" not in path:
        return TYPESCRIPT_BUDGET
    return None


def line_count(path):
    with open(ROOT / path, encoding="utf-8") as file:
        return sum(1 for _ in file)


def measured():
    """(path, lines, budget) for every file a budget applies to."""
    found = []
    for path in source_files():
        budget = budget_of(path)
        if budget is not None:
            found.append((path, line_count(path), budget))
    return found


def test_every_file_is_within_its_line_budget_or_named_with_a_reason():
    over = [
        f"{path}: {lines} lines, budget {budget}"
        for path, lines, budget in measured()
        if lines > budget and path not in EXCEPTIONS
    ]
    assert not over, (
        "these files pass their line budget; split them sensibly "
        "(or, if there is a real reason, name them in EXCEPTIONS with it):\n" + "\n".join(over)
    )


def test_no_exception_outlives_its_reason():
    sizes = {path: (lines, budget) for path, lines, budget in measured()}
    stale = []
    for path, reason in EXCEPTIONS.items():
        if path not in sizes:
            stale.append(f"{path}: no such source file any more ({reason})")
        elif sizes[path][0] <= sizes[path][1]:
            lines, budget = sizes[path]
            stale.append(f"{path}: {lines} lines is within its budget of {budget}; remove the exception")
    assert not stale, "exceptions in EXCEPTIONS that no longer apply:\n" + "\n".join(stale)


def test_every_exception_gives_a_reason():
    assert all(reason.strip() for reason in EXCEPTIONS.values())


def test_the_budget_sees_the_package_and_the_page():
    # A listing that found nothing would pass the two tests above without checking anything.
    budgets = {budget for _, _, budget in measured()}
    assert budgets == {PYTHON_BUDGET, TYPESCRIPT_BUDGET}
    assert any(path == "py/topos/ops/registry.py" for path, _, _ in measured())
    assert any(path == "web/protocol.ts" for path, _, _ in measured())
