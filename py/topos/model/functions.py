"""The recording functions: ``topos.exp(v)``, ``topos.maximum(a, b)``, ...

Primitives are recorded through ``tape.apply``; binary and ternary operations
broadcast their operands numpy's way, each broadcast recorded as its own
``Broadcast`` node. Composites (softmax, layer_norm, cross_entropy, attention)
are recorded in primitives by their classes (``topos.ops.composites``), which
these functions hand themselves to; they need no derivative rule of their own.
``Value``'s operators and methods (``topos.model.value_methods``) call these. The
shape functions (reshape, transpose, ...) live in ``shape_functions``, exported here.
"""

import inspect
import numbers
import sys

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..ops.composites import ATTENTION, CROSS_ENTROPY, LAYER_NORM, LOG_SOFTMAX, LOGSUMEXP, MEAN, SOFTMAX
from ..text import format_shape
from . import arguments, indexing, shape_functions
from .nodes import user_source
from .shape_functions import (  # noqa: F401  (exported here with the other recording functions)
    concatenate,
    expand_dims,
    permute,
    reshape,
    squeeze,
    stack,
    swapaxes,
    transpose,
)
from .tape import Tape
from .value import Value

# Operands (``topos.model.arguments`` turns what the user passes into recorded values) ------------


def broadcast_to(value, shape):
    """``value`` broadcast to ``shape`` by numpy's rules (records ``Broadcast``; none if the shape already matches)."""
    arguments.recorded(value, "broadcast_to")
    shape = arguments.integer_shape(shape, "Broadcast", value)
    if value.shape == shape:
        return value
    return value.tape.apply("Broadcast", [value], shape=shape)


def _broadcast_all(opcode, operands):
    tape = arguments.tape_of(*operands)
    dtype = arguments.float_dtype(tape, operands)
    values = [arguments.as_value(tape, operand, dtype) for operand in operands]
    try:
        shape = np.broadcast_shapes(*(v.shape for v in values))
    except ValueError:
        shapes = " and ".join(format_shape(v.shape) for v in values)
        raise ShapeError(
            f"{opcode}: cannot broadcast shapes {shapes}",
            opcode=opcode,
            shapes=[v.shape for v in values],
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


def atan2(a, b):
    """The angle of the point ``(b, a)`` in (-pi, pi], elementwise, as ``numpy.arctan2`` (records ``Atan2``).

    ``a`` is the y coordinate, as in C's ``atan2``; operands broadcast numpy's way. A zero or
    infinite operand gives C's answers (a multiple of pi/4, with ``a``'s sign). The gradient is
    ``b / (a^2 + b^2)`` and ``-a / (a^2 + b^2)``, NaN at the origin (as PyTorch's). XLA's CPU
    may misread a subnormal ``a`` (NaN when ``b`` is subnormal too, or the angle's sign flipped,
    as JAX's ``arctan2``); numpy and WebGPU give C's answers.
    """
    return _elementwise("Atan2", a, b)


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


def _indices_as_floats(a, b):
    """Int32 values (classes, labels) as the tape's float dtype (``IndexToFloat``), when both operands are int32."""
    if not (isinstance(a, Value) and isinstance(b, Value) and a.dtype == b.dtype == "int32"):
        return a, b
    return [value.tape.apply("IndexToFloat", [value], dtype=value.tape.dtype) for value in (a, b)]


def equal(a, b):
    """1.0 where a == b, else 0.0 (records ``Equal``; ``==`` itself is not overloaded on values).

    Two int32 values (predicted classes and labels) are compared too, each first
    recorded as ``IndexToFloat`` into the tape's dtype (exact up to 2^24 in float32):
    ``mean(equal(argmax(logits), labels))`` is an accuracy.
    """
    return _elementwise("Equal", *_indices_as_floats(a, b))


def not_equal(a, b):
    """1.0 where a != b, else 0.0 (records ``NotEqual``; two int32 values as in ``equal``)."""
    return _elementwise("NotEqual", *_indices_as_floats(a, b))


def where(condition, a=None, b=None):
    """a where ``condition`` is non-zero (or NaN), else b; all three broadcast together (records ``Where``).

    numpy's one-argument ``where(condition)`` (``nonzero``) is refused with ``ArgumentError``:
    how many positions it returns depends on the values, and a recording knows every shape
    before it runs (JAX refuses ``jnp.where(x)`` without ``size=`` for the same reason). Keep
    the shape with ``where(condition, x, 0.0)``, or read the positions from the run's result
    with ``numpy.nonzero``. One branch alone is refused too, as numpy refuses it.
    """
    if a is None and b is None:
        raise ArgumentError(
            "where(condition) with one argument (numpy's nonzero) returns as many positions as the "
            "condition holds non-zeros, which a recording cannot know before it runs; keep the shape "
            "with topos.where(condition, x, 0.0), or take numpy.nonzero of the run's value"
        )
    if a is None or b is None:
        raise ArgumentError("where(condition, a, b) needs both a and b, as numpy.where does")
    return _elementwise("Where", condition, a, b)


def _unary(opcode, value):
    return arguments.recorded(value, opcode).tape.apply(opcode, [value])


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


def cos(v):
    """The cosine, elementwise, of an angle in radians (records ``Cos``)."""
    return _unary("Cos", v)


def sin(v):
    """The sine, elementwise, of an angle in radians (records ``Sin``)."""
    return _unary("Sin", v)


def tanh(v):
    """The hyperbolic tangent, elementwise (records ``Tanh``)."""
    return _unary("Tanh", v)


def sigmoid(v):
    """``1 / (1 + exp(-v))``, elementwise (records ``Sigmoid``)."""
    return _unary("Sigmoid", v)


def softplus(v):
    """``log(1 + exp(v))``, elementwise, computed as ``max(v, 0) + log1p(exp(-|v|))`` so no exp overflows
    (records ``Softplus``; its derivative is ``sigmoid(v)``); PyTorch's ``softplus`` with ``beta=1``."""
    return _unary("Softplus", v)


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
    """-1, 0 or 1, and NaN for NaN (as numpy and JAX; PyTorch's sign(NaN) is 0); its derivative is zero."""
    sign_of_number = greater(v, 0.0) - less(v, 0.0)
    return where(not_equal(v, v), stop_gradient(v), sign_of_number)


def square(v):
    """``v * v`` (records ``Mul`` reading ``v`` twice)."""
    v = arguments.recorded(v, "square")
    return v * v


# Reductions ------------------------------------------------------------------------


def _reduce(opcode, value, axis, keepdims):
    return arguments.recorded(value, opcode).tape.apply(opcode, [value], axes=axis, keepdims=keepdims)


def sum(value, axis=None, keepdims=False):  # noqa: A001
    """The sum over ``axis`` (an int, a tuple of ints, or None for every axis), as ``numpy.sum`` (records ``Sum``)."""
    return _reduce("Sum", value, axis, keepdims)


def max(value, axis=None, keepdims=False):  # noqa: A001
    """The largest element over ``axis`` (an int, a tuple, or None for every axis), as ``numpy.max`` (records ``Max``)."""
    return _reduce("Max", value, axis, keepdims)


def min(value, axis=None, keepdims=False):  # noqa: A001
    """The smallest element over ``axis``, recorded as ``-max(-value)``."""
    return neg(max(neg(value), axis, keepdims))


def mean(value, axis=None, keepdims=False):
    """The mean over ``axis``, recorded as the ``Sum`` divided by the number of elements summed.

    Over an empty axis it is NaN (0 / 0), as in numpy and PyTorch.
    """
    return MEAN.record(_recording, value, axis, keepdims)


def var(value, axis=None, keepdims=False):
    """Biased variance (divides by n), as layer norm uses it."""
    centred = value - mean(value, axis, keepdims=True)
    return mean(centred * centred, axis, keepdims)


def getitem(value, index):
    """``value[index]`` for every index numpy takes: basic ones record ``Slice`` (and ``Reverse``, ``Reshape``),
    integer arrays, static boolean masks and int32 values a ``Take`` (``topos.model.indexing``).

    An index that does not fit, or that topos refuses (a float array, a recorded mask),
    raises ``IndexingError`` (an ``IndexError``) naming the form; a slice that takes
    nothing gives an empty axis, as in numpy.
    """
    return indexing.getitem(arguments.recorded(value, "indexing"), index)


# Linear algebra --------------------------------------------------------------------


def matmul(a, b):
    """numpy's matmul: vectors are promoted and batch axes broadcast, as recorded nodes."""
    tape = arguments.tape_of(a, b)
    dtype = arguments.float_dtype(tape, [a, b])
    a, b = arguments.as_value(tape, a, dtype), arguments.as_value(tape, b, dtype)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            "MatMul: operands must have at least one axis (use * for scalars)",
            opcode="MatMul",
            shapes=[a.shape, b.shape],
            source=user_source(),
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
            opcode="MatMul",
            shapes=[a.shape, b.shape],
            source=user_source(),
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


def take(value, indices, axis=0):
    """Gather along ``axis`` (an embedding lookup); ``indices`` is int32."""
    indices = arguments.as_indices(arguments.recorded(value, "take").tape, indices)
    return value.tape.apply("Take", [value, indices], axis=axis)


def one_hot(indices, n, dtype=None):
    """1.0 at each index along a new last axis of length ``n``."""
    if not isinstance(indices, Value):
        raise ArgumentTypeError("one_hot takes a recorded int32 value (tape.input(ids, dtype='int32'))")
    dtype = dtype or indices.tape.dtype
    return indices.tape.apply("OneHot", [indices], depth=n, dtype=dtype)


# Composites ---------------------------------------------------------------------------


def logsumexp(v, axis=-1, keepdims=False):
    """``log(sum(exp(v)))`` over ``axis``, computed stably (the maximum is shifted out first).

    As in PyTorch, a row that is all -inf gives -inf (and one holding +inf gives
    +inf): the shift is the maximum clamped to the finite range, so -inf - -inf
    never makes a NaN. The gradient is PyTorch's too, NaN on such a row.
    """
    return LOGSUMEXP.record(_recording, arguments.recorded(v, "logsumexp"), axis, keepdims)


def softmax(v, axis=-1):
    """``exp(v) / sum(exp(v))`` over ``axis``, computed stably; a composite of primitives."""
    return SOFTMAX.record(_recording, v, axis)


def log_softmax(v, axis=-1):
    """``log(softmax(v))`` over ``axis``, computed stably without forming the softmax."""
    return LOG_SOFTMAX.record(_recording, v, axis)


def layer_norm(x, weight=None, bias=None, eps=1e-5, axis=-1):
    """(x - mean) / sqrt(var + eps) over ``axis``, then ``* weight + bias``."""
    return LAYER_NORM.record(_recording, x, weight, bias, eps, axis)


def cross_entropy(logits, targets):
    """Mean negative log-likelihood of int32 ``targets`` under ``logits`` (classes on the last axis)."""
    targets = arguments.as_indices(arguments.recorded(logits, "cross_entropy").tape, targets)
    if logits.ndim == 0:
        raise ShapeError(
            "cross_entropy: logits need a class axis, got a rank-0 value",
            opcode="cross_entropy",
            shapes=[logits.shape],
            source=user_source(),
        )
    if targets.shape != logits.shape[:-1]:
        raise ShapeError(
            f"cross_entropy: targets {format_shape(targets.shape)} do not match logits {format_shape(logits.shape)} "
            "without their last axis",
            opcode="cross_entropy",
            shapes=[logits.shape, targets.shape],
            source=user_source(),
        )
    return CROSS_ENTROPY.record(_recording, logits, targets)


def mse(prediction, target):
    """The mean squared error, ``mean((prediction - target) ** 2)``, a rank-0 value."""
    error = prediction - target
    return mean(error * error)


def causal_mask(tape, n, dtype=None):
    """A leaf [n, n]: 1.0 where a position may attend (on and below the diagonal)."""
    if not isinstance(tape, Tape):
        raise ArgumentTypeError(f"causal_mask takes the tape first, got {type(tape).__name__}")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ArgumentError(f"causal_mask needs a number of positions n >= 0, got {n!r}")
    return tape.leaf(np.tril(np.ones((n, n))), dtype=dtype)


def attention(q, k, v, causal=False, mask=None):
    """Scaled dot-product attention over the last two axes: softmax(q k^T / sqrt(d)) v.

    ``mask`` (1.0 = may attend) or ``causal=True`` masks scores before the softmax.
    """
    for name, operand in (("q", q), ("k", k), ("v", v)):
        if arguments.recorded(operand, "attention").ndim < 2:
            raise ShapeError(
                f"attention: {name} needs at least two axes (positions, features), got {format_shape(operand.shape)}",
                opcode="attention",
                shapes=[q.shape, k.shape, v.shape],
                source=user_source(),
            )
    return ATTENTION.record(_recording, q, k, v, causal, mask)


# Every public function records atomically, the shape functions exported here too;
# module-internal calls go through the wrapped names too, which is harmless (a nested
# rollback is a no-op).
for _name, _function in list(globals().items()):
    if (
        not _name.startswith("_")
        and inspect.isfunction(_function)
        and _function.__module__ in (__name__, shape_functions.__name__)
        and _name != "user_source"
    ):
        globals()[_name] = arguments.all_or_nothing(_function)
del _name, _function

#: What a composite records through (``Composite.record(f, ...)``): this module's functions.
_recording = sys.modules[__name__]
