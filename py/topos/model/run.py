"""What running a network hands back: ``Run`` (every node's value) and ``Field`` (every node's gradient).

Both are values: nothing the caller can read changes after construction, and
what a read gives never depends on which reads came before, in what order or
from which thread. ``Network.forward`` (``topos.model.network``) makes a
``Run``; ``run.backward(target)`` a ``Field``. Their second and later runs go
through prepared plans of the one interpreter (``topos.model.interpreter``),
which the network keeps.
"""

import threading
import weakref

import numpy as np

from ..display import values_text
from ..dtypes import FLOAT_DTYPES
from ..tensor import Tensor, freeze
from ..text import format_shape, plural
from .autodiff import EagerEmitter, ancestors, check_backward, reverse_scan
from .composites import inner_nodes, network_composites
from .tables import SHOWN_NODES, Gradients, values_bundle


class Run:
    """The values of one forward evaluation.

    A run made by a prepared plan (a network's second forward and later) keeps
    its values in that plan's arena and holds the arena until the run is gone;
    then the next forward may reuse it. So that nothing the caller holds can
    change when that happens, ``of`` and ``values`` hand out copies of the
    values that lie in the arena.
    """

    def __init__(self, network, parameters, values, prepared=None, workspace=None):
        self.network = network
        self.parameters = parameters
        self._values = values
        self._in_arena = None
        if prepared is not None:
            self._in_arena = prepared.in_arena
            weakref.finalize(self, prepared.release, workspace)

    def _readable(self, index):
        """Node ``index``'s value as the caller may hold it: read-only, and never in the arena."""
        value = self._values[index]
        if self._in_arena is not None and self._in_arena[index]:
            return freeze(np.array(value))
        return value

    def of(self, symbol):
        """The value of the node that ``symbol`` names in this run, as a ``Tensor``.

        Raises ``FeedError`` for a symbol of another network.
        """
        return Tensor(self._readable(self.network.index_of(symbol)))

    def values(self):
        """Every node's value, by index (read-only arrays)."""
        return [self._readable(index) for index in range(len(self._values))]

    def backward(self, target):
        """The reverse scan from a rank-0 ``target``; returns a ``Field`` (a gradient per node)."""
        index = self.network.index_of(target)
        check_backward(self.network.nodes(), index)
        return Field(self, index)

    def __repr__(self):
        return f"<Run: {plural(len(self._values), 'value')}, one per node of a {self.network.dtype} network>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        nodes = self.network.nodes()
        cells = []
        for node in nodes[:SHOWN_NODES]:
            value = self._readable(node.index)
            cells.append((node.index, node.opcode, format_shape(node.shape), value.dtype.name, values_text(value)))
        summary = f"Run: the value of each of the network's {plural(len(nodes), 'node')}"
        columns = ["node", "opcode", "shape", "dtype", "values"]
        return values_bundle("run", summary, columns, cells, hidden=len(nodes) - len(cells))


class Field:
    """One gradient per node of d target / d node, read through symbols.

    A field is a value: what ``of`` gives for a node depends on the run and the
    target alone, never on which nodes were read before, in what order, or by
    which thread. Each node's gradient is defined once:

    - a node on a path from a parameter or an input to the target gets the
      reverse scan's cotangent, in which a softmax, log-softmax or layer norm is
      differentiated in closed form (``topos.model.composites``);
    - a node inside such a group, or one that depends on constants alone (a
      leaf, say), gets the cotangent of a second scan over every ancestor of the
      target that applies each primitive's own rule; it never replaces a
      gradient of the first scan;
    - a node with no path to the target gets zeros.

    Each scan runs at most once, when a read first needs it, under the field's
    lock. From a network's second backward from a target on, the gradients of
    the parameters and float inputs come from a prepared plan of the backward
    nodes (``topos.model.interpreter``), which reads the run's forward values and
    writes each gradient into a buffer of its own: the graph's rules are the
    first scan's, applied in the same order, so both give the same gradients to
    the last bit.
    """

    def __init__(self, run, target):
        self.run = run
        self.target = target
        self._needed = run.network._needed_for(target)
        self._lock = threading.Lock()
        self._cotangents = None  # the first scan's, by node index (formed on first need)
        self._complete = None  # the second scan's, over every ancestor (formed on first need)
        self._gradients = {}
        prepared = run.network._prepared_plan(target)
        if prepared is None:
            self._cotangents = self._scan(self._needed, network_composites(run.network))
        else:
            values, _, _, _ = prepared.run({}, {}, bound_values=run._values)
            self._gradients = {wrt: values[gradient] for wrt, gradient in prepared.plan.gradients}

    def _scan(self, needed, composites=None):
        nodes = self.run.network.nodes()
        values = self.run._values
        seed = np.ones((), dtype=nodes[self.target].dtype)
        with np.errstate(all="ignore"):
            return reverse_scan(nodes, self.target, EagerEmitter(), values, needed, seed, composites)

    def _first_scan(self):
        """The cotangents of the nodes on a path from a variable to the target, composites in closed form."""
        if self._cotangents is None:
            with self._lock:
                if self._cotangents is None:
                    self._cotangents = self._scan(self._needed, network_composites(self.run.network))
        return self._cotangents

    def _second_scan(self):
        """The cotangents of every ancestor of the target, each primitive by its own rule."""
        if self._complete is None:
            with self._lock:
                if self._complete is None:
                    self._complete = self._scan(ancestors(self.run.network.nodes(), self.target))
        return self._complete

    def _array(self, index):
        gradient = self._gradients.get(index)
        if gradient is not None:
            return gradient
        node = self.run.network.nodes()[index]
        array = self._first_scan().get(index)
        if array is None and (not self._needed[index] or index in inner_nodes(network_composites(self.run.network))):
            # The first scan forms no cotangent inside a composite, nor for a node that depends on constants alone.
            array = self._second_scan().get(index)
        if array is None:
            return np.zeros(node.shape, dtype=node.dtype if node.dtype in FLOAT_DTYPES else self.run.network.dtype)
        if array.shape != node.shape:
            array = np.broadcast_to(array, node.shape)
        return array

    def of(self, symbol):
        """d target / d the node that ``symbol`` names, as a ``Tensor`` of that node's shape.

        A node with no path to the target gets zeros (an ``int32`` or ``uint32`` node, zeros
        of the network's dtype). Raises ``FeedError`` for a symbol of another network.
        """
        return Tensor(self._array(self.run.network.index_of(symbol)))

    def __repr__(self):
        return f"<Field: d node {self.target} / d each of {plural(len(self.run.network), 'node')}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        nodes = self.run.network.nodes()
        sources = [node for node in nodes if node.opcode in ("Parameter", "Input")]
        cells = []
        for node in sources[:SHOWN_NODES]:
            gradient = self._array(node.index)
            cells.append((node.index, node.opcode, node.name or "", format_shape(node.shape), values_text(gradient)))
        target = nodes[self.target]
        summary = f"Field: d node {self.target} ({target.opcode}) / d each node, shown for the parameters and inputs"
        columns = ["node", "opcode", "name", "shape", "gradient"]
        return values_bundle("field", summary, columns, cells, hidden=len(sources) - len(cells))

    def parameters(self, parameters=None):
        """The gradients of the parameter slots, as a ``Gradients`` table."""
        parameters = parameters if parameters is not None else self.run.parameters
        self.run.network.check_parameters(parameters)
        return Gradients._made_here(self.run.network, {index: self._array(index) for index in parameters.slots})
