"""Executes kernel programs (``topos.compiler.wgsl.program``) on a WebGPU device.

One runner for both devices (``topos.webgpu.device``): wgpu-py natively, the
page's WebGPU in the playground. Set-up happens once: the device once per
process, each pipeline once per kernel, entry point, specialisation and binding
layout (``PipelineCache``), and each program's buffers, bind groups and
parameter block once per program (``Prepared``). A run then only writes the
uploads, records the dispatches and reads the readbacks: consecutive launches
are submitted together, in one compute pass (WebGPU orders dispatches within a
pass and makes each one's writes visible to the next), and only when the host
must see or change a buffer.
"""

import threading
import time
import weakref

import numpy as np

from ..compiler.wgsl.dispatch import PARAM_WORDS, Launch
from ..compiler.wgsl.program import HostStep, Readback, Upload, ViewStep
from ..errors import ArgumentTypeError
from . import device as device_module
from .sources import specialise

#: Bytes between two launches' parameter blocks in the shared uniform buffer
#: (WebGPU's default minUniformBufferOffsetAlignment).
PARAM_STRIDE = 256
PARAM_BYTES = 4 * PARAM_WORDS

_NUMPY_DTYPES = {"float32": np.float32, "int32": np.int32, "uint32": np.uint32}


class PipelineCache:
    """Compiled compute pipelines, keyed by what they were compiled from."""

    def __init__(self, device):
        self.device = device
        self._pipelines = {}
        self._lock = threading.Lock()
        self.compiled = 0

    def get(self, launch):
        """``(pipeline, bind group layout)`` for a launch, compiling it on first use."""
        key = launch.key
        with self._lock:
            entry = self._pipelines.get(key)
            if entry is None:
                entry = self._compile(launch)
                self._pipelines[key] = entry
                self.compiled += 1
            return entry

    def _compile(self, launch):
        code = specialise(launch.kernel, launch.specialisation)
        bindings = [(0, "uniform")]
        for binding in launch.bindings:
            bindings.append((binding.index, "storage" if binding.access == "read_write" else "read-only-storage"))
        return self.device.create_pipeline(f"{launch.kernel}.wgsl", code, launch.entry, bindings)


class Prepared:
    """One program's device objects: buffers, the parameter block, a bind group a launch."""

    def __init__(self, runner, program):
        device = runner.device
        own = {b.id: device.create_buffer(f"b{b.id}", b.bytes) for b in program.buffers if b.base is None}
        # buffer id -> its device buffer and the byte where it starts there (a window's is inside its base's)
        self.buffers = {b.id: own[b.id if b.base is None else b.base] for b in program.buffers}
        self.offsets = {b.id: 0 if b.base is None else 4 * b.start for b in program.buffers}
        sizes = {buffer.id: buffer.bytes for buffer in program.buffers}
        launches = program.launches
        params = np.zeros((max(len(launches), 1), PARAM_STRIDE // 4), dtype=np.uint32)
        for row, launch in enumerate(launches):
            params[row, : len(launch.params)] = launch.params
        self.params = device.create_buffer("params", params.nbytes, uniform=True)
        device.write_buffer(self.params, 0, params)
        self.rows = {id(launch): row for row, launch in enumerate(launches)}
        self.dispatches = {}
        for row, launch in enumerate(launches):
            pipeline, layout = runner.pipelines.get(launch)
            entries = [(0, self.params, row * PARAM_STRIDE, PARAM_BYTES)]
            for binding in launch.bindings:
                buffer = binding.buffer
                entries.append((binding.index, self.buffers[buffer], self.offsets[buffer], sizes[buffer]))
            group = device.create_bind_group(layout, entries)
            self.dispatches[id(launch)] = (pipeline, group, launch.workgroups)
        self.constants_written = set()
        self.resident = {}  # buffer id -> the host array last written there
        self.lock = threading.Lock()


class Runner:
    """Runs programs on one device; ``Runner()`` takes the process's device."""

    def __init__(self, device=None):
        self.device = device if device is not None else device_module.device()
        self.pipelines = PipelineCache(self.device)
        self._prepared = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self.uploaded_bytes = 0
        self.read_bytes = 0
        # What the device was asked to do, since this runner was made (``counts()``).
        self.dispatches = 0
        self.submits = 0
        self.readbacks = 0
        self.uploads = 0

    def counts(self):
        """{dispatches, submits, readbacks, uploads, uploaded_bytes, read_bytes} so far: a run's are the
        difference of two readings (``DeviceTrainer.counts()`` gives a step's)."""
        return {
            "dispatches": self.dispatches,
            "submits": self.submits,
            "readbacks": self.readbacks,
            "uploads": self.uploads,
            "uploaded_bytes": self.uploaded_bytes,
            "read_bytes": self.read_bytes,
        }

    def prepare(self, program):
        with self._lock:
            prepared = self._prepared.get(program)
            if prepared is None:
                prepared = Prepared(self, program)
                self._prepared[program] = prepared
            return prepared

    def run(self, program, values, host=None, trace=None):
        """Execute ``program``'s steps; ``values`` (key -> host array) holds what the uploads
        read and receives what the readbacks and host steps produce. ``host(key, values)``
        computes a host step's value. Returns ``values``.

        ``trace(launch, milliseconds, read)``, when given, is called after every launch, which
        then runs alone: submitted, waited for and timed; ``read(view, dtype="float32")``
        reads a view of the program's buffers back at that point (the playground's report).
        """
        prepared = self.prepare(program)
        with prepared.lock:
            return self._run(program, prepared, values, host, trace)

    def _run(self, program, prepared, values, host, trace):
        batch = []

        def flush():
            if batch:
                self.device.submit(list(batch))
                self.dispatches += len(batch)
                self.submits += 1
                batch.clear()

        def read(view, dtype="float32"):
            return self.read(prepared, view, dtype)

        for step in program.steps:
            if isinstance(step, Launch):
                started = time.perf_counter()
                batch.append(prepared.dispatches[id(step)])
                if trace is not None:
                    flush()
                    self.device.wait()
                    trace(step, 1000.0 * (time.perf_counter() - started), read)
            elif isinstance(step, Upload):
                self._upload(step, prepared, values, flush)
            elif isinstance(step, Readback):
                flush()
                values[step.key] = self.read(prepared, step.view, step.dtype)
            elif isinstance(step, HostStep):
                flush()
                values[step.key] = host(step.key, values)
            elif not isinstance(step, ViewStep):
                raise ArgumentTypeError(
                    f"a program's steps are Launch, Upload, Readback, HostStep or ViewStep, got {type(step).__name__}"
                )
        flush()
        return values

    def _upload(self, step, prepared, values, flush):
        array = values[step.key]
        if step.constant and step.buffer in prepared.constants_written:
            return
        if step.resident and prepared.resident.get(step.buffer) is array:
            return
        data = np.ascontiguousarray(array, dtype=_NUMPY_DTYPES[step.dtype])
        # Writes are ordered with submissions, not with dispatches still waiting in the batch.
        flush()
        if data.size:
            self.device.write_buffer(prepared.buffers[step.buffer], prepared.offsets[step.buffer], data)
            self.uploaded_bytes += data.nbytes
            self.uploads += 1
        if step.constant:
            prepared.constants_written.add(step.buffer)
        if step.resident:
            prepared.resident[step.buffer] = array

    def write_params(self, program, launch, words):
        """Replace one launch's parameter words before the next run (the optimizer's step count)."""
        prepared = self.prepare(program)
        block = np.zeros(PARAM_STRIDE // 4, dtype=np.uint32)
        block[: len(words)] = words
        with prepared.lock:
            self.device.write_buffer(prepared.params, prepared.rows[id(launch)] * PARAM_STRIDE, block)

    def write_view(self, program, view, array):
        """Write ``array`` (float32) into the elements of ``view``, a dense view of one of ``program``'s
        buffers, between runs (a ``DeviceTrainer`` that resumes writes its moments so)."""
        prepared = self.prepare(program)
        data = np.ascontiguousarray(array, dtype=np.float32).reshape(-1)
        with prepared.lock:
            at = prepared.offsets[view.buffer] + 4 * view.offset
            self.device.write_buffer(prepared.buffers[view.buffer], at, data)
            self.uploaded_bytes += data.nbytes
            self.uploads += 1

    def read_view(self, program, view, dtype="float32"):
        """The elements of ``view`` in one of ``program``'s buffers, between runs."""
        prepared = self.prepare(program)
        with prepared.lock:
            return self.read(prepared, view, dtype)

    def read(self, prepared, view, dtype="float32"):
        """The elements of ``view`` as a new host array (constants need no device)."""
        numpy_dtype = _NUMPY_DTYPES[dtype]
        if view.is_constant:
            return np.full(view.shape, view.constant, dtype=numpy_dtype)
        if view.size == 0:
            return np.zeros(view.shape, dtype=numpy_dtype)
        start, stop = view.offset, view.span()
        at = prepared.offsets[view.buffer] + 4 * start
        raw = self.device.read_buffer(prepared.buffers[view.buffer], at, 4 * (stop - start))
        flat = raw.view(numpy_dtype)
        self.read_bytes += flat.nbytes
        self.readbacks += 1
        strided = np.lib.stride_tricks.as_strided(flat, view.shape, tuple(4 * s for s in view.strides))
        return np.array(strided)


_default = None
_default_lock = threading.Lock()


def default_runner():
    """The process's shared runner (and so its shared pipeline cache)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runner()
        return _default
