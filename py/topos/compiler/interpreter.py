"""The numpy interpreter: the schedule in order, each value freed after its last reader.

It is the ``"numpy"`` executor, and the one every node-by-node backend runs in:
registered with ``register_backend``, such a backend is an *accelerator* that
the interpreter offers each scheduled operation first (``run(node, inputs)``
returns the value, or ``None`` to decline it), and the interpreter runs what it
declines. An accelerator may keep values on its device: whatever ``run``
returns is stored as the node's value (it needs a ``size``, the element count,
for the live volume), handed back to ``run`` for later nodes, and turned into
a numpy array by ``accelerator.to_numpy(value)`` where the interpreter or the
caller reads it; without ``to_numpy``, its values must be numpy arrays. When
the run ends, ``accelerator.close()`` is called if it has one.

The interpreter counts the elements of the arrays it holds after each node runs
(before it frees that node's last-read operands); its peak is the measured
counterpart of the plan's predicted peak, and the tests hold the two equal.

Without an accelerator, a plan's second and later runs go through its
``PreparedPlan`` (``topos.compiler.program``): the per-node work bound once,
each value written into its slot of the plan's arena (``plan.arena``), the
arena reused from run to run; kept values get buffers of their own, so what a
``PlanRun`` hands back is never written by a later run. The first run takes
the plain loop below, so that a plan run once pays no preparation.
"""

import numpy as np

from ..errors import ShapeError, located
from ..model.nodes import source_value
from ..ops import lookup
from ..tensor import freeze
from .executor import Executor, PlanRun


class NumpyExecutor(Executor):
    """The reference: every op's numpy forward, as ``Network.forward`` runs it, optionally behind an accelerator."""

    name = "numpy"

    def __init__(self, plan=None, accelerator=None):
        super().__init__(plan)
        self.accelerator = accelerator

    def run(self, node, inputs):
        """One node's numpy forward (what the interpreter runs for every node an accelerator declines)."""
        return lookup(node.opcode).forward(inputs, node.attrs)

    def run_plan(self, parameters, feeds):
        plan = self.plan
        if self.accelerator is None:
            plan.numpy_runs += 1
            if plan.numpy_runs > 1:
                return self._run_prepared(plan.prepared(), parameters, feeds)
        try:
            return self._interpret(parameters, feeds)
        finally:
            close = getattr(self.accelerator, "close", None)  # an accelerator's close() is optional
            if close is not None:
                close()

    def _run_prepared(self, prepared, parameters, feeds):
        values, workspace, peak, peak_node = prepared.run(parameters.slots, feeds, count=True)
        outputs = {index: values[index] for index in self.plan.outputs}
        ran_on = dict.fromkeys(self.plan.schedule, self.name)
        return PlanRun(self.plan, outputs, ran_on, peak, peak_node, arena_bytes=workspace.block.nbytes)

    def _interpret(self, parameters, feeds):
        plan = self.plan
        accelerator = self.accelerator
        to_numpy = getattr(accelerator, "to_numpy", None)  # optional: for an accelerator that keeps values
        on_device = set()  # nodes whose values the accelerator keeps in its own form
        nodes = plan.nodes
        release_after = plan.release_after
        values = {}
        ran_on = {}
        live = peak = 0
        peak_node = None
        with np.errstate(all="ignore"):
            for index in plan.schedule:
                node = nodes[index]
                if node.is_source:
                    value = source_value(node, parameters.slots, feeds)
                    ran_on[index] = self.name
                else:
                    inputs = [values[j] for j in node.operands]
                    try:
                        value = None if accelerator is None else accelerator.run(node, inputs)
                        if value is None:  # declined, or no accelerator: the numpy forward runs it
                            if to_numpy is not None:
                                inputs = [to_numpy(v) if j in on_device else v for j, v in zip(node.operands, inputs)]
                            value = self.run(node, inputs)
                            ran_on[index] = self.name
                        else:
                            ran_on[index] = accelerator.name
                    except ShapeError as error:  # an index out of range, say: name the line that recorded the node
                        raise located(error, node.source) from None
                    if ran_on[index] == self.name:
                        freeze(value)  # made by this run and held by it alone, as Network.forward's values are
                    elif to_numpy is not None:
                        on_device.add(index)
                values[index] = value
                live += value.size
                if peak_node is None or live > peak:
                    peak, peak_node = live, index
                for freed in release_after.get(index, ()):
                    live -= values.pop(freed).size
        for index in on_device.intersection(values):
            values[index] = to_numpy(values[index])
        return PlanRun(plan, values, ran_on, peak, peak_node)
