"""Lowering: the nodes a reading evaluates, the backward written as graph nodes.

``lower(network, readables, target, wrt)`` gives what ``entry.lower()`` and the
network's own prepared forward and backward run: every node (the backward ones
appended after the network's), the schedule and the gradients' nodes. It
lives in the model because the model runs its own backward through the one
interpreter (``topos.model.interpreter``); the compiler's ``Entry`` and ``Plan``
read the same.

The backward (the gradient reading):

``GraphEmitter`` is the emitter whose handles are node indices. It runs the very
``reverse_scan`` that ``Run.backward`` runs (``topos.model.autodiff``), so each
derivative rule appends the primitives it would otherwise evaluate: the summing
of several readers' contributions becomes ``Add`` nodes (those of slices that cut
a value end to end, one ``Concatenate``), un-broadcasting becomes
``Sum`` and ``Reshape`` nodes; a softmax, log-softmax or layer norm becomes one
``SoftmaxGrad``, ``LogSoftmaxGrad`` or ``LayerNormGrad`` node (``topos.model.composites``),
as in the eager scan. Evaluated by the numpy interpreter, these nodes
perform the same numpy calls in the same order as the eager scan, so the two
gradients agree to the last bit.
"""

import numpy as np

from .autodiff import Emitter, needed_nodes, reverse_scan
from .composites import differentiated_composites
from .nodes import Node
from .remat import recomputable, rematerialise
from .tape import Tape


class GradientTape(Tape):
    """A tape over a network's nodes that also takes constants with a given source line."""

    def node(self, index):
        return self._nodes[index]


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


def lower(network, readables, target=None, wrt=(), remat=None):
    """The nodes that the readables (and the gradients of ``target`` with respect to ``wrt``) need.

    ``readables`` and ``wrt`` are node indices. Returns ``(nodes, schedule,
    gradients)``: every node (the network's, then the backward nodes that a
    gradient reads, renumbered after them), the indices evaluated (ascending),
    and for each index in ``wrt`` the node holding its gradient. ``remat`` names
    the forward values the backward recomputes rather than keeps
    (``topos.model.remat.POLICIES``; None keeps them all).
    """
    forward = network.nodes()
    if target is None:
        nodes, gradients = forward, ()
    else:
        nodes, gradients = append_backward(network, target, wrt)
    evaluated = needed_by(nodes, tuple(readables) + tuple(gradients))
    if target is not None and remat is not None:
        kept = set(readables) | set(gradients) | {target}
        marks = recomputable(nodes, len(forward), evaluated, kept, remat)
        if any(marks):
            nodes, gradients, _ = rematerialise(nodes, len(forward), gradients, marks, evaluated)
            evaluated = needed_by(nodes, tuple(readables) + tuple(gradients))
    if target is not None:
        nodes, gradients, evaluated = _drop_dead_backward(nodes, len(forward), gradients, evaluated)
    return nodes, tuple(i for i in range(len(nodes)) if evaluated[i]), tuple(gradients)


def needed_by(nodes, outputs):
    """Marks (a bytearray) of the nodes that ``outputs`` read, directly or not, and the outputs."""
    needed = bytearray(len(nodes))
    for index in outputs:
        needed[index] = 1
    for index in range(max(outputs, default=-1), -1, -1):
        if needed[index]:
            for operand in nodes[index].operands:
                needed[operand] = 1
    return needed


def _drop_dead_backward(nodes, forward_count, gradients, evaluated):
    """Remove backward nodes that no gradient reads (a rule's unused cotangent) and renumber the rest."""
    renumber = list(range(forward_count))
    kept = list(nodes[:forward_count])
    for node in nodes[forward_count:]:
        if not evaluated[node.index]:
            renumber.append(None)
            continue
        index = len(kept)
        renumber.append(index)
        if index == node.index:
            kept.append(node)
        else:
            operands = tuple(renumber[j] for j in node.operands)
            kept.append(
                Node(
                    index,
                    node.opcode,
                    operands,
                    node.shape,
                    node.dtype,
                    node.attrs,
                    payload=node.payload,
                    name=node.name,
                    source=node.source,
                    scope=node.scope,
                )
            )
    new_evaluated = bytearray(len(kept))
    for old, new in enumerate(renumber):
        if new is not None and evaluated[old]:
            new_evaluated[new] = 1
    return tuple(kept), tuple(renumber[g] for g in gradients), new_evaluated
