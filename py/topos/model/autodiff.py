"""The reverse scan, shared by eager gradients and the gradient reading.

Derivative rules are written against an *emitter*: an object that applies
primitives to handles. ``EagerEmitter`` handles are numpy arrays, so a rule
computes numbers (``Run.backward``); the compiler's graph emitter handles are
node indices, so the same rule writes the backward as graph nodes. One rule,
two readings, no drift between them. What a backward may start from and
differentiate with respect to is checked here too, once for both
(``check_backward``).
"""

import numpy as np

from ..dtypes import FLOAT_DTYPES
from ..errors import DtypeError, ShapeError
from ..ops import lookup
from ..ops.emitter import Emitter
from ..text import format_shape
from .nodes import describe_node, user_source


def check_backward(nodes, target, wrt=()):
    """Raise unless a backward can run from node ``target`` with respect to the nodes ``wrt`` (indices).

    The target must be rank 0 (``ShapeError`` otherwise) and floating point
    (``DtypeError``), and so must every ``wrt`` node hold floats (``DtypeError``);
    both errors are also ``ValueError``. ``Run.backward`` and the compiler's
    ``entry.backward`` both check through here.
    """
    node = nodes[target]
    if node.shape != ():
        raise ShapeError(
            f"backward needs a rank-0 target; {describe_node(node)} has shape {format_shape(node.shape)}",
            shapes=[node.shape],
            source=user_source(),
        )
    if node.dtype not in FLOAT_DTYPES:
        raise DtypeError(f"backward needs a floating-point target; {describe_node(node)} is {node.dtype}")
    for index in wrt:
        node = nodes[index]
        if node.dtype not in FLOAT_DTYPES:
            raise DtypeError(f"no gradient with respect to {describe_node(node)}: it holds {node.dtype}")


class EagerEmitter(Emitter):
    """Handles are numpy arrays; constants are rank-0 arrays that numpy broadcasts."""

    def apply(self, opcode, operands, **attrs):
        return lookup(opcode).forward(operands, attrs)

    def shape(self, handle):
        return handle.shape

    def like(self, handle, value):
        return np.array(value, dtype=handle.dtype)

    def constant(self, shape, dtype, value):
        return np.broadcast_to(np.asarray(value, dtype=dtype), tuple(shape))


def ancestors(nodes, target):
    """The indices of the nodes ``target`` reads, directly or not, and itself."""
    seen = bytearray(len(nodes))
    seen[target] = 1
    for index in range(target, -1, -1):
        if seen[index]:
            for operand in nodes[index].operands:
                seen[operand] = 1
    return seen


def descendants(nodes, sources):
    """The indices of nodes that read any of ``sources``, directly or not, and those sources."""
    reach = bytearray(len(nodes))
    for index in sources:
        reach[index] = 1
    for node in nodes:
        if not reach[node.index] and any(reach[j] for j in node.operands):
            reach[node.index] = 1
    return reach


def needed_nodes(nodes, target, wrt):
    """Nodes whose cotangent the scan must form: on a path from ``wrt`` to ``target``."""
    up = ancestors(nodes, target)
    down = descendants(nodes, wrt)
    return bytearray(a & b for a, b in zip(up, down))


def reverse_scan(nodes, target, emitter, handles, needed, seed, composites=None, seeds=None):
    """The engine's reverse scan as a loop, from ``target`` back to node 0.

    ``handles[i]`` is node i's forward value in the emitter's terms, ``needed``
    marks the nodes whose cotangents are wanted, and ``seed`` is the target's
    cotangent. Contributions of a value read several times are summed with
    ``Add``; those of slices that cut a value end to end are joined with one
    ``Concatenate`` (``slice_tilings``). ``composites`` maps the root of a softmax, log-softmax or layer norm
    (``topos.model.composites``) to its group, whose closed-form rule then gives
    the cotangent of the group's source at once: the nodes inside get none.
    ``seeds`` gives the cotangents of further nodes before ``target`` (a loop step's several
    outputs, ``topos.model.loops``). Returns a dict from node index to cotangent handle.
    """
    cotangents = {**(seeds or {}), target: seed}
    tilings = slice_tilings(nodes, target, needed)
    tile_of = {piece: value for value, (_, pieces) in tilings.items() for piece in pieces}
    stashed = {}  # a tiling slice's index -> its cotangent, joined when the scan reaches the value it slices
    for index in range(target, -1, -1):
        if index in tilings:
            joined = join_tiles(nodes, index, tilings[index], stashed, emitter, handles)
            if joined is not None:
                previous = cotangents.get(index)
                cotangents[index] = joined if previous is None else emitter.add(previous, joined)
        g = cotangents.get(index)
        if g is None:
            continue
        node = nodes[index]
        if not node.operands:
            continue
        group = composites.get(index) if composites else None
        if group is not None and needed[group.source]:
            emitter.at(node)
            emitter.wanted = None
            source, grad = group.vjp(emitter, g, handles)
            previous = cotangents.get(source)
            cotangents[source] = grad if previous is None else emitter.add(previous, grad)
            continue
        if index in tile_of:
            stashed[index] = g
            continue
        primitive = lookup(node.opcode)
        if not primitive.differentiable:
            continue
        wanted = [needed[j] for j in node.operands]
        if not any(wanted):
            continue
        operands = [handles[j] for j in node.operands]
        emitter.at(node)
        emitter.wanted = wanted
        grads = primitive.vjp(emitter, g, operands, handles[index], node.attrs)
        for operand, grad, want in zip(node.operands, grads, wanted):
            if grad is None or not want:
                continue
            previous = cotangents.get(operand)
            cotangents[operand] = grad if previous is None else emitter.add(previous, grad)
    emitter.wanted = None
    return cotangents


def slice_tilings(nodes, target, needed):
    """The values a backward joins rather than sums: value index -> ``(axis, slice indices in axis order)``.

    A value read only by slices (step 1, each whole but along one axis, the same
    axis for all) that cut it into pieces end to end, as attention cuts its
    query-key-value product into three, has the pieces' cotangents side by side
    as its own: one ``Concatenate`` of them, where each slice's rule pads its
    cotangent to the value's shape and the pads are summed (three passes over the
    whole value, two more for the adds). Only where every slice is on the path to
    ``target`` (``needed``).
    """
    readers = {}
    for node in nodes[: target + 1]:
        for operand in node.operands:
            readers.setdefault(operand, []).append(node)
    tilings = {}
    for value, reading in readers.items():
        if len(reading) < 2 or not needed[value] or any(r.opcode != "Slice" or not needed[r.index] for r in reading):
            continue
        shape = nodes[value].shape
        cuts = set()
        pieces = []
        for r in reading:
            start, stop, step = r.attrs["start"], r.attrs["stop"], r.attrs["step"]
            cut = [axis for axis, extent in enumerate(shape) if (start[axis], stop[axis]) != (0, extent)]
            if any(st != 1 for st in step) or len(cut) != 1:
                break
            cuts.add(cut[0])
            pieces.append((start[cut[0]], stop[cut[0]], r.index))
        else:
            if len(cuts) != 1:
                continue
            (axis,) = cuts
            pieces.sort()
            ends = [0] + [stop for _, stop, _ in pieces]
            if all(low == end and low < high for (low, high, _), end in zip(pieces, ends)) and ends[-1] == shape[axis]:
                tilings[value] = (axis, [index for _, _, index in pieces])
    return tilings


def join_tiles(nodes, value, tiling, stashed, emitter, handles):
    """The cotangent of ``value`` from its tiling slices' (``slice_tilings``): their ``Concatenate`` when
    each has one, else each padded by the slice's own rule and summed in the scan's order, as without
    the tiling; None when none has one."""
    axis, pieces = tiling
    cotangents = [stashed.pop(piece, None) for piece in pieces]
    if all(g is not None for g in cotangents):
        emitter.at(nodes[pieces[0]])
        return emitter.apply("Concatenate", cotangents, axis=axis)
    total = None
    rule = lookup("Slice")
    for piece, g in sorted(zip(pieces, cotangents), reverse=True):
        if g is None:
            continue
        node = nodes[piece]
        emitter.at(node)
        emitter.wanted = [True]
        (padded,) = rule.vjp(emitter, g, [handles[value]], handles[piece], node.attrs)
        total = padded if total is None else emitter.add(total, padded)
    emitter.wanted = None
    return total
