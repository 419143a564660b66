"""``topos.jvp`` and ``topos.hvp`` inside a recording (float64).

``jvp`` is checked against ``torch.func.jvp`` (rtol 1e-9) and central differences of
the recorded function along the tangent (rtol 1e-6); ``hvp`` against
``torch.autograd.functional.hvp`` and central differences of the recorded gradient.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import topos
from topos import Tape, detach

EPS = 1e-5


def assert_close(got, want, rtol, what):
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-300)
    error = float(np.max(np.abs(np.asarray(got) - np.asarray(want)), initial=0.0))
    assert np.shape(got) == np.shape(want), (what, np.shape(got), np.shape(want))
    assert error <= rtol * scale, f"{what}: error {error:.3g} at scale {scale:.3g}"


FUNCTIONS = {
    "tanh_matmul": (
        [(3, 4), (4, 2)],
        lambda x, w: topos.tanh(x @ w) * x[:, :2],
        lambda x, w: torch.tanh(x @ w) * x[:, :2],
    ),
    "softmax_layer_norm": (
        [(2, 5), (5,)],
        lambda x, w: topos.softmax(topos.layer_norm(x, w) * x),
        lambda x, w: torch.softmax(F.layer_norm(x, (5,), w, None, 1e-5) * x, -1),
    ),
    "gelu_broadcast": (
        [(3, 1), (4,)],
        lambda x, y: topos.gelu(x * y) / (1 + y * y),
        lambda x, y: F.gelu(x * y, approximate="tanh") / (1 + y * y),
    ),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_equals_torch_func_jvp_and_central_differences(name):
    shapes, fn, torch_fn = FUNCTIONS[name]
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    directions = [rng.standard_normal(s) for s in shapes]
    tape = Tape()
    xs = [tape.input(a) for a in arrays]
    vs = [tape.input(d) for d in directions]
    y = fn(*xs)
    tangent = topos.jvp(y, xs, vs)
    assert tangent.shape == y.shape
    network = tape.seal()
    xs, y, tangent = detach(xs), detach(y), detach(tangent)
    parameters = network.parameters()
    got = network.forward(parameters).of(tangent).numpy()
    _, want = torch.func.jvp(
        torch_fn, tuple(torch.tensor(a) for a in arrays), tuple(torch.tensor(d) for d in directions)
    )
    assert_close(got, want.numpy(), 1e-9, f"{name} against torch.func.jvp")

    def y_at(step):
        feeds = {x: a + step * d for x, a, d in zip(xs, arrays, directions)}
        return network.forward(parameters, feeds).of(y).numpy()

    assert_close(got, (y_at(EPS) - y_at(-EPS)) / (2 * EPS), 1e-6, f"{name} against central differences")


def test_jvp_of_one_value_takes_one_tangent_of_its_shape():
    tape = Tape()
    x = tape.input(np.array([0.3, -1.2]))
    y = topos.exp(x) * x
    t = topos.jvp(y, x, tape.input(np.array([1.0, 2.0])))
    with pytest.raises(topos.ShapeError, match="a tangent of shape"):
        topos.jvp(y, x, tape.input(np.ones(3)))
    with pytest.raises(topos.ArgumentTypeError, match="one tangent"):
        topos.jvp(y, [x], [])
    network = tape.seal()
    value = network.forward(network.parameters()).of(detach(t)).numpy()
    x0 = np.array([0.3, -1.2])
    assert_close(value, (np.exp(x0) * (1 + x0)) * np.array([1.0, 2.0]), 1e-14, "exp(x) x")


def test_hvp_equals_torch_and_central_differences_of_the_gradient():
    rng = np.random.default_rng(2)
    x0, w0 = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    vx, vw = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    tape = Tape()
    x, w = tape.input(x0), tape.input(w0)
    y = topos.sum(topos.log_softmax(topos.tanh(x * w) * x) ** 2)
    hx, hw = topos.hvp(y, [x, w], [tape.input(vx), tape.input(vw)])
    gx, gw = topos.grad(y, [x, w])
    network = tape.seal()
    x, w, hx, hw, gx, gw = detach([x, w, hx, hw, gx, gw])
    parameters = network.parameters()
    run = network.forward(parameters)

    def f(xt, wt):
        return (torch.log_softmax(torch.tanh(xt * wt) * xt, -1) ** 2).sum()

    _, (want_x, want_w) = torch.autograd.functional.hvp(
        f, (torch.tensor(x0), torch.tensor(w0)), (torch.tensor(vx), torch.tensor(vw))
    )
    assert_close(run.of(hx).numpy(), want_x.numpy(), 1e-9, "H v, x part")
    assert_close(run.of(hw).numpy(), want_w.numpy(), 1e-9, "H v, w part")

    def gradient_at(step):
        shifted = network.forward(parameters, {x: x0 + step * vx, w: w0 + step * vw})
        return shifted.of(gx).numpy(), shifted.of(gw).numpy()

    (px, pw), (mx, mw) = gradient_at(EPS), gradient_at(-EPS)
    assert_close(run.of(hx).numpy(), (px - mx) / (2 * EPS), 1e-6, "H v against differences, x part")
    assert_close(run.of(hw).numpy(), (pw - mw) / (2 * EPS), 1e-6, "H v against differences, w part")


def test_hessian_equals_torch_and_has_the_shape_of_x_twice():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 2))
    x0 = rng.standard_normal((2, 2))
    tape = Tape()
    x = tape.input(x0, name="x")
    y = topos.sum(topos.exp(x * a) + topos.sum(x, axis=1) ** 2 * topos.tanh(x[0]))
    h = topos.hessian(y, x)
    assert h.shape == (2, 2, 2, 2)
    network = tape.seal()
    got = network.forward(network.parameters()).of(detach(h)).numpy()

    def f(xt):
        at = torch.tensor(a)
        return (torch.exp(xt * at) + xt.sum(1) ** 2 * torch.tanh(xt[0])).sum()

    want = torch.autograd.functional.hessian(f, torch.tensor(x0))
    assert_close(got, want.numpy(), 1e-10, "hessian")
    # A Hessian of one element is a [1, 1] matrix; of a rank-0 value, rank 0.
    tape = Tape()
    s = tape.input(np.array(0.7))
    h0 = topos.hessian(topos.sin(s) * s, s)
    assert h0.shape == ()
    network = tape.seal()
    value = network.forward(network.parameters()).of(detach(h0)).scalar()
    assert value == pytest.approx(2 * np.cos(0.7) - 0.7 * np.sin(0.7), rel=1e-14)
