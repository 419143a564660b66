"""One table of what the per-op tests know about each primitive (JAX's ``LaxGradTestSpec``).

Each registered primitive has one row: the domain of each operand (where the op is defined,
and where it is smooth enough for a gradient check), its dtypes, the shapes the property tests
draw, where its documentation names it, why WebGPU declines it where it has no kernel family,
and its spellings elsewhere (torch, numpy, the recording function an operator calls), whether
it decides ties, and the wide range that reaches float32's edges. The six per-op suites
(test_gradcheck, test_stablehlo, test_torch_ops, test_kernels, test_nonfinite,
test_random_programs) and tests/cases/generate.py take every elementwise op of one or two
operands from its row (``derived_rows``), keeping local cases only for what a row cannot say
(shapes and attributes, index operands, a method's spelling, values at chosen places), each
with its reason; the cases they draw themselves are checked against it with
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
is a tuple, or ``Index(high, shape)`` for int32 indices below ``high``; operands are drawn
from the row's domains (``scale`` widens a real draw), or ``values`` gives them at chosen
places (ties, huge logits). The example's name is its test id in every suite that runs it
(``example_rows``), so one example added to a row runs in each. Composites (softmax,
layer_norm, attention...), which are no primitive, have rows of the same form in
``COMPOSITES``, keyed by their public name.
"""

import importlib
import zlib
from dataclasses import dataclass, field

import numpy as np

FLOATS = ("float32", "float64")

# How close each oracle must come, by dtype (torch's: tolerances.library_bound).
XLA_TOLERANCE = {"float64": 1e-12, "float32": 1e-5}
# The central difference's step in the gradient checks (float64).
GRADCHECK_EPS = 1e-6


@dataclass(frozen=True)
class Domain:
    """Where one operand's values may lie.

    ``kind`` is one of "real", "positive", "nonnegative", "nonzero" (either sign, kept away
    from 0), "index" (int32 values in range, which the op itself checks) and "words" (uint32: a
    random key or random bits, any words). ``draw`` is the
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

OP_SPECS = {
    "Neg": unary(OPERATORS, call="topos.model.functions.neg", torch="torch.neg", spread=(-9.0, 9.0)),
    "Exp": unary(Api("topos.exp"), torch="torch.exp", spread=(-20.0, 20.0)),
    "Log": unary(Api("topos.log"), POSITIVE, torch="torch.log"),
    "Sqrt": unary(Api("topos.sqrt"), NONNEGATIVE, smooth=POSITIVE, torch="torch.sqrt", spread=(0.0, 100.0)),
    "Rsqrt": unary(Api("topos.rsqrt"), POSITIVE, torch="torch.rsqrt"),
    "Tanh": unary(Api("topos.tanh"), smooth=WIDE, torch="torch.tanh", spread=(-9.0, 9.0)),
    "Sigmoid": unary(Api("topos.sigmoid"), smooth=WIDE, torch="torch.sigmoid", spread=(-30.0, 30.0)),
    "Relu": unary(Api("topos.relu"), smooth=AWAY_FROM_KINK, torch="torch.relu"),
    # The spread reaches float32's tail (exp(-|x|) under 2^-24 below -16.6) and stops short of
    # 20, past which torch's softplus returns x itself (its threshold), 2e-9 away in float64.
    "Softplus": unary(Api("topos.softplus"), torch="torch.nn.functional.softplus", spread=(-30.0, 18.0)),
    "Gelu": unary(Api("topos.gelu"), smooth=WIDE, spread=(-9.0, 9.0)),
    "GeluGrad": binary(None, internal=DERIVATIVE_ONLY.format("gelu")),
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
    "Atan2": binary(Api("topos.atan2"), smooth=(NONZERO, REAL), torch="torch.atan2", numpy="numpy.arctan2"),
    "Maximum": binary(Api("topos.maximum"), notes=(TIES,), ties=True, torch="torch.maximum"),
    "Minimum": binary(Api("topos.minimum"), notes=(TIES,), ties=True, torch="torch.minimum"),
    "Less": binary(Api("topos.less"), ties=True, torch="torch.lt"),
    "LessEqual": binary(Api("topos.less_equal"), ties=True, torch="torch.le"),
    "Greater": binary(Api("topos.greater"), ties=True, torch="torch.gt"),
    "GreaterEqual": binary(Api("topos.greater_equal"), ties=True, torch="torch.ge"),
    "Equal": binary(Api("topos.equal"), ties=True, torch="torch.eq"),
    "NotEqual": binary(Api("topos.not_equal"), ties=True, torch="torch.ne"),
    "Where": OpSpec((REAL, REAL, REAL), docs=Api("topos.where")),
    "Take": OpSpec((REAL, INDEX), docs=Api("topos.take")),
    "ScatterAdd": OpSpec((REAL, INDEX), internal=DERIVATIVE_ONLY.format("take")),
    "OneHot": OpSpec((INDEX,), dtypes=("int32",), docs=Api("topos.one_hot")),
    "MatMul": OpSpec((REAL, REAL), shapes=ROWS, docs=Api("topos.matmul")),
    "Sum": unary(Api("topos.sum")),
    "Max": unary(Api("topos.max"), notes=("the gradient check draws distinct values: a tie splits the gradient",)),
    "SoftmaxGrad": OpSpec((REAL, REAL), shapes=ROWS, internal=DERIVATIVE_ONLY.format("softmax")),
    "LogSoftmaxGrad": OpSpec((REAL, REAL), shapes=ROWS, internal=DERIVATIVE_ONLY.format("log_softmax")),
    "LayerNormGrad": OpSpec((REAL, REAL, POSITIVE), shapes=ROWS, internal=DERIVATIVE_ONLY.format("layer_norm")),
    "Reshape": unary(Api("topos.reshape")),
    "Broadcast": unary(Api("topos.broadcast_to")),
    "Transpose": unary(Api("topos.transpose")),
    "Slice": unary(INDEXING, shapes=ROWS),
    "Pad": unary(None, shapes=ROWS, internal=DERIVATIVE_ONLY.format("a strided slice")),
    "Concatenate": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.concatenate")),
    "Parameter": OpSpec((), docs=Api("Tape.parameter"), kernel_declined=SOURCE),
    "Input": OpSpec((), docs=Api("Tape.input"), kernel_declined=SOURCE),
    "Leaf": OpSpec((), docs=Api("Tape.leaf"), kernel_declined=SOURCE),
    "ArgMax": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.argmax"), notes=("int32 indices, no derivative",)),
    "ArgMin": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.argmin"), notes=("int32 indices, no derivative",)),
    "CumSum": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.cumsum")),
    "TopK": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.top_k"), notes=("int32 indices, no derivative",)),
    "IndexToFloat": OpSpec((INDEX,), dtypes=("int32",), docs=Api("topos.equal"), notes=("int32 operands of equal",)),
    "Convolution": OpSpec((REAL, REAL), shapes=ShapeRange(min_rank=3, max_rank=5), docs=Api("topos.conv")),
    "Reverse": unary(None, shapes=ROWS, internal=DERIVATIVE_ONLY.format("conv (its kernel, spatially reversed)")),
    "Cos": unary(Api("topos.cos"), torch="torch.cos", spread=(-3.0, 3.0)),
    "Sin": unary(Api("topos.sin"), torch="torch.sin", spread=(-3.0, 3.0)),
    "RandomBits": OpSpec((KEY,), dtypes=("uint32",), docs=Api("topos.random_bits")),
    "SplitKey": OpSpec((KEY,), dtypes=("uint32",), docs=Api("topos.split_key")),
    "FoldIn": OpSpec((KEY,), dtypes=("uint32",), docs=Api("topos.fold_in")),
    "Uniform": OpSpec((BITS,), docs=Api("topos.uniform")),
    "WindowSum": OpSpec((REAL,), shapes=ROWS, docs=Api("topos.avg_pool")),
    "WindowMax": OpSpec(
        (REAL,),
        shapes=ROWS,
        docs=Api("topos.max_pool"),
        notes=("the gradient check draws distinct values: at a tie the first maximum takes the gradient",),
    ),
    "SelectAndScatterAdd": OpSpec((REAL, REAL), shapes=ROWS, internal=DERIVATIVE_ONLY.format("max_pool")),
    "SelectAndGather": OpSpec(
        (REAL, REAL), shapes=ROWS, internal=DERIVATIVE_ONLY.format("max_pool's derivative (a second derivative)")
    ),
}


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
    name) inside the row's domains (an operand past the row's last takes the last's domain)."""
    if example.values is not None:
        return [np.asarray(v) for v in example.values]
    rng = op_rng(example.name)
    domains = example_row(key).operands
    arrays = []
    for position, shape in enumerate(example.shapes):
        if isinstance(shape, Index):
            arrays.append(rng.integers(0, shape.high, shape.shape).astype(np.int32))
        else:
            arrays.append(domains[min(position, len(domains) - 1)].sample(rng, shape) * example.scale)
    return arrays


def recorded(example):
    """``record(tape, *operands)``: the example's topos call with its attributes."""
    return lambda tape, *operands: example.topos(tape, *operands, **example.attrs)


def torch_call(example):
    return lambda *tensors: example.torch(*tensors, **example.attrs)


def numpy_call(example):
    return lambda *arrays: example.numpy(*arrays, **example.attrs)


COMPOSITES = {}
