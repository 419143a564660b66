"""The gallery's physics-informed network (docs/examples/08_pinn.py): u'' = -u learned from its residual.

The example records u(t), du/dt = ``topos.grad(sum(u), t)`` and d2u/dt2, the
gradient of that, by the input ``t``, and trains the residual u'' + u with the
starting values. Here: the recorded derivatives equal the closed form of the
network's derivatives (float64, rtol 1e-10) and central differences of the
network's own output; the trained network is near sin t and its residual is
small; the plan (forward and the training's backward, a third order) emitted
as StableHLO and run by XLA equals the interpreter, and on WebGPU (lavapipe,
float32) equals numpy.
"""

import io
import os
import runpy
from contextlib import redirect_stdout

import numpy as np
import pytest
from test_stablehlo import assert_outputs_agree, check_against_xla

from topos import Tape, show, webgpu

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples", "08_pinn.py")


@pytest.fixture(scope="module")
def example():
    """The example's module globals, recorded but not trained (as the playground's readings run it)."""
    return runpy.run_path(EXAMPLE, run_name="pinn_gallery")


@pytest.fixture(scope="module")
def trained():
    """The example run as a program, as Run mode runs it: (printed text, globals, steps reported)."""

    class Steps:
        def __init__(self):
            self.steps = []

        def card(self, card):
            pass

        def progress(self, step, total):
            self.steps.append((step, total))

    watcher, buffer = Steps(), io.StringIO()
    with show.watch(watcher), redirect_stdout(buffer):
        namespace = runpy.run_path(EXAMPLE, run_name="__main__")
    return buffer.getvalue(), namespace, watcher.steps


def closed_form(parameters, times):
    """u, u' and u'' of u(t) = tanh(t w1 + b1) w2 + b2, worked out by hand."""
    w1, b1, w2, b2 = (
        np.asarray(parameters[name]) for name in ("hidden.weight", "hidden.bias", "output.weight", "output.bias")
    )
    h = np.tanh(times @ w1 + b1)
    u = h @ w2 + b2
    du = ((1.0 - h * h) * w1) @ w2
    d2u = (-2.0 * h * (1.0 - h * h) * w1 * w1) @ w2
    return u, du, d2u


def named(parameters):
    return {name: tensor.numpy() for name, tensor in parameters.items()}


def test_the_recorded_derivatives_are_the_networks_derivatives(example):
    network, u, residual = example["network"], example["u"], example["residual"]
    times = example["collocation"]
    parameters = network.parameters()
    run = network.forward(parameters, {})
    want_u, _, want_d2u = closed_form(named(parameters), times)
    np.testing.assert_allclose(run.of(u).numpy(), want_u, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(run.of(residual).numpy(), want_d2u + want_u, rtol=1e-10, atol=1e-12)
    # And the closed form against central differences of the recorded u itself.
    step = 1e-4
    shifted = [Tape.record(lambda tape, s=s: example["model"](tape, times + s)) for s in (-step, step)]
    below, above = (net.forward(net.adopt(parameters), {}).of(out[1]).numpy() for net, out in shifted)
    central = (above - 2.0 * want_u + below) / step**2
    np.testing.assert_allclose(central, want_d2u, rtol=1e-4, atol=1e-5)


def test_the_trained_network_is_near_sin_t_and_obeys_the_equation(trained):
    printed, namespace, steps = trained
    steps_total = namespace["STEPS"] + 1
    assert steps == [(step, steps_total) for step in range(1, steps_total + 1)]
    losses = namespace["losses"]
    # Measured here: loss 1.1e-4 after 3000 steps, largest error 0.013, largest residual 0.019.
    assert losses[-1] < 1e-3 and losses[-1] < 1e-3 * losses[0]
    parameters = named(namespace["parameters"])
    fine = np.linspace(0.0, 2.0 * np.pi, 400)[:, None]
    u, du, d2u = closed_form(parameters, fine)
    assert np.max(np.abs(u - np.sin(fine))) < 0.05
    assert np.max(np.abs(du - np.cos(fine))) < 0.1
    collocation = namespace["collocation"]
    u, du, d2u = closed_form(parameters, collocation)
    assert np.max(np.abs(d2u + u)) < 0.05
    assert abs(u[0, 0]) < 0.02 and abs(du[0, 0] - 1.0) < 0.02
    # The network's own residual reading agrees with the closed form at the trained parameters.
    run = namespace["network"].forward(namespace["network"].adopt(namespace["parameters"]), {})
    np.testing.assert_allclose(run.of(namespace["residual"]).numpy(), d2u + u, rtol=1e-9, atol=1e-12)
    assert "largest error against sin t" in printed


def test_the_plan_on_xla_equals_the_interpreter(example):
    network = example["network"]
    readables = [example["loss"], example["u"], example["residual"]]
    plans = check_against_xla(network, readables, target=example["loss"])
    text = plans[1].emit_stablehlo()
    assert text.count("func.func") == 1  # the derivatives and the training's backward: one module
    assert any("[grad of" in row for row in plans[1].describe().splitlines())


def test_the_plan_on_webgpu_equals_numpy(example):
    assert webgpu.available(), "no WebGPU adapter (lavapipe): apt-get install mesa-vulkan-drivers"
    network, (loss, u, residual) = Tape.record(example["build"], dtype="float32")
    plan = network.entry([loss, u, residual]).backward(loss).lower()
    parameters = network.parameters()
    numpy_outputs = plan.run(parameters).outputs()
    run = plan.run(parameters, backend="webgpu")
    assert set(run.backends.values()) == {"webgpu"}  # every node on the device
    assert_outputs_agree(numpy_outputs, run.outputs(), "float32", "the PINN's training plan on webgpu")
