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
from op_specs import (
    OP_SPECS,
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


@dataclass
class OpCase:
    """``topos_fn(tape, *values)`` and ``torch_fn(*tensors)`` compute the same thing from ``arrays``.

    Float arrays are recorded as inputs of the tape's dtype; int32 arrays (indices) and uint32
    ones (random keys) as inputs of their dtype (torch gets them as int64, as its index ops
    want). The first float array is recorded as a parameter, the others as inputs.
    """

    name: str
    arrays: list
    topos_fn: object
    torch_fn: object


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


# Every op is checked from its op_specs row: an elementwise op from the row itself (its torch
# spelling, over its spread), unless one of the row's examples has the public function's name (gelu
# and stop_gradient, whose torch spelling is not one function; relu at zeros), and every example
# of every row and composite (other spellings, chosen places, shapes and attributes). No case is
# local: a row says each.
EXAMPLE_NAMES = {example.name for _, example in example_rows()}
CASES = [
    derived_case(opcode)
    for opcode in derived_rows({opcode for opcode in OP_SPECS if public_name(opcode) in EXAMPLE_NAMES})
]
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
