"""Running one docs code block as a program, the way a reader would run it.

Each block runs as a fresh module named ``__main__`` from a file called
``main.py`` (the playground's file name, so that a shape error's "recorded at
main.py:7" reads the same in the docs and in an embed), with a fresh, empty
temporary directory as its working directory (a checkpoint it writes lands
there and is gone afterwards). What it prints, on stdout or stderr, and every
``topos.show`` card it makes are collected in one list, in the order they
happened. The output items have the playground's shape: ``{"kind": "print",
"text": ...}`` for printed text and ``card.to_json()`` for a card.

Process-wide state that a block may change and that would leak into the next
block is put back afterwards: numpy's print options, the warning filters,
``sys.modules["__main__"]``, the working directory, and topos's two registries
(primitives and backends). The last matters for self-containment: a block that
registers a primitive must still run when the blocks before it did not, and the
one after it must not find the primitive there.
"""

import contextlib
import json
import linecache
import os
import subprocess
import sys
import tempfile
import traceback
import types
import warnings
from dataclasses import dataclass

from topos import show
from topos.playground import OutputWriter, ProcessState, output_json, output_text

FILENAME = "main.py"
#: This checkout's engine: a block's own process imports it, not another copy installed editable.
ENGINE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "py")


@dataclass(frozen=True)
class BlockRun:
    items: list  # output items, JSON-ready, in order
    text: str  # the same output as plain text: printed text, and each card's text on its own lines
    error: str = None  # the traceback, when the block raised


def run_block(code):
    """Run ``code`` as described above; returns a ``BlockRun``."""
    collected = []
    module = types.ModuleType("__main__")
    module.__file__ = FILENAME
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    previous_main = sys.modules.get("__main__")
    previous_directory = os.getcwd()
    # Print options and the primitive and backend registries, put back after the block.
    state = ProcessState()
    error = None
    with tempfile.TemporaryDirectory(prefix="topos-docs-") as directory:
        os.chdir(directory)
        sys.modules["__main__"] = module  # dataclasses and pickle look a class's module up here
        writer = OutputWriter(collected)
        try:
            with (
                warnings.catch_warnings(),
                show.capture(collected),
                contextlib.redirect_stdout(writer),
                contextlib.redirect_stderr(writer),
            ):
                exec(compile(code, FILENAME, "exec"), module.__dict__)
        except BaseException as caught:  # noqa: BLE001  (a block may raise anything; the builder reports it)
            error = "".join(traceback.format_exception(type(caught), caught, caught.__traceback__))
        finally:
            sys.modules["__main__"] = previous_main
            os.chdir(previous_directory)
            state.restore()
            linecache.cache.pop(FILENAME, None)
    return BlockRun(output_json(collected), output_text(collected), error)


def run_block_in_fresh_process(code):
    """``run_block(code)`` in a new Python process: for a ``nobrowser`` block, which may set
    process-wide state before an import (``XLA_FLAGS`` before jax) that no other block may see."""
    path = os.pathsep.join(part for part in (ENGINE, os.environ.get("PYTHONPATH")) if part)
    environment = dict(os.environ, PYTHONPATH=path)
    completed = subprocess.run(
        [sys.executable, __file__], input=code, capture_output=True, text=True, env=environment, check=False
    )
    if completed.returncode != 0:
        return BlockRun([], "", f"the block's process exited with {completed.returncode}:\n{completed.stderr}")
    result = json.loads(completed.stdout)
    return BlockRun(result["items"], result["text"], result["error"])


if __name__ == "__main__":
    # The block's code on stdin; its BlockRun as JSON on stdout (run_block_in_fresh_process).
    block_run = run_block(sys.stdin.read())
    print(json.dumps({"items": block_run.items, "text": block_run.text, "error": block_run.error}))
