"""The special functions' formulas, written once over an arithmetic ``m``, read by numpy and by StableHLO.

StableHLO has no erf, erf_inv, lgamma nor digamma (they are CHLO, which only XLA's own pipeline
expands), so each is written here as the polynomial or rational form XLA expands them to
(``xla/hlo/builder/lib/math.cc`` and CHLO's decompositions: Giles' erfinv, Cephes' erf and erfc,
Lanczos' lgamma and digamma with g = 7, n = 9), in the same order of operations; near lgamma's and
digamma's zeros, where Lanczos' terms cancel, their series take over. The same
function runs twice: with ``NumpyMath`` it is the interpreter's forward, with ``HloMath`` it
writes the StableHLO lines, so XLA runs the very steps numpy runs (the two differ only where
log, exp, sin and cos differ in the last bit). Both branches of a ``select`` are computed for
every element, as XLA's own expansion does; the WGSL forms (kernels/elementwise.wgsl) branch.
"""

import math

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
    # Each piece's variable: w shifted for the first, sqrt(w) shifted for the others.
    root = m.sqrt(w)
    variables = [m.add(w, m.const(pieces[0][1]))] + [m.add(root, m.const(shift)) for _, shift, _ in pieces[1:]]
    argument = variables[-1]
    for test, variable in reversed(list(zip(tests, variables))):
        argument = m.select(test, variable, argument)
    p = horner(m, argument, pieces[-1][2])
    for test, (_, _, coefficients) in reversed(list(zip(tests, pieces))):
        p = m.select(test, horner(m, argument, coefficients), p)
    at_one = m.equal(m.abs(x), m.const(1.0))
    return m.select(at_one, m.mul(x, m.const(np.inf)), m.mul(p, x))


# erf and erfc ------------------------------------------------------------------------------------

# Cephes' erff and erfcf (float32): erf(x) = x P(x^2) below |x| = 1; above, erfc(x) = e^(-x^2) / |x|
# R(1/x^2), R in two pieces (below 2, above). Cephes' ndtr.c (float64): x T(x^2) / U(x^2) below 1,
# e^(-x^2) P(|x|) / Q(|x|) below 8 and e^(-x^2) R(|x|) / S(|x|) above; Q, S and U are monic.
ERF32_SMALL = (7.85386146e-05, -0.000801019371, 0.00518832775, -0.0268538129, 0.112835854, -0.37612626, 1.12837911)
ERFC32_NEAR = (0.0232682, -0.138703942, 0.368742466, -0.582473278, 0.621000469, -0.494451523, 0.340488,
               -0.274112701, 0.563825965)  # fmt: skip
ERFC32_FAR = (-10.477664, 12.9772, -7.49551868, 2.92101908, -1.01526523, 0.42184633, -0.282076746, 0.564189494)
ERF64_T = (9.6049737398705162, 90.026019720384269, 2232.0053459468431, 7003.3251411280507, 55592.301301039493)
ERF64_U = (1.0, 33.561714164750313, 521.35794978015269, 4594.3238297098014, 22629.000061389095,
           49267.394260863592)  # fmt: skip
ERFC64_P = (2.4619698147353052e-10, 0.56418956483106886, 7.4632105644226989, 48.637197098568137,
            196.5208329560771, 526.44519499547732, 934.52852717195765, 1027.5518868951572,
            557.53533536939938)  # fmt: skip
ERFC64_Q = (1.0, 13.228195115474499, 86.707214088598974, 354.93777888781989, 975.70850174320549,
            1823.9091668790973, 2246.3376081871097, 1656.6630919416134, 557.53534081772773)  # fmt: skip
ERFC64_R = (0.56418958354775506, 1.275366707599781, 5.0190504225118051, 6.160210979930536,
            7.4097426995044895, 2.9788666537210022)  # fmt: skip
ERFC64_S = (1.0, 2.2605286322011726, 9.3960352493800148, 12.048953980809666, 17.081445074756591,
            9.6089680906328585, 3.3690764510008151)  # fmt: skip
# Below -x^2 = log(smallest normal), e^(-x^2) underflows: erfc's tail is 0 there.
UNDERFLOW = {"float32": -88.7228394, "float64": -709.782712893384}


def erf_near_zero(m, x):
    """erf(x) for |x| < 1: x P(x^2) (float32), x T(x^2) / U(x^2) (float64)."""
    square = m.mul(x, x)
    if m.dtype == "float32":
        return m.mul(x, horner(m, square, ERF32_SMALL))
    return m.div(m.mul(x, horner(m, square, ERF64_T)), horner(m, square, ERF64_U))


def erfc_tail(m, x):
    """erfc(|x|) for |x| >= 1: e^(-x^2) times a rational function of |x| (0 once e^(-x^2) underflows)."""
    magnitude = m.abs(x)
    exponent = m.neg(m.mul(x, x))
    gauss = m.exp(exponent)
    if m.dtype == "float32":
        reciprocal = m.div(m.const(1.0), m.mul(x, x))
        series = m.select(
            m.less(magnitude, m.const(2.0)), horner(m, reciprocal, ERFC32_NEAR), horner(m, reciprocal, ERFC32_FAR)
        )
        tail = m.mul(m.mul(gauss, m.div(m.const(1.0), magnitude)), series)
    else:
        near = m.div(m.mul(gauss, horner(m, magnitude, ERFC64_P)), horner(m, magnitude, ERFC64_Q))
        far = m.div(m.mul(gauss, horner(m, magnitude, ERFC64_R)), horner(m, magnitude, ERFC64_S))
        tail = m.select(m.less(magnitude, m.const(8.0)), near, far)
    return m.select(m.less(exponent, m.const(UNDERFLOW[m.dtype])), m.const(0.0), tail)


def erf(m, x):
    """erf(x): the series below |x| = 1, else +-(1 - erfc(|x|)) (no cancellation: erfc(1) = 0.157)."""
    far = m.sub(m.const(1.0), erfc_tail(m, x))
    far = m.select(m.less(x, m.const(0.0)), m.neg(far), far)
    return m.select(m.less(m.abs(x), m.const(1.0)), erf_near_zero(m, x), far)


def erfc(m, x):
    """erfc(x): 1 - erf(x) below |x| = 1, the tail above (2 minus it for negative x): XLA's erfc."""
    tail = erfc_tail(m, x)
    far = m.select(m.less(x, m.const(0.0)), m.sub(m.const(2.0), tail), tail)
    return m.select(m.less(m.abs(x), m.const(1.0)), m.sub(m.const(1.0), erf_near_zero(m, x)), far)


# lgamma and digamma ------------------------------------------------------------------------------

# Lanczos' approximation with g = 7 and 9 terms (XLA's Lgamma and Digamma): for z = x - 1 >= -1/2,
# Gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^(-t) A(z), t = z + g + 1/2, A(z) = c0 + sum c_i / (z + i).
LANCZOS_BASE = 0.99999999999980993
LANCZOS = (676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
           12.507343278686905, -0.13857109526572012, 9.9843695780195716e-06, 1.5056327351493116e-07)  # fmt: skip
LANCZOS_G = 7.0
LOG_PI = 1.1447298858494002
LOG_SQRT_TWO_PI = 0.91893853320467267


def lanczos_shift(m, x):
    """Whether x is reflected (x < 1/2) and z: 1 - x - 1 = -x where it is, x - 1 where not."""
    reflect = m.less(x, m.const(0.5))
    return reflect, m.select(reflect, m.neg(x), m.add(x, m.const(-1.0)))


def log_lanczos_t(m, z):
    """log(t) = log(g + 1/2) + log1p(z / (g + 1/2)), exact where z is small."""
    scaled = m.mul(z, m.const(1.0 / (LANCZOS_G + 0.5)))
    return m.add(m.log1p(scaled), m.const(math.log(LANCZOS_G + 0.5)))


# Near lgamma's zeros at 1 and 2, where the Lanczos form's terms (of order 10) cancel to nothing:
# lgamma(2 + e) = (1 - gamma) e + sum_k (-1)^k (zeta(k) - 1) / k e^k (Abramowitz and Stegun 6.1.33's
# shifted form), for |e| <= 1/2 to k = 28 (the next term is under 1e-18 of the value), and
# lgamma(1 + e) = lgamma(2 + e) - log1p(e): both keep their relative accuracy through the zeros.
ZETA_MINUS_ONE = (0.6449340668482264, 0.2020569031595943, 0.08232323371113819, 0.03692775514336993,
                  0.01734306198444914, 0.008349277381922827, 0.00407735619794434, 0.0020083928260822143,
                  0.0009945751278180853, 0.0004941886041194645, 0.0002460865533080483, 0.00012271334757848915,
                  6.124813505870483e-05, 3.058823630702049e-05, 1.528225940865187e-05, 7.637197637899763e-06,
                  3.81729326499984e-06, 1.908212716553939e-06, 9.539620338727962e-07, 4.769329867878064e-07,
                  2.38450502727733e-07, 1.1921992596531106e-07, 5.960818905125948e-08, 2.980350351465228e-08,
                  1.4901554828365043e-08, 7.45071178983543e-09, 3.725334024788457e-09)  # fmt: skip
ONE_MINUS_EULER = 0.42278433509846713
# e H(e) = lgamma(2 + e): H's coefficients, highest power first (Horner's order).
LGAMMA_NEAR_TWO = tuple(reversed([ONE_MINUS_EULER] + [(-1.0) ** k * z / k for k, z in enumerate(ZETA_MINUS_ONE, 2)]))


def lgamma_positive(m, w):
    """lgamma(w) for w >= 1/2: the series about 2 (and about 1, less log1p) on [1/2, 5/2), brought there
    from [5/2, 17/2) by lgamma(w) = lgamma(w - k) + log((w - 1) ... (w - k)) (each w - j exact), and
    Lanczos above, where its terms no longer cancel by more than a factor of 50 (float32's few ulps)."""
    base, product = w, m.const(1.0)
    for _ in range(6):
        step = m.less_equal(m.const(2.5), base)
        lowered = m.add(base, m.const(-1.0))
        product = m.select(step, m.mul(product, lowered), product)
        base = m.select(step, lowered, base)
    near_one = m.less(base, m.const(1.5))
    e = m.select(near_one, m.add(base, m.const(-1.0)), m.add(base, m.const(-2.0)))
    near = m.mul(e, horner(m, e, LGAMMA_NEAR_TWO))
    near = m.add(m.select(near_one, m.sub(near, m.log1p(e)), near), m.log(product))
    return m.select(m.less(w, m.const(8.5)), near, lanczos_lgamma(m, m.add(w, m.const(-1.0))))


def lanczos_lgamma(m, z):
    """lgamma(z + 1) for z >= -1/2 by Lanczos' form (XLA's steps)."""
    series = m.const(LANCZOS_BASE)
    for i, c in enumerate(LANCZOS):
        series = m.add(series, m.div(m.const(c), m.add(z, m.const(i + 1.0))))
    t = m.add(z, m.const(LANCZOS_G + 0.5))
    log_t = log_lanczos_t(m, z)
    # (z + 1/2) log t - t, written (z + 1/2 - t / log t) log t so that no product overflows first.
    log_y = m.mul(m.sub(m.add(z, m.const(0.5)), m.div(t, log_t)), log_t)
    return m.add(m.add(log_y, m.const(LOG_SQRT_TWO_PI)), m.log(series))


def lgamma(m, x):
    """log|Gamma(x)| at x >= 1/2 (``lgamma_positive``), reflected below: log(pi) - log|sin(pi x)| - lgamma(1 - x).

    The poles (0 and the negative integers) and both infinities give +inf (C's lgamma).
    """
    reflect = m.less(x, m.const(0.5))
    log_y = lgamma_positive(m, m.select(reflect, m.sub(m.const(1.0), x), x))
    # |sin(pi x)| from x's distance to the nearest integer, in [0, 1/2]: exact for any x.
    magnitude = m.abs(x)
    fraction = m.sub(magnitude, m.floor(magnitude))
    fraction = m.select(m.less(m.const(0.5), fraction), m.sub(m.const(1.0), fraction), fraction)
    log_sine = m.log(m.sin(m.mul(fraction, m.const(np.pi))))
    reflected = m.select(m.is_finite(log_sine), m.sub(m.sub(m.const(LOG_PI), log_sine), log_y), m.neg(log_sine))
    result = m.select(reflect, reflected, log_y)
    # Below the dtype's epsilon lgamma(x) = -log|x| - gamma x + ... is -log|x| to the last bit, which
    # keeps a subnormal x's digits (pi x would lose them).
    result = m.select(m.less(magnitude, m.const(float(np.finfo(m.dtype).eps))), m.neg(m.log(magnitude)), result)
    return m.select(m.equal(magnitude, m.const(np.inf)), m.const(np.inf), result)


# psi's positive root x0 = 1.4616..., where the Lanczos form's terms cancel: within 1/10 of it psi is
# its Taylor series in d = x - x0 (d to double the dtype's precision: x0's rounded value, then the
# rest), to d^14: the next term is under 1e-17 of the value (the coefficients fall as 1/x0^k).
DIGAMMA_ROOT = 1.4616321449683622
DIGAMMA_ROOT_REST = 9.549995429965697e-17
DIGAMMA_AT_ROOT = (0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
                   0.10782405069126237, -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
                   0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
                   0.004926781395729853, -0.003369801655439328)  # fmt: skip


# psi(2 + e) = (1 - gamma) + sum_k (-1)^k (zeta(k) - 1) e^(k - 1), lgamma's series differentiated.
DIGAMMA_NEAR_TWO = tuple(reversed([ONE_MINUS_EULER] + [(-1.0) ** k * z for k, z in enumerate(ZETA_MINUS_ONE, 2)]))


def digamma_near_two(m, x):
    """psi(x) on [1/2, 5/2): the series about 2, less 1/x below 3/2 (psi(x) = psi(x + 1) - 1/x)."""
    near_one = m.less(x, m.const(1.5))
    e = m.select(near_one, m.add(x, m.const(-1.0)), m.add(x, m.const(-2.0)))
    near = horner(m, e, DIGAMMA_NEAR_TWO)
    return m.select(near_one, m.sub(near, m.div(m.const(1.0), x)), near)


def digamma_near_root(m, x):
    root = np.dtype(m.dtype).type(DIGAMMA_ROOT)
    rest = (DIGAMMA_ROOT - float(root)) + DIGAMMA_ROOT_REST
    d = m.sub(m.sub(x, m.const(float(root))), m.const(rest))
    return m.mul(d, horner(m, d, tuple(reversed(DIGAMMA_AT_ROOT))))


def digamma(m, x):
    """psi(x) = d lgamma(x): the Lanczos form's derivative at x >= 1/2, reflected below by
    psi(x) = psi(1 - x) - pi / tan(pi x). NaN at the negative integers and -inf, -inf at +0 and
    +inf at -0 (scipy's psi; XLA gives NaN at zero)."""
    reflect, z = lanczos_shift(m, x)
    numerator, denominator = m.const(0.0), m.const(LANCZOS_BASE)
    for i, c in enumerate(LANCZOS):
        shifted = m.add(z, m.const(i + 1.0))
        numerator = m.sub(numerator, m.div(m.const(c), m.mul(shifted, shifted)))
        denominator = m.add(denominator, m.div(m.const(c), shifted))
    t = m.add(z, m.const(LANCZOS_G + 0.5))
    y = m.add(log_lanczos_t(m, z), m.div(numerator, denominator))
    y = m.sub(y, m.div(m.const(LANCZOS_G), t))
    # pi / tan(pi x) at x moved by a whole number towards 0 (the same tangent, a smaller argument).
    reduced = m.add(x, m.abs(m.floor(m.add(x, m.const(0.5)))))
    angle = m.mul(reduced, m.const(np.pi))
    reflected = m.sub(y, m.div(m.mul(m.cos(angle), m.const(np.pi)), m.sin(angle)))
    result = m.select(reflect, reflected, y)
    in_series = m.both(m.less_equal(m.const(0.5), x), m.less(x, m.const(2.5)))
    result = m.select(in_series, digamma_near_two(m, x), result)
    near_root = m.less(m.abs(m.add(x, m.const(-DIGAMMA_ROOT))), m.const(0.1))
    result = m.select(near_root, digamma_near_root(m, x), result)
    # The poles: x <= 0 whole, where x reduces to exactly 0 (x == floor(x) says the same, but LLVM
    # turns it into a truncf call, which IREE's CPU runtime does not link).
    pole = m.both(m.less_equal(x, m.const(0.0)), m.equal(reduced, m.const(0.0)))
    result = m.select(pole, m.const(np.nan), result)
    return m.select(m.equal(x, m.const(0.0)), m.div(m.const(-1.0), x), result)


# polygamma ---------------------------------------------------------------------------------------

# Bernoulli numbers B_2 .. B_16, for the asymptotic series of psi^(n) (Abramowitz and Stegun 6.4.11).
BERNOULLI = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0, 7.0 / 6.0)


def polygamma_series(n):
    """psi^(n)(z) / ((-1)^(n+1) n!) ~ z^-n / n + z^-(n+1) / 2 + sum_j a_j z^-(2j+n), a_j = B_2j (2j+n-1)! / ((2j)! n!):
    the a_j, highest j first (Horner's order), and the shift N that brings z = w + N far enough that the
    first term left out (B_16's, a_8) is under 1e-17 of the value: N = 12 + 3n."""
    coefficients = [b * math.factorial(2 * j + n - 1) / (math.factorial(2 * j) * math.factorial(n))
                    for j, b in enumerate(BERNOULLI, start=1)]  # fmt: skip
    return tuple(reversed(coefficients)), 12 + 3 * n


def cotangent_derivative(n):
    """The coefficients (highest power first) of P_n with d^n/dy^n cot(y) = P_n(cot y):
    P_0(c) = c, P_(k+1)(c) = -(1 + c^2) P_k'(c)."""
    p = [0, 1]  # lowest power first: c
    for _ in range(n):
        derivative = [i * p[i] for i in range(1, len(p))] or [0]
        product = [0] * (len(derivative) + 2)
        for i, a in enumerate(derivative):
            product[i] -= a
            product[i + 2] -= a
        p = product
    return tuple(float(c) for c in reversed(p))


def integer_power(m, x, k):
    """x^k for a whole k >= 1 by repeated squaring (log2 k products)."""
    result, square = None, x
    while k:
        if k & 1:
            result = square if result is None else m.mul(result, square)
        k >>= 1
        if k:
            square = m.mul(square, square)
    return result


def polygamma(m, x, n):
    """psi^(n)(x), n >= 1: at x >= 0, (-1)^(n+1) n! (sum_{k<N} (x + k)^-(n+1) + the series at x + N);
    below, the reflection psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)). The poles
    (0, the negative integers, -inf) give (-1)^(n+1) inf and +inf gives 0, as scipy's polygamma."""
    series, shift = polygamma_series(n)
    reflect = m.less(x, m.const(0.0))
    # -0 is read as +0 (the pole's side scipy and torch take for every order); x + 0 would do it, but
    # compilers fold it away.
    w = m.select(m.equal(x, m.const(0.0)), m.const(0.0), x)
    w = m.select(reflect, m.sub(m.const(1.0), x), w)
    inverse = m.div(m.const(1.0), m.add(w, m.const(float(shift))))
    inverse_square = m.mul(inverse, inverse)
    leading = m.add(
        m.div(integer_power(m, inverse, n), m.const(float(n))), m.mul(m.const(0.5), integer_power(m, inverse, n + 1))
    )
    total = m.add(leading, m.mul(integer_power(m, inverse, n + 2), horner(m, inverse_square, series)))
    for k in reversed(range(shift)):  # the smallest terms first
        total = m.add(total, integer_power(m, m.div(m.const(1.0), m.add(w, m.const(float(k)))), n + 1))
    total = m.mul(total, m.const((-1.0) ** (n + 1) * math.factorial(n)))
    # cot(pi x) from x less its nearest integer: the same value, an argument in [-1/2, 1/2] that keeps
    # a tiny x's digits (x - floor(x) would round -1e-20 to 1).
    angle = m.mul(m.sub(x, m.floor(m.add(x, m.const(0.5)))), m.const(np.pi))
    cotangent = m.div(m.cos(angle), m.sin(angle))
    reflection = m.mul(m.const(np.pi ** (n + 1)), horner(m, cotangent, cotangent_derivative(n)))
    reflected = m.sub(m.mul(m.const((-1.0) ** n), total), reflection)
    result = m.select(reflect, reflected, total)
    return m.select(m.equal(x, m.const(-np.inf)), m.const((-1.0) ** (n + 1) * np.inf), result)
