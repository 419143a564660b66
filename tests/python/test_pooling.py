"""Max and average pooling against PyTorch, XLA and central differences, values and derivatives of every order.

``topos.max_pool`` and ``topos.avg_pool`` are compared with ``torch.nn.functional``'s
``max_pool1d/2d`` and ``avg_pool1d/2d`` (``count_include_pad=True``, its default) over
windows, strides (one past the window too), symmetric and (low, high) padding: values and
gradients, float64 at rtol 1e-9, float32 at rtol 1e-5 (one rounding of a window's sum of
at most a few dozen terms, or none: a maximum is exact). Ties (pooling after a ReLU, small
integers) send the gradient where torch sends it, the first maximum in row-major window
order. A gradient of a gradient is recorded from the gradient reading's nodes and checked
against torch's double backward and against XLA. The window ops' StableHLO, the gradient
ops' included, runs on XLA equal to the interpreter.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from tolerances import assert_close, library_bound

import topos
from topos import ShapeError, Tape, detach
from topos.model.lowering import append_backward
from topos.model.value import Value

TOLERANCE = {"float64": dict(rtol=1e-9, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64}

# (shape, window, stride, padding): padding as topos takes it; torch gets symmetric padding
# directly and (low, high) pairs through an explicit F.pad.
CONFIGS = [
    ((2, 3, 8, 8), 2, None, 0),
    ((2, 3, 7, 6), (3, 2), (2, 3), (1, 0)),
    ((1, 2, 6, 6), 2, 3, 1),  # stride past the window: some elements lie in no window
    ((1, 2, 7, 5), (1, 3), (4, 1), 0),
    ((2, 1, 5, 5), 5, None, 2),  # window = image, padded
    ((2, 2, 5, 5), 3, 1, ((1, 2), (0, 1))),  # (low, high) pairs
    ((3, 2, 1, 1), 1, None, 0),  # 1x1 images
    ((2, 2, 9), 3, 1, 1),  # 1-D
    ((2, 3, 10), 2, None, 0),
    ((1, 2, 8), 2, 5, ((1, 0),)),
    ((2, 1, 4), 4, None, 0),  # 1-D, window = sequence
]
IDS = [f"{shape}-w{window}-s{stride}-p{padding}" for shape, window, stride, padding in CONFIGS]


def spatial_pairs(padding, spatial):
    if isinstance(padding, int):
        return ((padding, padding),) * spatial
    if isinstance(padding[0], int):
        return tuple((p, p) for p in padding)
    return tuple(padding)


def torch_pool(kind, x, window, stride, padding):
    spatial = x.dim() - 2
    pairs = spatial_pairs(padding, spatial)
    pooling = {
        ("max", 1): TF.max_pool1d,
        ("max", 2): TF.max_pool2d,
        ("avg", 1): TF.avg_pool1d,
        ("avg", 2): TF.avg_pool2d,
    }[kind, spatial]
    if all(lo == hi for lo, hi in pairs) and all(
        2 * lo <= (window if isinstance(window, int) else window[a]) for a, (lo, _) in enumerate(pairs)
    ):
        return pooling(x, window, stride, tuple(lo for lo, _ in pairs))
    # torch pads symmetrically only: pad explicitly (-inf for max, 0 for the mean, which still
    # divides by the whole window as count_include_pad does), then pool without padding.
    flat = [side for pair in reversed(pairs) for side in pair]
    filled = TF.pad(x, flat, value=float("-inf") if kind == "max" else 0.0)
    return pooling(filled, window, stride, 0)


def record(kind, x, window, stride, padding):
    function = topos.max_pool if kind == "max" else topos.avg_pool
    return function(x, window, stride, padding)


def topos_value_and_gradient(kind, x, u, config, dtype):
    _, window, stride, padding = config
    tape = Tape(dtype)
    xv = tape.parameter(x)
    out = record(kind, xv, window, stride, padding)
    loss = topos.sum(out * tape.leaf(u))
    network = tape.seal()
    run = network.forward(network.parameters())
    field = run.backward(detach(loss))
    return run.of(detach(out)).numpy(), field.of(detach(xv)).numpy(), network, detach([out, loss])


def torch_value_and_gradient(kind, x, u, config, dtype):
    _, window, stride, padding = config
    t = torch.tensor(x, dtype=TORCH_DTYPES[dtype], requires_grad=True)
    out = torch_pool(kind, t, window, stride, padding)
    out.backward(torch.tensor(u, dtype=TORCH_DTYPES[dtype]))
    return out.detach().numpy(), t.grad.numpy()


def output_shape(kind, x, config):
    _, window, stride, padding = config
    return tuple(torch_pool(kind, torch.tensor(x), window, stride, padding).shape)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_pooling_matches_torch_values_and_gradients(config, kind, dtype):
    rng = np.random.default_rng(len(IDS[CONFIGS.index(config)]) + (kind == "max"))
    x = rng.standard_normal(config[0]).astype(dtype)
    u = rng.standard_normal(output_shape(kind, x, config)).astype(dtype)
    out, grad, _, _ = topos_value_and_gradient(kind, x, u, config, dtype)
    expected_out, expected_grad = torch_value_and_gradient(kind, x, u, config, dtype)
    assert out.dtype.name == dtype and grad.dtype.name == dtype
    # No window's sum, nor a gradient's sum over overlapping windows, has more terms than x has elements.
    assert_close(out, expected_out, library_bound(expected_out, dtype, x.size), "forward")
    assert_close(grad, expected_grad, library_bound(expected_grad, dtype, x.size), "gradient")


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_three_spatial_axes_pool_as_torch_does_in_3d(kind):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 2, 5, 4, 6))
    t = torch.tensor(x, requires_grad=True)
    pooling = TF.max_pool3d if kind == "max" else TF.avg_pool3d
    expected = pooling(t, (2, 3, 2), (2, 1, 3), (1, 1, 0))
    u = rng.standard_normal(tuple(expected.shape))
    expected.backward(torch.tensor(u))
    tape = Tape()
    xv = tape.parameter(x)
    out = record(kind, xv, (2, 3, 2), (2, 1, 3), (1, 1, 0))
    loss = topos.sum(out * tape.leaf(u))
    network = tape.seal()
    run = network.forward(network.parameters())
    np.testing.assert_allclose(run.of(detach(out)).numpy(), expected.detach().numpy(), **TOLERANCE["float64"])
    gradient = run.backward(detach(loss)).of(detach(xv)).numpy()
    np.testing.assert_allclose(gradient, t.grad.numpy(), **TOLERANCE["float64"])


TIE_CONFIGS = [CONFIGS[0], CONFIGS[1], CONFIGS[5], CONFIGS[7], ((2, 2, 6, 6), 3, 1, 1)]


@pytest.mark.parametrize(
    "config", TIE_CONFIGS, ids=[IDS[CONFIGS.index(c)] if c in CONFIGS else "3x3-s1" for c in TIE_CONFIGS]
)
@pytest.mark.parametrize("values", ["relu", "integers"])
def test_ties_send_the_gradient_to_the_first_maximum_as_torch_does(config, values):
    rng = np.random.default_rng(7)
    if values == "relu":
        x = np.maximum(rng.standard_normal(config[0]) - 0.8, 0.0)  # most values are 0
    else:
        x = rng.integers(0, 3, config[0]).astype(np.float64)
    u = rng.standard_normal(output_shape("max", x, config))
    _, grad, network, (out, loss) = topos_value_and_gradient("max", x, u, config, "float64")
    _, expected = torch_value_and_gradient("max", x, u, config, "float64")
    np.testing.assert_array_equal(grad != 0, expected != 0)  # the same elements get the gradient
    np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)  # overlapping windows sum in their order
    # XLA's select_and_scatter (a GE select) agrees at the ties.
    plan = network.entry([out, loss]).backward(loss).lower()
    xla = plan.run(network.parameters(), backend="xla").gradient(network.parameter_symbols()[0])
    np.testing.assert_array_equal(np.asarray(xla) != 0, expected != 0)
    np.testing.assert_allclose(np.asarray(xla), expected, rtol=1e-12, atol=1e-15)


def test_the_first_maximum_in_row_major_order_takes_the_whole_gradient():
    x = np.array([[[[1.0, 2.0], [2.0, 2.0]]]])
    _, grad, _, _ = topos_value_and_gradient("max", x, np.array([[[[3.0]]]]), ((1, 1, 2, 2), 2, None, 0), "float64")
    np.testing.assert_array_equal(grad, [[[[0.0, 3.0], [0.0, 0.0]]]])


# Second derivatives ------------------------------------------------------------------------------


def second_order(kind, x, v, u, config, dtype="float64"):
    """d/dx sum(u * d/dx sum(v * pool(x * x) ** 2)): the gradient reading's nodes, recorded on and
    differentiated. The pool's cotangent depends on x, so max's second derivative runs SelectAndGather."""
    _, window, stride, padding = config
    tape = Tape(dtype)
    xv = tape.parameter(x)
    pooled = record(kind, xv * xv, window, stride, padding)
    loss = topos.sum(pooled * pooled * tape.leaf(v))
    network = tape.seal()
    nodes, (gradient,) = append_backward(network, detach(loss).index, (detach(xv).index,))
    more = Tape(dtype, _nodes=nodes, _parent_lineages=network.lineages)
    second = topos.sum(Value(more, gradient) * more.leaf(u))
    twice = more.seal()
    run = twice.forward(twice.parameters())
    return run.backward(detach(second)).of(detach(xv)).numpy(), twice, detach(second)


def torch_second_order(kind, x, v, u, config):
    _, window, stride, padding = config
    t = torch.tensor(x, requires_grad=True)
    pooled = torch_pool(kind, t * t, window, stride, padding)
    loss = (pooled * pooled * torch.tensor(v)).sum()
    (gradient,) = torch.autograd.grad(loss, t, create_graph=True)
    (gradient * torch.tensor(u)).sum().backward()
    return t.grad.numpy()


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("config", [CONFIGS[1], CONFIGS[2], CONFIGS[5], CONFIGS[7]], ids=lambda c: str(c[1:]))
def test_a_gradient_of_a_gradient_matches_torch_double_backward_and_xla(kind, config):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(config[0])
    v = rng.standard_normal(output_shape(kind, x, config))
    u = rng.standard_normal(x.shape)
    got, network, second = second_order(kind, x, v, u, config)
    np.testing.assert_allclose(got, torch_second_order(kind, x, v, u, config), rtol=1e-9, atol=1e-12)
    opcodes = {node.opcode for node in network.nodes()}
    assert ({"SelectAndScatterAdd", "WindowMax"} if kind == "max" else {"WindowSum", "Pad"}) <= opcodes
    plan = network.entry([second]).backward(second).lower()
    if kind == "max":
        assert "SelectAndGather" in {node.opcode for node in plan.nodes}
    symbol = network.parameter_symbols()[0]
    numpy_run = plan.run(network.parameters())
    xla_run = plan.run(network.parameters(), backend="xla")
    np.testing.assert_allclose(
        np.asarray(xla_run.gradient(symbol)), np.asarray(numpy_run.gradient(symbol)), rtol=1e-12, atol=1e-12
    )


def test_the_second_derivative_matches_central_differences_of_the_first():
    config = CONFIGS[5]
    rng = np.random.default_rng(11)
    x = rng.standard_normal(config[0])
    v = rng.standard_normal(output_shape("max", x, config))
    u = rng.standard_normal(x.shape)
    exact, _, _ = second_order("max", x, v, u, config)
    direction = rng.standard_normal(x.shape)
    eps = 1e-6

    def first(at):
        _, window, stride, padding = config
        tape = Tape()
        xv = tape.parameter(at)
        pooled = topos.max_pool(xv * xv, window, stride, padding)
        loss = topos.sum(pooled * pooled * tape.leaf(v))
        network = tape.seal()
        field = network.forward(network.parameters()).backward(detach(loss))
        return float(np.vdot(field.of(detach(xv)).numpy(), u))

    numeric = (first(x + eps * direction) - first(x - eps * direction)) / (2 * eps)
    assert abs(float(np.vdot(exact, direction)) - numeric) <= 1e-6 * (1 + abs(numeric))


# The primitives on XLA ---------------------------------------------------------------------------


WINDOWS = [
    dict(window=(1, 1, 2, 2), strides=(1, 1, 2, 2), padding=((0, 0), (0, 0), (0, 0), (0, 0))),
    dict(window=(1, 2, 3, 2), strides=(1, 1, 2, 3), padding=((0, 0), (1, 0), (1, 2), (0, 1))),
    dict(window=(2, 1, 1, 3), strides=(1, 2, 3, 1), padding=((1, 1), (0, 0), (0, 0), (2, 2))),
]


def window_case(opcode, attrs, ties):
    def build(tape):
        rng = np.random.default_rng(5)
        shape = (2, 3, 6, 5)
        x_data = rng.integers(-2, 3, shape).astype(float) if ties else rng.standard_normal(shape)
        x = tape.parameter(x_data)
        if opcode in ("WindowSum", "WindowMax"):
            out = tape.apply(opcode, [x], **attrs)
        else:
            grid = tape.apply("WindowMax", [x], **attrs).shape
            second = tape.parameter(rng.standard_normal(grid if opcode == "SelectAndScatterAdd" else shape))
            out = tape.apply(opcode, [second, x], **attrs)
        weights = tape.leaf(rng.standard_normal(out.shape))
        return [out, topos.sum(out * weights)]

    return build


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("attrs", WINDOWS, ids=["2x2", "padded", "batch-window"])
@pytest.mark.parametrize("opcode", ["WindowSum", "WindowMax", "SelectAndScatterAdd", "SelectAndGather"])
def test_every_window_op_forward_and_backward_agree_with_xla(opcode, attrs, ties, dtype):
    network, (out, loss) = Tape.record(window_case(opcode, attrs, ties), dtype)
    for plan in (network.entry([out, loss]).lower(), network.entry([out, loss]).backward(loss).lower()):
        want = plan.run(network.parameters()).outputs()
        got = plan.run(network.parameters(), backend="xla").outputs()
        scale = max(float(np.max(np.abs(w))) for w in want)
        for w, g in zip(want, got):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(
                np.asarray(g), np.asarray(w), rtol=0, atol=(1e-12 if dtype == "float64" else 1e-5) * scale
            )


def test_select_and_gather_is_the_transpose_of_select_and_scatter_add():
    rng = np.random.default_rng(2)
    from topos.ops import lookup

    attrs = WINDOWS[1]
    x = rng.integers(-1, 2, (2, 3, 6, 5)).astype(float)
    grid = lookup("WindowMax").forward([x], attrs).shape
    g, t = rng.standard_normal(grid), rng.standard_normal(x.shape)
    scattered = lookup("SelectAndScatterAdd").forward([g, x], attrs)
    gathered = lookup("SelectAndGather").forward([t, x], attrs)
    assert np.vdot(scattered, t) == pytest.approx(np.vdot(g, gathered), rel=1e-12)


# Recording -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda x: topos.max_pool(topos.sum(x, axis=(0, 1)), 2), "rank 3 or more"),
        (lambda x: topos.max_pool(x, 0), "window (0, 0) must be at least 1"),
        (lambda x: topos.max_pool(x, (2, 2, 2)), "one entry for each of the 2 spatial axes"),
        (lambda x: topos.avg_pool(x, 2, stride=0), "stride (0, 0) must be at least 1"),
        (lambda x: topos.max_pool(x, 2, padding=2), "shorter than the window"),
        (lambda x: topos.max_pool(x, 6), "longer than the padded axis"),
        (lambda x: topos.max_pool(x, 2.5), "an int or a tuple of ints"),
        (lambda x: topos.avg_pool(x, 2, padding=((1, 1),)), "one (low, high) pair for each of the 2"),
    ],
)
def test_bad_pooling_arguments_raise_a_shape_error_naming_the_cause(call, message):
    tape = Tape()
    x = tape.input(np.zeros((1, 2, 5, 5)))
    before = len(tape) + (1 if "rank" in message else 0)  # that case records its Sum first
    with pytest.raises(ShapeError, match=message.replace("(", r"\(").replace(")", r"\)")) as error:
        call(x)
    assert error.value.source is not None and "test_pooling.py" in str(error.value.source)
    assert len(tape) == before


def test_a_network_with_pooling_saves_and_loads(tmp_path):
    def build(tape):
        x = tape.parameter(np.random.default_rng(0).standard_normal((1, 2, 6, 6)))
        return topos.sum(topos.max_pool(x, 3, 2, ((1, 0), (0, 1)))) + topos.sum(topos.avg_pool(x, 2))

    network, loss = Tape.record(build)
    network.save(tmp_path / "pool.json")
    loaded = topos.Network.load(tmp_path / "pool.json")
    assert [node.attrs for node in loaded.nodes()] == [node.attrs for node in network.nodes()]
    expected = network.forward(network.parameters()).of(loss).scalar()
    assert loaded.forward(loaded.parameters()).of(loaded.symbol(loss.index)).scalar() == expected


# WebGPU ------------------------------------------------------------------------------------------


def test_pooling_and_its_gradients_run_on_webgpu_as_numpy_does():
    rng = np.random.default_rng(4)

    def build(tape):
        x = tape.parameter(rng.standard_normal((2, 3, 9, 8)).astype(np.float32))
        pooled = topos.max_pool(topos.relu(x), 2, padding=((1, 0), (0, 0)))  # ties at relu's zeros
        smooth = topos.avg_pool(pooled, 3, 2, 1)
        return [pooled, smooth, topos.sum(smooth * smooth)]

    network, (pooled, smooth, loss) = Tape.record(build, "float32")
    plan = network.entry([pooled, smooth, loss]).backward(loss).lower()
    reading = plan.kernels()
    window_nodes = [
        i for i in plan.schedule if plan.nodes[i].opcode in ("WindowMax", "WindowSum", "SelectAndScatterAdd")
    ]
    assert len(window_nodes) >= 4 and all(reading.backends[i] == "webgpu" for i in window_nodes)
    assert {launch.entry for launch in reading.launches if launch.kernel == "window"} == {
        "window_max",
        "window_sum",
        "select_scatter_add",
    }
    numpy_run = plan.run(network.parameters())
    device_run = plan.run(network.parameters(), backend="webgpu")
    for want, got in zip(numpy_run.outputs(), device_run.outputs()):
        want = np.asarray(want)
        terms = max(np.size(w) for w in numpy_run.outputs())  # the loss sums the largest output
        assert_close(np.asarray(got), want, library_bound(want, "float32", terms), "WGSL windows against numpy")


def test_a_gradient_of_a_gradient_runs_select_gather_on_webgpu():
    config = CONFIGS[2]
    rng = np.random.default_rng(8)
    x = rng.standard_normal(config[0]).astype(np.float32)
    v = rng.standard_normal(output_shape("max", x, config)).astype(np.float32)
    u = rng.standard_normal(x.shape).astype(np.float32)
    _, network, second = second_order("max", x, v, u, config, "float32")
    plan = network.entry([second]).backward(second).lower()
    assert "select_gather" in {launch.entry for launch in plan.kernels().launches}
    symbol = network.parameter_symbols()[0]
    want = np.asarray(plan.run(network.parameters()).gradient(symbol))
    got = np.asarray(plan.run(network.parameters(), backend="webgpu").gradient(symbol))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
