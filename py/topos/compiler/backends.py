"""Backends that ``plan.run`` dispatches to, by name.

Every backend is an executor factory: ``factory(plan)`` returns an
``Executor`` (``topos.compiler.executor``) for one run of that plan, and
``plan.run`` hands its ``run_plan(parameters, feeds)`` the checked inputs.
There are two ways to register one:

- ``register_backend(name, factory)``: a node-by-node *accelerator*.
  ``factory(plan)`` returns an object with a ``name`` and ``run(node, inputs)``,
  which returns the node's value or ``None`` to decline it; the numpy
  interpreter offers it each scheduled operation and runs what it declines, so
  it may take any subset of the ops (an opcode without a kernel, float64
  values) and the plan still runs. It may keep values on its device and define
  ``to_numpy(value)`` and ``close()`` (``topos.compiler.interpreter`` says how).
- ``register_executor(name, factory)``: ``factory(plan)`` returns an
  ``Executor`` that runs the whole plan itself, as the WebGPU runtime does (one
  program of kernel launches).

``"numpy"`` is always registered. ``topos.webgpu`` registers ``"webgpu"`` and
``"auto"`` when it is imported, which ``import topos`` does; this module, below
the runtime, never imports it.
"""

from ..errors import ArgumentError, ArgumentTypeError
from .executor import Executor
from .interpreter import NumpyExecutor

_BACKENDS = {"numpy": NumpyExecutor}


def _check(name, factory, what):
    if not isinstance(name, str) or not name:
        raise ArgumentError("a backend's name is a non-empty string")
    if not callable(factory):
        raise ArgumentTypeError(f"a backend's factory is a callable, factory(plan) -> {what}; got {factory!r}")


def register_backend(name, factory):
    """Register a node-by-node accelerator, ``factory(plan)``, under ``name`` (replacing an earlier one).

    The numpy interpreter offers the accelerator each scheduled operation and runs the ones it declines.
    """
    _check(name, factory, "an object whose run(node, inputs) returns a value or None")

    def interpreter_with_accelerator(plan):
        return NumpyExecutor(plan, accelerator=factory(plan))

    _BACKENDS[name] = interpreter_with_accelerator


def register_executor(name, factory):
    """Register ``factory(plan) -> Executor``, a backend that runs whole plans, under ``name``."""
    _check(name, factory, "Executor")
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
    """The ``Executor`` that the backend registered under ``name`` makes for ``plan``."""
    try:
        factory = _BACKENDS[name]
    except (KeyError, TypeError):
        raise ArgumentError(f"unknown backend {name!r}; registered: {', '.join(backend_names())}") from None
    executor = factory(plan)
    if not isinstance(executor, Executor):
        raise ArgumentTypeError(
            f"backend {name!r} made a {type(executor).__name__}, not an Executor: register a node-by-node "
            "accelerator with register_backend, a whole-plan Executor with register_executor"
        )
    return executor


def run_plan(plan, parameters, feeds, backend):
    """``plan.run``: check the inputs, then let the backend's executor evaluate the plan (a ``PlanRun``)."""
    network = plan.network
    network.check_parameters(parameters)
    feeds = network.check_feeds(feeds)
    return executor_for(backend, plan).run_plan(parameters, feeds)
