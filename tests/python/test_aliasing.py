"""Nothing the caller holds changes behind its back.

Each case holds one object topos hands out (a run's values, a field's gradients, a
parameters table's tensors, an optimizer's slot state, a plan run's outputs, a
trainer's parameters and moments), then takes one of the paths that write memory
in place (a donated optimizer step, a later run reusing an arena, a device step
donating its buffers), and checks that what it holds reads as before, to the bit.
"""

import numpy as np
import pytest

import topos
from topos import Tape
from topos.model import optim
from topos.webgpu.trainer import DeviceTrainer
from topos.xla import XLATrainer

TARGETS = np.array([0, 1, 2, 3, 0, 1, 2, 3])


def build(tape):
    rng = np.random.default_rng(0)
    x = tape.input(rng.normal(size=(8, 6)).astype("float32"), name="x")
    W = tape.parameter((rng.normal(size=(6, 4)) * 0.3).astype("float32"), name="W")
    b = tape.parameter(np.zeros(4, "float32"), name="b")
    # ``W * 2.0`` records a leaf whose gradient (d loss / d 2.0) reads W: a field forms it on request.
    hidden = topos.layer_norm(topos.tanh(x @ (W * 2.0) + b))
    return [W, b, hidden, topos.cross_entropy(hidden, TARGETS)]


NETWORK, (W, B, HIDDEN, LOSS) = Tape.record(build, dtype="float32")
LEAF = next(NETWORK.symbol(node.index) for node in NETWORK.nodes() if node.opcode == "Leaf" and node.shape == ())


class Training:
    """A donated Adam loop: ``parameters`` and ``state`` are the latest; ``donated_steps`` takes more."""

    def __init__(self):
        self.optimizer = optim.Adam(lr=0.1)
        self.parameters = NETWORK.parameters()
        self.state = self.optimizer.init(self.parameters)
        self.donated_steps(2)  # from here on the table's memory is the state's own

    def donated_steps(self, count=3):
        for _ in range(count):
            gradients = NETWORK.forward(self.parameters).backward(LOSS).parameters(self.parameters)
            self.parameters, self.state = self.optimizer.step(self.parameters, gradients, self.state, donate=True)


def arena_reuse(parameters):
    """Runs that take the arenas back from the pool: forwards, backwards and plan runs."""
    plan = NETWORK.entry([LOSS, W, HIDDEN]).backward(LOSS).lower()
    for _ in range(3):
        NETWORK.forward(parameters).backward(LOSS).of(W)
        plan.run(parameters)


# Each case: (what it holds, read as a list of arrays; the path that writes in place).
def run_of_a_parameter(training):
    held = NETWORK.forward(training.parameters).of(W)
    return lambda: [held], training.donated_steps


def run_values(training):
    held = NETWORK.forward(training.parameters).values()
    return lambda: held, training.donated_steps


def run_itself(training):
    run = NETWORK.forward(training.parameters)
    return lambda: [run.of(W), run.of(B), run.of(HIDDEN)], training.donated_steps


def parameters_of(training):
    held = [training.parameters.of(W), training.parameters.of(B)]
    return lambda: held, training.donated_steps


def parameters_items(training):
    held = training.parameters.items()
    return lambda: [tensor for _, tensor in held], training.donated_steps


def parameters_table_itself(training):
    table = training.parameters
    return lambda: [table.of(W), table.of(B)], training.donated_steps


def state_of(training):
    slot = training.state.of(W)
    return lambda: [slot.exp_avg, slot.exp_avg_sq], training.donated_steps


def field_of_a_leaf_read_later(training):
    # The field forms the leaf's gradient (which reads W's value) only when first asked, after the steps.
    field = NETWORK.forward(training.parameters).backward(LOSS)
    twin = NETWORK.forward(training.parameters.replace({W: np.array(training.parameters.of(W))})).backward(LOSS)
    reads = iter([lambda: twin.of(LEAF), lambda: field.of(LEAF)])  # before the steps: the twin's, unchanged
    return lambda: [next(reads)()], training.donated_steps


def field_parameters(training):
    held = NETWORK.forward(training.parameters).backward(LOSS).parameters(training.parameters)
    return lambda: [held.of(W), held.of(B)], training.donated_steps


def plan_run_reading_a_parameter(training):
    plan = NETWORK.entry([LOSS, W]).backward(LOSS).lower()
    plan.run(training.parameters)  # the next run goes through the prepared plan
    held = plan.run(training.parameters)
    return lambda: held.outputs(), training.donated_steps


def run_of_a_computed_value(training):
    held = NETWORK.forward(training.parameters).of(HIDDEN)
    return lambda: [held], lambda: arena_reuse(training.parameters)


def field_of_after_the_field_is_gone(training):
    held = NETWORK.forward(training.parameters).backward(LOSS).of(W)
    return lambda: [held], lambda: arena_reuse(training.parameters)


def plan_run_outputs(training):
    plan = NETWORK.entry([LOSS, W, HIDDEN]).backward(LOSS).lower()
    plan.run(training.parameters)
    held = plan.run(training.parameters)
    return lambda: held.outputs(), lambda: arena_reuse(training.parameters)


CASES = [
    run_of_a_parameter,
    run_values,
    run_itself,
    parameters_of,
    parameters_items,
    parameters_table_itself,
    state_of,
    field_of_a_leaf_read_later,
    field_parameters,
    plan_run_reading_a_parameter,
    run_of_a_computed_value,
    field_of_after_the_field_is_gone,
    plan_run_outputs,
]


def arrays(values):
    return [np.array(value) for value in values]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_what_the_caller_holds_reads_the_same_after_an_in_place_path(case):
    training = Training()
    read, write_in_place = case(training)
    before = arrays(read())
    write_in_place()
    after = arrays(read())
    assert len(after) == len(before)
    assert [k for k, (a, b) in enumerate(zip(before, after)) if not np.array_equal(a, b)] == []


def test_a_donated_state_refuses_to_be_read_and_a_donated_table_keeps_its_values():
    training = Training()
    table, state = training.parameters, training.state
    values = arrays([table.of(W), table.of(B)])
    training.donated_steps(1)
    with pytest.raises(topos.ArgumentError, match="donated"):
        state.of(W)
    with pytest.raises(topos.ArgumentError, match="donated"):
        training.optimizer.step(table, NETWORK.forward(table).backward(LOSS).parameters(table), state)
    training.donated_steps(3)
    assert all(np.array_equal(a, b) for a, b in zip(values, arrays([table.of(W), table.of(B)])))


def test_a_donated_loop_that_holds_nothing_old_allocates_no_new_parameters():
    # Donation still pays: once nothing reads the table two steps back, its memory takes the new values.
    training = Training()
    addresses = []
    for _ in range(6):
        training.donated_steps(1)
        addresses.append(training.parameters.slots[W.index].__array_interface__["data"][0])
    assert addresses[2:] == addresses[:-2] and len(set(addresses)) == 2


def test_a_webgpu_run_after_a_donated_step_reads_the_new_parameters():
    # The WebGPU runner skips uploading a parameter array it has uploaded before (the same object):
    # the new values of a donated step must not hide in an old array.
    training = Training()
    plan = NETWORK.entry([LOSS]).backward(LOSS).lower()
    plan.run(training.parameters, backend="webgpu")
    training.donated_steps(1)
    copied = training.parameters.replace(
        {W: np.array(training.parameters.of(W)), B: np.array(training.parameters.of(B))}
    )
    resident = plan.run(training.parameters, backend="webgpu").outputs()
    fresh = plan.run(copied, backend="webgpu").outputs()
    assert all(np.array_equal(a, b) for a, b in zip(resident, fresh))


TRAINERS = {"xla": XLATrainer, "webgpu": DeviceTrainer}


@pytest.mark.parametrize("name", sorted(TRAINERS))
@pytest.mark.parametrize("given", ["payloads", "stepped"])
def test_a_trainer_never_writes_the_table_it_was_given(name, given):
    training = Training()
    parameters = NETWORK.parameters() if given == "payloads" else training.parameters
    before = arrays([parameters.of(W), parameters.of(B)])
    trainer = TRAINERS[name](NETWORK.entry([LOSS]).backward(LOSS).lower(), parameters, optim.Adam(lr=0.1))
    for _ in range(3):
        trainer.step()
    assert all(np.array_equal(a, b) for a, b in zip(before, arrays([parameters.of(W), parameters.of(B)])))


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_what_a_trainer_hands_out_survives_its_later_steps(name):
    trainer = TRAINERS[name](NETWORK.entry([LOSS, W]).backward(LOSS).lower(), NETWORK.parameters(), optim.Adam(lr=0.1))
    trainer.step()
    run = trainer.step()
    parameters = trainer.parameters()
    moments = trainer.moments()
    held = [run.of(LOSS), run.of(W), parameters.of(W), parameters.of(B), *moments.values()]
    before = arrays(held)
    for _ in range(3):
        trainer.step()
    assert [k for k, (a, b) in enumerate(zip(before, arrays(held))) if not np.array_equal(a, b)] == []
    assert not np.array_equal(before[2], np.array(trainer.parameters().of(W)))  # the trainer did move on


def test_an_xla_plan_run_survives_later_runs():
    plan = NETWORK.entry([LOSS, W, HIDDEN]).backward(LOSS).lower()
    training = Training()
    held = plan.run(training.parameters, backend="xla")
    before = arrays(held.outputs())
    for _ in range(2):
        plan.run(training.parameters, backend="xla")
        training.donated_steps(1)
    assert all(np.array_equal(a, b) for a, b in zip(before, arrays(held.outputs())))
