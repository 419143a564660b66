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
import io
import linecache
import os
import sys
import tempfile
import traceback
import types
import warnings
from dataclasses import dataclass

import numpy as np

from topos import show
from topos.compiler import backends as backend_registry
from topos.ops import registry as primitive_registry

FILENAME = "main.py"


@dataclass(frozen=True)
class BlockRun:
    items: list  # output items, JSON-ready, in order
    text: str  # the same output as plain text: printed text, and each card's text on its own lines
    error: str = None  # the traceback, when the block raised


class _Collector(io.TextIOBase):
    """A text stream that appends to the shared list of output items (cards go to the same list)."""

    def __init__(self, items):
        self.items = items

    def writable(self):
        return True

    def write(self, text):
        if self.items and isinstance(self.items[-1], str):
            self.items[-1] += text
        else:
            self.items.append(text)
        return len(text)


def output_text(items):
    """The plain text of output items: printed text as printed, each card's text on lines of its own."""
    text = ""
    for item in items:
        if isinstance(item, str):
            text += item
        else:
            if text and not text.endswith("\n"):
                text += "\n"
            text += str(item) + "\n"
    return text


def _item_json(item):
    return {"kind": "print", "text": item} if isinstance(item, str) else item.to_json()


def run_block(code):
    """Run ``code`` as described above; returns a ``BlockRun``."""
    collected = []
    module = types.ModuleType("__main__")
    module.__file__ = FILENAME
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    previous_main = sys.modules.get("__main__")
    previous_directory = os.getcwd()
    print_options = np.get_printoptions()
    # The registries are module-level dicts; a copy of each is put back after the block.
    registries = [(table, dict(table)) for table in (primitive_registry._REGISTRY, backend_registry._BACKENDS)]
    error = None
    with tempfile.TemporaryDirectory(prefix="topos-docs-") as directory:
        os.chdir(directory)
        sys.modules["__main__"] = module  # dataclasses and pickle look a class's module up here
        writer = _Collector(collected)
        try:
            with warnings.catch_warnings(), show.capture(collected), contextlib.redirect_stdout(writer), \
                    contextlib.redirect_stderr(writer):
                exec(compile(code, FILENAME, "exec"), module.__dict__)
        except BaseException as caught:  # noqa: BLE001  (a block may raise anything; the builder reports it)
            error = "".join(traceback.format_exception(type(caught), caught, caught.__traceback__))
        finally:
            sys.modules["__main__"] = previous_main
            os.chdir(previous_directory)
            np.set_printoptions(**print_options)
            for table, saved in registries:
                table.clear()
                table.update(saved)
            linecache.cache.pop(FILENAME, None)
    return BlockRun([_item_json(item) for item in collected], output_text(collected), error)
