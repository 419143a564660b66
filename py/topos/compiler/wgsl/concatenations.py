"""Concatenations of reshaped parts: each part copied into its window from where its source lies.

The derivative of cutting a value end to end into slices (the attention's q, k and v, cut
from one projection) is one ``Concatenate`` of the slices' gradients. In the transformer
each of those is ``Reshape(Transpose(g))``, the heads merged back: the transpose is a
view, but the reshape cannot relabel a strided view, so launched one node at a time each
part is a dense copy of its own, then the Concatenate's copy into its window: two
launches a part. Here the Reshape is absorbed when the Concatenate alone reads it, and
its source is copied straight into the output's window seen in the source's shape (the
window split, where the source cannot be merged: ``pad_sums.copy_into``, the same copy a
sum of disjoint paddings makes): one launch a part. A part that is no such Reshape is
copied as ``Concatenate.wgsl_launch`` copies it.

Finding concatenations reads the plan only; it never changes it.
"""

from dataclasses import dataclass

from .pad_sums import copy_into, sole_reader


@dataclass(frozen=True)
class Concatenation:
    """A ``Concatenate`` node (``root``) and the ``Reshape`` operands it absorbs (``reshapes``, in operand
    order), each read by the Concatenate alone."""

    root: int
    reshapes: tuple

    @property
    def nodes(self):
        return (self.root,) + self.reshapes


def find_concatenations(nodes, schedule, outputs, on_device, excluded=()):
    """{root: Concatenation} for the plan's Concatenates (on the device, none in ``excluded``) that read
    at least one Reshape no other node reads."""
    claimed = set(excluded)
    alone = sole_reader(nodes, schedule, outputs, on_device, claimed)
    found = {}
    for root in schedule:
        node = nodes[root]
        if root in claimed or node.opcode != "Concatenate" or not on_device(root):
            continue
        reshapes = tuple(operand for operand in node.operands if nodes[operand].opcode == "Reshape" and alone(operand))
        if reshapes:
            found[root] = Concatenation(root, reshapes)
            claimed.update(found[root].nodes)
    return found


def emit_concatenation(k, concatenation):
    """The launches of ``concatenation`` through the selector ``k``, one a part; returns its view (a new buffer)."""
    node = k.nodes[concatenation.root]
    axis = node.attrs["axis"]
    out = k.output(node)
    offset = 0
    for operand in node.operands:
        shape = k.nodes[operand].shape
        start = tuple(offset if a == axis else 0 for a in range(len(node.shape)))
        target = out.slice(start, (1,) * len(node.shape), shape)
        reshape = k.nodes[operand] if operand in concatenation.reshapes else None
        launch, covers = copy_into(k, operand, target, reshape)
        k.launch(launch, covers + (node.index,), "Concatenate")
        offset += shape[axis]
    return out
