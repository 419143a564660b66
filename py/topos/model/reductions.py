"""The product and the truth reductions, ``topos.prod``, ``topos.any`` and ``topos.all``, and the
running folds ``topos.cumprod``, ``topos.cummax``, ``topos.cummin`` and ``topos.logcumsumexp``.

``prod`` records the ``Prod`` primitive and each running fold its own (``topos.ops.cumulative``).
``any`` and ``all`` are numpy's truthiness on topos's 0/1 floats, recorded as JAX writes
``jnp.any`` and ``jnp.all``: a reduction of the comparison ``x != 0`` (true for NaN, as in
numpy), here ``Max`` of ``NotEqual``'s 0/1 then one more comparison, so that an empty
reduction (``Max`` gives -inf there) is false for ``any`` and true for ``all``. They give
0.0 or 1.0 in the tape's float dtype, and no gradient flows through them.
"""

from . import arguments
from . import functions as F


def prod(value, axis=None, keepdims=False):
    """The product over ``axis`` (an int, a tuple of ints, or None for every axis), as ``numpy.prod``
    (records ``Prod``); over an empty axis it is 1.

    The gradient of each element is the product of the others, right at zeros as JAX's: with one
    zero, that zero's gradient is the product of the rest and every other's is 0; with two or more,
    all are 0. It is formed from running products (``CumProd``), never by dividing by the element.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    x = tape.parameter(np.array([[2.0, 0.0, 3.0], [1.0, 4.0, 5.0]]))
    p = topos.prod(x, axis=1)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    print(run.of(p).numpy())  # [ 0. 20.]
    print(run.backward(topos.sum(p)).of(x).numpy())  # [[ 0.  6.  0.] [20.  5.  4.]]
    ```
    """
    arguments.recorded(value, "prod")
    return value.tape.apply("Prod", [value], axes=axis, keepdims=keepdims)


def any(value, axis=None, keepdims=False):  # noqa: A001  (numpy's name)
    """1.0 where some element over ``axis`` is nonzero (or NaN), else 0.0, as ``numpy.any``.

    Recorded as ``Greater(Max(NotEqual(value, 0)), 0)``: over an empty axis it is 0.0 (false).
    """
    nonzero = F.not_equal(arguments.recorded(value, "any"), 0.0)
    return F.greater(F.max(nonzero, axis, keepdims), 0.0)


def all(value, axis=None, keepdims=False):  # noqa: A001  (numpy's name)
    """1.0 where every element over ``axis`` is nonzero (NaN counts as nonzero), else 0.0, as ``numpy.all``.

    Recorded as ``Less(Max(1 - NotEqual(value, 0)), 1)``: over an empty axis it is 1.0 (true).
    """
    nonzero = F.not_equal(arguments.recorded(value, "all"), 0.0)
    return F.less(F.max(1.0 - nonzero, axis, keepdims), 1.0)


def _running(opcode, name, value, axis, reverse):
    arguments.recorded(value, name)
    return value.tape.apply(opcode, [value], axis=axis, reverse=bool(reverse))


def cumprod(x, axis=-1, reverse=False):
    """The running product along ``axis`` (records ``CumProd``): element j multiplies elements 0..j.

    As ``jax.lax.cumprod`` (``reverse=True`` from the end) and ``numpy.cumprod`` along an axis.
    Its gradient is JAX's: the associative scan differentiated op by op, right at zeros.
    """
    return _running("CumProd", "cumprod", x, axis, reverse)


def cummax(x, axis=-1, reverse=False):
    """The running maximum along ``axis`` (records ``CumMax``), as ``jax.lax.cummax`` and
    ``numpy.maximum.accumulate``; a NaN spreads to every later element.

    The gradient goes to the position of the running maximum, split evenly at a tie, as JAX's.
    """
    return _running("CumMax", "cummax", x, axis, reverse)


def cummin(x, axis=-1, reverse=False):
    """The running minimum along ``axis`` (records ``CumMin``), as ``jax.lax.cummin`` and
    ``numpy.minimum.accumulate``; the gradient as ``cummax``'s."""
    return _running("CumMin", "cummin", x, axis, reverse)


def logcumsumexp(x, axis=-1, reverse=False):
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow (records ``LogCumSumExp``), as
    ``jax.lax.cumlogsumexp`` and ``numpy.logaddexp.accumulate``.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    x = tape.parameter(np.array([0.0, 1000.0, 1000.0]))
    y = topos.logcumsumexp(x)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    print(run.of(y).numpy())  # [   0.         1000.         1000.69314718]
    ```
    """
    return _running("LogCumSumExp", "logcumsumexp", x, axis, reverse)


for _name, _function in [
    ("prod", prod),
    ("any", any),
    ("all", all),
    ("cumprod", cumprod),
    ("cummax", cummax),
    ("cummin", cummin),
    ("logcumsumexp", logcumsumexp),
]:
    globals()[_name] = arguments.all_or_nothing(_function)
del _name, _function
