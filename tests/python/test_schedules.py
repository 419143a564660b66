"""Learning-rate schedules (issue 35, Deliver 2): their values, the optimizers that take them, every trainer.

The schedules (``topos.model.schedules``) mean what optax's functions of the same names mean. Their
values are held to PyTorch's ``torch.optim.lr_scheduler`` where one computes the same rule (LinearLR,
CosineAnnealingLR, StepLR, ExponentialLR, MultiStepLR): torch steps its rates by recurrences, topos
computes each from its closed form, so the two agree to float64 rounding accumulated over the steps
(``RECURRENCE``); elsewhere to optax's documented values and the rule written out here.

An optimizer asks its schedule once a step, at the number of steps taken (0 for the first): a run
with ``lr=schedule`` is bit for bit the run whose rate is swapped for ``schedule(t)`` before step
``t``, which the rate's leaving the state's identity allows (the issue named its refusal a bug). Each
trainer (XLA, DataParallel in a process of its own, WebGPU on the machine's adapter) is held to the
numpy loop under the same schedule, SGD to ``training_bound`` and Adam to ``assert_trained_close``,
and the XLA module takes the rate as an argument: the same text for every rate.
"""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from test_trainers_api import run_device_script, tiny_network
from tolerances import assert_close, assert_trained_close, training_bound

from topos import ArgumentError
from topos.compiler.training_step import emit_training_step
from topos.model import optim, schedules
from topos.webgpu.trainer import DeviceTrainer
from topos.xla import XLATrainer

HERE = Path(__file__).parent
STEPS = 12

#: torch's rates come from a recurrence (``lr *= factor`` a step, or LinearLR's ratio of factors): each
#: step rounds once or twice, so after ``n`` steps they are within ``4 n`` float64 units of the closed form.
RECURRENCE = 4 * 60 * np.finfo(np.float64).eps


def torch_rates(make, base, steps):
    """The rates a torch scheduler gives the steps 0 .. steps-1 of an SGD whose base rate is ``base``."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base)
    scheduler = make(optimizer)
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return np.array(rates)


def ours(schedule, steps):
    return np.array([schedule(t) for t in range(steps)])


TORCH_PAIRS = {
    "linear warm-up": (
        schedules.linear_schedule(0.01 * 0.2, 0.01, transition_steps=10),
        lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.2, end_factor=1.0, total_iters=10),
    ),
    "cosine decay": (
        schedules.cosine_decay_schedule(0.01, decay_steps=40, alpha=0.1),
        lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=40, eta_min=0.001),
    ),
    "step decay (staircase)": (
        schedules.exponential_decay(0.01, transition_steps=7, decay_rate=0.5, staircase=True),
        lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=7, gamma=0.5),
    ),
    "exponential decay": (
        schedules.exponential_decay(0.01, transition_steps=1, decay_rate=0.95),
        lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.95),
    ),
    "piecewise constant": (
        schedules.piecewise_constant_schedule(0.01, {15: 0.1, 30: 0.5}),
        # Two different scales: LambdaLR with the factor written out (MultiStepLR below, for one scale).
        lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda t: (0.1 if t >= 15 else 1.0) * (0.5 if t >= 30 else 1.0)),
    ),
}


@pytest.mark.parametrize("name", sorted(TORCH_PAIRS))
def test_a_schedule_gives_the_rates_torch_s_scheduler_of_the_same_rule_gives(name):
    schedule, make = TORCH_PAIRS[name]
    want = torch_rates(make, 0.01, 41)  # CosineAnnealingLR leaves the cosine after T_max; optax holds
    got = ours(schedule, 41)
    np.testing.assert_allclose(got, want, rtol=RECURRENCE, atol=0.0, err_msg=name)


def test_multistep_decay_is_a_piecewise_constant_schedule_of_equal_scales():
    got = ours(schedules.piecewise_constant_schedule(0.1, {5: 0.1, 9: 0.1}), 12)
    want = torch_rates(lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[5, 9], gamma=0.1), 0.1, 12)
    np.testing.assert_allclose(got, want, rtol=RECURRENCE, atol=0.0)


def test_the_schedules_hold_optax_s_documented_values_and_rules():
    # optax.linear_schedule's docstring: 1.0 at step 0, 0.01 at step 100 and after; transition_begin holds.
    linear = schedules.linear_schedule(1.0, 0.01, transition_steps=100)
    assert (linear(0), linear(100), linear(150)) == (1.0, 0.01, 0.01)
    late = schedules.linear_schedule(1.0, 0.0, transition_steps=10, transition_begin=5)
    assert [late(t) for t in (0, 5, 6, 15)] == [1.0, 1.0, 0.9, 0.0]
    assert schedules.linear_schedule(0.5, 2.0, transition_steps=0)(7) == 0.5  # no transition: init_value
    # warm-up then cosine: peak at warmup_steps, end_value at decay_steps, half-way between on the cosine.
    warm = schedules.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=10, decay_steps=110, end_value=0.1)
    assert (warm(0), warm(5), warm(10), warm(110), warm(500)) == (0.0, 0.5, 1.0, pytest.approx(0.1), pytest.approx(0.1))
    assert warm(60) == pytest.approx(0.1 + 0.9 * 0.5, rel=1e-15)
    assert warm == schedules.warmup_cosine_decay_schedule(0.0, 1.0, 10, 110, 0.1)  # a value: equal when made alike
    # exponential decay bounded by end_value: from below when it decays, from above when it grows.
    assert schedules.exponential_decay(1.0, 1, 0.5, end_value=0.2)(10) == 0.2
    assert schedules.exponential_decay(1.0, 1, 2.0, end_value=5.0)(10) == 5.0
    assert schedules.exponential_decay(1.0, 2, 0.5, transition_begin=3)(3) == 1.0
    assert schedules.exponential_decay(1.0, 2, 0.5, transition_begin=3)(5) == 0.5
    # join: each schedule counts its steps from its boundary.
    joined = schedules.join_schedules((schedules.constant_schedule(3.0), lambda t: float(t)), (4,))
    assert [joined(t) for t in range(7)] == [3.0, 3.0, 3.0, 3.0, 0.0, 1.0, 2.0]
    assert schedules.cosine_decay_schedule(2.0, 4, exponent=2.0)(2) == pytest.approx(2.0 * 0.25, rel=1e-15)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: schedules.cosine_decay_schedule(1.0, 0), "decay_steps must be a whole number >= 1"),
        (lambda: schedules.linear_schedule(1.0, 0.0, -3), "transition_steps must be a whole number >= 0"),
        (lambda: schedules.exponential_decay(1.0, 10, 0.0), "decay_rate must be positive"),
        (lambda: schedules.piecewise_constant_schedule(1.0, {5: -0.1}), "the scale at 5 must be >= 0"),
        (lambda: schedules.join_schedules((math.cos,), (3,)), "1 schedules take 0 boundaries, got 1"),
        (lambda: schedules.warmup_cosine_decay_schedule(0.0, 1.0, 10, 10), "decay_steps must be a whole number past"),
        (lambda: schedules.constant_schedule(float("nan")), "value must be finite"),
    ],
)
def test_a_schedule_refuses_arguments_that_describe_no_schedule(make, fragment):
    with pytest.raises(ArgumentError, match=fragment.replace("(", r"\(").replace("[", r"\[")):
        make()


def test_an_optimizer_refuses_a_rate_its_schedule_gives_that_is_no_rate():
    network, (x, w, b, loss) = tiny_network()
    parameters = network.parameters()
    gradients = network.forward(parameters).backward(loss).parameters(parameters)
    optimizer = optim.SGD(lr=lambda t: 0.1 - 0.1 * t)
    state = optimizer.init(parameters)
    parameters, state = optimizer.step(parameters, gradients, state)  # lr(0) = 0.1
    parameters, state = optimizer.step(parameters, gradients, state)  # lr(1) = 0.0
    with pytest.raises(ArgumentError, match=r"SGD: lr\(2\) must be a non-negative finite number, got -0.1"):
        optimizer.step(parameters, gradients, state)


# The optimizers ---------------------------------------------------------------------------------------

SCHEDULE = schedules.warmup_cosine_decay_schedule(0.0, 0.1, warmup_steps=3, decay_steps=STEPS)
OPTIMIZERS = {
    "SGD": lambda lr: optim.SGD(lr=lr, momentum=0.9, nesterov=True, weight_decay=0.01),
    "Adam": lambda lr: optim.Adam(lr=lr, weight_decay=0.01),
    "AdamW": lambda lr: optim.AdamW(lr=lr, weight_decay=0.1),
}


def host_run(network, loss, optimizer_of_step, steps):
    """``steps`` numpy steps, the optimizer of step ``t`` being ``optimizer_of_step(t)``: (parameters, state)."""
    parameters = network.parameters()
    state = optimizer_of_step(0).init(parameters)
    for t in range(steps):
        gradients = network.forward(parameters).backward(loss).parameters(parameters)
        parameters, state = optimizer_of_step(t).step(parameters, gradients, state)
    return parameters, state


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_a_schedule_is_the_rate_of_each_step_asked_at_the_steps_taken(kind):
    network, (x, w, b, loss) = tiny_network()
    scheduled, scheduled_state = host_run(network, loss, lambda t: OPTIMIZERS[kind](SCHEDULE), STEPS)
    # The same run with the rate itself swapped in before each step: a state goes on under a new rate.
    swapped, swapped_state = host_run(network, loss, lambda t: OPTIMIZERS[kind](SCHEDULE(t)), STEPS)
    for index in scheduled.slots:
        np.testing.assert_array_equal(scheduled.slots[index], swapped.slots[index])
    assert scheduled_state.steps == swapped_state.steps == STEPS
    assert SCHEDULE(0) == 0.0  # the first step is at count 0, as optax counts: it leaves the weights (SGD)


def test_a_state_goes_on_under_another_rate_but_not_under_other_hyperparameters():
    network, (x, w, b, loss) = tiny_network()
    parameters = network.parameters()
    gradients = network.forward(parameters).backward(loss).parameters(parameters)
    state = optim.Adam(lr=0.1).init(parameters)
    parameters, state = optim.Adam(lr=0.1).step(parameters, gradients, state)
    optim.Adam(lr=0.01).step(parameters, gradients, state)  # the example: no longer refused
    optim.Adam(lr=SCHEDULE).step(parameters, gradients, state)
    with pytest.raises(ArgumentError, match=r"made by Adam\(lr=0.1, betas=\(0.9, 0.999\).*\(the rate aside\)"):
        optim.Adam(lr=0.1, betas=(0.8, 0.999)).step(parameters, gradients, state)
    with pytest.raises(ArgumentError, match="made by Adam"):
        optim.AdamW(lr=0.1).step(parameters, gradients, state)


# The trainers -----------------------------------------------------------------------------------------


def trainer_run(make_trainer, network, loss, optimizer, steps):
    plan = network.entry([loss]).backward(loss).lower()
    trainer = make_trainer(plan, network.parameters(), optimizer)
    for _ in range(steps):
        trainer.step()
    return trainer


TRAINERS = {"xla": XLATrainer, "webgpu": DeviceTrainer}


@pytest.mark.parametrize("name", sorted(TRAINERS))
@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_every_trainer_gives_the_numpy_loop_s_parameters_under_one_schedule(name, kind):
    network, (x, w, b, loss) = tiny_network()
    host, host_state = host_run(network, loss, lambda t: OPTIMIZERS[kind](SCHEDULE), STEPS)
    trainer = trainer_run(TRAINERS[name], network, loss, OPTIMIZERS[kind](SCHEDULE), STEPS)
    check_trained(kind, trainer.parameters(), trainer.moments(), host, host_state, name)


def check_trained(kind, parameters, moments, host, host_state, name):
    """A trainer's parameters and moments against the host's, after STEPS steps of SCHEDULE."""
    peak = max(SCHEDULE(t) for t in range(STEPS))  # Adam's movement is at most the peak rate's
    if kind == "SGD":  # linear in the gradients: held to their rounding
        for index in host.slots:
            want = host.slots[index]
            assert_close(parameters.slots[index], want, training_bound(want, "float32", 16, STEPS), f"{name} {index}")
    else:
        assert_trained_close(parameters, host, peak, STEPS, f"{name}'s {kind} under the schedule")
    for (index, moment), value in moments.items():
        want = getattr(host_state.slots[index], moment)
        assert_close(value, want, training_bound(want, "float32", 16, STEPS), f"{name}'s {moment} of {index}")


def test_the_data_parallel_trainer_gives_the_numpy_loop_s_parameters_under_one_schedule(tmp_path):
    out = tmp_path / "result.json"
    result = run_device_script("schedules_devices.py", out)
    network, (x, w, b, loss) = tiny_network()
    for kind in sorted(OPTIMIZERS):
        host, host_state = host_run(network, loss, lambda t, kind=kind: OPTIMIZERS[kind](SCHEDULE), STEPS)
        parameters = host.replace({int(i): np.array(v, "float32") for i, v in result[kind]["parameters"].items()})
        moments = {(int(i), m): np.array(v, "float32") for i, m, v in result[kind]["moments"]}
        check_trained(kind, parameters, moments, host, host_state, "8 devices")


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_the_training_step_module_takes_the_rate_as_an_argument(kind):
    network, (x, w, b, loss) = tiny_network()
    plan = network.entry([loss]).backward(loss).lower()
    modules = [emit_training_step(plan, OPTIMIZERS[kind](lr)) for lr in (0.125, 0.375, SCHEDULE)]
    assert modules[0].text == modules[1].text == modules[2].text  # no rate is a constant of the program
    names = [name for name, _ in modules[0].scalars]
    assert ("neg_lr" if kind == "SGD" else "neg_step_size") in names
    # Each scalar is an argument of @main, after the plan's arguments and the moments.
    signature = modules[0].text.split("func.func @main(", 1)[1].split(") -> (", 1)[0]
    arguments = len(modules[0].argument_nodes) + len(modules[0].updated) * len(modules[0].moments) + len(names)
    assert signature.count("%arg") == arguments
    # The scalars carry the schedule's rate of each step, as the host's step casts it.
    for t in (0, 5):
        values = dict(zip(names, modules[2].scalar_values(t)))
        rate = SCHEDULE(t)
        if kind == "SGD":
            assert values["neg_lr"] == np.float32(-rate)
        else:
            assert values["neg_step_size"] == np.float32(-(rate / (1.0 - 0.9 ** (t + 1))))
        if kind == "AdamW":
            assert values["decay"] == np.float32(1.0 - rate * 0.1)
