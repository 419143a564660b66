"""The special functions: ``topos.erf``, ``erfc``, ``erfinv``, ``lgamma`` (``gammaln``), ``digamma``, ``polygamma``.

numpy has none of them; their names are ``jax.scipy.special``'s (and scipy's), exposed at the
top level as ``jax.lax`` exposes its ``erf`` and ``lgamma``: topos has one namespace. Each
records one primitive (``topos.ops.special``): the forms XLA's own library expands them to,
run by numpy, written as StableHLO and as WGSL, accurate to a few ulps where the function is
well conditioned. NaN gives NaN, and infinities and poles give scipy's answers.
"""

import numbers

from ..errors import ArgumentError
from . import arguments


def _special(opcode, value):
    return arguments.recorded(value, opcode).tape.apply(opcode, [value])


def erfinv(v):
    """The inverse error function, elementwise, as ``jax.scipy.special.erfinv`` (records ``ErfInv``).

    Defined on [-1, 1]: +-1 gives +-inf and a value outside NaN. Giles' polynomials, as XLA's
    ``erf_inv`` (float32 agrees with it to a few ulps: log1p's last bit differs). The derivative is
    ``sqrt(pi)/2 exp(erfinv(v)^2)``.
    """
    return _special("ErfInv", v)


def erf(v):
    """The error function ``2/sqrt(pi) integral_0^v e^(-t^2) dt``, elementwise, as ``scipy.special.erf``
    and ``jax.lax.erf`` (records ``Erf``).

    Cephes' forms (a series below |v| = 1, 1 - erfc(|v|) above), a few ulps everywhere; the
    derivative is ``2/sqrt(pi) exp(-v^2)``.
    """
    return _special("Erf", v)


def erfc(v):
    """``1 - erf(v)`` without its cancellation, elementwise, as ``scipy.special.erfc`` (records ``Erfc``).

    Keeps its relative accuracy in the tail (erfc(10) = 2.1e-45 in float64), where ``1 - erf(v)``
    is 0; it is 0 once ``exp(-v^2)`` underflows (v > 9.19 in float32, 26.6 in float64).
    """
    return _special("Erfc", v)


def lgamma(v):
    """``log|Gamma(v)|``, elementwise, as ``jax.lax.lgamma`` and ``scipy.special.gammaln`` (records ``Lgamma``).

    Its series about 2 below 17/2 (brought there by the recurrence), Lanczos' approximation (g = 7,
    9 terms, XLA's) above, reflected below 1/2: a few ulps, relatively even through its zeros at 1
    and 2 (where scipy's ``gammaln`` is only absolutely accurate), absolutely near its negative
    zeros, where the reflection's terms cancel. The poles
    (0 and the negative integers) and both infinities give +inf, as C's ``lgamma`` and torch
    (scipy gives -inf at -inf). The derivative is ``digamma(v)``.
    """
    return _special("Lgamma", v)


#: scipy's name for ``lgamma``.
gammaln = lgamma


def digamma(v):
    """``psi(v)``, the derivative of ``lgamma``, elementwise, as ``scipy.special.digamma`` (records ``Digamma``).

    The Lanczos form's derivative, reflected below 1/2 by ``psi(1 - v) - pi / tan(pi v)``. NaN at
    the negative integers and -inf; -inf at +0 and +inf at -0, as scipy and torch (XLA gives NaN
    at zero). The derivative is ``polygamma(1, v)``.
    """
    return _special("Digamma", v)


def polygamma(n, v):
    """``psi^(n)(v)``, the n-th derivative of ``digamma``, elementwise, as ``scipy.special.polygamma``
    (records ``Polygamma`` with ``order=n``; ``n = 0`` is ``digamma``).

    ``n`` is a whole number (not an array of them, as scipy and JAX also allow). A shifted sum and
    the asymptotic series, reflected below 0 through the n-th derivative of ``pi cot(pi v)``; the
    poles give ``(-1)^(n+1) inf``. Its derivative is ``polygamma(n + 1, v)``, so ``lgamma`` and
    ``digamma`` differentiate to any order. On WebGPU only ``n = 1`` has a kernel; the host runs
    the others.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ArgumentError(f"polygamma takes a whole number n >= 0 as its order, got {n!r}")
    if n == 0:
        return digamma(v)
    return arguments.recorded(v, "Polygamma").tape.apply("Polygamma", [v], order=int(n))
