"""The WebGPU device, requested once per process through wgpu-py.

``wgpu`` is an optional dependency (``pip install topos-autodiff[wgpu]``). Without it,
or without an adapter (no Vulkan, Metal or D3D12 driver, not even a software
one such as lavapipe), ``available()`` is False, ``backend="auto"`` runs on
numpy, and asking for ``backend="webgpu"`` raises ``NoAdapterError``.
"""

import os
import threading

from ..errors import ToposError

_lock = threading.Lock()
_device = None
_failure = None


class NoAdapterError(ToposError, RuntimeError):
    """No WebGPU adapter could be had (wgpu-py missing, or no driver); also a ``RuntimeError``, as before."""


def _request():
    # wgpu-native's Vulkan loader warns when XDG_RUNTIME_DIR is unset (as in CI containers).
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    try:
        import wgpu
    except ImportError as error:
        raise NoAdapterError(f"wgpu-py is not installed ({error}); pip install 'topos-autodiff[wgpu]'") from None
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        raise NoAdapterError("wgpu-py found no WebGPU adapter (install a driver, e.g. Debian's mesa-vulkan-drivers)")
    return adapter.request_device_sync()


def device():
    """The process's ``GPUDevice``; raises ``NoAdapterError`` when there is none."""
    global _device, _failure
    with _lock:
        if _device is None and _failure is None:
            try:
                _device = _request()
            except NoAdapterError as error:
                _failure = error
            except Exception as error:  # a driver that fails to start is the same as no adapter
                _failure = NoAdapterError(f"the WebGPU adapter failed to start: {error}")
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


def adapter_description():
    """A line naming the adapter, for reports and benchmarks."""
    info = device().adapter.info
    return f"{info.get('device', '?')} ({info.get('backend_type', '?')}, {info.get('adapter_type', '?')})"
