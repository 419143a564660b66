"""Sorting, searching and scattering: ``topos.sort``, ``argsort``, ``searchsorted``,
``take_along_axis``, ``put_along_axis``, ``scatter_add`` and ``scatter``.

Each records the primitives of ``topos.ops.sort`` (and ``ScatterAdd``, ``Take``'s transpose,
for the scatters), so every reading shows the sort, the gather or the scatter itself. The
scatters are functional, as JAX's ``x.at[i].add(u)``: they return a new value and leave
``operand`` as it was, so a gradient reaches the operand and the updates alike. Embeddings
train through them: the gradient of ``take(table, ids)`` is a ``ScatterAdd`` of the rows'
cotangents, the same ``scatter_add(zeros, ids, rows)`` written by hand.
"""

import numpy as np

from ..errors import ArgumentError
from ..ops.registry import axis_index
from . import arguments
from . import functions as F


def _flat_or(x, axis):
    """numpy's ``axis=None``: the flattened value along its one axis."""
    return (F.reshape(x, (-1,)), 0) if axis is None else (x, axis)


def sort(x, axis=-1, descending=False):
    """``x`` sorted along ``axis`` (records ``Sort``), stable: numpy's ``np.sort`` order, a NaN last.

    ``descending=True`` is JAX's ``jnp.sort(x, descending=True)``: largest first, a NaN first
    (it counts as the largest), equal values in their original order. ``axis=None`` sorts the
    flattened value. The gradient goes back through the permutation that sorted ``x``, as in
    JAX: each element receives the cotangent of the place it was sorted to.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    x = tape.parameter(np.array([3.0, 1.0, 2.0]))
    ranked = topos.sort(x)
    loss = topos.sum(ranked * np.array([1.0, 10.0, 100.0]))
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    print(run.of(ranked).numpy())  # [1. 2. 3.]
    print(run.backward(loss).of(x).numpy())  # [100.   1.  10.]
    ```
    """
    x, axis = _flat_or(arguments.recorded(x, "sort"), axis)
    return x.tape.apply("Sort", [x], axis=axis, descending=descending)


def argsort(x, axis=-1, descending=False):
    """The int32 positions that sort ``x`` along ``axis`` (records ``Argsort``), stable as ``sort``.

    As ``np.argsort(x, kind="stable")`` (ascending) and ``jnp.argsort(x, descending=True)``;
    ``axis=None`` indexes the flattened value. No gradient flows through positions.
    """
    x, axis = _flat_or(arguments.recorded(x, "argsort"), axis)
    return x.tape.apply("Argsort", [x], axis=axis, descending=descending)


def searchsorted(a, v, side="left"):
    """Where each value of ``v`` would go in the sorted vector ``a`` to keep it sorted, as int32
    (records ``SearchSorted``): ``np.searchsorted(a, v, side)``. ``side="left"`` counts the
    elements of ``a`` below a value, ``"right"`` those at or below it; a NaN sorts last. ``a``
    must be sorted (``topos.sort``); the answer for an unsorted ``a`` is unspecified, as numpy's.
    ``v`` may be a recorded value, a number or an array; no gradient flows through the counts.
    """
    a = arguments.recorded(a, "searchsorted")
    if side not in ("left", "right"):
        raise ArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    v = arguments.as_value(a.tape, v, a.dtype)
    return a.tape.apply("SearchSorted", [a, v], right=side == "right")


def _along(x, indices, axis, what):
    """``x`` and int32 ``indices`` broadcast against each other on every axis but ``axis``, as numpy does."""
    tape = arguments.recorded(x, what).tape
    indices = arguments.as_indices(tape, indices)
    if axis is None:
        x, axis = F.reshape(x, (-1,)), 0
    if len(x.shape) != len(indices.shape):
        raise ArgumentError(
            f"{what}: indices of rank {len(indices.shape)} for a value of rank {len(x.shape)}: the ranks must agree"
        )
    axis = axis_index(axis, x.shape, what)
    shape = [max(a, b) for a, b in zip(x.shape, indices.shape)]
    x_shape = tuple(x.shape[axis] if d == axis else n for d, n in enumerate(shape))
    index_shape = tuple(indices.shape[axis] if d == axis else n for d, n in enumerate(shape))
    return F.broadcast_to(x, x_shape), F.broadcast_to(indices, index_shape), axis


def take_along_axis(x, indices, axis):
    """``np.take_along_axis(x, indices, axis)`` (records ``TakeAlongAxis``): the elements of ``x`` at
    ``indices`` along ``axis``, which agree with ``x`` on the other axes or broadcast to it.

    ``take_along_axis(x, argsort(x, axis), axis)`` is ``sort(x, axis)``; ``axis=None`` takes from
    the flattened value. Its gradient adds each cotangent back at its index (``ScatterAddAlongAxis``).
    """
    x, indices, axis = _along(x, indices, axis, "take_along_axis")
    return x.tape.apply("TakeAlongAxis", [x, indices], axis=axis)


def _slot_counts(updates, indices, scatter):
    """How many updates land in each slot: a scatter of ones (a constant leaf, so a NaN update counts too)."""
    ones = updates.tape.leaf(np.ones(updates.shape), dtype=updates.dtype)
    return scatter(ones, indices)


def _set(x, updates, indices, scatter):
    """``x`` with the scattered updates in the slots they reach: where several reach one slot, their
    mean (JAX leaves the winner unspecified; a mean is the same on every backend)."""
    counts = _slot_counts(updates, indices, scatter)
    reached = F.greater(counts, 0.0)
    return F.where(reached, scatter(updates, indices) / F.maximum(counts, 1.0), x)


def put_along_axis(x, indices, values, axis):
    """``x`` with ``values`` put at ``indices`` along ``axis``, as ``np.put_along_axis`` on a copy
    (``jnp.put_along_axis(..., inplace=False)``); ``values`` broadcast to the indices' shape.

    Records ``ScatterAddAlongAxis`` of the values and of their counts and a ``Where``: slots no
    index reaches keep ``x``'s value and its gradient; a slot reached by several indices takes
    their mean (numpy keeps the last, JAX leaves it unspecified).
    """
    x, indices, axis = _along(x, indices, axis, "put_along_axis")
    values = F.broadcast_to(arguments.as_value(x.tape, values, x.dtype), indices.shape)
    extent = x.shape[axis]

    def scatter(updates, ids):
        return x.tape.apply("ScatterAddAlongAxis", [updates, ids], axis=axis, extent=extent)

    return _set(x, values, indices, scatter)


def _scatter_parts(operand, indices, updates, axis, what):
    operand = arguments.recorded(operand, what)
    indices = arguments.as_indices(operand.tape, indices)
    axis = axis_index(axis, operand.shape, what)
    shape = operand.shape[:axis] + indices.shape + operand.shape[axis + 1 :]
    updates = F.broadcast_to(arguments.as_value(operand.tape, updates, operand.dtype), shape)
    extent = operand.shape[axis]

    def scatter(rows, ids):
        return operand.tape.apply("ScatterAdd", [rows, ids], axis=axis, extent=extent)

    return operand, indices, updates, scatter


def scatter_add(operand, indices, updates, axis=0):
    """``operand`` plus ``updates`` added at ``indices`` along ``axis``: ``operand.at[indices].add(updates)``
    in JAX, ``np.add.at`` on a copy. Repeated indices add up (records ``ScatterAdd``).

    ``updates`` has ``operand``'s shape with ``axis`` replaced by the indices' shape (or broadcasts to
    it). An embedding's gradient is one: ``scatter_add(zeros, ids, row_cotangents)``.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    table = tape.parameter(np.zeros((4, 2)))
    ids = tape.input(np.array([1, 3, 1], dtype=np.int32), dtype="int32")
    rows = tape.parameter(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    summed = topos.scatter_add(table, ids, rows)
    network = tape.seal()
    run = network.forward(network.parameters(), {ids: np.array([1, 3, 1], dtype=np.int32)})
    print(run.of(summed).numpy().tolist())  # [[0.0, 0.0], [6.0, 8.0], [0.0, 0.0], [3.0, 4.0]]
    ```
    """
    operand, indices, updates, scatter = _scatter_parts(operand, indices, updates, axis, "scatter_add")
    return operand + scatter(updates, indices)


def scatter(operand, indices, updates, axis=0):
    """``operand`` with ``updates`` written at ``indices`` along ``axis``: ``operand.at[indices].set(updates)``.

    Slots no index reaches keep ``operand``'s values (and their gradient); a slot several
    indices reach takes the mean of their updates, where JAX leaves the winner unspecified.
    Records ``ScatterAdd`` of the updates and of their counts and a ``Where``.
    """
    operand, indices, updates, scatter_rows = _scatter_parts(operand, indices, updates, axis, "scatter")
    return _set(operand, updates, indices, scatter_rows)


for _name, _function in [
    ("sort", sort),
    ("argsort", argsort),
    ("searchsorted", searchsorted),
    ("take_along_axis", take_along_axis),
    ("put_along_axis", put_along_axis),
    ("scatter_add", scatter_add),
    ("scatter", scatter),
]:
    globals()[_name] = arguments.all_or_nothing(_function)
del _name, _function
