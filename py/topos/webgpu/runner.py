"""Executes kernel programs (``topos.compiler.wgsl.program``) on the wgpu-py device.

Set-up happens once: the device once per process (``topos.webgpu.device``),
each pipeline once per kernel, entry point, specialisation and binding layout
(``PipelineCache``), and each program's buffers, bind groups and parameter
block once per program (``Prepared``). A run then only writes the uploads,
records the dispatches and reads the readbacks: consecutive launches share one
command encoder and one compute pass (WebGPU orders dispatches within a pass
and makes each one's writes visible to the next), and the encoder is submitted
only when the host must see or change a buffer.
"""

import threading
import weakref

import numpy as np

from ..compiler.wgsl.launch import PARAM_WORDS, Launch
from ..compiler.wgsl.program import HostStep, Readback, Upload, ViewStep
from ..errors import ArgumentTypeError
from . import device as device_module
from .sources import specialise

#: Bytes between two launches' parameter blocks in the shared uniform buffer
#: (WebGPU's default minUniformBufferOffsetAlignment).
PARAM_STRIDE = 256
PARAM_BYTES = 4 * PARAM_WORDS

_NUMPY_DTYPES = {"float32": np.float32, "int32": np.int32}


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
        import wgpu

        code = specialise(launch.kernel, launch.specialisation)
        module = self.device.create_shader_module(label=f"{launch.kernel}.wgsl", code=code)
        entries = [{"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "uniform"}}]
        for binding in launch.bindings:
            kind = "storage" if binding.access == "read_write" else "read-only-storage"
            entries.append({"binding": binding.index, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}})
        layout = self.device.create_bind_group_layout(entries=entries)
        pipeline = self.device.create_compute_pipeline(
            label=f"{launch.kernel}:{launch.entry}",
            layout=self.device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": launch.entry},
        )
        return pipeline, layout


class Prepared:
    """One program's device objects: buffers, the parameter block, a bind group a launch."""

    def __init__(self, runner, program):
        import wgpu

        device = runner.device
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.buffers = {
            buffer.id: device.create_buffer(label=f"b{buffer.id}", size=buffer.bytes, usage=usage)
            for buffer in program.buffers
        }
        launches = program.launches
        params = np.zeros((max(len(launches), 1), PARAM_STRIDE // 4), dtype=np.uint32)
        for row, launch in enumerate(launches):
            params[row, : len(launch.params)] = launch.params
        self.params = device.create_buffer_with_data(
            data=params, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        self.rows = {id(launch): row for row, launch in enumerate(launches)}
        self.dispatches = {}
        for row, launch in enumerate(launches):
            pipeline, layout = runner.pipelines.get(launch)
            entries = [{"binding": 0, "resource": {"buffer": self.params, "offset": row * PARAM_STRIDE,
                                                   "size": PARAM_BYTES}}]
            for binding in launch.bindings:
                target = self.buffers[binding.buffer]
                entries.append({"binding": binding.index, "resource": {"buffer": target, "offset": 0,
                                                                       "size": target.size}})
            group = device.create_bind_group(layout=layout, entries=entries)
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

    def prepare(self, program):
        with self._lock:
            prepared = self._prepared.get(program)
            if prepared is None:
                prepared = Prepared(self, program)
                self._prepared[program] = prepared
            return prepared

    def run(self, program, values, host=None):
        """Execute ``program``'s steps; ``values`` (key -> host array) holds what the uploads
        read and receives what the readbacks and host steps produce. ``host(key, values)``
        computes a host step's value. Returns ``values``."""
        prepared = self.prepare(program)
        with prepared.lock:
            return self._run(program, prepared, values, host)

    def _run(self, program, prepared, values, host):
        queue = self.device.queue
        encoder = None
        compute = None

        def flush():
            nonlocal encoder, compute
            if encoder is not None:
                compute.end()
                queue.submit([encoder.finish()])
                encoder = compute = None

        for step in program.steps:
            if isinstance(step, Launch):
                if encoder is None:
                    encoder = self.device.create_command_encoder()
                    compute = encoder.begin_compute_pass()
                pipeline, group, workgroups = prepared.dispatches[id(step)]
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, group)
                compute.dispatch_workgroups(*workgroups)
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
        # Writes are ordered with submissions, not with commands still being recorded.
        flush()
        if data.size:
            self.device.queue.write_buffer(prepared.buffers[step.buffer], 0, data)
            self.uploaded_bytes += data.nbytes
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
            self.device.queue.write_buffer(prepared.params, prepared.rows[id(launch)] * PARAM_STRIDE, block)

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
        raw = self.device.queue.read_buffer(prepared.buffers[view.buffer], 4 * start, 4 * (stop - start))
        flat = np.frombuffer(raw, dtype=numpy_dtype)
        self.read_bytes += flat.nbytes
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
