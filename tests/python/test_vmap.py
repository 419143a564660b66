"""``topos.vmap`` as a user meets it: per-example gradients and Jacobians against ``torch.func``, nesting,
gradients of a ``vmap``, its scope, its errors, and a recording whose size does not grow with the batch.

Every comparison with torch is two libraries computing the same float64 arithmetic in their own orders:
``tolerances.library_bound`` (1e-10 of each result plus ``4 sqrt(n) u`` of the largest, n the terms of
the longest sum). Comparisons with topos's own loop of unbatched recordings run the same numpy
functions over other layouts: a few ulps plus the same sum bound.
"""

import numpy as np
import pytest
import torch
from tolerances import assert_close, library_bound

import topos
from topos import Tape, detach
from topos.errors import MissingRuleError
from topos.ops import Meta, Primitive, register, unregister

RNG = np.random.default_rng(33)
X = RNG.normal(size=(6, 4))
LABELS = RNG.integers(0, 3, size=6).astype(np.int32)
W1, B1, W2 = RNG.normal(size=(4, 5)) * 0.5, RNG.normal(size=5) * 0.1, RNG.normal(size=(5, 3)) * 0.5


def values(tape, *outputs):
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    return [run.of(detach(v)).numpy() for v in outputs]


def mlp_loss(w1, b1, w2, x, label):
    """One example's cross-entropy under a two-layer tanh network (label an int32 index)."""
    hidden = topos.tanh(x @ w1 + b1)
    return topos.cross_entropy(topos.reshape(hidden @ w2, (1, 3)), topos.reshape(label, (1,)))


def torch_mlp_loss(w1, b1, w2, x, label):
    logits = torch.tanh(x @ w1 + b1) @ w2
    return torch.nn.functional.cross_entropy(logits[None], label[None])


def test_per_example_gradients_equal_torch_func_vmap_of_grad():
    tape = Tape()
    w1, b1, w2 = tape.parameter(W1, name="w1"), tape.parameter(B1, name="b1"), tape.parameter(W2, name="w2")
    x, label = tape.input(X, name="x"), tape.input(LABELS, name="label", dtype="int32")

    def per_example(w1, b1, w2, x, label):
        return tuple(topos.grad(mlp_loss(w1, b1, w2, x, label), [w1, b1, w2]))

    grads = topos.vmap(per_example, in_axes=(None, None, None, 0, 0))(w1, b1, w2, x, label)
    got = values(tape, *grads)
    params = [torch.tensor(a) for a in (W1, B1, W2)]
    expected = torch.func.vmap(torch.func.grad(torch_mlp_loss, argnums=(0, 1, 2)), in_dims=(None, None, None, 0, 0))(
        *params, torch.tensor(X), torch.tensor(LABELS.astype(np.int64))
    )
    for name, value, reference in zip(("w1", "b1", "w2"), got, expected):
        assert value.shape == (6,) + tuple(reference.shape[1:])
        reference = reference.numpy()
        assert_close(value, reference, library_bound(reference, "float64", 5), f"per-example d loss / d {name}")


@pytest.mark.parametrize("groups", [1, 2])
def test_per_example_gradients_of_a_convolution_equal_torch_func(groups):
    """The kernel's gradient convolves each image with its own cotangent: a batch of kernels, which the rule
    turns into feature groups (B times the layer's own)."""
    images, kernel = RNG.normal(size=(5, 4, 6, 6)), RNG.normal(size=(4, 4 // groups, 3, 3)) * 0.3
    tape = Tape()
    x, w = tape.input(images), tape.parameter(kernel)

    def loss(w, image):
        out = topos.conv2d(topos.reshape(image, (1, 4, 6, 6)), w, padding=1, groups=groups)
        return topos.sum(topos.tanh(out) ** 2)

    (got,) = values(tape, topos.vmap(lambda w, image: topos.grad(loss(w, image), w), in_axes=(None, 0))(w, x))

    def torch_loss(w, image):
        out = torch.nn.functional.conv2d(image[None], w, padding=1, groups=groups)
        return (torch.tanh(out) ** 2).sum()

    expected = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0))(
        torch.tensor(kernel), torch.tensor(images)
    ).numpy()
    assert got.shape == (5,) + kernel.shape
    assert_close(
        got, expected, library_bound(expected, "float64", 36 * 4), f"per-example conv gradients, {groups} groups"
    )


def smooth(x):
    """A function of a [2, 3] value with a [2, 2] result that mixes its elements nonlinearly."""
    return topos.sin(x @ topos.transpose(x)) + topos.exp(topos.sum(x * x, axis=1, keepdims=True) * 0.1)


def torch_smooth(x):
    return torch.sin(x @ x.T) + torch.exp((x * x).sum(dim=1, keepdim=True) * 0.1)


@pytest.mark.parametrize("mode", ["jacobian", "jacrev", "jacfwd"])
def test_jacobians_equal_torch_func(mode):
    point = RNG.normal(size=(2, 3))
    tape = Tape()
    x = tape.input(point, name="x")
    (jacobian,) = values(tape, getattr(topos, mode)(smooth(x), x))
    oracle = torch.func.jacfwd if mode == "jacfwd" else torch.func.jacrev
    expected = oracle(torch_smooth)(torch.tensor(point)).numpy()
    assert jacobian.shape == (2, 2, 2, 3)
    assert_close(jacobian, expected, library_bound(expected, "float64", 3), f"{mode} of smooth")


def test_a_jacobian_of_a_value_that_does_not_read_x_is_zeros():
    tape = Tape()
    x, z = tape.input(np.ones(3)), tape.input(np.ones(2))
    jacobian, forward = values(tape, topos.jacobian(topos.exp(z), x), topos.jacfwd(topos.exp(z), x))
    assert jacobian.shape == forward.shape == (2, 3)
    assert not jacobian.any() and not forward.any()


def test_vmap_of_vmap_with_axes_equals_numpy():
    grid, weights = RNG.normal(size=(3, 4, 5)), RNG.normal(size=5)
    tape = Tape()
    x, w = tape.input(grid), tape.input(weights)

    def inner(row):  # one row of 5: a number
        return topos.sum(topos.tanh(row * w))

    # Outer batch along axis 1 (4 of them), inner along axis 0 of what remains (3), placed last.
    nested = topos.vmap(lambda column: topos.vmap(inner)(column), in_axes=1, out_axes=0)(x)
    (got,) = values(tape, nested)
    expected = np.tanh(np.swapaxes(grid, 0, 1) * weights).sum(-1)
    assert got.shape == (4, 3)
    assert_close(got, expected, library_bound(expected, "float64", 5), "vmap of vmap")


def test_grad_of_a_vmap_equals_torch():
    tape = Tape()
    x = tape.input(X)
    per_row = topos.vmap(lambda row: topos.sum(topos.softmax(row) * topos.log(topos.cosh(row))))(x)
    (gradient,) = values(tape, topos.grad(topos.sum(per_row * per_row), x))
    t = torch.tensor(X, requires_grad=True)
    rows = (torch.softmax(t, dim=-1) * torch.log(torch.cosh(t))).sum(dim=-1)
    (rows * rows).sum().backward()
    expected = t.grad.numpy()
    assert_close(gradient, expected, library_bound(expected, "float64", 4), "grad of vmap")


def test_vmap_of_jvp_equals_torch_func():
    tangents = RNG.normal(size=(6, 4))
    tape = Tape()
    x, v = tape.input(X), tape.input(tangents)
    (got,) = values(tape, topos.vmap(lambda a, t: topos.jvp(topos.sin(a) * a, a, t))(x, v))
    expected = torch.func.vmap(lambda a, t: torch.func.jvp(lambda b: torch.sin(b) * b, (a,), (t,))[1])(
        torch.tensor(X), torch.tensor(tangents)
    ).numpy()
    assert_close(got, expected, library_bound(expected, "float64", 1), "vmap of jvp")


def test_out_axes_numbers_and_closed_over_values():
    tape = Tape()
    x, w = tape.input(X), tape.parameter(W1)
    twice, shared = topos.vmap(lambda row, scale: (row @ w * scale, topos.sum(w)), in_axes=(0, None), out_axes=(1, 0))(
        x, 2.0
    )
    got, total = values(tape, twice, shared)
    np.testing.assert_allclose(got, (X @ W1 * 2.0).T, rtol=1e-12)
    assert total.shape == (6,) and np.allclose(total, W1.sum())


def test_the_recording_does_not_grow_with_the_batch():
    counts = []
    for size in (2, 50):
        tape = Tape()
        x = tape.input(RNG.normal(size=(size, 4)))
        start = len(tape)
        topos.vmap(lambda row: topos.grad(topos.sum(topos.tanh(row @ topos.transpose(row))), row))(x)
        counts.append(len(tape) - start)
    assert counts[0] == counts[1]


def test_every_node_vmap_emits_carries_its_scope():
    tape = Tape()
    x = tape.input(X)
    start = len(tape)

    def normalised(row):
        return topos.softmax(row) * 2.0

    topos.vmap(normalised)(x)
    scopes = [node.scope for node in tape.nodes()[start:]]
    assert scopes and all("vmap of normalised" in scope for scope in scopes)
    # The calls inside f group inside its scope: softmax's nodes after it.
    assert any(scope[-1] == "softmax" and scope[-2] == "vmap of normalised" for scope in scopes)
    # The spec ends each emitted node's row with it, as it does a derivative's; a Jacobian is a derivative.
    topos.jacobian(topos.exp(x), x)
    rows = tape.describe().splitlines()
    assert sum("[vmap of normalised]" in row for row in rows) == len(scopes)
    assert any("[jacobian of exp " in row for row in rows)


def test_errors_name_the_problem():
    tape = Tape()
    x, y = tape.input(np.ones((3, 2))), tape.input(np.ones((4, 2)))
    with pytest.raises(topos.ShapeError, match="argument 1 has 4 examples along axis 0, argument 0 has 3"):
        topos.vmap(topos.maximum)(x, y)
    with pytest.raises(topos.AxisError, match=r"in_axes\[0\] is -3"):
        topos.vmap(topos.exp, in_axes=-3)(x)
    with pytest.raises(topos.ArgumentError, match="output 0 varies along the batch"):
        topos.vmap(topos.exp, out_axes=None)(x)
    with pytest.raises(topos.AxisError, match="every argument has in_axes None"):
        topos.vmap(topos.exp, in_axes=None)(x)


class NoBatch(Primitive):
    """An op of this test with every rule but a batching one."""

    name = "TestNoBatch"
    arity = 1

    def infer(self, metas, attrs):
        return Meta(metas[0].shape, metas[0].dtype)

    def forward(self, inputs, attrs):
        return inputs[0] + 1.0


@pytest.fixture
def no_batch():
    # Registered only while the test runs: the registry's completeness tests must not see it.
    register(NoBatch)
    yield
    unregister("TestNoBatch")


def test_a_primitive_without_a_rule_declines_naming_itself(no_batch):
    tape = Tape()
    x = tape.input(np.ones((3, 2)))
    with pytest.raises(MissingRuleError, match=r"TestNoBatch has no batching rule \(vmap\)"):
        topos.vmap(lambda row: row.tape.apply("TestNoBatch", [row]))(x)
    # Over an operand every example shares, the node is emitted as recorded: no rule is asked for.
    (got,) = values(tape, topos.vmap(lambda row, c: row * c.tape.apply("TestNoBatch", [c]), in_axes=(0, None))(x, x))
    np.testing.assert_array_equal(got, np.full((3, 3, 2), 2.0))


def test_a_batched_random_key_is_a_stated_decline():
    tape = Tape()
    keys = topos.split_key(tape.input(topos.random_key(0)), 3)
    with pytest.raises(MissingRuleError, match="a batched random key"):
        topos.vmap(lambda key: topos.uniform(key, (2,)))(keys)


@pytest.mark.parametrize("backend, dtype", [("xla", "float64"), ("webgpu", "float32")])
def test_batched_recordings_run_on_xla_and_webgpu_as_on_numpy(backend, dtype):
    """vmap emits ordinary nodes (moves, broadcasts, batched products): they lower to StableHLO and to the
    WGSL kernels like any others. Two libraries each summing up to 6 terms: ``library_bound``."""

    def build(tape):
        w1, b1, w2 = tape.parameter(W1, name="w1"), tape.parameter(B1, name="b1"), tape.parameter(W2, name="w2")
        x, label = tape.input(X, name="x"), tape.input(LABELS, name="label", dtype="int32")

        def per_example(w1, b1, w2, x, label):
            return tuple(topos.grad(mlp_loss(w1, b1, w2, x, label), [w1, b1, w2]))

        grads = topos.vmap(per_example, in_axes=(None, None, None, 0, 0))(w1, b1, w2, x, label)
        return list(grads) + [topos.jacobian(topos.tanh(x @ w1), w1)]

    network, outputs = Tape.record(build, dtype=dtype)
    plan = network.entry(outputs).lower()
    run = plan.run(network.parameters(), backend=backend)
    on_backend, on_numpy = run.outputs(), plan.run(network.parameters()).outputs()
    if backend == "webgpu":  # every float node in a kernel: only the int32 labels stay on the host
        assert {plan.nodes[i].dtype for i, where in run.backends.items() if where != "webgpu"} <= {"int32"}
    for position, (got, expected) in enumerate(zip(on_backend, on_numpy)):
        expected = np.asarray(expected)
        assert_close(np.asarray(got), expected, library_bound(expected, dtype, 6), f"output {position} on {backend}")


def test_vmap_of_a_scan_and_its_per_example_gradients_equal_torch_func():
    """A Scan of a batch is one Scan of the batched step: the node count does not grow with the batch or
    the steps, and per-example gradients go through the backward Scans batched the same way."""
    sequences, weights, start = RNG.normal(size=(4, 7, 3)), RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3)
    tape = Tape()
    xs, w, h0 = tape.input(sequences), tape.parameter(weights), tape.input(start)

    def loss_and_gradient(w, sequence):
        def step(h, x):
            h = topos.tanh(h @ w + x)
            return h, topos.sum(h)

        final, ys = topos.scan(step, h0, sequence)
        loss = topos.sum(ys) + topos.sum(final * final)
        return loss, topos.grad(loss, w)

    losses, gradients = topos.vmap(loss_and_gradient, in_axes=(None, 0))(w, xs)
    assert sum(node.opcode == "Scan" for node in tape.nodes()) == 3  # forward, its carries again, backward
    got_losses, got_gradients = values(tape, losses, gradients)

    def torch_loss(w, sequence):
        h, total = torch.tensor(start), 0.0
        for x in sequence:
            h = torch.tanh(h @ w + x)
            total = total + h.sum()
        return total + (h * h).sum()

    w_t, xs_t = torch.tensor(weights), torch.tensor(sequences)
    expected_losses = torch.func.vmap(torch_loss, in_dims=(None, 0))(w_t, xs_t).numpy()
    expected = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0))(w_t, xs_t).numpy()
    assert_close(got_losses, expected_losses, library_bound(expected_losses, "float64", 7 * 3), "losses")
    assert_close(got_gradients, expected, library_bound(expected, "float64", 7 * 3), "per-example gradients")


@pytest.mark.parametrize("shared_predicate", [False, True])
def test_vmap_of_cond_takes_each_examples_branch(shared_predicate):
    """A batched predicate runs both branches batched and a Where takes each example's (JAX's rule); a
    shared one stays one Cond of the batched branches. Values and per-example gradients against torch."""
    points = np.array([[0.5, -1.0], [-0.3, 2.0], [1.5, 0.25], [-2.0, -0.5]])
    tape = Tape()
    xs = tape.input(points)
    flag = tape.input(np.array(1.0))

    def f(x, flag):
        predicate = flag if shared_predicate else topos.greater(topos.sum(x), 0.0)
        y = topos.cond(predicate, lambda a: topos.sin(a) * a, lambda a: topos.exp(a), x)
        return y, topos.grad(topos.sum(y * y), x)

    ys, grads = topos.vmap(f, in_axes=(0, None))(xs, flag)
    got, got_grads = values(tape, ys, grads)
    assert sum(node.opcode == "Cond" for node in tape.nodes()) == (2 if shared_predicate else 0)

    def torch_f(x):
        taken = True if shared_predicate else bool(x.sum() > 0)
        y = torch.sin(x) * x if taken else torch.exp(x)
        return (y * y).sum(), y

    t = torch.tensor(points)
    expected = torch.stack([torch_f(row)[1] for row in t]).numpy()
    expected_grads = torch.func.vmap(torch.func.grad(lambda row: torch_f(row)[0]))(t) if shared_predicate else None
    if expected_grads is None:  # a data-dependent branch: torch.func.vmap cannot, a loop of torch.func.grad can
        expected_grads = torch.stack([torch.func.grad(lambda row: torch_f(row)[0])(row) for row in t])
    expected_grads = expected_grads.numpy()
    assert_close(got, expected, library_bound(expected, "float64", 2), "cond values")
    assert_close(got_grads, expected_grads, library_bound(expected_grads, "float64", 2), "cond gradients")


def test_per_example_gradients_through_a_users_derivative():
    """A clipped gradient (custom_vjp): vmap batches the node and its held backward as a body, so each
    example's gradient is clipped on its own; a shared weight's cotangents are each example's own."""

    @topos.custom_vjp
    def clip_gradient(x):
        return x * 1.0

    clip_gradient.defvjp(lambda x: (clip_gradient(x), x), lambda x, g: (topos.clip(g, -1.0, 1.0),))
    scales = np.array([[0.5, 3.0], [-4.0, 0.1], [2.0, -0.2]])
    tape = Tape()
    xs, w = tape.input(scales), tape.parameter(np.array([1.5, -2.0]))

    def per_example(w, x):
        return topos.grad(topos.sum(clip_gradient(w * w) * x), w)

    (got,) = values(tape, topos.vmap(per_example, in_axes=(None, 0))(w, xs))
    weights = np.array([1.5, -2.0])
    expected = np.clip(scales, -1.0, 1.0) * 2.0 * weights  # d(w * w) = 2 w, after the clipped cotangent x
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)


def test_vmap_of_a_while_loop_runs_each_example_its_own_trips():
    """JAX's while rule: the loop goes on while any example's predicate holds, and an example whose own
    has failed keeps its carry, so each ends where its own loop would (1, 2, 6 and 0 doublings here)."""
    starts = np.array([5.0, 3.0, 0.2, 12.0])
    tape = Tape()
    xs, limit = tape.input(starts), tape.input(np.array(10.0))

    def double_until(x, limit):
        return topos.while_loop(lambda c: topos.greater(limit, c), lambda c: c * 2.0 + 0.0, x)

    (got,) = values(tape, topos.vmap(double_until, in_axes=(0, None))(xs, limit))
    expected = []
    for value in starts:
        while value < 10.0:
            value *= 2.0
        expected.append(value)
    np.testing.assert_array_equal(got, expected)  # doublings are exact
