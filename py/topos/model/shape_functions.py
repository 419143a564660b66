"""The recording functions that change a value's shape: ``topos.reshape``, ``topos.transpose``, ...

Each records ``Reshape``, ``Transpose`` or ``Concatenate`` (none where the shape is unchanged);
``topos.model.functions`` exports them with the other recording functions.
"""

from ..errors import ShapeError
from ..ops.registry import axis_index, axis_tuple
from ..ops.shape import reshape_target
from ..text import format_shape
from . import arguments
from .nodes import user_source


def reshape(value, shape):
    """The same elements in a new ``shape`` (an int or a tuple; records ``Reshape``, none if unchanged)."""
    shape = reshape_target(shape, arguments.recorded(value, "reshape").shape)
    if shape == value.shape:
        return value
    return value.tape.apply("Reshape", [value], shape=shape)


def transpose(value, axes=None):
    """Axes permuted to ``axes`` (default: reversed), as ``numpy.transpose`` (records ``Transpose``)."""
    arguments.recorded(value, "transpose")
    if axes is None:
        axes = tuple(reversed(range(value.ndim)))
    if not isinstance(axes, (tuple, list)):
        raise ShapeError(
            f"Transpose: axes must be a tuple of integers, got {axes!r}", opcode="Transpose", shapes=[value.shape]
        )
    axes = tuple(axis_index(axis, value.shape, "Transpose") for axis in axes)
    if axes == tuple(range(value.ndim)):
        return value
    return value.tape.apply("Transpose", [value], axes=axes)


def permute(value, axes):
    """The same as ``transpose(value, axes)`` (PyTorch's name)."""
    return transpose(value, axes)


def swapaxes(value, a, b):
    """Axes ``a`` and ``b`` exchanged, as ``numpy.swapaxes`` (a ``Transpose``)."""
    a = axis_index(a, arguments.recorded(value, "swapaxes").shape, "swapaxes")
    b = axis_index(b, value.shape, "swapaxes")
    axes = list(range(value.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(value, axes)


def expand_dims(value, axis):
    """A new axis of length 1 at ``axis``, as ``numpy.expand_dims`` (a ``Reshape``)."""
    axis = axis_index(axis, arguments.recorded(value, "expand_dims").shape, "expand_dims", new_axis=True)
    shape = list(value.shape)
    shape.insert(axis, 1)
    return reshape(value, shape)


def squeeze(value, axis=None):
    """Axes of length 1 removed (all of them, or those in ``axis``), as ``numpy.squeeze`` (a ``Reshape``)."""
    if axis is None:
        shape = [d for d in arguments.recorded(value, "squeeze").shape if d != 1]
    else:
        axes = axis_tuple(axis, arguments.recorded(value, "squeeze").shape, "squeeze")
        for a in axes:
            if value.shape[a] != 1:
                raise ShapeError(
                    f"squeeze: cannot squeeze axis {a} of {format_shape(value.shape)}: its length is not 1",
                    opcode="squeeze",
                    shapes=[value.shape],
                    source=user_source(),
                )
        shape = [d for i, d in enumerate(value.shape) if i not in axes]
    return reshape(value, shape)


def concatenate(values, axis=0):
    """The values joined along an existing ``axis``, as ``numpy.concatenate``; numbers and arrays become leaves."""
    values = arguments.joined(values, "concatenate")
    if len(values) == 1:
        axis_index(axis, values[0].shape, "Concatenate")
        return values[0]
    return values[0].tape.apply("Concatenate", values, axis=axis)


def stack(values, axis=0):
    """The values joined along a new ``axis``, as ``numpy.stack`` (``Reshape``s, then a ``Concatenate``)."""
    values = arguments.joined(values, "stack")
    axis = axis_index(axis, values[0].shape, "stack", new_axis=True)
    return concatenate([expand_dims(v, axis) for v in values], axis)
