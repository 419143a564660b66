"""The recording functions: ``topos.exp(v)``, ``topos.maximum(a, b)``, ...

Primitives are recorded through ``tape.apply``; binary and ternary operations
broadcast their operands numpy's way, each broadcast recorded as its own
``Broadcast`` node. Composites (softmax, layer_norm, cross_entropy, attention)
are written here from primitives and need no derivative rule of their own.
"""

import builtins
import functools
import inspect
import math
import numbers

import numpy as np

from ..errors import ShapeError
from ..ops.registry import format_shape
from ..tensor import Tensor
from .tape import user_source
from .value import Value

# Operands ----------------------------------------------------------------------


def _tape_of(*operands):
    tape = None
    for operand in operands:
        if isinstance(operand, Value):
            if tape is None:
                tape = operand.tape
            elif operand.tape is not tape:
                raise ValueError("operands were recorded on different tapes")
    if tape is None:
        raise TypeError("at least one operand must be a recorded value")
    return tape


def _as_value(tape, operand, dtype):
    """A recorded value for an operand; numbers, lists, arrays and tensors become leaves."""
    if isinstance(operand, Value):
        return operand
    if isinstance(operand, (numbers.Number, list, tuple, np.ndarray, np.generic, Tensor)):
        return tape.leaf(operand, dtype=dtype)
    raise TypeError(f"cannot record an operand of type {type(operand).__name__}")


def _float_dtype(tape, operands):
    for operand in operands:
        if isinstance(operand, Value) and operand.dtype in ("float32", "float64"):
            return operand.dtype
    return tape.dtype


def broadcast_to(value, shape):
    """``value`` broadcast to ``shape`` by numpy's rules (records ``Broadcast``; none if the shape already matches)."""
    shape = tuple(int(d) for d in shape)
    if value.shape == shape:
        return value
    return value.tape.apply("Broadcast", [value], shape=shape)


def _broadcast_all(opcode, operands):
    tape = _tape_of(*operands)
    dtype = _float_dtype(tape, operands)
    values = [_as_value(tape, operand, dtype) for operand in operands]
    try:
        shape = np.broadcast_shapes(*(v.shape for v in values))
    except ValueError:
        shapes = " and ".join(format_shape(v.shape) for v in values)
        raise ShapeError(
            f"{opcode}: cannot broadcast shapes {shapes}", opcode=opcode, shapes=[v.shape for v in values],
            source=user_source(),
        ) from None
    return tape, [broadcast_to(v, shape) for v in values]


def _elementwise(opcode, *operands):
    tape, values = _broadcast_all(opcode, operands)
    return tape.apply(opcode, values)


# Elementwise ---------------------------------------------------------------------


def add(a, b):
    """``a + b`` elementwise; operands broadcast numpy's way (records ``Add``)."""
    return _elementwise("Add", a, b)


def sub(a, b):
    """``a - b`` elementwise; operands broadcast numpy's way (records ``Sub``)."""
    return _elementwise("Sub", a, b)


def mul(a, b):
    """``a * b`` elementwise; operands broadcast numpy's way (records ``Mul``)."""
    return _elementwise("Mul", a, b)


def div(a, b):
    """``a / b`` elementwise; operands broadcast numpy's way (records ``Div``)."""
    return _elementwise("Div", a, b)


def power(a, b):
    """``a ** b`` elementwise; operands broadcast numpy's way (records ``Pow``)."""
    return _elementwise("Pow", a, b)


def maximum(a, b):
    """The larger of ``a`` and ``b``, elementwise, as ``numpy.maximum`` (records ``Maximum``)."""
    return _elementwise("Maximum", a, b)


def minimum(a, b):
    """The smaller of ``a`` and ``b``, elementwise, as ``numpy.minimum`` (records ``Minimum``)."""
    return _elementwise("Minimum", a, b)


def less(a, b):
    """1.0 where a < b, else 0.0 (``==`` and ``<`` are not overloaded on values)."""
    return _elementwise("Less", a, b)


def less_equal(a, b):
    """1.0 where a <= b, else 0.0 (records ``LessEqual``; its derivative is zero)."""
    return _elementwise("LessEqual", a, b)


def greater(a, b):
    """1.0 where a > b, else 0.0 (records ``Greater``; its derivative is zero)."""
    return _elementwise("Greater", a, b)


def greater_equal(a, b):
    """1.0 where a >= b, else 0.0 (records ``GreaterEqual``; its derivative is zero)."""
    return _elementwise("GreaterEqual", a, b)


def equal(a, b):
    """1.0 where a == b, else 0.0 (records ``Equal``; ``==`` itself is not overloaded on values)."""
    return _elementwise("Equal", a, b)


def not_equal(a, b):
    """1.0 where a != b, else 0.0 (records ``NotEqual``)."""
    return _elementwise("NotEqual", a, b)


def where(condition, a, b):
    """a where ``condition`` is non-zero, else b; all three broadcast together."""
    return _elementwise("Where", condition, a, b)


def _unary(opcode, value):
    if not isinstance(value, Value):
        raise TypeError(f"{opcode} takes a recorded value, got {type(value).__name__}")
    return value.tape.apply(opcode, [value])


def neg(v):
    """``-v`` (records ``Neg``)."""
    return _unary("Neg", v)


def exp(v):
    """e to the power ``v``, elementwise (records ``Exp``)."""
    return _unary("Exp", v)


def log(v):
    """The natural logarithm, elementwise (records ``Log``)."""
    return _unary("Log", v)


def sqrt(v):
    """The square root, elementwise (records ``Sqrt``)."""
    return _unary("Sqrt", v)


def rsqrt(v):
    """``1 / sqrt(v)``, elementwise (records ``Rsqrt``)."""
    return _unary("Rsqrt", v)


def tanh(v):
    """The hyperbolic tangent, elementwise (records ``Tanh``)."""
    return _unary("Tanh", v)


def sigmoid(v):
    """``1 / (1 + exp(-v))``, elementwise (records ``Sigmoid``)."""
    return _unary("Sigmoid", v)


def relu(v):
    """``max(v, 0)``, elementwise (records ``Relu``)."""
    return _unary("Relu", v)


def gelu(v):
    """GELU, tanh approximation (GPT-2's, and PyTorch's ``approximate="tanh"``)."""
    return _unary("Gelu", v)


def stop_gradient(v):
    """The same value, through which no gradient flows."""
    return _unary("StopGradient", v)


def abs(v):  # noqa: A001  (numpy's name)
    """``|v|``, recorded as ``v * sign(v)``: a composite, so its derivative is ``sign(v)``."""
    return v * sign(v)


def sign(v):
    """-1, 0 or 1; its derivative is zero."""
    return greater(v, 0.0) - less(v, 0.0)


def square(v):
    """``v * v`` (records ``Mul`` reading ``v`` twice)."""
    return v * v


# Reductions ------------------------------------------------------------------------


def _reduce(opcode, value, axis, keepdims):
    return value.tape.apply(opcode, [value], axes=axis, keepdims=keepdims)


def sum(value, axis=None, keepdims=False):  # noqa: A001
    """The sum over ``axis`` (an int, a tuple of ints, or None for every axis), as ``numpy.sum`` (records ``Sum``)."""
    return _reduce("Sum", value, axis, keepdims)


def max(value, axis=None, keepdims=False):  # noqa: A001
    """The largest element over ``axis`` (an int, a tuple, or None for every axis), as ``numpy.max`` (records ``Max``)."""
    return _reduce("Max", value, axis, keepdims)


def min(value, axis=None, keepdims=False):  # noqa: A001
    """The smallest element over ``axis``, recorded as ``-max(-value)``."""
    return neg(max(neg(value), axis, keepdims))


def _count(value, axis):
    if axis is None:
        return value.size
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    count = 1
    for a in axes:
        count *= value.shape[a]
    return count


def mean(value, axis=None, keepdims=False):
    """The mean over ``axis``, recorded as the ``Sum`` divided by the number of elements summed."""
    return sum(value, axis, keepdims) / float(_count(value, axis))


def var(value, axis=None, keepdims=False):
    """Biased variance (divides by n), as layer norm uses it."""
    centred = value - mean(value, axis, keepdims=True)
    return mean(centred * centred, axis, keepdims)


# Shapes --------------------------------------------------------------------------


def reshape(value, shape):
    """The same elements in a new ``shape`` (an int or a tuple; records ``Reshape``, none if unchanged)."""
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) == 1 and value.size and value.size % -math.prod(shape) == 0:
        shape = tuple(value.size // -math.prod(shape) if d == -1 else d for d in shape)
    if shape == value.shape:
        return value
    return value.tape.apply("Reshape", [value], shape=shape)


def transpose(value, axes=None):
    """Axes permuted to ``axes`` (default: reversed), as ``numpy.transpose`` (records ``Transpose``)."""
    if axes is None:
        axes = tuple(reversed(range(value.ndim)))
    if tuple(axes) == tuple(range(value.ndim)):
        return value
    return value.tape.apply("Transpose", [value], axes=tuple(axes))


def permute(value, axes):
    """The same as ``transpose(value, axes)`` (PyTorch's name)."""
    return transpose(value, axes)


def swapaxes(value, a, b):
    """Axes ``a`` and ``b`` exchanged, as ``numpy.swapaxes`` (a ``Transpose``)."""
    axes = list(range(value.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(value, axes)


def expand_dims(value, axis):
    """A new axis of length 1 at ``axis``, as ``numpy.expand_dims`` (a ``Reshape``)."""
    rank = value.ndim + 1
    if not -rank <= axis < rank:
        raise ShapeError(
            f"Reshape: axis {axis} is out of range for a new axis of {format_shape(value.shape)}",
            opcode="Reshape", shapes=[value.shape], source=user_source(),
        )
    axis %= rank
    shape = list(value.shape)
    shape.insert(axis, 1)
    return reshape(value, shape)


def squeeze(value, axis=None):
    """Axes of length 1 removed (all of them, or those in ``axis``), as ``numpy.squeeze`` (a ``Reshape``)."""
    if axis is None:
        shape = [d for d in value.shape if d != 1]
    else:
        axes = {a % value.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
        for a in axes:
            if value.shape[a] != 1:
                raise ShapeError(
                    f"Reshape: cannot squeeze axis {a} of {format_shape(value.shape)}",
                    opcode="Reshape", shapes=[value.shape], source=user_source(),
                )
        shape = [d for i, d in enumerate(value.shape) if i not in axes]
    return reshape(value, shape)


def concatenate(values, axis=0):
    """The values joined along an existing ``axis``, as ``numpy.concatenate``; numbers and arrays become leaves."""
    values = list(values)
    tape = _tape_of(*values)
    dtype = _float_dtype(tape, values)
    values = [_as_value(tape, v, dtype) for v in values]
    if len(values) == 1:
        return values[0]
    return tape.apply("Concatenate", values, axis=axis)


def stack(values, axis=0):
    """The values joined along a new ``axis``, as ``numpy.stack`` (``Reshape``s, then a ``Concatenate``)."""
    values = list(values)
    rank = values[0].ndim + 1
    return concatenate([expand_dims(v, axis % rank) for v in values], axis)


def getitem(value, index):
    """Basic indexing: ints, slices with positive steps, ``None`` and ``...``;
    an int32 value or a list of ints on the first axis gathers (``take``)."""
    if isinstance(index, Value) or (isinstance(index, list) and all(isinstance(i, numbers.Integral) for i in index)):
        return take(value, index, 0)
    if not isinstance(index, tuple):
        index = (index,)
    if builtins.sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    explicit = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    if explicit > value.ndim:
        raise IndexError(f"too many indices for a value of shape {format_shape(value.shape)}")
    expanded = []
    for item in index:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (value.ndim - explicit))
        else:
            expanded.append(item)
    if Ellipsis not in index:
        expanded.extend([slice(None)] * (value.ndim - explicit))
    start, stop, step, out_shape = [], [], [], []
    axis = 0
    for item in expanded:
        if item is None:
            out_shape.append(1)
            continue
        extent = value.shape[axis]
        if isinstance(item, slice):
            lo, hi, st = item.indices(extent)
            if st < 1:
                raise IndexError("negative slice steps are not supported; use a gather (take) instead")
            count = builtins.max(0, (hi - lo + st - 1) // st)
            if count == 0:
                raise IndexError(f"slice {item} of axis {axis} (extent {extent}) is empty")
            start.append(lo)
            stop.append(lo + (count - 1) * st + 1)
            step.append(st)
            out_shape.append(count)
        elif isinstance(item, numbers.Integral):
            i = int(item)
            if not -extent <= i < extent:
                raise IndexError(f"index {i} is out of range for axis {axis} with extent {extent}")
            i %= extent
            start.append(i)
            stop.append(i + 1)
            step.append(1)
        else:
            raise IndexError(f"unsupported index {item!r}")
        axis += 1
    result = value
    if tuple(start) != (0,) * value.ndim or tuple(stop) != value.shape or set(step) - {1}:
        result = value.tape.apply("Slice", [value], start=tuple(start), stop=tuple(stop), step=tuple(step))
    return reshape(result, out_shape)


# Linear algebra --------------------------------------------------------------------


def matmul(a, b):
    """numpy's matmul: vectors are promoted and batch axes broadcast, as recorded nodes."""
    tape = _tape_of(a, b)
    dtype = _float_dtype(tape, [a, b])
    a, b = _as_value(tape, a, dtype), _as_value(tape, b, dtype)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            "MatMul: operands must have at least one axis (use * for scalars)", opcode="MatMul",
            shapes=[a.shape, b.shape], source=user_source(),
        )
    squeeze_first = a.ndim == 1
    squeeze_last = b.ndim == 1
    if squeeze_first:
        a = reshape(a, (1,) + a.shape)
    if squeeze_last:
        b = reshape(b, b.shape + (1,))
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise ShapeError(
            f"MatMul: batch axes of {format_shape(a.shape)} and {format_shape(b.shape)} do not broadcast",
            opcode="MatMul", shapes=[a.shape, b.shape], source=user_source(),
        ) from None
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    result = tape.apply("MatMul", [a, b])
    if squeeze_first or squeeze_last:
        rows = () if squeeze_first else result.shape[-2:-1]
        columns = () if squeeze_last else result.shape[-1:]
        result = reshape(result, batch + rows + columns)
    return result


# Indices ----------------------------------------------------------------------------


def _as_indices(tape, indices):
    if isinstance(indices, Value):
        return indices
    return tape.leaf(indices, dtype="int32")


def take(value, indices, axis=0):
    """Gather along ``axis`` (an embedding lookup); ``indices`` is int32."""
    indices = _as_indices(value.tape, indices)
    return value.tape.apply("Take", [value, indices], axis=axis)


def one_hot(indices, n, dtype=None):
    """1.0 at each index along a new last axis of length ``n``."""
    if not isinstance(indices, Value):
        raise TypeError("one_hot takes a recorded int32 value (tape.input(ids, dtype='int32'))")
    dtype = dtype or indices.tape.dtype
    return indices.tape.apply("OneHot", [indices], depth=n, dtype=dtype)


# Composites ---------------------------------------------------------------------------


def logsumexp(v, axis=-1, keepdims=False):
    """``log(sum(exp(v)))`` over ``axis``, computed stably (the maximum is shifted out first)."""
    shift = stop_gradient(max(v, axis, keepdims=True))
    total = log(sum(exp(v - shift), axis, keepdims=True)) + shift
    return total if keepdims else squeeze(total, axis)


def softmax(v, axis=-1):
    """``exp(v) / sum(exp(v))`` over ``axis``, computed stably; a composite of primitives."""
    shifted = exp(v - stop_gradient(max(v, axis, keepdims=True)))
    return shifted / sum(shifted, axis, keepdims=True)


def log_softmax(v, axis=-1):
    """``log(softmax(v))`` over ``axis``, computed stably without forming the softmax."""
    shifted = v - stop_gradient(max(v, axis, keepdims=True))
    return shifted - log(sum(exp(shifted), axis, keepdims=True))


def layer_norm(x, weight=None, bias=None, eps=1e-5, axis=-1):
    """(x - mean) / sqrt(var + eps) over ``axis``, then ``* weight + bias``."""
    centred = x - mean(x, axis, keepdims=True)
    variance = mean(centred * centred, axis, keepdims=True)
    result = centred * rsqrt(variance + eps)
    if weight is not None:
        result = result * weight
    if bias is not None:
        result = result + bias
    return result


def cross_entropy(logits, targets):
    """Mean negative log-likelihood of int32 ``targets`` under ``logits`` (classes on the last axis)."""
    targets = _as_indices(logits.tape, targets)
    if targets.shape != logits.shape[:-1]:
        raise ShapeError(
            f"cross_entropy: targets {format_shape(targets.shape)} do not match logits {format_shape(logits.shape)} "
            "without their last axis",
            opcode="cross_entropy", shapes=[logits.shape, targets.shape], source=user_source(),
        )
    picked = sum(one_hot(targets, logits.shape[-1], logits.dtype) * log_softmax(logits, -1), -1)
    return -mean(picked)


def mse(prediction, target):
    """The mean squared error, ``mean((prediction - target) ** 2)``, a rank-0 value."""
    error = prediction - target
    return mean(error * error)


def causal_mask(tape, n, dtype=None):
    """A leaf [n, n]: 1.0 where a position may attend (on and below the diagonal)."""
    return tape.leaf(np.tril(np.ones((n, n))), dtype=dtype)


def attention(q, k, v, causal=False, mask=None):
    """Scaled dot-product attention over the last two axes: softmax(q k^T / sqrt(d)) v.

    ``mask`` (1.0 = may attend) or ``causal=True`` masks scores before the softmax.
    """
    d = q.shape[-1]
    scores = matmul(q, swapaxes(k, -1, -2)) * (1.0 / math.sqrt(d))
    if causal:
        mask = causal_mask(q.tape, q.shape[-2], q.dtype)
    if mask is not None:
        scores = where(mask, scores, -1e9)
    return matmul(softmax(scores, -1), v)


# All or nothing ------------------------------------------------------------------------


def _tape_in(args):
    for arg in args:
        if isinstance(arg, Value):
            return arg.tape
        if isinstance(arg, (list, tuple)):
            tape = _tape_in(arg)
            if tape is not None:
                return tape
    return None


def _all_or_nothing(function):
    """Wrap a recording function so that an error leaves the tape as it was.

    A composite records several nodes (a leaf, its broadcast, the operation);
    when a later one fails its shape check, the earlier ones are removed again,
    so a bad line in the user's code loses nothing and adds nothing.
    """

    @functools.wraps(function)
    def recording(*args, **kwargs):
        tape = _tape_in(args)
        if tape is None:
            return function(*args, **kwargs)
        mark = len(tape._nodes)
        try:
            return function(*args, **kwargs)
        except BaseException:
            del tape._nodes[mark:]
            raise

    return recording


# Every public function records atomically; module-internal calls go through
# the wrapped names too, which is harmless (a nested rollback is a no-op).
for _name, _function in list(globals().items()):
    if (
        not _name.startswith("_")
        and inspect.isfunction(_function)
        and _function.__module__ == __name__
        and _name != "user_source"
    ):
        globals()[_name] = _all_or_nothing(_function)
del _name, _function
