"""``plan.run(..., backend="xla")``: the plan's emitted StableHLO, compiled by XLA and run there.

The executor compiles ``plan.emit_stablehlo()`` once per plan (and once per
text: two plans that emit the same module share the executable), uploads the
parameters and feeds, runs the executable and reads every result back. The run
says how long the compile took (``run.compile_ms``, the compile that made the
executable, however long ago) and, like the WebGPU executor, that every node ran
on ``"xla"``. Importing this module registers the backend
(``topos.compiler.backends.register_executor``); jax is imported on the first run.
"""

import weakref

from ..compiler.backends import register_executor
from ..compiler.executor import Executor, PlanRun
from ..compiler.stablehlo import emit_plan_rows
from ..model.nodes import source_value
from ..tensor import freeze
from .fusion import fused_nodes
from .runtime import client, compile_module, to_device, to_host

_MODULES = weakref.WeakKeyDictionary()  # plan -> its emitted text, so a plan is lowered once


def portable():
    """Whether the text must be the portable form: XLA's CPU client runs the LAPACK custom calls and
    ``stablehlo.cholesky`` the default text holds, another platform's (a GPU's) does not."""
    return client()[1].platform != "cpu"


def plan_module(plan):
    """``plan.emit_stablehlo()`` (portable off a CPU), emitted once per plan."""
    text = _MODULES.get(plan)
    if text is None:
        text = _MODULES[plan] = plan.emit_stablehlo(portable=portable())
    return text


class XLAExecutor(Executor):
    """Runs one plan's emitted module on XLA's first device."""

    name = "xla"

    def __init__(self, plan, optimize=True):
        super().__init__(plan)
        self.optimize = optimize

    def compiled(self):
        """The plan's ``Compiled`` executable (compiled on first use, then cached)."""
        return compile_module(plan_module(self.plan), optimize=self.optimize)

    def run_plan(self, parameters, feeds):
        """Evaluate the plan: ``parameters`` a checked ``Parameters`` table, ``feeds`` checked
        {input index: array}. Returns a ``PlanRun`` with ``compile_ms``."""
        plan = self.plan
        compiled = self.compiled()
        arguments = [to_device(source_value(plan.nodes[i], parameters.slots, feeds)) for i in plan.arguments()]
        results = compiled.execute(arguments)
        values = {index: freeze(to_host(result)) for index, result in zip(plan.outputs, results)}
        backends = dict.fromkeys(plan.schedule, self.name)
        # XLA plans its own buffers: the run has no measured peak of live elements.
        run = PlanRun(plan, values, backends, None, None)
        run.compile_ms = compiled.compile_ms
        return run


def run_plan(plan, parameters, feeds=None, optimize=True):
    """``plan.run(parameters, feeds, backend="xla")``, with ``optimize=False`` for XLA's fast,
    unoptimized compile (the random-program tests check numbers, not speed)."""
    network = plan.network
    network.check_parameters(parameters)
    feeds = network.check_feeds(feeds)
    return XLAExecutor(plan, optimize).run_plan(parameters, feeds)


def fusions(plan, optimize=True):
    """Which of the plan's nodes XLA fused into one kernel: ``[(fusion name, (node index, ...)), ...]``."""
    compiled = XLAExecutor(plan, optimize).compiled()
    return fused_nodes(compiled.hlo_text(), emit_plan_rows(plan, portable()))


register_executor("xla", XLAExecutor)
