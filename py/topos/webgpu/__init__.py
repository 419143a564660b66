"""WebGPU execution of topos plans: through wgpu-py natively (the optional ``topos-autodiff[wgpu]``
extra), and through the browser's WebGPU in the playground.

The runtime beside the numpy interpreter. What it runs is the compiler's plain
data (``topos.compiler.wgsl``: views, launches, programs), which it imports and
re-exports here (``View``, ``Launch``, ``Program``, ...); the compiler never
imports this package.

- ``sources``: the WGSL files in ``kernels/`` and their specialisation;
- ``device``: what the runner asks of a device, and which one the process gets:
  ``wgpu_device`` (wgpu-py) natively, ``browser_device`` (the page's WebGPU,
  through ``pyodide.ffi.run_sync``) in Pyodide;
- ``runner``: the program runner, one for both devices;
- ``backend``: ``plan.run(..., backend="webgpu")`` and ``"auto"``, registered with
  the compiler's backends when this package is imported (``import topos`` does);
- ``trainer``: ``DeviceTrainer``, training steps whose parameters stay on the device.

wgpu-py (or the page's WebGPU) is reached only when a run first needs the device,
so the package imports (and ``"auto"`` runs on numpy) where there is none.
"""

from ..compiler.wgsl.launch import Launch
from ..compiler.wgsl.program import Buffer, HostStep, Program, Readback, Upload, ViewStep
from ..compiler.wgsl.views import View
from . import backend  # noqa: F401  (registers the "webgpu" and "auto" backends)
from .device import Adapter, DeviceError, NoAdapterError, adapter, available
from .trainer import DeviceTrainer

__all__ = [
    "Adapter",
    "Buffer",
    "DeviceError",
    "DeviceTrainer",
    "HostStep",
    "Launch",
    "NoAdapterError",
    "Program",
    "Readback",
    "Upload",
    "View",
    "ViewStep",
    "adapter",
    "available",
    "run_launches",
]


def run_launches(launches, arrays, sizes=None, outputs=None, runner=None):
    """Run launches on raw arrays (tests and benchmarks).

    ``arrays`` maps buffer ids to host arrays written before the first launch;
    ``sizes`` maps further buffer ids to their element counts; ``outputs`` maps
    names to views read back after the last launch. Returns {name: array}.
    """
    import numpy as np

    from .runner import default_runner

    sizes = dict(sizes or {})
    buffers = []
    steps = []
    values = {}
    for buffer_id, array in arrays.items():
        array = np.asarray(array)
        dtype = "int32" if array.dtype.kind in "iu" else "float32"
        buffers.append(Buffer(buffer_id, int(array.size), dtype))
        steps.append(Upload(("in", buffer_id), buffer_id, dtype))
        values[("in", buffer_id)] = array
    for buffer_id, elements in sizes.items():
        buffers.append(Buffer(buffer_id, int(elements)))
    steps.extend(launches)
    for name, view in (outputs or {}).items():
        steps.append(Readback(("out", name), view))
    program = Program(tuple(buffers), tuple(steps))
    values = (runner or default_runner()).run(program, values)
    return {name: values[("out", name)] for name in (outputs or {})}
