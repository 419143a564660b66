"""Every primitive and composite against PyTorch on the CPU, forward and backward.

Each case records an operation on a topos tape and spells the same operation in
torch. Both get the same inputs and, for the backward, the same cotangent ``u``:
topos differentiates ``sum(out * u)`` recorded on the tape, torch runs
``out.backward(u)``. Outputs and input gradients must agree to about float32
precision in float32 (rtol 1e-5) and to about 1e-10 in float64, plus the rounding of their sums in
each library's order (``tolerances.library_bound``).

Derivatives at kinks follow torch: relu'(0) = 0; maximum, minimum and max split
the cotangent evenly among ties (torch.amax's rule); pow's exponent gradient is 0
where the base is 0.
"""

from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from op_specs import (
    OP_SPECS,
    POSITIVE,
    WITH_TIES,
    derived_rows,
    example_arrays,
    example_rows,
    numpy_call,
    op_rng,
    public_name,
    recorded,
    recording,
    spread_sampler,
    torch_call,
    torch_function,
)
from tolerances import assert_close, library_bound

import topos
from topos import Tape, detach
from topos.ops import primitives

TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64}

rng = np.random.default_rng(20240613)


def normal(*shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def positive(*shape):
    return POSITIVE.sample(rng, shape)


def operand(opcode, *shape):
    """Values for ``opcode``'s first operand, inside its domain (op_specs.OP_SPECS)."""
    return OP_SPECS[opcode].operands[0].sample(rng, shape)


@dataclass
class OpCase:
    """``topos_fn(tape, *values)`` and ``torch_fn(*tensors)`` compute the same thing from ``arrays``.

    Float arrays are recorded as inputs of the tape's dtype; int32 arrays (indices) and uint32
    ones (random keys) as inputs of their dtype (torch gets them as int64, as its index ops
    want). The first
    float array is recorded as a parameter, the others as inputs.
    """

    name: str
    arrays: list
    topos_fn: object
    torch_fn: object


WITH_ZEROS = np.array([[-1.5, 0.0, 0.25], [0.0, 2.0, -0.5]])

# Every elementwise op is checked from its op_specs row (``derived_case``, below), and every
# other primitive and composite (products, scans, convolutions, windows, random draws...) from its
# row's examples; the cases here are the exceptions: the Value methods' spelling (x.sqrt()),
# Python numbers, zeros and ties at chosen places, torch spellings that are not one function
# (gelu's approximate="tanh", detach).
CASES = [
    # Unary
    OpCase("sqrt_method", [operand("Sqrt", 3, 4)], lambda tape, x: x.sqrt(), torch.sqrt),
    OpCase("tanh_method", [normal(3, 4, scale=2.0)], lambda tape, x: x.tanh(), torch.tanh),
    OpCase("sigmoid_method", [normal(3, 4, scale=10.0)], lambda tape, x: x.sigmoid(), torch.sigmoid),
    OpCase(
        "sigmoid_extremes",
        [np.array([-800.0, -90.0, -20.0, 0.0, 20.0, 90.0, 800.0])],
        lambda tape, x: x.sigmoid(),
        torch.sigmoid,
    ),
    OpCase("relu", [WITH_ZEROS], lambda tape, x: x.relu(), torch.relu),
    OpCase("gelu", [normal(3, 4, scale=2.0)], lambda tape, x: topos.gelu(x), lambda x: TF.gelu(x, approximate="tanh")),
    OpCase("stop_gradient", [normal(2, 3)], lambda tape, x: topos.stop_gradient(x) * x, lambda x: x.detach() * x),
    # Binary: broadcasting both ways and Python numbers
    OpCase("add_broadcast", [normal(3, 1), normal(4)], lambda tape, a, b: a + b, torch.add),
    OpCase("rsub_number", [normal(2, 3)], lambda tape, a: 1.5 - a, lambda a: 1.5 - a),
    OpCase("mul_broadcast", [normal(2, 1, 3), normal(4, 1)], lambda tape, a, b: a * b, torch.mul),
    OpCase("rdiv_number", [positive(3)], lambda tape, a: 2.0 / a, lambda a: 2.0 / a),
    OpCase("pow_number", [operand("Pow", 5)], lambda tape, a: a**3.0, lambda a: a**3.0),
    OpCase("pow_negative_base", [normal(2, 3)], lambda tape, a: a**2.0 + a**3.0, lambda a: a**2.0 + a**3.0),
    OpCase("pow_zero_base", [np.array([0.0, 0.0, 1.5]), np.array([2.0, 1.0, 2.0])], lambda tape, a, b: a**b, torch.pow),
    OpCase(
        "maximum_ties", [WITH_TIES, WITH_TIES[:, ::-1].copy()], lambda tape, a, b: topos.maximum(a, b), torch.maximum
    ),
    OpCase("minimum_ties", [WITH_TIES, WITH_TIES[::-1].copy()], lambda tape, a, b: topos.minimum(a, b), torch.minimum),
]


def derived_case(opcode):
    """An elementwise op's case from its op_specs row: its public function against its torch
    function, each operand over its spread (drawn from the op's own generator), a binary op's
    second operand of shape [4], so that it is broadcast; small integers, with many ties, for an
    op that decides ties (its gradient splits them as torch's does)."""
    rng = op_rng(opcode)
    shapes = [(3, 4), (4,)][: len(OP_SPECS[opcode].operands)]
    if OP_SPECS[opcode].ties:
        arrays = [rng.integers(-2, 3, shape).astype(float) for shape in shapes]
    else:
        arrays = [spread_sampler(opcode, operand)(rng, shape) for operand, shape in enumerate(shapes)]
    function = torch_function(opcode)
    # A comparison's torch answer is bool; topos's is 1.0 or 0.0 in the operands' dtype.
    return OpCase(public_name(opcode), arrays, recording(opcode), lambda *t: function(*t).to(t[0].dtype))


# Every elementwise op with a torch spelling in its row is checked from the row.
CASES += [
    derived_case(opcode)
    for opcode in derived_rows({opcode for opcode in OP_SPECS if public_name(opcode) in {c.name for c in CASES}})
]


# Every reduction, shape op, index op and composite is checked from its op_specs row's examples.
CASES += [
    OpCase(example.name, example_arrays(key, example), recorded(example), torch_call(example))
    for key, example in example_rows()
]


def run_topos(case, dtype):
    """(output, [input gradient or None]) from the engine."""
    tape = Tape(dtype)
    values = []
    for position, a in enumerate(case.arrays):
        if a.dtype.kind in "iu":
            values.append(tape.input(a, dtype=a.dtype.name))  # int32 indices, uint32 keys
        elif position == 0:
            values.append(tape.parameter(a))  # the first operand is trainable, the others are fed
        else:
            values.append(tape.input(a))
    out = case.topos_fn(tape, *values)
    cotangent = cotangent_for(case, out.shape)
    target = topos.sum(out * tape.leaf(cotangent))
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    field = run.backward(detach(target))
    grads = [None if a.dtype.kind in "iu" else field.of(detach(v)).numpy() for a, v in zip(case.arrays, values)]
    return run.of(detach(out)).numpy(), grads, network


def run_torch(case, dtype):
    torch_dtype = TORCH_DTYPES[dtype]
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch_dtype)
    try:
        tensors = [
            torch.tensor(a.astype(np.int64))
            if a.dtype.kind in "iu"
            else torch.tensor(a, dtype=torch_dtype, requires_grad=True)
            for a in case.arrays
        ]
        out = case.torch_fn(*tensors)
        if out.requires_grad:
            out.backward(torch.tensor(cotangent_for(case, tuple(out.shape)), dtype=torch_dtype))
    finally:
        torch.set_default_dtype(previous)
    grads = []
    for a, t in zip(case.arrays, tensors):
        if a.dtype.kind in "iu":
            grads.append(None)
        else:
            grads.append(np.zeros(a.shape) if t.grad is None else t.grad.numpy())
    return out.detach().numpy(), grads


def cotangent_for(case, shape):
    """The same cotangent for both sides: a fixed function of the case and the output shape."""
    seed = sum(ord(c) for c in case.name)
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_matches_torch_forward_and_backward(case, dtype):
    out, grads, _ = run_topos(case, dtype)
    expected_out, expected_grads = run_torch(case, dtype)
    assert out.dtype.name == dtype
    assert out.shape == expected_out.shape
    # No sum, forward or backward, has more terms than the largest operand or the output has elements.
    terms = max([np.size(a) for a in case.arrays] + [out.size])
    assert_close(out, expected_out, library_bound(expected_out, dtype, terms), f"{case.name} forward")
    for position, (grad, expected) in enumerate(zip(grads, expected_grads)):
        if expected is None:
            continue
        assert grad.dtype.name == dtype
        bound = library_bound(expected, dtype, terms)
        assert_close(grad, expected, bound, f"{case.name} gradient of operand {position}")


SPELLED_IN_NUMPY = [(key, example) for key, example in example_rows() if example.numpy is not None]


@pytest.mark.parametrize(("key", "example"), SPELLED_IN_NUMPY, ids=[e.name for _, e in SPELLED_IN_NUMPY])
def test_each_examples_numpy_spelling_computes_what_its_torch_spelling_does(key, example):
    """The numpy call of an op_specs example (the kernels' and the program builder's oracle) is
    held to its torch call in float64, so a wrong spelling fails here, by its name."""
    arrays = example_arrays(key, example)
    tensors = [torch.tensor(a, dtype=torch.int64 if a.dtype.kind in "iu" else torch.float64) for a in arrays]
    want = np.asarray(torch_call(example)(*tensors).detach().numpy(), np.float64)
    got = np.asarray(numpy_call(example)(*arrays), np.float64)
    assert got.shape == want.shape
    terms = max(a.size for a in arrays)
    assert_close(got, want, library_bound(want, "float64", terms), f"{example.name} in numpy")


def test_every_primitive_is_compared_with_torch():
    """Coverage is measured from what the cases record and what their backward adds, not declared by hand."""
    recorded = set()
    for case in CASES:
        _, _, network = run_topos(case, "float64")
        recorded |= {node.opcode for node in network.nodes()}
        target = network.symbol(len(network) - 1)
        wrt = [
            symbol
            for symbol in network.input_symbols() + network.parameter_symbols()
            if network.node(symbol).dtype == "float64"
        ]
        if wrt:
            recorded |= {node.opcode for node in network.entry([]).backward(target, wrt).lower().nodes}
    assert set(primitives()) - recorded == set()
