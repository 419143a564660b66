"""``value[index]``: every index numpy takes either records, or raises ``IndexingError`` saying why.

An index is read as numpy reads it (a tuple is one item per axis, anything else
one item), then recorded in the primitives that already exist:

- **Basic** items, ints, slices of any step, ``None`` and ``...``, record a
  ``Reverse`` of the axes that negative steps walk backwards, one ``Slice`` and
  one ``Reshape`` (which drops the axes ints took and adds the new ones).
- **Advanced** items, integer arrays (lists, tuples or numpy arrays of any integer
  dtype and rank), boolean masks of static shape (their True positions, known
  now), a scalar ``True`` or ``False`` (a new axis of one or no position) and an
  int32 recorded value, follow numpy's rules: the arrays broadcast together, ints
  among them count as advanced too, and the broadcast axes take the advanced
  items' place if these are adjacent, the front otherwise. They record as one
  ``Take`` from the advanced axes merged into one (a ``Transpose`` brings
  separated ones together first), so the gradient is ``Take``'s ``ScatterAdd``
  and repeated indices add up. Static indices are checked and negative ones
  wrapped now; a recorded index is checked when its node runs (never wrapped).
- **Refused**, with ``IndexingError``: float arrays (numpy refuses them too), a
  recorded value that is not int32 (a mask whose True count, and so the result's
  shape, is only known when it runs: ``topos.where`` keeps the shape), and a
  recorded index with other index arrays (combining them would need integer
  arithmetic, which topos does not record).
"""

import math
import numbers

import numpy as np

from ..dtypes import INT32_MAX
from ..errors import IndexingError
from ..tensor import Tensor
from ..text import format_shape
from .nodes import user_source
from .shape_functions import reshape, transpose
from .value import Value

#: The items that pick positions; with any of them in an index, ints pick positions too (numpy's rule).
ARRAYS = ("array", "recorded")
ADVANCED = ARRAYS + ("int",)


def getitem(value, index):
    """``value[index]`` as numpy computes it (see the module's docstring for what records as what)."""
    shape = value.shape

    def fail(message):
        raise IndexingError(
            f"{message} (indexing a value of shape {format_shape(shape)})", opcode="Slice", shapes=[shape]
        )

    items = [parsed(item, fail) for item in (index if isinstance(index, tuple) else (index,))]
    axes = per_axis(shape, items, fail)
    result, sliced = take_slices(value, axes, fail)
    if all(kind not in ARRAYS for kind, _, _ in axes):
        # Basic indexing: ints drop their axis; new axes (None) are inserted.
        return reshape(result, [extent for (kind, _, _), extent in zip(axes, sliced) if kind != "int"])
    return gathered(result, axes, sliced, fail)


def parsed(item, fail):
    """One item of an index as ``(kind, payload)``: new, ellipsis, slice, int, array, mask or recorded."""
    if item is None:
        return "new", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", item
    if isinstance(item, (bool, np.bool_)):
        return "mask", np.asarray(item)
    if isinstance(item, numbers.Integral):
        return "int", int(item)
    if isinstance(item, Value):
        if item.dtype == "int32":
            return "recorded", item
        if item.dtype in ("float32", "float64"):
            fail(
                f"a recorded {item.dtype} value as an index (a mask): which elements it keeps is only known "
                "when it runs, so the result's shape would depend on the data; keep the shape with "
                "topos.where(mask, x, 0), or index with positions (an int32 value)"
            )
        fail(f"a recorded {item.dtype} value as an index: recorded indices are int32")
    if isinstance(item, Tensor):
        item = item.numpy()
    if isinstance(item, (list, tuple)) and any(isinstance(i, Value) for i in item):
        fail("a list holding recorded values as an index: index with the int32 value itself")
    if isinstance(item, (list, tuple, np.ndarray)):
        try:
            array = np.asarray(item)
        except ValueError:
            fail(f"a ragged list as an index: {item!r}")
        if array.dtype == np.bool_:
            return "mask", array
        if array.dtype.kind in "iu":
            return ("int", int(array)) if array.ndim == 0 else ("array", array)
        if array.size == 0 and not isinstance(item, np.ndarray):
            return "array", array.astype(np.intp)  # numpy reads an empty list as no positions
        fail(f"an index array of dtype {array.dtype}: index arrays hold integers or booleans")
    fail(
        f"unsupported index {item!r}: indices are ints, slices, None, ..., "
        "integer or boolean arrays and lists, or an int32 recorded value"
    )


def per_axis(shape, items, fail):
    """The index over the axes of the value with its new axes inserted: ``(kind, payload, axis)`` each,
    ``axis`` the value's own axis (None for a new one); a mask becomes its True positions, one array an axis."""
    if sum(1 for kind, _ in items if kind == "ellipsis") > 1:
        fail("an index can only have a single ellipsis ('...')")
    consumed = sum(
        payload.ndim if kind == "mask" else 0 if kind in ("new", "ellipsis") else 1 for kind, payload in items
    )
    if consumed > len(shape):
        fail(f"too many indices: {consumed} for {len(shape)} axes")
    if all(kind != "ellipsis" for kind, _ in items):
        items = items + [("ellipsis", None)]
    axes, axis = [], 0
    for kind, payload in items:
        if kind == "ellipsis":
            for _ in range(len(shape) - consumed):
                axes.append(("slice", slice(None), axis))
                axis += 1
        elif kind == "new":
            axes.append(("slice", slice(None), None))
        elif kind == "mask" and payload.ndim == 0:
            # numpy's scalar boolean: a new axis of length 1, indexed by one position (True) or none.
            axes.append(("array", np.zeros(1 if payload else 0, dtype=np.intp), None))
        elif kind == "mask":
            extents = tuple(shape[axis : axis + payload.ndim])
            if payload.shape != extents:
                fail(
                    f"a boolean mask of shape {format_shape(payload.shape)} for axes {axis}..{axis + payload.ndim - 1} "
                    f"of extents {format_shape(extents)}: a mask's shape must equal the axes it selects from"
                )
            for positions in np.nonzero(payload):
                axes.append(("array", positions, axis))
                axis += 1
        else:
            axes.append((kind, wrapped(kind, payload, axis, shape, fail), axis))
            axis += 1
    return axes


def wrapped(kind, payload, axis, shape, fail):
    """An int or a static index array checked against its axis, negative positions counted from the end."""
    if kind not in ("int", "array"):
        return payload
    extent = shape[axis]
    outside = (np.asarray(payload) < -extent) | (np.asarray(payload) >= extent)
    if np.any(outside):
        what = "index" if kind == "int" else "an index array's index"
        fail(f"{what} {int(np.asarray(payload)[outside].flat[0])} is out of range for axis {axis} with extent {extent}")
    return payload % extent if kind == "int" else np.asarray(payload, dtype=np.int64) % max(extent, 1)


def take_slices(value, axes, fail):
    """The value's slices taken (a ``Reverse`` for negative steps, one ``Slice``; an int keeps its axis with
    length 1); returns it and each axis's extent after (a new axis 1, an advanced one its whole extent)."""
    shape = value.shape
    start, stop, step = [0] * len(shape), list(shape), [1] * len(shape)
    backwards, extents = [], []
    for kind, payload, axis in axes:
        if axis is None:
            extents.append(1)
            continue
        extent = shape[axis]
        if kind == "int":
            start[axis], stop[axis] = payload, payload + 1
            extents.append(1)
        elif kind == "slice":
            try:
                lo, hi, st = payload.indices(extent)
            except (TypeError, ValueError) as error:
                fail(f"slice {payload} of axis {axis}: {error}")
            count = len(range(lo, hi, st))
            if st < 0 and count:
                # Reversed, the axis is walked forwards: position p becomes extent - 1 - p.
                backwards.append(axis)
                lo, st = extent - 1 - lo, -st
            if not count:
                # Nothing taken, nothing to reverse: any start in the axis, stopping there too.
                lo, st = min(max(lo, 0), extent), abs(st)
            start[axis], stop[axis], step[axis] = lo, lo + (count - 1) * st + 1 if count else lo, st
            extents.append(count)
        else:
            extents.append(extent)
    result = value
    if backwards:
        result = value.tape.apply("Reverse", [result], axes=tuple(backwards))
    if tuple(start) != (0,) * len(shape) or tuple(stop) != shape or set(step) - {1}:
        result = value.tape.apply("Slice", [result], start=tuple(start), stop=tuple(stop), step=tuple(step))
    return result, extents


def gathered(result, axes, extents, fail):
    """numpy's advanced indexing of ``result`` (sliced, ints kept as axes of length 1): one ``Take`` from the
    advanced axes merged into one, placed where they are if adjacent, at the front otherwise."""
    chosen = [i for i, (kind, _, _) in enumerate(axes) if kind in ADVANCED]
    recorded = [axes[i][1] for i in chosen if axes[i][0] == "recorded"]
    if len(recorded) > 1 or (recorded and any(axes[i][0] == "array" for i in chosen)):
        fail(
            "a recorded index with other index arrays: combining them into one gather needs integer "
            "arithmetic on recorded values, which topos does not record; index with one recorded value "
            "(of a reshaped value, say) or with static arrays"
        )
    merged = math.prod(extents[i] for i in chosen)
    if recorded:
        positions = recorded[0]  # every other advanced axis is an int's, of length 1
    else:
        arrays = [np.zeros((), np.int64) if axes[i][0] == "int" else axes[i][1] for i in chosen]
        try:
            arrays = np.broadcast_arrays(*arrays)
        except ValueError:
            shapes = " ".join(format_shape(np.shape(a)) for a in arrays)
            fail(f"index arrays of shapes {shapes} do not broadcast together")
        if merged > INT32_MAX:
            fail(f"index arrays over {merged} positions: more than int32 indices address")
        flat = np.zeros(arrays[0].shape, np.int64)
        for i, array in zip(chosen, arrays):
            flat = flat * extents[i] + array
        positions = result.tape.leaf(flat.astype(np.int32), dtype="int32")
    result = reshape(result, extents)  # the new axes (None, a scalar boolean) inserted
    place = chosen[0]
    if chosen != list(range(chosen[0], chosen[-1] + 1)):
        # Separated advanced items: their broadcast axes go to the front, as numpy puts them.
        rest = [i for i in range(len(extents)) if i not in chosen]
        result = transpose(result, chosen + rest)
        extents = [extents[i] for i in chosen + rest]
        place = 0
    result = reshape(result, extents[:place] + [merged] + extents[place + len(chosen) :])
    return result.tape.apply("Take", [result, positions], axis=place)


def refuse_setitem(value, index):
    """``value[index] = update``: a recorded value never changes, so this raises ``IndexingError`` at the line."""
    raise IndexingError(
        "item assignment (value[index] = update): a recorded value cannot be changed in place; "
        "record the new value instead, e.g. topos.where(mask, update, value) or topos.concatenate",
        opcode="setitem",
        shapes=[value.shape],
        source=user_source(),
    )
