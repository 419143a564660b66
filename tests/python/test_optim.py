"""Optimizers against PyTorch: the same gradient sequence, step by step, to rounding."""

import numpy as np
import pytest
import torch
from seed_texts import record_seed

import topos
from topos import Tape
from topos.model import optim
from topos.model.network import Gradients

STEPS = 40
SHAPES = {"weight": (3, 4), "bias": (4,), "scale": ()}


def make_network(dtype, seed=0):
    """A network whose parameters have the shapes in SHAPES (the loss is irrelevant here)."""
    rng = np.random.default_rng(seed)

    def build(tape):
        values = [tape.parameter(rng.normal(size=shape), name=name) for name, shape in SHAPES.items()]
        return values

    return Tape.record(build, dtype=dtype)


def gradient_sequence(network, parameters, dtype, seed=1, skip=None):
    """STEPS random gradient tables; ``skip`` (a set of (step, index)) leaves slots out."""
    rng = np.random.default_rng(seed)
    sequence = []
    for step in range(STEPS):
        slots = {}
        for index, array in parameters.slots.items():
            if skip and (step, index) in skip:
                continue
            # Gradients of varied scale exercise the moment estimates and the bias correction.
            slots[index] = (rng.normal(size=array.shape) * (0.1 + step % 3)).astype(dtype)
        sequence.append(Gradients(network, slots))
    return sequence


def run_topos(optimizer, parameters, sequence):
    state = optimizer.init(parameters)
    history = []
    for gradients in sequence:
        parameters, state = optimizer.step(parameters, gradients, state)
        history.append({i: np.array(a) for i, a in parameters.slots.items()})
    return history


def run_torch(torch_class, kwargs, parameters, sequence):
    indices = list(parameters.slots)
    tensors = [torch.tensor(np.array(parameters.slots[i]), requires_grad=True) for i in indices]
    optimizer = torch_class(tensors, **kwargs)
    history = []
    for gradients in sequence:
        for index, tensor in zip(indices, tensors):
            g = gradients.slots.get(index)
            tensor.grad = None if g is None else torch.tensor(np.array(g))
        optimizer.step()
        history.append({i: t.detach().numpy().copy() for i, t in zip(indices, tensors)})
    return history


CONFIGS = [
    (optim.SGD, torch.optim.SGD, dict(lr=0.1)),
    (optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
    (optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    (optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    (optim.Adam, torch.optim.Adam, dict(lr=1e-3)),
    (optim.Adam, torch.optim.Adam, dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    (optim.AdamW, torch.optim.AdamW, dict(lr=1e-3)),
    (optim.AdamW, torch.optim.AdamW, dict(lr=0.03, betas=(0.5, 0.9), eps=1e-7, weight_decay=0.2)),
]
TOLERANCES = {"float64": 1e-12, "float32": 1e-6}


def assert_histories_close(ours, theirs, dtype):
    for step, (mine, reference) in enumerate(zip(ours, theirs)):
        for index in reference:
            assert mine[index].dtype == np.dtype(dtype)
            scale = max(1.0, float(np.max(np.abs(reference[index]))))
            error = float(np.max(np.abs(mine[index] - reference[index]), initial=0.0)) / scale
            assert error <= TOLERANCES[dtype], f"step {step}, slot {index}: relative error {error:.3g}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ours, theirs, kwargs", CONFIGS, ids=lambda c: getattr(c, "__name__", None))
def test_matches_torch_step_by_step(ours, theirs, kwargs, dtype):
    network, _ = make_network(dtype)
    parameters = network.parameters()
    sequence = gradient_sequence(network, parameters, dtype)
    assert_histories_close(
        run_topos(ours(**kwargs), parameters, sequence), run_torch(theirs, kwargs, parameters, sequence), dtype
    )


@pytest.mark.parametrize("ours, theirs, kwargs", [CONFIGS[2], CONFIGS[5], CONFIGS[7]])
def test_missing_gradient_skips_the_parameter_as_torch_does(ours, theirs, kwargs):
    # torch skips a parameter whose .grad is None: no update, no weight decay, no step count.
    network, _ = make_network("float64")
    parameters = network.parameters()
    skip = {(0, 0), (1, 0), (5, 1), (6, 2), (7, 2)}
    sequence = gradient_sequence(network, parameters, "float64", skip=skip)
    assert_histories_close(
        run_topos(ours(**kwargs), parameters, sequence), run_torch(theirs, kwargs, parameters, sequence), "float64"
    )


@pytest.mark.parametrize("optimizer", [optim.SGD(lr=0.1, momentum=0.9), optim.Adam(lr=0.1), optim.AdamW(lr=0.1)])
def test_step_leaves_old_parameters_and_state_untouched(optimizer):
    network, _ = make_network("float64")
    parameters = network.parameters()
    sequence = gradient_sequence(network, parameters, "float64")
    state = optimizer.init(parameters)
    parameters, state = optimizer.step(parameters, sequence[0], state)
    before = {i: np.array(a) for i, a in parameters.slots.items()}
    state_before = {
        i: {k: np.array(v) for k, v in vars(slot).items() if isinstance(v, np.ndarray)}
        for i, slot in state.slots.items()
    }
    new_parameters, new_state = optimizer.step(parameters, sequence[1], state)
    assert new_parameters is not parameters and new_state is not state
    for index, array in parameters.slots.items():
        np.testing.assert_array_equal(array, before[index])
        assert not np.array_equal(new_parameters.slots[index], before[index])
        for key, value in state_before[index].items():
            np.testing.assert_array_equal(getattr(state.slots[index], key), value)
            assert not getattr(state.slots[index], key).flags.writeable
    assert state.steps == 1 and new_state.steps == 2
    with pytest.raises(AttributeError):
        state.steps = 5
    with pytest.raises(TypeError):
        state.slots[0] = None


def test_state_reads_per_parameter_through_symbols():
    network, (weight, bias, scale) = make_network("float64")
    parameters = network.parameters()
    opt = optim.Adam(lr=0.1)
    state = opt.init(parameters)
    gradients = gradient_sequence(network, parameters, "float64")[0]
    _, state = opt.step(parameters, gradients, state)
    slot = state.of(bias)
    assert slot.step == 1
    # After one Adam step, m = (1 - beta1) g and v = (1 - beta2) g^2.
    np.testing.assert_allclose(slot.exp_avg, 0.1 * gradients.of(bias).numpy(), rtol=1e-15)
    np.testing.assert_allclose(slot.exp_avg_sq, 0.001 * np.square(gradients.of(bias).numpy()), rtol=1e-12)
    assert "Adam: 3 slots, 1 step" in repr(state)


def test_optimizers_print_and_round_trip_through_repr():
    namespace = {"SGD": optim.SGD, "Adam": optim.Adam, "AdamW": optim.AdamW}
    for optimizer in [
        optim.SGD(lr=0.1, momentum=0.9, nesterov=True),
        optim.Adam(lr=3e-4, betas=(0.8, 0.95)),
        optim.AdamW(),
    ]:
        text = repr(optimizer)
        assert text.startswith(type(optimizer).__name__ + "(lr=")
        assert eval(text, namespace) == optimizer
    assert str(optim.AdamW(lr=0.01)) == "AdamW(lr=0.01, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01)"


def test_bad_hyperparameters_and_mismatched_tables_raise():
    with pytest.raises(ValueError, match="lr"):
        optim.SGD(lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        optim.Adam(betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="eps"):
        optim.AdamW(eps=float("nan"))
    network, _ = make_network("float64")
    parameters = network.parameters()
    gradients = gradient_sequence(network, parameters, "float64")[0]
    state = optim.SGD(lr=0.1).init(parameters)
    with pytest.raises(ValueError, match="made by SGD"):
        optim.Adam().step(parameters, gradients, state)
    # A gradient of the wrong shape is refused when the table is made, naming the parameter.
    with pytest.raises(topos.FeedError, match="'weight'.*shape \\[4, 3\\]"):
        Gradients(network, {0: np.zeros((4, 3))})
    other, _ = make_network("float64")
    with pytest.raises(topos.FeedError, match="another network"):
        optim.SGD(lr=0.1).step(parameters, Gradients(other, {}), state)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_by_global_norm_matches_torch(dtype, max_norm):
    network, _ = make_network(dtype)
    gradients = gradient_sequence(network, network.parameters(), dtype)[2]
    clipped, norm = optim.clip_by_global_norm(gradients, max_norm)
    tensors = [torch.zeros(a.shape, dtype=getattr(torch, dtype), requires_grad=True) for a in gradients.slots.values()]
    for tensor, array in zip(tensors, gradients.slots.values()):
        tensor.grad = torch.tensor(np.array(array))
    torch_norm = torch.nn.utils.clip_grad_norm_(tensors, max_norm)
    assert isinstance(norm, float)
    assert norm == pytest.approx(float(torch_norm), rel=TOLERANCES[dtype])
    for tensor, array in zip(tensors, clipped.slots.values()):
        assert array.dtype == np.dtype(dtype)
        np.testing.assert_allclose(array, tensor.grad.numpy(), rtol=TOLERANCES[dtype] * 4, atol=0)
    # The original table is not scaled in place.
    fresh = gradient_sequence(network, network.parameters(), dtype)[2]
    np.testing.assert_array_equal(gradients.slots[0], fresh.slots[0])
    if max_norm < norm:
        assert np.sqrt(sum(float(np.sum(np.square(a, dtype=np.float64))) for a in clipped.slots.values())) <= max_norm


def test_clip_rejects_a_non_positive_max_norm():
    network, _ = make_network("float64")
    gradients = gradient_sequence(network, network.parameters(), "float64")[0]
    with pytest.raises(ValueError, match="max_norm"):
        optim.clip_by_global_norm(gradients, 0.0)


def _tiny_regression(dtype):
    """A two-layer tanh network fitting y = sin(x1) + x2 / 2 on 16 samples."""
    rng = np.random.default_rng(3)
    xs = rng.uniform(-1.0, 1.0, size=(16, 2))
    ys = (np.sin(xs[:, 0]) + xs[:, 1] / 2).reshape(16, 1)

    def build(tape):
        w1 = tape.parameter(rng.normal(size=(2, 8)) * 0.5, name="w1")
        b1 = tape.parameter(np.zeros(8), name="b1")
        w2 = tape.parameter(rng.normal(size=(8, 1)) * 0.5, name="w2")
        x = tape.input(xs)
        y = tape.input(ys)
        hidden = topos.tanh(x @ w1 + b1)
        error = hidden @ w2 - y
        return [(error * error).mean()]

    return Tape.record(build, dtype=dtype)


@pytest.mark.parametrize("optimizer", [optim.Adam(lr=0.05), optim.AdamW(lr=0.05), optim.SGD(lr=0.2, momentum=0.9)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_tiny_model_trains(optimizer, dtype):
    network, (loss,) = _tiny_regression(dtype)
    parameters = network.parameters()
    state = optimizer.init(parameters)
    losses = []
    for _ in range(150):
        run = network.forward(parameters)
        losses.append(run.of(loss).scalar())
        gradients, _ = optim.clip_by_global_norm(run.backward(loss).parameters(parameters), 5.0)
        parameters, state = optimizer.step(parameters, gradients, state)
    assert parameters.of(network.parameter_symbols()[0]).dtype == dtype
    assert losses[-1] < 0.05 * losses[0], losses[::30]


def test_the_seed_problem_converges_with_momentum():
    network, (w, x, y, loss) = Tape.record(lambda tape: record_seed(tape, 0.0, 0.0, 0.0, name="w"))
    parameters = network.parameters()
    opt = optim.SGD(lr=0.02, momentum=0.5)
    state = opt.init(parameters)
    samples = [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]
    for step in range(100):
        sx, sy = samples[step % len(samples)]
        run = network.forward(parameters, {x: sx, y: sy})
        parameters, state = opt.step(parameters, run.backward(loss).parameters(parameters), state)
    assert abs(parameters.of(w).scalar() - 2.0) < 1e-6


@pytest.mark.parametrize("ours, theirs, kwargs", CONFIGS, ids=lambda c: getattr(c, "__name__", None))
def test_a_donated_step_updates_in_place_to_the_same_bits(ours, theirs, kwargs):
    network, _ = make_network("float32")
    parameters = network.parameters()
    sequence = gradient_sequence(network, parameters, "float32", skip={(3, 0), (4, 1)})
    optimizer = ours(**kwargs)
    kept, kept_state = parameters, optimizer.init(parameters)
    donated, donated_state = parameters, optimizer.init(parameters)
    addresses = []
    for step, gradients in enumerate(sequence):
        kept, kept_state = optimizer.step(kept, gradients, kept_state)
        before = donated
        donated, donated_state = optimizer.step(donated, gradients, donated_state, donate=True)
        for index in kept.slots:
            assert kept.slots[index].tobytes() == donated.slots[index].tobytes(), (step, index)
        # The table given is still held (``before``): the step never writes its memory...
        assert not any(np.shares_memory(before.slots[i], donated.slots[i]) for i in donated.slots)
        addresses.append([donated.slots[i].__array_interface__["data"][0] for i in donated.slots])
        if step >= 6:  # ...but the memory of the table two steps back, which nothing holds any more
            assert addresses[-1] == addresses[-3], step
    for index, slot in kept_state.slots.items():
        for name, value in vars(slot).items():
            assert np.array_equal(value, getattr(donated_state.slots[index], name)), (index, name)


def test_a_donated_state_cannot_be_stepped_again_and_a_kept_one_can():
    network, _ = make_network("float64")
    parameters = network.parameters()
    first, second = gradient_sequence(network, parameters, "float64")[:2]
    optimizer = optim.Adam(lr=0.1)
    state = optimizer.init(parameters)
    after, after_state = optimizer.step(parameters, first, state)
    again, _ = optimizer.step(parameters, first, state)  # a kept state steps as often as asked, alike
    assert all(np.array_equal(after.slots[i], again.slots[i]) for i in after.slots)
    optimizer.step(after, second, after_state, donate=True)
    with pytest.raises(ValueError, match="donated"):
        optimizer.step(after, second, after_state)
    # The network's own payloads are never written, donated or not.
    np.testing.assert_array_equal(network.parameters().slots[0], parameters.slots[0])


def test_a_step_lays_the_parameters_of_one_dtype_in_one_flat_array():
    network, _ = make_network("float32")
    parameters = network.parameters()
    optimizer = optim.AdamW(lr=0.1)
    new, state = optimizer.step(
        parameters, gradient_sequence(network, parameters, "float32")[0], optimizer.init(parameters)
    )
    bases = {id(array.base.base if array.base.base is not None else array.base) for array in new.slots.values()}
    assert len(bases) == 1
    slot = state.slots[0]
    assert slot.step == 1 and not slot.exp_avg.flags.writeable and slot.exp_avg.shape == SHAPES["weight"]
