"""What the runner asks of a WebGPU device (``Device``), the adapter it names, and the errors.

Both devices implement ``Device``: ``topos.webgpu.wgpu_device`` (wgpu-py) and
``topos.webgpu.browser_device`` (the page's WebGPU in Pyodide). The runner
(``topos.webgpu.runner``) calls nothing else, and ``topos.webgpu.device`` picks
the one the process gets.
"""

from dataclasses import dataclass
from typing import Protocol

from ..errors import ToposError


class NoAdapterError(ToposError, RuntimeError):
    """No WebGPU device could be had (wgpu-py missing, no driver, no JSPI in the page); also a ``RuntimeError``.

    ``reason`` names the case in a word, for the page to say why its kernels run on numpy:
    ``"no-webgpu"`` (the browser has no ``navigator.gpu``), ``"no-adapter"`` (WebGPU, or wgpu-py,
    found none), ``"no-jspi"`` (the browser lacks JavaScript Promise Integration, so Python
    cannot wait for WebGPU's promises), ``"synchronous-entry"`` (Python was entered synchronously),
    ``"no-wgpu"`` (wgpu-py is not installed) or ``"failed"`` (the adapter failed to start).
    """

    def __init__(self, message, reason="no-adapter"):
        super().__init__(message)
        self.reason = reason


class SynchronousEntryError(NoAdapterError):
    """In the page, Python entered synchronously from JavaScript cannot wait for WebGPU's promises
    now; entered through ``runPythonAsync`` or ``callPromising`` it may, so this refusal is not kept."""

    def __init__(self, message):
        super().__init__(message, reason="synchronous-entry")


class DeviceError(ToposError, RuntimeError):
    """The device refused work it was given (a WGSL text that does not compile, a failed validation)."""


@dataclass(frozen=True)
class Adapter:
    """The adapter a device runs on.

    ``software``: the adapter runs on the CPU (lavapipe, SwiftShader), slower than numpy for
    training. ``fallback``: the browser offers it only as a fallback (``isFallbackAdapter``:
    SwiftShader in Chromium); ``backend="auto"`` leaves a fallback adapter to numpy, as the
    playground's backend picker does. wgpu-py names no fallback adapter, so natively "auto"
    takes whatever adapter there is, lavapipe included.
    """

    name: str
    software: bool
    fallback: bool


class Device(Protocol):
    """What the runner asks of a WebGPU device. Buffers, pipelines and bind groups are
    handles that only the device that made them reads."""

    adapter: Adapter

    def create_buffer(self, label, size, uniform=False):
        """A buffer of ``size`` bytes: storage (and copy source and destination), or a uniform block."""

    def write_buffer(self, buffer, offset, data):
        """Write a contiguous numpy array at byte ``offset``, ordered before the next submission."""

    def create_pipeline(self, label, code, entry, bindings):
        """``(pipeline, bind group layout)`` for entry point ``entry`` of WGSL ``code``; ``bindings`` lists
        ``(index, kind)`` with kind ``"uniform"``, ``"storage"`` or ``"read-only-storage"``."""

    def create_bind_group(self, layout, entries):
        """A bind group of ``layout``; ``entries`` lists ``(index, buffer, offset, size)``."""

    def submit(self, dispatches):
        """Record ``(pipeline, bind group, (x, y, z))`` dispatches in one compute pass and submit them."""

    def wait(self):
        """Return once everything submitted so far has run."""

    def read_buffer(self, buffer, offset, size):
        """``size`` bytes of ``buffer`` from byte ``offset``, after everything submitted, as a numpy uint8 array."""
