"""``DeviceTrainer`` keeps what it trains end to end in banks (``topos.webgpu.flat``): one optimizer
launch a bank updates every parameter in it, and the parameters, their gradients and the moments
(windows of the banks) follow the host's optimizer as they did one launch a parameter. Runs on
wgpu-py (lavapipe on the project's machines)."""

import numpy as np
import pytest
from tolerances import assert_close, assert_trained_close, loss_bound, training_bound

import topos
from topos import Tape
from topos.compiler.wgsl.program import WINDOW_ALIGNMENT, Launch
from topos.model import optim
from topos.webgpu import DeviceTrainer
from topos.webgpu.flat import Slot, pack_slots

STEPS = 4
OPTIMIZERS = {
    "adam": lambda: optim.Adam(lr=0.05),
    "adamw": lambda: optim.AdamW(lr=0.05, weight_decay=0.1),
    "sgd": lambda: optim.SGD(lr=0.1, weight_decay=1e-2),
    "sgd-momentum": lambda: optim.SGD(lr=0.1, momentum=0.9, dampening=0.1),
    "sgd-nesterov": lambda: optim.SGD(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
}


def test_slots_start_aligned_and_a_bank_opens_where_the_next_would_pass_its_capacity():
    slots, lengths = pack_slots([3, 64, 70, 10, 300], capacity=160)
    assert slots == [Slot(0, 0, 3), Slot(0, 64, 64), Slot(1, 0, 70), Slot(1, 128, 10), Slot(2, 0, 300)]
    assert lengths == [128, 138, 300]
    assert all(slot.start % WINDOW_ALIGNMENT == 0 for slot in slots)


def mlp():
    """A two-layer network over 8 rows with parameters of 200, 40, 120, 3 and 7 elements; the last one's
    gradient is a constant (1/7 everywhere), which is filled into its window."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(8, 5)).astype("float32")
    targets = rng.normal(size=(8, 3)).astype("float32")
    first = (0.3 * rng.normal(size=(5, 40))).astype("float32")
    second = (0.3 * rng.normal(size=(40, 3))).astype("float32")

    def build(tape):
        x = tape.input(points, name="x")
        y = tape.input(targets, name="y")
        w1 = tape.parameter(first, name="w1")
        b1 = tape.parameter(np.zeros(40, "float32"), name="b1")
        w2 = tape.parameter(second, name="w2")
        b2 = tape.parameter(np.zeros(3, "float32"), name="b2")
        shift = tape.parameter(np.full(7, 0.5, "float32"), name="shift")
        hidden = topos.tanh(x @ w1 + b1)
        return [topos.mse(hidden @ w2 + b2, y) + topos.mean(shift)]

    network, (loss,) = Tape.record(build, dtype="float32")
    return network, loss


class SmallBanks(DeviceTrainer):
    """Banks of 256 elements: the network's five parameters take three (200 | 40, 120, 3 | 7)."""

    BANK_ELEMENTS = 256


def host_training(network, loss, optimizer):
    parameters = network.parameters()
    state = optimizer.init(parameters)
    losses = []
    for _ in range(STEPS):
        run = network.forward(parameters)
        losses.append(run.of(loss).scalar())
        parameters, state = optimizer.step(parameters, run.backward(loss).parameters(parameters), state)
    return parameters, state, losses


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_parameters_in_several_banks_train_as_the_host_and_as_one_bank(name):
    network, loss = mlp()
    plan = network.entry([loss]).backward(loss).lower()
    trainers = {"one": DeviceTrainer(plan, network.parameters(), OPTIMIZERS[name]()), "three": None}
    trainers["three"] = SmallBanks(plan, network.parameters(), OPTIMIZERS[name]())
    for banks, trainer in zip((1, 3), trainers.values()):
        updates = [s for s in trainer._program.steps if isinstance(s, Launch) and s.kernel == "optimizer"]
        assert len(updates) == banks
        assert sorted(p for launch in updates for p in launch.nodes) == sorted(p for p, _ in plan.gradients)
        windows = [b for b in trainer._program.buffers if b.base is not None]
        assert windows and all(b.start % WINDOW_ALIGNMENT == 0 for b in windows)
        assert trainer.program_counts()["submits"] == 1
    losses = {key: [trainer.step().of(loss).scalar() for _ in range(STEPS)] for key, trainer in trainers.items()}
    host_parameters, host_state, host_losses = host_training(network, loss, OPTIMIZERS[name]())
    # The mlp's widest reduction is the 40 hidden units into the output.
    assert_close(losses["three"], host_losses, loss_bound(host_losses, "float32", 40), "losses")
    adam = not name.startswith("sgd")
    one, three = trainers["one"], trainers["three"]
    # The same launches on the same device, only bound at other offsets: the same bits.
    assert losses["one"] == losses["three"]
    for index, array in three.parameters().slots.items():
        np.testing.assert_array_equal(array, one.parameters().slots[index])
        if not adam:
            want = host_parameters.slots[index]
            assert_close(array, want, training_bound(want, "float32", 40, STEPS), f"parameter {index}")
    if adam:
        assert_trained_close(three.parameters(), host_parameters, OPTIMIZERS[name]().lr, STEPS, "parameters")
    moments = three.moments()
    assert sorted(moments) == sorted(one.moments())
    for (index, moment), value in moments.items():
        np.testing.assert_array_equal(value, one.moments()[(index, moment)])
        want = getattr(host_state.slots[index], moment)
        assert_close(value, want, training_bound(want, "float32", 40, STEPS), f"{moment} of {index}")


def test_a_step_reads_the_loss_alone_and_the_describe_names_the_banks():
    network, loss = mlp()
    plan = network.entry([loss]).backward(loss).lower()
    trainer = SmallBanks(plan, network.parameters(), optim.Adam(lr=0.05))
    trainer.step()
    second = trainer.step()
    counts = trainer.counts()
    assert counts["submits"] == 1 and counts["readbacks"] == 1 and counts["read_bytes"] == 4
    assert np.isfinite(second.of(loss).scalar())
    text = trainer.describe()
    assert text.count("optimizer:adam") == 3
    assert "1 parameter, 200 elements" in text and "3 parameters, 195 elements" in text
