"""The product over axes (``Prod``) and the running folds along one axis: the running product
(``CumProd``), maximum and minimum (``CumMax``, ``CumMin``) and log-sum-exp (``LogCumSumExp``).

``Prod`` is a reduction like ``Sum``: ``stablehlo.reduce`` with ``multiply`` from 1, and
the reduce kernel (``kernels/reduce.wgsl``) with the fold ``a * b``. Its derivative is
the product of the other elements, formed without dividing by the element (so it is
right at zeros, as JAX's: with one zero the zero's cotangent is the product of the
others and every other is 0; with two or more all are 0, and no 0 / 0 appears) as
the running products before and after it: ``CumProd`` nodes, whose own derivative
then carries the second order.

The running folds are JAX's ``lax.cumprod``, ``cummax``, ``cummin`` and
``cumlogsumexp``: numpy's ``multiply.accumulate``, ``maximum.accumulate``,
``minimum.accumulate`` and ``logaddexp.accumulate`` along ``axis`` (from the end with
``reverse``), NaN spreading forward as numpy's. They lower as JAX lowers them to XLA, a
``reduce_window`` as long as the axis, padded below, whose region is the fold (``CumSum``'s
form, ``topos.ops.scans``); ``logaddexp``'s region is JAX's ``_logaddexp``: the larger
plus ``log1p(exp(-|a - b|))``, the running maximum subtracted so that nothing overflows.
On WebGPU they are the scan kernel's ``cumulative`` entries (``kernels/scan.wgsl``), the
fold chosen by a parameter word. Their derivatives are JAX's: the scan run again and
differentiated op by op (``topos.ops.associative_scan``), so ``CumMax``'s cotangent goes
to the position of the running maximum (split evenly at a tie, as ``lax.max``).
"""

import math

import numpy as np

from . import attributes as kinds
from . import batching
from .associative_scan import scan_vjp
from .reduce import Fold, Reduction, expand_reduced
from .registry import Meta, Primitive, axis_index, bytes_moved, register, require_float
from .scans import axis_beyond_the_loop, running_window


@register
class Prod(Reduction):
    """The product over ``axes``; over an empty axis it is 1."""

    name = "Prod"
    fold = Fold(identity="1.0", combine="a * b")

    def forward(self, inputs, attrs):
        x = inputs[0]
        return np.multiply.reduce(x, axis=attrs["axes"], dtype=x.dtype, keepdims=attrs["keepdims"])

    def vjp(self, e, g, operands, out, attrs):
        x = operands[0]
        shape, axes = tuple(e.shape(x)), attrs["axes"]
        kept = tuple(a for a in range(len(shape)) if a not in axes)
        n = math.prod(shape[a] for a in axes)
        if n == 0 or math.prod(shape) == 0:
            return [e.broadcast(e.like(x, 0.0), shape)]
        # The reduced axes moved last and flattened into one of n: row r's terms.
        order = kept + tuple(axes)
        moved = e.transpose(x, order) if order != tuple(range(len(shape))) else x
        rows = e.reshape(moved, tuple(shape[a] for a in kept) + (n,))
        others = e.mul(exclusive_products(e, rows, False), exclusive_products(e, rows, True))
        others = e.reshape(others, tuple(shape[a] for a in order))
        if order != tuple(range(len(shape))):
            others = e.transpose(others, tuple(order.index(a) for a in range(len(shape))))
        return [e.mul(expand_reduced(e, g, shape, attrs), others)]

    def stablehlo(self, ctx, node):
        return ctx.reduce(node, "stablehlo.multiply", 1.0)

    def cost(self, operands, meta, attrs):
        # One multiply for each input element folded away.
        return operands[0].size - meta.size, bytes_moved(operands, meta)


def exclusive_products(e, rows, reverse):
    """Along the last axis of ``rows``, the product of the elements before each (after it, with
    ``reverse``): the running product shifted by one, 1 at the first (last) element."""
    shape = tuple(e.shape(rows))
    rank, n = len(shape), shape[-1]
    if n == 1:
        return e.broadcast(e.like(rows, 1.0), shape)
    running = e.apply("CumProd", [rows], axis=rank - 1, reverse=reverse)
    ends = (1, n) if reverse else (0, n - 1)
    shifted = e.slice(running, (0,) * (rank - 1) + (ends[0],), shape[:-1] + (ends[1],), (1,) * rank)
    edge = (0, 1) if not reverse else (n - 1, n)
    first = e.slice(rows, (0,) * (rank - 1) + (edge[0],), shape[:-1] + (edge[1],), (1,) * rank)
    one = e.broadcast(e.like(first, 1.0), tuple(e.shape(first)))
    pieces = [shifted, one] if reverse else [one, shifted]
    return e.apply("Concatenate", pieces, axis=rank - 1)


# The running folds ---------------------------------------------------------------------------


class Cumulative(Primitive):
    """The running fold along ``axis``: element j folds elements 0..j (``reverse``: j..n-1)."""

    arity = 1
    kernel = "scan"
    attributes = {"axis": kinds.axis, "reverse": kinds.flag}
    #: numpy's ufunc whose ``accumulate`` this is, the StableHLO region's op (or the name of a
    #: region written here), the fold's identity, and its number in the scan kernel (word 6)
    ufunc = None
    hlo = None
    # Each fold also writes ``combine(self, e, a, b)``: the fold of ``a`` and ``b`` in primitives,
    # as the scan of the derivative (``scan_vjp``) runs it.
    identity = None
    fold_kind = None
    batch = batching.leading_axis

    def normalize(self, metas, attrs):
        axis = axis_index(attrs.get("axis", -1), metas[0].shape, self.name)
        return {"axis": axis, "reverse": bool(attrs.get("reverse", False))}

    def infer(self, metas, attrs):
        require_float(self, metas)
        return Meta(metas[0].shape, metas[0].dtype)

    def forward(self, inputs, attrs):
        x = inputs[0]
        return self.forward_into(inputs, attrs, np.empty_like(x))

    def forward_into(self, inputs, attrs, out):
        x, axis = inputs[0], attrs["axis"]
        if x.size == 0:
            return out
        if attrs["reverse"]:
            self.ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype, out=np.flip(out, axis))
            return out
        return self.ufunc.accumulate(x, axis=axis, dtype=x.dtype, out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [scan_vjp(e, self.combine, operands[0], g, attrs["axis"], attrs["reverse"])]

    def region(self, ctx, scalar):
        return ctx.region(self.hlo, scalar)

    def stablehlo(self, ctx, node):
        # CumSum's window as long as the axis, with this fold's identity and region.
        start = ctx.splat(self.identity, (), node.dtype)
        return running_window(ctx, node, start, self.region(ctx, ctx.tensor_type((), node.dtype)))

    def wgsl_launch(self, k, node, views):
        return k.cumulative(self.fold_kind, node, views[0])

    def wgsl_declines(self, k, node):
        return axis_beyond_the_loop(k, node)

    def cost(self, operands, meta, attrs):
        # One fold for each element.
        return meta.size, bytes_moved(operands, meta)


@register
class CumProd(Cumulative):
    """The running product along ``axis`` (``numpy.cumprod``, ``jax.lax.cumprod``)."""

    name = "CumProd"
    ufunc = np.multiply
    hlo = "stablehlo.multiply"
    identity = 1.0
    fold_kind = 1

    def combine(self, e, a, b):
        return e.mul(a, b)


@register
class CumMax(Cumulative):
    """The running maximum along ``axis`` (``numpy.maximum.accumulate``, ``jax.lax.cummax``); NaN spreads."""

    name = "CumMax"
    ufunc = np.maximum
    hlo = "stablehlo.maximum"
    identity = float("-inf")
    fold_kind = 2

    def combine(self, e, a, b):
        return e.apply("Maximum", [a, b])


@register
class CumMin(Cumulative):
    """The running minimum along ``axis`` (``numpy.minimum.accumulate``, ``jax.lax.cummin``); NaN spreads."""

    name = "CumMin"
    ufunc = np.minimum
    hlo = "stablehlo.minimum"
    identity = float("inf")
    fold_kind = 3

    def combine(self, e, a, b):
        return e.apply("Minimum", [a, b])


@register
class LogCumSumExp(Cumulative):
    """``log(cumsum(exp(x)))`` along ``axis``, stably (``numpy.logaddexp.accumulate``, ``jax.lax.cumlogsumexp``)."""

    name = "LogCumSumExp"
    ufunc = np.logaddexp
    identity = float("-inf")
    fold_kind = 4

    def combine(self, e, a, b):
        # m + log(exp(a - m) + exp(b - m)) with m the larger, held constant (its derivative cancels):
        # each term is at most 1, so nothing overflows, and the derivative is exp(a - out), smooth to
        # every order. Where both are -inf the fold is -inf and neither gets a cotangent, rather than
        # the 0 / 0 of exp(a - m) / (exp(a - m) + exp(b - m)); an infinite m is not subtracted. The
        # tests compare m with the infinities only: WGSL promises nothing of a NaN's comparisons.
        larger = e.apply("StopGradient", [e.apply("Maximum", [a, b])])
        zero, one = e.like(larger, 0.0), e.like(larger, 1.0)
        empty = e.equal(larger, e.like(larger, float("-inf")))
        shift = e.where(empty, zero, e.where(e.equal(larger, e.like(larger, float("inf"))), zero, larger))
        total = e.where(empty, one, e.add(e.exp(e.sub(a, shift)), e.exp(e.sub(b, shift))))
        return e.where(empty, e.like(larger, float("-inf")), e.add(shift, e.log(total)))

    def region(self, ctx, scalar):
        # JAX's _logaddexp: amax + log1p(exp(-|a - b|)), and a + b where a - b is NaN (a NaN, or two
        # infinities of one sign, whose sum is that infinity).
        p = ctx.fresh_name("l")
        i1 = ctx.tensor_type((), "bool")
        lines = [
            f"{p}_max = stablehlo.maximum {p}_a, {p}_b : {scalar}",
            f"{p}_delta = stablehlo.subtract {p}_a, {p}_b : {scalar}",
            f"{p}_nan = stablehlo.compare NE, {p}_delta, {p}_delta, FLOAT : ({scalar}, {scalar}) -> {i1}",
            f"{p}_sum = stablehlo.add {p}_a, {p}_b : {scalar}",
            f"{p}_abs = stablehlo.abs {p}_delta : {scalar}",
            f"{p}_neg = stablehlo.negate {p}_abs : {scalar}",
            f"{p}_exp = stablehlo.exponential {p}_neg : {scalar}",
            f"{p}_log = stablehlo.log_plus_one {p}_exp : {scalar}",
            f"{p}_far = stablehlo.add {p}_max, {p}_log : {scalar}",
            f"{p}_out = stablehlo.select {p}_nan, {p}_sum, {p}_far : {i1}, {scalar}",
        ]
        body = "".join(f"        {line}\n" for line in lines)
        return f"      ^bb0({p}_a: {scalar}, {p}_b: {scalar}):\n{body}        stablehlo.return {p}_out : {scalar}"

    def cost(self, operands, meta, attrs):
        # An exp, a log and a few adds for each element.
        return 4 * meta.size, bytes_moved(operands, meta)
