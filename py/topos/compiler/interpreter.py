"""The ``"numpy"`` executor: ``plan.run`` on the one interpreter (``topos.model.interpreter``).

It is the ``"numpy"`` backend, and the one every node-by-node backend runs in:
registered with ``register_backend``, such a backend is an *accelerator* that
the interpreter offers each scheduled operation first and whose declined
operations numpy runs (``topos.model.interpreter.plain`` says how). When the
run ends, ``accelerator.close()`` is called if it has one.

Without an accelerator, a plan runs as the model's own forward and backward
do: plainly the first time, through its ``PreparedPlan`` from the second run
on (``plan.runs``, a ``PreparedOnSecondRun``): the per-node work bound once,
each value written into its slot of the plan's arena (``plan.arena``), the
arena reused from run to run; kept values get buffers of their own, so what a
``PlanRun`` hands back is never written by a later run.
"""

from ..model.interpreter import NUMPY, interpret
from ..ops import lookup
from .executor import Executor, PlanRun


class NumpyExecutor(Executor):
    """The reference: every op's numpy forward, as ``Network.forward`` runs it, optionally behind an accelerator."""

    name = NUMPY

    def __init__(self, plan=None, accelerator=None):
        super().__init__(plan)
        self.accelerator = accelerator

    def run(self, node, inputs):
        """One node's numpy forward (what an accelerator that is itself numpy answers)."""
        return lookup(node.opcode).forward(inputs, node.attrs)

    def run_plan(self, parameters, feeds):
        plan = self.plan
        if self.accelerator is None:
            prepared = plan.runs.for_run("outputs", plan.prepare)
            if prepared is not None:
                values, workspace, peak, peak_node = prepared.run(parameters.slots, feeds, count=True)
                outputs = {index: values[index] for index in plan.outputs}
                ran_on = dict.fromkeys(plan.schedule, self.name)
                return PlanRun(plan, outputs, ran_on, peak, peak_node, arena_bytes=workspace.block.nbytes)
        try:
            values, ran_on, peak, peak_node = interpret(plan, parameters.slots, feeds, self.accelerator)
        finally:
            close = getattr(self.accelerator, "close", None)  # an accelerator's close() is optional
            if close is not None:
                close()
        return PlanRun(plan, {index: values[index] for index in plan.outputs}, ran_on, peak, peak_node)
