"""What the batching rules share (``Primitive.batch``, ``topos.vmap``): the batch moved to the front.

A batching rule takes the batched operands' handles and, for each, the axis its batch runs
along (None for an operand every example shares), and returns the batched result with its own
batch axis. Most ops already run over leading axes (a matrix product, a factorisation, a row
kernel over the last axis) or take their axes as attributes: for them the rule moves every
batch axis to the front (a ``Transpose``), stretches a shared operand along a new leading axis
(a ``Broadcast``: the ops take operands of equal shapes, as recording leaves them), shifts the
axis attributes by one and applies the op once. The rules below are those forms; an op's own
block names the one it takes (``batch = batching.leading``) or writes its own from these helpers.

As JAX's ``batching.py`` does, a node whose operands are all shared is not batched at all:
``topos.vmap`` re-emits it unchanged without asking for a rule.
"""

from ..errors import MissingRuleError


def batch_size(e, operands, dims):
    """The batch's length: the extent of the first batched operand along its batch axis."""
    for handle, dim in zip(operands, dims):
        if dim is not None:
            return e.shape(handle)[dim]
    raise MissingRuleError("a batching rule was called with no batched operand")


def example_shape(e, handle, dim):
    """The shape one example of ``handle`` has: its shape without the batch axis ``dim``."""
    shape = tuple(e.shape(handle))
    return shape if dim is None else shape[:dim] + shape[dim + 1 :]


def to_front(e, handle, dim):
    """``handle`` with its batch axis ``dim`` moved to axis 0 (no node where it is there already)."""
    if dim == 0:
        return handle
    rank = len(e.shape(handle))
    return e.transpose(handle, (dim,) + tuple(axis for axis in range(rank) if axis != dim))


def move(e, handle, dim, target):
    """``handle`` with its batch axis moved from ``dim`` to ``target`` (both non-negative)."""
    if dim == target:
        return handle
    rank = len(e.shape(handle))
    rest = [axis for axis in range(rank) if axis != dim]
    rest.insert(target, dim)
    return e.transpose(handle, tuple(rest))


def stretched(e, handle, size):
    """A shared operand repeated along a new leading axis of ``size``: one ``Broadcast``, no copy."""
    return e.broadcast(handle, (size,) + tuple(e.shape(handle)))


def to_front_all(e, operands, dims):
    """Every operand with its batch at axis 0, a shared one stretched to the batch's length."""
    size = batch_size(e, operands, dims)
    return [stretched(e, h, size) if d is None else to_front(e, h, d) for h, d in zip(operands, dims)]


def shifted(axes):
    """Axes of one example as axes of the batch, whose axis 0 is the batch: each one further on."""
    return tuple(axis + 1 for axis in axes)


def leading(primitive, e, operands, dims, attrs):
    """The rule of an op that runs over leading axes and takes no axis attribute: every operand's
    batch at the front, the op applied once, its result's batch at the front too."""
    return e.apply(primitive.name, to_front_all(e, operands, dims), **attrs), 0


def elementwise(primitive, e, operands, dims, attrs):
    """An elementwise op: one operand keeps its batch axis where it is; several meet at axis 0."""
    if len(operands) == 1:
        return e.apply(primitive.name, operands, **attrs), dims[0]
    return leading(primitive, e, operands, dims, attrs)


def leading_axis(primitive, e, operands, dims, attrs):
    """``leading`` for an op with one ``axis`` attribute (a sort, a running fold, a concatenation)."""
    return e.apply(primitive.name, to_front_all(e, operands, dims), **dict(attrs, axis=attrs["axis"] + 1)), 0


def leading_axes(primitive, e, operands, dims, attrs):
    """``leading`` for an op with an ``axes`` attribute (a reduction, a reversal)."""
    return e.apply(primitive.name, to_front_all(e, operands, dims), **dict(attrs, axes=shifted(attrs["axes"]))), 0


def rows(e, results, size):
    """Results batched at axis 0, each flattened into one row an example and the rows joined: the batched
    value of a node that packs several results into one vector (a ``Scan``'s, a ``Cond``'s)."""
    parts = []
    for result in results:
        count = 1
        for extent in e.shape(result):
            count *= extent
        parts.append(e.reshape(result, (size, count // size)))
    return parts[0] if len(parts) == 1 else e.apply("Concatenate", parts, axis=1)


def declined(reason):
    """A rule that declines, naming the primitive, the transformation and why."""

    def rule(primitive, e, operands, dims, attrs):
        raise MissingRuleError(f"{primitive.name} has no batching rule (vmap): {reason}")

    return rule


def along_axis(e, indices, shape, axis):
    """Batched indices (batch first) flattened and stretched into the indices of a ``TakeAlongAxis``
    (or ``ScatterAddAlongAxis``) along ``axis`` of a value of ``shape``: the batched form of a
    ``Take`` (or ``ScatterAdd``) whose examples each index their own values."""
    taken = tuple(e.shape(indices))
    size = 1
    for extent in taken[1:]:
        size *= extent
    flat = e.reshape(indices, taken[:1] + (1,) * (axis - 1) + (size,) + (1,) * (len(shape) - axis - 1))
    return e.broadcast(flat, tuple(shape[:axis]) + (size,) + tuple(shape[axis + 1 :]))
