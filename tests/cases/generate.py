"""Writes tests/cases/primitives.json: shared test vectors for every float32 primitive.

Run from the repository root: ``.venv/bin/python tests/cases/generate.py``.

Each case is a small graph recorded with topos (so that the node list is what a
user's code records, broadcasts and fusable patterns included), its inputs, and
the expected outputs computed by an *independent* numpy oracle in float64 (a
formula per case below, never topos's own forward; a plain table row listed in
no table here takes its row's numpy function, which holds the kernels and the
browser to numpy). The numpy interpreter,
wgpu-py (tests/python/test_kernels_cases.py) and the browser's runner replay the
same file. See tests/cases/README.md for the format and the tolerance rule.
"""

import base64
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

from op_specs import (  # noqa: E402  (each op's domain, written once for every test)
    check_operand,
    check_operands,
    derived_binary_rows,
    derived_unary_rows,
    numpy_forward,
    numpy_oracle,
    op_rng,
    recording,
    spread_sampler,
)

import topos  # noqa: E402
from topos import Tape  # noqa: E402

FORMAT = "topos-cases/1"
RTOL = 1e-5
UNIT = 2.0**-24
#: The oracle's float32 evaluation may be off by this many times its own error before the
#: tolerance widens (see README: where a formula itself loses precision in float32).
FLOAT32_SLACK = 8.0
#: Element counts at the edges of 64-wide workgroups, and past one workgroup's share.
EDGE_SIZES = (1, 7, 63, 64, 65, 1023, 4097)

rng = np.random.default_rng(20241129)


def normal(*shape, scale=1.0):
    return rng.normal(0.0, scale, shape)


def uniform(low, high, *shape):
    return rng.uniform(low, high, shape)


def integers(low, high, *shape):
    return rng.integers(low, high, shape).astype(np.float64)


def encode(array, dtype):
    array = np.array(array, dtype=np.dtype(dtype).newbyteorder("<"), order="C")  # keeps rank 0
    return {"shape": list(array.shape), "dtype": dtype, "data": base64.b64encode(array.tobytes()).decode()}


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def layer_norm(x, weight, bias, eps=1e-5):
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps) * weight + bias


def gelu_grad(g, x):
    c, k = math.sqrt(2.0 / math.pi), 0.044715
    t = np.tanh(c * (x + k * x**3))
    return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * k * x**2))


def row_mean(x):
    return x.mean(axis=-1, keepdims=True)


def scatter_add(updates, indices, extent):
    result = np.zeros((extent,) + updates.shape[indices.ndim :])
    np.add.at(result, indices.reshape(-1), updates.reshape((-1,) + updates.shape[indices.ndim :]))
    return result


class Case:
    """One case: ``record(tape, *inputs)`` records the graph, ``oracle(*arrays)`` computes it in float64.

    ``terms`` is the number of terms each output sums (reductions, matmul), for the
    rounding bound; ``magnitudes(*abs_arrays)`` gives the sum of the terms' magnitudes
    per output element (by default the oracle applied to absolute values).
    """

    def __init__(self, name, inputs, record, oracle, terms=1, magnitudes=None):
        self.name = name
        self.inputs = inputs  # list of (array, dtype)
        self.record = record
        self.oracle = oracle
        self.terms = terms
        self.magnitudes = magnitudes

    def build(self):
        def recording(tape):
            values = [tape.input(array, dtype=dtype) for array, dtype in self.inputs]
            outputs = self.record(tape, *values)
            return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]

        network, outputs = Tape.record(recording, dtype="float32")
        dtypes = [dtype for _, dtype in self.inputs]
        arrays = [np.asarray(array, dtype=dtype) for array, dtype in self.inputs]
        with np.errstate(all="ignore"):
            exact = self.oracle(*[a.astype(np.float64) if dtype == F else a for a, dtype in zip(arrays, dtypes)])
        exact = list(exact) if isinstance(exact, (list, tuple)) else [exact]
        with np.errstate(all="ignore"):
            rounded = self.oracle(*arrays)
        rounded = list(rounded) if isinstance(rounded, (list, tuple)) else [rounded]
        nodes = network.nodes()
        serialised = []
        for node in nodes[len(self.inputs) :]:
            entry = {"opcode": node.opcode, "operands": list(node.operands)}
            if node.opcode == "Leaf":
                entry["value"] = encode(node.payload, node.dtype)
            elif node.attrs:
                entry["attrs"] = {k: list(v) if isinstance(v, tuple) else v for k, v in node.attrs.items()}
            serialised.append(entry)
        atol = 0.0
        for want, got in zip(exact, rounded):
            want = np.asarray(want, dtype=np.float64)
            with np.errstate(invalid="ignore"):
                excess = FLOAT32_SLACK * np.abs(np.asarray(got, dtype=np.float64) - want) - RTOL * np.abs(want)
            # NaN and infinities agree by being the same (kernel_cases.disagreement), not by a tolerance.
            excess = np.where(np.isfinite(excess), excess, 0.0)
            atol = max(atol, float(np.max(excess, initial=0.0)))
        if self.terms > 1:
            absolute = [np.abs(a) if dtype == F else a for a, dtype in zip(arrays, dtypes)]
            magnitude = (self.magnitudes or self.oracle)(*[a.astype(np.float64) for a in absolute])
            magnitude = magnitude[0] if isinstance(magnitude, (list, tuple)) else magnitude
            magnitude = np.where(np.isfinite(magnitude), magnitude, 0.0)
            atol = max(atol, 4.0 * math.sqrt(self.terms) * UNIT * float(np.max(magnitude)))
        return {
            "name": self.name,
            "inputs": [encode(a, dtype) for a, dtype in self.inputs],
            "nodes": serialised,
            "outputs": [symbol.index for symbol in outputs],
            # uint32 outputs (random bits, keys) are stored as words, to be matched exactly.
            "expected": [encode(want, nodes[o.index].dtype) for want, o in zip(exact, outputs)],
            "tolerance": {"rtol": RTOL, "atol": float(f"{max(atol, 1e-37):.3g}")},
        }


F = "float32"
I = "int32"  # noqa: E741
U = "uint32"


def unary_cases():
    ranges = {
        "Neg": (normal(7, 9), lambda t, x: -x, lambda x: -x),
        "Exp": (uniform(-10, 10, 7, 9), lambda t, x: topos.exp(x), np.exp),
        "Log": (
            np.concatenate([uniform(1e-3, 100, 40), uniform(0.9, 1.1, 23)]).reshape(7, 9),
            lambda t, x: topos.log(x),
            np.log,
        ),
        "Sqrt": (uniform(0, 50, 7, 9), lambda t, x: topos.sqrt(x), np.sqrt),
        "Rsqrt": (uniform(1e-3, 50, 7, 9), lambda t, x: topos.rsqrt(x), lambda x: 1.0 / np.sqrt(x)),
        "Tanh": (
            np.concatenate([uniform(-12, 12, 40), uniform(-0.3, 0.3, 23)]).reshape(7, 9),
            lambda t, x: topos.tanh(x),
            np.tanh,
        ),
        "Sigmoid": (uniform(-30, 30, 7, 9), lambda t, x: topos.sigmoid(x), lambda x: 1.0 / (1.0 + np.exp(-x))),
        "Relu": (
            np.concatenate([normal(60), np.zeros(3)]).reshape(7, 9),
            lambda t, x: topos.relu(x),
            lambda x: np.maximum(x, 0.0),
        ),
        "Gelu": (uniform(-6, 6, 7, 9), lambda t, x: topos.gelu(x), gelu),
        "StopGradient": (normal(7, 9), lambda t, x: topos.stop_gradient(x), lambda x: x),
    }
    for opcode, (data, record, oracle) in ranges.items():
        check_operands(opcode, [data])
        yield Case(f"{opcode} [7, 9]", [(data, F)], record, oracle)
    # A plain table row with no range above: its op_specs spread, drawn from its own generator
    # (the shared one keeps every case's values), and its own numpy forward as the oracle.
    for opcode in derived_unary_rows(ranges):
        data = spread_sampler(opcode)(op_rng(opcode), (7, 9))
        yield Case(f"{opcode} [7, 9]", [(data, F)], recording(opcode), numpy_forward(opcode))


def binary_cases():
    yield Case(
        "Add broadcast on every axis [3, 1, 5] + [1, 4, 1]",
        [(normal(3, 1, 5), F), (normal(1, 4, 1), F)],
        lambda t, a, b: a + b,
        lambda a, b: a + b,
    )
    yield Case("Add a Python number", [(normal(65), F)], lambda t, a: a + 2.5, lambda a: a + 2.5)
    yield Case(
        "Sub broadcast [4, 1] - [1, 6]",
        [(normal(4, 1), F), (normal(1, 6), F)],
        lambda t, a, b: a - b,
        lambda a, b: a - b,
    )
    yield Case(
        "Mul broadcast leading axes [2, 3, 4] * [4]",
        [(normal(2, 3, 4), F), (normal(4), F)],
        lambda t, a, b: a * b,
        lambda a, b: a * b,
    )
    yield Case(
        "Div broadcast [5, 7] / [5, 1]",
        [(normal(5, 7), F), (check_operand("Div", 1, uniform(0.5, 3, 5, 1)), F)],
        lambda t, a, b: a / b,
        lambda a, b: a / b,
    )
    yield Case(
        "Div of a Python number by a value",
        [(check_operand("Div", 1, uniform(0.5, 3, 13)), F)],
        lambda t, a: 1.0 / a,
        lambda a: 1.0 / a,
    )
    yield Case(
        "Pow positive base [6, 5] ** [1, 5]",
        [(check_operand("Pow", 0, uniform(0.1, 4, 6, 5)), F), (uniform(-2, 3, 1, 5), F)],
        lambda t, a, b: a**b,
        lambda a, b: a**b,
    )
    yield Case(
        "Pow negative base, integer exponents",
        [(normal(17), F)],
        lambda t, a: [a**3.0, a**2.0, a**-1.0],
        lambda a: [a**3.0, a**2.0, a**-1.0],
    )
    for opcode, function, oracle in (("Maximum", topos.maximum, np.maximum), ("Minimum", topos.minimum, np.minimum)):
        yield Case(
            f"{opcode} with ties, broadcast [4, 1] and [1, 5]",
            [(integers(-3, 3, 4, 1), F), (integers(-3, 3, 1, 5), F)],
            lambda t, a, b, f=function: f(a, b),
            oracle,
        )
    comparisons = {
        "Less": (topos.less, np.less),
        "LessEqual": (topos.less_equal, np.less_equal),
        "Greater": (topos.greater, np.greater),
        "GreaterEqual": (topos.greater_equal, np.greater_equal),
        "Equal": (topos.equal, np.equal),
        "NotEqual": (topos.not_equal, np.not_equal),
    }
    for opcode, (function, oracle) in comparisons.items():
        yield Case(
            f"{opcode} with ties, broadcast [4, 1] and [1, 5]",
            [(integers(-2, 2, 4, 1), F), (integers(-2, 2, 1, 5), F)],
            lambda t, a, b, f=function: f(a, b),
            lambda a, b, o=oracle: o(a, b).astype(np.float64),
        )
    yield Case(
        "Where broadcast [3, 1], [3, 4], [1, 4]",
        [(integers(0, 2, 3, 1), F), (normal(3, 4), F), (normal(1, 4), F)],
        lambda t, c, a, b: topos.where(c, a, b),
        lambda c, a, b: np.where(c != 0, a, b),
    )
    # A plain binary table row listed nowhere above: each operand over its op_specs spread, the
    # second broadcast, drawn from its own generator; its numpy function as the oracle.
    for opcode in derived_binary_rows({"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum", *comparisons}):
        rng = op_rng(opcode)
        data = [spread_sampler(opcode, 0)(rng, (4, 5)), spread_sampler(opcode, 1)(rng, (1, 5))]
        yield Case(
            f"{opcode} broadcast [4, 5] and [1, 5]", [(d, F) for d in data], recording(opcode), numpy_oracle(opcode)
        )


def reduction_cases():
    x = normal(4, 5, 6)
    for axes in ((0,), (1,), (2,), (0, 2), (0, 1, 2)):
        yield Case(
            f"Sum over axes {axes} of [4, 5, 6]",
            [(x, F)],
            lambda t, v, a=axes: v.sum(axis=a),
            lambda v, a=axes: v.sum(axis=a),
            terms=int(np.prod([x.shape[i] for i in axes])),
        )
        yield Case(
            f"Max over axes {axes} of [4, 5, 6]",
            [(x, F)],
            lambda t, v, a=axes: v.max(axis=a),
            lambda v, a=axes: v.max(axis=a),
        )
    yield Case(
        "Sum over axes (1, 2) keepdims",
        [(x, F)],
        lambda t, v: v.sum(axis=(1, 2), keepdims=True),
        lambda v: v.sum(axis=(1, 2), keepdims=True),
        terms=30,
    )
    yield Case(
        "Max over axis 0 keepdims",
        [(x, F)],
        lambda t, v: v.max(axis=0, keepdims=True),
        lambda v: v.max(axis=0, keepdims=True),
    )
    yield Case(
        "Sum over the rows of [3, 1023]",
        [(normal(3, 1023), F)],
        lambda t, v: v.sum(axis=1),
        lambda v: v.sum(axis=1),
        terms=1023,
    )
    yield Case(
        "Sum over the columns of [65, 16]",
        [(normal(65, 16), F)],
        lambda t, v: v.sum(axis=0),
        lambda v: v.sum(axis=0),
        terms=65,
    )
    yield Case(
        "Max over axis 0 of [1023, 2]", [(normal(1023, 2), F)], lambda t, v: v.max(axis=0), lambda v: v.max(axis=0)
    )
    yield Case(
        "mean over axis 1 of [7, 63]",
        [(normal(7, 63), F)],
        lambda t, v: topos.mean(v, axis=1),
        lambda v: v.mean(axis=1),
        terms=63,
    )
    yield Case("mean of [5, 13]", [(normal(5, 13), F)], lambda t, v: topos.mean(v), lambda v: v.mean(), terms=65)


def matmul_cases():
    def case(name, a_shape, b_shape, record=lambda t, a, b: a @ b, oracle=lambda a, b: a @ b):
        k = a_shape[-1] if len(a_shape) > 1 else a_shape[0]
        return Case(name, [(normal(*a_shape), F), (normal(*b_shape), F)], record, oracle, terms=k)

    yield case("MatMul [1, 1] @ [1, 1]", (1, 1), (1, 1))
    yield case("MatMul [7, 63] @ [63, 65]", (7, 63), (63, 65))
    yield case("MatMul [65, 8] @ [8, 33]", (65, 8), (8, 33))
    yield case("MatMul batched [2, 3, 17, 9] @ [2, 3, 9, 5]", (2, 3, 17, 9), (2, 3, 9, 5))
    yield case("MatMul broadcast batch [3, 8, 6] @ [6, 4]", (3, 8, 6), (6, 4))
    yield case("MatMul vector @ matrix [5] @ [5, 3]", (5,), (5, 3))
    yield Case(
        "MatMul of a transpose [9, 7].T @ [9, 4]",
        [(normal(9, 7), F), (normal(9, 4), F)],
        lambda t, a, b: a.T @ b,
        lambda a, b: a.T @ b,
        terms=9,
    )


def shape_cases():
    yield Case(
        "Reshape [6, 4] to [3, 8]",
        [(normal(6, 4), F)],
        lambda t, x: x.reshape(3, 8) * 1.0,
        lambda x: x.reshape(3, 8) * 1.0,
    )
    yield Case(
        "Reshape of a transpose", [(normal(6, 4), F)], lambda t, x: x.T.reshape(3, 8), lambda x: x.T.reshape(3, 8)
    )
    yield Case(
        "Broadcast [3, 1] to [2, 3, 4]",
        [(normal(3, 1), F)],
        lambda t, x: x.broadcast_to((2, 3, 4)),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
    )
    yield Case(
        "Transpose [2, 3, 4] by (2, 0, 1)",
        [(normal(2, 3, 4), F)],
        lambda t, x: x.transpose(2, 0, 1),
        lambda x: x.transpose(2, 0, 1),
    )
    yield Case("Slice [7, 9] by [1:6:2, ::3]", [(normal(7, 9), F)], lambda t, x: x[1:6:2, ::3], lambda x: x[1:6:2, ::3])
    yield Case(
        "Pad [3, 4] low (1, 0) high (0, 2) interior (1, 1)",
        [(normal(3, 4), F)],
        lambda t, x: t.apply("Pad", [x], low=(1, 0), high=(0, 2), interior=(1, 1)),
        lambda x: _pad(x, (1, 0), (0, 2), (1, 1)),
    )
    yield Case(
        "Concatenate three along axis 1",
        [(normal(2, 3), F), (normal(2, 1), F), (normal(2, 4), F)],
        lambda t, a, b, c: topos.concatenate([a, b, c], axis=1),
        lambda a, b, c: np.concatenate([a, b, c], axis=1),
    )
    yield Case(
        "Concatenate with a constant",
        [(normal(2, 3), F)],
        lambda t, a: topos.concatenate([a, np.ones((2, 2))], axis=1),
        lambda a: np.concatenate([a, np.ones((2, 2))], axis=1),
    )


def _pad(x, low, high, interior):
    shape = tuple(lo + hi + n + max(n - 1, 0) * inner for n, lo, hi, inner in zip(x.shape, low, high, interior))
    out = np.zeros(shape)
    out[tuple(slice(lo, lo + (n - 1) * (inner + 1) + 1, inner + 1) for n, lo, inner in zip(x.shape, low, interior))] = x
    return out


def index_cases():
    indices = rng.integers(0, 10, (2, 3))
    yield Case(
        "Take rows of [10, 4] by [2, 3] int32 indices",
        [(normal(10, 4), F), (indices, I)],
        lambda t, v, i: topos.take(v, i, axis=0),
        lambda v, i: np.take(v, i, axis=0),
    )
    yield Case(
        "Take along axis 1 of [3, 10, 2]",
        [(normal(3, 10, 2), F), (rng.integers(0, 10, 5), I)],
        lambda t, v, i: topos.take(v, i, axis=1),
        lambda v, i: np.take(v, i, axis=1),
    )
    yield Case(
        "OneHot of [5] indices, depth 7",
        [(rng.integers(0, 7, 5), I)],
        lambda t, i: topos.one_hot(i, 7),
        lambda i: np.eye(7)[i],
    )
    yield Case(
        "ScatterAdd (the backward of Take) into 10 rows",
        [(normal(2, 3, 4), F), (indices, I)],
        lambda t, u, i: t.apply("ScatterAdd", [u, i], axis=0, extent=10),
        lambda u, i: scatter_add(u, i, 10),
    )


def fused_cases():
    yield Case(
        "softmax over the last axis of [5, 65]",
        [(normal(5, 65, scale=3.0), F)],
        lambda t, x: topos.softmax(x, -1),
        softmax,
    )
    yield Case(
        "softmax over axis 0 of [6, 5] (not fused)",
        [(normal(6, 5), F)],
        lambda t, x: topos.softmax(x, 0),
        lambda x: softmax(x, 0),
    )
    yield Case(
        "log_softmax over the last axis of [3, 255]",
        [(normal(3, 255, scale=3.0), F)],
        lambda t, x: topos.log_softmax(x, -1),
        log_softmax,
        terms=255,
        magnitudes=lambda x: np.abs(x).max(),
    )
    yield Case(
        "layer_norm over the last axis of [6, 64], weight and bias",
        [(normal(6, 64, scale=2.0), F), (normal(64), F), (normal(64), F)],
        lambda t, x, w, b: topos.layer_norm(x, w, b),
        layer_norm,
    )
    yield Case(
        "cross_entropy of [4, 7] logits",
        [(normal(4, 7), F), (rng.integers(0, 7, 4), I)],
        lambda t, x, y: topos.cross_entropy(x, y),
        lambda x, y: -np.mean(log_softmax(x)[np.arange(4), y]),
    )
    causal = np.tril(np.ones((5, 5)))
    yield Case(
        "causal attention [2, 5, 4]",
        [(normal(2, 5, 4), F), (normal(2, 5, 4), F), (normal(2, 5, 4), F)],
        lambda t, q, k, v: topos.attention(q, k, v, causal=True),
        lambda q, k, v: softmax(np.where(causal, q @ k.transpose(0, 2, 1) / 2.0, -1e9)) @ v,
        terms=5,
        magnitudes=lambda q, k, v: np.abs(v).max() * 5,
    )


def derivative_cases():
    """The primitives a gradient adds: gelu's, softmax's, log-softmax's and layer norm's derivatives."""
    yield Case(
        "GeluGrad [7, 9]",
        [(normal(7, 9), F), (uniform(-6, 6, 7, 9), F)],
        lambda t, g, x: t.apply("GeluGrad", [g, x]),
        gelu_grad,
    )
    yield Case(
        "SoftmaxGrad over the rows of [5, 65]",
        [(normal(5, 65), F), (softmax(normal(5, 65, scale=3.0)), F)],
        lambda t, g, y: t.apply("SoftmaxGrad", [g, y]),
        lambda g, y: y * (g - (g * y).sum(axis=-1, keepdims=True)),
        terms=65,
        magnitudes=lambda g, y: y * (g + (g * y).sum(axis=-1, keepdims=True)),
    )
    yield Case(
        "LogSoftmaxGrad over the rows of [3, 255]",
        [(normal(3, 255), F), (log_softmax(normal(3, 255, scale=3.0)), F)],
        lambda t, g, y: t.apply("LogSoftmaxGrad", [g, y]),
        lambda g, y: g - np.exp(y) * g.sum(axis=-1, keepdims=True),
        terms=255,
        magnitudes=lambda g, y: g + g.sum(axis=-1, keepdims=True),  # exp(y) <= 1 for a log-softmax
    )
    x = normal(6, 64, scale=2.0)
    scale = 1.0 / np.sqrt(row_mean((x - row_mean(x)) ** 2) + 1e-5)
    yield Case(
        "LayerNormGrad over the rows of [6, 64]",
        [(normal(6, 64), F), ((x - row_mean(x)) * scale, F), (scale, F)],
        lambda t, g, n, r: t.apply("LayerNormGrad", [g, n, r]),
        lambda g, n, r: r * (g - row_mean(g) - n * row_mean(g * n)),
        terms=64,
        magnitudes=lambda g, n, r: r * (g + row_mean(g) + n * row_mean(g * n)),
    )


def edge_cases():
    """Element counts at the edges of 64-wide workgroups, for the elementwise and reduce kernels.

    (tests/python/test_kernels.py sweeps the same counts through every kernel family
    against numpy directly; the vectors keep the file small.)
    """
    for n in EDGE_SIZES:
        yield Case(f"Exp of {n}", [(uniform(-3, 3, n), F)], lambda t, x: topos.exp(x), np.exp)
        if n < 4096:
            yield Case(
                f"Mul [{n}] by a broadcast [1]",
                [(normal(n), F), (normal(1), F)],
                lambda t, a, b: a * b,
                lambda a, b: a * b,
            )
        yield Case(f"Sum of {n}", [(normal(n), F)], lambda t, x: x.sum(), lambda x: x.sum(), terms=n)


def tiled_matmul_cases():
    # Products the tiled kernel runs (launch.matmul_strategy), with blocks past the output's edges,
    # read through a transpose and a broadcast batch. Last of the groups, so that the random values
    # of the cases before it stay as they were.
    yield Case(
        "MatMul tiled, transposed and broadcast [33, 40].T @ [2, 33, 36]",
        [(normal(33, 40), F), (normal(2, 33, 36), F)],
        lambda t, a, b: a.T @ b,
        lambda a, b: a.T @ b,
        terms=33,
    )


#: NaN, the infinities, both zeros, the largest finite float32 and ordinary values. No subnormals:
#: WGSL lets a GPU flush them (tests/python/test_nonfinite.py holds what topos promises for them).
SPECIAL_VALUES = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4028234663852886e38, -3.4028234663852886e38, 1.0, -2.5, 0.5]
)
#: Rows of four holding NaN and infinities, without the largest finite value (a float32 row's
#: variance overflows where the float64 oracle's does not).
SPECIAL_ROWS = np.array(
    [
        [np.nan, 1.0, -2.0, 0.5],
        [1.0, np.inf, -2.0, 0.5],
        [1.0, -2.0, -np.inf, 0.5],
        [np.inf, -np.inf, 1.0, 2.0],
        [np.nan, np.inf, 1.0, 2.0],
        [-np.inf, -np.inf, -np.inf, -np.inf],
        [-0.0, 0.0, -0.0, 0.0],
        [1.0, -2.0, 0.5, 3.0],
    ]
)


def nonfinite_cases():
    """NaN and infinities through every elementwise op, the comparisons, the reductions and the
    fused row kernels: NaN where numpy has NaN, the same infinities (docs/kernels.md, "NaN and infinities")."""
    unary = {
        "Neg": (lambda t, x: -x, lambda x: -x),
        "Exp": (lambda t, x: topos.exp(x), np.exp),
        "Log": (lambda t, x: topos.log(x), np.log),
        "Sqrt": (lambda t, x: topos.sqrt(x), np.sqrt),
        "Rsqrt": (lambda t, x: topos.rsqrt(x), lambda x: 1.0 / np.sqrt(x)),
        "Tanh": (lambda t, x: topos.tanh(x), np.tanh),
        "Sigmoid": (lambda t, x: topos.sigmoid(x), lambda x: 1.0 / (1.0 + np.exp(-x))),
        "Relu": (lambda t, x: topos.relu(x), lambda x: np.maximum(x, 0.0)),
        "Gelu": (lambda t, x: topos.gelu(x), gelu),
    }
    for opcode in derived_unary_rows(unary):  # a plain table row listed nowhere above
        unary[opcode] = (recording(opcode), numpy_forward(opcode))
    for opcode, (record, oracle) in unary.items():
        yield Case(f"{opcode} of NaN, infinities, zeros and the largest float32", [(SPECIAL_VALUES, F)], record, oracle)
    x, y = np.repeat(SPECIAL_VALUES, len(SPECIAL_VALUES)), np.tile(SPECIAL_VALUES, len(SPECIAL_VALUES))
    binary = {
        "Add": (lambda t, a, b: a + b, lambda a, b: a + b),
        "Sub": (lambda t, a, b: a - b, lambda a, b: a - b),
        "Mul": (lambda t, a, b: a * b, lambda a, b: a * b),
        "Div": (lambda t, a, b: a / b, lambda a, b: a / b),
        "Pow": (lambda t, a, b: a**b, np.power),
        "Maximum": (lambda t, a, b: topos.maximum(a, b), np.maximum),
        "Minimum": (lambda t, a, b: topos.minimum(a, b), np.minimum),
        "Less": (lambda t, a, b: topos.less(a, b), lambda a, b: np.less(a, b).astype(np.float64)),
        "Equal": (lambda t, a, b: topos.equal(a, b), lambda a, b: np.equal(a, b).astype(np.float64)),
        "NotEqual": (lambda t, a, b: topos.not_equal(a, b), lambda a, b: np.not_equal(a, b).astype(np.float64)),
        "Where": (lambda t, c, a: topos.where(c, a, -a), lambda c, a: np.where(c != 0, a, -a)),
    }
    for opcode in derived_binary_rows(binary):  # a plain table row listed nowhere above
        binary[opcode] = (recording(opcode), numpy_oracle(opcode))
    for opcode, (record, oracle) in binary.items():
        yield Case(
            f"{opcode} of every pair of NaN, infinities, zeros and the largest float32",
            [(x, F), (y, F)],
            record,
            oracle,
        )
    rows = {
        "Sum over the last axis": (lambda t, v: v.sum(axis=-1), lambda v: v.sum(axis=-1)),
        "Max over the last axis": (lambda t, v: v.max(axis=-1), lambda v: v.max(axis=-1)),
        "Max over axis 0": (lambda t, v: v.max(axis=0), lambda v: v.max(axis=0)),
        "min over the last axis": (lambda t, v: topos.min(v, -1), lambda v: v.min(axis=-1)),
        "softmax": (lambda t, v: topos.softmax(v, -1), softmax),
        "log_softmax": (lambda t, v: topos.log_softmax(v, -1), log_softmax),
        "layer_norm": (lambda t, v: topos.layer_norm(v), lambda v: layer_norm(v, 1.0, 0.0)),
        "MatMul": (lambda t, v: v @ t.leaf(np.full((4, 3), 0.5)), lambda v: v @ np.full((4, 3), 0.5)),
    }
    for name, (record, oracle) in rows.items():
        yield Case(f"{name} of rows holding NaN and infinities [8, 4]", [(SPECIAL_ROWS, F)], record, oracle, terms=4)


def naive_convolution(x, w, strides=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1):
    """A 2-D convolution as a loop over the window (independent of topos's im2col forward), in float64."""
    x = np.pad(x, ((0, 0), (0, 0)) + tuple(padding))
    n, c, height, width = x.shape
    o, per_group, kh, kw = w.shape
    out_h = (height - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = (width - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    out = np.zeros((n, o, out_h, out_w), dtype=np.result_type(x, w))
    for channel in range(o):
        group = channel // (o // groups)
        inputs = x[:, group * per_group : (group + 1) * per_group]
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilation[0], i * dilation[0] + (out_h - 1) * strides[0] + 1, strides[0])
                columns = slice(j * dilation[1], j * dilation[1] + (out_w - 1) * strides[1] + 1, strides[1])
                out[:, channel] += np.einsum("nchw,c->nhw", inputs[:, :, rows, columns], w[channel, :, i, j])
    return out


def convolution_cases():
    # The edge sizes of the convolution kernel: 1x1 images, a kernel as large as the image, a stride
    # past the kernel, groups = channels; and the kernel's reversal (the input gradient's). Drawn from
    # the op's own generator, so the cases before these keep their values.
    draw = op_rng("Convolution")

    def case(name, x_shape, w_shape, **options):
        x, w = draw.normal(size=x_shape), draw.normal(size=w_shape)
        terms = int(np.prod(w_shape[1:]))
        padding = options.get("padding", 0)
        pairs = ((padding, padding), (padding, padding))
        keywords = dict(strides=(options.get("stride", 1),) * 2, padding=pairs, groups=options.get("groups", 1))
        return Case(
            name,
            [(x, F), (w, F)],
            lambda t, a, b: topos.conv2d(a, b, **options),
            lambda a, b: naive_convolution(a, b, **keywords),
            terms=terms,
        )

    yield case("Convolution of 1x1 images [3, 5, 1, 1] by [7, 5, 1, 1]", (3, 5, 1, 1), (7, 5, 1, 1))
    yield case("Convolution, kernel = image [2, 3, 5, 4] by [4, 3, 5, 4]", (2, 3, 5, 4), (4, 3, 5, 4))
    yield case("Convolution, stride 4 past a 2x2 kernel [2, 3, 10, 11]", (2, 3, 10, 11), (4, 3, 2, 2), stride=4)
    yield case("Convolution depthwise, groups = channels [2, 6, 7, 7]", (2, 6, 7, 7), (6, 1, 3, 3), groups=6, padding=1)
    yield case("Convolution past one workgroup [3, 4, 13, 11] by [5, 4, 3, 3]", (3, 4, 13, 11), (5, 4, 3, 3), padding=1)
    yield Case(
        "Reverse [3, 4, 5] along axes 0 and 2",
        [(draw.normal(size=(3, 4, 5)), F)],
        lambda t, x: t.apply("Reverse", [x], axes=(0, 2)),
        lambda x: x[::-1, :, ::-1],
    )


def scan_cases():
    """ArgMax, ArgMin and TopK (their int32 indices read as a one-hot) and CumSum, at edge lengths."""
    for n in EDGE_SIZES:
        x = normal(3, n)
        x[1, n // 2] = x[1, 0] = x[1].max() + 1.0  # a tie: the lower index wins
        yield Case(
            f"ArgMax and ArgMin of [3, {n}] with a tie, as a one-hot",
            [(x, F)],
            lambda t, v, n=n: [topos.one_hot(topos.argmax(v), n), topos.one_hot(topos.argmin(v), n)],
            lambda v, n=n: [np.eye(n)[np.argmax(v, -1)], np.eye(n)[np.argmin(v, -1)]],
        )
        yield Case(
            f"CumSum of [3, {n}] forward and reversed",
            [(x, F)],
            lambda t, v: [topos.cumsum(v), topos.cumsum(v, reverse=True)],
            lambda v: [np.cumsum(v, -1), np.cumsum(v[:, ::-1], -1)[:, ::-1]],
            terms=n,
            magnitudes=lambda v: np.sum(v, -1, keepdims=True),
        )
    yield Case(
        "CumSum along axis 0 of [5, 3, 4] (a strided row)",
        [(normal(5, 3, 4), F)],
        lambda t, v: topos.cumsum(v, 0),
        lambda v: np.cumsum(v, 0),
        terms=5,
    )
    x = normal(4, 9)
    x[2, 3] = x[2, 7] = 5.0
    yield Case(
        "TopK 3 of [4, 9] with a tie: values and a one-hot of the indices",
        [(x, F)],
        lambda t, v: [topos.top_k(v, 3)[0], topos.one_hot(topos.top_k(v, 3)[1], 9)],
        lambda v: [
            np.take_along_axis(v, np.argsort(-v, -1, kind="stable")[:, :3], -1),
            np.eye(9)[np.argsort(-v, -1, kind="stable")[:, :3]],
        ],
    )


def index_equal_cases():
    predicted, labels = rng.integers(0, 4, (3, 5)), rng.integers(0, 4, (3, 5))
    labels[0] = predicted[0]
    yield Case(
        "Equal and NotEqual of int32 [3, 5] (IndexToFloat each), an accuracy's mean",
        [(predicted, I), (labels, I)],
        lambda t, p, q: [topos.equal(p, q), topos.not_equal(p, q), topos.mean(topos.equal(p, q))],
        lambda p, q: [(p == q).astype(float), (p != q).astype(float), np.mean(p == q)],
    )


def jax_key(key):
    import jax

    return jax.random.wrap_key_data(np.asarray(key, dtype=np.uint32))


def jax_bits(key, shape):
    import jax

    return np.asarray(jax.random.bits(jax_key(key), shape, dtype=np.uint32))


def random_cases():
    """Threefry-2x32 against JAX (``jax.random``): bits, keys and floats exactly, dropout's mask
    from JAX's bits."""
    import jax

    key = np.array([1234, 5678], dtype=np.uint32)
    yield Case(
        "RandomBits [3, 67] (jax.random.bits)",
        [(key, U)],
        lambda t, k: topos.random_bits(k, (3, 67)),
        lambda k: jax_bits(k, (3, 67)),
    )
    yield Case(
        "RandomBits rank 3 [2, 3, 5] of key [0, 0]",
        [(np.zeros(2, np.uint32), U)],
        lambda t, k: topos.random_bits(k, (2, 3, 5)),
        lambda k: jax_bits(k, (2, 3, 5)),
    )
    yield Case(
        "SplitKey into 5 keys (jax.random.split)",
        [(key, U)],
        lambda t, k: topos.split_key(k, 5),
        lambda k: np.asarray(jax.random.key_data(jax.random.split(jax_key(k), 5))),
    )
    yield Case(
        "FoldIn of 2026 (jax.random.fold_in)",
        [(key, U)],
        lambda t, k: topos.fold_in(k, 2026),
        lambda k: np.asarray(jax.random.key_data(jax.random.fold_in(jax_key(k), 2026))),
    )
    yield Case(
        "RandomBits [70] of the fourth of 5 split keys",
        [(key, U)],
        lambda t, k: topos.random_bits(topos.split_key(k, 5)[3], (70,)),
        lambda k: jax_bits(np.asarray(jax.random.key_data(jax.random.split(jax_key(k), 5)))[3], (70,)),
    )
    yield Case(
        "Uniform float32 [130] (jax.random.uniform)",
        [(key, U)],
        lambda t, k: topos.uniform(k, (130,)),
        lambda k: np.asarray(jax.random.uniform(jax_key(k), (130,), dtype=np.float32)).astype(np.float64),
    )
    yield Case(
        "RandomInt [5, 40] in [0, 9) (jax.random.randint), as a one-hot",
        [(key, U)],
        lambda t, k: topos.one_hot(topos.randint(k, (5, 40), 0, 9), 9),
        lambda k: np.eye(9)[np.asarray(jax.random.randint(jax_key(k), (5, 40), 0, 9))],
    )
    yield Case(
        "BitField: a [70] vector shuffled by permutation (jax.random.permutation)",
        [(np.random.default_rng(70).normal(size=70), F), (key, U)],  # its own generator: later cases keep theirs
        lambda t, x, k: topos.permutation(k, x),
        lambda x, k: x[np.asarray(jax.random.permutation(jax_key(k), 70))],
    )
    yield Case(
        "dropout at rate 0.25 of [4, 33]",
        [(normal(4, 33), F), (key, U)],
        lambda t, x, k: topos.dropout(x, 0.25, k),
        lambda x, k: np.where(jax_bits(k, (4, 33)) < np.uint32(3 << 30), x / 0.75, 0.0),
    )


def pool_windows(x, attrs, fill):
    """Every window of ``x`` (padded with ``fill``) as trailing axes: [*grid, *window] (numpy's sliding windows)."""
    xp = np.pad(x, attrs["padding"], constant_values=fill)
    views = np.lib.stride_tricks.sliding_window_view(xp, attrs["window"])
    return xp, views[tuple(slice(None, None, s) for s in attrs["strides"])]


def pool_selected(x, attrs):
    """For each window (in the grid's order), the padded position of its first maximum (np.argmax's rule)."""
    xp, views = pool_windows(x, attrs, -np.inf)
    grid = views.shape[: x.ndim]
    flat = views.reshape(grid + (-1,))
    positions = []
    for w in np.ndindex(*grid):
        offset = np.unravel_index(int(np.argmax(flat[w])), attrs["window"])
        positions.append((w, tuple(i * s + o for i, s, o in zip(w, attrs["strides"], offset))))
    return xp, grid, positions


def pool_scatter(g, x, attrs):
    xp, grid, positions = pool_selected(x, attrs)
    out = np.zeros(xp.shape)
    for w, position in positions:
        out[position] += g[w]
    return out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, attrs["padding"]))]


def pool_gather(t, x, attrs):
    _, grid, positions = pool_selected(x, attrs)
    tp = np.pad(t, attrs["padding"])
    out = np.zeros(grid)
    for w, position in positions:
        out[w] = tp[position]
    return out


def pooling_cases():
    """The window kernels (pooling) at edge sizes: 1x1 images, a window as large as the image, strides
    past the window, (low, high) padding, 1-D; ReLU'd inputs, whose zeros tie."""
    edges = [
        ((3, 2, 1, 1), (1, 1), (1, 1), ((0, 0), (0, 0))),
        ((2, 3, 5, 4), (5, 4), (1, 1), ((0, 0), (0, 0))),
        ((2, 2, 7, 7), (2, 2), (3, 3), ((1, 1), (0, 1))),
        ((2, 3, 6, 5), (3, 2), (2, 1), ((1, 2), (0, 1))),
        ((4, 3, 9), (3,), (1,), ((1, 1),)),
        ((4, 16, 8, 8), (2, 2), (2, 2), ((0, 0), (0, 0))),
    ]
    for shape, window, strides, padding in edges:
        attrs = dict(window=(1, 1) + window, strides=(1, 1) + strides, padding=((0, 0), (0, 0)) + padding)
        x = np.maximum(normal(*shape), 0.0)
        grid = pool_windows(x, attrs, 0.0)[1].shape[: len(shape)]
        size = int(np.prod(window))
        label = f"{list(shape)} window {list(window)} strides {list(strides)} padding {[list(p) for p in padding]}"
        yield Case(
            f"WindowSum of {label}",
            [(x, F)],
            lambda t, v, a=attrs: t.apply("WindowSum", [v], **a),
            lambda v, a=attrs: pool_windows(v, a, 0.0)[1].sum(axis=tuple(range(v.ndim, 2 * v.ndim))),
            terms=size,
        )
        yield Case(
            f"WindowMax of {label}",
            [(x, F)],
            lambda t, v, a=attrs: t.apply("WindowMax", [v], **a),
            lambda v, a=attrs: pool_windows(v, a, -np.inf)[1].max(axis=tuple(range(v.ndim, 2 * v.ndim))),
        )
        overlaps = int(np.prod([-(-k // s) for k, s in zip(window, strides)]))
        yield Case(
            f"SelectAndScatterAdd of {label}",
            [(normal(*grid), F), (x, F)],
            lambda t, g, v, a=attrs: t.apply("SelectAndScatterAdd", [g, v], **a),
            lambda g, v, a=attrs: pool_scatter(g, v, a),
            terms=overlaps,
            magnitudes=lambda g, v, a=attrs: pool_scatter(g, v, a),
        )
        yield Case(
            f"SelectAndGather of {label}",
            [(normal(*shape), F), (x, F)],
            lambda t, u, v, a=attrs: t.apply("SelectAndGather", [u, v], **a),
            lambda u, v, a=attrs: pool_gather(u, v, a),
        )


def _spd(*shape):
    """Symmetric positive-definite matrices [..., n, n], well conditioned (a a^T + n I)."""
    a = normal(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _pairs(z):
    """numpy complex values as topos's real/imaginary pairs [..., 2]."""
    return np.stack([z.real, z.imag], axis=-1)


def _conditioned(oracle, *arrays):
    """The rounding scale of a factorisation's results: the largest result times the largest condition
    number among the matrices (a backward-stable factorisation's forward error grows with it)."""
    with np.errstate(all="ignore"):
        results = oracle(*arrays)
    results = results if isinstance(results, (list, tuple)) else [results]
    largest = max(float(np.max(np.abs(r), initial=0.0)) for r in results)
    square = [a for a in arrays if a.shape[-1] == a.shape[-2]] or [arrays[0]]
    return np.array(largest * max(float(np.max(np.linalg.cond(a))) for a in square))


def linalg_cases():
    """The factorisations through topos.linalg's functions, each against numpy.linalg in float64. Results with a
    free sign (eigenvectors, Q, U and V) are checked through what does not depend on it: the matrix they
    rebuild, and the factors' magnitudes. Each bound adds the conditioning of its matrices (``_conditioned``)."""

    def case(name, inputs, record, oracle, n):
        arrays = [np.asarray(array, dtype=np.float64) for array, _ in inputs]
        scale = _conditioned(oracle, *arrays)
        return Case(name, inputs, record, oracle, terms=n**3, magnitudes=lambda *_: scale)

    def rebuilt(vectors, values, right):
        return (vectors * topos.expand_dims(values, -2)) @ right

    for n in (1, 2, 5):
        a, b = _spd(2, n, n), normal(2, n, 3)
        yield case(
            f"Cholesky of [2, {n}, {n}] and cho_solve",
            [(a, F), (b, F)],
            lambda t, a, b: [topos.linalg.cholesky(a), topos.linalg.cho_solve(topos.linalg.cholesky(a), b)],
            lambda a, b: [np.linalg.cholesky(a), np.linalg.solve(a, b)],
            n,
        )
        m = np.tril(normal(2, n, n)) + 3.0 * np.eye(n)
        yield case(
            f"TriangularSolve of [2, {n}, {n}], lower and as an upper transposed",
            [(m, F), (b, F)],
            lambda t, m, b: [
                topos.linalg.triangular_solve(m, b),
                topos.linalg.triangular_solve(topos.swapaxes(m, -1, -2), b, lower=False, transpose_a=True),
            ],
            lambda m, b: [np.linalg.solve(m, b), np.linalg.solve(m, b)],
            n,
        )
        g = normal(2, n, n) + 2.0 * np.eye(n)
        yield case(
            f"Lu of [2, {n}, {n}] through solve and inv",
            [(g, F), (b, F)],
            lambda t, g, b: [topos.linalg.solve(g, b), topos.linalg.inv(g)],
            lambda g, b: [np.linalg.solve(g, b), np.linalg.inv(g)],
            n,
        )
        # The determinant apart: its scale (a product of n pivots) would loosen the solve's bound.
        yield case(
            f"Lu of [2, {n}, {n}] through det and slogdet",
            [(g, F)],
            lambda t, g: [topos.linalg.det(g), topos.linalg.slogdet(g)[1]],
            lambda g: [np.linalg.det(g), np.linalg.slogdet(g)[1]],
            n,
        )
        yield case(
            f"Eigh of [2, {n}, {n}]: the eigenvalues and the matrix its vectors rebuild",
            [(a, F)],
            lambda t, a: [
                topos.linalg.eigh(a)[0],
                rebuilt(
                    topos.linalg.eigh(a)[1], topos.linalg.eigh(a)[0], topos.swapaxes(topos.linalg.eigh(a)[1], -1, -2)
                ),
            ],
            lambda a: [np.linalg.eigvalsh(a), a],
            n,
        )
        tall = normal(2, n + 2, n)
        yield case(
            f"Qr of [2, {n + 2}, {n}]: |r| and q r",
            [(tall, F)],
            lambda t, a: [topos.abs(topos.linalg.qr(a)[1]), topos.linalg.qr(a)[0] @ topos.linalg.qr(a)[1]],
            lambda a: [np.abs(np.linalg.qr(a)[1]), a],
            n + 2,
        )
        yield case(
            f"Svd of [2, {n + 2}, {n}]: the singular values and u diag(s) vh",
            [(tall, F)],
            lambda t, a: [topos.linalg.svdvals(a), rebuilt(*topos.linalg.svd(a)[:2], topos.linalg.svd(a)[2])],
            lambda a: [np.linalg.svd(a, compute_uv=False), a],
            n + 2,
        )

    # Cholesky and TriangularSolve at the largest sizes their WebGPU kernels take (topos.compiler.wgsl.linalg:
    # MAX_CHOLESKY, MAX_SOLVE), each matrix built in the graph from a few columns and a one-hot identity, so
    # that the file stays small; a generator of their own keeps the later cases' draws. Each result is a chain
    # of dot products of n terms amplified by the matrix's condition: terms n, magnitude kappa times the result.
    draw = np.random.default_rng(256)
    n, m = 256, 512

    def cholesky_largest(t, x, b, rows):
        eye = topos.one_hot(rows, n)
        factor = topos.linalg.cholesky(x @ topos.swapaxes(x, -1, -2) + eye * float(n))
        return [topos.sum(factor * eye, -1), topos.linalg.cho_solve(factor, b) * float(n)]

    def cholesky_exact(x, b, rows):
        a = x @ x.T + n * np.eye(n)
        return [np.diagonal(np.linalg.cholesky(a)), np.linalg.solve(a, b) * n]

    def solve_largest(t, u, v, b, rows):
        matrix = topos.one_hot(rows, m) * 3.0 + u @ topos.swapaxes(v, -1, -2) / float(m)
        return [
            topos.linalg.triangular_solve(matrix, b),
            topos.linalg.triangular_solve(matrix, b, lower=False, transpose_a=True),
        ]

    def solve_exact(u, v, b, rows):
        t = 3 * np.eye(m) + u @ v.T / m
        return [np.linalg.solve(np.tril(t), b), np.linalg.solve(np.triu(t).T, b)]

    def conditioned(exact, matrices, inputs):
        """The scale kappa times the largest result, of the inputs as float32 holds them (``magnitudes``
        gets their absolute values, which would make other matrices)."""
        arrays = [np.asarray(array, dtype=dtype).astype(np.float64) for array, dtype in inputs]
        largest = max(np.abs(r).max() for r in exact(*arrays))
        scale = largest * max(np.linalg.cond(a) for a in matrices(*arrays))
        return lambda *_: np.array(scale)

    inputs = [(draw.normal(size=(n, 4)), F), (draw.normal(size=(n, 2)), F), (np.arange(n), I)]
    yield Case(
        f"Cholesky of [{n}, {n}] (the kernel's largest): its diagonal and cho_solve",
        inputs,
        cholesky_largest,
        cholesky_exact,
        terms=n,
        magnitudes=conditioned(cholesky_exact, lambda x, b, rows: [x @ x.T + n * np.eye(n)], inputs),
    )
    inputs = [(draw.normal(size=(m, 1)), F), (draw.normal(size=(m, 1)), F), (draw.normal(size=(m, 2)), F)]
    inputs.append((np.arange(m), I))

    def triangles(u, v, b, rows):
        t = 3 * np.eye(m) + u @ v.T / m
        return [np.tril(t), np.triu(t)]

    yield Case(
        f"TriangularSolve of [{m}, {m}] (the kernel's largest), lower and as an upper transposed",
        inputs,
        solve_largest,
        solve_exact,
        terms=m,
        magnitudes=conditioned(solve_exact, triangles, inputs),
    )

    # Eigh at the largest size its WebGPU kernel takes (topos.compiler.wgsl.eigh.MAX_SIZE), recorded once; drawn
    # from a generator of its own, so that the cases after it keep their draws.
    def eigh_rebuilt(t, a):
        values, vectors = topos.linalg.eigh(a)
        return [values, rebuilt(vectors, values, topos.swapaxes(vectors, -1, -2))]

    g = np.random.default_rng(64).normal(size=(2, 64, 64))
    a = g @ np.swapaxes(g, -1, -2) + 64 * np.eye(64)
    yield case(
        "Eigh of [2, 64, 64] (the kernel's largest): the eigenvalues and the matrix its vectors rebuild",
        [(a, F)],
        eigh_rebuilt,
        lambda a: [np.linalg.eigvalsh(a), a],
        64,
    )


def fft_cases():
    """The transforms against numpy.fft, complex values as real/imaginary pairs; n = 1024, one
    transform, is the longest the WebGPU kernels take (kernels/fft.wgsl's Stockham entries)."""
    for n in (1, 2, 8, 13, 1024):
        rows = 3 if n < 1024 else 1
        z = _pairs(normal(rows, n) + 1j * normal(rows, n))
        x = normal(rows, n)
        yield Case(
            f"Fft and its inverse of [{rows}, {n}] pairs",
            [(z, F)],
            lambda t, z: [topos.fft.fft(z), topos.fft.ifft(z)],
            lambda z: [_pairs(np.fft.fft(z[..., 0] + 1j * z[..., 1])), _pairs(np.fft.ifft(z[..., 0] + 1j * z[..., 1]))],
            terms=n,
            magnitudes=lambda z, n=n: np.full(z.shape, np.sum(z, axis=(-2, -1)).max()),
        )
        yield Case(
            f"Rfft of [{rows}, {n}] and Irfft back",
            [(x, F)],
            lambda t, x, n=n: [topos.fft.rfft(x), topos.fft.irfft(topos.fft.rfft(x), n)],
            lambda x, n=n: [_pairs(np.fft.rfft(x)), np.fft.irfft(np.fft.rfft(x), n)],
            terms=n,
            magnitudes=lambda x, n=n: np.full(x.shape, np.sum(x, -1).max()),
        )


def sort_cases():
    """Sort and Argsort (each element's rank) both ways at ties and infinities, TakeAlongAxis, ScatterAddAlongAxis and
    SearchSorted (a one-hot), from a draw of their own (the shared draw's later cases stay as they were)."""
    own = np.random.default_rng(32)
    for n in (1, 7, 64, 65, 1023):
        x = own.integers(-3, 4, (3, n)).astype(np.float64)  # many ties
        x[0, :: max(n // 3, 1)] = np.inf
        x[2, -1] = -np.inf
        for descending in (False, True):
            order = _stable_order(x, descending)
            yield Case(
                f"Sort and Argsort of [3, {n}] with ties and infinities, {'descending' if descending else 'ascending'}",
                [(x, F)],
                lambda t, v, n=n, d=descending: [
                    topos.sort(v, descending=d),
                    _ranks(t, topos.argsort(v, descending=d)),
                ],
                lambda v, n=n, order=order: [np.take_along_axis(v, order, -1), _oracle_ranks(order)],
            )
    ids = own.integers(0, 5, (4, 6, 3)).astype(np.int32)
    yield Case(
        "TakeAlongAxis of [4, 5, 3] at [4, 6, 3] along axis 1, and ScatterAddAlongAxis back into 5",
        [(normal(4, 5, 3), F), (ids, I), (normal(4, 6, 3), F)],
        lambda t, v, i, u: [
            topos.take_along_axis(v, i, 1),
            t.apply("ScatterAddAlongAxis", [u, i], axis=1, extent=5),
        ],
        # (The magnitudes' pass hands the indices in as floats: cast back.)
        lambda v, i, u: [np.take_along_axis(v, i.astype(np.intp), 1), _scatter_along(u, i.astype(np.intp), 1, 5)],
        terms=6,
    )
    a = np.sort(own.integers(-4, 5, 9)).astype(np.float64)
    v = np.concatenate([a[::2], [-9.0, 9.0, 0.5]])
    yield Case(
        "SearchSorted left and right of 8 values in a sorted [9] with repeats, as a one-hot",
        [(a, F), (v, F)],
        lambda t, s, w: [
            topos.one_hot(topos.searchsorted(s, w), 10),
            topos.one_hot(topos.searchsorted(s, w, side="right"), 10),
        ],
        lambda s, w: [np.eye(10)[np.searchsorted(s, w)], np.eye(10)[np.searchsorted(s, w, side="right")]],
    )


def _stable_order(x, descending):
    if not descending:
        return np.argsort(x, -1, kind="stable")
    return x.shape[-1] - 1 - np.argsort(x[:, ::-1], -1, kind="stable")[:, ::-1]


def _ranks(t, positions):
    """Each element's place in the sorted row, as floats (the positions scattered back: exact and n long,
    where a one-hot of the positions is n^2)."""
    n = positions.shape[-1]
    places = t.leaf(np.broadcast_to(np.arange(n, dtype=np.float32), positions.shape))
    return t.apply("ScatterAddAlongAxis", [places, positions], axis=len(positions.shape) - 1, extent=n)


def _oracle_ranks(order):
    ranks = np.zeros(order.shape)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(order.shape[-1], dtype=float), order.shape), -1)
    return ranks


def _scatter_along(u, ids, axis, extent):
    out = np.zeros(u.shape[:axis] + (extent,) + u.shape[axis + 1 :])
    at = list(np.indices(ids.shape))
    at[axis] = ids
    np.add.at(out, tuple(at), u)
    return out


def cumulative_cases():
    """Prod, CumProd, CumMax, CumMin and LogCumSumExp (topos.ops.cumulative) at edge lengths, from a
    generator of their own (the cases before keep their draws). Products of terms near 1, so that no
    running product of a row over- or underflows; a product's rounding is bounded as a sum's, by the
    product's own magnitude. Up to 1023 elements: CumSum's case holds the scan kernel at 4097, and
    test_cumulative holds these folds there natively (four more [3, 4097] cases would take the file
    past 2 MB)."""
    draw = np.random.default_rng(32)
    for n in EDGE_SIZES[:-1]:
        near_one = draw.uniform(0.95, 1.05, (3, n))
        near_one[2, n // 2] = 0.0  # a zero: every product from it on is 0
        yield Case(
            f"Prod and CumProd of [3, {n}] near 1, forward and reversed",
            [(near_one, F)],
            lambda t, v: [topos.prod(v, -1), topos.cumprod(v), topos.cumprod(v, reverse=True)],
            lambda v: [np.prod(v, -1), np.cumprod(v, -1), np.cumprod(v[:, ::-1], -1)[:, ::-1]],
            terms=n,
            magnitudes=lambda v: np.max(np.cumprod(v, -1), -1),
        )
        x = draw.normal(0.0, 2.0, (3, n))
        x[1, n // 2] = x[1, 0]  # a tie of the running maximum and minimum
        yield Case(
            f"CumMax and CumMin of [3, {n}] with a tie, forward and reversed",
            [(x, F)],
            lambda t, v: [topos.cummax(v), topos.cummin(v, reverse=True)],
            lambda v: [np.maximum.accumulate(v, -1), np.minimum.accumulate(v[:, ::-1], -1)[:, ::-1]],
        )
        yield Case(
            f"LogCumSumExp of [3, {n}] forward and reversed",
            [(x, F)],
            lambda t, v: [topos.logcumsumexp(v), topos.logcumsumexp(v, reverse=True)],
            lambda v: [np.logaddexp.accumulate(v, -1), np.logaddexp.accumulate(v[:, ::-1], -1)[:, ::-1]],
            terms=n,
        )
    yield Case(
        "Prod over axes 0 and 2 of [3, 4, 5], kept, and CumMax along axis 0 (strided rows)",
        [(draw.uniform(0.5, 1.5, (3, 4, 5)), F)],
        lambda t, v: [topos.prod(v, (0, 2), keepdims=True), topos.cummax(v, 0)],
        lambda v: [np.prod(v, (0, 2), keepdims=True), np.maximum.accumulate(v, 0)],
        terms=15,
    )


def special_cases():
    """Polygamma, the special function with an attribute (the others are plain rows, taken above):
    orders 1 to 3 on positive values and between the poles, drawn from its own generator."""
    from scipy import special

    draw = np.random.default_rng(1_4616)  # its own: the cases before it keep their values
    positive = draw.uniform(0.05, 30, (7, 9))
    negative = (-draw.integers(0, 6, (7, 9)) - draw.uniform(0.1, 0.9, (7, 9))).astype(np.float64)
    for n in (1, 2, 3):
        for what, data in (("positive", positive), ("between the poles", negative)):
            yield Case(
                f"Polygamma of order {n} [7, 9], {what}",
                [(data, F)],
                lambda t, x, n=n: topos.polygamma(n, x),
                lambda x, n=n: special.polygamma(n, x),
            )


def all_cases():
    for group in (
        unary_cases,
        binary_cases,
        reduction_cases,
        matmul_cases,
        shape_cases,
        index_cases,
        fused_cases,
        edge_cases,
        derivative_cases,
        tiled_matmul_cases,
        nonfinite_cases,
        scan_cases,
        index_equal_cases,
        convolution_cases,
        random_cases,
        pooling_cases,
        linalg_cases,
        fft_cases,
        sort_cases,
        cumulative_cases,
        special_cases,
    ):
        yield from group()


def main():
    # The non-finite cases make NaN and infinities on purpose, and their float32 encodings overflow.
    with np.errstate(all="ignore"):
        cases = [case.build() for case in all_cases()]
    document = {
        "format": FORMAT,
        "about": "Shared test vectors; see tests/cases/README.md. Written by tests/cases/generate.py.",
        "cases": cases,
    }
    path = Path(__file__).with_name("primitives.json")
    path.write_text(json.dumps(document, separators=(",", ":")) + "\n")
    print(f"wrote {len(cases)} cases to {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
