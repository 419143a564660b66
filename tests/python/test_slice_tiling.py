"""A value cut into pieces by slices has its pieces' cotangents side by side as its own gradient.

Attention cuts its query-key-value product into three slices end to end; the
backward then joins the three cotangents with one ``Concatenate`` rather than
padding each to the whole and summing the pads (``slice_tilings`` in
``topos.model.autodiff``). Each case is held to ``torch.autograd`` on the same
numbers, eager (the first run) and prepared (the second) agree to the bit, and
the plan says which way the backward went. Slices that overlap, or leave part of
the value out, or a piece with no cotangent of its own, go the summing way.
"""

import numpy as np
import pytest
import torch

import topos
from topos import Tape

X = np.random.default_rng(0).standard_normal((4, 7))


def record(cut):
    def build(tape):
        x = tape.parameter(X, name="x")
        return [x, cut(topos, x)]

    return Tape.record(build, dtype="float64")


def tiles(t, x):
    a, b, c = x[:, 0:2], x[:, 2:5], x[:, 5:7]
    return t.sum(t.tanh(a) * 2.0) + t.sum(b * b) + t.sum(t.exp(c))


def overlapping(t, x):
    a, b = x[:, 0:3], x[:, 2:7]
    return t.sum(t.tanh(a)) + t.sum(b * b)


def leaving_a_gap(t, x):
    a, b = x[:, 0:2], x[:, 3:7]
    return t.sum(t.tanh(a)) + t.sum(b * b)


def along_rows(t, x):
    a, b = x[0:1, :], x[1:4, :]
    return t.sum(t.tanh(a)) + t.sum(b * b * b)


def torch_loss(name, x):
    if name == "tiles":
        return (torch.tanh(x[:, 0:2]) * 2.0).sum() + (x[:, 2:5] ** 2).sum() + torch.exp(x[:, 5:7]).sum()
    if name == "overlapping":
        return torch.tanh(x[:, 0:3]).sum() + (x[:, 2:7] ** 2).sum()
    if name == "leaving_a_gap":
        return torch.tanh(x[:, 0:2]).sum() + (x[:, 3:7] ** 2).sum()
    return torch.tanh(x[0:1, :]).sum() + (x[1:4, :] ** 3).sum()


def opcodes(network, loss):
    plan = network.entry([loss]).backward(loss).lower()
    return [node.opcode for node in plan.nodes]


@pytest.mark.parametrize(
    "cut, joined",
    [(tiles, True), (along_rows, True), (overlapping, False), (leaving_a_gap, False)],
)
def test_the_gradient_of_a_sliced_value_is_torchs_whichever_way_it_is_formed(cut, joined):
    network, (x, loss) = record(cut)
    parameters = network.parameters()
    gradients = [network.forward(parameters).backward(loss).of(x).numpy() for _ in range(3)]
    for later in gradients[1:]:  # the first run is eager, the later ones prepared
        assert np.array_equal(later, gradients[0])
    reference = torch.tensor(X, requires_grad=True)
    torch_loss(cut.__name__, reference).backward()
    np.testing.assert_allclose(gradients[0], reference.grad.numpy(), rtol=1e-12, atol=1e-12)
    ops = opcodes(network, loss)
    assert ("Concatenate" in ops) == joined
    assert ("Pad" in ops) == (not joined)


def test_a_piece_without_a_cotangent_leaves_the_others_padded_and_summed():
    # The last piece only decides a condition: it is on the path to the loss, but no cotangent reaches it.
    def cut(t, x):
        a, b, c = x[:, 0:2], x[:, 2:5], x[:, 5:7]
        return t.sum(t.where(t.greater(c, 0.0), t.tanh(a), a * a)) + t.sum(b * b)

    network, (x, loss) = record(cut)
    gradients = [network.forward(network.parameters()).backward(loss).of(x).numpy() for _ in range(2)]
    assert np.array_equal(gradients[0], gradients[1])
    a, c = X[:, 0:2], X[:, 5:7]
    expected = np.zeros_like(X)
    expected[:, 0:2] = np.where(c > 0.0, 1.0 - np.tanh(a) ** 2, 2.0 * a)
    expected[:, 2:5] = 2.0 * X[:, 2:5]
    np.testing.assert_allclose(gradients[0], expected, rtol=1e-12, atol=1e-12)
    ops = opcodes(network, loss)
    assert "Pad" in ops and "Concatenate" not in ops
