"""Running the user's code as a fresh module, and its error as the page shows it.

For the readings, the user's code runs as a module named ``__playground__`` rather
than ``__main__``: a script's ``if __name__ == "__main__":`` block (a long training
run, say) does not run on every keystroke. Run mode (``topos.playground.program``)
runs it as ``__main__``. Its file name is ``main.py``, which tracebacks, shape
errors ("recorded at main.py:7") and the page's line marks name.
"""

import contextlib
import linecache
import sys
import traceback
import types

from .. import show
from ..model.tape import observe
from .output import MAX_OUTPUT_CHARACTERS, OutputWriter
from .watch import RecordingWatch

FILENAME = "main.py"
MODULE_NAME = "__playground__"


def execute(code, filename=FILENAME, limit=MAX_OUTPUT_CHARACTERS):
    """Run ``code`` as a fresh module; returns (output items, watch, error or None).

    Printed output past ``limit`` characters is cut (see ``OutputWriter``).
    """
    output = []
    writer = OutputWriter(output, limit)
    error = None
    watch = RecordingWatch()
    try:
        with (
            fresh_module(MODULE_NAME, code, filename) as module,
            observe(watch),
            show.capture(output),
            contextlib.redirect_stdout(writer),
            contextlib.redirect_stderr(writer),
        ):
            compiled = compile(code, filename, "exec")
            exec(compiled, module.__dict__)
    except MemoryError:
        raise  # the worker restarts Pyodide: its heap is not to be trusted afterwards
    except BaseException as caught:  # noqa: BLE001  (user code may raise anything, SystemExit included)
        error = caught
    return output, watch, error


@contextlib.contextmanager
def fresh_module(name, code, filename):
    """An empty module named ``name`` for ``code`` to run in, in ``sys.modules`` until the block ends.

    Inside the block, ``sys.modules[name]`` is the new module (dataclasses and pickle
    look a class's module up there), and tracebacks quote ``code``'s lines as those
    of ``filename``; afterwards the module that had the name before has it again.
    """
    module = types.ModuleType(name)
    module.__file__ = filename
    previous_module = sys.modules.get(name)
    sys.modules[name] = module
    # Tracebacks quote the user's lines from linecache, as they would for a file on disk.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        yield module
    finally:
        if previous_module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous_module


def user_line(error, filename):
    """The line of the user's code an exception points at (None if it has none there)."""
    if isinstance(error, SyntaxError) and error.filename == filename:
        return error.lineno
    try:
        source = getattr(error, "source", None)
    except Exception:  # noqa: BLE001  (a user's exception may hold a property that raises: no source then)
        source = None
    if isinstance(source, tuple) and len(source) == 2 and source[0] == filename:
        return source[1]
    line = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno  # the innermost frame in the user's code wins
    return line


def describe_error(error, filename):
    """The error as the page shows it: type, message, the user's line and the traceback text."""
    line = user_line(error, filename)
    frames = traceback.extract_tb(error.__traceback__)
    # The traceback starts at the first frame of the user's code: the playground's own frames are noise.
    firsts = [number for number, frame in enumerate(frames) if frame.filename == filename]
    frames = frames[firsts[0] :] if firsts else []
    trace = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) if frames else ""
    result = {
        "type": type(error).__name__,
        "message": _message(error) if not isinstance(error, SyntaxError) else error.msg,
        "line": line,
        "traceback": trace + "".join(traceback.format_exception_only(type(error), error)),
    }
    if isinstance(error, SyntaxError) and error.offset:
        result["column"] = error.offset
    return result


def _message(error):
    """``str(error)``, or words saying why not: a user's exception may have a ``__str__`` that raises."""
    try:
        return str(error)
    except Exception as failure:  # noqa: BLE001  (a user's __str__ may raise anything)
        return f"(no message: {type(error).__name__}.__str__ raised {type(failure).__name__})"
