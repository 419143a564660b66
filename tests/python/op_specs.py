"""One table of what the per-op tests know about each primitive (JAX's ``LaxGradTestSpec``).

Each registered primitive has one row: the domain of each operand (where the op is defined,
and where it is smooth enough for a gradient check), its dtypes, the shapes the property tests
draw, where its documentation names it, why WebGPU declines it where it has no kernel family,
and its spellings elsewhere (torch, numpy, the recording function an operator calls), whether
it decides ties, and the wide range that reaches float32's edges. The six per-op suites
(test_gradcheck, test_stablehlo, test_torch_ops, test_kernels, test_nonfinite,
test_random_programs) and tests/cases/generate.py take every elementwise op of one or two
operands from its row (``derived_rows``) and every other op's calls from its row's
``examples`` (a method's spelling, a Python number, values at chosen places, shapes and
attributes), keeping local cases only for what a row cannot say (hypothesis's drawn shapes
and attributes, the sources every call reads, inputs one suite places by hand), each with
its reason; the cases they draw themselves are checked against it with
``check_operands``; test_random_programs asks ``admits`` whether a value recorded so far may
feed an op; test_op_checklist checks that every registered primitive has a row. So "Log needs
a positive input" is written here, once, and a new elementwise op is one row.

A row that needs shapes or attributes (a reduction, a shape op, an index op) says so in its
``examples``: each an ``Example(name, shapes, attrs, topos=, torch=, numpy=)``, whose three
calls take the same operands and the same keyword attributes::

    "Sum": unary(Api("topos.sum"), examples=(
        Example("sum_axes", [(2, 3, 4)], dict(axis=(0, 2)),
                topos=lambda tape, x, axis: x.sum(axis=axis),
                torch=lambda x, axis: x.sum(dim=axis),
                numpy=lambda x, axis: np.sum(x, axis=axis)),
    )),

``topos`` records it (``tape`` is there for ``tape.apply`` and ``tape.leaf``), ``torch`` and
``numpy`` compute the same (``numpy`` may be None where numpy has no one spelling). A shape
is a tuple, ``Index(high, shape)`` for int32 indices below ``high``, or ``Key(words)`` for a
uint32 random key (the random rows' oracle is jax.random's bits); operands are drawn
from the row's domains (``scale`` widens a real draw), or ``values`` gives them at chosen
places (ties, huge logits). The example's name is its test id in every suite that runs it
(``example_rows``; test_stablehlo numbers a row's examples after its key), so one example
added to a row runs in each: test_torch_ops (forward and backward against ``torch``, and
``numpy`` against ``torch``), test_stablehlo (XLA against the interpreter), test_gradcheck (central differences; not at ties nor of index operands alone),
test_random_programs (as a step, where ``numpy`` is given), and, for a row with a kernel (no
``kernel_declined``), test_kernels (WebGPU against ``numpy``) and test_nonfinite (on NaN,
infinities and the like; not with index or key operands, nor where its table says why). Composites (softmax, layer_norm, attention...), which are no
primitive, have rows of the same form in ``COMPOSITES``, keyed by their public name.
"""

import importlib
import math
import zlib
from dataclasses import dataclass, field, replace

import numpy as np

FLOATS = ("float32", "float64")

# The primitives with no derivative at all (the reverse scan gives their operands no cotangent
# through them), listed on purpose: a new op that forgets its rule must not pass quietly
# (test_registry and test_higher_order check the registry against this set). Comparisons, index
# results, the random bits and the draws' integer steps, StopGradient by definition, and the
# roundings, whose derivative is 0 wherever it exists.
NOT_DIFFERENTIABLE = {
    "ArgMax", "ArgMin", "Argsort", "BitField", "Equal", "FoldIn", "Greater", "GreaterEqual",
    "IndexToFloat", "Less", "LessEqual", "NotEqual", "OneHot", "RandomBits", "RandomInt",
    "SearchSorted", "SplitKey", "StopGradient", "TopK", "Uniform",
    "Floor", "Ceil", "RoundNearestEven", "Trunc",
}  # fmt: skip

# How close each oracle must come, by dtype (torch's: tolerances.library_bound).
XLA_TOLERANCE = {"float64": 1e-12, "float32": 1e-5}
# The central difference's step in the gradient checks (float64).
GRADCHECK_EPS = 1e-6


@dataclass(frozen=True)
class Domain:
    """Where one operand's values may lie.

    ``kind`` is one of "real", "positive", "nonnegative", "nonzero" (either sign, kept away
    from 0), "unit" (inside (-1, 1)), "above -1" (log1p's), "index" (int32 values in range, which the op itself checks)
    and "words" (uint32: a random key or random bits, any words). ``draw`` is the
    range a test draws from when it has no reason to choose its own: the magnitudes, for
    "nonzero", whose sign is drawn too.
    """

    name: str
    kind: str
    draw: tuple = (-1.5, 1.5)

    def admits(self, values, margin=0.0):
        """Whether every value lies inside the domain, ``margin`` or more away from its edge."""
        values = np.asarray(values)
        if self.kind == "real":
            return True
        if self.kind == "positive":
            return bool(np.all(values > margin))
        if self.kind == "nonnegative":
            return bool(np.all(values >= margin))
        if self.kind == "nonzero":
            return bool(np.all(np.abs(values) > margin))
        if self.kind == "index":
            return values.dtype.kind in "iu" and bool(np.all(values >= 0))
        if self.kind == "words":
            return values.dtype == np.uint32
        if self.kind == "unit":
            return bool(np.all(np.abs(values) < 1.0 - margin))
        if self.kind == "above -1":
            return bool(np.all(values > -1.0 + margin))
        raise ValueError(f"unknown domain kind {self.kind!r}")

    def sample(self, rng, shape, low=None, high=None):
        """Values drawn uniformly from [low, high) (the domain's ``draw`` unless given) inside the domain."""
        low, high = self.draw if low is None else (low, high)
        if self.kind == "nonzero":
            if low <= 0:
                raise ValueError(f"{self.name}: magnitudes from [{low}, {high}) reach 0")
            return rng.choice([-1.0, 1.0], shape) * rng.uniform(low, high, shape)
        values = rng.uniform(low, high, shape)
        if not self.admits(np.array([low])):
            raise ValueError(f"{self.name}: a draw from [{low}, {high}) leaves the domain")
        return values


REAL = Domain("any real number", "real")
POSITIVE = Domain("positive", "positive", draw=(0.5, 2.0))
NONNEGATIVE = Domain("non-negative", "nonnegative", draw=(0.5, 2.0))
NONZERO = Domain("away from zero (a denominator)", "nonzero", draw=(0.5, 2.0))
# A gradient check's draw wide enough to reach a saturating op's flat tails (tanh, sigmoid, gelu).
WIDE = Domain("any real number, drawn wide", "real", draw=(-4.0, 4.0))
AWAY_FROM_KINK = Domain("away from relu's kink at 0", "nonzero", draw=(0.1, 2.0))
EXPONENT = Domain("an exponent", "real", draw=(-2.0, 2.0))
INDEX = Domain("an index in 0..n-1", "index")
KEY = Domain("a random key: uint32 [2] (topos.random_key)", "words")
BITS = Domain("random bits: uint32 words", "words")
# erfinv's domain, the open interval (-1, 1), drawn off its poles at +-1 (kind "unit").
UNIT_INTERVAL = Domain("inside (-1, 1)", "unit", draw=(-0.9, 0.9))
# log1p's domain, x > -1 (kind "above -1").
ABOVE_MINUS_ONE = Domain("above -1", "above -1", draw=(-0.9, 2.0))
# tan's gradient check keeps its draw away from the poles at +-pi/2.
AWAY_FROM_POLES = Domain("away from tan's poles at +-pi/2", "real", draw=(-1.2, 1.2))


@dataclass(frozen=True)
class ShapeRange:
    """The shapes a property test draws: ranks min_rank..max_rank, each axis 1..max_side."""

    min_rank: int = 0
    max_rank: int = 3
    max_side: int = 4


ANY_SHAPE = ShapeRange()
ROWS = ShapeRange(min_rank=1)


@dataclass(frozen=True)
class Api:
    """Documented in docs/api.md under its own heading (``topos.log`` or ``Tape.parameter``)."""

    name: str

    page = "api.md"

    def found_in(self, text):
        return f"`{self.name}(" in text and any(
            line.startswith(("### `", "#### `")) and f"`{self.name}(" in line for line in text.splitlines()
        )


@dataclass(frozen=True)
class Guide:
    """Documented by a phrase of a guide page (the operators, indexing)."""

    page: str
    phrase: str

    def found_in(self, text):
        return self.phrase in text


OPERATORS = Guide("recording.md", "the operators `+ - * / ** @` and unary\n`-`")
INDEXING = Guide("recording.md", "| ints, slices, `None` (`np.newaxis`), `...` | a `Slice`")


@dataclass(frozen=True)
class Index:
    """An int32 operand of ``shape`` with values in 0..high-1 (an index, a class id)."""

    high: int
    shape: tuple


@dataclass(frozen=True)
class Key:
    """A random key operand, uint32 [2], of the two ``words`` (as ``topos.random_key`` gives one)."""

    words: tuple

    @property
    def shape(self):
        return (2,)


@dataclass(frozen=True)
class Example:
    """One call of an op with its shapes and attributes, spelled in topos, torch and numpy.

    ``shapes``: one per operand (a tuple, or ``Index``); ``attrs``: keyword arguments each of
    the three calls takes; ``values``: the operands themselves, where chosen (else drawn);
    ``scale``: a real operand's draw is the domain's times this.
    """

    name: str
    shapes: tuple
    attrs: dict
    topos: object
    torch: object
    numpy: object = None
    values: tuple = None
    scale: float = 1.0


class _Lazy:
    """A module imported at its first use: the table names torch without every suite loading it."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        return getattr(importlib.import_module(self._name), attribute)


torch = _Lazy("torch")


@dataclass(frozen=True)
class OpSpec:
    """What the tests know of one primitive.

    ``operands``: each operand's domain for a forward oracle; ``smooth``: where a gradient
    check may draw (the same unless given); ``docs``: where the docs name its public spelling,
    or ``internal``: why it has none (a derivative only the engine records); ``kernel_declined``:
    why WebGPU runs no kernel for it, where its ``kernel`` is None. ``torch``: the dotted name
    of the torch function computing the same; ``numpy``: the numpy function (the kernels'
    float64 oracle; the op's own forward where None); ``call``: the recording function where
    ``docs`` names a guide rather than one (``topos.model.functions.add``, which ``a + b``
    calls); ``ties``: the op decides between equal operands (forward tests draw ties on
    purpose, gradient checks keep its operands apart); ``spread``: the wide range (inside the
    domain) that reaches float32's edges, one an operand for a binary op. A per-op test takes
    each plain table row it has no entry of its own for (``derived_rows``) from these.
    ``examples``: calls with shapes and attributes (``Example``), which ``example_rows`` gives.
    """

    operands: tuple
    smooth: tuple = None
    dtypes: tuple = FLOATS
    shapes: ShapeRange = ANY_SHAPE
    docs: object = None
    internal: str = None
    kernel_declined: str = None
    notes: tuple = field(default=())
    torch: str = None
    numpy: str = None
    call: str = None
    ties: bool = False
    spread: tuple = None
    examples: tuple = ()

    def smooth_domains(self):
        return self.operands if self.smooth is None else self.smooth


def unary(docs, domain=REAL, smooth=None, **more):
    return OpSpec((domain,), smooth=None if smooth is None else (smooth,), docs=docs, **more)


def binary(docs, left=REAL, right=REAL, smooth=None, **more):
    return OpSpec((left, right), smooth=smooth, docs=docs, **more)


TIES = "the gradient check keeps operands apart: at a tie the derivative picks one side"
DERIVATIVE_ONLY = "recorded only by the engine, as the derivative of {}"
SOURCE = "a source: its value is a buffer the runner writes, no kernel computes it"


def topos_function(name):
    """``topos.<name>``, imported at the call (the table is read before topos is wanted)."""
    return getattr(importlib.import_module("topos"), name)


# The factorisations (topos.ops.linalg_factor) ------------------------------------------------------

MATRICES = ShapeRange(min_rank=2)
FACTOR_DECLINED = "no WGSL kernel yet: LU's pivoting and substitutions are sequential over the rows; the host runs it"


# A loop recorded once (topos.scan, topos.model.loops): a tanh recurrence whose carry starts at w
# and reads w at every step (a captured value), over the rows of x; the stacked outputs plus the
# final carry, so both reach the loss. torch and numpy run the same recurrence as a Python loop.


def _recurrence(x, w, tanh, stack):
    h, ys = w, []
    for row in x:
        h = tanh(h * w + row)
        ys.append(h * h)
    return stack(ys) + h


SCAN_EXAMPLES = (
    Example(
        "scan_recurrence",
        [(5, 3), (3,)],
        {},
        topos=lambda tape, x, w: _scan_recurrence(x, w),
        torch=lambda x, w: _recurrence(x, w, torch.tanh, torch.stack),
        numpy=lambda x, w: _recurrence(x, w, np.tanh, np.stack),
    ),
)


def _branches(x, w, sin, exp, where_true):
    return sin(x * w) + w if where_true else exp(x) * w - x


COND_EXAMPLES = (
    Example(
        "cond_on_a_sum",
        [(3,), (3,)],
        {},
        topos=lambda tape, x, w: _topos_cond(x, w),
        torch=lambda x, w: _branches(x, w, torch.sin, torch.exp, bool(w.sum() > 0)),
        numpy=lambda x, w: _branches(x, w, np.sin, np.exp, bool(w.sum() > 0)),
    ),
)


def _topos_cond(x, w):
    """``cond(sum(w) > 0, ...)``: the predicate a comparison of the operands, each branch reading w (captured)."""
    topos = importlib.import_module("topos")
    return topos.cond(
        topos.greater(topos.sum(w), 0.0),
        lambda a: _branches(a, w, topos.sin, topos.exp, True),
        lambda a: _branches(a, w, topos.sin, topos.exp, False),
        x,
    )


def _halvings(x, w, sin, limit):
    """x updated by sin(x w) + x / 2 until its first element passes ``limit`` or 6 trips have run."""
    trips = 0
    while x[0] < limit and trips < 6:
        x, trips = sin(x * w) + x / 2, trips + 1
    return x


WHILE_EXAMPLES = (
    Example(
        "while_halvings",
        [(3,), (3,)],
        {},
        topos=lambda tape, x, w: _topos_while(x, w),
        torch=lambda x, w: _halvings(x, w, torch.sin, 1.0),
        numpy=lambda x, w: _halvings(x, w, np.sin, 1.0),
    ),
)


def _topos_while(x, w):
    """``while_loop`` over (x, trips), the predicate reading x and the trip count, the body reading w."""
    topos = importlib.import_module("topos")
    more = lambda c: topos.less(c[0][0], 1.0) * topos.less(c[1], 6.0)  # noqa: E731
    x, _ = topos.while_loop(more, lambda c: (topos.sin(c[0] * w) + c[0] / 2, c[1] + 1.0), (x, 0.0))
    return x


def _scan_recurrence(x, w):
    topos = importlib.import_module("topos")

    def step(h, row):
        h = topos.tanh(h * w + row)
        return h, h * h

    h, ys = topos.scan(step, w, x)
    return ys + h


# A derivative the user gives (topos.custom_vjp, topos.model.custom_vjp): log(1 + e^x) whose backward
# is 1 - 1 / (1 + e^x), its true derivative, so every suite's gradient check holds the CustomVjp node.


def _log1pexp(x):
    topos = importlib.import_module("topos")

    @topos.custom_vjp
    def log1pexp(v):
        return topos.log1p(topos.exp(v))

    log1pexp.defvjp(lambda v: (log1pexp.fun(v), v), lambda v, g: (g * (1.0 - 1.0 / (1.0 + topos.exp(v))),))
    return log1pexp(x)


CUSTOM_VJP_EXAMPLES = (
    Example(
        "custom_vjp_log1pexp",
        [(3, 4)],
        {},
        topos=lambda tape, x: _log1pexp(x),
        torch=lambda x: torch.log1p(torch.exp(x)),
        numpy=lambda x: np.log1p(np.exp(x)),
    ),
)


def _gram(x, swapaxes, eye):
    """x x^T + n I: symmetric positive definite and well conditioned, from any real draw."""
    return x @ swapaxes(x, -1, -2) + x.shape[-1] * eye(x.shape[-1], dtype=x.dtype)


def _dominant(a, eye):
    """a + 3 I: a draw from (-1.5, 1.5) whose diagonal lies in (1.5, 4.5), a well-conditioned triangle."""
    return a + 3 * eye(a.shape[-1], dtype=a.dtype)


def _torch_triangle(a, b, lower, transpose_a, left_side, unit_diagonal):
    tri, upper = (a.tril(), False) if lower else (a.triu(), True)
    if transpose_a:
        tri, upper = tri.mT, not upper
    return torch.linalg.solve_triangular(tri, b, upper=upper, left=left_side, unitriangular=unit_diagonal)


CHOLESKY_EXAMPLES = tuple(
    Example(
        name,
        [shape],
        {},
        topos=lambda tape, x: topos_function("linalg").cholesky(
            _gram(x, topos_function("swapaxes"), lambda n, dtype: np.eye(n))
        ),
        torch=lambda x: torch.linalg.cholesky(_gram(x, torch.swapaxes, lambda n, dtype: torch.eye(n, dtype=dtype))),
        numpy=lambda x: np.linalg.cholesky(_gram(x, np.swapaxes, np.eye)),
    )
    for name, shape in (("cholesky", (4, 4)), ("cholesky_batched", (2, 3, 3)))
)
TRIANGULAR_SOLVE_EXAMPLES = tuple(
    Example(
        name,
        [(2, 3, 3), b_shape],
        dict(
            lower=lower,
            transpose_a=transpose_a,
            left_side=left_side,
            unit_diagonal=unit_diagonal,
        ),
        topos=lambda tape, a, b, **o: topos_function("linalg").triangular_solve(
            _dominant(a, lambda n, dtype: np.eye(n)), b, **o
        ),
        torch=lambda a, b, **o: _torch_triangle(_dominant(a, lambda n, dtype: torch.eye(n, dtype=dtype)), b, **o),
    )
    for name, b_shape, lower, transpose_a, left_side, unit_diagonal in (
        ("triangular_solve_lower", (2, 3, 2), True, False, True, False),
        ("triangular_solve_upper_transposed", (2, 3, 2), False, True, True, False),
        ("triangular_solve_right_unit", (2, 4, 3), True, False, False, True),
    )
)
# l + u, the factors both rules differentiate, of a draw plus 4 I (a well-conditioned matrix).
LU_EXAMPLES = (
    Example(
        "lu_factors",
        [(2, 4, 4)],
        {},
        topos=lambda tape, x: sum(topos_function("linalg").lu(x + 4 * np.eye(4))[1:]),
        torch=lambda x: sum(torch.linalg.lu(x + 4 * torch.eye(4, dtype=x.dtype))[1:]),
        numpy=lambda x: np.stack([sum(importlib.import_module("scipy.linalg").lu(m + 4 * np.eye(4))[1:]) for m in x]),
    ),
)


# The spectral factorisations (topos.ops.linalg_spectral) -----------------------------------------

# Added to a real draw's symmetric part: eigenvalues at least ~6 apart, so the derivative's
# 1 / (w_j - w_i) stays moderate, and eigenvectors near the axes, whose largest component is clear.
SEPARATED = np.array([0.0, 20.0, 40.0, 60.0])


def _separated(x, diag, symmetric=True):
    """x + diag(SEPARATED): its symmetric part too, where ``symmetric`` (topos.linalg.eigh symmetrises itself)."""
    x = (x + x.swapaxes(-1, -2)) / 2 if symmetric else x
    return x + diag(SEPARATED[: x.shape[-1]])


def _torch_signs_fixed(v):
    """torch's eigenvectors under topos's sign rule: each largest-magnitude component positive."""
    largest = torch.gather(v, -2, v.abs().argmax(dim=-2, keepdim=True))
    return v * torch.where(largest < 0, -1.0, 1.0).to(v.dtype).detach()


def _torch_diag(values):
    return torch.diag(torch.tensor(values, dtype=torch.float64))


EIGH_EXAMPLES = (
    Example(
        "eigh_values",
        [(2, 4, 4)],
        {},
        topos=lambda tape, x: topos_function("linalg").eigvalsh(_separated(x, np.diag, False)),
        torch=lambda x: torch.linalg.eigvalsh(_separated(x, lambda d: _torch_diag(d).to(x.dtype))),
        numpy=lambda x: np.linalg.eigvalsh(_separated(x, np.diag)),
    ),
    Example(
        "eigh_vectors",
        [(3, 3)],
        {},
        topos=lambda tape, x: topos_function("linalg").eigh(_separated(x, np.diag, False))[1],
        torch=lambda x: _torch_signs_fixed(torch.linalg.eigh(_separated(x, lambda d: _torch_diag(d).to(x.dtype)))[1]),
        numpy=lambda x: importlib.import_module("topos.ops.linalg_spectral").fix_signs(
            np.linalg.eigh(_separated(x, np.diag))[1]
        ),
    ),
)


def _tall(x, eye):
    """x + 3 I on its top square: a tall draw whose columns are well independent (R far from singular)."""
    n = x.shape[-1]
    return x + 3 * eye(x.shape[-2], n)


QR_EXAMPLES = tuple(
    Example(
        name,
        [shape],
        {},
        topos=lambda tape, x, part=part: topos_function("linalg").qr(_tall(x, np.eye))[part],
        torch=lambda x, part=part: torch.linalg.qr(_tall(x, lambda m, n: torch.eye(m, n, dtype=x.dtype)))[part],
        numpy=lambda x, part=part: np.linalg.qr(_tall(x, np.eye))[part],
    )
    for name, shape, part in (("qr_q", (5, 3), 0), ("qr_r_batched", (2, 4, 4), 1))
)


def _torch_svd(x):
    """torch's reduced SVD under topos's sign rule (u[:, i]'s largest component positive, vh[i] with it)."""
    u, s, vh = torch.linalg.svd(x, full_matrices=False)
    sign = torch.where(torch.gather(u, -2, u.abs().argmax(dim=-2, keepdim=True)) < 0, -1.0, 1.0).to(u.dtype).detach()
    return u * sign, s, vh * sign.transpose(-1, -2)


def _numpy_svd(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    sign = importlib.import_module("topos.ops.linalg_spectral").column_signs(u)
    return u * sign, s, vh * np.swapaxes(sign, -1, -2)


def _apart(shape):
    """A diagonal 10, 30, 50, 70 [m, n] to add to a draw: singular values well apart and from 0."""
    d = np.zeros(shape[-2:])
    k = min(shape[-2:])
    d[range(k), range(k)] = 10.0 + SEPARATED[:k]
    return d


SVD_EXAMPLES = tuple(
    Example(
        name,
        [shape],
        {},
        topos=lambda tape, x, part=part: topos_function("linalg").svd(x + _apart(x.shape))[part],
        torch=lambda x, part=part: _torch_svd(x + torch.tensor(_apart(x.shape), dtype=x.dtype))[part],
        numpy=lambda x, part=part: _numpy_svd(x + _apart(x.shape))[part],
    )
    for name, shape, part in (
        ("svd_values", (2, 4, 3), 1),
        ("svd_u_tall", (4, 3), 0),
        ("svd_vh_wide", (2, 4), 2),
    )
)


# Values at chosen places: ties (a maximum's gradient splits them evenly, as torch.amax's).
WITH_TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 0.0], [5.0, -4.0, 5.0, 5.0]])


def _sum(name, shape, **attrs):
    return Example(
        name,
        [shape],
        attrs,
        topos=lambda tape, x, **a: x.sum(**a),
        torch=lambda x, axis=None, keepdims=False: x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdims),
        numpy=lambda x, **a: np.sum(x, **a),
    )


def _max(name, shape, values=None, method=True, **attrs):
    return Example(
        name,
        [shape],
        attrs,
        topos=(lambda tape, x, **a: x.max(**a)) if method else (lambda tape, x, **a: topos_function("max")(x, **a)),
        torch=lambda x, axis=None, keepdims=False: torch.amax(x) if axis is None else torch.amax(x, axis, keepdims),
        numpy=lambda x, **a: np.max(x, **a),
        values=values,
    )


SUM_EXAMPLES = (
    _sum("sum_all", (2, 3, 4)),
    _sum("sum_axis_keepdims", (2, 3, 4), axis=1, keepdims=True),
    _sum("sum_axes", (2, 3, 4), axis=(0, 2)),
)
MAX_EXAMPLES = (
    _max("max_all", (3, 4)),
    _max("max_axis", (3, 4), axis=-1),
    _max("max_ties", (3, 4), values=(WITH_TIES,), axis=1, keepdims=True),
    _max("max_ties_all", (3, 4), values=(WITH_TIES,), method=False),
    _max("max_axes_keepdims", (3, 4, 2), axis=(0, 1, 2), keepdims=True),
)


def _moved(name, shapes, topos, torch, numpy, **attrs):
    """A shape op whose numpy and torch spellings take the same attributes."""
    return Example(name, shapes, attrs, topos=topos, torch=torch, numpy=numpy)


RESHAPE_EXAMPLES = (
    _moved(
        "reshape",
        [(2, 6)],
        lambda tape, x, shape: x.reshape(*shape),
        lambda x, shape: x.reshape(*shape),
        lambda x, shape: x.reshape(shape),
        shape=(3, -1, 2),
    ),
)
BROADCAST_EXAMPLES = (
    _moved(
        "broadcast_to",
        [(3, 1)],
        lambda tape, x, shape: x.broadcast_to(shape),
        lambda x, shape: x.broadcast_to(shape),
        lambda x, shape: np.broadcast_to(x, shape),
        shape=(2, 3, 4),
    ),
    _moved(
        "broadcast_scalar",
        [()],
        lambda tape, x, shape: x.broadcast_to(shape),
        lambda x, shape: x.broadcast_to(shape),
        lambda x, shape: np.broadcast_to(x, shape),
        shape=(2, 2),
    ),
)
TRANSPOSE_EXAMPLES = (
    _moved(
        "transpose",
        [(2, 3, 4)],
        lambda tape, x, axes: x.transpose(*axes),
        lambda x, axes: x.permute(*axes),
        lambda x, axes: np.transpose(x, axes),
        axes=(2, 0, 1),
    ),
    _moved("transpose_T", [(2, 3)], lambda tape, x: x.T, lambda x: x.T, lambda x: x.T),
)
SLICE_EXAMPLES = (
    _moved(
        "slice_steps",
        [(5, 6)],
        lambda tape, x, index: x[index],
        lambda x, index: x[index],
        lambda x, index: x[index],
        index=(slice(None, None, 2), slice(1, 6, 3)),
    ),
    _moved(
        "slice_int_none",
        [(3, 4, 5)],
        lambda tape, x, index: x[index],
        lambda x, index: x[index],
        lambda x, index: x[index],
        index=(1, None, Ellipsis, slice(2, None)),
    ),
)


def _strided_pad(x, low, high, interior):
    """XLA's padding with interior zeros, as a strided assignment (torch can differentiate it)."""
    shape = [lo + hi + n + max(n - 1, 0) * inner for n, lo, hi, inner in zip(x.shape, low, high, interior)]
    out = x.new_zeros(shape) if hasattr(x, "new_zeros") else np.zeros(shape, x.dtype)
    index = tuple(slice(lo, lo + (n - 1) * (inner + 1) + 1, inner + 1) for n, lo, inner in zip(x.shape, low, interior))
    out[index] = x
    return out


PAD_EXAMPLES = (
    Example(
        "pad_interior",
        [(2, 3)],
        dict(low=(1, 0), high=(0, 2), interior=(2, 1)),
        topos=lambda tape, x, **a: tape.apply("Pad", [x], **a),
        torch=_strided_pad,
        numpy=_strided_pad,
    ),
)
CONCATENATE_EXAMPLES = (
    Example(
        "concatenate",
        [(2, 1), (2, 3), (2, 2)],
        dict(axis=1),
        topos=lambda tape, *xs, axis: topos_function("concatenate")(list(xs), axis=axis),
        torch=lambda *xs, axis: torch.cat(list(xs), dim=axis),
        numpy=lambda *xs, axis: np.concatenate(xs, axis=axis),
    ),
    Example(
        "stack",
        [(2, 3), (2, 3)],
        dict(axis=1),
        topos=lambda tape, *xs, axis: topos_function("stack")(list(xs), axis=axis),
        torch=lambda *xs, axis: torch.stack(list(xs), dim=axis),
        numpy=lambda *xs, axis: np.stack(xs, axis=axis),
    ),
    Example(
        "stack_negative_axis",
        [(2, 3), (2, 3)],
        dict(axis=-1),
        topos=lambda tape, *xs, axis: topos_function("stack")(list(xs), axis=axis),
        torch=lambda *xs, axis: torch.stack(list(xs), dim=axis),
        numpy=lambda *xs, axis: np.stack(xs, axis=axis),
    ),
)


def _torch_take(x, ids, axis):
    """np.take along ``axis`` with an index array of any shape."""
    picked = torch.index_select(x, axis, ids.reshape(-1))
    return picked.reshape(x.shape[:axis] + ids.shape + x.shape[axis + 1 :])


TAKE_EXAMPLES = (
    Example(
        "take_embedding_repeats",
        [(5, 3), Index(5, (2, 3))],
        dict(axis=0),
        topos=lambda tape, table, ids, axis: topos_function("take")(table, ids, axis),
        torch=lambda table, ids, axis: torch.nn.functional.embedding(ids, table),
        numpy=lambda table, ids, axis: np.take(table, ids, axis),
        values=(None, np.array([[0, 2, 2], [4, 0, 2]], dtype=np.int32)),
    ),
    Example(
        "take_axis",
        [(2, 4, 3), Index(4, (5,))],
        dict(axis=1),
        topos=lambda tape, x, ids, axis: topos_function("take")(x, ids, axis=axis),
        torch=_torch_take,
        numpy=lambda x, ids, axis: np.take(x, ids, axis),
        values=(None, np.array([3, 3, 0, 1, 3], dtype=np.int32)),
    ),
    Example(
        "getitem_list",
        [(4, 3)],
        dict(rows=[3, 0, 3]),
        topos=lambda tape, x, rows: x[rows],
        torch=lambda x, rows: x[rows],
        numpy=lambda x, rows: x[rows],
    ),
    Example(
        "getitem_int32_value",
        [(4, 3), Index(4, (2, 2))],
        {},
        topos=lambda tape, x, ids: x[ids],
        torch=lambda x, ids: x[ids],
        numpy=lambda x, ids: x[ids],
        values=(None, np.array([[1, 1], [2, 0]], dtype=np.int32)),
    ),
)

# The Fourier transforms take and give complex values as real/imaginary pairs, a trailing axis of 2
# (topos.ops.fft); the torch and numpy spellings convert at the boundary.


def _fourier(name, shapes, function, torch_name, complex_in, complex_out, **attrs):
    """``topos.fft.<function>`` with numpy's ``n``/``axis``, torch's ``n``/``dim``."""

    def topos_call(tape, x, n=None, axis=-1):
        return getattr(importlib.import_module("topos").fft, function)(x, n=n, axis=axis)

    def torch_call(x, n=None, axis=-1):
        spelled = getattr(torch.fft, torch_name)
        if complex_in:
            x = torch.view_as_complex(x.contiguous())
        out = spelled(x, n=n, dim=axis)
        return torch.view_as_real(out) if complex_out else out

    def numpy_call(x, n=None, axis=-1):
        if complex_in:
            x = x[..., 0] + 1j * x[..., 1]
        out = getattr(np.fft, function)(x, n=n, axis=axis)
        return np.stack([out.real, out.imag], -1) if complex_out else out

    return Example(name, shapes, attrs, topos=topos_call, torch=torch_call, numpy=numpy_call)


FFT_EXAMPLES = (
    _fourier("fft", [(3, 6, 2)], "fft", "fft", True, True),
    _fourier("fft_axis0_padded", [(5, 3, 2)], "fft", "fft", True, True, axis=0, n=8),
    _fourier("ifft_cut", [(2, 7, 2)], "ifft", "ifft", True, True, n=4),
)
RFFT_EXAMPLES = (
    _fourier("rfft", [(3, 8)], "rfft", "rfft", False, True),
    _fourier("rfft_axis0_odd", [(7, 3)], "rfft", "rfft", False, True, axis=0),
)
IRFFT_EXAMPLES = (
    _fourier("irfft", [(3, 5, 2)], "irfft", "irfft", True, False),
    _fourier("irfft_axis0_odd", [(4, 3, 2)], "irfft", "irfft", True, False, axis=0, n=7),
)


# Where, the products, the scans, the convolutions, the windows and the random draws ---------------

# Where's condition as a leaf the topos call makes (torch and numpy read the same mask), or as an
# operand at chosen values: nonzero (-2, 0.5) is true, 0 false.
WHERE_MASK = np.array([1.0, 0.0, 0.0, 1.0])
WHERE_CONDITION = np.array([[0.0, 1.0, -2.0, 0.0], [3.0, 0.0, 0.5, 1.0], [0.0, 0.0, 1.0, 1.0]])
WHERE_EXAMPLES = (
    Example(
        "where",
        [(3, 4), (4,)],
        {},
        topos=lambda tape, a, b: topos_function("where")(tape.leaf(WHERE_MASK), a, b),
        torch=lambda a, b: torch.where(torch.tensor(WHERE_MASK != 0), a, b),
        numpy=lambda a, b: np.where(WHERE_MASK != 0, a, b),
    ),
    Example(
        "where_condition_operand",
        [(3, 4), (3, 4), (3, 4)],
        {},
        topos=lambda tape, c, a, b: tape.apply("Where", [c, a, b]),
        torch=lambda c, a, b: torch.where(c != 0, a, b),
        numpy=lambda c, a, b: np.where(c != 0, a, b),
        values=(WHERE_CONDITION, None, None),
    ),
)


def _product(name, shapes, method=True):
    """``a @ b`` (or ``topos.matmul``) by numpy's rules: broadcast batches, 1-D operands on either side."""
    return Example(
        name,
        shapes,
        {},
        topos=(lambda tape, a, b: a @ b) if method else (lambda tape, a, b: topos_function("matmul")(a, b)),
        torch=lambda a, b: torch.matmul(a, b),
        numpy=np.matmul,
    )


MATMUL_EXAMPLES = (
    _product("matmul", [(2, 3), (3, 4)]),
    _product("matmul_batched", [(2, 3, 4), (2, 4, 5)]),
    _product("matmul_batch_broadcast", [(2, 1, 3, 4), (5, 4, 2)]),
    _product("matmul_vector_matrix", [(3,), (2, 3, 4)]),
    _product("matmul_matrix_vector", [(2, 3, 4), (4,)]),
    _product("matmul_vector_vector", [(5,), (5,)], method=False),
)


def _torch_cumsum(x, axis=-1, reverse=False):
    return torch.flip(torch.cumsum(torch.flip(x, [axis]), axis), [axis]) if reverse else torch.cumsum(x, axis)


def _np_cumsum(x, axis=-1, reverse=False):
    return np.flip(np.cumsum(np.flip(x, axis), axis), axis) if reverse else np.cumsum(x, axis)


CUMSUM_EXAMPLES = tuple(
    Example(
        name,
        [shape],
        attrs,
        topos=lambda tape, x, **a: topos_function("cumsum")(x, **a),
        torch=_torch_cumsum,
        numpy=_np_cumsum,
    )
    for name, shape, attrs in (
        ("cumsum", (3, 5), {}),
        ("cumsum_axis0", (4, 2, 3), dict(axis=0)),
        ("cumsum_reverse", (2, 5, 3), dict(axis=1, reverse=True)),
    )
)


# The product and the running folds (topos.ops.cumulative) ------------------------------------------


def _torch_prod(x, axis=None, keepdims=False):
    """torch.prod over a tuple of axes, one at a time (torch takes one dim), from the last."""
    axes = range(x.dim()) if axis is None else (axis,) if isinstance(axis, int) else axis
    for a in sorted((a % x.dim() for a in axes), reverse=True):
        x = torch.prod(x, a, keepdim=keepdims)
    return x


def _prod(name, shape, values=None, method=True, **attrs):
    return Example(
        name,
        [shape],
        attrs,
        topos=(lambda tape, x, **a: x.prod(**a)) if method else (lambda tape, x, **a: topos_function("prod")(x, **a)),
        torch=_torch_prod,
        numpy=lambda x, **a: np.prod(x, **a),
        values=values,
    )


# One zero in row 0 (its gradient is the product of the rest), two in row 1 (every gradient 0), none in row 2.
PROD_ZEROS = np.array([[0.5, 0.0, 1.5, -2.0], [0.0, 1.2, 0.0, 0.7], [1.1, -0.9, 1.3, 0.8]])
# Rows with one nonzero, none (a -0.0 among the zeros) and all nonzero: any and all differ on each.
ANY_ALL_ROWS = np.array([[0.0, 0.0, 2.0, 0.0], [0.0, -0.0, 0.0, 0.0], [0.25, 1.0, -3.0, 0.5]])
PROD_EXAMPLES = (
    _prod("prod_all", (3, 4)),
    _prod("prod_axis", (3, 4), method=False, axis=1),
    _prod("prod_zeros", (3, 4), values=(PROD_ZEROS,), axis=-1),
    _prod("prod_axes_keepdims", (2, 3, 4), axis=(0, 2), keepdims=True),
)


def _flipped(function, x, axis, reverse, flip):
    """``function`` along ``axis``, from the end where ``reverse`` (the axis flipped around it)."""
    return flip(function(flip(x, axis), axis), axis) if reverse else function(x, axis)


def _running(opcode, torch_name, ufunc, rows=(("", (3, 5), {}),), values=None):
    """Examples of the running fold ``opcode`` (topos.<name>), torch's ``torch_name`` and numpy's
    ``ufunc.accumulate``, along the last axis, along axis 0 and reversed along a middle axis."""
    name = {
        "CumProd": "cumprod",
        "CumMax": "cummax",
        "CumMin": "cummin",
        "LogCumSumExp": "logcumsumexp",
    }[opcode]

    def torch_fold(x, axis):
        out = getattr(torch, torch_name)(x, axis)
        return out.values if torch_name in ("cummax", "cummin") else out

    return tuple(
        Example(
            name + suffix,
            [shape],
            attrs,
            topos=lambda tape, x, **a: topos_function(name)(x, **a),
            torch=lambda x, axis=-1, reverse=False: _flipped(torch_fold, x, axis, reverse, lambda t, a: t.flip(a)),
            numpy=lambda x, axis=-1, reverse=False: _flipped(
                lambda t, a: getattr(np, ufunc).accumulate(t, a),
                x,
                axis,
                reverse,
                np.flip,
            ),
            values=values,
        )
        for suffix, shape, attrs in rows
    )


RUNNING_ROWS = (
    ("", (3, 5), {}),
    ("_axis0", (4, 2, 3), dict(axis=0)),
    ("_reverse", (2, 5, 3), dict(axis=1, reverse=True)),
)
CUMPROD_EXAMPLES = _running("CumProd", "cumprod", "multiply", RUNNING_ROWS) + _running(
    "CumProd", "cumprod", "multiply", (("_zeros", (3, 4), {}),), values=(PROD_ZEROS,)
)
CUMMAX_EXAMPLES = _running("CumMax", "cummax", "maximum", RUNNING_ROWS)
CUMMIN_EXAMPLES = _running("CumMin", "cummin", "minimum", RUNNING_ROWS[:1] + RUNNING_ROWS[2:])
# scale 3: terms from e^-4.5 to e^4.5, so that the running maximum changes and the small ones still count.
LOGCUMSUMEXP_EXAMPLES = tuple(
    replace(example, scale=3.0) for example in _running("LogCumSumExp", "logcumsumexp", "logaddexp", RUNNING_ROWS)
)


def _ties_3d():
    """[3, 4, 5] with ties along the last axis (elements 0 and 2 of [1, :]) and the middle one ([:, 3] = [:, 1])."""
    data = np.random.default_rng(5).uniform(-1.5, 1.5, (3, 4, 5))
    data[1, :, 2] = data[1, :, 0]
    data[:, 3, :] = data[:, 1, :]
    return data


TIES_3D = _ties_3d()


def _last(axis, rank):
    """The permutation that moves ``axis`` last."""
    return tuple(a for a in range(rank) if a != axis % rank) + (axis % rank,)


def _picked(name, function, axis, values=None, shape=(4, 3)):
    """``topos.argmax`` or ``argmin`` along ``axis``: its int32 indices read as a one-hot times the
    scores with that axis last, so a float value (and a gradient to x) comes of them. Ties go to the
    first index in topos, torch and numpy alike."""
    return Example(
        name,
        [shape],
        dict(axis=axis),
        topos=lambda tape, x, axis: (
            topos_function("one_hot")(topos_function(function)(x, axis), x.shape[axis])
            * x.transpose(*_last(axis, len(x.shape)))
        ),
        torch=lambda x, axis: (
            torch.nn.functional.one_hot(getattr(torch, function)(x, axis), x.shape[axis]).to(x.dtype)
            * x.permute(*_last(axis, x.dim()))
        ),
        numpy=lambda x, axis: (
            np.eye(x.shape[axis])[getattr(np, function)(x, axis)] * np.transpose(x, _last(axis, x.ndim))
        ),
        values=None if values is None else (values,),
    )


ARGMAX_EXAMPLES = (
    Example(
        "argmax_ties",
        [(3, 4)],
        {},
        topos=lambda tape, x: (
            topos_function("one_hot")(topos_function("argmax")(x, 1, keepdims=True), 4)
            * topos_function("expand_dims")(x, 1)
        ),
        torch=lambda x: torch.nn.functional.one_hot(torch.argmax(x, 1, keepdim=True), 4).to(x.dtype) * x.unsqueeze(1),
        numpy=lambda x: np.eye(4)[np.argmax(x, 1)[:, None]] * x[:, None],
        values=(WITH_TIES,),
    ),
    *(_picked(f"argmax_ties_axis{axis}", "argmax", axis, TIES_3D, (3, 4, 5)) for axis in (0, 1, 2)),
)
ARGMIN_EXAMPLES = (
    _picked("argmin_axis0", "argmin", 0),
    *(_picked(f"argmin_ties_axis{axis}", "argmin", axis, TIES_3D, (3, 4, 5)) for axis in (1, 2)),
)


def _top_k(name, shape, k, values=None):
    """``topos.top_k``'s values, or at ties its indices (the lower index first, as a stable sort's)
    read as a one-hot times the scores."""
    if values is None:
        return Example(
            name,
            [shape],
            dict(k=k),
            topos=lambda tape, x, k: topos_function("top_k")(x, k)[0],
            torch=lambda x, k: torch.topk(x, k).values,
            numpy=lambda x, k: -np.sort(-x, -1)[..., :k],
        )
    n = shape[-1]
    return Example(
        name,
        [shape],
        dict(k=k),
        topos=lambda tape, x, k: (
            topos_function("one_hot")(topos_function("top_k")(x, k)[1], n) * topos_function("expand_dims")(x, -2)
        ),
        torch=lambda x, k: (
            torch.nn.functional.one_hot(torch.sort(x, dim=-1, descending=True, stable=True).indices[..., :k], n).to(
                x.dtype
            )
            * x.unsqueeze(-2)
        ),
        numpy=lambda x, k: np.eye(n)[np.argsort(-x, -1, kind="stable")[..., :k]] * x[..., None, :],
        values=(values,),
    )


TOP_K_EXAMPLES = (
    _top_k("top_k", (3, 6), 3),
    _top_k("top_k_all", (2, 2, 4), 4),
    _top_k("top_k_ties_indices", (3, 4, 5), 3, TIES_3D),
    _top_k("top_k_ties_indices_all", (3, 4, 5), 5, TIES_3D),
)
INDEX_TO_FLOAT_EXAMPLES = (
    Example(
        "equal_indices",
        [(2, 3), Index(3, (2, 3)), Index(3, (2, 3))],
        {},
        topos=lambda tape, x, a, b: topos_function("equal")(a, b) * x + topos_function("not_equal")(a, b),
        torch=lambda x, a, b: (a == b).to(x.dtype) * x + (a != b).to(x.dtype),
        numpy=lambda x, a, b: (a == b) * x + (a != b),
    ),
)


# Sorting, searching and scattering along an axis (topos.ops.sort) -----------------------------------

# Rows whose equal values (and a -0.0 beside a 0.0) show that the sorts are stable.
SORT_TIES = np.array(
    [
        [2.0, -1.0, 2.0, 0.0, -0.0],
        [1.0, 1.0, 1.0, 3.0, 1.0],
        [4.0, -2.0, 4.0, -2.0, 0.5],
    ]
)


def _sorted(name, shape, values=None, **attrs):
    """``topos.sort`` against torch's stable sort (its descending keeps ties in order too)."""
    return Example(
        name,
        [shape],
        attrs,
        topos=lambda tape, x, **a: topos_function("sort")(x, **a),
        torch=lambda x, axis=-1, descending=False: torch.sort(x, dim=axis, descending=descending, stable=True).values,
        numpy=lambda x, axis=-1, descending=False: np.take_along_axis(x, _np_stable_order(x, axis, descending), axis),
        values=values,
    )


def _np_stable_order(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    return x.shape[axis] - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


def _np_scatter_along(u, ids, axis, extent):
    """numpy's np.add.at at each index along ``axis``, every other coordinate kept."""
    out = np.zeros(u.shape[:axis] + (extent,) + u.shape[axis + 1 :], dtype=u.dtype)
    at = list(np.indices(ids.shape))
    at[axis] = ids
    np.add.at(out, tuple(at), u)
    return out


def _argsorted(name, shape, values=None, **attrs):
    """``topos.argsort``'s positions read as a one-hot times the row (exact positions, a gradient to x)."""
    n = shape[attrs.get("axis", -1)]
    return Example(
        name,
        [shape],
        attrs,
        topos=lambda tape, x, **a: (
            topos_function("one_hot")(topos_function("argsort")(x, **a), n) * topos_function("expand_dims")(x, -2)
        ),
        torch=lambda x, axis=-1, descending=False: (
            torch.nn.functional.one_hot(torch.sort(x, dim=axis, descending=descending, stable=True).indices, n).to(
                x.dtype
            )
            * x.unsqueeze(-2)
        ),
        numpy=lambda x, axis=-1, descending=False: np.eye(n)[_np_stable_order(x, axis, descending)] * x[..., None, :],
        values=values,
    )


SORT_EXAMPLES = (
    _sorted("sort", (3, 6)),
    _sorted("sort_axis0_descending", (4, 3), axis=0, descending=True),
    _sorted("sort_ties_descending", (3, 5), (SORT_TIES,), descending=True),
)
ARGSORT_EXAMPLES = (
    _argsorted("argsort_ties", (3, 5), (SORT_TIES,)),
    _argsorted("argsort_ties_descending", (3, 5), (SORT_TIES,), descending=True),
)
ALONG_IDS = np.array([[4, 0, 4, 1], [2, 2, 2, 2], [0, 1, 3, 4]], dtype=np.int32)
TAKE_ALONG_EXAMPLES = (
    Example(
        "take_along_axis",
        [(3, 5), Index(5, (3, 4))],
        dict(axis=1),
        topos=lambda tape, x, ids, axis: topos_function("take_along_axis")(x, ids, axis),
        torch=lambda x, ids, axis: torch.take_along_dim(x, ids.long(), axis),
        numpy=lambda x, ids, axis: np.take_along_axis(x, ids, axis),
        values=(None, ALONG_IDS),
    ),
    Example(
        "take_along_axis0_broadcast",
        [(4, 3), Index(4, (2, 1))],
        dict(axis=0),
        topos=lambda tape, x, ids, axis: topos_function("take_along_axis")(x, ids, axis),
        torch=lambda x, ids, axis: torch.take_along_dim(x, ids.long(), axis),
        numpy=lambda x, ids, axis: np.take_along_axis(x, ids, axis),
        values=(None, np.array([[3], [0]], dtype=np.int32)),
    ),
)
SCATTER_ALONG_EXAMPLES = (
    Example(
        "scatter_add_along_axis",
        [(3, 4), Index(5, (3, 4))],
        dict(axis=1, extent=5),
        topos=lambda tape, u, ids, **a: tape.apply("ScatterAddAlongAxis", [u, ids], **a),
        torch=lambda u, ids, axis, extent: u.new_zeros(u.shape[:axis] + (extent,) + u.shape[axis + 1 :]).scatter_add(
            axis, ids.long(), u
        ),
        numpy=lambda u, ids, axis, extent: _np_scatter_along(u, ids, axis, extent),
        values=(None, ALONG_IDS),
    ),
)
# Values equal to elements of the sorted vector, so that "left" and "right" differ.
SEARCH_VALUES = (
    np.array([0.5, -1.0, 2.0, 0.5, 3.0, 0.0]),
    np.array([[0.5, 2.0, -3.0], [9.0, 0.0, 1.0]]),
)
SEARCHSORTED_EXAMPLES = tuple(
    Example(
        f"searchsorted_{side}",
        [(6,), (2, 3)],
        dict(side=side),
        topos=lambda tape, a, v, side: (
            topos_function("one_hot")(topos_function("searchsorted")(topos_function("sort")(a), v, side), 7)
            * topos_function("expand_dims")(v, -1)
        ),
        torch=lambda a, v, side: (
            torch.nn.functional.one_hot(torch.searchsorted(torch.sort(a).values, v, side=side), 7).to(v.dtype)
            * v.unsqueeze(-1)
        ),
        numpy=lambda a, v, side: np.eye(7)[np.searchsorted(np.sort(a), v, side)] * v[..., None],
        values=SEARCH_VALUES,
    )
    for side in ("left", "right")
)


def _convolution_attrs(spatial, **given):
    """Every attribute of the Convolution primitive, its defaults unless ``given``."""
    attrs = dict(strides=(1,) * spatial, padding=((0, 0),) * spatial, lhs_dilation=(1,) * spatial)
    attrs.update(rhs_dilation=(1,) * spatial, batch_groups=1, feature_groups=1)
    attrs.update(given)
    return attrs


def _np_convolution(x, w, **attrs):
    """The interpreter's own forward: the numpy spelling of a primitive torch spells another way."""
    return importlib.import_module("topos.ops").lookup("Convolution").forward([x, w], attrs)


def _torch_convolution(x, w, strides, padding, lhs_dilation, rhs_dilation, batch_groups, feature_groups):
    """XLA's convolution in torch: zeros between the input's elements (lhs dilation), then (low,
    high) padding, a negative side cropping; batch groups as one convolution a contiguous group."""
    spatial = x.dim() - 2
    x = _strided_pad(x, (0,) * x.dim(), (0,) * x.dim(), (0, 0) + tuple(d - 1 for d in lhs_dilation))
    x = torch.nn.functional.pad(x, [max(side, 0) for pair in reversed(padding) for side in pair])
    x = x[(slice(None),) * 2 + tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape[2:], padding))]
    conv = [torch.nn.functional.conv1d, torch.nn.functional.conv2d][spatial - 1]
    groups = x.reshape(batch_groups, -1, *x.shape[1:])
    kernels = w.chunk(batch_groups, 0)
    return torch.cat(
        [conv(g, k, stride=strides, dilation=rhs_dilation, groups=feature_groups) for g, k in zip(groups, kernels)],
        1,
    )


def _np_conv(x, w, stride, padding, dilation, groups):
    """``topos.conv``'s arguments (ints, one a spatial axis) as the primitive's attributes."""
    spatial = x.ndim - 2

    def each(v):
        return tuple(v) if isinstance(v, tuple) else (v,) * spatial

    pads = tuple((p, p) for p in each(padding))
    attrs = _convolution_attrs(spatial, strides=each(stride), padding=pads, rhs_dilation=each(dilation))
    return _np_convolution(x, w, **dict(attrs, feature_groups=groups))


def _conv(name, shapes, torch_name, **attrs):
    return Example(
        name,
        shapes,
        attrs,
        topos=lambda tape, x, w, **a: topos_function(torch_name)(x, w, **a),
        torch=lambda x, w, **a: getattr(torch.nn.functional, torch_name)(x, w, **a),
        numpy=_np_conv,
    )


def _applied(name, opcode, shapes, torch, numpy, values=None, **attrs):
    """The primitive recorded with ``tape.apply``: attributes no public function spells."""
    return Example(
        name,
        shapes,
        attrs,
        topos=lambda tape, *xs, **a: tape.apply(opcode, list(xs), **a),
        torch=torch,
        numpy=numpy,
        values=values,
    )


CONVOLUTION_EXAMPLES = (
    _conv(
        "conv2d",
        [(2, 4, 7, 6), (6, 2, 3, 3)],
        "conv2d",
        stride=(2, 1),
        padding=1,
        dilation=(1, 2),
        groups=2,
    ),
    _conv(
        "conv1d_depthwise",
        [(2, 3, 9), (3, 1, 3)],
        "conv1d",
        stride=2,
        padding=0,
        dilation=1,
        groups=3,
    ),
    # Both dilations, and a negative padding that crops (the backward's own convolutions have them).
    _applied(
        "convolution_dilated",
        "Convolution",
        [(2, 3, 6, 5), (4, 3, 3, 2)],
        _torch_convolution,
        _np_convolution,
        **_convolution_attrs(
            2,
            strides=(2, 1),
            padding=((1, 0), (-1, 2)),
            lhs_dilation=(1, 2),
            rhs_dilation=(2, 1),
        ),
    ),
    # Batch groups in the forward, so that the backward has feature groups, and the other way round.
    _applied(
        "convolution_batch_groups",
        "Convolution",
        [(4, 2, 5, 5), (4, 2, 2, 2)],
        _torch_convolution,
        _np_convolution,
        **_convolution_attrs(2, strides=(2, 2), batch_groups=2),
    ),
    _applied(
        "convolution_feature_groups",
        "Convolution",
        [(2, 4, 5), (6, 2, 3)],
        _torch_convolution,
        _np_convolution,
        **_convolution_attrs(1, padding=((1, 1),), feature_groups=2),
    ),
)


def _np_pool(x, window, stride, padding, reduce):
    """``topos.max_pool``/``avg_pool``'s window over the spatial axes (ints), through numpy's sliding windows."""
    spatial = x.ndim - 2
    fill = -np.inf if reduce is np.max else 0.0
    padded = np.pad(x, ((0, 0),) * 2 + ((padding, padding),) * spatial, constant_values=fill)
    views = np.lib.stride_tricks.sliding_window_view(padded, (1, 1) + (window,) * spatial)
    views = views[(slice(None),) * 2 + (slice(None, None, stride),) * spatial]
    out = reduce(views, axis=tuple(range(x.ndim, 2 * x.ndim)))
    return out if reduce is np.max else out / window**spatial


def _pool(name, shape, function, **attrs):
    """``topos.max_pool`` or ``avg_pool`` (ints: window, stride, padding), as torch's max_pool2d..."""
    torch_name = f"{function}{len(shape) - 2}d"
    return Example(
        name,
        [shape],
        attrs,
        topos=lambda tape, x, **a: topos_function(function)(x, **a),
        torch=lambda x, window, stride, padding: getattr(torch.nn.functional, torch_name)(x, window, stride, padding),
        numpy=lambda x, **a: _np_pool(x, **a, reduce=np.max if function == "max_pool" else np.sum),
    )


def _window_op(opcode):
    """The interpreter's own forward of a window op: its numpy spelling (torch spells it below)."""
    return lambda *xs, **attrs: importlib.import_module("topos.ops").lookup(opcode).forward(list(xs), attrs)


def _torch_max_window(x, window, strides, padding):
    """(maxima, their flat indices in the padded input) of a window over [N, C, *spatial]: -inf
    padding, then torch's max pool, whose first maximum wins a tie as topos's does."""
    padded = torch.nn.functional.pad(x, [side for pair in reversed(padding[2:]) for side in pair], value=-torch.inf)
    pool = [torch.nn.functional.max_pool1d, torch.nn.functional.max_pool2d][x.dim() - 3]
    return padded, *pool(padded, window[2:], strides[2:], return_indices=True)


def _torch_window_sum(x, window, strides, padding):
    padded = torch.nn.functional.pad(x, [side for pair in reversed(padding[2:]) for side in pair])
    pool = [torch.nn.functional.avg_pool1d, torch.nn.functional.avg_pool2d][x.dim() - 3]
    return pool(padded, window[2:], strides[2:]) * float(np.prod(window))


def _torch_select_and_scatter_add(g, x, **attrs):
    """max pool's derivative: each window's cotangent added at its first maximum (x made a leaf of
    torch's graph where the caller's is none: the numpy check and the special values run without one)."""
    with torch.enable_grad():
        x = x if x.requires_grad else x.detach().requires_grad_()
        _, out, _ = _torch_max_window(x, **attrs)
        return torch.autograd.grad(out, x, g, create_graph=True)[0]


def _torch_select_and_gather(g, x, **attrs):
    """The derivative's derivative: each window reads g at its first maximum."""
    _, _, indices = _torch_max_window(x, **attrs)
    g = torch.nn.functional.pad(g, [side for pair in reversed(attrs["padding"][2:]) for side in pair])
    flat = g.reshape(g.shape[0], g.shape[1], -1)
    return flat.gather(2, indices.reshape(indices.shape[0], indices.shape[1], -1)).reshape(indices.shape)


# A window of 3 x 2 with strides 2 and 1 and (low, high) padding; small integers tie in it.
POOL_WINDOW = dict(window=(1, 1, 3, 2), strides=(1, 1, 2, 1), padding=((0, 0), (0, 0), (1, 1), (0, 1)))
POOL_TIES = np.random.default_rng(7).integers(-2, 3, (2, 3, 5, 4)).astype(float)
# Its maxima's grid: (5 + 2 - 3) // 2 + 1 = 3 rows, (4 + 1 - 2) // 1 + 1 = 4 columns.
POOL_GRID = (2, 3, 3, 4)
WINDOW_SUM_EXAMPLES = (
    _pool("avg_pool2d", (2, 3, 6, 5), "avg_pool", window=3, stride=2, padding=1),
    _applied(
        "window_sum",
        "WindowSum",
        [(2, 3, 5, 4)],
        _torch_window_sum,
        _window_op("WindowSum"),
        **POOL_WINDOW,
    ),
)
WINDOW_MAX_EXAMPLES = (
    _pool("max_pool2d", (2, 3, 6, 5), "max_pool", window=2, stride=2, padding=1),
    _pool("max_pool1d", (2, 2, 9), "max_pool", window=3, stride=1, padding=0),
    _applied(
        "window_max_ties",
        "WindowMax",
        [(2, 3, 5, 4)],
        lambda x, **a: _torch_max_window(x, **a)[1],
        _window_op("WindowMax"),
        values=(POOL_TIES,),
        **POOL_WINDOW,
    ),
)
SELECT_AND_SCATTER_ADD_EXAMPLES = (
    _applied(
        "select_and_scatter_add",
        "SelectAndScatterAdd",
        [(2, 3, 3, 3), (2, 3, 6, 5)],
        _torch_select_and_scatter_add,
        _window_op("SelectAndScatterAdd"),
        window=(1, 1, 2, 2),
        strides=(1, 1, 2, 2),
        padding=((0, 0),) * 2 + ((0, 0), (0, 1)),
    ),
    _applied(
        "select_and_scatter_add_ties",
        "SelectAndScatterAdd",
        [POOL_GRID, (2, 3, 5, 4)],
        _torch_select_and_scatter_add,
        _window_op("SelectAndScatterAdd"),
        values=(None, POOL_TIES),
        **POOL_WINDOW,
    ),
)
SELECT_AND_GATHER_EXAMPLES = (
    _applied(
        "select_and_gather_ties",
        "SelectAndGather",
        [(2, 3, 5, 4), (2, 3, 5, 4)],
        _torch_select_and_gather,
        _window_op("SelectAndGather"),
        values=(None, POOL_TIES),
        **POOL_WINDOW,
    ),
)


# The random draws: the operand is a key (``Key``), and the oracle of its bits is jax.random's
# (test_random.py holds the bits themselves to JAX and Random123 over many keys and shapes). Each
# example multiplies the floats drawn by a real operand, so a value with a gradient comes of it.


def _jax_key(key):
    jax = importlib.import_module("jax")
    return jax.random.wrap_key_data(np.asarray(key, dtype=np.uint32))


def _jax_uniform(key, shape, dtype):
    """topos.uniform's floats from jax.random's bits: float32 is jax.random.uniform itself, float64
    the same 32 bits times 2^-32 (topos.uniform's documented rule; JAX's float64 draws 64 bits)."""
    jax = importlib.import_module("jax")
    if dtype == "float32":
        return np.asarray(jax.random.uniform(key, tuple(shape), dtype=np.float32))
    return np.asarray(jax.random.bits(key, tuple(shape), dtype=np.uint32)).astype(np.float64) * 2.0**-32


def _derived_key(key, how):
    """The jax key ``how`` makes of the words ``key``: itself, a split's second key, or folded with 12345."""
    jax = importlib.import_module("jax")
    key = _jax_key(key)
    if how == "split":
        return jax.random.split(key, 3)[1]
    return jax.random.fold_in(key, 12345) if how == "fold" else key


def _topos_key(key, how):
    if how == "split":
        return topos_function("split_key")(key, 3)[1]
    return topos_function("fold_in")(key, 12345) if how == "fold" else key


def _drawn(name, shape, words, how="key"):
    """x times uniform floats of x's shape from a key (the key itself, or one split or folded from it)."""
    return Example(
        name,
        [shape, Key(words)],
        {},
        topos=lambda tape, x, key: x * topos_function("uniform")(_topos_key(key, how), x.shape, tape.dtype),
        torch=lambda x, key: (
            x
            * torch.tensor(
                _jax_uniform(
                    _derived_key(key.numpy(), how),
                    x.shape,
                    str(x.dtype).rpartition(".")[2],
                )
            )
        ),
        numpy=lambda x, key: x * _jax_uniform(_derived_key(key, how), x.shape, x.dtype.name),
    )


# Dropout's mask: kept where the bits are below 0.75 * 2^32 (uniform < 0.75 in float32 and float64 alike).
def _dropout(name, shape, words, derived):
    topos_key = (lambda key: topos_function("fold_in")(topos_function("split_key")(key, 3)[1], 7)) if derived else None

    def keep(key, shape):
        jax = importlib.import_module("jax")
        key = jax.random.fold_in(jax.random.split(_jax_key(key), 3)[1], 7) if derived else _jax_key(key)
        return np.asarray(jax.random.bits(key, tuple(shape), dtype=np.uint32)) < np.uint32(0.75 * 2**32)

    return Example(
        name,
        [shape, Key(words)],
        {},
        topos=lambda tape, x, key: topos_function("dropout")(x, 0.25, topos_key(key) if derived else key),
        torch=lambda x, key: torch.where(torch.tensor(keep(key.numpy(), x.shape)), x / 0.75, torch.zeros_like(x)),
        numpy=lambda x, key: np.where(keep(key, x.shape), x / 0.75, 0.0),
    )


RANDOM_BITS_EXAMPLES = (
    _drawn("random_bits", (3, 4), (0xFFFFFFFF, 0xFFFFFFFF)),
    _drawn("random_bits_3d", (2, 3, 5), (0, 42)),
)
UNIFORM_EXAMPLES = (_drawn("uniform", (7,), (2026, 12)),)
SPLIT_KEY_EXAMPLES = (_drawn("split_key", (3, 4), (1, 2), "split"),)
FOLD_IN_EXAMPLES = (_drawn("fold_in", (3, 4), (0x13198A2E, 0x03707344), "fold"),)


def _randint_drawn(name, shape, words):
    """x times the one-hot rows of ``randint(key, rows, 0, n)`` (n x's last extent): jax.random.randint's draws."""
    n = shape[-1]

    def draws(key):
        jax = importlib.import_module("jax")
        return np.asarray(jax.random.randint(_jax_key(key), shape[:-1], 0, n, dtype=np.int32))

    return Example(
        name,
        [shape, Key(words)],
        {},
        topos=lambda tape, x, key: x * topos_function("one_hot")(topos_function("randint")(key, x.shape[:-1], 0, n), n),
        torch=lambda x, key: x * torch.nn.functional.one_hot(torch.tensor(draws(key.numpy()).astype(np.int64)), n),
        numpy=lambda x, key: x * np.eye(n, dtype=x.dtype)[draws(key)],
    )


RANDINT_EXAMPLES = (
    _randint_drawn("randint", (6, 5), (0, 42)),
    _randint_drawn("randint_3d", (2, 3, 7), (1, 2)),
)


def _permuted(name, shape, words, axis, function="permutation"):
    """x shuffled along ``axis`` by ``permutation(key, x, axis)`` (its BitField sort keys): jax.random.permutation's.
    ``shuffle`` is the same draw (jax's permutation with ``independent=False``)."""

    def order(key):
        jax = importlib.import_module("jax")
        return np.asarray(jax.random.permutation(_jax_key(key), shape[axis]))

    return Example(
        name,
        [shape, Key(words)],
        {},
        topos=lambda tape, x, key: topos_function(function)(key, x, axis=axis),
        torch=lambda x, key: torch.index_select(x, axis, torch.tensor(order(key.numpy()).astype(np.int64))),
        numpy=lambda x, key: np.take(x, order(key), axis=axis),
    )


PERMUTATION_EXAMPLES = (
    _permuted("permutation", (7,), (0, 42), 0),
    _permuted("permutation_axis1", (3, 20), (7, 2026), 1),
    _permuted("shuffle_rows", (5, 3), (1, 2), 0, "shuffle"),
)


# The engine's own derivatives in closed form (a softmax's, a log-softmax's, a layer norm's and
# gelu's), recorded directly: torch spells them with its backward ops, numpy with their formulas.
GELU_C, GELU_K = np.sqrt(2 / np.pi), 0.044715


def _np_gelu_grad(g, x):
    t = np.tanh(GELU_C * (x + GELU_K * x**3))
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_C * (1 + 3 * GELU_K * x**2))


DERIVATIVE_EXAMPLES = {
    "GeluGrad": _applied(
        "gelu_grad",
        "GeluGrad",
        [(3, 4), (3, 4)],
        lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
        _np_gelu_grad,
        values=(None, np.random.default_rng(11).normal(0.0, 2.0, (3, 4))),
    ),
    "SoftmaxGrad": _applied(
        "softmax_grad",
        "SoftmaxGrad",
        [(2, 3, 5), (2, 3, 5)],
        lambda g, y: torch.ops.aten._softmax_backward_data(g, y, -1, y.dtype),
        lambda g, y: y * (g - (g * y).sum(-1, keepdims=True)),
    ),
    "LogSoftmaxGrad": _applied(
        "log_softmax_grad",
        "LogSoftmaxGrad",
        [(3, 5), (3, 5)],
        lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, -1, y.dtype),
        lambda g, y: g - np.exp(y) * g.sum(-1, keepdims=True),
    ),
    "LayerNormGrad": _applied(
        "layer_norm_grad",
        "LayerNormGrad",
        [(2, 3, 6), (2, 3, 6), (2, 3, 1)],
        lambda g, n, r: r * (g - g.mean(-1, keepdim=True) - n * (g * n).mean(-1, keepdim=True)),
        lambda g, n, r: r * (g - g.mean(-1, keepdims=True) - n * (g * n).mean(-1, keepdims=True)),
    ),
}


# The elementwise ops' other spellings and chosen places (their plain cases come from the rows
# themselves, ``derived_rows``): a Value method, a Python number on either side, broadcasting
# both ways, zeros and ties where the derivative picks a side (torch's rule: relu'(0) = 0, an
# even split between equal operands), and the torch spellings that are not one function.
WITH_ZEROS = np.array([[-1.5, 0.0, 0.25], [0.0, 2.0, -0.5]])


def _np_gelu(x):
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + GELU_K * x**3)))


def _np_sigmoid(x):
    """1 / (1 + exp(-x)) without overflow at either end."""
    return np.exp(-np.logaddexp(0.0, -x))


def _spelled(name, shapes, topos, torch, numpy, values=None, scale=1.0):
    return Example(
        name,
        shapes,
        {},
        topos=topos,
        torch=torch,
        numpy=numpy,
        values=values,
        scale=scale,
    )


SPELLINGS = {
    "Sqrt": (
        _spelled(
            "sqrt_method",
            [(3, 4)],
            lambda tape, x: x.sqrt(),
            lambda x: torch.sqrt(x),
            np.sqrt,
        ),
    ),
    "Tanh": (
        _spelled(
            "tanh_method",
            [(3, 4)],
            lambda tape, x: x.tanh(),
            lambda x: torch.tanh(x),
            np.tanh,
            scale=2.0,
        ),
    ),
    "Sigmoid": (
        _spelled(
            "sigmoid_method",
            [(3, 4)],
            lambda tape, x: x.sigmoid(),
            lambda x: torch.sigmoid(x),
            _np_sigmoid,
            scale=10.0,
        ),
        _spelled(
            "sigmoid_extremes",
            [(7,)],
            lambda tape, x: x.sigmoid(),
            lambda x: torch.sigmoid(x),
            _np_sigmoid,
            values=(np.array([-800.0, -90.0, -20.0, 0.0, 20.0, 90.0, 800.0]),),
        ),
    ),
    "Relu": (
        _spelled(
            "relu",
            [(2, 3)],
            lambda tape, x: x.relu(),
            lambda x: torch.relu(x),
            lambda x: np.maximum(x, 0.0),
            values=(WITH_ZEROS,),
        ),
    ),
    # Its shape holds the special values once each where test_nonfinite tiles them.
    "Gelu": (
        _spelled(
            "gelu",
            [(2, 7)],
            lambda tape, x: topos_function("gelu")(x),
            lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
            _np_gelu,
            scale=2.0,
        ),
    ),
    "StopGradient": (
        _spelled(
            "stop_gradient",
            [(2, 7)],
            lambda tape, x: topos_function("stop_gradient")(x) * x,
            lambda x: x.detach() * x,
            lambda x: x * x,
        ),
    ),
    "Add": (
        _spelled(
            "add_broadcast",
            [(3, 1), (4,)],
            lambda tape, a, b: a + b,
            lambda a, b: a + b,
            np.add,
        ),
    ),
    "Sub": (
        _spelled(
            "rsub_number",
            [(2, 3)],
            lambda tape, a: 1.5 - a,
            lambda a: 1.5 - a,
            lambda a: 1.5 - a,
        ),
    ),
    "Mul": (
        _spelled(
            "mul_broadcast",
            [(2, 1, 3), (4, 1)],
            lambda tape, a, b: a * b,
            lambda a, b: a * b,
            np.multiply,
        ),
    ),
    # A Python number over a positive denominator (the drawn first operand is the divisor here).
    "Div": (
        _spelled(
            "rdiv_number",
            [(3,)],
            lambda tape, a: 2.0 / a,
            lambda a: 2.0 / a,
            lambda a: 2.0 / a,
            values=(np.array([0.75, 1.5, 1.9]),),
        ),
    ),
    "Pow": (
        _spelled(
            "pow_number",
            [(5,)],
            lambda tape, a: a**3.0,
            lambda a: a**3.0,
            lambda a: a**3.0,
        ),
        _spelled(
            "pow_negative_base",
            [(2, 3)],
            lambda tape, a: a**2.0 + a**3.0,
            lambda a: a**2.0 + a**3.0,
            lambda a: a**2.0 + a**3.0,
            values=(np.array([[-1.2, 0.4, -0.3], [1.1, -2.0, 0.7]]),),
        ),
        # pow's exponent gradient is 0 where the base is 0 (torch's rule).
        _spelled(
            "pow_zero_base",
            [(3,), (3,)],
            lambda tape, a, b: a**b,
            lambda a, b: torch.pow(a, b),
            np.power,
            values=(np.array([0.0, 0.0, 1.5]), np.array([2.0, 1.0, 2.0])),
        ),
    ),
    "Maximum": (
        _spelled(
            "maximum_ties",
            [(3, 4), (3, 4)],
            lambda tape, a, b: topos_function("maximum")(a, b),
            lambda a, b: torch.maximum(a, b),
            np.maximum,
            values=(WITH_TIES, WITH_TIES[:, ::-1].copy()),
        ),
    ),
    "Minimum": (
        _spelled(
            "minimum_ties",
            [(3, 4), (3, 4)],
            lambda tape, a, b: topos_function("minimum")(a, b),
            lambda a, b: torch.minimum(a, b),
            np.minimum,
            values=(WITH_TIES, WITH_TIES[::-1].copy()),
        ),
    ),
    # topos.ops.elementwise_more: the places where 1 + x, e^x - 1, e^x - e^-x or x + sqrt(1 + x^2)
    # would round away a small result's digits, numpy's halves to even, and the poles of tan.
    "Log1p": (
        _spelled(
            "log1p_small",
            [(9,)],
            lambda tape, x: topos_function("log1p")(x),
            lambda x: torch.log1p(x),
            np.log1p,
            values=(np.array([-0.999, -0.3, -1e-5, -1e-12, 0.0, 1e-9, 3e-7, 0.02, 1e3]),),
        ),
    ),
    "Expm1": (
        _spelled(
            "expm1_small",
            [(10,)],
            lambda tape, x: topos_function("expm1")(x),
            lambda x: torch.expm1(x),
            np.expm1,
            values=(np.array([-40.0, -5.0, -0.4, -1e-6, -1e-15, 1e-10, 2e-4, 0.6, 30.0, 80.0]),),
        ),
    ),
    "Sinh": (
        _spelled(
            "sinh_small",
            [(7,)],
            lambda tape, x: topos_function("sinh")(x),
            lambda x: torch.sinh(x),
            np.sinh,
            values=(np.array([-1e-7, 1e-20, 0.3, -0.9, 1.2, -30.0, 50.0]),),
        ),
    ),
    "Tan": (
        _spelled(
            "tan_near_poles",
            [(7,)],
            lambda tape, x: topos_function("tan")(x),
            lambda x: torch.tan(x),
            np.tan,
            values=(np.array([-1.5, -0.2, 1e-9, 1.0, 1.55, 4.0, 100.0]),),
        ),
    ),
    "Asinh": (
        _spelled(
            "arcsinh_small_and_large",
            [(8,)],
            lambda tape, x: topos_function("arcsinh")(x),
            lambda x: torch.asinh(x),
            np.arcsinh,
            values=(np.array([-1e10, -3.0, -1e-8, 0.0, 2e-5, 0.7, 5000.0, 1e8]),),
        ),
    ),
    "RoundNearestEven": (
        _spelled(
            "round_method_halves",
            [(8,)],
            lambda tape, x: x.round(),
            lambda x: torch.round(x),
            np.round,
            values=(np.array([-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, 3.5]),),
        ),
        Example(
            "round_decimals",
            [(3, 4)],
            dict(decimals=2),
            topos=lambda tape, x, decimals: topos_function("round")(x, decimals),
            torch=lambda x, decimals: torch.round(x, decimals=decimals),
            numpy=lambda x, decimals: np.round(x, decimals),
            scale=10.0,
        ),
        Example(
            "round_negative_decimals",
            [(3, 4)],
            dict(decimals=-1),
            topos=lambda tape, x, decimals: topos_function("round")(x, decimals),
            torch=lambda x, decimals: torch.round(x, decimals=decimals),
            numpy=lambda x, decimals: np.round(x, decimals),
            scale=100.0,
        ),
    ),
}


# The special functions (topos.ops.special) --------------------------------------------------------

# Away from lgamma's and digamma's poles (0, -1, -2, ...): drawn positive; GAMMA_NEGATIVE places
# values between the poles, no closer than 0.1 to one (the reflection's conditioning, pi^2 /
# sin^2(pi x), stays under 110 there).
GAMMA_ARGUMENT = Domain("away from the poles at 0, -1, -2, ...", "positive", draw=(0.5, 4.0))
GAMMA_NEGATIVE = np.array([[-0.5, -1.5, -2.3, -0.9], [-3.7, -0.1, -10.4, -5.5], [0.2, 1.0, 2.0, 7.25]])


def _scipy_special(name):
    """scipy.special's ``name``, imported at the call (a test-time oracle only)."""
    return lambda *xs: getattr(importlib.import_module("scipy.special"), name)(*xs)


# torch's trigamma shifts its argument by 6 and stops its series at B_6 (1e-9 of the value, past
# the float64 bound), so the torch spellings move the argument past 24 first by the recurrence
# psi^(n)(x) = psi^(n)(x + 24) + (-1)^(n+1) n! sum_{k<24} (x + k)^-(n+1): the same function, through
# torch's ops, accurate, and differentiable (digamma's derivative is trigamma).
# At the poles and infinities (and -0, which x + 0 would make +0) torch's own call answers, on
# a harmless stand-in operand so that no NaN reaches the gradient through the unused branch.
def _shifted(x, accurate, own):
    plain = ~torch.isfinite(x) | (x == torch.floor(x)) & (x <= 0)
    safe = torch.where(plain, torch.full_like(x, 0.5), x)
    return torch.where(plain, own(x), accurate(safe))


def _torch_polygamma(n, x):
    def accurate(y):
        shifted = sum((y + k) ** -(n + 1) for k in range(24))
        return torch.polygamma(n, y + 24) + (-1) ** (n + 1) * math.factorial(n) * shifted

    return _shifted(x, accurate, lambda y: torch.polygamma(n, y))


def _torch_digamma(x):
    return _shifted(x, lambda y: torch.digamma(y + 24) - sum(1 / (y + k) for k in range(24)), torch.digamma)


def _polygamma(name, n, values=None):
    return Example(
        name,
        [(3, 4)],
        {"n": n},
        topos=lambda tape, x, n: topos_function("polygamma")(n, x),
        torch=lambda x, n: _torch_polygamma(n, x),
        numpy=lambda x, n: _scipy_special("polygamma")(n, x),
        values=values,
    )


SPECIAL_EXAMPLES = {
    "Lgamma": (
        Example(
            "lgamma_negative",
            [(3, 4)],
            {},
            topos=lambda tape, x: topos_function("lgamma")(x),
            torch=lambda x: torch.lgamma(x),
            numpy=_scipy_special("gammaln"),
            values=(GAMMA_NEGATIVE,),
        ),
        Example(
            "gammaln",
            [(2, 3)],
            {},
            topos=lambda tape, x: topos_function("gammaln")(x),
            torch=lambda x: torch.lgamma(x),
            numpy=_scipy_special("gammaln"),
            scale=3.0,
        ),
    ),
    "Digamma": (
        Example(
            "digamma_negative",
            [(3, 4)],
            {},
            topos=lambda tape, x: topos_function("digamma")(x),
            torch=_torch_digamma,
            numpy=_scipy_special("digamma"),
            values=(GAMMA_NEGATIVE,),
        ),
    ),
    "Polygamma": (
        _polygamma("trigamma", 1),
        _polygamma("polygamma_2", 2),
        _polygamma("polygamma_3", 3),
        _polygamma("trigamma_negative", 1, (GAMMA_NEGATIVE,)),
        _polygamma("polygamma_2_negative", 2, (GAMMA_NEGATIVE,)),
    ),
}


OP_SPECS = {
    "Neg": unary(
        OPERATORS,
        call="topos.model.functions.neg",
        torch="torch.neg",
        spread=(-9.0, 9.0),
    ),
    "Exp": unary(Api("topos.exp"), torch="torch.exp", spread=(-20.0, 20.0)),
    "Log": unary(Api("topos.log"), POSITIVE, torch="torch.log"),
    "Sqrt": unary(
        Api("topos.sqrt"),
        NONNEGATIVE,
        smooth=POSITIVE,
        torch="torch.sqrt",
        spread=(0.0, 100.0),
    ),
    "Rsqrt": unary(Api("topos.rsqrt"), POSITIVE, torch="torch.rsqrt"),
    "Tanh": unary(Api("topos.tanh"), smooth=WIDE, torch="torch.tanh", spread=(-9.0, 9.0)),
    "Sigmoid": unary(Api("topos.sigmoid"), smooth=WIDE, torch="torch.sigmoid", spread=(-30.0, 30.0)),
    "Relu": unary(Api("topos.relu"), smooth=AWAY_FROM_KINK, torch="torch.relu"),
    # The spread reaches float32's tail (exp(-|x|) under 2^-24 below -16.6) and stops short of
    # 20, past which torch's softplus returns x itself (its threshold), 2e-9 away in float64.
    "Softplus": unary(
        Api("topos.softplus"),
        torch="torch.nn.functional.softplus",
        spread=(-30.0, 18.0),
    ),
    "Gelu": unary(Api("topos.gelu"), smooth=WIDE, spread=(-9.0, 9.0)),
    "GeluGrad": binary(
        None,
        internal=DERIVATIVE_ONLY.format("gelu"),
        examples=(DERIVATIVE_EXAMPLES["GeluGrad"],),
    ),
    "StopGradient": unary(Api("topos.stop_gradient")),
    "Add": binary(OPERATORS, call="topos.model.functions.add", torch="torch.add"),
    "Sub": binary(OPERATORS, call="topos.model.functions.sub", torch="torch.sub"),
    "Mul": binary(OPERATORS, call="topos.model.functions.mul", torch="torch.mul"),
    "Div": binary(OPERATORS, right=NONZERO, call="topos.model.functions.div", torch="torch.div"),
    "Pow": OpSpec(
        (POSITIVE, REAL),
        smooth=(POSITIVE, EXPONENT),
        docs=Api("topos.power"),
        notes=("a negative base only to an integer exponent, as numpy",),
        torch="torch.pow",
        numpy="numpy.power",
    ),
    # The gradient check keeps a away from 0: across it, with b < 0, the angle jumps by 2 pi.
    "Atan2": binary(
        Api("topos.atan2"),
        smooth=(NONZERO, REAL),
        torch="torch.atan2",
        numpy="numpy.arctan2",
    ),
    # C's fmod (topos.ops.remainder), exact: the spread takes quotients to 1e10, far past 2^24,
    # where a - b * trunc(a / b) would be off by whole multiples of b. The gradient check draws
    # quotients under 3, away from the integers where it jumps.
    "Rem": binary(
        Api("topos.fmod"),
        right=NONZERO,
        torch="torch.fmod",
        numpy="numpy.fmod",
        spread=((-1e8, 1e8), (0.01, 10.0)),
    ),
    # The special functions (topos.ops.special); scipy.special is the float64 oracle. erfinv's
    # spread reaches 1 - 2^-20 (its float32 tail piece, w > 5, starts near |x| = 0.9966).
    "ErfInv": unary(
        Api("topos.erfinv"),
        UNIT_INTERVAL,
        torch="torch.erfinv",
        numpy="scipy.special.erfinv",
        spread=(-0.999999, 0.999999),
    ),
    # erf's spread reaches 1 in float32 (past 3.9); erfc's the float32 tail (erfc(9) = 4e-37,
    # normal: past 9.19 it underflows to 0 and WebGPU's subnormals are flushed).
    "Erf": unary(Api("topos.erf"), torch="torch.erf", numpy="scipy.special.erf", spread=(-6.0, 6.0)),
    "Erfc": unary(Api("topos.erfc"), torch="torch.erfc", numpy="scipy.special.erfc", spread=(-3.0, 9.0)),
    # lgamma and digamma have poles at 0 and the negative integers: drawn positive, and negative
    # between the poles by their examples; the spread reaches from near 0 to where lgamma is large.
    "Lgamma": unary(
        Api("topos.lgamma"),
        GAMMA_ARGUMENT,
        torch="torch.lgamma",
        numpy="scipy.special.gammaln",
        spread=(0.01, 100.0),
        examples=SPECIAL_EXAMPLES["Lgamma"],
    ),
    "Digamma": unary(
        Api("topos.digamma"),
        GAMMA_ARGUMENT,
        torch="torch.digamma",
        numpy="scipy.special.digamma",
        spread=(0.01, 100.0),
        examples=SPECIAL_EXAMPLES["Digamma"],
    ),
    "Polygamma": OpSpec((GAMMA_ARGUMENT,), docs=Api("topos.polygamma"), examples=SPECIAL_EXAMPLES["Polygamma"]),
    "Maximum": binary(Api("topos.maximum"), notes=(TIES,), ties=True, torch="torch.maximum"),
    "Minimum": binary(Api("topos.minimum"), notes=(TIES,), ties=True, torch="torch.minimum"),
    "Less": binary(Api("topos.less"), ties=True, torch="torch.lt"),
    "LessEqual": binary(Api("topos.less_equal"), ties=True, torch="torch.le"),
    "Greater": binary(Api("topos.greater"), ties=True, torch="torch.gt"),
    "GreaterEqual": binary(Api("topos.greater_equal"), ties=True, torch="torch.ge"),
    "Equal": binary(Api("topos.equal"), ties=True, torch="torch.eq"),
    "NotEqual": binary(Api("topos.not_equal"), ties=True, torch="torch.ne"),
    "Where": OpSpec((REAL, REAL, REAL), docs=Api("topos.where"), examples=WHERE_EXAMPLES),
    "Take": OpSpec((REAL, INDEX), docs=Api("topos.take"), examples=TAKE_EXAMPLES),
    "ScatterAdd": OpSpec(
        (REAL, INDEX),
        internal=DERIVATIVE_ONLY.format("take"),
        examples=(
            Example(
                "scatter_add",
                [(2, 5, 3), Index(4, (5,))],
                dict(axis=1, extent=4),
                topos=lambda tape, u, ids, **a: tape.apply("ScatterAdd", [u, ids], **a),
                torch=lambda u, ids, axis, extent: u.new_zeros(
                    u.shape[:axis] + (extent,) + u.shape[axis + 1 :]
                ).index_add(axis, ids, u),
            ),
        ),
    ),
    "OneHot": OpSpec(
        (INDEX,),
        dtypes=("int32",),
        docs=Api("topos.one_hot"),
        examples=(
            Example(
                "one_hot",
                [Index(4, (2, 3))],
                dict(n=4),
                topos=lambda tape, ids, n: topos_function("one_hot")(ids, n),
                torch=lambda ids, n: torch.nn.functional.one_hot(ids, n).to(torch.get_default_dtype()),
                numpy=lambda ids, n: np.eye(n)[ids],
            ),
        ),
    ),
    "MatMul": OpSpec((REAL, REAL), shapes=ROWS, docs=Api("topos.matmul"), examples=MATMUL_EXAMPLES),
    "Sum": unary(Api("topos.sum"), examples=SUM_EXAMPLES),
    "Max": unary(
        Api("topos.max"),
        notes=("the gradient check draws distinct values: a tie splits the gradient",),
        examples=MAX_EXAMPLES,
    ),
    "SoftmaxGrad": OpSpec(
        (REAL, REAL),
        shapes=ROWS,
        internal=DERIVATIVE_ONLY.format("softmax"),
        examples=(DERIVATIVE_EXAMPLES["SoftmaxGrad"],),
    ),
    "LogSoftmaxGrad": OpSpec(
        (REAL, REAL),
        shapes=ROWS,
        internal=DERIVATIVE_ONLY.format("log_softmax"),
        examples=(DERIVATIVE_EXAMPLES["LogSoftmaxGrad"],),
    ),
    "LayerNormGrad": OpSpec(
        (REAL, REAL, POSITIVE),
        shapes=ROWS,
        internal=DERIVATIVE_ONLY.format("layer_norm"),
        examples=(DERIVATIVE_EXAMPLES["LayerNormGrad"],),
    ),
    "Reshape": unary(Api("topos.reshape"), examples=RESHAPE_EXAMPLES),
    "Broadcast": unary(Api("topos.broadcast_to"), examples=BROADCAST_EXAMPLES),
    "Transpose": unary(Api("topos.transpose"), examples=TRANSPOSE_EXAMPLES),
    "Slice": unary(INDEXING, shapes=ROWS, examples=SLICE_EXAMPLES),
    "Pad": unary(
        None,
        shapes=ROWS,
        internal=DERIVATIVE_ONLY.format("a strided slice"),
        examples=PAD_EXAMPLES,
    ),
    "Concatenate": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.concatenate"),
        examples=CONCATENATE_EXAMPLES,
    ),
    "Scan": OpSpec(
        (REAL, REAL),
        docs=Guide("transformations.md", "`topos.scan(f, init, xs"),
        kernel_declined="a loop's body runs on the host: no WGSL loop repeats a body's launches yet",
        notes=("variadic: the carries, the xs, the captured values; one example row",),
        examples=SCAN_EXAMPLES,
    ),
    "CustomVjp": OpSpec(
        (REAL,),
        docs=Guide("transformations.md", "`topos.custom_vjp`"),
        notes=("variadic: out, the arguments, the residuals, the backward's captured values; one example row",),
        examples=CUSTOM_VJP_EXAMPLES,
    ),
    "Cond": OpSpec(
        (REAL, REAL),
        docs=Guide("transformations.md", "`topos.cond(pred, true_fun, false_fun"),
        kernel_declined="a branch runs on the host: no WGSL kernel chooses between two bodies' launches yet",
        notes=("variadic: the predicate, the operands, each branch's captured values; one example row",),
        examples=COND_EXAMPLES,
    ),
    "While": OpSpec(
        (REAL, REAL),
        docs=Guide("transformations.md", "`topos.while_loop(cond_fun, body_fun, init_val"),
        kernel_declined="a loop's body runs on the host: no WGSL loop repeats a body's launches yet",
        notes=("variadic: the carries, each body's captured values; one example row",),
        examples=WHILE_EXAMPLES,
    ),
    "Parameter": OpSpec((), docs=Api("Tape.parameter"), kernel_declined=SOURCE),
    "Input": OpSpec((), docs=Api("Tape.input"), kernel_declined=SOURCE),
    "Leaf": OpSpec((), docs=Api("Tape.leaf"), kernel_declined=SOURCE),
    "ArgMax": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.argmax"),
        notes=("int32 indices, no derivative",),
        examples=ARGMAX_EXAMPLES,
    ),
    "ArgMin": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.argmin"),
        notes=("int32 indices, no derivative",),
        examples=ARGMIN_EXAMPLES,
    ),
    "CumSum": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.cumsum"), examples=CUMSUM_EXAMPLES),
    "Prod": unary(Api("topos.prod"), examples=PROD_EXAMPLES),
    "CumProd": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.cumprod"), examples=CUMPROD_EXAMPLES),
    "CumMax": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.cummax"),
        notes=("the gradient check draws distinct values: a tie splits the gradient",),
        examples=CUMMAX_EXAMPLES,
    ),
    "CumMin": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.cummin"),
        notes=("the gradient check draws distinct values: a tie splits the gradient",),
        examples=CUMMIN_EXAMPLES,
    ),
    "LogCumSumExp": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.logcumsumexp"),
        examples=LOGCUMSUMEXP_EXAMPLES,
    ),
    "TopK": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.top_k"),
        notes=("int32 indices, no derivative",),
        examples=TOP_K_EXAMPLES,
    ),
    "Sort": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.sort"), examples=SORT_EXAMPLES),
    "Argsort": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.argsort"),
        notes=("int32 indices, no derivative",),
        examples=ARGSORT_EXAMPLES,
    ),
    "TakeAlongAxis": OpSpec((REAL, INDEX), docs=Api("topos.take_along_axis"), examples=TAKE_ALONG_EXAMPLES),
    "ScatterAddAlongAxis": OpSpec(
        (REAL, INDEX),
        internal=DERIVATIVE_ONLY.format("take_along_axis and sort"),
        examples=SCATTER_ALONG_EXAMPLES,
    ),
    "SearchSorted": OpSpec(
        (REAL, REAL),
        docs=Api("topos.searchsorted"),
        notes=("int32 counts, no derivative",),
        examples=SEARCHSORTED_EXAMPLES,
    ),
    "IndexToFloat": OpSpec(
        (INDEX,),
        dtypes=("int32",),
        docs=Api("topos.equal"),
        notes=("int32 operands of equal",),
        examples=INDEX_TO_FLOAT_EXAMPLES,
    ),
    "Convolution": OpSpec(
        (REAL, REAL),
        shapes=ShapeRange(min_rank=3, max_rank=5),
        docs=Api("topos.conv"),
        examples=CONVOLUTION_EXAMPLES,
    ),
    # The transforms take complex values as real/imaginary pairs, a trailing axis of 2 (topos.ops.fft).
    "Fft": OpSpec(
        (REAL,),
        shapes=ShapeRange(min_rank=2),
        docs=Api("topos.fft.fft"),
        examples=FFT_EXAMPLES,
    ),
    "Rfft": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.fft.rfft"), examples=RFFT_EXAMPLES),
    "Irfft": OpSpec(
        (REAL,),
        shapes=ShapeRange(min_rank=2),
        docs=Api("topos.fft.irfft"),
        examples=IRFFT_EXAMPLES,
    ),
    # The factorisations (topos.linalg): their examples make a well-conditioned operand of a real draw.
    "Cholesky": unary(
        Api("topos.linalg.cholesky"),
        shapes=MATRICES,
        notes=("a matrix that is not positive definite gives NaNs, as JAX's",),
        examples=CHOLESKY_EXAMPLES,
    ),
    "TriangularSolve": binary(
        Api("topos.linalg.triangular_solve"),
        shapes=MATRICES,
        notes=("a zero on the diagonal gives infinities or NaNs, no error",),
        examples=TRIANGULAR_SOLVE_EXAMPLES,
    ),
    "Lu": unary(
        Api("topos.linalg.lu"),
        shapes=MATRICES,
        kernel_declined=FACTOR_DECLINED,
        notes=("a singular matrix factors without error, as LAPACK's; p has no derivative",),
        examples=LU_EXAMPLES,
    ),
    "Reverse": unary(
        None,
        shapes=ROWS,
        internal=DERIVATIVE_ONLY.format("conv (its kernel, spatially reversed)"),
        examples=(
            Example(
                "reverse",
                [(2, 3, 4)],
                dict(axes=(0, 2)),
                topos=lambda tape, x, axes: tape.apply("Reverse", [x], axes=axes),
                torch=lambda x, axes: torch.flip(x, axes),
                numpy=lambda x, axes: np.flip(x, axes),
            ),
        ),
    ),
    "Cos": unary(Api("topos.cos"), torch="torch.cos", spread=(-3.0, 3.0)),
    "Sin": unary(Api("topos.sin"), torch="torch.sin", spread=(-3.0, 3.0)),
    # topos.ops.elementwise_more: each spread reaches float32's ends (expm1 and sinh overflow past
    # 88.7 and 89.4, tan's poles), and SPELLINGS places values where digits are easily lost.
    "Log1p": unary(
        Api("topos.log1p"),
        ABOVE_MINUS_ONE,
        torch="torch.log1p",
        numpy="numpy.log1p",
        spread=(-0.99, 40.0),
    ),
    "Expm1": unary(
        Api("topos.expm1"),
        torch="torch.expm1",
        numpy="numpy.expm1",
        spread=(-30.0, 88.0),
    ),
    "Floor": unary(Api("topos.floor"), torch="torch.floor", numpy="numpy.floor", spread=(-9.0, 9.0)),
    "Ceil": unary(Api("topos.ceil"), torch="torch.ceil", numpy="numpy.ceil", spread=(-9.0, 9.0)),
    "RoundNearestEven": unary(Api("topos.round"), torch="torch.round", numpy="numpy.rint", spread=(-9.0, 9.0)),
    "Trunc": unary(Api("topos.trunc"), torch="torch.trunc", numpy="numpy.trunc", spread=(-9.0, 9.0)),
    "Atan": unary(
        Api("topos.arctan"),
        torch="torch.atan",
        numpy="numpy.arctan",
        spread=(-60.0, 60.0),
    ),
    "Tan": unary(
        Api("topos.tan"),
        smooth=AWAY_FROM_POLES,
        torch="torch.tan",
        numpy="numpy.tan",
        spread=(-60.0, 60.0),
    ),
    "Sinh": unary(Api("topos.sinh"), torch="torch.sinh", numpy="numpy.sinh", spread=(-89.0, 89.0)),
    "Cosh": unary(Api("topos.cosh"), torch="torch.cosh", numpy="numpy.cosh", spread=(-89.0, 89.0)),
    "Asinh": unary(
        Api("topos.arcsinh"),
        torch="torch.asinh",
        numpy="numpy.arcsinh",
        spread=(-60.0, 60.0),
    ),
    "RandomBits": OpSpec(
        (KEY,),
        dtypes=("uint32",),
        docs=Api("topos.random_bits"),
        examples=RANDOM_BITS_EXAMPLES,
    ),
    "SplitKey": OpSpec(
        (KEY,),
        dtypes=("uint32",),
        docs=Api("topos.split_key"),
        examples=SPLIT_KEY_EXAMPLES,
    ),
    "FoldIn": OpSpec((KEY,), dtypes=("uint32",), docs=Api("topos.fold_in"), examples=FOLD_IN_EXAMPLES),
    "Uniform": OpSpec((BITS,), docs=Api("topos.uniform"), examples=UNIFORM_EXAMPLES),
    "RandomInt": OpSpec(
        (BITS,),
        docs=Api("topos.randint"),
        notes=("int32 integers, no derivative",),
        examples=RANDINT_EXAMPLES,
    ),
    "BitField": OpSpec(
        (BITS,),
        docs=Api("topos.permutation"),
        notes=("the 16-bit halves of permutation's sort keys, as floats",),
        examples=PERMUTATION_EXAMPLES,
    ),
    "WindowSum": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.avg_pool"), examples=WINDOW_SUM_EXAMPLES),
    "WindowMax": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.max_pool"),
        notes=("the gradient check draws distinct values: at a tie the first maximum takes the gradient",),
        examples=WINDOW_MAX_EXAMPLES,
    ),
    "SelectAndScatterAdd": OpSpec(
        (REAL, REAL),
        shapes=ROWS,
        internal=DERIVATIVE_ONLY.format("max_pool"),
        examples=SELECT_AND_SCATTER_ADD_EXAMPLES,
    ),
    "SelectAndGather": OpSpec(
        (REAL, REAL),
        shapes=ROWS,
        internal=DERIVATIVE_ONLY.format("max_pool's derivative (a second derivative)"),
        examples=SELECT_AND_GATHER_EXAMPLES,
    ),
    "Eigh": unary(
        Api("topos.linalg.eigh"),
        shapes=ShapeRange(min_rank=2),
        notes=("repeated eigenvalues: a gradient through the eigenvectors is inf or NaN, as JAX's",),
        examples=EIGH_EXAMPLES,
    ),
    "Qr": unary(
        Api("topos.linalg.qr"),
        shapes=ShapeRange(min_rank=2),
        kernel_declined="no Householder QR kernel yet: the interpreter runs the factorisation on the host",
        notes=("m >= n (topos.linalg.qr splits a wide matrix); dependent columns give an inf or NaN gradient",),
        examples=QR_EXAMPLES,
    ),
    "Svd": unary(
        Api("topos.linalg.svd"),
        shapes=ShapeRange(min_rank=2),
        kernel_declined="no Jacobi SVD kernel yet: the interpreter runs the factorisation on the host",
        notes=("repeated singular values: a gradient through u or vh is inf or NaN, as JAX's",),
        examples=SVD_EXAMPLES,
    ),
}

# The elementwise rows' examples, attached here so that each row above stays one line.
OP_SPECS.update({opcode: replace(OP_SPECS[opcode], examples=examples) for opcode, examples in SPELLINGS.items()})


def spec(opcode):
    return OP_SPECS[opcode]


def smooth_sampler(opcode, operand=0):
    """``sample(rng, shape)`` drawing operand ``operand`` of ``opcode`` where a gradient check may."""
    domain = OP_SPECS[opcode].smooth_domains()[operand]
    return lambda rng, shape: domain.sample(rng, shape)


def check_operand(opcode, position, values, smooth=False):
    """``values``, once checked to lie in the domain of operand ``position`` of ``opcode``.

    A test that draws its own spread (wider, to reach float32's edges) calls this, so a draw
    outside the op's domain raises ValueError naming the operand and the domain.
    """
    row = OP_SPECS[opcode]
    domain = (row.smooth_domains() if smooth else row.operands)[position]
    if not domain.admits(values):
        raise ValueError(f"{opcode}'s operand {position} must be {domain.name}: the test drew {np.asarray(values)}")
    return values


def check_operands(opcode, arrays, smooth=False):
    """``arrays``, once each is checked with ``check_operand``."""
    for position, values in enumerate(arrays[: len(OP_SPECS[opcode].operands)]):
        check_operand(opcode, position, values, smooth)
    return arrays


# Plain table rows: the ops a per-op test takes from this table alone ---------------------------


def derived_rows(local, arity=None):
    """The elementwise ops of one or two operands (topos.ops.elementwise's ``Unary`` and
    ``Binary``: the table's rows, the comparisons, Rsqrt, Relu, Pow...) with a recording function
    that a test's ``local`` table (of opcodes) has no entry for, in OP_SPECS order, of ``arity``
    operands (any where None): the test builds each one's case from its row
    (``public_function``, ``torch_function``, ``numpy_oracle``, ``spread_sampler``)."""
    from topos.ops import lookup
    from topos.ops.elementwise import Binary, Unary

    def plain(op):
        row = OP_SPECS[op]
        return isinstance(lookup(op), (Unary, Binary)) and (isinstance(row.docs, Api) or row.call is not None)

    rows = [op for op in OP_SPECS if plain(op) and arity in (None, len(OP_SPECS[op].operands))]
    return [op for op in rows if op not in local]


def derived_unary_rows(local):
    return derived_rows(local, arity=1)


def derived_binary_rows(local):
    return derived_rows(local, arity=2)


def dotted(name):
    """The object a dotted name (``torch.nn.functional.softplus``) names."""
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def public_function(opcode):
    """The recording function its row documents (``Api("topos.softplus")``: ``topos.softplus``),
    or its ``call`` (``topos.model.functions.add``, which ``a + b`` calls)."""
    row = OP_SPECS[opcode]
    return dotted(row.call or row.docs.name)


def recording(opcode):
    """``record(tape, *operands)``: the public function applied to them, the form the case tables take."""
    function = public_function(opcode)
    return lambda tape, *operands: function(*operands)


def public_name(opcode):
    """The recording function's own name (``softplus``; ``add``, which ``a + b`` calls), or None
    where the row has none."""
    row = OP_SPECS[opcode]
    name = row.call or (row.docs.name if isinstance(row.docs, Api) else None)
    return name and name.rpartition(".")[2]


def torch_function(opcode):
    """The torch function its row names (``torch.nn.functional.softplus``)."""
    return dotted(OP_SPECS[opcode].torch)


def numpy_forward(opcode):
    """The op's own numpy forward, as a numpy oracle: float64 in, float64 out (float32 in, float32 out)."""
    from topos.ops import lookup

    return lambda *operands: np.asarray(lookup(opcode).forward([np.asarray(x) for x in operands], {}))


def numpy_oracle(opcode):
    """The numpy function its row names (``numpy.arctan2``), else the op's own forward."""
    row = OP_SPECS[opcode]
    return dotted(row.numpy) if row.numpy else numpy_forward(opcode)


def spread_sampler(opcode, operand=0):
    """``sample(rng, shape)`` of operand ``operand`` over the row's ``spread`` (its domain's draw
    unless given; a binary row's ``spread`` is one range an operand)."""
    row = OP_SPECS[opcode]
    domain = row.operands[operand]
    spread = row.spread if row.spread is None or len(row.operands) == 1 else row.spread[operand]
    low, high = spread or domain.draw
    return lambda rng, shape: domain.sample(rng, shape, low, high)


def op_rng(opcode):
    """A generator of the op's own, seeded by its name: a derived case draws nothing from the
    test's shared stream, so the cases before it keep their values (tests/cases/primitives.json)."""
    return np.random.default_rng(zlib.crc32(opcode.encode()))


# Examples: the calls with shapes and attributes ----------------------------------------------------


def example_rows(local=(), table=None):
    """(key, example) for every example of ``table``'s rows (OP_SPECS and COMPOSITES where None),
    in table order, leaving out the example names in ``local`` (a suite's stated exceptions)."""
    tables = [OP_SPECS, COMPOSITES] if table is None else [table]
    return [
        (key, example)
        for rows in tables
        for key, row in rows.items()
        for example in row.examples
        if example.name not in local
    ]


def example_row(key):
    return OP_SPECS[key] if key in OP_SPECS else COMPOSITES[key]


def example_arrays(key, example):
    """The example's operands: its ``values``, else drawn from its own generator (seeded by its
    name) inside the row's domains (an operand past the row's last takes the last's domain; a real
    operand where the row has an index or a key is any real), ``Index`` and ``Key`` operands as
    they say; a ``values`` entry of None is drawn too."""
    rng = op_rng(example.name)
    domains = example_row(key).operands
    chosen = example.values or (None,) * len(example.shapes)
    arrays = []
    for position, (shape, value) in enumerate(zip(example.shapes, chosen)):
        if value is not None:
            arrays.append(np.asarray(value))
        elif isinstance(shape, Index):
            arrays.append(rng.integers(0, shape.high, shape.shape).astype(np.int32))
        elif isinstance(shape, Key):
            arrays.append(np.array(shape.words, dtype=np.uint32))
        else:
            domain = domains[min(position, len(domains) - 1)]
            # A real operand of an index or key row (the scores its one-hot or its floats multiply).
            domain = REAL if domain.kind in ("index", "words") else domain
            arrays.append(domain.sample(rng, shape) * example.scale)
    return arrays


def recorded(example):
    """``record(tape, *operands)``: the example's topos call with its attributes."""
    return lambda tape, *operands: example.topos(tape, *operands, **example.attrs)


def torch_call(example):
    return lambda *tensors: example.torch(*tensors, **example.attrs)


def numpy_call(example):
    return lambda *arrays: example.numpy(*arrays, **example.attrs)


# Composites: public functions recorded as several primitives, keyed by their name ------------------


def _call(name, shapes, function, torch, numpy=None, values=None, scale=1.0, **attrs):
    """An example of the public function ``topos.<function>`` on its operands."""
    return Example(
        name,
        shapes,
        attrs,
        topos=lambda tape, *xs, **a: topos_function(function)(*xs, **a),
        torch=torch,
        numpy=numpy,
        values=values,
        scale=scale,
    )


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_logsumexp(x, axis=-1, keepdims=False):
    top = x.max(axis=axis, keepdims=True)
    out = np.log(np.exp(x - top).sum(axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis)


def _np_put_along_axis(x, ids, v, axis):
    out = x.copy()
    np.put_along_axis(out, ids, v, axis)
    return out


def _np_add_at(x, ids, u):
    out = x.copy()
    np.add.at(out, ids, u)
    return out


def _np_set_columns(x, ids, u):
    out = x.copy()
    out[:, ids] = u
    return out


def _composite(docs, operands, *examples):
    return OpSpec(operands, docs=Api(f"topos.{docs}"), examples=examples)


COMPOSITES = {
    # The scatters (topos.model.sorting): each index once where a set is compared, repeated where sums are.
    "put_along_axis": _composite(
        "put_along_axis",
        (REAL, INDEX, REAL),
        _call(
            "put_along_axis",
            [(3, 5), Index(5, (3, 2)), (3, 2)],
            "put_along_axis",
            lambda x, ids, v, axis: x.scatter(axis, ids.long(), v),
            lambda x, ids, v, axis: _np_put_along_axis(x, ids, v, axis),
            values=(None, np.array([[4, 0], [2, 1], [3, 2]], dtype=np.int32), None),
            axis=1,
        ),
    ),
    "scatter_add": _composite(
        "scatter_add",
        (REAL, INDEX, REAL),
        _call(
            "scatter_add_embedding",
            [(5, 3), Index(5, (4,)), (4, 3)],
            "scatter_add",
            lambda x, ids, u, axis: x.index_add(axis, ids, u),
            lambda x, ids, u, axis: _np_add_at(x, ids, u),
            values=(None, np.array([3, 0, 3, 3], dtype=np.int32), None),
            axis=0,
        ),
    ),
    "scatter": _composite(
        "scatter",
        (REAL, INDEX, REAL),
        _call(
            "scatter_rows",
            [(4, 5), Index(5, (2,)), (4, 2)],
            "scatter",
            lambda x, ids, u, axis: x.index_copy(axis, ids.long(), u),
            lambda x, ids, u, axis: _np_set_columns(x, ids, u),
            values=(None, np.array([4, 1], dtype=np.int32), None),
            axis=1,
        ),
    ),
    "softmax": _composite(
        "softmax",
        (REAL,),
        _call(
            "softmax",
            [(3, 5)],
            "softmax",
            lambda x: torch.softmax(x, -1),
            _np_softmax,
            scale=3.0,
        ),
        _call(
            "softmax_large",
            [(2, 3)],
            "softmax",
            lambda x: torch.softmax(x, -1),
            _np_softmax,
            values=(np.array([[1000.0, 0.0, -1000.0], [50.0, 51.0, 49.0]]),),
        ),
        _call(
            "softmax_axis0",
            [(3, 5)],
            "softmax",
            lambda x, axis: torch.softmax(x, axis),
            _np_softmax,
            scale=3.0,
            axis=0,
        ),
    ),
    "log_softmax": _composite(
        "log_softmax",
        (REAL,),
        _call(
            "log_softmax",
            [(3, 5)],
            "log_softmax",
            lambda x: torch.log_softmax(x, -1),
            lambda x: x - _np_logsumexp(x, keepdims=True),
            scale=3.0,
        ),
    ),
    "logsumexp": _composite(
        "logsumexp",
        (REAL,),
        _call(
            "logsumexp",
            [(3, 5)],
            "logsumexp",
            lambda x: torch.logsumexp(x, -1),
            _np_logsumexp,
            scale=3.0,
        ),
        _call(
            "logsumexp_keepdims_axis0",
            [(3, 5)],
            "logsumexp",
            lambda x, axis, keepdims: torch.logsumexp(x, axis, keepdim=keepdims),
            _np_logsumexp,
            axis=0,
            keepdims=True,
        ),
    ),
    "layer_norm": _composite(
        "layer_norm",
        (REAL, REAL, REAL),
        _call(
            "layer_norm",
            [(2, 3, 6), (6,), (6,)],
            "layer_norm",
            lambda x, w, b: torch.nn.functional.layer_norm(x, (6,), w, b, eps=1e-5),
            scale=2.0,
        ),
    ),
    "cross_entropy": _composite(
        "cross_entropy",
        (REAL, INDEX),
        _call(
            "cross_entropy_large_logits",
            [(2, 3), Index(3, (2,))],
            "cross_entropy",
            lambda logits, ids: torch.nn.functional.cross_entropy(logits, ids),
            values=(
                np.array([[300.0, -300.0, 0.0], [0.0, 0.0, 700.0]]),
                np.array([1, 2], dtype=np.int32),
            ),
        ),
        _call(
            "cross_entropy",
            [(2, 3, 5), Index(5, (2, 3))],
            "cross_entropy",
            lambda logits, ids: torch.nn.functional.cross_entropy(logits.reshape(-1, 5), ids.reshape(-1)),
            scale=2.0,
        ),
    ),
    "attention": _composite(
        "attention",
        (REAL, REAL, REAL),
        _call(
            "attention_causal",
            [(2, 4, 3), (2, 4, 3), (2, 4, 5)],
            "attention",
            lambda q, k, v, causal: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
            causal=True,
        ),
        _call(
            "attention",
            [(2, 1, 4, 3), (2, 1, 4, 3), (2, 1, 4, 5)],
            "attention",
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
        ),
    ),
    "mean": _composite(
        "mean",
        (REAL,),
        _call("mean", [(3, 4)], "mean", lambda x, axis: x.mean(dim=axis), np.mean, axis=0),
    ),
    "var": _composite(
        "var",
        (REAL,),
        _call(
            "var",
            [(3, 4)],
            "var",
            lambda x, axis: torch.var(x, axis, correction=0),
            np.var,
            axis=-1,
        ),
    ),
    "min": _composite(
        "min",
        (REAL,),
        _call("min", [(3, 4)], "min", lambda x, axis: torch.amin(x, axis), np.min, axis=1),
    ),
    # numpy's truthiness on 0/1 floats (NaN, nonzero, is held by test_nonfinite's specials).
    "any": _composite(
        "any",
        (REAL,),
        _call(
            "any",
            [(3, 4)],
            "any",
            lambda x, axis: torch.any(x, axis).to(x.dtype),
            lambda x, axis: np.any(x, axis=axis).astype(x.dtype),
            values=(ANY_ALL_ROWS,),
            axis=1,
        ),
    ),
    "all": _composite(
        "all",
        (REAL,),
        _call(
            "all",
            [(3, 4)],
            "all",
            lambda x, axis: torch.all(x, axis).to(x.dtype),
            lambda x, axis: np.all(x, axis=axis).astype(x.dtype),
            values=(ANY_ALL_ROWS,),
            axis=1,
        ),
    ),
    "abs": _composite(
        "abs",
        (REAL,),
        _call(
            "abs",
            [(3, 4)],
            "abs",
            lambda x: torch.abs(x),
            np.abs,
            values=(WITH_TIES + 0.5,),
        ),
    ),
    "sign": _composite(
        "sign",
        (REAL,),
        Example(
            "sign_square",
            [(3, 4)],
            {},
            topos=lambda tape, x: topos_function("sign")(x) * topos_function("square")(x),
            torch=lambda x: torch.sign(x) * x * x,
            numpy=lambda x: np.sign(x) * x * x,
            values=(WITH_TIES,),
        ),
    ),
    "squeeze": _composite(
        "squeeze",
        (REAL,),
        Example(
            "squeeze_expand_dims",
            [(3, 1, 4)],
            {},
            topos=lambda tape, x: topos_function("expand_dims")(topos_function("squeeze")(x, 1), -1),
            torch=lambda x: x.squeeze(1).unsqueeze(-1),
            numpy=lambda x: np.expand_dims(np.squeeze(x, 1), -1),
        ),
    ),
    "swapaxes": _composite(
        "swapaxes",
        (REAL,),
        _call(
            "swapaxes",
            [(2, 3, 4)],
            "swapaxes",
            lambda x, a, b: x.transpose(a, b),
            lambda x, a, b: np.swapaxes(x, a, b),
            a=0,
            b=-1,
        ),
    ),
    "dropout": _composite(
        "dropout",
        (REAL, KEY),
        _dropout("dropout", (3, 5), (7, 2026), derived=False),
        _dropout("dropout_split_fold_in", (4, 3), (7, 2026), derived=True),
    ),
    "mse": _composite(
        "mse",
        (REAL, REAL),
        _call(
            "mse",
            [(3, 4), (3, 4)],
            "mse",
            lambda a, b: torch.nn.functional.mse_loss(a, b),
            lambda a, b: np.mean((a - b) ** 2),
        ),
    ),
}


# Composite activations and logical operators (topos.model.activations_more, topos.model.logical) ---
#
# A unary example's [2, 7] and a binary one's [14, 14] against [14, 1] are the shapes that
# test_nonfinite tiles its 14 special values over: each value once, and every pair of them.

SPECIALS_ONCE = [(2, 7)]
SPECIALS_PAIRED = [(14, 14), (14, 1)]
# Truth values at chosen places: zeros of either sign against tiny and ordinary ones, every pair
# of truths. NaN (true, as numpy reads it) is read in test_nonfinite, which tiles its special
# values over these shapes, and in test_logical: here it would be the kernels' error scale.
TRUTHS = (
    np.array([[0.0, -0.0, 2.0, 1e-30], [0.5, 0.0, -3.0, 0.0]]),
    np.array([[0.0, 1.0, 0.0, -0.0], [-1e-30, -0.0, 7.0, -2.0]]),
)
# elu near 0, where exp(x) - 1 would lose x's digits, and out to where exp underflows; selu's
# stay 2e-5 from its kink at 0, which the gradient check's step (1e-6) must not cross (elu's
# slope is 1 on both sides: no kink).
NEAR_ZERO = (np.array([[-1e-12, -3e-9, -2e-6, 1e-9], [-0.03, -1.5, -40.0, -800.0]]),)
NEAR_KINK = (np.array([[-2e-5, -7e-5, -3e-4, 2e-5], [-0.03, -1.5, -40.0, -800.0]]),)


def _np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _np_selu(x):
    return _np_elu(x, SELU_ALPHA) * SELU_SCALE


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _logical(name, torch_name, numpy_function, compared):
    """``topos.<name>`` of two operands, on the truth values above, or (``compared``) on drawn
    values first compared with 0, as a recording spells a condition; torch's and numpy's answers
    are booleans, read as 0/1 floats of the operand's dtype (neither has a gradient)."""
    if compared:
        return Example(
            f"{name}_compared",
            [(3, 4), (4,)],
            {},
            topos=lambda tape, a, b: topos_function(name)(
                topos_function("greater")(a, 0.0), topos_function("less")(b, 0.5)
            ),
            torch=lambda a, b: getattr(torch, torch_name)(a > 0, b < 0.5).to(a.dtype),
            numpy=lambda a, b: numpy_function(a > 0, b < 0.5).astype(a.dtype),
        )
    return Example(
        name,
        [(2, 4), (2, 4)],
        {},
        topos=lambda tape, a, b: topos_function(name)(a, b),
        torch=lambda a, b: getattr(torch, torch_name)(a, b).to(a.dtype),
        numpy=lambda a, b: numpy_function(a, b).astype(a.dtype),
        values=TRUTHS,
    )


COMPOSITES.update(
    {
        "clip": _composite(
            "clip",
            (REAL, REAL, REAL),
            _call(
                "clip",
                SPECIALS_ONCE,
                "clip",
                lambda x, a_min, a_max: torch.clip(x, a_min, a_max),
                lambda x, a_min, a_max: np.clip(x, a_min, a_max),
                a_min=-0.5,
                a_max=0.75,
            ),
            Example(
                "clip_method_upper",
                [(3, 4)],
                {},
                topos=lambda tape, x: x.clip(max=0.25),
                torch=lambda x: x.clamp(max=0.25),
                numpy=lambda x: x.clip(max=0.25),
            ),
            # Bounds of their own, broadcast; where a_min > a_max the result is a_max (both orders).
            _call(
                "clip_value_bounds",
                [(3, 4), (4,), (3, 1)],
                "clip",
                lambda x, lo, hi: torch.clip(x, lo, hi),
                lambda x, lo, hi: np.clip(x, lo, hi),
            ),
        ),
        # numpy's floored remainder on Rem, with the divisor's sign; a quotient under 3 keeps the
        # gradient check away from the integers where it jumps. The operator spells it too.
        "mod": _composite(
            "mod",
            (REAL, NONZERO),
            _call("mod", SPECIALS_PAIRED, "mod", lambda a, b: torch.remainder(a, b), np.mod),
            Example(
                "mod_operator",
                [(3, 4), (4,)],
                {},
                topos=lambda tape, a, b: a % b,
                torch=lambda a, b: a % b,
                numpy=lambda a, b: a % b,
            ),
            Example(
                "remainder_number",
                [(3, 4)],
                {},
                topos=lambda tape, a: topos_function("remainder")(a, -0.75),
                torch=lambda a: torch.remainder(a, -0.75),
                numpy=lambda a: np.remainder(a, -0.75),
            ),
        ),
        "logaddexp": _composite(
            "logaddexp",
            (REAL, REAL),
            _call(
                "logaddexp",
                SPECIALS_PAIRED,
                "logaddexp",
                lambda a, b: torch.logaddexp(a, b),
                np.logaddexp,
                scale=3.0,
            ),
            # Far apart (the tail underflows), far out (exp would overflow) and tied.
            _call(
                "logaddexp_far",
                [(2, 4), (2, 4)],
                "logaddexp",
                lambda a, b: torch.logaddexp(a, b),
                np.logaddexp,
                values=(
                    np.array([[1000.0, -1000.0, 0.0, 30.0], [2.0, -50.0, 1e-3, -700.0]]),
                    np.array([[1000.0, 999.0, -80.0, -20.0], [2.0, -50.0, 4.0, -700.5]]),
                ),
            ),
        ),
        "silu": _composite(
            "silu",
            (REAL,),
            _call(
                "silu",
                SPECIALS_ONCE,
                "silu",
                lambda x: torch.nn.functional.silu(x),
                lambda x: x / (1.0 + np.exp(-x)),
                scale=3.0,
            ),
        ),
        "leaky_relu": _composite(
            "leaky_relu",
            (AWAY_FROM_KINK,),
            _call(
                "leaky_relu",
                SPECIALS_ONCE,
                "leaky_relu",
                lambda x: torch.nn.functional.leaky_relu(x),
                lambda x: np.where(x >= 0, x, 0.01 * x),
            ),
            _call(
                "leaky_relu_slope",
                [(3, 4)],
                "leaky_relu",
                lambda x, negative_slope: torch.nn.functional.leaky_relu(x, negative_slope),
                lambda x, negative_slope: np.where(x >= 0, x, negative_slope * x),
                negative_slope=0.2,
            ),
        ),
        "elu": _composite(
            "elu",
            (AWAY_FROM_KINK,),
            _call(
                "elu",
                SPECIALS_ONCE,
                "elu",
                lambda x: torch.nn.functional.elu(x),
                _np_elu,
                scale=2.0,
            ),
            _call(
                "elu_near_zero",
                [(2, 4)],
                "elu",
                lambda x: torch.nn.functional.elu(x),
                _np_elu,
                values=NEAR_ZERO,
            ),
            _call(
                "elu_alpha",
                [(3, 4)],
                "elu",
                lambda x, alpha: torch.nn.functional.elu(x, alpha),
                _np_elu,
                scale=2.0,
                alpha=0.5,
            ),
        ),
        "selu": _composite(
            "selu",
            (AWAY_FROM_KINK,),
            _call(
                "selu",
                SPECIALS_ONCE,
                "selu",
                lambda x: torch.nn.functional.selu(x),
                _np_selu,
                scale=2.0,
            ),
            _call(
                "selu_near_zero",
                [(2, 4)],
                "selu",
                lambda x: torch.nn.functional.selu(x),
                _np_selu,
                values=NEAR_KINK,
            ),
        ),
        "softsign": _composite(
            "softsign",
            (REAL,),
            _call(
                "softsign",
                SPECIALS_ONCE,
                "softsign",
                lambda x: torch.nn.functional.softsign(x),
                lambda x: x / (1.0 + np.abs(x)),
                scale=3.0,
            ),
        ),
        "hard_tanh": _composite(
            "hard_tanh",
            (REAL,),
            _call(
                "hard_tanh",
                SPECIALS_ONCE,
                "hard_tanh",
                lambda x: torch.nn.functional.hardtanh(x),
                lambda x: np.clip(x, -1, 1),
                scale=2.0,
            ),
        ),
        "logical_not": _composite(
            "logical_not",
            (REAL,),
            _call(
                "logical_not",
                [(2, 4)],
                "logical_not",
                lambda x: torch.logical_not(x).to(x.dtype),
                lambda x: np.logical_not(x).astype(x.dtype),
                values=TRUTHS[:1],
            ),
        ),
        **{
            name: _composite(
                name,
                (REAL, REAL),
                _logical(name, name, numpy_function, compared=False),
                _logical(name, name, numpy_function, compared=True),
            )
            for name, numpy_function in (
                ("logical_and", np.logical_and),
                ("logical_or", np.logical_or),
                ("logical_xor", np.logical_xor),
            )
        },
    }
)


# Array building and shaping (topos.model.building, topos.model.einsum) ----------------------------


def _torch_symmetric(x, before, after):
    """numpy's ``pad(mode="symmetric")`` along the last axis (torch has no such mode): mirrored edges."""
    return torch.cat([x[..., :before].flip(-1), x, x[..., x.shape[-1] - after :].flip(-1)], -1)


def _pad(name, mode, torch_mode, pad_width, shape=(2, 3, 4), **attrs):
    """``topos.pad`` of the last two axes, against torch's ``F.pad`` (its widths last axis first)."""
    (top, bottom), (left, right) = pad_width
    return _call(
        name,
        [shape],
        "pad",
        lambda x, pad_width, mode, constant_values=None: torch.nn.functional.pad(
            x,
            (left, right, top, bottom),
            torch_mode,
            **({} if constant_values is None else {"value": constant_values}),
        ),
        np.pad,
        pad_width=((0, 0),) + pad_width,
        mode=mode,
        **attrs,
    )


def _einsum(name, subscripts, shapes):
    """``topos.einsum(subscripts, ...)`` against ``torch.einsum`` and ``numpy.einsum``."""
    return Example(
        name,
        shapes,
        {"subscripts": subscripts},
        topos=lambda tape, *xs, subscripts: topos_function("einsum")(subscripts, *xs),
        torch=lambda *xs, subscripts: torch.einsum(subscripts, *xs),
        numpy=lambda *xs, subscripts: np.einsum(subscripts, *xs),
    )


def _times_constant(name, shape, constant, torch_constant, numpy_constant):
    """``x * topos.<constant>(tape, ...)``: a leaf the readings show, used by a differentiable operand."""
    return Example(
        name,
        [shape],
        {},
        topos=lambda tape, x: x * constant(tape),
        torch=lambda x: x * torch_constant(),
        numpy=lambda x: x * numpy_constant(),
    )


COMPOSITES.update(
    {
        "einsum": _composite(
            "einsum",
            (REAL, REAL, REAL),
            _einsum("einsum_matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
            _einsum("einsum_implicit", "ij,jk", [(2, 3), (3, 4)]),
            _einsum("einsum_scores", "bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
            _einsum("einsum_ellipsis_broadcast", "...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
            _einsum("einsum_trace", "ii", [(3, 3)]),
            _einsum("einsum_diagonal_outer", "ii,j->ij", [(3, 3), (4,)]),
            _einsum("einsum_chain", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
            _einsum("einsum_sum_transpose", "ijk->kj", [(2, 3, 4)]),
            _einsum("einsum_hadamard_broadcast", "ij,ij->ij", [(1, 3), (2, 3)]),
        ),
        "pad": _composite(
            "pad",
            (REAL,),
            _pad(
                "pad_constant",
                "constant",
                "constant",
                ((1, 2), (0, 3)),
                constant_values=1.5,
            ),
            _pad("pad_reflect", "reflect", "reflect", ((2, 1), (3, 1))),
            _pad("pad_edge", "edge", "replicate", ((2, 0), (1, 3))),
            _pad("pad_wrap", "wrap", "circular", ((1, 2), (3, 2))),
            _call(
                "pad_symmetric",
                [(2, 5)],
                "pad",
                lambda x, pad_width, mode: _torch_symmetric(x, *pad_width[1]),
                np.pad,
                pad_width=((0, 0), (3, 2)),
                mode="symmetric",
            ),
        ),
        "tril": _composite(
            "tril",
            (REAL,),
            _call("tril", [(2, 3, 4)], "tril", lambda x, k: torch.tril(x, k), np.tril, k=1),
        ),
        "triu": _composite(
            "triu",
            (REAL,),
            _call("triu", [(4, 3)], "triu", lambda x, k: torch.triu(x, k), np.triu, k=-1),
        ),
        "eye": _composite(
            "eye",
            (REAL,),
            _times_constant(
                "eye_times",
                (3, 5),
                lambda tape: topos_function("eye")(tape, 3, 5, k=1),
                lambda: torch.ones(3, 5).triu(1).tril(1),
                lambda: np.eye(3, 5, 1),
            ),
        ),
        "arange": _composite(
            "arange",
            (REAL,),
            _times_constant(
                "arange_times",
                (4,),
                lambda tape: topos_function("arange")(tape, 1.0, 3.0, 0.5),
                lambda: torch.arange(1.0, 3.0, 0.5),
                lambda: np.arange(1.0, 3.0, 0.5),
            ),
        ),
        "linspace": _composite(
            "linspace",
            (REAL,),
            _times_constant(
                "linspace_times",
                (7,),
                lambda tape: topos_function("linspace")(tape, -1.0, 2.0, 7),
                lambda: torch.linspace(-1.0, 2.0, 7),
                lambda: np.linspace(-1.0, 2.0, 7),
            ),
        ),
        "tile": _composite(
            "tile",
            (REAL,),
            _call(
                "tile",
                [(2, 3)],
                "tile",
                lambda x, reps: torch.tile(x, reps),
                np.tile,
                reps=(2, 1, 3),
            ),
        ),
        "repeat": _composite(
            "repeat",
            (REAL,),
            _call(
                "repeat",
                [(2, 3)],
                "repeat",
                lambda x, repeats, axis: torch.repeat_interleave(x, repeats, axis),
                np.repeat,
                repeats=2,
                axis=1,
            ),
            _call(
                "repeat_each",
                [(3, 2)],
                "repeat",
                lambda x, repeats, axis: torch.repeat_interleave(x, torch.tensor(repeats), axis),
                np.repeat,
                repeats=[2, 0, 3],
                axis=0,
            ),
            _call(
                "repeat_flat",
                [(2, 3)],
                "repeat",
                lambda x, repeats: x.flatten().repeat_interleave(repeats),
                np.repeat,
                repeats=2,
            ),
        ),
        "roll": _composite(
            "roll",
            (REAL,),
            _call(
                "roll",
                [(3, 4)],
                "roll",
                lambda x, shift, axis: torch.roll(x, shift, axis),
                np.roll,
                shift=(1, -3),
                axis=(0, 1),
            ),
            _call(
                "roll_flat",
                [(3, 4)],
                "roll",
                lambda x, shift: torch.roll(x, shift),
                np.roll,
                shift=5,
            ),
        ),
        "flip": _composite(
            "flip",
            (REAL,),
            _call(
                "flip",
                [(2, 3, 4)],
                "flip",
                lambda x, axis: torch.flip(x, axis),
                np.flip,
                axis=(0, 2),
            ),
        ),
        "diag": _composite(
            "diag",
            (REAL,),
            _call(
                "diag_matrix",
                [(4,)],
                "diag",
                lambda v, k: torch.diag(v, k),
                np.diag,
                k=-1,
            ),
            _call(
                "diag_of_matrix",
                [(3, 5)],
                "diag",
                lambda v, k: torch.diag(v, k),
                np.diag,
                k=1,
            ),
        ),
        "diagonal": _composite(
            "diagonal",
            (REAL,),
            _call(
                "diagonal",
                [(3, 2, 4)],
                "diagonal",
                lambda x, offset, axis1, axis2: torch.diagonal(x, offset, axis1, axis2),
                np.diagonal,
                offset=-1,
                axis1=2,
                axis2=0,
            ),
        ),
        "trace": _composite(
            "trace",
            (REAL,),
            _call(
                "trace",
                [(4, 3)],
                "trace",
                lambda x, offset: torch.diagonal(x, offset).sum(),
                np.trace,
                offset=1,
            ),
        ),
        "outer": _composite(
            "outer",
            (REAL, REAL),
            _call(
                "outer",
                [(2, 2), (3,)],
                "outer",
                lambda a, b: torch.outer(a.flatten(), b),
                np.outer,
            ),
        ),
        "kron": _composite(
            "kron",
            (REAL, REAL),
            _call("kron", [(2, 3), (2, 1, 2)], "kron", torch.kron, np.kron),
        ),
    }
)

# arcsin and arccos (topos.model.elementwise_more): composites of Atan2 and Sqrt, drawn inside
# (-1, 1), then next to its ends, where 1 - x^2 would round.
COMPOSITES.update(
    {
        "arcsin": _composite(
            "arcsin",
            (UNIT_INTERVAL,),
            _call("arcsin", [(3, 4)], "arcsin", lambda x: torch.asin(x), np.arcsin),
            _call(
                "arcsin_near_ends",
                [(7,)],
                "arcsin",
                lambda x: torch.asin(x),
                np.arcsin,
                values=(np.array([-0.999, -0.99, -1e-8, 0.0, 0.5, 0.99, 0.999]),),
            ),
        ),
        "arccos": _composite(
            "arccos",
            (UNIT_INTERVAL,),
            _call("arccos", [(3, 4)], "arccos", lambda x: torch.acos(x), np.arccos),
            _call(
                "arccos_near_ends",
                [(7,)],
                "arccos",
                lambda x: torch.acos(x),
                np.arccos,
                values=(np.array([-0.999, -0.99, -1e-8, 0.0, 0.5, 0.99, 0.999]),),
            ),
        ),
    }
)

# jax.random's other draws (topos.model.sampling, topos.normal), each times x so that every suite
# sees a float result with a gradient (the draws themselves have none): float32 is jax.random's own
# draw for the key; float64 maps topos's 32-bit uniforms the same way (topos.uniform's documented
# rule, jax's float64 draws take 64 bits), computed here with scipy's erf, erfinv and numpy's log.


def _uniform_on(key, shape, dtype, low, high):
    """topos.uniform(key, shape, dtype, low, high): its [0, 1) floats times the span, plus low."""
    floats = _jax_uniform(key, shape, dtype)
    start = np.asarray(low, dtype=dtype)
    return floats * (np.asarray(high, dtype=dtype) - start) + start


def _jax_normal(key, shape, dtype):
    if dtype == "float32":
        return np.asarray(importlib.import_module("jax").random.normal(key, tuple(shape), dtype=np.float32))
    u = _uniform_on(key, shape, dtype, np.nextafter(-1.0, 0.0), 1.0)
    return np.sqrt(2.0) * importlib.import_module("scipy.special").erfinv(u)


def _jax_truncated_normal(key, lower, upper, shape, dtype):
    if dtype == "float32":
        jax = importlib.import_module("jax")
        return np.asarray(jax.random.truncated_normal(key, lower, upper, tuple(shape), dtype=np.float32))
    special = importlib.import_module("scipy.special")
    a, b = special.erf(np.array([lower, upper]) / np.sqrt(2.0))
    z = np.sqrt(2.0) * special.erfinv(_jax_uniform(key, shape, dtype) * (b - a) + a)
    return np.clip(z, np.nextafter(lower, np.inf), np.nextafter(upper, -np.inf))


def _jax_categorical(key, logits):
    """Gumbel-max over the last axis: jax.random.categorical's indices (float64: topos's gumbel)."""
    if logits.dtype == np.float32:
        return np.asarray(importlib.import_module("jax").random.categorical(key, logits, axis=-1))
    u = _uniform_on(key, logits.shape, "float64", np.finfo(np.float64).tiny, 1.0)
    return np.argmax(-np.log(-np.log(u)) + logits, axis=-1)


def _times_drawn(name, shape, words, topos_draw, draw):
    """x times ``draw(jax key, x's shape, dtype)``, recorded as x times ``topos_draw(key, shape, dtype)``."""

    def drawn(key, x_shape, dtype):
        return draw(_jax_key(key), x_shape, dtype)

    return Example(
        name,
        [shape, Key(words)],
        {},
        topos=lambda tape, x, key: x * topos_draw(key, x.shape, tape.dtype),
        torch=lambda x, key: x * torch.tensor(drawn(key.numpy(), x.shape, str(x.dtype).rpartition(".")[2])),
        numpy=lambda x, key: x * drawn(key, x.shape, x.dtype.name).astype(x.dtype),
    )


def _one_hot_drawn(name, shape, words, topos_indices, indices):
    """x times the one-hot rows (of x's last extent) of indices drawn from x itself or from the key alone."""
    n = shape[-1]
    return Example(
        name,
        [shape, Key(words)],
        {},
        topos=lambda tape, x, key: x * topos_function("one_hot")(topos_indices(key, x), n),
        torch=lambda x, key: (
            x * torch.tensor(np.eye(n)[indices(_jax_key(key.numpy()), x.detach().numpy())]).to(x.dtype)
        ),
        numpy=lambda x, key: x * np.eye(n, dtype=x.dtype)[indices(_jax_key(key), x)],
    )


COMPOSITES.update(
    {
        "normal": _composite(
            "normal",
            (REAL, KEY),
            _times_drawn("normal", (3, 5), (0, 42), lambda k, s, d: topos_function("normal")(k, s, d), _jax_normal),
        ),
        "truncated_normal": _composite(
            "truncated_normal",
            (REAL, KEY),
            _times_drawn(
                "truncated_normal",
                (4, 3),
                (7, 2026),
                lambda k, s, d: topos_function("truncated_normal")(k, -1.5, 0.5, s, d),
                lambda k, s, d: _jax_truncated_normal(k, -1.5, 0.5, s, d),
            ),
        ),
        # The logits are x itself: its gradient is the one-hot rows, none flows through the draw.
        "categorical": _composite(
            "categorical",
            (REAL, KEY),
            _one_hot_drawn(
                "categorical",
                (4, 6),
                (1, 2),
                lambda key, x: topos_function("categorical")(key, x),
                lambda key, x: _jax_categorical(key, np.asarray(x)),
            ),
        ),
        # Without replacement: the first k of jax.random.permutation(key, n), distinct rows.
        "choice": _composite(
            "choice",
            (REAL, KEY),
            _one_hot_drawn(
                "choice_without_replacement",
                (3, 8),
                (0x13198A2E, 0x03707344),
                lambda key, x: topos_function("choice")(key, 8, (3,), replace=False),
                lambda key, x: np.asarray(importlib.import_module("jax").random.choice(key, 8, (3,), replace=False)),
            ),
        ),
    }
)
