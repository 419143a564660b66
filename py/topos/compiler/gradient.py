"""The gradient reading: the reverse scan written as graph nodes.

``GraphEmitter`` is the emitter whose handles are node indices. It runs the very
``reverse_scan`` that ``Run.backward`` runs (``topos.model.autodiff``), so each
derivative rule appends the primitives it would otherwise evaluate: the summing
of several readers' contributions becomes ``Add`` nodes, un-broadcasting becomes
``Sum`` and ``Reshape`` nodes; a softmax, log-softmax or layer norm becomes one
``SoftmaxGrad``, ``LogSoftmaxGrad`` or ``LayerNormGrad`` node (``topos.model.composites``),
as in the eager scan. Evaluated by the numpy interpreter, these nodes
perform the same numpy calls in the same order as the eager scan, so the two
gradients agree to the last bit.
"""

import numpy as np

from ..model.autodiff import Emitter, needed_nodes, reverse_scan
from ..model.composites import differentiated_composites
from ..model.nodes import Node
from ..model.tape import Tape


class GradientTape(Tape):
    """A tape over a network's nodes that also takes constants with a given source line."""

    def node(self, index):
        return self._nodes[index]

    def append_leaf(self, payload, source):
        """Append a ``Leaf`` holding ``payload`` (read-only), recorded at ``source``."""
        self._check_open()
        index = len(self._nodes)
        self._nodes.append(
            Node(index, "Leaf", (), payload.shape, payload.dtype.name, {}, payload=payload, source=source)
        )
        return index


class GraphEmitter(Emitter):
    """Handles are node indices on a ``GradientTape``; every rule appends checked nodes.

    Nodes appended while the scan applies a forward node's rule carry that forward
    node's source line, so the gradient reading links back to the user's code.
    """

    def __init__(self, tape, source=None):
        self.tape = tape
        self.source = source

    def at(self, node):
        self.source = node.source

    def apply(self, opcode, operands, **attrs):
        return self.tape.append(opcode, list(operands), attrs, self.source)

    def shape(self, handle):
        return self.tape.node(handle).shape

    def like(self, handle, value):
        # A constant of the handle's full shape: the graph's elementwise ops take operands of one
        # shape, and a zero-stride payload costs one element of memory.
        node = self.tape.node(handle)
        return self.constant(node.shape, node.dtype, value)

    def constant(self, shape, dtype, value):
        payload = np.broadcast_to(np.array(value, dtype=dtype), shape)
        return self.tape.append_leaf(payload, self.source)


def append_backward(network, target, wrt):
    """Append the backward of ``target`` with respect to the nodes ``wrt`` to the network's nodes.

    Returns ``(nodes, gradients)``: every node (forward ones first, then the
    backward ones, numbered after them) and, for each index in ``wrt``, the index
    of the node that holds d target / d that node.
    """
    forward = network.nodes()
    target_node = forward[target]
    tape = GradientTape(network.dtype, _nodes=forward, _parent_lineages=network.lineages)
    emitter = GraphEmitter(tape, source=target_node.source)
    seed = emitter.constant((), target_node.dtype, 1.0)
    needed = needed_nodes(forward, target, wrt)
    composites = differentiated_composites(forward, keep=wrt)
    cotangents = reverse_scan(forward, target, emitter, list(range(len(forward))), needed, seed, composites)

    gradients = []
    for index in wrt:
        node = forward[index]
        emitter.source = node.source
        gradient = cotangents.get(index)
        if gradient is None:
            # No path from this node to the target: its gradient is zero.
            gradient = emitter.constant(node.shape, node.dtype, 0.0)
        gradients.append(emitter.broadcast(gradient, node.shape))
    return tape.nodes(), gradients
