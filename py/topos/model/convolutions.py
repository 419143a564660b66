"""The convolution functions: ``topos.conv``, ``topos.conv1d`` and ``topos.conv2d``.

Each records one ``Convolution`` node (``topos.ops.convolution``: XLA's
``ConvGeneralDilated``) and, with a bias, its broadcast and an ``Add``. The
layout is PyTorch's: images [N, C, *spatial], kernels [O, C / groups, *window].
"""

import numbers

from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..text import format_shape
from . import arguments
from .functions import add, reshape
from .nodes import user_source


def _fail(message, *values):
    raise ShapeError(message, opcode="Convolution", shapes=[v.shape for v in values], source=user_source())


def _per_axis(value, spatial, what):
    """An int (every spatial axis) or one positive int per spatial axis, as a tuple."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (int(value),) * spatial
    if not isinstance(value, (tuple, list)) or any(
        isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in value
    ):
        raise ArgumentTypeError(f"conv: {what} must be an int or a tuple of ints, got {value!r}")
    if len(value) != spatial:
        raise ArgumentError(f"conv: {what} {tuple(value)} needs one entry per spatial axis ({spatial})")
    if min(value, default=1) < 1:
        raise ArgumentError(f"conv: {what} {tuple(value)} must be positive")
    return tuple(int(v) for v in value)


def same_padding(extents, windows, strides, dilations):
    """The (low, high) pairs of ``"same"`` (JAX's and TensorFlow's rule): an output of ceil(extent / stride)
    along each axis, the padding split evenly and its odd element on the high side."""
    pairs = []
    for extent, window, stride, dilation in zip(extents, windows, strides, dilations):
        span = (window - 1) * dilation + 1
        out = -(-extent // stride)
        total = max((out - 1) * stride + span - extent, 0)
        pairs.append((total // 2, total - total // 2))
    return tuple(pairs)


def _padding(padding, x, weight, strides, dilations):
    spatial = x.ndim - 2
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * spatial
        if padding == "same":
            return same_padding(x.shape[2:], weight.shape[2:], strides, dilations)
        raise ArgumentError(f'conv: padding {padding!r} is not "same", "valid", an int or a tuple')
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        return ((int(padding), int(padding)),) * spatial
    if not isinstance(padding, (tuple, list)) or len(padding) != spatial:
        raise ArgumentError(
            f"conv: padding {padding!r} needs an int, one per spatial axis ({spatial}) or a (low, high) pair per axis"
        )
    pairs = []
    for entry in padding:
        if isinstance(entry, numbers.Integral) and not isinstance(entry, bool):
            pairs.append((int(entry), int(entry)))
        elif (
            isinstance(entry, (tuple, list))
            and len(entry) == 2
            and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in entry)
        ):
            pairs.append((int(entry[0]), int(entry[1])))
        else:
            raise ArgumentError(f"conv: padding entry {entry!r} is neither an int nor a (low, high) pair of ints")
    return tuple(pairs)


def conv(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``x`` [N, C, *spatial] convolved with ``weight`` [O, C / groups, *window]: [N, O, *out] (records ``Convolution``).

    As ``torch.nn.functional.conv1d`` / ``conv2d`` / ``conv3d`` (a cross-correlation: the window
    is not flipped), with the number of spatial axes taken from the rank. ``stride`` and
    ``dilation`` are an int or one per spatial axis; ``padding`` is an int, one per spatial
    axis (the same zeros on both sides), a (low, high) pair per axis, ``"valid"`` (none) or
    ``"same"`` (JAX's rule: an output of ceil(extent / stride), the odd zero on the high
    side, so it works with any stride); a negative side crops that many elements, as in
    ``lax.conv_general_dilated`` and ``topos.max_pool``. ``groups`` splits the channels into that many groups,
    each convolved with its own O / groups kernels (``groups = C``: depthwise). ``bias`` [O]
    is added to each output channel. Each output extent is
    ``(low + extent + high - dilation * (window - 1) - 1) // stride + 1``.

    ```python
    tape = topos.Tape()
    x = tape.input(np.ones((2, 3, 8, 8)))
    w = tape.parameter(np.ones((4, 3, 3, 3)) * 0.1)
    y = topos.conv(x, w, padding="same", stride=2)
    print(y.shape)  # (2, 4, 4, 4)
    ```
    """
    tape = arguments.tape_of(x, weight)
    x, weight = (arguments.as_value(tape, v, arguments.float_dtype(tape, [x, weight])) for v in (x, weight))
    if x.ndim < 3:
        _fail(f"conv: needs an input [N, C, *spatial] of rank >= 3, got {format_shape(x.shape)}", x, weight)
    if weight.ndim != x.ndim:
        _fail(
            f"conv: the kernel {format_shape(weight.shape)} needs the input's rank {x.ndim} ([O, C / groups, *window])",
            x,
            weight,
        )
    spatial = x.ndim - 2
    strides = _per_axis(stride, spatial, "stride")
    dilations = _per_axis(dilation, spatial, "dilation")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise ArgumentError(f"conv: groups must be a positive int, got {groups!r}")
    pairs = _padding(padding, x, weight, strides, dilations)
    out = tape.apply(
        "Convolution",
        [x, weight],
        strides=strides,
        padding=pairs,
        lhs_dilation=(1,) * spatial,
        rhs_dilation=dilations,
        feature_groups=int(groups),
        batch_groups=1,
    )
    if bias is None:
        return out
    bias = arguments.as_value(tape, bias, out.dtype)
    if bias.shape != (out.shape[1],):
        _fail(f"conv: the bias {format_shape(bias.shape)} needs one value per output channel ({out.shape[1]})", bias)
    return add(out, reshape(bias, (out.shape[1],) + (1,) * spatial))


def _ranked(function, spatial):
    def ranked(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        rank = arguments.recorded(x, function).ndim if hasattr(x, "ndim") else None
        if rank != spatial + 2:
            raise ShapeError(
                f"{function}: needs an input of rank {spatial + 2} ([N, C, {'L' if spatial == 1 else 'H, W'}]), "
                f"got {format_shape(x.shape)}",
                opcode="Convolution",
                shapes=[x.shape],
                source=user_source(),
            )
        return conv(x, weight, bias, stride, padding, dilation, groups)

    return ranked


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``conv`` of an input [N, C, L] with a kernel [O, C / groups, K] (raises ``ShapeError`` for another rank).

    As ``torch.nn.functional.conv1d``; the arguments are ``conv``'s.
    """
    return _conv1d(x, weight, bias, stride, padding, dilation, groups)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``conv`` of an input [N, C, H, W] with a kernel [O, C / groups, KH, KW] (raises ``ShapeError`` for another rank).

    As ``torch.nn.functional.conv2d``; the arguments are ``conv``'s.
    """
    return _conv2d(x, weight, bias, stride, padding, dilation, groups)


_conv1d = _ranked("conv1d", 1)
_conv2d = _ranked("conv2d", 2)

conv = arguments.all_or_nothing(conv)
conv1d = arguments.all_or_nothing(conv1d)
conv2d = arguments.all_or_nothing(conv2d)
