"""topos.einsum and the array building functions (topos.model.building) against numpy, over tables.

op_specs' COMPOSITES rows run one call of each in the six per-op suites; here the tables are
wider: every form of subscripts numpy takes, every pad mode at widths past the axis, rolls over
several axes, negative and too-large diagonal offsets. Values are held to numpy (a movement op
copies, so exactly; a contraction within the bound of two orders of its sum), gradients to the
transpose of the linear map numpy's own function gives (built from its basis vectors) or to torch's.
"""

import numpy as np
import pytest
import torch
from tolerances import assert_close, library_bound, sum_bound

import topos
from topos import Tape, detach

RNG = np.random.default_rng(32)


def run(function, arrays, dtype="float64", cotangent_seed=0):
    """``function(*values)``'s value and each operand's gradient of ``sum(out * c)``, a fixed ``c``."""
    tape = Tape(dtype)
    values = [tape.parameter(a) for a in arrays]
    out = function(*values)
    c = np.random.default_rng(cotangent_seed).standard_normal(out.shape)
    target = topos.sum(out * tape.leaf(c))
    network = tape.seal()
    result = network.forward(network.parameters(), {})
    field = result.backward(detach(target))
    return result.of(detach(out)).numpy(), [field.of(detach(v)).numpy() for v in values], c, network


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iii->i", [(3, 3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("iji->j", [(2, 3, 2)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("Ba,aC", [(2, 3), (3, 4)]),
    ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(3,), (4,)]),
    (",i->i", [(), (3,)]),
    ("->", [()]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("i...,...i", [(2, 3, 4), (4, 2)]),
    ("...i->...", [(2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,cd,bc->ad", [(2, 3), (4, 5), (3, 4)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("a,b,c->abc", [(2,), (3,), (4,)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    ("ij,jk->", [(2, 3), (3, 4)]),
    ("ij,kl->ijkl", [(2, 1), (3, 2)]),
    ("ii,j->ij", [(3, 3), (4,)]),
    ("ijk,k->ij", [(2, 0, 3), (3,)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
]


def _terms(subscripts, shapes):
    """How many products each output element of the einsum adds: the summed letters' lengths multiplied."""
    ones = [np.ones(shape) for shape in shapes]
    return int(np.max(np.einsum(subscripts, *ones), initial=1))


@pytest.mark.parametrize("optimize", [False, "greedy"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum_equals_numpy_and_its_gradient_torch(subscripts, shapes, dtype, optimize):
    arrays = [RNG.standard_normal(shape) for shape in shapes]
    got, grads, c, _ = run(lambda *v: topos.einsum(subscripts, *v, optimize=optimize), arrays, dtype)
    want = np.einsum(subscripts, *arrays)
    assert got.shape == want.shape
    # Each element is a sum of n products, in pairs and another order than numpy's: 2 gamma_(n + operands).
    n = _terms(subscripts, shapes) + len(shapes)
    assert_close(got, want, sum_bound(np.einsum(subscripts, *map(np.abs, arrays)), n, dtype), subscripts)
    tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    (torch.einsum(subscripts, *tensors) * torch.tensor(c)).sum().backward()
    for grad, tensor in zip(grads, tensors):
        expected = tensor.grad.numpy()
        assert_close(grad, expected, library_bound(expected, dtype, max(n, c.size)), f"{subscripts} gradient")


def test_einsum_takes_numpys_sublist_form():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    product = np.einsum("ij,jk->ik", np.abs(a), np.abs(b))
    for spelled in (
        lambda x, y: (x, [0, 1], y, [1, 2], [0, 2]),
        lambda x, y: (x, [0, 1], y, [1, 2]),
    ):
        got, _, _, _ = run(lambda x, y, s=spelled: topos.einsum(*s(x, y)), [a, b])
        assert_close(got, np.einsum(*spelled(a, b)), sum_bound(product, 3 + 2, "float64"), "sublists")
    got, _, _, _ = run(lambda x: topos.einsum(x, [0, Ellipsis], [Ellipsis, 0]), [a])
    np.testing.assert_array_equal(got, a.T)


def test_einsum_records_the_work_it_means():
    """A contraction is one MatMul, a trace a strided Slice and a Sum, a Hadamard product a Mul."""

    def opcodes(subscripts, *shapes):
        _, _, _, network = run(lambda *v: topos.einsum(subscripts, *v), [np.ones(s) for s in shapes])
        return [node.opcode for node in network.nodes()]

    assert opcodes("bij,bjk->bik", (2, 3, 4), (2, 4, 5)).count("MatMul") == 1
    assert "MatMul" not in opcodes("ii", (3, 3)) and "Slice" in opcodes("ii", (3, 3))
    assert "MatMul" not in opcodes("ij,ij->ij", (2, 3), (2, 3))
    assert opcodes("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)).count("MatMul") == 2


def test_einsums_greedy_order_contracts_the_pair_that_shrinks_most_first():
    """``ij,jk,kl->il`` on [50, 2], [2, 50], [50, 2]: left to right makes a [50, 50] product first;
    greedy contracts the last two first, a [2, 2] (opt_einsum's cost: 4 - 100 - 100 against 2500 - 200)."""

    def products(optimize):
        arrays = [np.ones((50, 2)), np.ones((2, 50)), np.ones((50, 2))]
        _, _, _, network = run(lambda *v: topos.einsum("ij,jk,kl->il", *v, optimize=optimize), arrays)
        nodes = network.nodes()
        return [[nodes[i].shape for i in node.operands] for node in nodes if node.opcode == "MatMul"]

    assert products(False) == [[(50, 2), (2, 50)], [(50, 50), (50, 2)]]
    assert products("greedy") == [[(2, 50), (50, 2)], [(50, 2), (2, 2)]]


def _linear_gradient(numpy_function, shape, c):
    """``J^T c`` for the linear (or affine) map ``numpy_function`` (its Jacobian built from basis vectors), and the
    magnitudes and largest count of terms each gradient element sums."""
    offset = np.asarray(numpy_function(np.zeros(shape)), np.float64).ravel()  # an affine map's constant (pad's)
    columns = []
    for i in range(int(np.prod(shape))):
        basis = np.zeros(int(np.prod(shape)))
        basis[i] = 1.0
        columns.append(np.asarray(numpy_function(basis.reshape(shape)), np.float64).ravel() - offset)
    jacobian = np.stack(columns, axis=1)
    terms = int(np.max(np.count_nonzero(jacobian, axis=0), initial=1))
    return (jacobian.T @ c.ravel()).reshape(shape), (np.abs(jacobian).T @ np.abs(c).ravel()).reshape(shape), terms


PAD_WIDTHS = [1, (2, 0), ((0, 5), (3, 1)), ((7, 9), (9, 1))]


def _cases():
    """(name, topos call, numpy call, shape): the movement functions at their awkward arguments."""
    cases = []
    for mode in topos.model.building.PAD_MODES:
        for width in PAD_WIDTHS:
            cases.append(
                (
                    f"pad-{mode}-{width}",
                    lambda v, m=mode, w=width: topos.pad(v, w, m),
                    lambda x, m=mode, w=width: np.pad(x, w, m),
                    (3, 4),
                )
            )
    cases.append(
        (
            "pad-constant-values",
            lambda v: topos.pad(v, ((1, 2), (0, 1)), constant_values=((1, 2), (3, 4))),
            lambda x: np.pad(x, ((1, 2), (0, 1)), constant_values=((1, 2), (3, 4))),
            (2, 3),
        )
    )
    for shift, axis in [(1, None), (-7, None), (2, 1), ((1, 2), (0, 1)), ((1, 1), (1, 1)), (5, -1)]:
        cases.append(
            (
                f"roll-{shift}-{axis}",
                lambda v, s=shift, a=axis: topos.roll(v, s, a),
                lambda x, s=shift, a=axis: np.roll(x, s, a),
                (2, 3, 4),
            )
        )
    for axis in [None, 0, (0, 2), -1]:
        cases.append((f"flip-{axis}", lambda v, a=axis: topos.flip(v, a), lambda x, a=axis: np.flip(x, a), (2, 3, 4)))
    for k in [-5, -1, 0, 2, 7]:
        cases += [
            (f"tril-{k}", lambda v, k=k: topos.tril(v, k), lambda x, k=k: np.tril(x, k), (2, 3, 4)),
            (f"triu-{k}", lambda v, k=k: topos.triu(v, k), lambda x, k=k: np.triu(x, k), (3, 4)),
            (f"diag-vector-{k}", lambda v, k=k: topos.diag(v, k), lambda x, k=k: np.diag(x, k), (4,)),
            (f"diag-matrix-{k}", lambda v, k=k: topos.diag(v, k), lambda x, k=k: np.diag(x, k), (3, 5)),
            (
                f"diagonal-{k}",
                lambda v, k=k: topos.diagonal(v, k, 1, -1),
                lambda x, k=k: np.diagonal(x, k, 1, -1),
                (2, 3, 4),
            ),
            (f"trace-{k}", lambda v, k=k: topos.trace(v, k, 2, 0), lambda x, k=k: np.trace(x, k, 2, 0), (3, 2, 4)),
        ]
    for reps in [2, (2, 1), (2, 1, 3, 1), 0]:
        cases.append((f"tile-{reps}", lambda v, r=reps: topos.tile(v, r), lambda x, r=reps: np.tile(x, r), (2, 3)))
    for repeats, axis in [(2, None), (3, 1), ([1, 0, 2], 0), (0, -1), ([2], 0)]:
        cases.append(
            (
                f"repeat-{repeats}-{axis}",
                lambda v, r=repeats, a=axis: topos.repeat(v, r, a),
                lambda x, r=repeats, a=axis: np.repeat(x, r, a),
                (3, 2),
            )
        )
    cases.append(("tril-vector", topos.tril, np.tril, (4,)))
    cases.append(
        ("outer-with-a-leaf", lambda v: topos.outer(v, np.arange(3.0)), lambda x: np.outer(x, np.arange(3.0)), (2, 2))
    )
    cases.append(
        (
            "kron-with-a-leaf",
            lambda v: topos.kron(np.ones((2, 1, 2)) * 1.5, v),
            lambda x: np.kron(np.ones((2, 1, 2)) * 1.5, x),
            (2, 3),
        )
    )
    return cases


CASES = _cases()


@pytest.mark.parametrize(("name", "call", "numpy_call", "shape"), CASES, ids=[c[0] for c in CASES])
def test_each_function_equals_numpy_and_its_gradient_is_the_transposed_map(name, call, numpy_call, shape):
    x = RNG.standard_normal(shape)
    got, (grad,), c, _ = run(call, [x])
    want = numpy_call(x)
    assert got.shape == want.shape
    # A copy (or a sum of a diagonal, a product by exact 1.5) against numpy's: within two orders of its sum.
    terms = max(min(shape), 1)
    assert_close(got, want, sum_bound(np.abs(numpy_call(np.abs(x))), terms, "float64"), name)
    expected, magnitude, n = _linear_gradient(numpy_call, shape, c)
    assert_close(grad, expected, sum_bound(magnitude, n, "float64"), f"{name} gradient")


def test_constants_are_leaves_with_numpys_values():
    tape = Tape("float32")
    eye, positions, grid = topos.eye(tape, 3, 5, k=-1), topos.arange(tape, 4), topos.linspace(tape, 0, 1, 5, False)
    assert positions.dtype == "int32" and eye.dtype == grid.dtype == "float32"
    assert topos.arange(tape, 0.0, 1.0, 0.25).dtype == "float32"
    network = tape.seal()
    assert [node.opcode for node in network.nodes()] == ["Leaf"] * 4
    run_ = network.forward(network.parameters(), {})
    np.testing.assert_array_equal(run_.of(detach(eye)).numpy(), np.eye(3, 5, -1))
    np.testing.assert_array_equal(run_.of(detach(positions)).numpy(), np.arange(4))
    np.testing.assert_array_equal(run_.of(detach(grid)).numpy(), np.linspace(0, 1, 5, endpoint=False, dtype=np.float32))


def test_value_methods_spell_numpys():
    x = RNG.standard_normal((3, 4))
    got, _, _, _ = run(lambda v: topos.stack([v.flatten(), v.ravel(), v.repeat(2)[::2]]), [x])
    np.testing.assert_array_equal(got, np.stack([x.flatten(), x.ravel(), x.repeat(2)[::2]]))
    got, _, _, _ = run(lambda v: topos.concatenate([v.diagonal(1), v.trace(-1).reshape(1)]), [x])
    assert_close(got, np.concatenate([x.diagonal(1), [x.trace(-1)]]), sum_bound(np.abs(x).sum(), 3, "float64"), "")
