"""The special functions: ``topos.erf``, ``erfc``, ``erfinv``, ``lgamma`` (``gammaln``), ``digamma``.

numpy has none of them; their names are ``jax.scipy.special``'s (and scipy's), exposed at the
top level as ``jax.lax`` exposes its ``erf`` and ``lgamma``: topos has one namespace. Each
records one primitive (``topos.ops.special``): the forms XLA's own library expands them to,
run by numpy, written as StableHLO and as WGSL, accurate to a few ulps where the function is
well conditioned. NaN gives NaN, and infinities and poles give scipy's answers.
"""

from . import arguments


def _special(opcode, value):
    return arguments.recorded(value, opcode).tape.apply(opcode, [value])


def erfinv(v):
    """The inverse error function, elementwise, as ``jax.scipy.special.erfinv`` (records ``ErfInv``).

    Defined on [-1, 1]: +-1 gives +-inf and a value outside NaN. Giles' polynomials, as XLA's
    ``erf_inv`` (float32 agrees with it to an ulp or two). The derivative is
    ``sqrt(pi)/2 exp(erfinv(v)^2)``.
    """
    return _special("ErfInv", v)
