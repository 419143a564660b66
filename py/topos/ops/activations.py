"""GELU (tanh form) and its closed-form derivative: the two elementwise ops whose forward is many steps.

Each is a class of its own beside the table rows of ``elementwise``: its numpy forward writes
every step in place, its StableHLO lowering composes the same steps in the same order, and
``GeluGrad`` is one node where the rule written in primitives made eighteen.
"""

import math

import numpy as np

from . import batching
from .elementwise import Unary
from .registry import Primitive, register, require_float, same_shape

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
    batch = batching.leading

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
