"""Elementwise primitives: operands of one shape (recording inserts the broadcasts).

Each class is one opcode: its numpy forward, its shape rule, its derivative
rule, its StableHLO lowering and its WGSL expression (``wgsl``, over the
operands x, y and z: the elementwise kernel's template computes it). Derivative
rules are written with the emitter ``e`` so the same rule runs eagerly
(``Run.backward``) and writes backward graph nodes (``topos.compiler``).
"""

import math

import numpy as np

from .registry import Primitive, register, require_float, same_shape


class Unary(Primitive):
    arity = 1
    kernel = "elementwise"

    def infer(self, metas, attrs):
        require_float(self, metas)
        return metas[0]


class Binary(Primitive):
    arity = 2
    kernel = "elementwise"

    def infer(self, metas, attrs):
        require_float(self, metas)
        return same_shape(self, metas)


class Comparison(Binary):
    """Compares elementwise; the result is 1.0 where true and 0.0 elsewhere."""

    differentiable = False
    #: each comparison sets these two: the numpy ufunc and StableHLO's comparison_direction
    numpy_function = None
    hlo_direction = None

    def forward(self, inputs, attrs):
        a, b = inputs
        return type(self).numpy_function(a, b).astype(a.dtype)

    def forward_into(self, inputs, attrs, out):
        return type(self).numpy_function(inputs[0], inputs[1], out=out)

    def stablehlo(self, ctx, node):
        return ctx.comparison(self.hlo_direction, node)


# Unary -------------------------------------------------------------------


@register
class Neg(Unary):
    name = "Neg"
    wgsl = "-x"

    def forward(self, inputs, attrs):
        return np.negative(inputs[0])

    def forward_into(self, inputs, attrs, out):
        return np.negative(inputs[0], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [e.neg(g)]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.negate", node)


@register
class Exp(Unary):
    name = "Exp"
    wgsl = "safe_exp(x)"

    def forward(self, inputs, attrs):
        return np.exp(inputs[0])

    def forward_into(self, inputs, attrs, out):
        return np.exp(inputs[0], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, out)]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.exponential", node)


@register
class Log(Unary):
    name = "Log"
    wgsl = "precise_log(x)"

    def forward(self, inputs, attrs):
        return np.log(inputs[0])

    def forward_into(self, inputs, attrs, out):
        return np.log(inputs[0], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [e.div(g, operands[0])]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.log", node)


@register
class Sqrt(Unary):
    name = "Sqrt"
    wgsl = "safe_sqrt(x)"

    def forward(self, inputs, attrs):
        return np.sqrt(inputs[0])

    def forward_into(self, inputs, attrs, out):
        return np.sqrt(inputs[0], out=out)

    def vjp(self, e, g, operands, out, attrs):
        # d sqrt(x) = 1 / (2 sqrt(x))
        return [e.div(g, e.mul(e.like(out, 2.0), out))]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.sqrt", node)


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


@register
class Tanh(Unary):
    name = "Tanh"
    wgsl = "safe_tanh(x)"

    def forward(self, inputs, attrs):
        return np.tanh(inputs[0])

    def forward_into(self, inputs, attrs, out):
        return np.tanh(inputs[0], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, e.sub(e.like(out, 1.0), e.mul(out, out)))]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.tanh", node)


@register
class Sigmoid(Unary):
    name = "Sigmoid"
    wgsl = "sigmoid(x)"

    def forward(self, inputs, attrs):
        x = inputs[0]
        # Two branches so that neither exp overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below.
        positive = x >= 0
        z = np.exp(np.where(positive, -x, x))
        one = np.ones((), dtype=x.dtype)
        return np.where(positive, one / (one + z), z / (one + z)).astype(x.dtype, copy=False)

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, e.mul(out, e.sub(e.like(out, 1.0), out)))]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.logistic", node)


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


GELU_C = math.sqrt(2.0 / math.pi)
GELU_K = 0.044715


@register
class Gelu(Unary):
    """GELU in its tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    name = "Gelu"
    wgsl = "gelu(x)"
    element_flops = 9  # half * x * (1 + tanh(c * (x + k * x * x * x))): nine operations an element

    def forward(self, inputs, attrs):
        return self.forward_into(inputs, attrs, np.empty(inputs[0].shape, inputs[0].dtype))

    def forward_into(self, inputs, attrs, out):
        # half * x * (one + tanh(c * (x + k * x * x * x))), each step in the same order as that
        # expression, written into one scratch array and ``out``: the same bits, no array a step.
        x = inputs[0]
        c = x.dtype.type(GELU_C)
        k = x.dtype.type(GELU_K)
        half = x.dtype.type(0.5)
        one = x.dtype.type(1.0)
        inner = np.multiply(k, x, out=np.empty(x.shape, x.dtype))  # an array even for rank 0
        inner *= x
        inner *= x
        np.add(x, inner, out=inner)
        np.multiply(c, inner, out=inner)
        np.tanh(inner, out=inner)
        np.add(one, inner, out=inner)
        np.multiply(half, x, out=out)
        out *= inner
        return out

    def vjp(self, e, g, operands, out, attrs):
        return [e.apply("GeluGrad", [g, operands[0]])]

    def stablehlo(self, ctx, node):
        # The same order of operations as forward: half * x * (one + tanh(c * (x + k * x * x * x))).
        (x,) = ctx.operands(node)
        shape, dtype = node.shape, node.dtype

        def const(value):
            return ctx.splat(value, shape, dtype)

        def apply(op, a, b=None):
            return ctx.elementwise(op, node, [a] if b is None else [a, b])

        half_x = apply("stablehlo.multiply", const(0.5), x)
        cube = apply(
            "stablehlo.multiply", apply("stablehlo.multiply", apply("stablehlo.multiply", const(GELU_K), x), x), x
        )
        inner = apply("stablehlo.multiply", const(GELU_C), apply("stablehlo.add", x, cube))
        return apply("stablehlo.multiply", half_x, apply("stablehlo.add", const(1.0), apply("stablehlo.tanh", inner)))


@register
class GeluGrad(Primitive):
    """Gelu's derivative rule in closed form: ``GeluGrad(g, x)`` is ``g * gelu'(x)``, in one node.

    gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3k x^2) with t = tanh(c (x + k x^3)),
    which is 0.5 (1 + t) (1 + x (1 - t) (c + 3ck x^2)): the numpy forward computes that in
    place: fifteen passes over its result and two scratch arrays, where the eighteen steps of
    the rule written in primitives each made an array.
    """

    name = "GeluGrad"
    arity = 2
    kernel = "elementwise"
    wgsl = "x * gelu_slope(y)"
    element_flops = 15  # the fifteen steps of the forward below

    def infer(self, metas, attrs):
        require_float(self, metas)
        return same_shape(self, metas)

    def forward(self, inputs, attrs):
        return self.forward_into(inputs, attrs, np.empty(inputs[1].shape, inputs[1].dtype))

    def forward_into(self, inputs, attrs, out):
        g, x = inputs
        number = x.dtype.type
        x2 = np.multiply(x, x, out=out)
        t = np.multiply(x2, number(GELU_C * GELU_K), out=np.empty(x.shape, x.dtype))
        t += number(GELU_C)
        t *= x
        np.tanh(t, out=t)  # t = tanh(c (x + k x^3))
        slope = np.multiply(x2, number(3.0 * GELU_C * GELU_K), out=out)
        slope += number(GELU_C)
        slope *= x  # x (c + 3ck x^2)
        slope *= np.subtract(number(1.0), t)
        slope += number(1.0)
        t += number(1.0)
        slope *= t
        slope *= g
        slope *= number(0.5)
        return slope

    def vjp(self, e, g, operands, out, attrs):
        # d/dg = gelu'(x); d/dx = g gelu''(x), with gelu''(x) = (1 - t^2) (u' - x t u'^2 + 3ck x^2),
        # u' = c (1 + 3k x^2) the inner argument's slope.
        cotangent, x = operands
        grad_g = e.apply("GeluGrad", [g, x]) if e.wants(0) else None
        if not e.wants(1):
            return [grad_g, None]
        x2 = e.mul(x, x)
        t = e.tanh(e.mul(e.like(x, GELU_C), e.add(x, e.mul(e.like(x, GELU_K), e.mul(x2, x)))))
        slope = e.mul(e.like(x, GELU_C), e.add(e.like(x, 1.0), e.mul(e.like(x, 3.0 * GELU_K), x2)))
        bend = e.sub(slope, e.mul(e.mul(x, t), e.mul(slope, slope)))
        bend = e.add(bend, e.mul(e.like(x, 3.0 * GELU_C * GELU_K), x2))
        curvature = e.mul(e.sub(e.like(x, 1.0), e.mul(t, t)), bend)
        return [grad_g, e.mul(e.mul(g, cotangent), curvature)]

    def stablehlo(self, ctx, node):
        # The forward's steps in its order: 0.5 (1 + t) (1 + x (1 - t) (c + 3ck x^2)) g.
        g, x = ctx.operands(node)
        shape, dtype = node.shape, node.dtype

        def const(value):
            return ctx.splat(value, shape, dtype)

        def apply(op, a, b=None):
            return ctx.elementwise(op, node, [a] if b is None else [a, b])

        x2 = apply("stablehlo.multiply", x, x)
        inner = apply("stablehlo.add", apply("stablehlo.multiply", x2, const(GELU_C * GELU_K)), const(GELU_C))
        t = apply("stablehlo.tanh", apply("stablehlo.multiply", inner, x))
        slope = apply("stablehlo.add", apply("stablehlo.multiply", x2, const(3.0 * GELU_C * GELU_K)), const(GELU_C))
        slope = apply("stablehlo.multiply", slope, x)
        slope = apply("stablehlo.multiply", slope, apply("stablehlo.subtract", const(1.0), t))
        slope = apply("stablehlo.add", slope, const(1.0))
        slope = apply("stablehlo.multiply", slope, apply("stablehlo.add", t, const(1.0)))
        return apply("stablehlo.multiply", apply("stablehlo.multiply", slope, g), const(0.5))


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


@register
class Add(Binary):
    name = "Add"
    wgsl = "x + y"

    def forward(self, inputs, attrs):
        return np.add(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return np.add(inputs[0], inputs[1], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [g, g]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.add", node)


@register
class Sub(Binary):
    name = "Sub"
    wgsl = "x - y"

    def forward(self, inputs, attrs):
        return np.subtract(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return np.subtract(inputs[0], inputs[1], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [g, e.neg(g) if e.wants(1) else None]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.subtract", node)


@register
class Mul(Binary):
    name = "Mul"
    wgsl = "x * y"

    def forward(self, inputs, attrs):
        return np.multiply(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return np.multiply(inputs[0], inputs[1], out=out)

    def vjp(self, e, g, operands, out, attrs):
        a, b = operands
        # An operand the scan drops (a constant factor, say) gets no cotangent computed.
        return [e.mul(g, b) if e.wants(0) else None, e.mul(g, a) if e.wants(1) else None]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.multiply", node)


@register
class Div(Binary):
    name = "Div"
    wgsl = "x / y"

    def forward(self, inputs, attrs):
        return np.divide(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return np.divide(inputs[0], inputs[1], out=out)

    def vjp(self, e, g, operands, out, attrs):
        a, b = operands
        # d(a/b)/db = -a / b^2; a divisor the scan drops (a constant count, say) costs nothing.
        grad_a = e.div(g, b) if e.wants(0) else None
        grad_b = e.neg(e.div(e.mul(g, a), e.mul(b, b))) if e.wants(1) else None
        return [grad_a, grad_b]

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.divide", node)


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


@register
class Maximum(Binary):
    name = "Maximum"
    wgsl = "nan_max(x, y)"

    def forward(self, inputs, attrs):
        return np.maximum(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return np.maximum(inputs[0], inputs[1], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return _select_grads(e, g, e.greater(operands[0], operands[1]), operands)

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.maximum", node)


@register
class Minimum(Binary):
    name = "Minimum"
    wgsl = "nan_min(x, y)"

    def forward(self, inputs, attrs):
        return np.minimum(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return np.minimum(inputs[0], inputs[1], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return _select_grads(e, g, e.less(operands[0], operands[1]), operands)

    def stablehlo(self, ctx, node):
        return ctx.elementwise("stablehlo.minimum", node)


def _select_grads(e, g, a_wins, operands):
    """Gradients of max/min: to the winner, split evenly on ties (as PyTorch does)."""
    a, b = operands
    tie = e.equal(a, b)
    half = e.mul(g, e.like(g, 0.5))
    zero = e.like(g, 0.0)
    grad_a = e.where(tie, half, e.where(a_wins, g, zero)) if e.wants(0) else None
    grad_b = e.where(tie, half, e.where(a_wins, zero, g)) if e.wants(1) else None
    return [grad_a, grad_b]


@register
class Less(Comparison):
    name = "Less"
    wgsl = "select(0.0, 1.0, x < y)"
    numpy_function = np.less
    hlo_direction = "LT"


@register
class LessEqual(Comparison):
    name = "LessEqual"
    wgsl = "select(0.0, 1.0, x <= y)"
    numpy_function = np.less_equal
    hlo_direction = "LE"


@register
class Greater(Comparison):
    name = "Greater"
    wgsl = "select(0.0, 1.0, x > y)"
    numpy_function = np.greater
    hlo_direction = "GT"


@register
class GreaterEqual(Comparison):
    name = "GreaterEqual"
    wgsl = "select(0.0, 1.0, x >= y)"
    numpy_function = np.greater_equal
    hlo_direction = "GE"


@register
class Equal(Comparison):
    name = "Equal"
    wgsl = "select(0.0, 1.0, x == y)"
    numpy_function = np.equal
    hlo_direction = "EQ"


@register
class NotEqual(Comparison):
    name = "NotEqual"
    wgsl = "select(0.0, 1.0, x != y || is_nan(x) || is_nan(y))"  # NaN differs from everything
    numpy_function = np.not_equal
    hlo_direction = "NE"


@register
class Where(Primitive):
    """``Where(c, a, b)``: a where c is non-zero, else b (all one shape)."""

    name = "Where"
    wgsl = "select(z, y, x != 0.0 || is_nan(x))"  # a NaN condition is true, as in numpy
    arity = 3
    kernel = "elementwise"

    def infer(self, metas, attrs):
        require_float(self, metas)
        return same_shape(self, metas)

    def forward(self, inputs, attrs):
        c, a, b = inputs
        return np.where(c != 0, a, b)

    def forward_into(self, inputs, attrs, out):
        c, a, b = inputs
        np.copyto(out, b)
        np.copyto(out, a, where=c != 0)
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
