"""Running a plan: the schedule in order, each value freed after its last reader.

The interpreter counts the elements of the arrays it holds after each node runs
(before it frees that node's last-read operands); its peak is the measured
counterpart of the plan's predicted peak, and the tests hold the two equal.
"""

import numpy as np

from ..errors import FeedError, ShapeError, located
from ..model.nodes import describe_node
from ..tensor import Tensor, freeze, immutable
from .backends import NumpyExecutor, executor_for


class PlanRun:
    """What ``plan.run`` returns: readable values, gradients, and who ran each node.

    ``of(symbol)`` reads a readable, ``gradient(symbol)`` the gradient of a node
    the entry asked about; ``backends`` maps each evaluated node's index to the
    backend that ran it; ``peak_elements`` and ``peak_node`` are the measured peak
    of live elements and where it happened. Every value it hands back is read-only,
    as ``Run.values()`` is: writing into one cannot change what the run returns next.
    """

    def __init__(self, plan, values, backends, peak_elements, peak_node):
        self.plan = plan
        self._values = {index: _read_only(values[index]) for index in plan.outputs if index in values}
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
        # A DeviceTrainer step keeps the gradients on the device and reads back only the readables.
        nodes = self.plan.nodes
        wrt = next((w for w, gradient in self.plan.gradients if gradient == index), None)
        what = describe_node(nodes[index])
        if wrt is not None:
            what = f"the gradient with respect to {describe_node(nodes[wrt])}"
        raise FeedError(f"this run did not read {what} back from its device (a DeviceTrainer step keeps it there)")


def _read_only(value):
    """``value`` as an array no one can write: a numpy scalar (a sum's result) becomes a rank-0 array.

    Arrays the run made are read-only already and pass as they are; one that a
    backend could still write (a buffer it reuses, say) is copied.
    """
    if isinstance(value, np.generic):
        return freeze(np.array(value))
    return immutable(value)


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
                    try:
                        value = executor.run(node, inputs)
                        ran_on[index] = executor.name
                        if value is None:
                            if to_numpy is not None:
                                inputs = [to_numpy(v) if j in on_device else v for j, v in zip(node.operands, inputs)]
                            value = fallback.run(node, inputs)
                            ran_on[index] = fallback.name
                    except ShapeError as error:  # an index out of range, say: name the line that recorded the node
                        raise located(error, node.source) from None
                    if ran_on[index] == NumpyExecutor.name:
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
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()
    return PlanRun(plan, values, ran_on, peak, peak_node)
