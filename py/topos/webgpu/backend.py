"""``plan.run(..., backend="webgpu")`` and ``backend="auto"``, registered with the compiler.

The WebGPU executor runs a whole plan at once rather than node by node: it
executes the plan's kernel program (``plan.kernels().program``), in which the
nodes the device declines are host steps that the numpy interpreter computes.
Values cross between host and device only at the program's edges: sources are
uploaded, readables and gradients read back, and a host step's operands read
back and its result uploaded only where a launch reads it.

``"auto"`` is WebGPU where an adapter exists and numpy elsewhere, so the engine's
correctness never depends on a GPU; in the page it leaves the browser's fallback
adapter (SwiftShader), which is slower than numpy, to numpy too. A plan with no launches at all (float64)
runs its host steps without touching a device. Importing this module registers
both backends (``topos.compiler.backends.register_executor``); it imports wgpu-py
only when a run first needs the device.
"""

import numpy as np

from ..compiler.backends import register_executor
from ..compiler.executor import Executor, PlanRun
from ..compiler.interpreter import NumpyExecutor
from ..compiler.wgsl.program import HostStep
from ..errors import ShapeError, located
from ..model.nodes import source_value
from ..ops import lookup
from ..ops.index import check_indices
from ..tensor import freeze
from . import device as device_module


class WebGPUExecutor(Executor):
    """Runs one plan's kernel program on the process's WebGPU device."""

    name = "webgpu"

    def __init__(self, plan, runner=None):
        super().__init__(plan)
        self.reading = plan.kernels()
        self._runner = runner
        self._index_checks = _index_checks(plan, self.reading)

    @property
    def runner(self):
        if self._runner is None:
            from .runner import default_runner

            self._runner = default_runner()
        return self._runner

    def run_plan(self, parameters, feeds):
        """Evaluate the plan: ``parameters`` a checked ``Parameters`` table, ``feeds`` checked
        {input index: array}. Returns a ``PlanRun``."""
        plan = self.plan
        values = self.source_values(parameters.slots, feeds)
        program = self.reading.program
        if needs_device(program):
            self.runner.run(program, values, self.host_step)
        else:
            for step in program.steps:
                values[step.key] = self.host_step(step.key, values)
        results = {index: freeze(values[index]) for index in plan.outputs}  # made by this run, or immutable sources
        peak = program.device_bytes // 4
        return PlanRun(plan, results, dict(self.reading.backends), peak, None)

    def source_values(self, parameter_slots, feeds):
        """{node: array} for the plan's parameters, inputs and leaves (gather and one-hot indices checked)."""
        values = {}
        for index in self.plan.schedule:
            node = self.plan.nodes[index]
            if not node.is_source:
                continue
            values[index] = source_value(node, parameter_slots, feeds)
            if index in self._index_checks:
                self._check_indices(index, values[index])
        return values

    def host_step(self, index, values):
        node = self.plan.nodes[index]
        inputs = [values[j] for j in node.operands]
        try:
            with np.errstate(all="ignore"):
                value = freeze(lookup(node.opcode).forward(inputs, node.attrs))  # held by this run alone
        except ShapeError as error:  # an index out of range, say: name the line that recorded the node
            raise located(error, node.source) from None
        if index in self._index_checks:
            self._check_indices(index, value)
        return value

    def _check_indices(self, index, array):
        """A device gather reads 0.0 for an index out of range (a one-hot row of zeros, a row of
        zeros taken); the numpy forward raises, and so does this, in the same words, before upload."""
        nodes = self.plan.nodes
        for reader in self._index_checks[index]:
            node = nodes[reader]
            try:
                check_indices(lookup(node.opcode), array, [nodes[j].shape for j in node.operands], node.attrs)
            except ShapeError as error:
                raise located(error, node.source) from None


def _index_checks(plan, reading):
    """index node -> the device nodes that read it as indices (Take, OneHot: their ``index_range``).

    Their indices are int32, and int32 values stay on the host (sources, host
    steps), so the host sees every index a device gather will read.
    """
    checks = {}
    for index in plan.schedule:
        node = plan.nodes[index]
        if reading.backends.get(index) != "webgpu" or node.is_source:
            continue
        shapes = [plan.nodes[j].shape for j in node.operands]
        if lookup(node.opcode).index_range(shapes, node.attrs) is not None:
            checks.setdefault(node.operands[-1], []).append(index)
    return checks


def needs_device(program):
    """False for a program of host steps alone (a float64 plan): it runs without a device."""
    return not all(isinstance(step, HostStep) for step in program.steps)


def webgpu_executor(plan):
    """``backend="webgpu"``: needs an adapter, unless the plan runs on the host alone."""
    executor = WebGPUExecutor(plan)
    if needs_device(executor.reading.program):
        device_module.device()  # raises NoAdapterError with the reason
    return executor


def auto_executor(plan):
    """``backend="auto"``: WebGPU where an adapter exists (and is no fallback adapter), else the numpy interpreter."""
    if device_module.suits_auto():
        return WebGPUExecutor(plan)
    return NumpyExecutor(plan)


register_executor("webgpu", webgpu_executor)
register_executor("auto", auto_executor)
