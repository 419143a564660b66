"""The softmax family: softmax, log-softmax, logsumexp and cross-entropy.

Softmax and log-softmax are found again along the last axis, run as one row
kernel each (``kernels/softmax.wgsl``) and differentiated in one ``SoftmaxGrad``
or ``LogSoftmaxGrad`` node (``topos.ops.rows``), which reads only the
composite's result. Logsumexp and cross-entropy are only recorded: their
nodes hold a log-softmax or plain primitives, which the passes treat as such.
"""

import numpy as np

from .composite import Composite
from .pattern import Any, Op, Ref, last_axis_keepdims


def shifted(x, name=None):
    """``x - broadcast(stop_gradient(max(x, last axis, keepdims)))``: the row's maximum shifted out."""
    maximum = Op("Max", Ref(x.name), where=last_axis_keepdims)
    return Op("Sub", x, Op("Broadcast", Op("StopGradient", maximum)), name=name)


def row_sum(terms):
    """``broadcast(sum(terms, last axis, keepdims))``."""
    return Op("Broadcast", Op("Sum", terms, where=last_axis_keepdims))


class Softmax(Composite):
    name = "softmax"
    kernel = "softmax"
    entry = "softmax"
    differentiated = True
    # exp(shifted) / broadcast(sum(exp(shifted)))
    pattern = Op("Div", Op("Exp", shifted(Any("x")), name="exp"), row_sum(Ref("exp")))

    def record(self, f, v, axis=-1):
        shifted = f.exp(v - f.stop_gradient(f.max(v, axis, keepdims=True)))
        return shifted / f.sum(shifted, axis, keepdims=True)

    def vjp(self, e, g, group, values):
        return e.apply("SoftmaxGrad", [g, values[group.root]])


class LogSoftmax(Composite):
    name = "log_softmax"
    kernel = "softmax"
    entry = "log_softmax"
    differentiated = True
    # shifted - broadcast(log(sum(exp(shifted))))
    pattern = Op(
        "Sub",
        shifted(Any("x"), name="shifted"),
        Op("Broadcast", Op("Log", Op("Sum", Op("Exp", Ref("shifted")), where=last_axis_keepdims))),
    )

    def record(self, f, v, axis=-1):
        shifted = v - f.stop_gradient(f.max(v, axis, keepdims=True))
        return shifted - f.log(f.sum(f.exp(shifted), axis, keepdims=True))

    def vjp(self, e, g, group, values):
        return e.apply("LogSoftmaxGrad", [g, values[group.root]])


class Logsumexp(Composite):
    """``log(sum(exp(v)))`` with the maximum, clamped to the finite range, shifted out: only recorded."""

    name = "logsumexp"

    def record(self, f, v, axis=-1, keepdims=False):
        largest = float(np.finfo(v.dtype).max)
        shift = f.stop_gradient(f.maximum(f.minimum(f.max(v, axis, keepdims=True), largest), -largest))
        total = f.log(f.sum(f.exp(v - shift), axis, keepdims=True)) + shift
        return total if keepdims else f.squeeze(total, axis)


class CrossEntropy(Composite):
    """The mean negative log-likelihood of int32 targets: a log-softmax, a select and a mean."""

    name = "cross_entropy"

    def record(self, f, logits, targets):
        # A select, not a product with the one-hot mask: a class whose logit is -inf has a log-probability
        # of -inf, and 0 * -inf would make the loss NaN (PyTorch's loss is finite there).
        mask = f.one_hot(targets, logits.shape[-1], logits.dtype)
        picked = f.sum(f.where(mask, f.log_softmax(logits, -1), 0.0), -1)
        return -f.mean(picked)


SOFTMAX = Softmax()
LOG_SOFTMAX = LogSoftmax()
LOGSUMEXP = Logsumexp()
CROSS_ENTROPY = CrossEntropy()
