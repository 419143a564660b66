"""The special functions: erfinv, erf, erfc, lgamma, digamma and trigamma, one primitive each.

numpy has none of them (and scipy is no run-time dependency: the engine also runs in Pyodide), and
StableHLO has none either, so each forward is a formula of ``special_forms`` that the interpreter
runs through numpy and the StableHLO lowering writes as the same steps, which XLA and IREE run
equal to the interpreter. On WebGPU each is a WGSL function of kernels/elementwise.wgsl (the
special functions' section) written in f32 with the same forms. Their derivatives are other
elementwise ops: erf' = 2/sqrt(pi) e^(-x^2), erfinv' = sqrt(pi)/2 e^(erfinv(x)^2), lgamma' =
digamma, digamma' = trigamma, so every derivative differentiates again (trigamma's own
derivative is the one rule missing: it says so).
"""

import math

import numpy as np

from . import special_forms
from .elementwise import Unary
from .registry import register


class Special(Unary):
    """An elementwise op whose forward and lowering are one formula of ``special_forms``."""

    formula = None

    def forward(self, inputs, attrs):
        x = inputs[0]
        with np.errstate(all="ignore"):  # the branch an element does not take may overflow: it is dropped
            value = type(self).formula(special_forms.NumpyMath(x.dtype), x)
        return np.asarray(value, dtype=x.dtype)

    def stablehlo(self, ctx, node):
        (x,) = ctx.operands(node)
        return type(self).formula(special_forms.HloMath(ctx, node), x)


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
