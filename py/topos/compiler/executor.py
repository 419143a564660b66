"""The executor protocol: what ``plan.run`` asks of a backend, and the ``PlanRun`` it hands back.

Every backend runs a plan the same way: its factory makes an ``Executor`` for
one plan (``factory(plan)``, registered in ``topos.compiler.backends``), and
``executor.run_plan(parameters, feeds)`` evaluates it, given the checked
``Parameters`` table and the checked feeds ({input index: array}), and returns
a ``PlanRun``. The numpy interpreter (``topos.compiler.interpreter``) is one
executor; the WebGPU runtime (``topos.webgpu``), which runs a whole program of
kernel launches, is another.
"""

import numpy as np

from ..errors import FeedError, MissingRuleError
from ..model.nodes import describe_node
from ..tensor import Tensor, freeze, immutable


class Executor:
    """Runs one plan: ``run_plan(parameters, feeds)`` returns its ``PlanRun``.

    ``name`` is what ``PlanRun.backends`` says for a node it ran. A subclass
    takes the plan in ``__init__`` (the factory's call) and overrides ``run_plan``.
    """

    name = None

    def __init__(self, plan):
        self.plan = plan

    def run_plan(self, parameters, feeds):
        """Evaluate the plan: ``parameters`` a checked ``Parameters`` table, ``feeds`` checked
        {input index: array}. Returns a ``PlanRun``."""
        raise MissingRuleError(f"the {self.name} executor does not define run_plan")


class PlanRun:
    """What ``plan.run`` returns: readable values, gradients, and who ran each node.

    ``of(symbol)`` reads a readable, ``gradient(symbol)`` the gradient of a node
    the entry asked about; ``backends`` maps each evaluated node's index to the
    backend that ran it; ``peak_elements`` and ``peak_node`` are the measured peak
    of live elements and where it happened; ``arena_bytes`` is the size of the
    arena the numpy interpreter wrote its values into (``plan.arena``), None for
    a run that allocated each value on its own (a plan's first run, or one
    behind an accelerator); ``compile_ms`` is how long XLA took to compile
    the program that ran (on XLA; None elsewhere). A trainer's ``step``
    (``XLATrainer``, ``DataParallelTrainer``, ``DeviceTrainer``) returns one too,
    holding the readables alone. Every value it hands back is read-only, as
    ``Run.values()`` is, and none lies in an arena: writing into one cannot
    change what the run returns next, and no later run writes into it.
    """

    def __init__(self, plan, values, backends, peak_elements, peak_node, arena_bytes=None):
        self.plan = plan
        self.arena_bytes = arena_bytes
        self._values = {index: _read_only(values[index]) for index in plan.outputs if index in values}
        self.backends = backends
        self.peak_elements = peak_elements
        self.peak_node = peak_node
        self.compile_ms = None
        self._gradient_of = dict(plan.gradients)

    def of(self, symbol):
        """The value of a readable of the plan, as a ``Tensor``."""
        index = self.plan.network.index_of(symbol)
        if index not in self.plan.readables:
            node = self.plan.nodes[index]
            raise FeedError(f"{describe_node(node)} is not a readable of this plan")
        return Tensor(self._value(index))

    def gradient(self, symbol):
        """d target / d ``symbol``, for a node the entry's ``backward`` named, as a ``Tensor``."""
        index = self.plan.network.index_of(symbol)
        gradient = self._gradient_of.get(index)
        if gradient is None:
            node = self.plan.nodes[index]
            raise FeedError(f"this plan has no gradient with respect to {describe_node(node)}")
        return Tensor(self._value(gradient))

    def outputs(self):
        """The readables' values, then the gradients, in order (read-only numpy arrays), as the emitters return them."""
        return [self._value(index) for index in self.plan.outputs]

    def _value(self, index):
        if index in self._values:
            return self._values[index]
        # A trainer's step keeps the gradients on its device and reads back only the readables.
        nodes = self.plan.nodes
        wrt = next((w for w, gradient in self.plan.gradients if gradient == index), None)
        what = describe_node(nodes[index])
        if wrt is not None:
            what = f"the gradient with respect to {describe_node(nodes[wrt])}"
        raise FeedError(f"this run did not read {what} back from its device (a trainer's step keeps it there)")


def _read_only(value):
    """``value`` as an array no one can write: a numpy scalar (a sum's result) becomes a rank-0 array.

    Arrays the run made are read-only already and pass as they are; one that a
    backend could still write (a buffer it reuses, say) is copied.
    """
    if isinstance(value, np.generic):
        return freeze(np.array(value))
    return immutable(value)
