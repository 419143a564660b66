"""The special functions' formulas, written once over an arithmetic ``m``, read by numpy and by StableHLO.

StableHLO has no erf, erf_inv, lgamma nor digamma (they are CHLO, which only XLA's own pipeline
expands), so each is written here as the polynomial or rational form XLA expands them to
(``xla/hlo/builder/lib/math.cc`` and CHLO's decompositions: Giles' erfinv, Cephes' erf and erfc,
Lanczos' lgamma and digamma with g = 7, n = 9), in the same order of operations. The same
function runs twice: with ``NumpyMath`` it is the interpreter's forward, with ``HloMath`` it
writes the StableHLO lines, so XLA runs the very steps numpy runs (the two differ only where
log, exp, sin and cos differ in the last bit). Both branches of a ``select`` are computed for
every element, as XLA's own expansion does; the WGSL forms (kernels/elementwise.wgsl) branch.
"""

import numpy as np


class NumpyMath:
    """The formulas' arithmetic on numpy arrays of one dtype: the interpreter's forward."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype).name
        self.number = np.dtype(dtype).type

    def const(self, value):
        return self.number(value)

    add, sub, mul, div = np.add, np.subtract, np.multiply, np.divide
    neg, abs, sqrt, floor = np.negative, np.abs, np.sqrt, np.floor
    log, log1p, exp, sin, cos = np.log, np.log1p, np.exp, np.sin, np.cos
    less, less_equal, equal = np.less, np.less_equal, np.equal
    both, is_finite = np.logical_and, np.isfinite

    def select(self, predicate, on_true, on_false):
        return np.where(predicate, on_true, on_false)


class HloMath:
    """The same arithmetic written as StableHLO lines through the lowering context, one node's shape."""

    def __init__(self, ctx, node):
        self.ctx, self.node, self.dtype = ctx, node, node.dtype
        self.constants = {}

    def const(self, value):
        # One splat per distinct constant: the polynomials read some of theirs twice.
        if value not in self.constants:
            self.constants[value] = self.ctx.splat(value, self.node.shape, self.dtype)
        return self.constants[value]

    def _apply(self, op, *operands):
        return self.ctx.elementwise(f"stablehlo.{op}", self.node, list(operands))

    def add(self, a, b):
        return self._apply("add", a, b)

    def sub(self, a, b):
        return self._apply("subtract", a, b)

    def mul(self, a, b):
        return self._apply("multiply", a, b)

    def div(self, a, b):
        return self._apply("divide", a, b)

    def neg(self, a):
        return self._apply("negate", a)

    def abs(self, a):
        return self._apply("abs", a)

    def sqrt(self, a):
        return self._apply("sqrt", a)

    def floor(self, a):
        return self._apply("floor", a)

    def log(self, a):
        return self._apply("log", a)

    def log1p(self, a):
        return self._apply("log_plus_one", a)

    def exp(self, a):
        return self._apply("exponential", a)

    def sin(self, a):
        return self._apply("sine", a)

    def cos(self, a):
        return self._apply("cosine", a)

    def _compare(self, direction, a, b):
        return self.ctx.compare(direction, a, b, self.node.shape, self.dtype)

    def less(self, a, b):
        return self._compare("LT", a, b)

    def less_equal(self, a, b):
        return self._compare("LE", a, b)

    def equal(self, a, b):
        return self._compare("EQ", a, b)

    def both(self, p, q):
        predicate = self.ctx.tensor_type(self.node.shape, "bool")
        return self.ctx.emit(f"stablehlo.and {p}, {q} : {predicate}")

    def is_finite(self, a):
        predicate = self.ctx.tensor_type(self.node.shape, "bool")
        return self.ctx.emit(f"stablehlo.is_finite {a} : ({self.ctx.type(self.node)}) -> {predicate}")

    def select(self, predicate, on_true, on_false):
        return self.ctx.select(predicate, on_true, on_false, self.node.shape, self.dtype)


def horner(m, w, coefficients):
    """c0 w^n + c1 w^(n-1) + ... + cn, as p = c_i + p w from p = c0 (XLA's order)."""
    p = m.const(coefficients[0])
    for c in coefficients[1:]:
        p = m.add(m.const(c), m.mul(p, w))
    return p


# erfinv ------------------------------------------------------------------------------------------

# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): in w = -log(1 - x^2),
# single precision in two pieces (w < 5 in w - 2.5, else in sqrt(w) - 3), double in three.
ERFINV32 = (
    (5.0, -2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                 -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)),
    (None, -3.0, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)),
)  # fmt: skip
ERFINV64 = (
    (6.25, -3.125, (-3.6444120640178197e-21, -1.6850591381820166e-19, 1.28584807152564e-18,
                    1.1157877678025181e-17, -1.3331716628546209e-16, 2.0972767875968562e-17,
                    6.6376381343583238e-15, -4.0545662729752069e-14, -8.1519341976054722e-14,
                    2.6335093153082323e-12, -1.2975133253453532e-11, -5.4154120542946279e-11,
                    1.0512122733215323e-09, -4.1126339803469837e-09, -2.9070369957882005e-08,
                    4.2347877827932404e-07, -1.3654692000834679e-06, -1.3882523362786469e-05,
                    0.00018673420803405714, -0.000740702534166267, -0.0060336708714301491,
                    0.24015818242558962, 1.6536545626831027)),
    (16.0, -3.25, (2.2137376921775787e-09, 9.0756561938885391e-08, -2.7517406297064545e-07,
                   1.8239629214389228e-08, 1.5027403968909828e-06, -4.013867526981546e-06,
                   2.9234449089955446e-06, 1.2475304481671779e-05, -4.7318229009055734e-05,
                   6.8284851459573175e-05, 2.4031110387097894e-05, -0.00035503752036284748,
                   0.0009532893797373805, -0.0016882755560235047, 0.0024914420961078508,
                   -0.0037512085075692412, 0.0053709145535900636, 1.0052589676941592,
                   3.0838856104922208)),
    (None, -5.0, (-2.7109920616438573e-11, -2.5556418169965252e-10, 1.5076572693500548e-09,
                  -3.789465440126737e-09, 7.61570120807834e-09, -1.496002662714924e-08,
                  2.9147953450901081e-08, -6.7711997758452339e-08, 2.2900482228026655e-07,
                  -9.9298272942317e-07, 4.5260625972231537e-06, -1.9681778105531671e-05,
                  7.5995277030017761e-05, -0.00021503011930044477, -0.00013871931833623122,
                  1.0103004648645344, 4.8499064014085844)),
)  # fmt: skip


def erf_inv(m, x):
    """erfinv(x) = p(w) x with w = -log1p(-x^2); +-1 gives +-inf (x times inf), |x| > 1 and NaN give NaN.

    The first piece is a polynomial in w itself, the later ones in sqrt(w) (the tail's
    variable): each piece's argument is chosen first, then every polynomial is evaluated in
    it and the piece's own kept, which is XLA's arithmetic element by element.
    """
    w = m.neg(m.log1p(m.mul(x, m.neg(x))))
    pieces = ERFINV32 if m.dtype == "float32" else ERFINV64
    tests = [m.less(w, m.const(limit)) for limit, _, _ in pieces[:-1]]
    root = m.sqrt(w)
    argument = m.add(root, m.const(pieces[-1][1]))
    for test, (_, shift, _) in reversed(list(zip(tests, pieces[:-1]))):
        base = w if shift == pieces[0][1] else root
        argument = m.select(test, m.add(base, m.const(shift)), argument)
    p = horner(m, argument, pieces[-1][2])
    for test, (_, _, coefficients) in reversed(list(zip(tests, pieces[:-1]))):
        p = m.select(test, horner(m, argument, coefficients), p)
    at_one = m.equal(m.abs(x), m.const(1.0))
    return m.select(at_one, m.mul(x, m.const(np.inf)), m.mul(p, x))
