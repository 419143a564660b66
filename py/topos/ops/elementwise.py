"""Elementwise primitives: operands of one shape (recording inserts the broadcasts).

A plain op is one row of a table, as JAX's ``standard_unop`` and tinygrad's
pattern tables write them: ``unary``, ``binary`` and ``comparison`` make and
register its class from its numpy function, its StableHLO op, its WGSL
expression (over the operands x, y and z: the elementwise kernel's template
computes it) and its derivative, written beside the row. An op whose forward
or lowering is more than one call (Rsqrt, Relu, Pow, Where...) is a class
of its own; GELU and its derivative live in ``activations``. Derivative
rules are written with the emitter ``e`` so the same rule runs eagerly
(``Run.backward``) and writes backward graph nodes (``topos.compiler``).
"""

import numpy as np

from . import batching
from .registry import Primitive, register, require_float, same_shape


class Unary(Primitive):
    arity = 1
    kernel = "elementwise"
    # One operand: the batch stays on its axis (a table row gets it from its factory's base).
    batch = batching.elementwise

    def infer(self, metas, attrs):
        require_float(self, metas)
        return metas[0]


class Binary(Primitive):
    arity = 2
    kernel = "elementwise"
    # Operands of one shape: both batches at the front, a shared operand broadcast to the batch.
    batch = batching.elementwise

    def infer(self, metas, attrs):
        require_float(self, metas)
        return same_shape(self, metas)


class TableRow(Primitive):
    """The rules of an op that is one row of the table, read from what ``table_row`` sets.

    ``numpy_function`` computes the forward (a ufunc also writes into ``out``),
    ``hlo_op`` is the StableHLO op over the operands, or a ``lowering(ctx, node)``
    that composes several, and ``derivative(e, g, *operands, out)`` the derivative
    rule.
    """

    numpy_function = None
    hlo_op = None
    derivative = None

    def forward(self, inputs, attrs):
        return self.numpy_function(*inputs)

    def forward_into(self, inputs, attrs, out):
        return self.numpy_function(*inputs, out=out)

    def vjp(self, e, g, operands, out, attrs):
        return self.derivative(e, g, *operands, out)

    def stablehlo(self, ctx, node):
        if callable(self.hlo_op):
            return self.hlo_op(ctx, node)
        return ctx.elementwise(self.hlo_op, node)


class UnaryRow(TableRow, Unary):
    """A plain unary op: its ``derivative(e, g, x, out)`` returns its one cotangent in a list."""


class BinaryRow(TableRow, Binary):
    """A plain binary op: its ``derivative(e, g, a, b, out)`` returns its two cotangents (or None)."""


class Comparison(TableRow, Binary):
    """Compares elementwise; the result is 1.0 where true and 0.0 elsewhere (``hlo_op`` is the direction)."""

    differentiable = False

    def forward(self, inputs, attrs):
        a, b = inputs
        return self.numpy_function(a, b).astype(a.dtype)

    def stablehlo(self, ctx, node):
        return ctx.comparison(self.hlo_op, node)


def table_row(base, name, numpy, hlo, wgsl, vjp=None, element_flops=1):
    """Make and register the primitive class of one row, a subclass of ``base``, and return it."""
    rules = {"__module__": __name__, "__qualname__": name, "name": name, "wgsl": wgsl}
    rules.update(hlo_op=staticmethod(hlo) if callable(hlo) else hlo, element_flops=element_flops)
    rules.update(numpy_function=staticmethod(numpy), derivative=staticmethod(vjp))
    if not isinstance(numpy, np.ufunc):
        # A function that takes no ``out=``: its value is copied into the arena's slot.
        rules["forward_into"] = Primitive.forward_into
    return register(type(name, (base,), rules))


def unary(name, numpy, hlo, wgsl, vjp, element_flops=1):
    return table_row(UnaryRow, name, numpy, hlo, wgsl, vjp, element_flops)


def binary(name, numpy, hlo, wgsl, vjp):
    return table_row(BinaryRow, name, numpy, hlo, wgsl, vjp)


def comparison(name, numpy, hlo, wgsl):
    return table_row(Comparison, name, numpy, hlo, wgsl)


def compact(x):
    """``x`` without the axes it is broadcast along (zero strides) kept as extent 1: the same values,
    broadcast back by numpy wherever ``x`` would be (a causal mask broadcast over the heads is read
    once, not once a head)."""
    if not isinstance(x, np.ndarray) or 0 not in x.strides:
        return x
    return x[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in x.strides)]


# Unary -------------------------------------------------------------------


Neg = unary("Neg", numpy=np.negative, hlo="stablehlo.negate", wgsl="-x", vjp=lambda e, g, x, out: [e.neg(g)])

# d exp(x) = exp(x), the output itself.
Exp = unary(
    "Exp", numpy=np.exp, hlo="stablehlo.exponential", wgsl="safe_exp(x)", vjp=lambda e, g, x, out: [e.mul(g, out)]
)

Log = unary("Log", numpy=np.log, hlo="stablehlo.log", wgsl="precise_log(x)", vjp=lambda e, g, x, out: [e.div(g, x)])


def sqrt_vjp(e, g, x, out):
    # d sqrt(x) = 1 / (2 sqrt(x))
    return [e.div(g, e.mul(e.like(out, 2.0), out))]


Sqrt = unary("Sqrt", numpy=np.sqrt, hlo="stablehlo.sqrt", wgsl="safe_sqrt(x)", vjp=sqrt_vjp)


@register
class Rsqrt(Unary):
    name = "Rsqrt"
    wgsl = "safe_inverse_sqrt(x)"

    def forward(self, inputs, attrs):
        x = inputs[0]
        return (np.ones((), dtype=x.dtype) / np.sqrt(x)).astype(x.dtype, copy=False)

    def forward_into(self, inputs, attrs, out):
        x = inputs[0]
        np.sqrt(x, out=out)
        return np.divide(np.ones((), dtype=x.dtype), out, out=out)

    def vjp(self, e, g, operands, out, attrs):
        # d x^(-1/2) = -1/2 x^(-3/2) = -1/2 out^3
        cube = e.mul(e.mul(out, out), out)
        return [e.mul(g, e.mul(e.like(out, -0.5), cube))]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.rsqrt", node)


def tanh_vjp(e, g, x, out):
    # d tanh(x) = 1 - tanh(x)^2
    return [e.mul(g, e.sub(e.like(out, 1.0), e.mul(out, out)))]


Tanh = unary("Tanh", numpy=np.tanh, hlo="stablehlo.tanh", wgsl="safe_tanh(x)", vjp=tanh_vjp)


# d cos(x) = -sin(x), d sin(x) = cos(x). WGSL promises its cos and sin to an absolute 2^-11 on
# [-pi, pi] only (SwiftShader's are 2e-4 off): precise_cos and precise_sin (kernels/elementwise.wgsl) reduce
# any argument exactly, then evaluate polynomials on [-pi/4, pi/4].
Cos = unary(
    "Cos",
    numpy=np.cos,
    hlo="stablehlo.cosine",
    wgsl="precise_cos(x)",
    vjp=lambda e, g, x, out: [e.neg(e.mul(g, e.apply("Sin", [x])))],
)

Sin = unary(
    "Sin",
    numpy=np.sin,
    hlo="stablehlo.sine",
    wgsl="precise_sin(x)",
    vjp=lambda e, g, x, out: [e.mul(g, e.apply("Cos", [x]))],
)


def stable_sigmoid(x):
    """1 / (1 + e^-x) in two branches so that neither exp overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below."""
    positive = x >= 0
    z = np.exp(np.where(positive, -x, x))
    one = np.ones((), dtype=x.dtype)
    return np.where(positive, one / (one + z), z / (one + z)).astype(x.dtype, copy=False)


def sigmoid_vjp(e, g, x, out):
    # d sigmoid(x) = sigmoid(x) (1 - sigmoid(x))
    return [e.mul(g, e.mul(out, e.sub(e.like(out, 1.0), out)))]


Sigmoid = unary("Sigmoid", numpy=stable_sigmoid, hlo="stablehlo.logistic", wgsl="sigmoid(x)", vjp=sigmoid_vjp)


def softplus_numpy(x):
    """log(1 + e^x) as max(x, 0) + log1p(e^-|x|) (numpy's logaddexp): no exp overflows, no tail is lost."""
    return np.logaddexp(np.zeros((), dtype=x.dtype), x)


def softplus_hlo(ctx, node):
    # max(x, 0) + log_plus_one(exp(-|x|)), the forward's stable form.
    (x,) = ctx.operands(node)
    tail = ctx.elementwise("stablehlo.negate", node, [ctx.elementwise("stablehlo.abs", node, [x])])
    tail = ctx.elementwise("stablehlo.log_plus_one", node, [ctx.elementwise("stablehlo.exponential", node, [tail])])
    ramp = ctx.elementwise("stablehlo.maximum", node, [x, ctx.splat(0.0, node.shape, node.dtype)])
    return ctx.elementwise("stablehlo.add", node, [ramp, tail])


# WGSL has no log1p, and log(1 + z) loses z's digits where 1 + z rounds: with z = e^-|x|,
# log1p(z) is its series z (1 - z (1/2 - z (1/3 - z/4))) below z = 1/64 (relative error
# under z^4 / 5 = 2e-8) and log(1 + z) above (absolute error 2^-24, relative under 4e-6).
# At x = +-inf z is 0, so softplus is max(x, 0): inf and 0; NaN stays NaN through nan_max.
SOFTPLUS_WGSL = (
    "nan_max(x, 0.0) + select(precise_log(1.0 + safe_exp(-abs(x))), safe_exp(-abs(x)) * (1.0 - safe_exp(-abs(x))"
    " * (0.5 - safe_exp(-abs(x)) * (0.33333334 - safe_exp(-abs(x)) * 0.25))), safe_exp(-abs(x)) < 0.015625)"
)

# d softplus(x) = sigmoid(x); six operations an element (max, abs, negate, exp, log1p, add)
Softplus = unary(
    "Softplus",
    numpy=softplus_numpy,
    hlo=softplus_hlo,
    wgsl=SOFTPLUS_WGSL,
    vjp=lambda e, g, x, out: [e.mul(g, e.apply("Sigmoid", [x]))],
    element_flops=6,
)


@register
class Relu(Unary):
    name = "Relu"
    wgsl = "nan_max(x, 0.0)"  # relu(NaN) is NaN, as in numpy and PyTorch

    def forward(self, inputs, attrs):
        x = inputs[0]
        return np.maximum(x, np.zeros((), dtype=x.dtype))

    def forward_into(self, inputs, attrs, out):
        x = inputs[0]
        return np.maximum(x, np.zeros((), dtype=x.dtype), out=out)

    def vjp(self, e, g, operands, out, attrs):
        # The derivative at 0 is taken as 0, as PyTorch does.
        x = operands[0]
        return [e.mul(g, e.greater(x, e.like(x, 0.0)))]

    def stablehlo(self, ctx, node):
        zero = ctx.splat(0.0, node.shape, node.dtype)
        return ctx.elementwise("stablehlo.maximum", node, [ctx.operands(node)[0], zero])


@register
class StopGradient(Unary):
    """The identity whose derivative is zero (used by softmax's max shift)."""

    name = "StopGradient"
    wgsl = "x"
    differentiable = False
    returns_view = True  # its forward hands back the operand itself

    def forward(self, inputs, attrs):
        return inputs[0]

    def stablehlo(self, ctx, node):
        # The identity: a convert to the same type, so that the node still has its own %v name.
        return ctx.emit(f"stablehlo.convert {ctx.operands(node)[0]} : {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        # The operand's own view: nothing runs on the device (its expression, x, is what a copy would compute).
        return k.new_view(node, views[0])

    def cost(self, operands, meta, attrs):
        return 0, 0  # it relabels its operand's memory: nothing is computed or moved


# Binary ------------------------------------------------------------------


Add = binary("Add", numpy=np.add, hlo="stablehlo.add", wgsl="x + y", vjp=lambda e, g, a, b, out: [g, g])

Sub = binary(
    "Sub",
    numpy=np.subtract,
    hlo="stablehlo.subtract",
    wgsl="x - y",
    vjp=lambda e, g, a, b, out: [g, e.neg(g) if e.wants(1) else None],
)


def mul_vjp(e, g, a, b, out):
    # An operand the scan drops (a constant factor, say) gets no cotangent computed.
    return [e.mul(g, b) if e.wants(0) else None, e.mul(g, a) if e.wants(1) else None]


Mul = binary("Mul", numpy=np.multiply, hlo="stablehlo.multiply", wgsl="x * y", vjp=mul_vjp)


def div_vjp(e, g, a, b, out):
    # d(a/b)/db = -a / b^2; a divisor the scan drops (a constant count, say) costs nothing.
    grad_a = e.div(g, b) if e.wants(0) else None
    grad_b = e.neg(e.div(e.mul(g, a), e.mul(b, b))) if e.wants(1) else None
    return [grad_a, grad_b]


Div = binary("Div", numpy=np.divide, hlo="stablehlo.divide", wgsl="x / y", vjp=div_vjp)


def c_power(x, y, out=None):
    """np.power(x, y) as C's pow computes it. numpy takes sqrt for an exponent that is one
    number 0.5 (rank 0, or broadcast with a zero stride), so (-inf) ** 0.5 would be NaN and
    (-0) ** 0.5 -0, where C, XLA and the WGSL kernel give inf and 0: such an exponent is
    read as an array of its own."""
    if y.ndim == 0:
        result = c_power(x.reshape(1), y.reshape(1), None if out is None else out.reshape(1))
        return result.reshape(()) if out is None else out
    if 0 in y.strides:
        y = y.copy()
    return np.power(x, y, out=out)


@register
class Pow(Binary):
    name = "Pow"
    wgsl = "power(x, y)"

    def forward(self, inputs, attrs):
        return c_power(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return c_power(inputs[0], inputs[1], out)

    def vjp(self, e, g, operands, out, attrs):
        a, b = operands
        # As PyTorch: d/da = b a^(b-1), taken as 0 where b == 0 (0 * 0^-1 would be NaN at a == 0);
        # d/db = a^b log a, taken as 0 where a == 0 and b >= 0.
        zero = e.like(a, 0.0)
        base_grad = None
        if e.wants(0):
            slope = e.mul(g, e.mul(b, e.pow(a, e.sub(b, e.like(b, 1.0)))))
            base_grad = e.where(e.equal(b, zero), zero, slope)
        if not e.wants(1):
            return [base_grad, None]
        at_zero = e.mul(e.equal(a, zero), e.greater_equal(b, zero))
        safe_a = e.where(at_zero, e.like(a, 1.0), a)
        exponent_grad = e.mul(g, e.mul(out, e.log(safe_a)))
        return [base_grad, e.where(at_zero, zero, exponent_grad)]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.power", node)


def maximum_vjp(e, g, a, b, out):
    return select_grads(e, g, e.greater(a, b), a, b)


def minimum_vjp(e, g, a, b, out):
    return select_grads(e, g, e.less(a, b), a, b)


Maximum = binary("Maximum", numpy=np.maximum, hlo="stablehlo.maximum", wgsl="nan_max(x, y)", vjp=maximum_vjp)
Minimum = binary("Minimum", numpy=np.minimum, hlo="stablehlo.minimum", wgsl="nan_min(x, y)", vjp=minimum_vjp)


def atan2_vjp(e, g, a, b, out):
    # d/da atan2(a, b) = b / (a^2 + b^2), d/db = -a / (a^2 + b^2), in torch's order (at the
    # origin both are NaN, as torch's).
    reciprocal = e.div(e.like(a, 1.0), e.add(e.mul(a, a), e.mul(b, b)))
    grad_a = e.mul(e.mul(g, b), reciprocal) if e.wants(0) else None
    grad_b = e.mul(e.mul(g, e.neg(a)), reciprocal) if e.wants(1) else None
    return [grad_a, grad_b]


# The angle of the point (b, a), in (-pi, pi]: a first, as numpy.arctan2 and C's atan2.
Atan2 = binary("Atan2", numpy=np.arctan2, hlo="stablehlo.atan2", wgsl="arc_tangent2(x, y)", vjp=atan2_vjp)


def select_grads(e, g, a_wins, a, b):
    """Gradients of max/min: to the winner, split evenly on ties (as PyTorch does)."""
    tie = e.equal(a, b)
    half = e.mul(g, e.like(g, 0.5))
    zero = e.like(g, 0.0)
    grad_a = e.where(tie, half, e.where(a_wins, g, zero)) if e.wants(0) else None
    grad_b = e.where(tie, half, e.where(a_wins, zero, g)) if e.wants(1) else None
    return [grad_a, grad_b]


Less = comparison("Less", numpy=np.less, hlo="LT", wgsl="select(0.0, 1.0, x < y)")
LessEqual = comparison("LessEqual", numpy=np.less_equal, hlo="LE", wgsl="select(0.0, 1.0, x <= y)")
Greater = comparison("Greater", numpy=np.greater, hlo="GT", wgsl="select(0.0, 1.0, x > y)")
GreaterEqual = comparison("GreaterEqual", numpy=np.greater_equal, hlo="GE", wgsl="select(0.0, 1.0, x >= y)")
Equal = comparison("Equal", numpy=np.equal, hlo="EQ", wgsl="select(0.0, 1.0, x == y)")
# NaN differs from everything
NotEqual = comparison(
    "NotEqual", numpy=np.not_equal, hlo="NE", wgsl="select(0.0, 1.0, x != y || is_nan(x) || is_nan(y))"
)


@register
class Where(Primitive):
    """``Where(c, a, b)``: a where c is non-zero, else b (all one shape)."""

    name = "Where"
    wgsl = "select(z, y, x != 0.0 || is_nan(x))"  # a NaN condition is true, as in numpy
    arity = 3
    kernel = "elementwise"
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        return same_shape(self, metas)

    def forward(self, inputs, attrs):
        c, a, b = inputs
        return np.where(c != 0, a, b)

    def forward_into(self, inputs, attrs, out):
        c, a, b = inputs
        np.copyto(out, b)
        np.copyto(out, a, where=compact(c) != 0)  # the mask broadcasts as the condition did
        return out

    def vjp(self, e, g, operands, out, attrs):
        c = operands[0]
        zero = e.like(g, 0.0)
        return [None, e.where(c, g, zero) if e.wants(1) else None, e.where(c, zero, g) if e.wants(2) else None]

    def stablehlo(self, ctx, node):
        c, a, b = ctx.operands(node)
        zero = ctx.splat(0.0, node.shape, node.dtype)
        nonzero = ctx.compare("NE", c, zero, node.shape, node.dtype)
        return ctx.select(nonzero, a, b, node.shape, node.dtype)
