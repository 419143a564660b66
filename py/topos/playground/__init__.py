"""The Python side of the browser playground.

The worker calls ``run(code)`` after every (debounced) edit. It executes the
user's code in a fresh module, captures what it prints and every card it makes,
picks the recording the panes read, and returns all readings as one JSON text
(or, for the page, ``start_run``, then ``read_reading`` per reading as each pane
wants it, then ``finish_run``: the readings are streamed).
Each job has its module:

- ``watch``: what the user's code records, and which recording the panes read;
- ``sandbox``: running the code as a fresh module, and its error as the page shows it;
- ``output``: printed output and cards, in order, cut at the limit;
- ``readings``: the six readings, each as its text and its rows;
- ``result``: one run's result as JSON, its readings made all at once or one at a time;
- ``state``: what a run may change in this Python, and putting it back;
- ``gpu``: the kernels reading's program run on WebGPU (the browser's, in the page), for the kernels pane.
- ``program``: Run mode: the code run as ``__main__``, its output streamed while it runs.
- ``files``: the working directory every run starts in, holding the user's files as stored, and what a run wrote there;
- ``notebook``: a script as a Jupyter notebook (the page's "download as .ipynb").

One Python serves every run, so a run leaves no trace in it: whatever the script
changed in topos, numpy or Python's process-wide settings is put back when the run
ends (``topos.playground.state``). Printed output is kept up to
``MAX_OUTPUT_CHARACTERS`` (this package's, read when the run starts); where it
passes that, one line says so and how many characters were left out.
"""

import warnings

from .gpu import KernelsRun, NoReadingsError, report_json, status_json
from .output import MAX_OUTPUT_CHARACTERS, OutputCut, OutputWriter, finite, output_json, output_text
from .program import OutputStream, run_program
from .readings import READINGS, Readings, compute_reading, compute_readings, text_reading
from .result import ReadRun, json_text, milliseconds_since, nodes_json, run_and_read
from .sandbox import FILENAME, MODULE_NAME, describe_error, execute, user_line
from .state import ProcessState, import_every_topos_module
from .watch import RecordingWatch

#: The readings of the newest run that had some; the WebGPU report runs their kernel program.
latest_readings = None
#: The run whose readings the page is reading (``start_run``), until ``finish_run``.
current_run = None


def run(code, filename=FILENAME):
    """Execute ``code`` and return everything the page shows, as a JSON text.

    A run leaves no trace in this Python (see ``topos.playground.state``): what the
    script changed is put back when it ends, and the next run sees what this one
    saw. The readings are made after that, by topos as it was before the script ran.
    The primitive and backend registries are the exception in timing only: they
    go back to ``PROCESS_STATE``'s when the next run starts, because the readings and
    the WebGPU report after a run may still need the primitives its script registered.
    """
    this_run = _start(code, filename)
    try:
        with warnings.catch_warnings():
            return this_run.result_json()
    finally:
        _finish()


def start_run(code, filename=FILENAME):
    """Execute ``code`` as ``run`` does, and return its result without the readings, as JSON text.

    The page's worker streams the readings: it asks for them one at a time with
    ``read_reading`` (the pane in view first), in any order, and may stop asking when
    a newer edit comes; ``finish_run`` ends the run. ``run`` is the three at once.
    """
    return _start(code, filename).head_json()


def read_reading(name):
    """The reading ``name`` of the run ``start_run`` began, and the milliseconds it took, as JSON text."""
    if current_run is None:
        raise NoReadingsError(f"no run to read the {name} reading of (start_run comes first)")
    with warnings.catch_warnings():
        reading = current_run.read(name)
    return json_text({"reading": reading, "ms": current_run.timings.get(name, 0.0)})


def finish_run():
    """End the run ``start_run`` began: its timings (each reading's, and the total), as JSON text."""
    current = _finish()
    return json_text({"timings": current.timings if current else {}})


def _start(code, filename):
    global latest_readings, current_run
    latest_readings = current_run = None
    PROCESS_STATE.restore_registries()
    # Bound now, before the script could replace ProcessState.restore.
    put_back = ProcessState(PROCESS_STATE.objects).restore
    try:
        with warnings.catch_warnings():
            this_run = ReadRun(code, filename, MAX_OUTPUT_CHARACTERS)
    finally:
        put_back(registries=False)
    current_run = this_run
    return this_run


def _finish():
    global latest_readings, current_run
    finished, current_run = current_run, None
    if finished is not None:
        finished.timings["total"] = milliseconds_since(finished.started)
        latest_readings = finished.readings
    return finished


def run_main(code, post, timer=None, filename=FILENAME):
    """Run ``code`` as a program (as ``__main__``), sending its output to ``post`` as it comes.

    Run mode's entry (``topos.playground.program.run_program`` says what is sent, and
    what ``timer`` is for); returns the end of the run as JSON text. Like ``run``, it
    leaves no trace in this Python: what the script changed is put back when it ends.
    """
    PROCESS_STATE.restore_registries()
    # Bound now, before the script could replace ProcessState.restore.
    put_back = ProcessState(PROCESS_STATE.objects).restore
    try:
        with warnings.catch_warnings():
            return run_program(code, post, timer, filename, MAX_OUTPUT_CHARACTERS)
    finally:
        put_back()


def webgpu_report_json():
    """The newest readings' kernel program run on WebGPU: the kernels pane's WebGPU section, as JSON
    (raises ``NoReadingsError`` when no run has recorded a tape)."""
    if latest_readings is None:
        raise NoReadingsError("no readings yet: nothing to run on WebGPU (run a script that records a tape first)")
    return report_json(latest_readings)


__all__ = [
    "FILENAME",
    "MAX_OUTPUT_CHARACTERS",
    "MODULE_NAME",
    "PROCESS_STATE",
    "READINGS",
    "KernelsRun",
    "NoReadingsError",
    "OutputCut",
    "OutputStream",
    "OutputWriter",
    "ProcessState",
    "ReadRun",
    "Readings",
    "RecordingWatch",
    "compute_reading",
    "compute_readings",
    "describe_error",
    "execute",
    "finish_run",
    "finite",
    "status_json",
    "nodes_json",
    "output_json",
    "output_text",
    "read_reading",
    "run",
    "run_and_read",
    "run_main",
    "run_program",
    "start_run",
    "text_reading",
    "user_line",
    "webgpu_report_json",
]

# Last, once every name above is defined: every topos module is imported (so that none
# appears during a run), then the state topos starts in is noted.
import_every_topos_module()
#: The state topos starts in: every run starts from its primitive and backend registries.
PROCESS_STATE = ProcessState()
