"""The Python side of the browser playground.

The worker calls ``run(code)`` after every (debounced) edit. It executes the
user's code in a fresh module, captures what it prints and every card it makes,
picks the recording the panes read, and returns all readings as one JSON text.

Which recording the panes read, when a script makes several:

1. the last network sealed from the user's code (``tape.seal()``,
   ``Tape.record``), else
2. the last tape the user's code recorded a node on, read as it stands.

A recording counts as the user's when one of its nodes was recorded by a line
of the user's code (not by topos itself).

- **plan**: ``network.entry(readables).lower()``, where the readables are the
  values the builder returned to ``Tape.record`` less its parameters and inputs
  and leaves, else the last recorded node;
- **gradient**: ``entry.backward(target, parameters).lower()``, where the target
  is the last rank-0 floating readable (the loss) and ``parameters`` are all of
  the network's parameters;
- **spec**, **graph**, **HLO** and **kernels** read the same network and plan.

Each reading is computed on its own: one that raises carries its error and the
others still show. An error in the user's code returns no readings (the page
keeps the last good ones) and names the user's line.

The user's code runs as a module named ``__playground__`` rather than
``__main__``: a script's ``if __name__ == "__main__":`` block (a long training
run, say) does not run on every keystroke.

One Python serves every run, so a run leaves no trace in it: whatever the script
changed in topos, numpy or Python's process-wide settings is put back when the run
ends (``topos.playground_state``). Printed output is kept up to
``MAX_OUTPUT_CHARACTERS``, read when the run starts; where it passes that, one line
says so and how many characters were left out.
"""

import contextlib
import io
import json
import linecache
import math
import re
import sys
import time
import traceback
import types
import warnings

from . import show
from .errors import ArgumentError, ToposError
from .model.network import Network
from .model.nodes import Symbol
from .model.tape import TapeObserver, observe
from .playground_state import ProcessState, import_every_topos_module
from .text import format_shape

FILENAME = "main.py"
MODULE_NAME = "__playground__"
READINGS = ("spec", "graph", "plan", "gradient", "hlo", "kernels")
MAX_OUTPUT_CHARACTERS = 200_000


# Watching what the user's code records -------------------------------------------------


class RecordingWatch(TapeObserver):
    """Notes every tape made, every network sealed and what ``Tape.record`` returned.

    ``execute`` has it observe the tapes (``topos.model.tape.observe``) while the
    user's code runs, and only then.
    """

    def __init__(self):
        self.tapes = []
        self.networks = []
        self.returned = {}

    def made(self, tape):
        self.tapes.append(tape)

    def sealed(self, tape, network):
        self.networks.append(network)

    def recorded(self, network, symbols):
        self.returned[id(network)] = symbols

    def pick(self, filename):
        """The recording the panes read: ``(network, readable indices, kind)`` or None."""
        for network in reversed(self.networks):
            if recorded_by(network.nodes(), filename):
                symbols = self.returned.get(id(network))
                return network, readable_indices(network, symbols), "network"
        for tape in reversed(self.tapes):
            nodes = tape.nodes()
            if nodes and recorded_by(nodes, filename):
                network = Network(nodes, tape.dtype, tape.lineages)
                return network, readable_indices(network, None), "tape"
        return None


def recorded_by(nodes, filename):
    return any(node.source and node.source[0] == filename for node in nodes)


def flatten_symbols(value):
    if isinstance(value, Symbol):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from flatten_symbols(item)


def readable_indices(network, symbols):
    """The builder's returned values that are computed (not sources), else the last node."""
    nodes = network.nodes()
    indices = []
    for symbol in flatten_symbols(symbols):
        index = network.index_of(symbol)
        if not nodes[index].is_source and index not in indices:
            indices.append(index)
    return indices or [len(nodes) - 1]


# Running the user's code ---------------------------------------------------------------


class OutputWriter(io.TextIOBase):
    """A text stream that appends to the shared output list (cards go to the same list).

    It keeps at most ``limit`` characters (``MAX_OUTPUT_CHARACTERS`` as it stands when
    the writer is made, before the user's code runs); where the text passes the limit
    an ``OutputCut`` goes into the list, and it counts every character left out after it.
    """

    def __init__(self, output, limit=None):
        self.output = output
        self.limit = MAX_OUTPUT_CHARACTERS if limit is None else limit
        self.characters = 0
        self.cut = None

    def writable(self):
        return True

    def write(self, text):
        kept = text[: max(self.limit - self.characters, 0)]
        if kept:
            self.characters += len(kept)
            if self.output and isinstance(self.output[-1], str):
                self.output[-1] += kept
            else:
                self.output.append(kept)
        if len(kept) < len(text):
            if self.cut is None:
                self.cut = OutputCut(self.limit)
                self.output.append(self.cut)
            self.cut.characters += len(text) - len(kept)
        return len(text)


class OutputCut:
    """The place where printed output passed the limit, and how many characters were left out.

    It reads as one line of its own, after the last character kept: in the output
    text (as a card does) and in the output JSON (as printed text).
    """

    def __init__(self, limit):
        self.limit = limit
        self.characters = 0

    def __str__(self):
        plural = "" if self.characters == 1 else "s"
        return (
            f"… output cut here: {self.characters:,} more character{plural} not shown "
            f"(the limit is {self.limit:,})"
        )

    def to_json(self):
        return {"kind": "print", "text": str(self) + "\n"}


def user_line(error, filename):
    """The line of the user's code an exception points at (None if it has none there)."""
    if isinstance(error, SyntaxError) and error.filename == filename:
        return error.lineno
    source = getattr(error, "source", None)
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
    frames = frames[firsts[0]:] if firsts else []
    trace = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) if frames else ""
    result = {
        "type": type(error).__name__,
        "message": str(error) if not isinstance(error, SyntaxError) else error.msg,
        "line": line,
        "traceback": trace + "".join(traceback.format_exception_only(type(error), error)),
    }
    if isinstance(error, SyntaxError) and error.offset:
        result["column"] = error.offset
    return result


def execute(code, filename=FILENAME):
    """Run ``code`` as a fresh module; returns (output items, watch, error or None)."""
    output = []
    writer = OutputWriter(output)
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = filename
    previous_module = sys.modules.get(MODULE_NAME)
    sys.modules[MODULE_NAME] = module  # dataclasses and pickle look a class's module up here
    # Tracebacks quote the user's lines from linecache, as they would for a file on disk.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    error = None
    watch = RecordingWatch()
    try:
        with (
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
    finally:
        if previous_module is None:
            sys.modules.pop(MODULE_NAME, None)
        else:
            sys.modules[MODULE_NAME] = previous_module
    return output, watch, error


def output_text(output):
    """The output as plain text: printed text as printed, each card's text on lines of its own.

    The same rule as the docs builder's ``output_text``, so an embed can compare
    what it printed with the output a docs page shows.
    """
    text = ""
    for item in output:
        if isinstance(item, str):
            text += item
        else:
            if text and not text.endswith("\n"):
                text += "\n"
            text += str(item) + "\n"
    return text


def output_json(output):
    items = []
    for item in output:
        if isinstance(item, str):
            items.append({"kind": "print", "text": item})
        else:
            items.append(item.to_json())
    return items


# The readings ---------------------------------------------------------------------------


class Readings:
    """The six readings of one network, each computed on demand and at most once."""

    def __init__(self, network, readables, filename=FILENAME):
        self.network = network
        self.readables = readables
        self.filename = filename
        self._plan = None
        self._kernels = None

    def symbols(self, indices):
        return [self.network.symbol(i) for i in indices]

    def entry(self):
        return self.network.entry(self.symbols(self.readables))

    def plan(self):
        if self._plan is None:
            self._plan = self.entry().lower()
        return self._plan

    def gradient_target(self):
        nodes = self.network.nodes()
        for index in reversed(self.readables):
            if nodes[index].shape == () and nodes[index].dtype in ("float32", "float64"):
                return index
        last = self.readables[-1]
        raise ArgumentError(
            f"the gradient reading needs a rank-0 floating value to differentiate; "
            f"the last value read, node {last}, is {format_shape(nodes[last].shape)} {nodes[last].dtype}"
        )

    def read_spec(self):
        return {"text": self.network.describe()}

    def read_graph(self):
        from .compiler import Graph

        data = show.graph_json(Graph.from_nodes(self.network.nodes()))
        for node in data["nodes"]:
            if node.get("file", self.filename) != self.filename:
                node["line"] = None  # recorded inside topos, not by a line the editor shows
        return {"graph": data, "text": show.graph_text(data)}

    def read_plan(self):
        return {"text": self.plan().describe()}

    def read_gradient(self):
        parameters = self.network.parameter_symbols()
        if not parameters:
            raise ArgumentError("the gradient reading differentiates with respect to parameters; this network has none")
        target = self.network.symbol(self.gradient_target())
        plan = self.entry().backward(target, parameters).lower()
        return {"text": plan.describe()}

    def read_hlo(self):
        return {"text": self.plan().emit_stablehlo()}

    def kernels(self):
        if self._kernels is None:
            self._kernels = self.plan().kernels()
        return self._kernels

    def read_kernels(self):
        kernels = self.kernels()
        text = kernels.describe()
        return {"text": text, "launches": launch_lines(text, kernels.launches)}


KERNEL_ROW = re.compile(r"^(\d+)\s")
KERNEL_NODE_ROW = re.compile(r"^(view|upload|read|numpy)\s")
#: Where the node column of a kernels row starts and ends (see topos.compiler.kernels).
KERNEL_NODE_COLUMN = slice(34, 48)


def launch_lines(text, launches):
    """Which line of the kernels reading describes which launch (and the nodes the other rows name)."""
    rows = []
    for number, line in enumerate(text.split("\n")):
        launch = KERNEL_ROW.match(line)
        if launch and int(launch.group(1)) < len(launches):
            found = launches[int(launch.group(1))]
            rows.append({"line": number, "kernel": f"{found.kernel}:{found.entry}", "nodes": list(found.nodes)})
        elif KERNEL_NODE_ROW.match(line) and line[KERNEL_NODE_COLUMN].strip().isdigit():
            rows.append({"line": number, "kernel": "", "nodes": [int(line[KERNEL_NODE_COLUMN])]})
    return rows


def nodes_json(network, filename):
    """Each node's opcode and the user's line that recorded it (None when topos recorded it)."""
    return [
        {
            "index": node.index,
            "opcode": node.opcode,
            "line": node.source[1] if node.source and node.source[0] == filename else None,
        }
        for node in network.nodes()
    ]


def compute_readings(readings):
    results, timings = {}, {}
    for name in READINGS:
        started = time.perf_counter()
        try:
            results[name] = getattr(readings, f"read_{name}")()
        except MemoryError:
            raise
        except Exception as error:  # noqa: BLE001  (a reading that raises shows its error; the others still show)
            results[name] = {"error": f"{type(error).__name__}: {error}"}
        timings[name] = round((time.perf_counter() - started) * 1000, 2)
    return results, timings


#: The readings of the newest run that had some; the WebGPU bridge reads their kernel program.
latest_readings = None


def run(code, filename=FILENAME):
    """Execute ``code`` and return everything the page shows, as a JSON text.

    A run leaves no trace in this Python (see ``topos.playground_state``): what the
    script changed is put back when it ends, and the next run sees what this one
    saw. The primitive and backend registries are the exception in timing only: they
    go back to ``PROCESS_STATE``'s when the next run starts, because the WebGPU
    bridge after a run may still need the primitives its script registered.
    """
    global latest_readings
    latest_readings = None
    PROCESS_STATE.restore_registries()
    # Bound now, before the script could replace ProcessState.restore.
    put_back = ProcessState(PROCESS_STATE.objects).restore
    try:
        with warnings.catch_warnings():
            text, readings = run_and_read(code, filename)
    finally:
        put_back(registries=False)
    latest_readings = readings
    return text


def run_and_read(code, filename):
    """The run itself: ``(the result's JSON text, the readings or None)``."""
    started = time.perf_counter()
    output, watch, error = execute(code, filename)
    timings = {"code": round((time.perf_counter() - started) * 1000, 2)}
    result = {"output": output_json(output), "output_text": output_text(output), "error": None, "recording": None,
              "nodes": [], "readings": None}
    readings = None
    if error is not None:
        result["error"] = describe_error(error, filename)
    else:
        picked = watch.pick(filename)
        if picked is None:
            result["readings"] = {name: {"empty": "this script recorded no tape"} for name in READINGS}
        else:
            network, readables, kind = picked
            result["recording"] = {"kind": kind, "nodes": len(network), "readables": readables}
            result["nodes"] = nodes_json(network, filename)
            readings = Readings(network, readables, filename)
            result["readings"], reading_timings = compute_readings(readings)
            timings.update(reading_timings)
    timings["total"] = round((time.perf_counter() - started) * 1000, 2)
    result["timings"] = timings
    try:
        return json.dumps(result, allow_nan=False, default=str), readings
    except ValueError:
        # JSON has no NaN or infinity (an attribute such as a clip bound may hold one): spell them as text.
        return json.dumps(finite(result), allow_nan=False, default=str), readings


def finite(value):
    """``value`` with every non-finite float replaced by its text (``"nan"``, ``"inf"``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


class NoReadingsError(ToposError, RuntimeError):
    """``gpu_bridge()`` before a run that recorded a tape: there is no kernel program to run."""


def gpu_bridge():
    """A bridge for the newest readings' kernel program (raises ``NoReadingsError`` when there are none)."""
    if latest_readings is None:
        raise NoReadingsError("no readings yet: nothing to run on WebGPU (run a script that records a tape first)")
    from .playground_gpu import GpuBridge

    return GpuBridge(latest_readings)


# Last, once every name above is defined: every topos module is imported (so that none
# appears during a run), then the state topos starts in is noted.
import_every_topos_module()
#: The state topos starts in: every run starts from its primitive and backend registries.
PROCESS_STATE = ProcessState()
