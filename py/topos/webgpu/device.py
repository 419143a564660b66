"""The WebGPU device the process gets, asked for once.

The runner (``topos.webgpu.runner``) needs a handful of calls, which ``Device``
(``topos.webgpu.device_interface``) lists: storage and uniform buffers, writing them, compute pipelines compiled
from WGSL text, bind groups, a batch of dispatches submitted as one command
buffer, waiting for the queue, and reading a buffer range back. Two devices
answer them:

- natively, wgpu-py (``topos.webgpu.wgpu_device``; ``pip install
  topos-autodiff[wgpu]``), on any Vulkan, Metal or D3D12 driver, lavapipe
  included;
- in the browser playground (Pyodide, ``sys.platform == "emscripten"``), the
  page's own WebGPU (``topos.webgpu.browser_device``): synchronous Python
  waits for WebGPU's promises with ``pyodide.ffi.run_sync``, which needs
  JavaScript Promise Integration (JSPI) and Python entered through
  ``runPythonAsync`` or ``callPromising``.

Where neither can be had, ``available()`` is False, ``backend="auto"`` runs on
numpy, and ``backend="webgpu"`` raises ``NoAdapterError`` saying why.
"""

import os
import sys
import threading

from .device_interface import Adapter, Device, DeviceError, NoAdapterError, SynchronousEntryError

__all__ = [
    "Adapter",
    "Device",
    "DeviceError",
    "NoAdapterError",
    "SynchronousEntryError",
    "adapter",
    "adapter_description",
    "available",
    "device",
    "in_browser",
    "suits_auto",
]

_lock = threading.Lock()
_device = None
_failure = None


def in_browser():
    """True in Pyodide, where the device is the page's WebGPU."""
    return sys.platform == "emscripten"


def _request():
    if in_browser():
        from .browser_device import request_browser_device

        return request_browser_device()
    from .wgpu_device import request_wgpu_device

    # wgpu-native's Vulkan loader warns when XDG_RUNTIME_DIR is unset (as in CI containers).
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return request_wgpu_device()


def device():
    """The process's ``Device``; raises ``NoAdapterError`` when there is none.

    The answer is kept for the process, with one exception: in the page, Python that was
    entered synchronously cannot wait for WebGPU now, but may when it is next entered
    through ``runPythonAsync`` or ``callPromising`` (``SynchronousEntryError``).
    """
    global _device, _failure
    with _lock:
        if _device is None and _failure is None:
            try:
                _device = _request()
            except SynchronousEntryError:
                raise
            except NoAdapterError as error:
                _failure = error
            except Exception as error:  # noqa: BLE001  (a driver that fails to start is the same as no adapter)
                _failure = NoAdapterError(f"the WebGPU adapter failed to start: {error}", reason="failed")
        if _device is None:
            raise _failure
        return _device


def available():
    """True when a WebGPU device can be had (requests it on the first call)."""
    try:
        device()
    except NoAdapterError:
        return False
    return True


def adapter():
    """The device's ``Adapter`` (name, software, fallback); raises ``NoAdapterError`` when there is none."""
    return device().adapter


def suits_auto():
    """True when ``backend="auto"`` takes WebGPU: a device exists and its adapter is no fallback."""
    return available() and not adapter().fallback


def adapter_description():
    """A line naming the adapter, for reports and benchmarks."""
    return device().adapter.name
