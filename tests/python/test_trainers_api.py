"""Every trainer answers in one shape: ``XLATrainer``, ``DataParallelTrainer`` and ``DeviceTrainer``.

``step(feeds)`` returns a ``PlanRun`` holding the step's readables (``run.of(loss)``,
``run.outputs()``, ``run.backends``, ``run.compile_ms``); ``parameters()`` a new
``Parameters`` table; ``moments()`` ``{(parameter index, moment name): array}``, the
names ``topos.model.optim`` gives them. Each is checked against the host's Adam over
the same steps (to float32 rounding: the devices compute in their own order).
DataParallelTrainer needs 8 host devices, so it runs in a process of its own
(``trainers_api_devices.py``).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tolerances import assert_close, assert_trained_close, loss_bound, training_bound

from topos import FeedError, Tape
from topos.compiler.executor import PlanRun
from topos.model import optim
from topos.webgpu.trainer import DeviceTrainer
from topos.xla import XLATrainer

HERE = Path(__file__).parent
STEPS = 4


def tiny_network():
    """A float32 linear regression over 16 rows (split 8 ways by the data-parallel run)."""
    rng = np.random.default_rng(0)
    points = rng.normal(size=(16, 3)).astype("float32")
    targets = (points @ np.array([1.0, -2.0, 0.5]) + 0.25).astype("float32")

    def build(tape):
        x = tape.input(points, name="x")
        w = tape.parameter(np.zeros(3, "float32"), name="w")
        b = tape.parameter(np.zeros((), "float32"), name="b")
        error = x @ w + b - targets
        return x, w, b, (error * error).mean()

    return Tape.record(build, dtype="float32")


def host_training(network, steps):
    """The same steps with the host's Adam: ``(parameters, state)``."""
    loss = network.symbol(len(network) - 1)
    optimizer = optim.Adam(lr=0.1)
    parameters = network.parameters()
    state = optimizer.init(parameters)
    for _ in range(steps):
        gradients = network.forward(parameters).backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)
    return parameters, state


TRAINERS = {"xla": XLATrainer, "webgpu": DeviceTrainer}


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_a_trainer_steps_to_a_plan_run_and_reads_back_its_parameters_and_moments(name):
    network, (x, w, b, loss) = tiny_network()
    plan = network.entry([loss, w]).backward(loss).lower()
    trainer = TRAINERS[name](plan, network.parameters(), optim.Adam(lr=0.1))
    names = [(index, moment) for index in (w.index, b.index) for moment in ("exp_avg", "exp_avg_sq")]
    assert sorted(trainer.moments()) == sorted(names)
    assert all(not np.any(value) for value in trainer.moments().values())  # zeros before the first step
    runs = [trainer.step() for _ in range(STEPS)]
    assert all(isinstance(run, PlanRun) for run in runs)
    assert set(runs[0].backends.values()) <= {"xla", "webgpu", "numpy"}
    # The gradients stay on the device: the run holds the readables alone, and says so when asked for more.
    with pytest.raises(FeedError, match="did not read the gradient with respect to parameter 1 'w'"):
        runs[-1].gradient(w)
    # A step reads its readables before its update: the first step's w is the recorded one.
    np.testing.assert_array_equal(runs[0].of(w), np.zeros(3, "float32"))
    before_last, _ = host_training(network, STEPS - 1)
    assert_trained_close(runs[-1].of(w).numpy(), before_last.of(w).numpy(), 0.1, STEPS - 1, "w before the last step")
    if name == "xla":
        assert runs[0].compile_ms == trainer.compile_ms > 0
    else:
        assert runs[0].compile_ms is None
    host_parameters, host_state = host_training(network, STEPS)
    parameters = trainer.parameters()
    assert_trained_close(parameters, host_parameters, 0.1, STEPS, f"{name}'s parameters")
    for (index, moment), value in trainer.moments().items():
        want = getattr(host_state.slots[index], moment)
        assert_close(value, want, training_bound(want, "float32", 16, STEPS), f"{name}'s {moment} of {index}")
    # The loss each step read is the loss of the parameters before it, as the host computes it.
    host_first = network.forward(network.parameters()).of(loss).scalar()
    assert_close(runs[0].of(loss).scalar(), host_first, loss_bound(host_first, "float32", 16), "the first loss")


def run_device_script(script, out, *arguments):
    """What ``script`` (a file beside this one that sets up eight host devices for XLA, which must
    happen before jax is first imported, so in a process of its own) wrote to ``out`` as JSON."""
    completed = subprocess.run(
        [sys.executable, str(HERE / script), str(out), *map(str, arguments)],
        cwd=HERE,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(out.read_text())


def test_the_data_parallel_trainer_answers_in_the_same_shape_on_eight_devices(tmp_path):
    out = tmp_path / "result.json"
    result = run_device_script("trainers_api_devices.py", out)
    network, (x, w, b, loss) = tiny_network()
    assert result["step_returns"] == "PlanRun"
    assert result["backends"] == ["xla"]
    assert result["compile_ms_positive"]
    assert result["gradients_stay_on_the_devices"]
    assert result["moment_keys"] == sorted(
        [[w.index, "exp_avg"], [w.index, "exp_avg_sq"], [b.index, "exp_avg"], [b.index, "exp_avg_sq"]]
    )
    # Each is True, or the message of tolerances.py's check that failed.
    assert result["moments_close_to_host"] is True, result["moments_close_to_host"]
    assert result["parameters_close_to_host"] is True, result["parameters_close_to_host"]
    assert result["held_unchanged"] and result["given_unchanged"]
    host_first = network.forward(network.parameters()).of(loss).scalar()
    assert_close(result["losses"][0], host_first, loss_bound(host_first, "float32", 16), "8 devices' first loss")
