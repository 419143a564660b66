"""Resumable training (issue 35, Deliver 3): an optimizer's state as a safetensors file.

``state.save(path)`` writes the moments, the step count (the schedule's position) and each slot's
key; ``optimizer.load_state(path, parameters)`` reads them back, checked. A run saved after ``HALF``
steps, loaded (parameters and state from their files) and taken ``HALF`` steps further ends where the
run that never stopped ends, bit for bit: on the numpy loop, ``XLATrainer``, ``DeviceTrainer`` (the
machine's WebGPU adapter) and ``DataParallelTrainer`` (8 host devices, in a process of its own). Bit
for bit is the right test: the resumed run computes the same operations on the same bits in the same
order (nothing about the run differs but where its numbers came from), so any difference is a lost
or altered bit of state. A damaged or mismatched file is refused with a ``CheckpointError`` naming
the problem, and nothing changes: the file, the table, the state in hand.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from test_schedules import OPTIMIZERS
from test_trainers_api import run_device_script, tiny_network

from topos import ArgumentError, CheckpointError, Tape
from topos.model import checkpoint, optim, schedules
from topos.webgpu.trainer import DeviceTrainer
from topos.xla import XLATrainer

HERE = Path(__file__).parent
HALF = 50
#: Warm-up, then a cosine that is still moving at step 100: every step of the resumed half counts.
RESUME_SCHEDULE = schedules.warmup_cosine_decay_schedule(0.0, 0.05, warmup_steps=10, decay_steps=150, end_value=0.005)


def host_steps(network, loss, optimizer, parameters, state, steps):
    for _ in range(steps):
        gradients = network.forward(parameters).backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)
    return parameters, state


def assert_same_bits(first, second, what):
    for index in first.slots:
        np.testing.assert_array_equal(first.slots[index], second.slots[index], err_msg=f"{what}: parameter {index}")


def assert_same_state(first, second, what):
    assert first.steps == second.steps
    for index, slot in first.slots.items():
        for name, value in vars(slot).items():
            other = getattr(second.slots[index], name)
            if isinstance(value, np.ndarray) or isinstance(other, np.ndarray):
                np.testing.assert_array_equal(value, other, err_msg=f"{what}: {name} of {index}")
            else:
                assert value == other, f"{what}: {name} of {index}"


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_a_numpy_run_saved_loaded_and_resumed_is_the_run_never_stopped(kind, tmp_path):
    network, (x, w, b, loss) = tiny_network()
    optimizer = OPTIMIZERS[kind](RESUME_SCHEDULE)
    parameters = network.parameters()
    straight = host_steps(network, loss, optimizer, parameters, optimizer.init(parameters), 2 * HALF)
    half_parameters, half_state = host_steps(network, loss, optimizer, parameters, optimizer.init(parameters), HALF)
    half_parameters.save(tmp_path / "parameters.safetensors")
    half_state.save(tmp_path / "state.safetensors")
    loaded = network.load_parameters(tmp_path / "parameters.safetensors")
    state = optimizer.load_state(tmp_path / "state.safetensors", loaded)
    assert_same_state(state, half_state, "loaded")
    resumed = host_steps(network, loss, optimizer, loaded, state, HALF)
    assert_same_bits(resumed[0], straight[0], f"{kind} resumed")
    assert_same_state(resumed[1], straight[1], f"{kind} resumed")


TRAINERS = {"xla": XLATrainer, "webgpu": DeviceTrainer}


@pytest.mark.parametrize("name", sorted(TRAINERS))
@pytest.mark.parametrize("kind", ["Adam", "SGD"])
def test_a_trainer_saved_loaded_and_resumed_is_the_trainer_never_stopped(name, kind, tmp_path):
    network, (x, w, b, loss) = tiny_network()
    plan = network.entry([loss]).backward(loss).lower()
    optimizer = OPTIMIZERS[kind](RESUME_SCHEDULE)
    make = TRAINERS[name]
    straight = make(plan, network.parameters(), optimizer)
    for _ in range(HALF):
        straight.step()
    straight.state().save(tmp_path / "state.safetensors")
    straight.parameters().save(tmp_path / "parameters.safetensors")
    for _ in range(HALF):
        straight.step()
    loaded = network.load_parameters(tmp_path / "parameters.safetensors")
    resumed = make(plan, loaded, optimizer, state=optimizer.load_state(tmp_path / "state.safetensors", loaded))
    assert resumed.steps == HALF
    for _ in range(HALF):
        resumed.step()
    assert_same_bits(resumed.parameters(), straight.parameters(), f"{name} resumed")
    for key, value in straight.moments().items():
        np.testing.assert_array_equal(resumed.moments()[key], value, err_msg=f"{name} resumed: {key}")
    # The trainer's state is the host's shape of it: it saves, loads and steps on the host too.
    state = resumed.state()
    assert state.steps == 2 * HALF and isinstance(state, optim.OptimizerState)
    optimizer.step(resumed.parameters(), network.forward(loaded).backward(loss).parameters(loaded), state)


def test_a_host_state_goes_on_in_a_trainer_and_a_trainer_s_on_the_host(tmp_path):
    network, (x, w, b, loss) = tiny_network()
    plan = network.entry([loss]).backward(loss).lower()
    optimizer = optim.Adam(lr=RESUME_SCHEDULE)
    parameters, state = host_steps(
        network, loss, optimizer, network.parameters(), optimizer.init(network.parameters()), 5
    )
    trainer = XLATrainer(plan, parameters, optimizer, state=state)
    for (index, moment), value in trainer.moments().items():
        np.testing.assert_array_equal(value, getattr(state.slots[index], moment))
    assert_same_state(trainer.state(), state, "a host state through a trainer")


def test_a_trainer_refuses_a_state_whose_slots_took_other_steps():
    network, (x, w, b, loss) = tiny_network()
    plan = network.entry([loss]).backward(loss).lower()
    optimizer = optim.Adam(lr=0.1)
    parameters = network.parameters()
    gradients = network.forward(parameters).backward(loss).parameters(parameters)
    only_w = type(gradients)(network, {w.index: gradients.of(w)})
    _, state = optimizer.step(parameters, only_w, optimizer.init(parameters))  # b skipped: its slot took 0 steps
    with pytest.raises(ArgumentError, match="has taken other steps than the state's 1"):
        XLATrainer(plan, parameters, optimizer, state=state)
    with pytest.raises(ArgumentError, match=r"made by Adam.*not by SGD"):
        XLATrainer(plan, parameters, optim.SGD(lr=0.1), state=state)


def test_the_data_parallel_trainer_resumed_from_files_is_the_trainer_never_stopped(tmp_path):
    out = tmp_path / "result.json"
    result = run_device_script("schedules_devices.py", out, tmp_path)
    assert {kind: result[kind]["resumed_equal"] for kind in OPTIMIZERS} == dict.fromkeys(OPTIMIZERS, True)


# Damaged and mismatched files -------------------------------------------------------------------------


def saved(tmp_path, optimizer=None):
    """A network, its parameters after 3 steps, and the path of the state saved then."""
    network, (x, w, b, loss) = tiny_network()
    optimizer = optimizer or optim.Adam(lr=0.1)
    parameters, state = host_steps(
        network, loss, optimizer, network.parameters(), optimizer.init(network.parameters()), 3
    )
    path = tmp_path / "state.safetensors"
    state.save(path)
    return network, parameters, path


def rewritten(path, change):
    """Rewrite the file at ``path`` with ``change(header dict)`` applied to its JSON header."""
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    change(header)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + data[8 + length :])


def metadata_set(**values):
    def change(header):
        header["__metadata__"].update(values)

    return change


DAMAGES = {
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:-5]), "the tensors cover"),
    "not JSON": (lambda p: p.write_bytes(p.read_bytes()[:9] + b"#" + p.read_bytes()[10:]), "is not valid JSON"),
    "a parameters file": (lambda p: rewritten(p, metadata_set(format="topos")), "it is not an optimizer state"),
    "another kind": (lambda p: rewritten(p, metadata_set(optimizer="SGD")), "it is the state of SGD, not of Adam"),
    "other betas": (
        lambda p: rewritten(
            p, metadata_set(hyperparameters=json.dumps({"betas": [0.5, 0.999], "eps": 1e-8, "weight_decay": 0.0}))
        ),
        "it was saved with betas=[0.5, 0.999], this Adam has betas=[0.9, 0.999]",
    ),
    "a broken step count": (lambda p: rewritten(p, metadata_set(steps="three")), "its step count 'three'"),
    "a key past the steps": (
        lambda p: rewritten(p, metadata_set(slots=json.dumps({"w": 9, "b": 3}))),
        "the slot 'w' says 9, which does not fit 3 steps of Adam",
    ),
    "a missing slot": (lambda p: rewritten(p, metadata_set(slots=json.dumps({"w": 3}))), "parameter 'b' has no slot"),
    "a renamed tensor": (
        lambda p: rewritten(p, lambda h: h.__setitem__("w.mystery", h.pop("w.exp_avg"))),
        "tensor 'w.exp_avg' is missing from the file; tensor 'w.mystery' is no moment",
    ),
    "another dtype": (
        lambda p: rewritten(p, lambda h: h["w.exp_avg"].__setitem__("dtype", "I32")),
        "tensor 'w.exp_avg' is int32, the parameter is float32",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_or_mismatched_state_file_is_refused_naming_the_problem_and_nothing_changes(damage, tmp_path):
    network, parameters, path = saved(tmp_path)
    spoil, fragment = DAMAGES[damage]
    spoil(path)
    before = path.read_bytes()
    held = {index: np.array(value) for index, value in parameters.slots.items()}
    with pytest.raises(CheckpointError) as caught:
        optim.Adam(lr=0.1).load_state(path, parameters)
    assert fragment in str(caught.value) and str(path) in str(caught.value), str(caught.value)
    assert path.read_bytes() == before
    assert_same_bits(parameters, type(parameters)(network, held), "the table after a refused load")


def test_a_state_for_another_table_is_refused_naming_each_parameter(tmp_path):
    network, parameters, path = saved(tmp_path)

    def build(tape):
        w = tape.parameter(np.zeros(4, "float32"), name="w")
        c = tape.parameter(np.zeros(2, "float32"), name="c")
        return ((w * w).sum() + (c * c).sum(),)

    other_network, _ = Tape.record(build, dtype="float32")
    with pytest.raises(CheckpointError) as caught:
        optim.Adam(lr=0.1).load_state(path, other_network.parameters())
    message = str(caught.value)
    assert "parameter 'c' has no slot in the file" in message
    assert "the slot 'b' matches no parameter of the table" in message
    assert "tensor 'w.exp_avg' has shape [3], the parameter has [4]" in message


def test_a_save_that_fails_leaves_the_old_file_and_no_other(tmp_path, monkeypatch):
    network, parameters, path = saved(tmp_path)
    before = path.read_bytes()
    optimizer = optim.Adam(lr=0.1)
    state = optimizer.load_state(path, parameters)

    def failing(array):
        raise RuntimeError("a failure half-way through the write")

    monkeypatch.setattr(checkpoint, "_little_endian_bytes", failing)
    with pytest.raises(RuntimeError, match="half-way"):
        state.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.safetensors"]  # no temporary file left
    with pytest.raises(CheckpointError, match="cannot write"):
        state.save(tmp_path / "no such folder" / "state.safetensors")


def test_a_donated_state_cannot_be_saved(tmp_path):
    network, (x, w, b, loss) = tiny_network()
    optimizer = optim.SGD(lr=0.1, momentum=0.9)
    parameters = network.parameters()
    state = optimizer.init(parameters)
    gradients = network.forward(parameters).backward(loss).parameters(parameters)
    optimizer.step(parameters, gradients, state, donate=True)
    with pytest.raises(ArgumentError, match="donated"):
        state.save(tmp_path / "state.safetensors")
    assert not (tmp_path / "state.safetensors").exists()


def test_sgd_s_state_before_its_momentum_starts_round_trips(tmp_path):
    network, parameters, path = saved(tmp_path, optim.SGD(lr=0.1, momentum=0.9))
    state = optim.SGD(lr=0.5, momentum=0.9).load_state(path, parameters)
    assert state.steps == 3 and all(slot.momentum_buffer is not None for slot in state.slots.values())
    fresh = optim.SGD(lr=0.1, momentum=0.9).init(parameters)
    fresh.save(tmp_path / "fresh.safetensors")
    loaded = optim.SGD(lr=0.1, momentum=0.9).load_state(tmp_path / "fresh.safetensors", parameters)
    assert loaded.steps == 0 and all(slot.momentum_buffer is None for slot in loaded.slots.values())
