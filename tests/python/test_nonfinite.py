"""NaN, infinities, signed zeros, subnormals and the largest finite value through every op.

docs/kernels.md ("NaN and infinities") says what topos promises; this file holds it to that.
One table of ops (elementwise, comparisons, reductions, the composites) runs on inputs
holding every special value, each op once per dtype:

- the numpy interpreter against PyTorch: NaN where torch has NaN, the same infinities
  with their signs, finite values close; the places where topos decides otherwise
  (``TORCH_DIFFERS``) are checked against topos's own documented answer instead;
- XLA against the interpreter (``plan.run(..., backend="xla")``, and the same StableHLO
  compiled with XLA's unoptimised compile, ``topos.xla.run_plan(..., optimize=False)``);
- WebGPU on lavapipe (float32) against the interpreter, every node run by a kernel.

A subnormal operand may read as a zero of its sign on XLA (its CPU flushes them, as JAX
does) and on WebGPU (WGSL allows it): where numpy's answers for the subnormal and for
that zero differ, a backend's answer must be NaN, the same infinity or finite as one of
them. Everywhere else NaN, infinities and finite values must match.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from op_specs import (
    OP_SPECS,
    Index,
    Key,
    derived_rows,
    example_row,
    example_rows,
    public_function,
    public_name,
    recorded,
    torch_call,
    torch_function,
)

import topos
from topos import Tape
from topos.xla import run_plan

DTYPES = ("float32", "float64")
RELATIVE = {"float32": 1e-5, "float64": 1e-12}


def specials(dtype):
    """Every special value, and a few ordinary ones around them."""
    info = np.finfo(dtype)
    subnormal = info.smallest_subnormal * 1000
    values = [
        np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        subnormal,
        -subnormal,
        info.max,
        -info.max,
    ]
    return np.array(values + [1.0, -1.0, -2.5, 0.5, 3.0], dtype)


def every_value(dtype):
    """(x,): every special value once."""
    return [specials(dtype)]


def every_pair(dtype):
    """(x, y): every special value against every other."""
    values = specials(dtype)
    return [np.repeat(values, len(values)), np.tile(values, len(values))]


def rows(dtype):
    """Rows of 4 for the reductions and row-wise composites: each special value at two
    places among ordinary ones, then rows of specials together."""
    info = np.finfo(dtype)
    ordinary = [1.0, -2.0, 0.5, 3.0]
    table = []
    for value in specials(dtype):
        for place in (0, 2):
            row = list(ordinary)
            row[place] = value
            table.append(row)
    table += [
        [np.inf, -np.inf, 1.0, 2.0],
        [np.nan, np.inf, 1.0, 2.0],
        [np.inf, np.inf, 1.0, 2.0],
        [info.max, info.max, 1.0, 2.0],
        [-info.max, -info.max, 1.0, 2.0],
        [-np.inf] * 4,
        [-0.0] * 4,
        [np.nan] * 4,
    ]
    return [np.array(table, dtype)]


#: Weights with exact binary fractions: a product of the largest finite value with them never
#: cancels with another, so XLA, numpy and torch may add the terms in any order.
WEIGHTS = np.array([[0.5, 1.0, 2.0], [0.25, 0.5, 1.0], [1.0, 2.0, 0.5], [2.0, 0.25, 1.0]])


def single_rows(dtype):
    """The rows of ``rows`` as inputs of their own, [1, 4] each (a loss a row, no slicing)."""
    return [row[None] for row in rows(dtype)[0]]


def pool_rows(dtype):
    """The rows of ``rows`` as the channels of one sequence, [1, rows, 4], for 1-D pooling."""
    return [rows(dtype)[0][None]]


def target_of(position):
    return position % 4


def torch_cross_entropy(*logits):
    return torch.stack([F.cross_entropy(row, torch.tensor([target_of(i)])) for i, row in enumerate(logits)])


def topos_cross_entropy(*logits):
    # One loss a row (cross_entropy means over the rows): each row's answer stays visible.
    tape = logits[0].tape
    targets = [tape.leaf(np.array([target_of(i)], np.int32), dtype="int32") for i in range(len(logits))]
    return topos.stack([topos.cross_entropy(row, target) for row, target in zip(logits, targets)])


#: op name -> (inputs, topos function, torch function). Every elementwise op is taken from its
#: op_specs row, and every other op from its row's examples (below); here are the exceptions, the
#: composites and ops read on inputs an example does not place: every special value once
#: (``every_value``: abs, sign, square), every pair (``every_pair``: a Where's condition), and
#: ``rows``/``pool_rows``, each special value at chosen places among ordinary ones and rows of
#: specials together (a NaN first or last in a row, a row all -inf), where an example tiles the
#: specials over its shape. Where an example has the name of an entry here (where, matmul,
#: cumsum, top_k...), the entry is the one run.
OPS = {
    "abs": (every_value, topos.abs, torch.abs),
    "sign": (every_value, topos.sign, torch.sign),
    "square": (every_value, topos.square, torch.square),
    "where": (
        every_pair,
        lambda c, x: topos.where(c, x, -x),
        lambda c, x: torch.where(c != 0, x, -x),
    ),
    "mask_times": (
        every_pair,
        lambda x, y: x * topos.greater(y, 0.0),
        lambda x, y: x * (y > 0),
    ),
    "sum": (rows, lambda v: topos.sum(v, -1), lambda t: t.sum(-1)),
    "sum_columns": (rows, lambda v: topos.sum(v, 0), lambda t: t.sum(0)),
    "mean": (rows, lambda v: topos.mean(v, -1), lambda t: t.mean(-1)),
    "max": (rows, lambda v: topos.max(v, -1), lambda t: t.amax(-1)),
    "max_columns": (rows, lambda v: topos.max(v, 0), lambda t: t.amax(0)),
    "max_all": (rows, topos.max, torch.amax),
    "min": (rows, lambda v: topos.min(v, -1), lambda t: t.amin(-1)),
    "softmax": (rows, lambda v: topos.softmax(v, -1), lambda t: torch.softmax(t, -1)),
    "log_softmax": (
        rows,
        lambda v: topos.log_softmax(v, -1),
        lambda t: torch.log_softmax(t, -1),
    ),
    "logsumexp": (
        rows,
        lambda v: topos.logsumexp(v, -1),
        lambda t: torch.logsumexp(t, -1),
    ),
    "layer_norm": (
        rows,
        topos.layer_norm,
        lambda t: F.layer_norm(t, (t.shape[-1],), eps=1e-5),
    ),
    "matmul": (
        rows,
        lambda v: v @ v.tape.leaf(WEIGHTS, dtype=v.dtype),
        lambda t: t @ torch.tensor(WEIGHTS, dtype=t.dtype),
    ),
    "cross_entropy": (single_rows, topos_cross_entropy, torch_cross_entropy),
    "cumsum": (rows, lambda v: topos.cumsum(v, -1), lambda t: t.cumsum(-1)),
    "cumsum_columns_reversed": (
        rows,
        lambda v: topos.cumsum(v, 0, reverse=True),
        lambda t: t.flip(0).cumsum(0).flip(0),
    ),
    # The indices as a one-hot: a NaN counts as the extreme, and ties go to the first index, in both
    "argmax": (
        rows,
        lambda v: topos.one_hot(topos.argmax(v), 4),
        lambda t: F.one_hot(t.argmax(-1), 4).to(t.dtype),
    ),
    "argmin": (
        rows,
        lambda v: topos.one_hot(topos.argmin(v), 4),
        lambda t: F.one_hot(t.argmin(-1), 4).to(t.dtype),
    ),
    "top_k": (rows, lambda v: topos.top_k(v, 2)[0], lambda t: torch.topk(t, 2).values),
    # Sorted rows and their positions: a NaN last (first when descending), -0.0 and 0.0 kept in place.
    "sort": (rows, topos.sort, lambda t: torch.sort(t, stable=True).values),
    "sort_descending": (
        rows,
        lambda v: topos.sort(v, descending=True),
        lambda t: torch.sort(t, descending=True, stable=True).values,
    ),
    "argsort": (
        rows,
        lambda v: topos.one_hot(topos.argsort(v), 4),
        lambda t: F.one_hot(torch.sort(t, stable=True)[1], 4).to(t.dtype),
    ),
    "argsort_descending": (
        rows,
        lambda v: topos.one_hot(topos.argsort(v, descending=True), 4),
        lambda t: F.one_hot(torch.sort(t, descending=True, stable=True)[1], 4).to(t.dtype),
    ),
    "max_pool": (
        pool_rows,
        lambda v: topos.max_pool(v, 3, 1),
        lambda t: F.max_pool1d(t, 3, 1),
    ),
    "max_pool_padded": (
        pool_rows,
        lambda v: topos.max_pool(v, 2, 2, 1),
        lambda t: F.max_pool1d(t, 2, 2, 1),
    ),
    "avg_pool": (
        pool_rows,
        lambda v: topos.avg_pool(v, 2, 1, 1),
        lambda t: F.avg_pool1d(t, 2, 1, 1),
    ),
}
# Every elementwise op with no entry above and a torch function in its row: its public function
# against that function, on every special value (unary) or every pair of them (binary). Gelu and
# StopGradient, whose torch spelling is not one function, run as their rows' examples (below).
OPS.update(
    {
        public_name(opcode): (
            every_value if len(OP_SPECS[opcode].operands) == 1 else every_pair,
            public_function(opcode),
            torch_function(opcode),
        )
        for opcode in derived_rows(
            {opcode for opcode in OP_SPECS if public_name(opcode) in OPS or OP_SPECS[opcode].torch is None}
        )
    }
)


def example_entry(example):
    """A row's example (op_specs) on the special values, tiled over its operands' shapes."""

    def inputs(dtype):
        return [np.resize(specials(dtype), shape).astype(dtype) for shape in example.shapes]

    return (
        inputs,
        lambda *values: recorded(example)(values[0].tape, *values),
        torch_call(example),
    )


# Every example of a row (a reduction, shape op or composite at its shapes and attributes) with
# no entry above, on the special values. Left out: examples with index operands or random keys
# (the special values are floats), and examples whose answer at a special value is not one
# answer (not torch's, or not the same in every order of a sum):
NOT_ON_SPECIALS = {
    # topos's attention masks with a large finite negative, torch's with -inf: a row of -inf
    # scores is NaN in torch and uniform in topos.
    "attention_causal": "a masked row of infinite scores",
    # Its second operand is a log-probability (<= 0): WGSL's exp of the largest finite value,
    # which it never reads, is indeterminate (NaN on lavapipe), numpy's inf.
    "log_softmax_grad": "exp of a log-probability past 0",
}
# Sums whose order decides the answer: with the largest finite value, its negative and the
# infinities tiled through a window, max + max - inf is NaN in one order and -inf in another
# (the pooling entries above read rows placed so that no order matters).
NOT_ON_SPECIALS.update(
    dict.fromkeys(
        [
            "conv2d",
            "conv1d_depthwise",
            "convolution_dilated",
            "convolution_batch_groups",
            "convolution_feature_groups",
            "window_sum",
        ],
        "a window's sum of max, -max and infinities, whose order decides overflow",
    )
)
# A contraction over the largest finite value, its negative and the infinities tiled through it
# (einsum's MatMul against torch's bmm): max + max - inf is NaN in one order and -inf in another.
NOT_ON_SPECIALS["einsum_ellipsis_broadcast"] = "a contraction's sum of max, -max and infinities, whose order decides"
# Running products through the largest finite value and a zero: max * max * 0 is NaN in numpy's
# order (inf * 0) and 0 in XLA's reduce_window, and torch's float32 cumprod runs in double, where
# a product that underflows float32 does not. cumprod_axis0 and cumprod_zeros stay on the specials.
NOT_ON_SPECIALS.update(
    dict.fromkeys(["cumprod", "cumprod_reverse"], "a running product of max, max and 0, whose order decides overflow")
)
# Indices read as a one-hot times the scores: XLA folds the product into a select, so 0 where the
# one-hot is 0 even where the score is NaN or infinite (numpy's 0 * NaN is NaN). The indices
# themselves are held on the special values by the argmax, argmin and top_k entries above.
NOT_ON_SPECIALS.update(
    dict.fromkeys(
        [
            "argmax_ties",
            "argmax_ties_axis0",
            "argmax_ties_axis1",
            "argmax_ties_axis2",
            "argmin_axis0",
            "argmin_ties_axis1",
            "argmin_ties_axis2",
            "top_k_ties_indices",
            "top_k_ties_indices_all",
            "argsort_ties",
            "argsort_ties_descending",
        ],
        "a one-hot times NaN scores, which XLA's select makes 0",
    )
)
# searchsorted's one-hot times the values, as above; its counts on NaN and infinities are held against
# numpy by test_sorting (torch's searchsorted counts a NaN value as below every element).
NOT_ON_SPECIALS.update(dict.fromkeys(["searchsorted_left", "searchsorted_right"], "numpy's NaN order, not torch's"))
# Left out too: the rows with no kernel (``kernel_declined``), and the transforms and
# factorisations, kernel or not, whose answers at special values are pocketfft's and LAPACK's
# (numpy's, XLA's and torch's each their own: a NaN spreads through a whole transform or
# factor, or LAPACK stops) and are held by their own tests (test_fft, test_linalg_*).
HOST_LIBRARIES = {
    "Fft",
    "Rfft",
    "Irfft",
    "Cholesky",
    "TriangularSolve",
    "Lu",
    "Eigh",
    "Qr",
    "Svd",
}
OPS.update(
    {
        example.name: example_entry(example)
        for key, example in example_rows(NOT_ON_SPECIALS)
        if example.name not in OPS
        and not any(isinstance(shape, (Index, Key)) for shape in example.shapes)
        and example_row(key).kernel_declined is None
        and key not in HOST_LIBRARIES
    }
)


def overflowing_rows(inputs, result):
    """Rows holding the largest finite value (their variance overflows to inf): the whole row."""
    (table,) = inputs
    return np.broadcast_to(
        (np.abs(table) == np.finfo(table.dtype).max).any(axis=-1, keepdims=True),
        result.shape,
    )


#: Where topos decides otherwise than PyTorch: op -> (the elements, what topos gives there, why).
TORCH_DIFFERS = {
    "sign": (
        lambda inputs, result: np.isnan(inputs[0]),
        lambda inputs, result: np.isnan(result).all(),
        "sign(NaN) is NaN, as in numpy and JAX; PyTorch's is 0",
    ),
    "layer_norm": (
        overflowing_rows,
        lambda inputs, result: (result[np.isfinite(result)] == 0).all(),
        "a row whose variance overflows is normalised by rsqrt(inf) = 0; PyTorch's is NaN",
    ),
}


def _polygamma_poles(inputs, result):
    """polygamma(1, x)'s poles: the negative integers (every float past 2^24 or 2^53 is one) and -inf."""
    x = inputs[0]
    return (x < 0) & ((x == np.floor(x)) | np.isinf(x))


# topos's polygamma gives scipy's answers at the poles and at +inf; PyTorch's trigamma gives NaN at
# -inf and the largest negative floats and a large finite number at -1 (its sin(pi x) is not 0),
# and its higher orders (Hurwitz zeta) NaN at +inf.
for _name in ("trigamma", "trigamma_negative"):
    TORCH_DIFFERS[_name] = (
        _polygamma_poles,
        lambda inputs, result: (result == np.inf).all(),
        "polygamma(1, x) is +inf at the poles and -inf, as scipy's; PyTorch's is NaN or finite there",
    )
for _name in ("polygamma_2", "polygamma_3", "polygamma_2_negative"):
    TORCH_DIFFERS[_name] = (
        lambda inputs, result: inputs[0] == np.inf,
        lambda inputs, result: (result == 0).all(),
        "polygamma(n, +inf) is 0, as scipy's; PyTorch's is NaN",
    )


def exact_remainder(function, divisor=None):
    """TORCH_DIFFERS's entry for fmod and mod (``divisor``: the number a call divides by): where
    ``a / b`` overflows, ``b`` finite and non-zero, PyTorch's CPU kernels give NaN, and topos
    numpy's exact remainder (C's fmod, which never forms the quotient)."""

    def operands(inputs):
        a = inputs[0]
        return np.broadcast_arrays(a, inputs[1] if divisor is None else a.dtype.type(divisor))

    def elements(inputs, result):
        a, b = operands(inputs)
        with np.errstate(all="ignore"):
            return np.isfinite(a) & np.isfinite(b) & (b != 0) & ~np.isfinite(a / b)

    def answer(inputs, got):
        a, b = operands(inputs)
        with np.errstate(all="ignore"):
            return np.array_equal(got, function(a, b)[elements(inputs, None)])

    return elements, answer, "the remainder of a quotient that overflows is exact, as numpy's; PyTorch's is NaN"


TORCH_DIFFERS.update(
    fmod=exact_remainder(np.fmod),
    mod=exact_remainder(np.mod),
    remainder_number=exact_remainder(np.mod, -0.75),
)


def record(name, dtype):
    make_inputs, function, _ = OPS[name]
    arrays = make_inputs(dtype)

    def build(tape):
        values = [tape.input(array) for array in arrays]
        return [*values, function(*values)]

    network, symbols = Tape.record(build, dtype=dtype)
    return network, symbols[:-1], symbols[-1], arrays


def interpreted(network, inputs, result, arrays):
    plan = network.entry([result]).lower()
    with np.errstate(all="ignore"):
        return np.asarray(plan.run(network.parameters(), dict(zip(inputs, arrays))).of(result))


def flushed(array):
    """``array`` with every subnormal replaced by a zero of its sign."""
    array = np.array(array)
    tiny = subnormal(array)
    array[tiny] = np.copysign(0.0, array[tiny])
    return array


def value_class(array):
    """0 for NaN, 1 for +inf, -1 for -inf, 2 for a finite value."""
    array = np.asarray(array, dtype=np.float64)
    return np.select([np.isnan(array), array == np.inf, array == -np.inf], [0, 1, -1], 2)


def agrees(got, want, dtype):
    """Elementwise: NaN where want is NaN, the same infinity, finite values close (a subnormal is close to 0).

    Close is relative to the value, or for a result of rows (a softmax, a layer norm) to the
    row's largest finite value: an element whose terms cancel is rounding noise around zero.
    """
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = np.abs(want)
    if want.ndim == 2:
        finite = np.where(np.isfinite(want), scale, 0.0)
        scale = np.maximum(scale, np.max(finite, axis=-1, keepdims=True))
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(got - want) <= RELATIVE[dtype] * scale + np.finfo(dtype).tiny
    return (value_class(got) == value_class(want)) & ((value_class(want) != 2) | close)


def describe_disagreement(bad, got, want, arrays):
    where = np.argwhere(bad)[:4]
    shown = []
    for index in where:
        # Each operand's element at the same place, where it has one (a convolution's output does not).
        place = [tuple(index)[: array.ndim] for array in arrays]
        operands = [
            array[at].tolist() if all(i < n for i, n in zip(at, array.shape)) else "-"
            for array, at in zip(arrays, place)
        ]
        shown.append(
            f"at {tuple(int(i) for i in index)} (operands {operands}): got {got[tuple(index)]}, want {want[tuple(index)]}"
        )
    return f"{int(bad.sum())} of {bad.size} elements disagree: " + "; ".join(shown)


def subnormal(array):
    return (array != 0) & (np.abs(array) < np.finfo(array.dtype).tiny)


#: Where XLA's CPU decides otherwise than the interpreter: op -> (the elements, why). At those
#: elements XLA's answer must still be NaN or the interpreter's magnitude (docs/api.md says so).
XLA_DIFFERS = {
    "atan2": (
        lambda arrays: subnormal(arrays[0]),
        "XLA's atan2 of a subnormal y is NaN when x is subnormal too, and may flip its sign (as JAX's arctan2)",
    ),
}


def assert_backend_agrees(got, name, dtype, network, inputs, result, arrays, differs=None):
    """``got`` against the interpreter on the inputs as they are, or with subnormals read as zeros;
    ``differs``: the backend's table of where it decides otherwise (``XLA_DIFFERS``)."""
    want = interpreted(network, inputs, result, arrays)
    want_flushed = interpreted(network, inputs, result, [flushed(array) for array in arrays])
    got = np.asarray(got)
    assert got.shape == want.shape
    ok = agrees(got, want, dtype) | agrees(got, want_flushed, dtype)
    # Where the subnormal and its zero give different answers, a backend may give either's kind.
    grey = ~agrees(want, want_flushed, dtype)
    ok |= grey & ((value_class(got) == value_class(want)) | (value_class(got) == value_class(want_flushed)))
    if name in (differs or {}):
        elements, why = differs[name]
        excused = elements(arrays) & (np.isnan(got) | agrees(np.abs(got), np.abs(want), dtype))
        assert excused.any(), f"{name}: no element is excused by the stated difference ({why})"
        ok |= excused
    assert ok.all(), f"{name} {dtype}: " + describe_disagreement(~ok, got, want, arrays)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
def test_the_interpreter_agrees_with_torch(name, dtype):
    network, inputs, result, arrays = record(name, dtype)
    got = interpreted(network, inputs, result, arrays)
    with torch.no_grad():
        want = OPS[name][2](*[torch.from_numpy(array) for array in arrays]).double().numpy()
    assert got.shape == want.shape
    ok = agrees(got, want, dtype)
    if name in TORCH_DIFFERS:
        elements, topos_answer, why = TORCH_DIFFERS[name]
        differs = elements(arrays, got)
        assert topos_answer(arrays, got[differs]), f"{name}: topos should give its documented answer ({why})"
        ok |= differs
    assert ok.all(), f"{name} {dtype}: " + describe_disagreement(~ok, got, want, arrays)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
def test_xla_agrees_with_the_interpreter(name, dtype):
    network, inputs, result, arrays = record(name, dtype)
    plan = network.entry([result]).lower()
    feeds = dict(zip(inputs, arrays))
    on_xla = plan.run(network.parameters(), feeds, backend="xla").of(result)
    assert_backend_agrees(on_xla, name, dtype, network, inputs, result, arrays, XLA_DIFFERS)
    # The same module, compiled without XLA's optimisations.
    (unoptimised,) = run_plan(plan, network.parameters(), feeds, optimize=False).outputs()
    assert_backend_agrees(unoptimised, name, dtype, network, inputs, result, arrays, XLA_DIFFERS)


@pytest.mark.parametrize("name", OPS)
def test_webgpu_agrees_with_the_interpreter(name):
    network, inputs, result, arrays = record(name, "float32")
    plan = network.entry([result]).lower()
    run = plan.run(network.parameters(), dict(zip(inputs, arrays)), backend="webgpu")
    computed = {index for index in plan.schedule if not plan.nodes[index].is_source}
    on_host = {index: plan.nodes[index].opcode for index in computed if run.backends[index] != "webgpu"}
    assert not on_host, f"{name}: nodes ran on the host, not in a kernel: {on_host}"
    assert_backend_agrees(run.of(result), name, "float32", network, inputs, result, arrays)


# Gradients ---------------------------------------------------------------------------------

COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
#: The ops whose derivative rules the gradient test runs (a comparison has none), but for:
ROUNDING_ZEROS = {
    # Its gradient down a column of float32 specials cancels to rounding noise (1e-9), which
    # WebGPU's order of terms rounds to an exact 0, a class of its own to the check; the rows'
    # softmax (above) holds the same rules.
    "softmax_axis0": "a cancelling gradient",
}
DIFFERENTIABLE = [name for name in OPS if name not in COMPARISONS and name not in ROUNDING_ZEROS]


def without_largest(arrays):
    """The inputs with the largest finite value replaced by 3: XLA may factor a * b + a * c into
    a * (b + c), so a gradient near the largest finite value may overflow there and not in numpy."""
    return [np.where(np.abs(array) == np.finfo(array.dtype).max, np.copysign(3.0, array), array) for array in arrays]


def gradient_plan(name, dtype):
    make_inputs, function, _ = OPS[name]
    # Subnormals read as zeros here, on every side: the forward tests hold them.
    arrays = [flushed(array) for array in without_largest(make_inputs(dtype))]

    def build(tape):
        values = [tape.parameter(array) for array in arrays]
        out = function(*values)
        # Weights that differ: under equal ones a softmax's gradient would be zero, all rounding noise.
        weights = np.resize([0.5, -1.0, 2.0, 0.25, 1.5], out.shape)
        return [*values, topos.sum(out * tape.leaf(weights, dtype=dtype))]

    network, symbols = Tape.record(build, dtype=dtype)
    sources, loss = symbols[:-1], symbols[-1]
    return network, network.entry([loss]).backward(loss, sources).lower(), sources


def assert_gradients_agree(got_run, want_run, sources, dtype, what):
    for position, source in enumerate(sources):
        got = np.asarray(got_run.gradient(source), dtype=np.float64)
        want = np.asarray(want_run.gradient(source), dtype=np.float64)
        # A gradient whose terms cancel is rounding noise around zero: judged against the largest one.
        scale = np.max(np.abs(want[np.isfinite(want)]), initial=0.0)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(got - want) <= 1e-4 * np.abs(want) + math.sqrt(np.finfo(dtype).eps) * scale
        ok = (value_class(got) == value_class(want)) & ((value_class(want) != 2) | close)
        assert ok.all(), f"{what} gradient {position}: " + describe_disagreement(~ok, got, want, [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_carry_nan_and_infinities_alike_on_every_backend(name, dtype):
    network, plan, sources = gradient_plan(name, dtype)
    parameters = network.parameters()
    with np.errstate(all="ignore"):
        want = plan.run(parameters)
    assert_gradients_agree(
        plan.run(parameters, backend="xla"),
        want,
        sources,
        dtype,
        f"{name} {dtype} on XLA",
    )
    if dtype == "float32":
        assert_gradients_agree(
            plan.run(parameters, backend="webgpu"),
            want,
            sources,
            dtype,
            f"{name} on WebGPU",
        )


# The cases the table found, each by itself --------------------------------------------------


def test_the_largest_of_a_nan_and_a_number_is_nan_on_every_backend():
    def build(tape):
        x = tape.input(np.array([np.nan, 1.0], np.float32))
        return x, topos.max(x), topos.min(x), topos.maximum(x, 2.0 * x + 1.0)

    network, (x, largest, smallest, pairwise) = Tape.record(build, dtype="float32")
    plan = network.entry([largest, smallest, pairwise]).lower()
    for backend in ("numpy", "xla", "webgpu"):
        run = plan.run(network.parameters(), backend=backend)
        assert np.isnan(run.of(largest).scalar()) and np.isnan(run.of(smallest).scalar()), backend
        assert np.isnan(np.asarray(run.of(pairwise))[0]) and np.asarray(run.of(pairwise))[1] == 3.0, backend


def test_a_cross_entropy_with_an_impossible_class_stays_finite_as_in_torch():
    logits = np.array([[1.0, -2.0, -np.inf, 3.0]])

    def build(tape):
        return topos.cross_entropy(tape.input(logits), tape.leaf(np.array([1], np.int32), dtype="int32"))

    network, loss = Tape.record(build)
    want = F.cross_entropy(torch.from_numpy(logits), torch.tensor([1])).item()
    plan = network.entry([loss]).lower()
    for backend in ("numpy", "xla"):
        assert plan.run(network.parameters(), backend=backend).of(loss).scalar() == pytest.approx(want, rel=1e-12)


def test_a_power_of_one_half_is_c_pow_whatever_the_exponents_layout():
    # numpy and PyTorch take sqrt for a scalar exponent 0.5: (-inf) ** 0.5 is NaN there, inf in C.
    bases = np.array([-np.inf, -0.0, 4.0])

    def build(tape):
        x = tape.input(bases)
        return x, x**0.5, topos.power(x, tape.leaf(np.full(3, 0.5)))

    network, (x, scalar_exponent, array_exponent) = Tape.record(build)
    plan = network.entry([scalar_exponent, array_exponent]).lower()
    for backend in ("numpy", "xla"):
        run = plan.run(network.parameters(), backend=backend)
        for value in (run.of(scalar_exponent), run.of(array_exponent)):
            assert np.array_equal(np.asarray(value), [np.inf, 0.0, 2.0]) and not np.signbit(value[1]), backend
