"""numpy's array building and shaping functions, recorded in the primitives that move elements.

``topos.pad``, ``tril``, ``triu``, ``tile``, ``repeat``, ``roll``, ``flip``, ``diag``,
``diagonal``, ``trace``, ``outer`` and ``kron`` take a recorded value and record what the
numpy function does as ``Slice``, ``Reverse``, ``Pad``, ``Concatenate``, ``Reshape``,
``Broadcast``, ``Transpose``, ``Where``, ``Mul`` and ``Sum`` (``Take`` for ``repeat`` with
one count per element), as JAX writes them, so each reading shows the real work and each
gradient is those primitives' own. ``eye``, ``arange`` and ``linspace`` take the tape first
(as ``topos.causal_mask``) and record a leaf: a constant every reading shows as one.

Two tricks carry most of it. A diagonal of an ``n x m`` block is a strided slice of its
flattened ``d x d`` corner (step ``d + 1``); and a pad, a roll or a reflection along an
axis is numpy's own index map (``np.pad`` of ``arange(n)``, worked out now), recorded as the
runs it falls into: a forward run is a ``Slice``, a backward one a ``Slice`` and a
``Reverse``, one element repeated a ``Slice`` and a ``Broadcast``, joined by a ``Concatenate``.
"""

import numbers

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..ops.registry import axis_index, axis_tuple
from ..text import format_shape
from . import arguments
from . import functions as F
from .tape import Tape

#: The modes of ``topos.pad``: each maps an axis's positions as numpy's ``np.pad`` does.
PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _fail(what, message, value):
    raise ShapeError(f"{what}: {message}", opcode=what, shapes=[value.shape])


def _integer(number, what, minimum=None):
    if isinstance(number, bool) or not isinstance(number, numbers.Integral):
        raise ArgumentError(f"{what} must be an integer, got {number!r}")
    if minimum is not None and number < minimum:
        raise ArgumentError(f"{what} must be at least {minimum}, got {number}")
    return int(number)


def _slice_axis(value, axis, start, stop, step=1):
    """``value`` sliced ``start:stop:step`` along ``axis`` (records ``Slice``; none for the whole axis)."""
    if (start, stop, step) == (0, value.shape[axis], 1):
        return value
    starts, stops, steps = [0] * value.ndim, list(value.shape), [1] * value.ndim
    starts[axis], stops[axis], steps[axis] = start, stop, step
    return value.tape.apply("Slice", [value], start=tuple(starts), stop=tuple(stops), step=tuple(steps))


def _runs(positions):
    """``positions`` cut into runs that step by +1, -1 or 0: ``(first, length, step)`` each."""
    runs, i = [], 0
    while i < len(positions):
        step = int(positions[i + 1] - positions[i]) if i + 1 < len(positions) else 1
        step = step if step in (-1, 0, 1) else 1
        j = i + 1
        while j < len(positions) and positions[j] - positions[j - 1] == step:
            j += 1
        runs.append((int(positions[i]), j - i, step))
        i = j
    return runs


def _gathered(value, axis, positions):
    """``value`` at the static ``positions`` along ``axis``, as slices joined by one ``Concatenate``."""
    pieces = []
    for first, length, step in _runs(positions):
        if step == 1:
            pieces.append(_slice_axis(value, axis, first, first + length))
        elif step == -1:
            piece = _slice_axis(value, axis, first - length + 1, first + 1)
            pieces.append(piece.tape.apply("Reverse", [piece], axes=(axis,)))
        else:
            piece = _slice_axis(value, axis, first, first + 1)
            pieces.append(F.broadcast_to(piece, piece.shape[:axis] + (length,) + piece.shape[axis + 1 :]))
    if not pieces:
        return _slice_axis(value, axis, 0, 0)
    return F.concatenate(pieces, axis) if len(pieces) > 1 else pieces[0]


# Padding ---------------------------------------------------------------------------------


def _pairs(widths, value, what, integral=True):
    """``pad_width`` (or ``constant_values``) as numpy reads it: one ``(before, after)`` pair per axis."""
    try:
        pairs = np.broadcast_to(np.asarray(widths), (value.ndim, 2))
    except ValueError:
        _fail(
            "pad",
            f"{what} {widths!r} does not give (before, after) for each axis of {format_shape(value.shape)}",
            value,
        )
    if integral:
        if pairs.dtype.kind not in "iu":
            raise ArgumentError(f"pad: {what} must be integers, got {widths!r}")
        if pairs.size and pairs.min() < 0:
            raise ArgumentError(f"pad: {what} must not be negative, got {widths!r}")
        return [(int(before), int(after)) for before, after in pairs]
    return pairs


def pad(array, pad_width, mode="constant", constant_values=0):
    """``array`` padded as ``numpy.pad``: ``pad_width`` an int, a ``(before, after)`` pair or one pair per axis.

    ``mode="constant"`` records a ``Pad`` (zeros), and where ``constant_values`` (numpy's
    forms: one number, a pair, one pair per axis; later axes fill the corners, as numpy's)
    is not zero, a ``Where`` that writes them into the border. ``"edge"``, ``"reflect"``,
    ``"symmetric"`` and ``"wrap"`` record, per padded axis, the runs numpy's map reads (a
    ``Slice``, reversed for a mirror, broadcast for an edge) joined by a ``Concatenate``;
    widths past the axis reflect again, as numpy's do. The gradient is theirs: a border
    element's cotangent goes back to the element it copies.
    """
    value = arguments.recorded(array, "pad")
    widths = _pairs(pad_width, value, "pad_width")
    if mode not in PAD_MODES:
        raise ArgumentError(f"pad: mode must be one of {', '.join(PAD_MODES)}, got {mode!r}")
    if mode == "constant":
        low, high = tuple(w[0] for w in widths), tuple(w[1] for w in widths)
        padded = value.tape.apply("Pad", [value], low=low, high=high, interior=(0,) * value.ndim)
        fills = _pairs(constant_values, value, "constant_values", integral=False)
        if not np.any(fills):
            return padded
        border = np.pad(np.zeros(value.shape, dtype=bool), widths, constant_values=True)
        fill = np.pad(np.zeros(value.shape), widths, constant_values=fills)
        return F.where(border, fill, padded)
    for axis, (before, after) in enumerate(widths):
        if before or after:
            if value.shape[axis] == 0:
                _fail("pad", f"mode {mode!r} cannot extend the empty axis {axis}", value)
            positions = np.pad(np.arange(value.shape[axis]), (before, after), mode=mode)
            value = _gathered(value, axis, positions)
    return value


def roll(a, shift, axis=None):
    """The elements shifted by ``shift`` along ``axis``, wrapping around, as ``numpy.roll``.

    ``axis=None`` rolls the flattened value (``Reshape``s around it); ``shift`` and ``axis``
    may be tuples (broadcast against each other; shifts of one axis add up). Each rolled axis
    records two ``Slice``s and a ``Concatenate``.
    """
    value = arguments.recorded(a, "roll")
    if axis is None:
        return F.reshape(roll(F.reshape(value, (-1,)), shift, 0), value.shape)
    try:
        shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    except ValueError:
        raise ArgumentError(f"roll: shift {shift!r} and axis {axis!r} do not broadcast") from None
    total = {}
    for s, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist()):
        ax = axis_index(ax, value.shape, "roll")
        total[ax] = total.get(ax, 0) + _integer(s, "roll: shift")
    for ax, s in sorted(total.items()):
        n = value.shape[ax]
        if n and s % n:
            value = _gathered(value, ax, (np.arange(n) - s) % n)
    return value


def flip(m, axis=None):
    """The elements in reverse order along ``axis`` (None: every axis; an int or a tuple), as ``numpy.flip``
    (records ``Reverse``)."""
    value = arguments.recorded(m, "flip")
    axes = axis_tuple(axis, value.shape, "flip")
    return value.tape.apply("Reverse", [value], axes=axes) if axes else value


# Triangles and diagonals -------------------------------------------------------------------


def _triangle(what, m, keep):
    value = arguments.recorded(m, what)
    if value.ndim == 0:
        _fail(what, "needs at least one axis", value)
    rows, columns = value.shape[-2:] if value.ndim >= 2 else value.shape * 2
    # Where, not a product with a 0/1 mask: a NaN or infinity outside the triangle becomes 0, as numpy's.
    return F.where(keep(rows, columns), value, 0.0)


def tril(m, k=0):
    """``m`` with the elements above the ``k``-th diagonal set to 0 (the last two axes), as ``numpy.tril``
    (a ``Where`` against a constant mask)."""
    k = _integer(k, "tril: k")
    return _triangle("tril", m, lambda rows, columns: np.tri(rows, columns, k, dtype=bool))


def triu(m, k=0):
    """``m`` with the elements below the ``k``-th diagonal set to 0 (the last two axes), as ``numpy.triu``
    (a ``Where`` against a constant mask)."""
    k = _integer(k, "triu: k")
    return _triangle("triu", m, lambda rows, columns: ~np.tri(rows, columns, k - 1, dtype=bool))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The ``offset``-th diagonal of the ``axis1`` x ``axis2`` planes, on a new last axis, as ``numpy.diagonal``.

    Records a ``Transpose`` of the two axes to the end, a ``Slice`` of the square corner the
    diagonal crosses, a ``Reshape`` that flattens it and a ``Slice`` of step ``d + 1``.
    """
    value = arguments.recorded(a, "diagonal")
    if value.ndim < 2:
        _fail("diagonal", "needs at least two axes", value)
    offset = _integer(offset, "diagonal: offset")
    first, second = axis_index(axis1, value.shape, "diagonal"), axis_index(axis2, value.shape, "diagonal")
    if first == second:
        _fail("diagonal", f"axis1 and axis2 name the same axis {first}", value)
    rest = [ax for ax in range(value.ndim) if ax not in (first, second)]
    value = F.transpose(value, rest + [first, second])
    rows, columns = value.shape[-2:]
    row0, column0 = max(-offset, 0), max(offset, 0)
    d = max(0, min(rows - row0, columns - column0))
    corner = _slice_axis(value, value.ndim - 2, min(row0, rows), min(row0, rows) + d)
    corner = _slice_axis(corner, value.ndim - 1, min(column0, columns), min(column0, columns) + d)
    flat = F.reshape(corner, corner.shape[:-2] + (d * d,))
    return _slice_axis(flat, flat.ndim - 1, 0, d * d, d + 1)


def trace(a, offset=0, axis1=0, axis2=1):
    """The sum of the ``offset``-th diagonal, as ``numpy.trace`` (a ``diagonal``, then a ``Sum``)."""
    return F.sum(diagonal(a, offset, axis1, axis2), axis=-1)


def diag(v, k=0):
    """``numpy.diag``: a 1-D ``v`` on the ``k``-th diagonal of a square matrix, or a 2-D ``v``'s ``k``-th diagonal.

    The matrix is recorded without arithmetic: ``v`` as a column padded with ``n`` zeros on
    the right, flattened, its first ``n * n`` elements sliced and reshaped put ``v[i]`` at
    ``(i, i)``; a ``Pad`` moves it to the ``k``-th diagonal.
    """
    value = arguments.recorded(v, "diag")
    k = _integer(k, "diag: k")
    if value.ndim == 2:
        return diagonal(value, k)
    if value.ndim != 1:
        _fail("diag", "takes a 1-D value (a diagonal) or a 2-D one (a matrix)", value)
    n = value.shape[0]
    column = value.tape.apply("Pad", [F.reshape(value, (n, 1))], low=(0, 0), high=(0, n), interior=(0, 0))
    flat = _slice_axis(F.reshape(column, (n * (n + 1),)), 0, 0, n * n)
    square = F.reshape(flat, (n, n))
    if k == 0:
        return square
    low, high = ((0, k), (k, 0)) if k > 0 else ((-k, 0), (0, -k))
    return square.tape.apply("Pad", [square], low=low, high=high, interior=(0, 0))


# Products ------------------------------------------------------------------------------


def _operands(what, *operands):
    tape = arguments.tape_of(*operands)
    dtype = arguments.float_dtype(tape, operands)
    return [arguments.as_value(tape, operand, dtype) for operand in operands]


def outer(a, b):
    """``a`` and ``b`` flattened, every product ``a[i] * b[j]`` as ``numpy.outer`` (``Reshape``s and a ``Mul``)."""
    a, b = _operands("outer", a, b)
    return F.reshape(a, (-1, 1)) * F.reshape(b, (1, -1))


def kron(a, b):
    """The Kronecker product, as ``numpy.kron``: the shorter shape takes leading 1s, then block ``(i, j)`` is
    ``a[i] * b``. Records ``Reshape``s that interleave the axes, a broadcast ``Mul`` and a ``Reshape``."""
    a, b = _operands("kron", a, b)
    rank = max(a.ndim, b.ndim)
    a_shape, b_shape = (1,) * (rank - a.ndim) + a.shape, (1,) * (rank - b.ndim) + b.shape
    a = F.reshape(a, tuple(x for n in a_shape for x in (n, 1)))
    b = F.reshape(b, tuple(x for n in b_shape for x in (1, n)))
    return F.reshape(a * b, tuple(m * n for m, n in zip(a_shape, b_shape)))


# Repeating ---------------------------------------------------------------------------------


def tile(A, reps):  # noqa: N803  (numpy's name)
    """``A`` repeated ``reps`` times along each axis, as ``numpy.tile`` (a ``Reshape`` that puts an axis of 1
    before each, a ``Broadcast`` that stretches them to ``reps``, a ``Reshape`` that merges each pair)."""
    value = arguments.recorded(A, "tile")
    reps = (reps,) if isinstance(reps, numbers.Integral) else tuple(reps)
    reps = tuple(_integer(r, "tile: reps", minimum=0) for r in reps)
    rank = max(len(reps), value.ndim)
    shape, reps = (1,) * (rank - value.ndim) + value.shape, (1,) * (rank - len(reps)) + reps
    spread = F.reshape(value, tuple(x for n in shape for x in (1, n)))
    spread = F.broadcast_to(spread, tuple(x for r, n in zip(reps, shape) for x in (r, n)))
    return F.reshape(spread, tuple(r * n for r, n in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    """Each element repeated ``repeats`` times along ``axis`` (None: of the flattened value), as ``numpy.repeat``.

    One count for every element records a ``Reshape``, a ``Broadcast`` and a ``Reshape``; one
    count per element a ``Take`` of the positions numpy's repeat gives (their gradient adds up).
    """
    value = arguments.recorded(a, "repeat")
    if axis is None:
        value, axis = F.reshape(value, (-1,)), 0
    axis = axis_index(axis, value.shape, "repeat")
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" or (counts.size and counts.min() < 0):
        raise ArgumentError(f"repeat: repeats must be non-negative integers, got {repeats!r}")
    n = value.shape[axis]
    if counts.size == 1:
        count = int(counts.ravel()[0])
        spread = F.reshape(value, value.shape[: axis + 1] + (1,) + value.shape[axis + 1 :])
        spread = F.broadcast_to(spread, value.shape[: axis + 1] + (count,) + value.shape[axis + 1 :])
        return F.reshape(spread, value.shape[:axis] + (n * count,) + value.shape[axis + 1 :])
    if counts.shape != (n,):
        _fail("repeat", f"{counts.size} repeats for {n} elements along axis {axis}", value)
    return F.take(value, np.repeat(np.arange(n), counts).astype(np.int32), axis=axis)


# Constants: leaves of a tape ----------------------------------------------------------------


def _tape(tape, what):
    if not isinstance(tape, Tape):
        raise ArgumentTypeError(f"{what} takes the tape first, got {type(tape).__name__}")
    return tape


def eye(tape, N, M=None, k=0, dtype=None):  # noqa: N803  (numpy's names)
    """A leaf ``N x M`` (``M`` defaults to ``N``) with ones on the ``k``-th diagonal, as ``numpy.eye``."""
    _tape(tape, "eye")
    N, k = _integer(N, "eye: N", minimum=0), _integer(k, "eye: k")
    M = N if M is None else _integer(M, "eye: M", minimum=0)
    return tape.leaf(np.eye(N, M, k), dtype=dtype)


def arange(tape, start, stop=None, step=None, dtype=None):
    """A leaf of evenly spaced numbers in ``[start, stop)``, as ``numpy.arange``: int32 where every bound
    is an integer (positions, say), the tape's float dtype otherwise (or ``dtype``)."""
    _tape(tape, "arange")
    bounds = [b for b in (start, stop, step) if b is not None]
    if any(isinstance(b, bool) or not isinstance(b, numbers.Real) for b in bounds):
        raise ArgumentError(f"arange: start, stop and step must be numbers, got {tuple(bounds)!r}")
    if step == 0:
        raise ArgumentError("arange: step must not be 0")
    values = np.arange(start, stop, step) if stop is not None else np.arange(0, start, step or 1)
    if dtype is None and values.dtype.kind in "iu":
        dtype = "int32"
    return tape.leaf(values, dtype=dtype)


def linspace(tape, start, stop, num=50, endpoint=True, dtype=None):
    """A leaf of ``num`` evenly spaced numbers from ``start`` to ``stop`` (included with ``endpoint``),
    as ``numpy.linspace``, in the tape's float dtype (or ``dtype``)."""
    _tape(tape, "linspace")
    num = _integer(num, "linspace: num", minimum=0)
    if any(isinstance(b, bool) or not isinstance(b, numbers.Real) for b in (start, stop)):
        raise ArgumentError(f"linspace: start and stop must be numbers, got {(start, stop)!r}")
    return tape.leaf(np.linspace(start, stop, num, endpoint=bool(endpoint)), dtype=dtype)


# Every public function records atomically: an error leaves the tape as it was.
for _name in "pad roll flip tril triu diagonal trace diag outer kron tile repeat eye arange linspace".split():
    globals()[_name] = arguments.all_or_nothing(globals()[_name])
del _name
