"""Rem: C's ``fmod``, the remainder of ``a / b`` truncated toward zero, with ``a``'s sign (``lax.rem``).

A primitive rather than ``a - b * trunc(a / b)``, which rounds twice and can be wrong by
whole multiples of ``b`` once ``|a / b|`` passes 2^24 (float32) or 2^53: ``fmod`` is exact
(the remainder is always representable), and numpy (``np.fmod``), StableHLO
(``stablehlo.remainder``, C's ``fmod`` on XLA's CPU) and the WGSL helper ``exact_fmod``
(kernels/elementwise.wgsl) each compute it exactly. ``topos.fmod`` records it, and
``topos.mod`` builds numpy's floored remainder on it as JAX's ``jnp.remainder`` does
(``topos.model.activations_more``).
"""

import numpy as np

from .elementwise import binary


def rem_vjp(e, g, a, b, out):
    # d/da = 1, d/db = -trunc(a / b), as JAX's rem and PyTorch's fmod (a jump wherever a / b is an
    # integer). trunc(q) is q - fmod(q, 1): fmod is exact and so is the subtraction (its answer,
    # q's integer part, is representable), so no rounding row is needed.
    grad_b = None
    if e.wants(1):
        q = e.div(a, b)
        whole = e.sub(q, e.apply("Rem", [q, e.like(q, 1.0)]))
        grad_b = e.neg(e.mul(g, whole))
    return [g, grad_b]


Rem = binary("Rem", numpy=np.fmod, hlo="stablehlo.remainder", wgsl="exact_fmod(x, y)", vjp=rem_vjp)
