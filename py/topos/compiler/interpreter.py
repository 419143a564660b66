"""Running a plan: the schedule in order, each value freed after its last reader.

The interpreter counts the elements of the arrays it holds after each node runs
(before it frees that node's last-read operands); its peak is the measured
counterpart of the plan's predicted peak, and the tests hold the two equal.
"""

import numpy as np

from ..errors import FeedError
from ..model.network import describe_node
from ..tensor import Tensor
from .backends import NumpyExecutor, executor_for


class PlanRun:
    """What ``plan.run`` returns: readable values, gradients, and who ran each node.

    ``of(symbol)`` reads a readable, ``gradient(symbol)`` the gradient of a node
    the entry asked about; ``backends`` maps each evaluated node's index to the
    backend that ran it; ``peak_elements`` and ``peak_node`` are the measured peak
    of live elements and where it happened.
    """

    def __init__(self, plan, values, backends, peak_elements, peak_node):
        self.plan = plan
        self._values = values
        self.backends = backends
        self.peak_elements = peak_elements
        self.peak_node = peak_node
        self._gradient_of = dict(plan.gradients)

    def of(self, symbol):
        """The value of a readable of the plan, as a ``Tensor``."""
        index = self.plan.network.index_of(symbol)
        if index not in self.plan.readables:
            node = self.plan.nodes[index]
            raise FeedError(f"{describe_node(node)} is not a readable of this plan")
        return Tensor(self._values[index])

    def gradient(self, symbol):
        """d target / d ``symbol``, for a node the entry's ``backward`` named, as a ``Tensor``."""
        index = self.plan.network.index_of(symbol)
        gradient = self._gradient_of.get(index)
        if gradient is None:
            node = self.plan.nodes[index]
            raise FeedError(f"this plan has no gradient with respect to {describe_node(node)}")
        return Tensor(self._values[gradient])

    def outputs(self):
        """The readables' values, then the gradients, in order (numpy arrays), as the emitters return them."""
        return [self._values[index] for index in self.plan.outputs]


def run_plan(plan, parameters, feeds, backend):
    network = plan.network
    network.check_parameters(parameters)
    feeds = network.check_feeds(feeds)
    executor = executor_for(backend, plan)
    if hasattr(executor, "run_plan"):
        # A device backend (topos.webgpu) runs the whole plan, keeping values on its device.
        return executor.run_plan(parameters, feeds)
    fallback = executor if isinstance(executor, NumpyExecutor) else NumpyExecutor(plan)
    to_numpy = getattr(executor, "to_numpy", None)
    on_device = set()  # nodes whose values the executor keeps in its own form
    nodes = plan.nodes
    release_after = plan.release_after
    values = {}
    ran_on = {}
    live = peak = 0
    peak_node = None
    try:
        with np.errstate(all="ignore"):
            for index in plan.schedule:
                node = nodes[index]
                opcode = node.opcode
                if opcode == "Parameter":
                    value = parameters.slots.get(index, node.payload)
                    ran_on[index] = "numpy"
                elif opcode == "Input":
                    value = feeds.get(index, node.payload)
                    ran_on[index] = "numpy"
                elif opcode == "Leaf":
                    value = node.payload
                    ran_on[index] = "numpy"
                else:
                    inputs = [values[j] for j in node.operands]
                    value = executor.run(node, inputs)
                    ran_on[index] = executor.name
                    if value is None:
                        if to_numpy is not None:
                            inputs = [to_numpy(v) if j in on_device else v for j, v in zip(node.operands, inputs)]
                        value = fallback.run(node, inputs)
                        ran_on[index] = fallback.name
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
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()
    return PlanRun(plan, values, ran_on, peak, peak_node)
