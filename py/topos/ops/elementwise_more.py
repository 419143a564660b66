"""Elementwise rows whose accuracy needs care: log1p and expm1, the roundings, tan, atan and the
hyperbolic functions, one row each of ``elementwise``'s table.

Each forward is numpy's own ufunc. Where StableHLO has the function (log_plus_one,
exponential_minus_one, floor, ceil, round_nearest_even, tan, atan2) the lowering is that op;
where it has none (trunc, sinh, cosh, asinh: CHLO ops, which a plain StableHLO consumer may
not take) the lowering composes StableHLO ops in a form where no cancellation or overflow costs
digits (CHLO's own decomposition, but for e^|x| / 2, taken as a square rather than CHLO's
exp(|x| + log(1/2)), whose rounding grows with |x|). The WGSL helpers (kernels/elementwise.wgsl,
"Elementwise rows that need their own accuracy") do the same on f32, whose builtins WGSL bounds
loosely: each says its error, and tests/python/test_elementwise_more.py holds each to it.
``arcsin`` and ``arccos`` are composites of these rows (``topos.model.elementwise_more``).
"""

import numpy as np

from .elementwise import TableRow, Unary, table_row, unary


class Rounding(TableRow, Unary):
    """floor, ceil, round and trunc: piecewise constant, so their derivative is zero everywhere
    (as JAX's and PyTorch's: no gradient flows through them, nothing is recorded backward)."""

    differentiable = False


def rounding(name, numpy, hlo, wgsl):
    # WGSL lets an implementation assume no NaN or infinity reaches a builtin: those pass through.
    return table_row(Rounding, name, numpy, hlo, f"select({wgsl}(x), x, is_nan(x) || is_infinite(x))")


def trunc_hlo(ctx, node):
    # ceil below zero, floor above: trunc(-0.5) is ceil's -0, as numpy's.
    (x,) = ctx.operands(node)
    negative = ctx.compare("LT", x, ctx.splat(0.0, node.shape, node.dtype), node.shape, node.dtype)
    up, down = ctx.elementwise("stablehlo.ceil", node, [x]), ctx.elementwise("stablehlo.floor", node, [x])
    return ctx.select(negative, up, down, node.shape, node.dtype)


Floor = rounding("Floor", numpy=np.floor, hlo="stablehlo.floor", wgsl="floor")
Ceil = rounding("Ceil", numpy=np.ceil, hlo="stablehlo.ceil", wgsl="ceil")
# Half to even, as numpy's round and rint (WGSL's round is half to even too).
RoundNearestEven = rounding("RoundNearestEven", numpy=np.rint, hlo="stablehlo.round_nearest_even", wgsl="round")
Trunc = rounding("Trunc", numpy=np.trunc, hlo=trunc_hlo, wgsl="trunc")


# log1p and expm1: the small arguments whose 1 + x or e^x - 1 would round away their digits.
Log1p = unary(
    "Log1p",
    numpy=np.log1p,
    hlo="stablehlo.log_plus_one",
    wgsl="precise_log1p(x)",
    vjp=lambda e, g, x, out: [e.div(g, e.add(e.like(x, 1.0), x))],  # d log(1 + x) = 1 / (1 + x)
)

Expm1 = unary(
    "Expm1",
    numpy=np.expm1,
    hlo="stablehlo.exponential_minus_one",
    wgsl="precise_expm1(x)",
    vjp=lambda e, g, x, out: [e.mul(g, e.add(out, e.like(out, 1.0)))],  # d (e^x - 1) = e^x = out + 1
)


# Trigonometric -----------------------------------------------------------------------


def atan_hlo(ctx, node):
    # atan(x) = atan2(x, 1): StableHLO has atan2 and no atan.
    (x,) = ctx.operands(node)
    return ctx.elementwise("stablehlo.atan2", node, [x, ctx.splat(1.0, node.shape, node.dtype)])


# d atan(x) = 1 / (1 + x^2), which reads 0 where x^2 overflows (its limit).
Atan = unary(
    "Atan",
    numpy=np.arctan,
    hlo=atan_hlo,
    wgsl="arc_tangent2(x, 1.0)",
    vjp=lambda e, g, x, out: [e.div(g, e.add(e.like(x, 1.0), e.mul(x, x)))],
)

# d tan(x) = 1 + tan(x)^2. StableHLO's tan (jaxlib's XLA here compiles it); WGSL's precise_tan
# reduces the argument exactly, as precise_sin and precise_cos do, then takes sin / cos or -cos / sin.
Tan = unary(
    "Tan",
    numpy=np.tan,
    hlo="stablehlo.tan",
    wgsl="precise_tan(x)",
    vjp=lambda e, g, x, out: [e.mul(g, e.add(e.like(out, 1.0), e.mul(out, out)))],
)


# Hyperbolic --------------------------------------------------------------------------


def half_exponentials(ctx, node, magnitude):
    """e^a / 2 and e^-a / 2 for a = |x|, the first as e^(a/2) (e^(a/2) / 2): finite up to where
    sinh and cosh themselves overflow (e^a alone overflows sooner), and within a few ulps. CHLO's
    exp(a + log(1/2)) rounds a + log(1/2), an error that grows with a (500 ulps in float64)."""

    def op(name, *operands):
        return ctx.elementwise(f"stablehlo.{name}", node, list(operands))

    root = op("exponential", op("multiply", magnitude, ctx.splat(0.5, node.shape, node.dtype)))
    up = op("multiply", root, op("multiply", root, ctx.splat(0.5, node.shape, node.dtype)))
    return up, op("divide", ctx.splat(0.25, node.shape, node.dtype), up)


def sinh_hlo(ctx, node):
    # Below |x| = 1, (expm1(x) - expm1(-x)) / 2: e^x - e^-x would cancel the digits of a small result.
    # Above, x's sign on e^|x| / 2 - e^-|x| / 2 (e^x / 2 of a negative x would be subnormal first).
    (x,) = ctx.operands(node)

    def op(name, *operands):
        return ctx.elementwise(f"stablehlo.{name}", node, list(operands))

    def splat(value):
        return ctx.splat(value, node.shape, node.dtype)

    magnitude = op("abs", x)
    up, down = half_exponentials(ctx, node, magnitude)
    large = op("subtract", up, down)
    negative = ctx.compare("LT", x, splat(0.0), node.shape, node.dtype)
    large = ctx.select(negative, op("negate", large), large, node.shape, node.dtype)
    rise, fall = op("exponential_minus_one", x), op("exponential_minus_one", op("negate", x))
    small = op("multiply", op("subtract", rise, fall), splat(0.5))
    near = ctx.compare("LT", magnitude, splat(1.0), node.shape, node.dtype)
    return ctx.select(near, small, large, node.shape, node.dtype)


def cosh_hlo(ctx, node):
    # A sum of two positive halves: nothing cancels.
    up, down = half_exponentials(ctx, node, ctx.elementwise("stablehlo.abs", node, ctx.operands(node)))
    return ctx.elementwise("stablehlo.add", node, [up, down])


Sinh = unary(
    "Sinh",
    numpy=np.sinh,
    hlo=sinh_hlo,
    wgsl="precise_sinh(x)",
    vjp=lambda e, g, x, out: [e.mul(g, e.apply("Cosh", [x]))],
    element_flops=14,
)

Cosh = unary(
    "Cosh",
    numpy=np.cosh,
    hlo=cosh_hlo,
    wgsl="precise_cosh(x)",
    vjp=lambda e, g, x, out: [e.mul(g, e.apply("Sinh", [x]))],
    element_flops=7,
)


def asinh_hlo(ctx, node):
    """asinh(|x|) as log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), which equals log(|x| + sqrt(1 + x^2))
    without its cancellation near 0; past 1/sqrt(eps), where 1 + x^2 rounds to x^2 (and later
    overflows), log(|x|) + log 2; then x's sign."""
    (x,) = ctx.operands(node)

    def op(name, *operands):
        return ctx.elementwise(f"stablehlo.{name}", node, list(operands))

    def splat(value):
        return ctx.splat(value, node.shape, node.dtype)

    a = op("abs", x)
    square = op("multiply", a, a)
    root = op("sqrt", op("add", splat(1.0), square))
    small = op("log_plus_one", op("add", a, op("divide", square, op("add", splat(1.0), root))))
    large = op("add", op("log", a), splat(np.log(2.0)))
    past = ctx.compare("GT", a, splat(1.0 / np.sqrt(np.finfo(node.dtype).eps)), node.shape, node.dtype)
    magnitude = ctx.select(past, large, small, node.shape, node.dtype)
    negative = ctx.compare("LT", x, splat(0.0), node.shape, node.dtype)
    return ctx.select(negative, op("negate", magnitude), magnitude, node.shape, node.dtype)


def asinh_vjp(e, g, x, out):
    # d asinh(x) = 1 / sqrt(x^2 + 1), as PyTorch writes it: 0 where x^2 overflows, as its.
    return [e.mul(g, e.apply("Rsqrt", [e.add(e.mul(x, x), e.like(x, 1.0))]))]


Asinh = unary("Asinh", numpy=np.arcsinh, hlo=asinh_hlo, wgsl="precise_asinh(x)", vjp=asinh_vjp, element_flops=10)
