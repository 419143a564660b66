"""Random well-shaped programs through the whole compiler, held to XLA.

A hypothesis strategy records programs of 1 to 40 primitives on a tape of
either dtype: each step draws an opcode and operands among the values recorded
so far (or fresh parameters, leaves and int32 inputs of fitting shapes). The
builder evaluates each new node with numpy as it goes, so it can keep every
operation inside its domain (tests/python/op_specs.py): positive arguments for log, sqrt, rsqrt and pow,
bounded ones for exp, denominators away from zero, and comparisons, maxima and
relu away from ties and kinks (where XLA's and numpy's last-bit differences
could flip a branch). An operation whose operands do not qualify is replaced by
``Tanh``, which is always safe.

Every program is lowered forward+backward (the gradient of a weighted sum of
its unread values with respect to every parameter); the StableHLO is compiled
and executed by XLA and agrees with the numpy interpreter (1e-12 / 1e-5); the
graph gradients equal ``Run.backward``'s bit for bit; and the interpreter's
measured peak equals the plan's.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_specs import (
    COMPOSITES,
    OP_SPECS,
    derived_binary_rows,
    derived_unary_rows,
    example_arrays,
    example_row,
    example_rows,
    recorded,
)
from test_kernels_plans import float64_shadow
from test_stablehlo import TOLERANCE, assert_outputs_agree

from topos import Tape, Value, detach
from topos.ops import lookup
from topos.xla import run_plan

EXAMPLES = 300
MAX_ELEMENTS = 96
GAP = 1e-4  # how far apart compared values must be (relative), so no backend's rounding flips a branch
# How far inside the edge of its smooth domain (tests/python/op_specs.py) an operand is kept.
DOMAIN_MARGINS = {"Relu": GAP, "Div": 0.2, "Pow": 0.2}
DEFAULT_DOMAIN_MARGIN = 0.1


def inside_domain(opcode, position, values):
    """Whether ``values`` may be operand ``position`` of ``opcode``: inside its smooth domain, by a margin."""
    domain = OP_SPECS[opcode].smooth_domains()[position]
    return domain.admits(values, margin=DOMAIN_MARGINS.get(opcode, DEFAULT_DOMAIN_MARGIN))


def assert_xla_agrees(plan, parameters, numpy_outputs, xla_outputs, dtype, what):
    """XLA's outputs agree with numpy's: within the dtype's tolerance in float64; in float32, judged with numpy
    against the plan evaluated in float64 from the same sources.

    A float32 gradient whose terms nearly cancel keeps rounding noise that two evaluation orders (numpy's on
    this CPU, XLA's) do not share, and that can exceed the plain tolerance on one CPU and not another. So XLA
    may be off from the float64 values by the tolerance, or by a few times numpy's own error, whichever is larger.
    """
    if dtype == "float64":
        assert_outputs_agree(numpy_outputs, xla_outputs, dtype, what)
        return
    exact = float64_shadow(plan, parameters, {})
    overall = max((float(np.max(np.abs(w), initial=0.0)) for w in exact), default=0.0)
    noise = np.sqrt(np.finfo(dtype).eps) * overall
    for position, (want, mine, theirs) in enumerate(zip(exact, numpy_outputs, xla_outputs)):
        want, mine, theirs = (np.asarray(v, dtype=np.float64) for v in (want, mine, theirs))
        assert theirs.shape == want.shape, (what, position, theirs.shape, want.shape)
        scale = float(np.max(np.abs(want), initial=0.0))
        if scale < noise:
            scale = overall
        error = float(np.max(np.abs(theirs - want), initial=0.0))
        numpy_error = float(np.max(np.abs(mine - want), initial=0.0))
        assert error <= max(TOLERANCE[dtype] * scale, 8.0 * numpy_error), (
            f"{what} result {position}: XLA is off by {error:.3g} at scale {scale:.3g}; numpy by {numpy_error:.3g}"
        )


def execute_plan(plan, parameters, optimize=True):
    """The plan's outputs from the "xla" backend (``optimize=False``: XLA's fast, unoptimized compile)."""
    return run_plan(plan, parameters, optimize=optimize).outputs()


# Every elementwise op, from its op_specs row: a comparison (no derivative) may also be a Where's condition.
UNARY = derived_unary_rows(())
COMPARISONS = [opcode for opcode in derived_binary_rows(()) if not lookup(opcode).differentiable]
BINARY = [opcode for opcode in derived_binary_rows(()) if opcode not in COMPARISONS]
STRUCTURAL = [
    "Sum",
    "Max",
    "MatMul",
    "Reshape",
    "Broadcast",
    "Transpose",
    "Slice",
    "Pad",
    "Concatenate",
    "Take",
    "ScatterAdd",
    "OneHot",
    "Where",
    "CumSum",
    "ArgMax",
    "ArgMin",
    "TopK",
    "WindowSum",
    "WindowMax",
]
# The structural ops above draw their attributes to fit the value at hand, so they stay local;
# besides them, a step may record any op_specs example (a reduction, shape op or composite at its
# shapes and attributes) that has a numpy spelling, which gives the builder its value.
ROW_EXAMPLES = [(key, example) for key, example in example_rows() if example.numpy is not None]
# Not drawn into the many-op programs (each still runs alone below): lgamma, digamma and polygamma
# are accurate in float32 to tens of u of |f| + |x f'| (their Lanczos and series forms; test_special
# holds them to that on numpy, XLA and WebGPU), not of |f|, so next to a root a value or a
# gradient through them is off by more than this suite's 1e-5 of its scale, on XLA as on numpy.
ROOT_RELATIVE = {"Lgamma", "Digamma", "Polygamma"}
ROW_EXAMPLES = [(key, example) for key, example in ROW_EXAMPLES if key not in ROOT_RELATIVE]
OPCODES = [opcode for opcode in UNARY if opcode not in ROOT_RELATIVE] + BINARY + COMPARISONS + STRUCTURAL + ["example"]


class ProgramBuilder:
    """Records a random program, keeping numpy values of every node to choose safe operations."""

    def __init__(self, draw, dtype, seed):
        self.draw = draw
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)
        self.tape = Tape(dtype)
        self.values = {}  # node index -> numpy value
        self.read = set()  # node indices that some node reads
        self.rejected = set()  # nodes recorded with values out of bounds, left unread

    # Sources ---------------------------------------------------------------
    def payload(self, shape, low=-1.5, high=1.5):
        return self.rng.uniform(low, high, shape)

    def parameter(self, shape):
        return self._source(self.tape.parameter(self.payload(shape)))

    def leaf(self, array):
        return self._source(self.tape.leaf(array))

    def indices(self, shape, extent):
        return self._source(self.tape.input(self.rng.integers(0, extent, shape), dtype="int32"))

    def _source(self, value):
        self.values[value.index] = value.node.payload
        return value.index

    # Recording -----------------------------------------------------------------
    def apply(self, opcode, operands, **attrs):
        value = self.tape.apply(opcode, [self.value_of(i) for i in operands], **attrs)
        node = value.node
        with np.errstate(all="ignore"):
            self.values[value.index] = lookup(opcode).forward([self.values[i] for i in operands], node.attrs)
        self.read.update(operands)
        return value.index

    def value_of(self, index):
        return Value(self.tape, index)

    def opcode(self, index):
        return self.value_of(index).node.opcode

    def shape(self, index):
        return self.values[index].shape

    def floats(self):
        """The float values an operation may read (never a rejected one)."""
        return [i for i, v in self.values.items() if v.dtype == self.dtype and i not in self.rejected]

    def pick(self, candidates):
        return candidates[self.draw(st.integers(0, len(candidates) - 1))]

    def same_shape_operand(self, a):
        """Another value of a's shape, or a fresh parameter of it."""
        candidates = [i for i in self.floats() if self.shape(i) == self.shape(a)]
        if self.draw(st.booleans()):
            return self.pick(candidates)
        return self.parameter(self.shape(a))

    # One step ------------------------------------------------------------------
    def step(self):
        opcode = self.draw(st.sampled_from(OPCODES))
        a = self.pick(self.floats())
        result = getattr(self, "op_" + opcode, self.op_elementwise)(opcode, a)
        if result is not None and not self.acceptable(result):
            # The node stays on the tape (tapes only grow) but nothing reads it and it is not a readable.
            self.rejected.add(result)
            result = None
        if result is None:
            result = self.apply("Tanh", [a])
        return result

    def acceptable(self, index):
        value = self.values[index]
        return (
            value.size <= MAX_ELEMENTS
            and bool(np.all(np.isfinite(value)))
            and float(np.max(np.abs(value), initial=0)) < 1e4
        )

    # Elementwise -------------------------------------------------------------
    def op_elementwise(self, opcode, a):
        x = self.values[a]
        if not inside_domain(opcode, 0, x):
            return None
        if opcode == "Exp" and not np.all(x < 4.0):
            return None
        if opcode in UNARY:
            return self.apply(opcode, [a])
        b = self.same_shape_operand(a)
        y = self.values[b]
        if not inside_domain(opcode, 1, y):
            return None
        if opcode == "Pow" and not np.all(np.abs(y) < 3.0):
            return None
        if OP_SPECS[opcode].ties and a != b and not apart(x, y):
            return None
        return self.apply(opcode, [a, b])

    def op_first(self, opcode, shape):
        """``opcode`` on fresh parameters of ``shape``, each drawn from its operand's smooth domain
        (op_specs) with the margin the steps keep: recorded whatever the values so far."""
        operands = []
        for domain in OP_SPECS[opcode].smooth_domains():
            low, high = domain.draw
            if domain.kind in ("positive", "nonzero"):
                low = max(low, DOMAIN_MARGINS.get(opcode, DEFAULT_DOMAIN_MARGIN))
            operands.append(self._source(self.tape.parameter(domain.sample(self.rng, shape, low, high))))
        return self.apply(opcode, operands)

    def op_Where(self, opcode, a):
        shape = self.shape(a)
        conditions = [i for i in self.floats() if self.shape(i) == shape and self.opcode(i) in COMPARISONS]
        if conditions and self.draw(st.booleans()):
            condition = self.pick(conditions)
        else:
            condition = self.leaf(self.rng.integers(0, 2, shape).astype(self.dtype))
        return self.apply("Where", [condition, a, self.same_shape_operand(a)])

    # Reductions and products ------------------------------------------------------
    def axes(self, rank):
        return tuple(axis for axis in range(rank) if self.draw(st.booleans()))

    def op_Sum(self, opcode, a):
        rank = len(self.shape(a))
        return self.apply("Sum", [a], axes=self.axes(rank) or None, keepdims=self.draw(st.booleans()))

    def op_Max(self, opcode, a):
        rank = len(self.shape(a))
        axes = self.axes(rank) or tuple(range(rank))
        x = self.values[a]
        # The maximum of each reduced slice must stand apart from the runner-up.
        moved = np.moveaxis(x, axes, tuple(range(rank - len(axes), rank))).reshape(
            tuple(e for i, e in enumerate(x.shape) if i not in axes) + (-1,)
        )
        ordered = np.sort(moved, axis=-1)
        if ordered.shape[-1] > 1 and not apart(ordered[..., -1], ordered[..., -2]):
            return None
        return self.apply("Max", [a], axes=axes, keepdims=self.draw(st.booleans()))

    def op_MatMul(self, opcode, a):
        shape = self.shape(a)
        if len(shape) < 2:
            a = self.apply("Reshape", [a], shape=(1,) + shape if shape else (1, 1))
            shape = self.shape(a)
        columns = self.draw(st.integers(1, 3))
        b = self.parameter(shape[:-2] + (shape[-1], columns))
        return self.apply("MatMul", [a, b])

    # Moving elements ----------------------------------------------------------------
    def op_Reshape(self, opcode, a):
        size = self.values[a].size
        shapes = [(size,), (1, size), (size, 1), *factor_pairs(size)]
        return self.apply("Reshape", [a], shape=self.pick(shapes))

    def op_Broadcast(self, opcode, a):
        shape = self.shape(a)
        stretched = tuple(self.draw(st.integers(1, 3)) if extent == 1 else extent for extent in shape)
        leading = (self.draw(st.integers(1, 3)),) if self.draw(st.booleans()) or len(shape) == 0 else ()
        return self.apply("Broadcast", [a], shape=leading + stretched)

    def op_Transpose(self, opcode, a):
        rank = len(self.shape(a))
        return self.apply("Transpose", [a], axes=tuple(self.draw(st.permutations(list(range(rank))))))

    def op_Slice(self, opcode, a):
        start, stop, step = [], [], []
        for extent in self.shape(a):
            lo = self.draw(st.integers(0, extent - 1))
            hi = self.draw(st.integers(lo + 1, extent))
            start.append(lo)
            stop.append(hi)
            step.append(self.draw(st.integers(1, 2)))
        return self.apply("Slice", [a], start=tuple(start), stop=tuple(stop), step=tuple(step))

    def op_Pad(self, opcode, a):
        rank = len(self.shape(a))
        low, high, interior = ([self.draw(st.integers(0, 1)) for _ in range(rank)] for _ in range(3))
        return self.apply("Pad", [a], low=tuple(low), high=tuple(high), interior=tuple(interior))

    def op_Concatenate(self, opcode, a):
        shape = self.shape(a)
        if not shape:
            return None
        axis = self.draw(st.integers(0, len(shape) - 1))
        others = [
            i
            for i in self.floats()
            if len(self.shape(i)) == len(shape)
            and all(e == f for k, (e, f) in enumerate(zip(self.shape(i), shape)) if k != axis)
        ]
        parts = [a, self.pick(others)]
        if self.draw(st.booleans()):
            fresh = list(shape)
            fresh[axis] = self.draw(st.integers(1, 2))
            parts.append(self.parameter(tuple(fresh)))
        return self.apply("Concatenate", parts, axis=axis)

    # Indices --------------------------------------------------------------------------
    def op_Take(self, opcode, a):
        shape = self.shape(a)
        if not shape:
            return None
        axis = self.draw(st.integers(0, len(shape) - 1))
        index_shape = tuple(self.draw(st.integers(1, 3)) for _ in range(self.draw(st.integers(0, 2))))
        return self.apply("Take", [a, self.indices(index_shape, shape[axis])], axis=axis)

    def op_ScatterAdd(self, opcode, a):
        shape = self.shape(a)
        if not shape:
            return None
        axis = self.draw(st.integers(0, len(shape) - 1))
        extent = self.draw(st.integers(1, 4))
        return self.apply("ScatterAdd", [a, self.indices((shape[axis],), extent)], axis=axis, extent=extent)

    def op_OneHot(self, opcode, a):
        index_shape = tuple(self.draw(st.integers(1, 3)) for _ in range(self.draw(st.integers(0, 2))))
        depth = self.draw(st.integers(1, 4))
        hot = self.apply("OneHot", [self.indices(index_shape, depth)], depth=depth, dtype=self.dtype)
        return self.apply("Mul", [hot, self.same_shape_operand(hot)])

    # Scans: the indices are read through a one-hot times an operand -------------------------
    def op_CumSum(self, opcode, a):
        shape = self.shape(a)
        if not shape:
            return None
        axis = self.draw(st.integers(0, len(shape) - 1))
        return self.apply("CumSum", [a], axis=axis, reverse=self.draw(st.booleans()))

    def picked(self, indices, depth):
        hot = self.apply("OneHot", [indices], depth=depth, dtype=self.dtype)
        return self.apply("Mul", [hot, self.same_shape_operand(hot)])

    def op_ArgMax(self, opcode, a):
        shape = self.shape(a)
        if not shape:
            return None
        axis = self.draw(st.integers(0, len(shape) - 1))
        # The extreme of each row must stand apart from the runner-up, so no backend's rounding picks another.
        ordered = np.sort(np.moveaxis(self.values[a], axis, -1), axis=-1)
        if shape[axis] > 1 and not (
            apart(ordered[..., -1], ordered[..., -2]) and apart(ordered[..., 0], ordered[..., 1])
        ):
            return None
        return self.picked(self.apply(opcode, [a], axis=axis), shape[axis])

    op_ArgMin = op_ArgMax

    def op_TopK(self, opcode, a):
        shape = self.shape(a)
        if not shape:
            return None
        ordered = np.sort(self.values[a], axis=-1)
        if shape[-1] > 1 and not apart(ordered[..., 1:], ordered[..., :-1]):
            return None
        return self.picked(self.apply("TopK", [a], k=self.draw(st.integers(1, shape[-1]))), shape[-1])

    # Examples (op_specs) ------------------------------------------------------------------
    def op_example(self, opcode, a, chosen=None):
        """One op_specs example (``chosen``, else drawn): ``a`` as its first operand where the
        shapes and the domain fit, fresh operands (its own draw) elsewhere."""
        key, example = chosen or self.pick(ROW_EXAMPLES)
        operands = []
        for position, array in enumerate(example_arrays(key, example)):
            if array.dtype.kind in "iu":  # int32 indices, uint32 random keys
                operands.append(self._source(self.tape.input(array, dtype=array.dtype.name)))
            elif position == 0 and self.shape(a) == array.shape and example_row(key).operands[0].admits(self.values[a]):
                operands.append(a)
            else:
                operands.append(self._source(self.tape.parameter(array)))
        value = recorded(example)(self.tape, *[self.value_of(i) for i in operands])
        with np.errstate(all="ignore"):
            self.values[value.index] = np.asarray(
                example.numpy(*[self.values[i] for i in operands], **example.attrs), self.dtype
            )
        self.read.update(operands)
        return value.index

    # Windows (pooling) ------------------------------------------------------------------
    def op_WindowSum(self, opcode, a):
        """A window on every axis (1 to 3 long, no longer than the axis), strides 1 or 2, padding
        shorter than the window; WindowMax's ties are fine: every backend takes the first maximum."""
        shape = self.shape(a)
        if not shape:
            return None
        window, strides, padding = [], [], []
        for extent in shape:
            k = self.draw(st.integers(1, min(3, extent)))
            window.append(k)
            strides.append(self.draw(st.integers(1, 2)))
            padding.append((self.draw(st.integers(0, k - 1)), self.draw(st.integers(0, k - 1))))
        return self.apply(opcode, [a], window=tuple(window), strides=tuple(strides), padding=tuple(padding))

    op_WindowMax = op_WindowSum

    # The program ------------------------------------------------------------------------
    def finish(self):
        """The unread float values are the readables; the loss weighs each with random constants."""
        sinks = [i for i in self.floats() if i not in self.read and self.opcode(i) != "Leaf"]
        loss = None
        for index in sinks:
            weights = self.tape.leaf(self.payload(self.shape(index), -1.0, 1.0))
            term = self.tape.apply("Sum", [self.tape.apply("Mul", [self.value_of(index), weights])], axes=None)
            loss = term if loss is None else self.tape.apply("Add", [loss, term])
        network = self.tape.seal()
        return network, detach([self.value_of(i) for i in sinks]), detach(loss)


def apart(x, y):
    """Every pair of elements equal (the same value) or clearly apart."""
    x, y = np.broadcast_arrays(x, y)
    gap = np.abs(x - y) > GAP * (1.0 + np.abs(x) + np.abs(y))
    return bool(np.all(gap))


def factor_pairs(size):
    return [(d, size // d) for d in range(2, size) if size % d == 0]


SHAPES = [(), (3,), (2, 3), (4, 1), (1, 3), (2, 2, 2), (3, 1, 2)]


@st.composite
def programs(draw, first=None, steps=40):
    """A random program; ``first``: an op_specs (key, example) it records before its steps, or an
    elementwise opcode, recorded first on operands drawn from its row's smooth domains."""
    dtype = draw(st.sampled_from(["float64", "float32"]))
    builder = ProgramBuilder(draw, dtype, draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 2))):
        builder.parameter(draw(st.sampled_from(SHAPES)))
    if isinstance(first, str):
        builder.op_first(first, draw(st.sampled_from(SHAPES)))
    elif first is not None:
        builder.op_example("example", builder.pick(builder.floats()), first)
    for _ in range(draw(st.integers(1, steps))):
        builder.step()
    return builder.finish()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs())
def test_random_programs_agree_with_xla_and_eager_gradients(program):
    check_program(program)


# Each example at least once (a random program's steps draw some of them): a few short programs
# that record it first, so that an example added to a row is sure to run here.
@pytest.mark.parametrize(("key", "example"), ROW_EXAMPLES, ids=[example.name for _, example in ROW_EXAMPLES])
def test_each_example_in_random_programs(key, example):
    @settings(max_examples=3, deadline=None, derandomize=True, database=None)
    @given(programs(first=(key, example), steps=8))
    def check(program):
        network, _, _ = program
        # A primitive's example records its opcode (a composite's key names no opcode).
        assert key in COMPOSITES or any(node.opcode == key for node in network.nodes())
        check_program(program)

    check()


# Each elementwise op of the table by name too (the steps draw them among many): a few short
# programs that record it first, so that a row added to op_specs is sure to run here.
@pytest.mark.parametrize("opcode", UNARY + BINARY + COMPARISONS)
def test_each_elementwise_op_in_random_programs(opcode):
    @settings(max_examples=3, deadline=None, derandomize=True, database=None)
    @given(programs(first=opcode, steps=8))
    def check(program):
        network, _, _ = program
        assert any(node.opcode == opcode for node in network.nodes())
        check_program(program)

    check()


def check_program(program):
    network, sinks, loss = program
    parameters = network.parameters()
    plan = network.entry(sinks + [loss]).backward(loss).lower()
    result = plan.run(parameters)
    # Unoptimised XLA compiles four times faster; the other suites run XLA's full pipeline.
    xla = execute_plan(plan, parameters, optimize=False)
    assert_xla_agrees(plan, parameters, result.outputs(), xla, network.dtype, network.describe())
    assert result.peak_elements == plan.peak
    field = network.forward(parameters).backward(loss)
    for wrt, _ in plan.gradients:
        symbol = network.symbol(wrt)
        assert np.asarray(result.gradient(symbol)).tobytes() == np.asarray(field.of(symbol)).tobytes()
