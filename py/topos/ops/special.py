"""The special functions: erfinv, erf, erfc, lgamma, digamma and polygamma, one primitive each.

numpy has none of them (and scipy is no run-time dependency: the engine also runs in Pyodide), and
StableHLO has none either, so each forward is a formula of ``special_forms`` that the interpreter
runs through numpy and the StableHLO lowering writes as the same steps, which XLA and IREE run
equal to the interpreter. On WebGPU each is a WGSL function of kernels/elementwise.wgsl (its
special functions' section) written in f32 with the same forms. Their derivatives are other
elementwise ops: erf' = 2/sqrt(pi) e^(-x^2), erfinv' = sqrt(pi)/2 e^(erfinv(x)^2), lgamma' =
digamma, digamma' = polygamma(1, .) and polygamma(n, .)' = polygamma(n + 1, .), so every one
differentiates again, to any order.
"""

import math

import numpy as np

from . import attributes as kinds
from . import batching, special_forms
from .elementwise import Unary
from .registry import Primitive, bytes_moved, integer_attr, register, require_float

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class SpecialForm:
    """The rules of an elementwise op whose forward and lowering are one formula of ``special_forms``."""

    formula = None

    def evaluate(self, m, x, attrs):
        return type(self).formula(m, x)

    def forward(self, inputs, attrs):
        x = inputs[0]
        with np.errstate(all="ignore"):  # the branch an element does not take may overflow: it is dropped
            value = self.evaluate(special_forms.NumpyMath(x.dtype), x, attrs)
        return np.asarray(value, dtype=x.dtype)

    def stablehlo(self, ctx, node):
        (x,) = ctx.operands(node)
        return self.evaluate(special_forms.HloMath(ctx, node), x, node.attrs)


class Special(SpecialForm, Unary):
    """A special function of one operand and no attribute: a plain row for the per-op tests."""


def gauss_slope(e, x, scale):
    """scale e^(-x^2): erf's derivative (scale 2/sqrt(pi)) and erfc's (its negative)."""
    return e.mul(e.like(x, scale), e.exp(e.neg(e.mul(x, x))))


@register
class ErfInv(Special):
    """The inverse error function on [-1, 1]: erfinv(+-1) = +-inf, NaN outside (Giles' forms, XLA's)."""

    name = "ErfInv"
    wgsl = "erf_inverse(x)"
    formula = special_forms.erf_inv
    element_flops = 30  # log1p, a square root, a nine-term polynomial (f32; f64 evaluates three)

    def vjp(self, e, g, operands, out, attrs):
        # d erfinv(x) = sqrt(pi)/2 e^(erfinv(x)^2): inf at +-1, as torch's.
        slope = e.mul(e.like(out, math.sqrt(math.pi) / 2), e.exp(e.mul(out, out)))
        return [e.mul(g, slope)]


@register
class Erf(Special):
    """The error function (Cephes' forms: a series below |x| = 1, 1 - erfc(|x|) above)."""

    name = "Erf"
    wgsl = "error_function(x)"
    formula = special_forms.erf
    element_flops = 40  # the series and both tail pieces, and an exp

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, gauss_slope(e, operands[0], TWO_OVER_SQRT_PI))]


@register
class Erfc(Special):
    """1 - erf(x) without the cancellation: e^(-x^2) times a rational function in the tail (XLA's erfc)."""

    name = "Erfc"
    wgsl = "error_function_complement(x)"
    formula = special_forms.erfc
    element_flops = 40

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, gauss_slope(e, operands[0], -TWO_OVER_SQRT_PI))]


@register
class Lgamma(Special):
    """log|Gamma(x)|: the series about 2 below 17/2, Lanczos (g = 7, 9 terms: XLA's Lgamma) above,
    reflected below 1/2; +inf at the poles."""

    name = "Lgamma"
    wgsl = "log_gamma(x)"
    formula = special_forms.lgamma
    element_flops = 45  # eight divisions and sums, three logs, a sine

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, e.apply("Digamma", [operands[0]]))]


@register
class Digamma(Special):
    """psi(x) = Gamma'(x) / Gamma(x), the derivative of lgamma: the series about 2 and about its root
    on [1/2, 5/2), the Lanczos form's derivative (XLA's Digamma) elsewhere."""

    name = "Digamma"
    wgsl = "digamma(x)"
    formula = special_forms.digamma
    element_flops = 60  # sixteen divisions, a log1p, a sine, a cosine

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, e.apply("Polygamma", [operands[0]], order=1))]


@register
class Polygamma(SpecialForm, Primitive):
    """psi^(n)(x), the n-th derivative of digamma, n >= 1 (the ``order`` attribute): a shifted sum and
    the asymptotic series, reflected below 0."""

    name = "Polygamma"
    arity = 1
    kernel = "elementwise"
    # The order is written into the expression by ``wgsl_launch`` (so the node is launched alone,
    # not fused); WGSL's form takes orders 1 to 8 (its P_n in ten coefficients), the host the rest.
    wgsl = "polygamma_of_order(ORDER, x)"
    attributes = {"order": kinds.positive}
    batch = batching.elementwise

    def normalize(self, metas, attrs):
        return {"order": integer_attr(self, metas, attrs.get("order"), "order")}

    def infer(self, metas, attrs):
        if attrs["order"] < 1:
            self.fail(f"order must be 1 or more, got {attrs['order']} (order 0 is Digamma)", metas)
        require_float(self, metas)
        return metas[0]

    def evaluate(self, m, x, attrs):
        return special_forms.polygamma(m, x, attrs["order"])

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, e.apply("Polygamma", [operands[0]], order=attrs["order"] + 1))]

    def wgsl_declines(self, k, node):
        if node.attrs["order"] > 8:
            return f"polygamma of order {node.attrs['order']}: WGSL's form takes orders 1 to 8; the host runs it"
        return None

    def wgsl_launch(self, k, node, views):
        return k.elementwise(self.wgsl.replace("ORDER", str(node.attrs["order"])), node, views)

    def cost(self, operands, meta, attrs):
        # The shifted sum's 12 + 3n terms, each a division and log2(n + 1) products, and the reflection.
        terms = 12 + 3 * attrs["order"]
        flops = meta.size * (terms * (2 + math.ceil(math.log2(attrs["order"] + 1))) + 20)
        return flops, bytes_moved(operands, meta)
