"""GELU and its derivative for numpy in Pyodide, where ``np.tanh`` is slow: through one ``np.exp``.

numpy in Pyodide runs ``np.tanh`` at about 41 ns an element (natively 0.33) and ``np.exp`` at
about 15 (natively 0.48), so the tanh form of GELU spends most of its time in tanh. With
t = tanh(u) = 2 s - 1, s = sigmoid(2u) = 1 / (1 + exp(-2u)), u = c (x + k x^3):

    gelu(x)  = 0.5 x (1 + t)                          = x / (1 + exp(-2u))
    gelu'(x) = 0.5 (1 + t) (1 + x (1 - t) (c + 3ck x^2)) = s (1 + x (1 - s) (2c + 6ck x^2))

One exp and no tanh; fewer passes (six for GELU, fourteen for its gradient) over float32
kept float32. ``activations.Gelu`` and ``GeluGrad`` use these only in Pyodide
(``sys.platform == "emscripten"``): natively their results are unchanged, bit for bit.
The rounding differs from the tanh form's: within ``GELU_TOLERANCE`` eps of the dtype times
(1 + |x|) for GELU and (1 + |x|) |g| for the gradient, against the tanh form in float64
(tests/python/test_blas.py checks both dtypes, natively and in Pyodide). Overflow goes where
the tanh form's does: exp(-2u) = inf gives gelu -0.0 and gelu' 0 for very negative x.
"""

import math

import numpy as np

GELU_C = math.sqrt(2.0 / math.pi)
GELU_K = 0.044715
# The documented bound, in units of the dtype's eps (see the module's docstring).
GELU_TOLERANCE = 16


def _sigmoid_2u(x, x2, scratch):
    """s = 1 / (1 + exp(-2c (x + k x^3))) into ``scratch``, from x and x^2."""
    number = x.dtype.type
    np.multiply(x2, number(-2.0 * GELU_C * GELU_K), out=scratch)
    scratch += number(-2.0 * GELU_C)
    scratch *= x  # -2u
    with np.errstate(over="ignore"):  # exp(-2u) = inf for very negative x: the result is then 0, as tanh's
        np.exp(scratch, out=scratch)
    scratch += number(1.0)
    return scratch


def gelu_into(x, out):
    """gelu(x) = x / (1 + exp(-2u)) into ``out`` (x's shape and dtype)."""
    scratch = np.multiply(x, x, out=np.empty(x.shape, x.dtype))
    _sigmoid_2u(x, scratch, scratch)  # 1 + exp(-2u), in place over x^2
    return np.divide(x, scratch, out=out)


def gelu_grad_into(g, x, out):
    """g * gelu'(x) = g s (1 + x (1 - s) (2c + 6ck x^2)) into ``out``."""
    number = x.dtype.type
    x2 = np.multiply(x, x, out=out)
    s = _sigmoid_2u(x, x2, np.empty(x.shape, x.dtype))
    np.reciprocal(s, out=s)
    slope = x2  # 2c + 6ck x^2, in place over x^2 (in out)
    slope *= number(6.0 * GELU_C * GELU_K)
    slope += number(2.0 * GELU_C)
    slope *= x
    # (1 - s) without a third array: slope - slope * s.
    slope -= np.multiply(slope, s, out=np.empty(x.shape, x.dtype))
    slope += number(1.0)
    slope *= s
    slope *= g
    return slope
