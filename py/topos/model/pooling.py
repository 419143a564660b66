"""Pooling: ``topos.max_pool`` and ``topos.avg_pool`` over the spatial axes of ``[N, C, *spatial]`` images.

Both record one windowed reduction (``WindowMax``, ``WindowSum``: ``topos.ops.windows``)
whose window spans every axis, 1 on the batch and channel axes. The layout is
PyTorch's (NCHW, ``[N, C, L]`` in 1-D), so shapes read as in ``torch.nn.functional``.
"""

import builtins
import numbers

from ..errors import ShapeError
from ..text import format_shape
from . import arguments, functions
from .nodes import user_source


def _fail(opcode, message, x):
    raise ShapeError(f"{opcode}: {message}", opcode=opcode, shapes=[x.shape], source=user_source())


def _per_axis(opcode, value, spatial, what, x, least=None):
    """An int or a tuple of ints (one per spatial axis) as a tuple of ``spatial`` ints, each at least ``least``
    (any int where ``least`` is None)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (int(value),) * spatial
    if not isinstance(value, (tuple, list)) or any(
        isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in value
    ):
        _fail(opcode, f"{what} must be an int or a tuple of ints, got {value!r}", x)
    if len(value) != spatial:
        _fail(opcode, f"{what} {tuple(value)} needs one entry for each of the {spatial} spatial axes", x)
    if least is not None and any(v < least for v in value):
        _fail(opcode, f"{what} {tuple(value)} must be at least {least} on every axis", x)
    return tuple(int(v) for v in value)


def _padding(opcode, padding, spatial, x):
    """Padding as (low, high) pairs: from an int, a tuple of ints (symmetric) or a tuple of pairs.

    A negative side crops, as in ``topos.conv`` and ``lax.reduce_window`` (``_cropped``)."""
    if isinstance(padding, (tuple, list)) and any(isinstance(p, (tuple, list)) for p in padding):
        if len(padding) != spatial or any(not isinstance(p, (tuple, list)) or len(p) != 2 for p in padding):
            _fail(opcode, f"padding {padding!r} needs one (low, high) pair for each of the {spatial} spatial axes", x)
        low = _per_axis(opcode, tuple(p[0] for p in padding), spatial, "padding", x)
        high = _per_axis(opcode, tuple(p[1] for p in padding), spatial, "padding", x)
        return tuple(zip(low, high))
    sides = _per_axis(opcode, padding, spatial, "padding", x)
    return tuple((p, p) for p in sides)


def _cropped(opcode, x, pairs):
    """``x`` without the elements that negative padding crops (a recorded ``Slice``), and the padding left.

    Negative padding crops, as XLA's ``ReduceWindow`` and ``lax.reduce_window`` do and as
    ``topos.conv`` does, so that convolution and pooling read a padding the same way. The crop
    is a slice of its own, before the window: its derivative is the slice's, on every backend.
    """
    extents = x.shape[2:]
    crops = [(max(-low, 0), max(-high, 0)) for low, high in pairs]
    for extent, (low, high) in zip(extents, crops):
        if low + high > extent:
            _fail(opcode, f"padding {tuple(pairs)} crops more than the {extent} elements of an axis", x)
    left = tuple((max(low, 0), max(high, 0)) for low, high in pairs)
    if not any(low or high for low, high in crops):
        return x, left
    start = (0, 0) + tuple(low for low, _ in crops)
    stop = x.shape[:2] + tuple(extent - high for extent, (_, high) in zip(extents, crops))
    return x.tape.apply("Slice", [x], start=start, stop=stop, step=(1,) * x.ndim), left


def _windowed(opcode, x, window, stride, padding):
    """``x`` as the window reads it (cropped where the padding is negative) and the window's attributes."""
    arguments.recorded(x, opcode)
    spatial = x.ndim - 2
    if spatial < 1:
        _fail(opcode, f"takes [N, C, *spatial] images (rank 3 or more), got {format_shape(x.shape)}", x)
    window = _per_axis(opcode, window, spatial, "window", x, 1)
    stride = window if stride is None else _per_axis(opcode, stride, spatial, "stride", x, 1)
    x, pairs = _cropped(opcode, x, _padding(opcode, padding, spatial, x))
    return x, {"window": (1, 1) + window, "strides": (1, 1) + stride, "padding": ((0, 0), (0, 0)) + pairs}


@arguments.all_or_nothing
def max_pool(x, window, stride=None, padding=0):
    """The maximum of each window over the spatial axes of ``x`` ``[N, C, *spatial]`` (1-D, 2-D, N-d by rank).

    ``window`` and ``stride`` are an int or one int per spatial axis; ``stride`` defaults to
    the window. ``padding`` is an int, one int per spatial axis (the same on both sides) or
    one ``(low, high)`` pair per axis; it counts as -inf, and each side must be shorter than
    the window. A negative side crops that many elements, as in ``topos.conv`` and
    ``lax.reduce_window``. The result is ``[N, C, *out]`` with ``out = (n + low + high - window) // stride + 1``,
    as ``torch.nn.functional.max_pool2d`` (records ``WindowMax``).

    The gradient goes to each window's first maximum in row-major window order (PyTorch's
    rule at ties, as after a ReLU where many values are 0): ``SelectAndScatterAdd``, whose
    own derivative is ``SelectAndGather``, so a gradient of a gradient works too.

    ```python
    tape = topos.Tape()
    x = tape.input(np.arange(16.0).reshape(1, 1, 4, 4))
    print(topos.max_pool(x, 2).shape)  # (1, 1, 2, 2)
    ```
    """
    x, attrs = _windowed("max_pool", x, window, stride, padding)
    return x.tape.apply("WindowMax", [x], **attrs)


@arguments.all_or_nothing
def avg_pool(x, window, stride=None, padding=0):
    """The mean of each window over the spatial axes of ``x`` ``[N, C, *spatial]`` (1-D, 2-D, N-d by rank).

    ``window``, ``stride`` and ``padding`` as ``max_pool``'s; padding counts as 0. Every
    window is divided by its full size, padding included: PyTorch's default
    ``count_include_pad=True`` (``torch.nn.functional.avg_pool2d``). Records ``WindowSum``
    and a ``Div``.
    """
    x, attrs = _windowed("avg_pool", x, window, stride, padding)
    size = 1
    for extent in attrs["window"]:
        size *= extent
    total = x.tape.apply("WindowSum", [x], **attrs)
    return functions.div(total, builtins.float(size))
