"""Layer norm and the mean: composites found again to run fused.

A layer norm is found along the last axis, runs as one row kernel
(``kernels/layer_norm.wgsl``) and is differentiated in one ``LayerNormGrad``
node (``topos.ops.rows``). That node reads the row scale inside the group, so a
training plan keeps the scale and runs the layer norm's nodes as separate
launches. A mean, over any axes, runs as one reduction that multiplies by
1 / the count.
"""

import math

from .composite import Composite
from .pattern import Any, Constant, Group, Op, Ref, divides_by_nonzero, divides_by_row_length, last_axis_keepdims


def row_mean(terms):
    """``sum(terms, last axis, keepdims) / n`` with n the axis's extent."""
    return Op("Div", Op("Sum", terms, where=last_axis_keepdims), Constant(), where=divides_by_row_length)


class LayerNorm(Composite):
    name = "layer_norm"
    kernel = "layer_norm"
    entry = "layer_norm"
    differentiated = True
    # centred * broadcast(rsqrt(mean(centred * centred) + eps)), centred = x - broadcast(mean(x))
    pattern = Op(
        "Mul",
        Op("Sub", Any("x"), Op("Broadcast", row_mean(Ref("x"))), name="centred"),
        Op(
            "Broadcast",
            Op("Rsqrt", Op("Add", row_mean(Op("Mul", Ref("centred"), Ref("centred"))), Constant("eps")), name="scale"),
        ),
    )

    def record(self, f, x, weight=None, bias=None, eps=1e-5, axis=-1):
        centred = x - f.mean(x, axis, keepdims=True)
        variance = f.mean(centred * centred, axis, keepdims=True)
        result = centred * f.rsqrt(variance + eps)
        if weight is not None:
            result = result * weight
        if bias is not None:
            result = result + bias
        return result

    def group(self, match):
        bound = match.bound
        return Group(self, match.root, match.covered, bound["x"], bound["eps"], bound["scale"], bound=bound)

    def vjp(self, e, g, group, values):
        return e.apply("LayerNormGrad", [g, values[group.root], values[group.scale]])

    def wgsl_launch(self, k, group, source):
        return k.fused_rows(self.kernel, self.entry, group, source, eps=group.constant)


class Mean(Composite):
    """``sum(x, axes) / c`` for a constant c (what ``topos.mean`` records): one reduction that
    multiplies by 1 / c. Found only for the kernels; its derivative is its primitives'."""

    name = "mean"
    kernel = "reduce"
    pattern = Op("Div", Op("Sum", Any("x"), name="total"), Constant("count"), where=divides_by_nonzero)

    def record(self, f, value, axis=None, keepdims=False):
        total = f.sum(value, axis, keepdims)
        count = math.prod(value.shape[a] for a in total.node.attrs["axes"])
        return total / float(count)

    def group(self, match):
        bound = match.bound
        return Group(self, match.root, match.covered, bound["x"], 1.0 / bound["count"], bound=bound)

    def wgsl_declines(self, k, group):
        return None

    def wgsl_launch(self, k, group, source):
        axes = k.nodes[group.bound["total"]].attrs["axes"]
        return k.fused_reduce("Sum", group, source, axes, scale=group.constant)


LAYER_NORM = LayerNorm()
MEAN = Mean()
