"""Random numbers in the recording: Threefry-2x32 against Random123's and JAX's values, the same
bits on numpy, XLA and WebGPU (lavapipe), the distributions' statistics, dropout, and uint32 end to end.

JAX (``jax.random``, threefry with jax 0.10's default partitionable layout) is the oracle of the
bits, keys and float32 uniforms, which must agree bit for bit; Random123's known-answer vectors
are the oracle of the hash itself. The WebGPU tests need an adapter and fail without one.
"""

import jax
import numpy as np
import pytest
from tolerances import assert_close, loss_bound

import topos
from topos import (
    ArgumentError,
    ArgumentTypeError,
    DtypeError,
    FeedError,
    RecordingError,
    ShapeError,
    Tape,
    Tensor,
    ToposError,
)
from topos.model import optim
from topos.ops import random as threefry
from topos.xla import XLATrainer

KEYS = [(0, 0), (0, 42), (1, 2), (0xFFFFFFFF, 0xFFFFFFFF), (0x13198A2E, 0x03707344), (2026, 12, 2)[:2]]
SHAPES = [(), (0,), (1,), (7,), (64,), (65,), (3, 5, 7), (2, 0, 3), (1, 1, 1)]


def jax_key(key):
    return jax.random.wrap_key_data(np.asarray(key, dtype=np.uint32))


def jax_bits(key, shape):
    return np.asarray(jax.random.bits(jax_key(key), shape, dtype=np.uint32))


def jax_key_data(keys):
    return np.asarray(jax.random.key_data(keys))


def words(key):
    return np.asarray(key, dtype=np.uint32)


# The hash: Random123's known answers ---------------------------------------------------------

# (key, counter, result) from Random123's kat_vectors (threefry2x32, 20 rounds).
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("key,counter,expected", KNOWN_ANSWERS)
def test_threefry_gives_random123s_known_answers(key, counter, expected):
    y0, y1 = threefry.threefry2x32(words(key), words([counter[0]]), words([counter[1]]))
    assert (int(y0[0]), int(y1[0])) == expected


# numpy against JAX ------------------------------------------------------------------------------


@pytest.mark.parametrize("key", KEYS)
def test_bits_equal_jax_random_bits_for_every_shape(key):
    for shape in SHAPES:
        ours = threefry.random_bits(words(key), shape)
        want = jax_bits(key, shape)
        assert ours.dtype == np.uint32 and ours.shape == want.shape, shape
        assert np.array_equal(ours, want), (key, shape)


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 - 1, 123456789])
def test_random_key_split_and_fold_in_equal_jax(seed):
    key = topos.random_key(seed)
    assert key.dtype == np.uint32 and np.array_equal(key, np.asarray(jax.random.PRNGKey(seed)))
    for n in (1, 2, 3, 10):
        assert np.array_equal(topos.split_key(key, n), jax_key_data(jax.random.split(jax_key(key), n)))
    for data in (0, 1, 7, 2**32 - 1):
        assert np.array_equal(topos.fold_in(key, data), jax_key_data(jax.random.fold_in(jax_key(key), data)))


def test_random_key_reads_the_seed_as_a_64_bit_word():
    assert topos.random_key(2**32 + 5).tolist() == [1, 5]
    assert topos.random_key(-1).tolist() == [0xFFFFFFFF, 0xFFFFFFFF]


def record_draws(key, draw):
    """A network whose one key input feeds ``draw(tape, key)`` (a list of values)."""

    def build(tape):
        k = tape.input(words(key), name="key")
        return [k] + list(draw(tape, k))

    network, (k, *outputs) = Tape.record(build, dtype="float32")
    return network, k, outputs


def run_all(network, outputs, backend, feeds=None):
    plan = network.entry(outputs).lower()
    return [np.asarray(v) for v in plan.run(network.parameters(), feeds, backend=backend).outputs()]


@pytest.mark.parametrize("key", KEYS)
def test_uniform_equals_jax_random_uniform_bit_for_bit(key):
    shapes = [(5,), (3, 4), (65,)]
    network, _, outputs = record_draws(key, lambda t, k: [topos.uniform(k, s) for s in shapes])
    for got, shape in zip(run_all(network, outputs, "numpy"), shapes):
        want = np.asarray(jax.random.uniform(jax_key(key), shape, dtype=np.float32))
        assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))
        assert got.min() >= 0.0 and got.max() < 1.0


def test_uniform_on_a_range_is_u_times_the_span_plus_low_as_jax_computes_it():
    network, _, outputs = record_draws((3, 4), lambda t, k: [topos.uniform(k, (1000,), low=-2.0, high=5.0)])
    (got,) = run_all(network, outputs, "numpy")
    unit = np.asarray(jax.random.uniform(jax_key((3, 4)), (1000,), np.float32))
    assert np.array_equal(got, unit * np.float32(7.0) + np.float32(-2.0))
    # XLA may fuse JAX's multiply and add (one rounding): within half an ulp of the span.
    want = np.asarray(jax.random.uniform(jax_key((3, 4)), (1000,), np.float32, -2.0, 5.0))
    np.testing.assert_allclose(got, want, rtol=0, atol=np.spacing(np.float32(7.0)))
    assert got.min() >= -2.0 and got.max() <= 5.0


def test_bernoulli_equals_jax_random_bernoulli():
    network, _, outputs = record_draws((9, 9), lambda t, k: [topos.bernoulli(k, 0.3, (4, 50))])
    (got,) = run_all(network, outputs, "numpy")
    want = np.asarray(jax.random.bernoulli(jax_key((9, 9)), np.float32(0.3), (4, 50)))
    assert np.array_equal(got, want.astype(np.float32))


# The same bits on numpy, XLA and WebGPU -------------------------------------------------------------


def every_draw(tape, key):
    """Bits over the edge sizes, keys split and folded, uniforms of float32."""
    draws = [topos.random_bits(key, shape) for shape in SHAPES + [(4097,), (2, 3, 67)]]
    keys = topos.split_key(key, 5)
    draws += [keys, topos.fold_in(key, 2026), topos.random_bits(keys[3], (70,))]
    draws += [topos.random_bits(topos.fold_in(keys[1], 9), (3, 3))]
    draws += [topos.uniform(key, (130,)), topos.uniform(key, (2, 65))]
    strided = topos.transpose(topos.random_bits(key, (3, 5, 4)), (2, 0, 1))[1:, :, ::2]  # a view, no copy
    draws += [tape.apply("Uniform", [strided], dtype="float32")]
    return draws


@pytest.mark.parametrize("key", KEYS)
def test_xla_gives_the_same_bits_as_numpy(key):
    network, _, outputs = record_draws(key, every_draw)
    for got, want in zip(run_all(network, outputs, "xla"), run_all(network, outputs, "numpy")):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_iree_gives_the_same_bits_as_numpy():
    import iree.compiler
    import iree.runtime

    network, _, outputs = record_draws((5, 77), every_draw)
    plan = network.entry(outputs).lower()
    binary = iree.compiler.compile_str(
        plan.emit_stablehlo(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    module = iree.runtime.load_vm_flatbuffer(binary, driver="local-task")
    got = list(module.main(*plan.argument_values(network.parameters())))
    assert len(got) == len(outputs)
    for result, want in zip(got, run_all(network, outputs, "numpy")):
        result = np.asarray(result.to_host())
        assert result.shape == want.shape and np.array_equal(result.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("key", KEYS)
def test_webgpu_gives_the_same_bits_as_numpy(key):
    network, _, outputs = record_draws(key, every_draw)
    plan = network.entry(outputs).lower()
    run = plan.run(network.parameters(), backend="webgpu")
    for index, backend in run.backends.items():
        node = plan.nodes[index]
        if node.size and not node.is_source:  # keys split and sliced too: the copy kernel moves words
            assert backend == "webgpu", (index, node.opcode)
    for got, want in zip((np.asarray(v) for v in run.outputs()), run_all(network, outputs, "numpy")):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_new_key_fed_to_the_same_plan_draws_new_numbers_on_every_backend():
    network, key, outputs = record_draws((0, 1), lambda t, k: [topos.random_bits(k, (40,))])
    for backend in ("numpy", "xla", "webgpu"):
        for seed in (5, 6):
            (got,) = run_all(network, outputs, backend, {key: topos.random_key(seed)})
            assert np.array_equal(got, jax_bits(topos.random_key(seed), (40,))), (backend, seed)


def test_normal_agrees_across_backends_to_float_rounding():
    from test_random_jax import jax_normal_uniforms, normal_bound

    network, _, outputs = record_draws((5, 6), lambda t, k: [topos.normal(k, (2, 333))])
    (want,) = run_all(network, outputs, "numpy")
    u = jax_normal_uniforms((5, 6), (2, 333))
    for backend in ("xla", "webgpu"):
        (got,) = run_all(network, outputs, backend)
        # erfinv's log1p rounds differently: each backend within its bound of jax's draws (normal_bound).
        bound = normal_bound(u, "numpy") + normal_bound(u, backend)
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), backend


# The distributions --------------------------------------------------------------------------------


def draw64(draw, key=(11, 22)):
    def build(tape):
        return draw(tape.input(words(key)))

    network, value = Tape.record(build, dtype="float64")
    return np.asarray(network.forward(network.parameters()).of(value))


def test_normal_has_the_moments_of_a_standard_normal():
    n = 200_000
    z = draw64(lambda k: topos.normal(k, (n,), dtype="float64"))
    assert z.dtype == np.float64 and z.shape == (n,)
    # Each bound is five standard errors of the statistic for n normal draws.
    assert abs(z.mean()) < 5 / np.sqrt(n)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / n)
    assert abs(np.mean(z**3)) < 5 * np.sqrt(15 / n)
    assert abs(np.mean(z**4) - 3) < 5 * np.sqrt(96 / n)
    assert abs(np.mean(np.abs(z) < 1) - 0.682689) < 5 * np.sqrt(0.2166 / n)
    odd = draw64(lambda k: topos.normal(k, (3, 5), dtype="float64"))
    assert odd.shape == (3, 5) and np.all(np.isfinite(odd))


def test_uniform_float64_is_the_same_bits_scaled_and_stays_in_range():
    u = draw64(lambda k: topos.uniform(k, (50_000,), dtype="float64"))
    assert np.array_equal(u, jax_bits((11, 22), (50_000,)) * 2.0**-32)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / 50_000)


def test_bernoulli_keeps_its_rate():
    n = 100_000
    for p in (0.0, 0.3, 0.9, 1.0):
        b = draw64(lambda k, p=p: topos.bernoulli(k, p, (n,), dtype="float64"))
        assert set(np.unique(b)) <= {0.0, 1.0}
        assert abs(b.mean() - p) <= 5 * np.sqrt(p * (1 - p) / n), p


# Dropout -----------------------------------------------------------------------------------------


def dropout_run(x, rate, key=(7, 2026), dtype="float64"):
    """Values and the gradient of sum(dropout(x) * w) with respect to x."""
    weights = np.linspace(-1.0, 2.0, x.size).reshape(x.shape)

    def build(tape):
        p = tape.parameter(x)
        out = topos.dropout(p, rate, tape.input(words(key)))
        return [p, out, topos.sum(out * tape.leaf(weights))]

    network, (p, out, loss) = Tape.record(build, dtype=dtype)
    run = network.forward(network.parameters())
    return np.asarray(run.of(out)), np.asarray(run.backward(loss).of(p)), weights


def test_dropout_keeps_where_jaxs_bits_say_and_scales_the_kept_values():
    x = np.arange(1.0, 241.0).reshape(8, 30)
    out, grad, weights = dropout_run(x, 0.25)
    kept = jax_bits((7, 2026), x.shape) < np.uint32(3 << 30)  # uniform < 0.75
    assert np.array_equal(out, np.where(kept, x / 0.75, 0.0))
    assert np.array_equal(grad, np.where(kept, weights / 0.75, 0.0))
    assert abs(kept.mean() - 0.75) < 5 * np.sqrt(0.75 * 0.25 / x.size)


def test_dropout_at_rate_0_is_x_and_at_rate_1_zeros_without_a_division():
    x = np.array([[1.0, -2.0, np.inf], [np.nan, 0.5, -0.0]])
    tape = Tape()
    p = tape.parameter(x)
    assert topos.dropout(p, 0.0, tape.input(topos.random_key(0))) is p
    with np.errstate(all="raise"):  # a division by zero would raise here
        out, grad, _ = dropout_run(x, 1.0)
    assert np.array_equal(out, np.zeros_like(x)) and not np.signbit(out).any()
    assert np.array_equal(grad, np.zeros_like(x))


def test_dropout_refuses_a_rate_outside_0_1_and_integer_values():
    tape = Tape()
    x, key = tape.parameter(np.ones(3)), tape.input(topos.random_key(0))
    for rate in (-0.1, 1.5, True, "half"):
        with pytest.raises(ArgumentError, match="rate in \\[0, 1\\]"):
            topos.dropout(x, rate, key)
    with pytest.raises(DtypeError, match="floating-point"):
        topos.dropout(tape.input(np.arange(3), dtype="int32"), 0.5, key)
    assert len(tape.nodes()) == 3  # the refused calls recorded nothing


# Bad keys ---------------------------------------------------------------------------------------------


def test_bad_keys_raise_errors_that_say_what_a_key_is():
    cases = [
        (lambda: topos.split_key(np.zeros(3, np.uint32)), ShapeError),
        (lambda: topos.fold_in(np.zeros((2, 2), np.uint32), 1), ShapeError),
        (lambda: topos.split_key(np.zeros(2)), DtypeError),
        (lambda: topos.fold_in([-1, 3], 1), ArgumentError),
        (lambda: topos.fold_in(topos.random_key(0), -1), ArgumentError),
        (lambda: topos.fold_in(topos.random_key(0), 2**32), ArgumentError),
        (lambda: topos.split_key(topos.random_key(0), 0), ArgumentError),
        (lambda: topos.random_key(1.5), ArgumentError),
        (lambda: topos.uniform(topos.random_key(0), (3,)), ArgumentTypeError),
    ]
    for call, error in cases:
        with pytest.raises(error, match="key|data|n must|seed|draws inside a recording") as caught:
            call()
        assert isinstance(caught.value, ToposError)
    tape = Tape()
    floats, long = tape.input(np.zeros(2)), tape.input(np.zeros(3, np.uint32))
    with pytest.raises(DtypeError, match="a key is a uint32 \\[2\\] array"):
        topos.random_bits(floats, (3,))
    with pytest.raises(ShapeError, match="shape \\[3\\]") as caught:
        topos.normal(long, (3,))
    assert caught.value.source is not None  # it names the user's line
    with pytest.raises(ShapeError, match="takes a key, a uint32 \\[2\\] value"):
        tape.apply("RandomBits", [long], shape=(3,))
    with pytest.raises(ShapeError, match="Uniform: takes uint32 bits"):
        tape.apply("Uniform", [floats])


# uint32 end to end -----------------------------------------------------------------------------------


def test_a_key_is_a_uint32_input_fed_checked_and_shown_like_any_input():
    def build(tape):
        key = tape.input(topos.random_key(1), name="key")
        return [key, topos.uniform(key, (2, 3))]

    network, (key, u) = Tape.record(build, dtype="float64")
    assert network.node(key).dtype == "uint32" and network.node(u).dtype == "float32"
    run = network.forward(network.parameters(), {key: [0, 5]})
    assert np.array_equal(run.of(u).numpy(), jax.random.uniform(jax_key((0, 5)), (2, 3), np.float32))
    for bad in ([-1, 5], [0, 2**32], [0.5, 1]):
        with pytest.raises(FeedError):
            network.forward(network.parameters(), {key: bad})
    with pytest.raises(RecordingError, match="do not fit uint32"):
        Tape().input([-1, 2], dtype="uint32")
    assert Tape().leaf(topos.random_key(1)).dtype == "uint32"  # a constant key
    assert Tape().parameter(topos.random_key(1)).dtype == "float64"  # a parameter is trained: the tape's floats
    plan = network.entry([u]).lower()
    described = plan.describe()
    assert "Input" in described.splitlines()[0] and "[2]" in described.splitlines()[0]
    assert "RandomBits" in described and "Uniform" in described
    costs = plan.costs()
    assert costs.per_node[0] == (0, 0)  # the key: an input, resident like any
    assert costs.per_node[1][1] == 2 * 4 + 6 * 4  # RandomBits reads the key's 2 words, writes 6: 4 bytes each
    graph = topos.Graph.from_plan(plan).to_json()
    key_entry = graph["nodes"][0]
    assert (key_entry["opcode"], key_entry["dtype"], key_entry["dims"], key_entry["name"]) == (
        "Input",
        "uint32",
        [2],
        "key",
    )
    assert [0, 1] in graph["edges"]  # the key feeds the draw
    assert "%arg0: tensor<2xui32>" in plan.emit_stablehlo()
    shown = repr(Tensor(topos.random_key(7)))
    assert shown == "Tensor([0, 7], dtype=uint32)"


def test_a_network_with_a_key_input_saves_and_loads(tmp_path):
    def build(tape):
        key = tape.input(topos.random_key(3), name="key")
        return topos.dropout(tape.parameter(np.ones((2, 4))), 0.5, key)

    network, out = Tape.record(build)
    path = tmp_path / "net.topos"
    network.save(path)
    loaded = topos.Network.load(path)
    assert [n.dtype for n in loaded.nodes()] == [n.dtype for n in network.nodes()]
    want = network.forward(network.parameters()).of(out).numpy()
    assert np.array_equal(loaded.forward(loaded.parameters()).of(loaded.symbol(out.index)).numpy(), want)


# A dropout training run: the same losses on numpy and XLA ------------------------------------------------


def dropout_mlp(dtype="float32"):
    rng = np.random.default_rng(3)
    inputs, targets = rng.normal(size=(32, 6)), rng.normal(size=(32, 2))

    def build(tape):
        x, y = tape.input(inputs), tape.input(targets)
        key = tape.input(topos.random_key(0), name="key")
        w1 = tape.parameter(rng.normal(size=(6, 16)) * 0.4, name="w1")
        w2 = tape.parameter(rng.normal(size=(16, 2)) * 0.3, name="w2")
        hidden = topos.dropout(topos.tanh(x @ w1), 0.3, key)
        return [key, topos.mse(hidden @ w2, y)]

    network, (key, loss) = Tape.record(build, dtype=dtype)
    return network, key, loss


def numpy_and_device_losses(trainer_class, steps=50):
    """The losses of ``steps`` dropout training steps on the numpy interpreter and through
    ``trainer_class`` (XLATrainer, DeviceTrainer), step ``step`` fed the key fold_in(base, step)."""
    network, key, loss = dropout_mlp()
    optimizer = optim.SGD(lr=0.1)
    plan = network.entry([loss]).backward(loss).lower()
    trainer = trainer_class(plan, network.parameters(), optimizer)
    parameters, state = network.parameters(), optimizer.init(network.parameters())
    base = topos.random_key(2026)
    numpy_losses, device_losses = [], []
    for step in range(steps):
        feeds = {key: topos.fold_in(base, step)}  # a fresh key each step
        run = network.forward(parameters, feeds)
        parameters, state = optimizer.step(parameters, run.backward(loss).parameters(parameters), state)
        numpy_losses.append(float(run.of(loss)))
        device_losses.append(float(np.asarray(trainer.step(feeds).of(loss))))
    assert numpy_losses[-1] < 0.8 * numpy_losses[0]  # it trains
    assert len(set(np.round(numpy_losses, 6))) == steps  # and each step drew its own mask
    return plan, numpy_losses, device_losses


def test_a_dropout_training_run_of_50_steps_gives_the_same_losses_on_numpy_and_xla():
    _, numpy_losses, xla_losses = numpy_and_device_losses(XLATrainer)
    # float32 rounding only: the masks are the same bits on both (a mask differing in one element
    # would move a loss by about 1e-2). The widest reduction is a gradient's sum over the 32 rows.
    assert_close(xla_losses, numpy_losses, loss_bound(numpy_losses, "float32", terms=32), "XLA's losses")


def test_a_dropout_training_run_of_50_steps_gives_the_same_losses_on_numpy_and_webgpu():
    from topos.webgpu import DeviceTrainer

    plan, numpy_losses, device_losses = numpy_and_device_losses(DeviceTrainer)
    assert_close(device_losses, numpy_losses, loss_bound(numpy_losses, "float32", terms=32), "WebGPU's losses")
    assert "0 host steps" in plan.kernels().summary()  # the draws run on the device too


# cos and sin on WebGPU: any f32 argument, reduced exactly ---------------------------------------------


def test_webgpu_cos_and_sin_reduce_any_argument_exactly():
    from topos.compiler.wgsl import launch as build
    from topos.ops import lookup
    from topos.webgpu import View, run_launches

    rng = np.random.default_rng(1)
    # Every magnitude up to the largest float32, and multiples of pi/2 where a result cancels to near 0.
    x = np.concatenate([np.exp(rng.uniform(-3, 88, 4000)), np.pi / 2 * np.arange(1, 2001)])
    x = (x * rng.choice([-1.0, 1.0], x.size)).astype(np.float32)
    x = np.concatenate([x, np.float32([3.4028235e38, -3.4028235e38, 2**24, 2**25 + 2, 0.7853982, -0.0])])
    dense = View.of_buffer(0, (x.size,))
    for opcode, exact in (("Cos", np.cos), ("Sin", np.sin)):
        launch = build.elementwise(lookup(opcode).wgsl, 9, (x.size,), [dense])
        got = run_launches([launch], {0: x}, {9: x.size}, {"out": View.of_buffer(9, (x.size,))})["out"]
        want = exact(x.astype(np.float64))
        # A few ulp of float32 absolutely (the reduced angle's rounding), and relatively near the zeros.
        error = np.abs(got.astype(np.float64) - want)
        assert np.all(error <= 2e-7 * np.maximum(np.abs(want), 1e-2)), (opcode, x[np.argmax(error)], error.max())


def test_the_playground_reads_a_recording_with_a_key_and_prints_its_bits():
    import json

    from topos import playground

    code = (
        "import topos\n"
        "from topos import Tape\n"
        "def build(tape):\n"
        "    key = tape.input(topos.random_key(3), name='key')\n"
        "    return [key, topos.random_bits(key, (2, 3))]\n"
        "network, (key, bits) = Tape.record(build)\n"
        "print(network.forward(network.parameters()).of(bits))\n"
    )
    result = json.loads(playground.run(code))
    assert result["error"] is None
    printed = result["output_text"].replace("[", " ").replace("]", " ").split()
    assert printed == [str(b) for b in jax_bits((0, 3), (2, 3)).reshape(-1)]
    graph = result["readings"]["graph"]["graph"]["nodes"]
    assert (graph[0]["opcode"], graph[0]["dtype"], graph[0]["name"]) == ("Input", "uint32", "key")
    assert "tensor<2xui32>" in result["readings"]["hlo"]["text"]
    assert "random:bits" in result["readings"]["kernels"]["text"]
