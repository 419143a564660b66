"""XLA execution of topos plans through jaxlib's PJRT client (the optional ``topos-autodiff[xla]`` extra).

The runtime beside the numpy interpreter and WebGPU: what it runs is the
compiler's StableHLO text (``plan.emit_stablehlo()``, ``topos.compiler.training_step``);
the compiler never imports this package.

- ``runtime``: ``compile_module(text, devices=None, options=None)``, ``to_device``,
  ``to_host``: the compile and execute pieces any XLA run uses;
- ``backend``: ``plan.run(..., backend="xla")``, registered with the compiler's
  backends when this package is imported (``import topos`` does);
- ``fusion``: which nodes XLA fused, read from the compiled module's text;
- ``trainer``: ``XLATrainer``, a whole training step (forward, backward, update)
  as one program whose parameters and moments stay on the device;
- ``spmd``: ``DataParallel`` and ``DataParallelTrainer``, the same programs with
  the batch split over N devices by XLA's SPMD partitioner.

Every trainer (``XLATrainer``, ``DataParallelTrainer``, and WebGPU's
``topos.webgpu.DeviceTrainer``) answers in one shape: ``step(feeds)`` returns a
``PlanRun`` of the step's readables (with ``compile_ms``), ``parameters()`` a new
``Parameters`` table read back from the device, ``moments()``
``{(parameter index, moment name): array}``. docs/scaling.md shows them at work.

jax is imported only when a run first needs XLA, so the package imports where it is absent.
"""

from . import backend  # noqa: F401  (registers the "xla" backend)
from .backend import XLAExecutor, fusions, run_plan
from .runtime import Compiled, XLAUnavailableError, compile_module, to_device, to_host
from .spmd import DataParallel, DataParallelTrainer
from .trainer import XLATrainer

__all__ = [
    "Compiled",
    "DataParallel",
    "DataParallelTrainer",
    "XLAExecutor",
    "XLATrainer",
    "XLAUnavailableError",
    "compile_module",
    "fusions",
    "run_plan",
    "to_device",
    "to_host",
]
