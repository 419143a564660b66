"""Sums of paddings into disjoint windows: one buffer, each operand copied into its window.

The derivative of slicing one value into parts (the attention's q, k and v, cut from
one projection) is the sum of the parts' gradients, each zero-padded back to the whole:
``Add(Add(Pad(gq), Pad(gk)), Pad(gv))``. Launched one node at a time that is a fill and
a copy a padding, a dense copy first for each part that a transpose left strided (its
``Reshape`` cannot relabel it), then the adds. Where the paddings' windows do not
overlap, every element of the sum is one part's element or zero, so the sum is one
buffer that each part is copied into, once, straight from where it lies (through its
``Reshape`` too, when the window can be seen in the part's shape), and zeros are filled
only when the windows leave a gap. The gallery transformer's backward takes three
launches a layer for what took ten.

``x + 0`` is ``x`` in float32 except that ``-0 + 0`` is ``+0``: the copy keeps a
negative zero that the adds would have made positive, equal as numbers.

Finding pad sums reads the plan only; it never changes it.
"""

from dataclasses import dataclass

import numpy as np

from .views import split_view

#: The largest sum whose windows are checked for overlap (a mask of this many bytes).
MAX_CHECKED_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class PadSum:
    """A tree of ``Add`` nodes (``adds``, the last the root) whose leaves are ``pads``, each read by
    the tree alone, into windows that do not overlap; ``reshapes`` maps a pad to the ``Reshape``
    it reads, when that Reshape is read by the pad alone; ``gaps`` says whether zeros remain."""

    adds: tuple
    pads: tuple
    reshapes: dict
    gaps: bool

    @property
    def root(self):
        return self.adds[-1]

    @property
    def nodes(self):
        return self.adds + self.pads + tuple(self.reshapes.values())


def find_pad_sums(nodes, schedule, outputs, on_device, excluded=()):
    """{root: PadSum} for the plan's sums of disjoint paddings (on the device, none in ``excluded``)."""
    claimed = set(excluded)
    alone = sole_reader(nodes, schedule, outputs, on_device, claimed)
    order = {index: position for position, index in enumerate(schedule)}
    found = {}
    for root in reversed(schedule):
        node = nodes[root]
        if root in claimed or node.opcode != "Add" or not on_device(root) or node.dtype != "float32":
            continue
        tree = _tree(nodes, root, alone)
        if tree is None or len(tree[1]) < 2:
            continue
        adds, pads = tree
        gaps = _gaps(nodes, pads, node.shape)
        if gaps is None:
            continue
        reshapes = {}
        for pad in pads:
            operand = nodes[pad].operands[0]
            if nodes[operand].opcode == "Reshape" and alone(operand):
                reshapes[pad] = operand
        adds = tuple(sorted(adds, key=order.get)) + (root,)
        found[root] = PadSum(adds, tuple(sorted(pads, key=order.get)), reshapes, gaps)
        claimed.update(found[root].nodes)
    return found


def sole_reader(nodes, schedule, outputs, on_device, claimed):
    """``alone(index)``: whether node ``index`` is read once, by one node, is no output, runs on the device
    and is not in ``claimed`` (a set the caller grows as it claims nodes): a node that may be absorbed."""
    readers = {}
    for index in schedule:
        for operand in nodes[index].operands:
            readers[operand] = readers.get(operand, 0) + 1
    outputs = set(outputs)

    def alone(index):
        return index not in outputs and readers.get(index, 0) == 1 and index not in claimed and on_device(index)

    return alone


def _tree(nodes, root, alone):
    """``(adds, pads)`` below the Add ``root``: the Adds and Pads of its shape that it alone reads, down to
    Pads; None when another node is among its leaves."""
    adds, pads = [], []
    shape = nodes[root].shape

    def walk(index):
        for operand in nodes[index].operands:
            reader = nodes[operand]
            if reader.shape != shape or not alone(operand):
                return False
            if reader.opcode == "Add" and walk(operand):
                adds.append(operand)
            elif reader.opcode == "Pad":
                pads.append(operand)
            else:
                return False
        return True

    return (adds, pads) if walk(root) else None


def _gaps(nodes, pads, shape):
    """Whether the pads' windows leave elements no pad writes; None when two windows overlap."""
    size = int(np.prod(shape, dtype=np.int64))
    if size > MAX_CHECKED_ELEMENTS:
        return None
    mask = np.zeros(shape, dtype=np.uint8)
    for pad in pads:
        node = nodes[pad]
        low, interior = node.attrs["low"], node.attrs["interior"]
        source = nodes[node.operands[0]].shape
        mask[window(low, interior, source)] += 1
    if mask.max() > 1:
        return None
    return bool((mask == 0).any())


def window(low, interior, source):
    """The index (slices) of the elements a padding of ``source`` writes its operand into."""
    return tuple(
        slice(lo, lo + (extent - 1) * (inner + 1) + 1, inner + 1) for lo, inner, extent in zip(low, interior, source)
    )


def emit_pad_sum(k, pad_sum):
    """The launches of ``pad_sum`` through the selector ``k``; returns the sum's view (a new buffer)."""
    from . import launch as build

    nodes = k.nodes
    root = nodes[pad_sum.root]
    out = k.allocate(root.shape, root.dtype)
    launches = []
    if pad_sum.gaps:
        launches.append((build.fill(out, 0.0), ()))
    for pad in pad_sum.pads:
        node = nodes[pad]
        operand = node.operands[0]
        step = tuple(inner + 1 for inner in node.attrs["interior"])
        target = out.slice(node.attrs["low"], step, nodes[operand].shape)
        reshape = nodes[pad_sum.reshapes[pad]] if pad in pad_sum.reshapes else None
        launch, covers = copy_into(k, operand, target, reshape)
        launches.append((launch, covers + (pad,)))
    # The adds are covered by the first launch (the zeros, or the first part's copy).
    for position, (launch, covers) in enumerate(launches):
        k.launch(launch, (pad_sum.adds if position == 0 else ()) + covers, "Pad+Add")
    return out


def copy_into(k, operand, target, reshape=None):
    """The launch that writes node ``operand``'s value into ``target`` (a window of a new buffer), and the
    nodes it covers besides its caller's.

    ``reshape``: the Reshape node ``operand`` is, read by the caller alone and launched by nobody else.
    Its source is read in place, in the new shape where its strides allow (``View.reshape``), else
    straight from where it lies into the window seen in the source's shape (``split_view`` of the
    window); only when neither can is the source first copied dense (the one launch the Reshape
    itself would have made).
    """
    from . import launch as build

    if reshape is None:
        source, covers = k.views[operand], ()
    else:
        inner = k.views[reshape.operands[0]]
        covers = (reshape.index,)
        source = inner.reshape(reshape.shape)
        if source is None:
            split = split_view(target, inner.shape)
            if split is not None:
                source, target = inner, split
            else:
                source = k.dense(inner, reshape).reshape(reshape.shape)
    return (build.fill(target, source.constant) if source.is_constant else build.copy(source, target)), covers
