"""The "xla" backend and the one-program training step (topos.xla) against numpy.

``plan.run(..., backend="xla")`` is checked against the interpreter on every
primitive, gallery plan and random program in test_stablehlo.py,
test_plan_gallery.py and test_random_programs.py; this file checks what is the
backend's own: its compile cache and report, its error without jax, and the
training step that runs forward, backward and the optimizer's update as one
XLA program on parameters that stay on the device.
"""

import sys

import numpy as np
import pytest
from test_plan_gallery import EXAMPLES, example
from tolerances import adam_parameter_bound, assert_close, assert_trained_close, loss_bound

import topos
from topos.compiler.training_step import emit_training_step
from topos.model import optim
from topos.xla import XLATrainer, XLAUnavailableError, runtime

TRANSFORMER = next(path for path in EXAMPLES if path.stem == "06_char_transformer")

OPTIMIZERS = {
    "sgd": optim.SGD(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3),
    "sgd_nesterov": optim.SGD(lr=0.05, momentum=0.9, nesterov=True),
    # Adam's L2 weight decay makes this loop chaotic (a 1e-14 nudge of the initial parameters grows
    # to 6e-3 in five steps, on the biases whose gradients are rounding noise); the small network checks it.
    "adam": optim.Adam(lr=1e-2),
    "adamw": optim.AdamW(lr=1e-2, weight_decay=0.1),
}

#: The one-program step against the numpy loop after 20 steps, relative to each parameter's scale:
#: XLA fuses the update's multiplies and adds (and may contract them), so the two drift apart by
#: rounding, step after step; float32 keeps 6e-7 a step, float64 1e-15. Where Adam divides by a
#: gradient's own size, the float32 parameters are held to tolerances.py's Adam bound instead.
TOLERANCE = {"float32": 2e-4, "float64": 1e-10}


def tiny_network(dtype="float64"):
    def build(tape):
        w = tape.parameter(np.linspace(-1.0, 1.0, 6).reshape(2, 3), name="w")
        x = tape.input(np.ones((4, 2)), name="x")
        return topos.mean(topos.tanh(x @ w)), x, w

    network, (loss, x, w) = topos.Tape.record(build, dtype=dtype)
    return network, loss, x, w


def test_plan_run_on_xla_reports_its_compile_and_compiles_once_per_module():
    network, loss, x, _ = tiny_network()
    plan = network.entry([loss]).backward(loss).lower()
    feeds = {x: np.arange(8.0).reshape(4, 2) / 8}
    first = plan.run(network.parameters(), feeds, backend="xla")
    second = plan.run(network.parameters(), feeds, backend="xla")
    expected = plan.run(network.parameters(), feeds)
    np.testing.assert_allclose(np.asarray(first.of(loss)), np.asarray(expected.of(loss)), rtol=1e-12)
    assert first.compile_ms > 0 and second.compile_ms == first.compile_ms  # the same executable, compiled once
    assert set(first.backends.values()) == {"xla"}


def test_a_plan_says_which_nodes_xla_fused():
    network, loss, x, _ = tiny_network()
    plan = network.entry([loss]).backward(loss).lower()
    fused = topos.xla.fusions(plan)
    assert fused, "XLA fuses the backward's elementwise chain"
    for name, nodes in fused:
        assert len(nodes) > 1 and set(nodes) <= set(plan.schedule), (name, nodes)
    trainer = XLATrainer(plan, network.parameters(), optim.SGD(lr=0.1))
    assert all(set(nodes) <= set(plan.schedule) for _, nodes in trainer.fusions())


def test_without_jax_the_backend_names_the_extra(monkeypatch):
    network, loss, x, _ = tiny_network()
    plan = network.entry([loss]).lower()
    runtime.client.cache_clear()
    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` raises ImportError
    try:
        with pytest.raises(XLAUnavailableError, match=r"topos-autodiff\[xla\]"):
            plan.run(network.parameters(), {x: np.ones((4, 2))}, backend="xla")
    finally:
        runtime.client.cache_clear()


def test_the_training_step_module_aliases_parameters_and_moments_to_their_new_values():
    network, loss, _, w = tiny_network()
    plan = network.entry([loss]).backward(loss).lower()
    step = emit_training_step(plan, optim.Adam(lr=0.1))
    header = step.text.splitlines()[1]
    # w, then its two moments, each donated to its new value (results: the loss, w, exp_avg, exp_avg_sq).
    assert header.count("tf.aliasing_output") == 3
    assert "{tf.aliasing_output = 1 : i32}" in header and "{tf.aliasing_output = 3 : i32}" in header
    assert step.updated == (w.index,)


def noise_gradients(network, loss, feeds):
    """{parameter: where its gradient is zero in exact arithmetic} (the key third of the attention's
    bias, which softmax cancels): in float64 it is rounding noise, below 1e-12 of the largest gradient."""
    gradients = network.forward(network.parameters(), feeds).backward(loss).parameters().slots
    largest = max(float(np.max(np.abs(g))) for g in gradients.values())
    return {index: np.abs(g) < 1e-12 * largest for index, g in gradients.items()}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_the_one_program_training_step_follows_the_numpy_loop_for_20_steps_of_the_transformer(name, dtype):
    optimizer = OPTIMIZERS[name]
    network, _, loss, feeds = example(TRANSFORMER, dtype)
    plan = network.entry([loss]).backward(loss).lower()
    trainer = XLATrainer(plan, network.parameters(), optimizer, optimize=False)  # compiles faster; same operations
    parameters, state = network.parameters(), optimizer.init(network.parameters())
    steps, device_losses, losses = 20, [], []
    for _ in range(steps):
        run = network.forward(parameters, feeds)
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)
        device_losses.append(float(np.asarray(trainer.step(feeds).of(loss))))
        losses.append(float(np.asarray(run.of(loss))))
    # The widest reduction of the transformer's step sums its 16 windows of 16 characters.
    assert_close(device_losses, losses, loss_bound(losses, dtype, terms=16 * 16), f"{name} {dtype} losses")
    on_device = trainer.parameters()
    if dtype == "float32" and not isinstance(optimizer, optim.SGD):
        # float32 gradients carry rounding of about 1e-6 of the largest, so more of them are noise than
        # the float64 run below can name: each parameter is held to what Adam's step promises.
        assert_trained_close(on_device, parameters, optimizer.lr, steps, f"{name} on XLA against numpy")
        return
    # Adam divides a gradient of rounding noise by its own size: such a parameter walks up to lr a
    # step in a direction the noise picks, in numpy and in XLA alike, so it is held to that bound.
    network64, _, loss64, feeds64 = example(TRANSFORMER, "float64")
    noise = noise_gradients(network64, loss64, feeds64)
    for index, want in parameters.slots.items():
        errors = np.abs(on_device.slots[index].astype(np.float64) - want.astype(np.float64))
        if not isinstance(optimizer, optim.SGD):
            bound = adam_parameter_bound(optimizer.lr, steps, optimizer.betas).value
            assert float(np.max(errors[noise[index]], initial=0.0)) <= bound, index
            errors = errors[~noise[index]]
        scale = max(float(np.max(np.abs(want))), 1e-3)
        assert float(np.max(errors, initial=0.0)) <= TOLERANCE[dtype] * scale, (index, np.max(errors), scale)
    assert trainer.steps == 20


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adam_with_l2_weight_decay_follows_the_numpy_loop(dtype):
    network, loss, x, _ = tiny_network(dtype)
    plan = network.entry([loss]).backward(loss).lower()
    feeds = {x: np.linspace(-1.0, 1.0, 8).reshape(4, 2)}
    optimizer = optim.Adam(lr=0.05, betas=(0.4, 0.9), weight_decay=0.1)  # 1 - beta1 >= 0.5: lerp's other branch
    trainer = XLATrainer(plan, network.parameters(), optimizer)
    parameters, state = network.parameters(), optimizer.init(network.parameters())
    for _ in range(20):
        gradients = network.forward(parameters, feeds).backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)
        trainer.step(feeds)
    for index, want in parameters.slots.items():
        got = trainer.parameters().slots[index]
        np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
