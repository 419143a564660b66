"""The page's device: the browser's WebGPU, reached from Python in Pyodide.

Python in the playground is synchronous, and WebGPU answers its adapter, device,
pipeline, queue and mapping requests with promises. ``pyodide.ffi.run_sync``
blocks Python until a promise settles. It needs JavaScript Promise Integration
(JSPI) in the browser, and Python entered with stack switching
(``pyodide.runPythonAsync`` or ``PyProxy.callPromising``, as the playground's
workers enter it). Everything else in WebGPU is synchronous already: buffers,
bind groups, encoding, submitting. Data crosses as JavaScript typed arrays.

Without JSPI, or in Python entered synchronously, no device is made and
``NoAdapterError`` says which of the two it is: ``backend="auto"`` then runs on
numpy, and nothing ever waits on a promise that cannot settle.

Validation errors are collected with error scopes around each submission and
raised (``DeviceError``) at the next wait or read, once what it waits for has
settled, so they cost no round trip of their own.
"""

import weakref

import numpy as np

from .device_interface import Adapter, DeviceError, NoAdapterError, SynchronousEntryError


def request_browser_device():
    """A ``BrowserDevice`` on the page's adapter; raises ``NoAdapterError`` saying why there is none."""
    import js
    from pyodide.ffi import can_run_sync, run_sync

    if not can_run_sync():
        raise _cannot_wait(js)
    gpu = getattr(js.navigator, "gpu", None)
    if gpu is None:
        raise NoAdapterError("this browser has no WebGPU (navigator.gpu)", reason="no-webgpu")
    adapter = run_sync(gpu.requestAdapter(_js_object({"powerPreference": "high-performance"})))
    if adapter is None:
        raise NoAdapterError("WebGPU found no adapter", reason="no-adapter")
    return BrowserDevice(run_sync(adapter.requestDevice()), adapter)


def _cannot_wait(js):
    """Why ``run_sync`` cannot work here: no JSPI in this browser, or Python entered synchronously."""
    if hasattr(js.WebAssembly, "Suspending") or hasattr(js.WebAssembly, "Suspender"):
        return SynchronousEntryError(
            "Python cannot wait for WebGPU here: it was entered synchronously from JavaScript "
            "(pyodide.ffi.run_sync works in Python entered through runPythonAsync or callPromising)"
        )
    return NoAdapterError(
        "Python cannot wait for WebGPU here: this browser lacks JavaScript Promise Integration (JSPI), "
        "which pyodide.ffi.run_sync needs to wait for WebGPU's promises",
        reason="no-jspi",
    )


def _js_object(fields):
    """A plain JavaScript object (nested dicts too) for a WebGPU descriptor."""
    import js
    from pyodide.ffi import to_js

    return to_js(fields, dict_converter=js.Object.fromEntries)


class _Buffer:
    """A ``GPUBuffer`` destroyed as soon as Python lets go of it: the browser frees GPU memory
    only when told to or when JavaScript's garbage collector gets round to it."""

    __slots__ = ("gpu", "__weakref__")

    def __init__(self, gpu):
        self.gpu = gpu
        weakref.finalize(self, gpu.destroy)


class BrowserDevice:
    """``topos.webgpu.device.Device`` over the page's ``GPUDevice``."""

    def __init__(self, device, adapter):
        import js
        from pyodide.ffi import JsException, run_sync

        self._js = js
        self._run_sync = run_sync
        self._js_exception = JsException
        self._device = device
        self._queue = device.queue
        self._pending_errors = []  # popErrorScope() promises not settled yet
        info = adapter.info
        # Chromium reports the fallback adapter (SwiftShader) on the info; older browsers on the adapter.
        fallback = bool(getattr(info, "isFallbackAdapter", False) or getattr(adapter, "isFallbackAdapter", False))
        parts = [str(getattr(info, field, "") or "") for field in ("vendor", "architecture", "description")]
        name = " ".join(part for part in parts if part) or "unnamed adapter"
        self.adapter = Adapter(name, software=fallback, fallback=fallback)

    def create_buffer(self, label, size, uniform=False):
        usage = self._js.GPUBufferUsage
        flags = usage.UNIFORM | usage.COPY_DST if uniform else usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        return _Buffer(self._device.createBuffer(_js_object({"label": label, "size": size, "usage": flags})))

    def write_buffer(self, buffer, offset, data):
        raw = memoryview(np.ascontiguousarray(data)).cast("B")
        array = self._js.Uint8Array.new(raw.nbytes)
        array.assign(raw)
        self._queue.writeBuffer(buffer.gpu, offset, array)

    def create_pipeline(self, label, code, entry, bindings):
        device = self._device
        stage = self._js.GPUShaderStage.COMPUTE
        entries = [{"binding": index, "visibility": stage, "buffer": {"type": kind}} for index, kind in bindings]
        layout = device.createBindGroupLayout(_js_object({"entries": entries}))
        descriptor = {
            "label": f"{label}:{entry}",
            "layout": device.createPipelineLayout(_js_object({"bindGroupLayouts": [layout]})),
            "compute": {
                "module": device.createShaderModule(_js_object({"label": label, "code": code})),
                "entryPoint": entry,
            },
        }
        pipeline = self._settle(device.createComputePipelineAsync(_js_object(descriptor)), f"compiling {label}:{entry}")
        return pipeline, layout

    def create_bind_group(self, layout, entries):
        resources = [
            {"binding": index, "resource": {"buffer": buffer.gpu, "offset": offset, "size": size}}
            for index, buffer, offset, size in entries
        ]
        return self._device.createBindGroup(_js_object({"layout": layout, "entries": resources}))

    def submit(self, dispatches):
        device = self._device
        device.pushErrorScope("validation")
        encoder = device.createCommandEncoder()
        compute = encoder.beginComputePass()
        for pipeline, group, (x, y, z) in dispatches:
            compute.setPipeline(pipeline)
            compute.setBindGroup(0, group)
            compute.dispatchWorkgroups(x, y, z)
        compute.end()
        self._queue.submit(self._js.Array.of(encoder.finish()))
        self._pending_errors.append(device.popErrorScope())

    def wait(self):
        self._settle(self._queue.onSubmittedWorkDone(), "waiting for the queue")

    def read_buffer(self, buffer, offset, size):
        js = self._js
        device = self._device
        device.pushErrorScope("validation")
        staging = device.createBuffer(
            _js_object({"size": size, "usage": js.GPUBufferUsage.MAP_READ | js.GPUBufferUsage.COPY_DST})
        )
        encoder = device.createCommandEncoder()
        encoder.copyBufferToBuffer(buffer.gpu, offset, staging, 0, size)
        self._queue.submit(js.Array.of(encoder.finish()))
        self._pending_errors.append(device.popErrorScope())
        try:
            self._settle(staging.mapAsync(js.GPUMapMode.READ), "reading a buffer back")
            data = np.empty(size, dtype=np.uint8)
            js.Uint8Array.new(staging.getMappedRange()).assign_to(data)
            staging.unmap()
        finally:
            staging.destroy()
        return data

    def _settle(self, promise, doing):
        """Wait for ``promise``, then look at the error scopes still open; returns the promise's value.

        (Pyodide hands WebGPU's promises to Python as futures, each waited for on its own; the
        scopes have settled by the time the promise has, so waiting for them costs no round trip.)
        """
        pending, self._pending_errors = self._pending_errors, []
        try:
            value = self._run_sync(promise)
            errors = [self._run_sync(scope) for scope in pending]
        except self._js_exception as error:
            raise DeviceError(f"WebGPU failed {doing}: {error}") from None
        for error in errors:
            if error is not None:
                raise DeviceError(f"WebGPU refused the work: {error.message}")
        return value
