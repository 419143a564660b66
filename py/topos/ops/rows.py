"""Row primitives: the closed-form derivatives of softmax, log-softmax and layer norm.

``topos.softmax``, ``topos.log_softmax`` and ``topos.layer_norm`` are recorded
as primitives; the reverse scan finds them again (their composites,
``topos.ops.composites``, declare the pattern and name the node) and
differentiates each in one of these nodes, as PyTorch's
``softmax_backward_data``, ``log_softmax_backward_data`` and
``native_layer_norm_backward`` do, instead of through the rules of a dozen
primitives. Each works along the last axis, one row at a time:

- ``SoftmaxGrad(g, y)``: ``y (g - sum(g y))`` for ``y = softmax(x)``;
- ``LogSoftmaxGrad(g, y)``: ``g - exp(y) sum(g)`` for ``y = log_softmax(x)``;
- ``LayerNormGrad(g, n, r)``: ``r (g - mean(g) - n mean(g n))`` for ``n = (x - mean) r``,
  ``r = 1 / sqrt(var + eps)`` a row each (shape ``[..., 1]``).

The numpy forwards sum rows as a product with a vector of ones (BLAS), several
times faster than numpy's reduction of short rows; WebGPU runs each as one
workgroup per row (``kernels/softmax.wgsl``, ``kernels/layer_norm.wgsl``).
"""

import numpy as np

from ..text import format_shape
from . import batching
from .reduce import ones_of
from .registry import Meta, Primitive, register, require_float, same_shape


def row_sums(a):
    """The sum of each row (the last axis) of ``a``, keeping that axis: shape ``[..., 1]``."""
    return np.matmul(a, ones_of(a.shape[-1], a.dtype))[..., None]


def fresh(like):
    """A new array of ``like``'s shape and dtype, for a forward to write into."""
    return np.empty(like.shape, like.dtype)


def sum_rows(e, value):
    """The emitter's row sum of ``value``, broadcast back over the row."""
    shape = e.shape(value)
    return e.broadcast(e.sum(value, (len(shape) - 1,), True), shape)


def mean_rows(e, value):
    """The emitter's row mean of ``value``, broadcast back over the row."""
    shape = e.shape(value)
    total = e.sum(value, (len(shape) - 1,), True)
    return e.broadcast(e.div(total, e.like(total, float(shape[-1]))), shape)


def lower_row_sum(ctx, value, shape, dtype):
    """StableHLO: the sum of each row of ``value`` (of ``shape``), broadcast back over the row."""
    rows = ctx.reduce_value(value, shape, dtype, (len(shape) - 1,), "stablehlo.add", 0.0)
    return ctx.broadcast_in_dim(rows, shape[:-1], shape, dtype, tuple(range(len(shape) - 1)))


class RowGrad(Primitive):
    """A derivative along the last axis: ``g`` and the forward's result, both of one shape."""

    arity = 2
    kernel = "softmax"
    #: the entry point of ``kernels/<kernel>.wgsl`` that computes it
    entry = None
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        meta = same_shape(self, metas)
        if meta.rank == 0:
            self.fail("needs rows: an operand of rank 1 or more, got rank 0", metas)
        return meta

    def wgsl_launch(self, k, node, views):
        return k.rows(self.kernel, self.entry, node, views)

    def wgsl_declines(self, k, node):
        return row_declines(k, node)


def row_declines(k, node):
    if -(-node.shape[-1] // k.LANES) > k.LOOP_LIMIT:
        return f"rows of {node.shape[-1]} elements: more than {k.LOOP_LIMIT} iterations of the row kernel's loop"
    return None


@register
class SoftmaxGrad(RowGrad):
    """``SoftmaxGrad(g, y)``: the cotangent of ``x`` where ``y = softmax(x)`` over the last axis."""

    name = "SoftmaxGrad"
    entry = "softmax_grad"
    element_flops = 4  # g y, its row sum, g - sum, times y

    def forward(self, inputs, attrs):
        return self.forward_into(inputs, attrs, fresh(inputs[1]))

    def forward_into(self, inputs, attrs, out):
        g, y = inputs
        np.multiply(g, y, out=out)
        total = row_sums(out)
        np.subtract(g, total, out=out)
        out *= y
        return out

    def vjp(self, e, g, operands, out, attrs):
        # With u the first operand and g this node's cotangent: the map u -> y (u - sum(u y)) is
        # symmetric, so d/du is the same map of g; d/dy = g (u - sum(u y)) - u sum(g y).
        upstream, y = operands
        grad_u = e.apply("SoftmaxGrad", [g, y]) if e.wants(0) else None
        grad_y = None
        if e.wants(1):
            centred = e.sub(upstream, sum_rows(e, e.mul(upstream, y)))
            grad_y = e.sub(e.mul(g, centred), e.mul(upstream, sum_rows(e, e.mul(g, y))))
        return [grad_u, grad_y]

    def stablehlo(self, ctx, node):
        g, y = ctx.operands(node)
        product = ctx.elementwise("stablehlo.multiply", node, [g, y])
        total = lower_row_sum(ctx, product, node.shape, node.dtype)
        return ctx.elementwise("stablehlo.multiply", node, [ctx.elementwise("stablehlo.subtract", node, [g, total]), y])


@register
class LogSoftmaxGrad(RowGrad):
    """``LogSoftmaxGrad(g, y)``: the cotangent of ``x`` where ``y = log_softmax(x)`` over the last axis."""

    name = "LogSoftmaxGrad"
    entry = "log_softmax_grad"
    element_flops = 4  # the row sum of g, exp(y), times it, g minus that

    def forward(self, inputs, attrs):
        return self.forward_into(inputs, attrs, fresh(inputs[1]))

    def forward_into(self, inputs, attrs, out):
        g, y = inputs
        total = row_sums(g)
        np.exp(y, out=out)
        out *= total
        np.subtract(g, out, out=out)
        return out

    def vjp(self, e, g, operands, out, attrs):
        # With u the first operand and g this node's cotangent: d/du = g - sum(g exp(y)),
        # d/dy = -g exp(y) sum(u).
        upstream, y = operands
        probabilities = e.exp(y)
        grad_u = e.sub(g, sum_rows(e, e.mul(g, probabilities))) if e.wants(0) else None
        grad_y = None
        if e.wants(1):
            grad_y = e.neg(e.mul(e.mul(g, probabilities), sum_rows(e, upstream)))
        return [grad_u, grad_y]

    def stablehlo(self, ctx, node):
        g, y = ctx.operands(node)
        total = lower_row_sum(ctx, g, node.shape, node.dtype)
        scaled = ctx.elementwise(
            "stablehlo.multiply", node, [ctx.elementwise("stablehlo.exponential", node, [y]), total]
        )
        return ctx.elementwise("stablehlo.subtract", node, [g, scaled])


@register
class LayerNormGrad(Primitive):
    """``LayerNormGrad(g, n, r)``: the cotangent of ``x`` where ``n = (x - mean) r`` over the last
    axis and ``r = 1 / sqrt(var + eps)`` is a row each (``[..., 1]``): ``r (g - mean(g) - n mean(g n))``."""

    name = "LayerNormGrad"
    arity = 3
    kernel = "layer_norm"
    entry = "layer_norm_grad"
    element_flops = 8  # g n, two row sums, their means, n m, two subtractions, times r
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        g, normed, scale = metas
        meta = same_shape(self, [g, normed])
        if meta.rank == 0:
            self.fail("needs rows: an operand of rank 1 or more, got rank 0", metas)
        if scale.shape != meta.shape[:-1] + (1,) or scale.dtype != meta.dtype:
            self.fail(
                f"the row scale must be {format_shape(meta.shape[:-1] + (1,))} {meta.dtype}, "
                f"got {format_shape(scale.shape)} {scale.dtype}",
                metas,
            )
        return Meta(meta.shape, meta.dtype)

    def forward(self, inputs, attrs):
        return self.forward_into(inputs, attrs, fresh(inputs[1]))

    def forward_into(self, inputs, attrs, out):
        g, normed, scale = inputs
        count = normed.dtype.type(normed.shape[-1])
        mean_g = np.divide(row_sums(g), count)
        np.multiply(g, normed, out=out)
        mean_gn = np.divide(row_sums(out), count)
        np.multiply(normed, mean_gn, out=out)
        np.subtract(g, out, out=out)
        out -= mean_g
        out *= scale
        return out

    def vjp(self, e, g, operands, out, attrs):
        # With u the first operand and g this node's cotangent: the map u -> r (u - mean(u) - n mean(u n))
        # is symmetric, so d/du is the same map of g; d/dn = -r (g mean(u n) + u mean(g n)); d/dr is the
        # row sum of g (u - mean(u) - n mean(u n)).
        upstream, normed, scale = operands
        shape = e.shape(normed)
        grad_u = e.apply("LayerNormGrad", [g, normed, scale]) if e.wants(0) else None
        grad_n = grad_r = None
        if e.wants(1):
            spread = e.add(
                e.mul(g, mean_rows(e, e.mul(upstream, normed))), e.mul(upstream, mean_rows(e, e.mul(g, normed)))
            )
            grad_n = e.neg(e.mul(e.broadcast(scale, shape), spread))
        if e.wants(2):
            centred = e.sub(
                e.sub(upstream, mean_rows(e, upstream)), e.mul(normed, mean_rows(e, e.mul(upstream, normed)))
            )
            grad_r = e.sum(e.mul(g, centred), (len(shape) - 1,), True)
        return [grad_u, grad_n, grad_r]

    def stablehlo(self, ctx, node):
        g, normed, scale = ctx.operands(node)
        shape, dtype = node.shape, node.dtype
        count = ctx.splat(float(shape[-1]), shape, dtype)
        mean_g = ctx.elementwise("stablehlo.divide", node, [lower_row_sum(ctx, g, shape, dtype), count])
        product = ctx.elementwise("stablehlo.multiply", node, [g, normed])
        mean_gn = ctx.elementwise("stablehlo.divide", node, [lower_row_sum(ctx, product, shape, dtype), count])
        result = ctx.elementwise("stablehlo.multiply", node, [normed, mean_gn])
        result = ctx.elementwise("stablehlo.subtract", node, [g, result])
        result = ctx.elementwise("stablehlo.subtract", node, [result, mean_g])
        rows = ctx.broadcast_in_dim(scale, shape[:-1] + (1,), shape, dtype, tuple(range(len(shape))))
        return ctx.elementwise("stablehlo.multiply", node, [result, rows])

    def wgsl_launch(self, k, node, views):
        return k.rows(self.kernel, self.entry, node, views)

    def wgsl_declines(self, k, node):
        return row_declines(k, node)
