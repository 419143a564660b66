"""Walking a body's nodes through an emitter: how a primitive that holds a body runs and differentiates it.

A transformation's function is recorded once (``topos.model.bodies.trace``); the
primitive that holds it (a loop, a custom derivative) holds its nodes, objects
with ``index``, ``opcode``, ``operands``, ``attrs``, ``shape``, ``dtype`` and
``payload`` (``topos.model.nodes.Node``; this layer reads them and imports
nothing above). ``inline`` applies them through any emitter: the eager one runs
the body on numpy arrays, the recording's and the compiler's append its nodes
to a tape, so one walk is the body's forward, its inlined copy and the place a
derivative rule re-records it.
"""

import numpy as np

from ..errors import ArgumentError
from .registry import lookup


def inline(e, nodes, sources):
    """Every node's handle after applying ``nodes`` through the emitter ``e``; a list, one a node.

    ``sources`` maps node indices to the handles that stand for them (the body's
    arguments and captured values); any other source node must be a ``Leaf``, which
    becomes a constant of its payload (``e.constant``). Nodes no output reads are
    applied too: a caller that wants fewer passes ``nodes`` cut to what it needs.
    """
    handles = []
    for node in nodes:
        if node.index in sources:
            handles.append(sources[node.index])
        elif not node.operands and node.opcode in ("Parameter", "Input", "Leaf"):
            if node.opcode != "Leaf":
                raise ArgumentError(f"a body's {node.opcode} node {node.index} has no value given for it")
            handles.append(e.constant(node.shape, node.dtype, node.payload))
        else:
            handles.append(e.apply(node.opcode, [handles[j] for j in node.operands], **node.attrs))
    return handles


def evaluate(nodes, sources, outputs):
    """The body run on numpy arrays: ``sources`` maps source indices to arrays; the arrays of ``outputs``.

    Only the nodes some output reads are computed (a loop body's forward, every iteration)."""
    wanted = bytearray(len(nodes))
    for index in outputs:
        wanted[index] = 1
    for node in reversed(nodes):
        if wanted[node.index]:
            for j in node.operands:
                wanted[j] = 1
    values = [None] * len(nodes)
    for node in nodes:
        if not wanted[node.index]:
            continue
        if node.index in sources:
            values[node.index] = sources[node.index]
        elif not node.operands and node.opcode == "Leaf":
            values[node.index] = node.payload
        elif not node.operands and node.opcode in ("Parameter", "Input"):
            raise ArgumentError(f"a body's {node.opcode} node {node.index} has no value given for it")
        else:
            values[node.index] = np.asarray(lookup(node.opcode).forward([values[j] for j in node.operands], node.attrs))
    return [values[i] for i in outputs]
