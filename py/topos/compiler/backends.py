"""Backends that ``plan.run`` dispatches nodes to.

A backend is registered by name with a factory: ``factory(plan)`` returns an
executor for one run of that plan. The interpreter offers the executor each
scheduled operation in order: ``executor.run(node, inputs)`` returns the node's
value as a numpy array, or ``None`` to decline it, and the numpy interpreter
then runs the node itself. So a backend may take any subset of the ops (an
opcode without a kernel, float64 values) and the plan still runs. When the run
ends, ``executor.close()`` is called if the executor has it.

An executor may keep values on its device: whatever ``run`` returns is stored
as the node's value (it needs a ``size``, the element count, for the live
volume), handed back to ``run`` for later nodes, and turned into a numpy array
by ``executor.to_numpy(value)`` where the numpy interpreter or the caller reads
it. Without ``to_numpy``, values must be numpy arrays.

An executor that runs whole plans instead (``topos.webgpu``: one program of
kernel launches) defines ``run_plan(parameters, feeds)`` and returns the
``PlanRun`` itself; ``plan.run`` then hands it the checked inputs.

``"numpy"`` is always registered; ``"webgpu"`` and ``"auto"`` import
``topos.webgpu`` (and wgpu-py) only when a plan first asks for them.
"""

from ..errors import ArgumentError, ArgumentTypeError
from ..ops import lookup


class NumpyExecutor:
    """The reference: every op's numpy forward, as ``Network.forward`` runs it."""

    name = "numpy"

    def __init__(self, plan=None):
        self.plan = plan

    def run(self, node, inputs):
        return lookup(node.opcode).forward(inputs, node.attrs)


def _webgpu(plan):
    from ..webgpu.backend import webgpu_executor

    return webgpu_executor(plan)


def _auto(plan):
    from ..webgpu.backend import auto_executor

    return auto_executor(plan)


# The WebGPU backends import wgpu-py only when a plan first asks for them.
_BACKENDS = {"numpy": NumpyExecutor, "webgpu": _webgpu, "auto": _auto}


def register_backend(name, factory):
    """Register ``factory(plan) -> executor`` under ``name`` (replacing an earlier one)."""
    if not isinstance(name, str) or not name:
        raise ArgumentError("a backend's name is a non-empty string")
    if not callable(factory):
        raise ArgumentTypeError(f"a backend's factory is a callable, factory(plan) -> executor; got {factory!r}")
    _BACKENDS[name] = factory


def unregister_backend(name):
    """Remove a registered backend (``"numpy"`` stays)."""
    if name == "numpy":
        raise ArgumentError("the numpy backend cannot be removed: it runs whatever other backends decline")
    _BACKENDS.pop(name, None)


def backend_names():
    return sorted(_BACKENDS)


def snapshot():
    """The registered backends as they stand, for ``restore`` (the playground puts them back after each script)."""
    return dict(_BACKENDS)


def restore(saved):
    """Make the registered backends exactly those of ``saved``, a ``snapshot()``."""
    _BACKENDS.clear()
    _BACKENDS.update(saved)


def executor_for(name, plan):
    try:
        factory = _BACKENDS[name]
    except (KeyError, TypeError):
        raise ArgumentError(f"unknown backend {name!r}; registered: {', '.join(backend_names())}") from None
    return factory(plan)
