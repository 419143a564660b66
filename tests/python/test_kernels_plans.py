"""Plans on backend="webgpu": the gallery, a transformer training step, the kernel reading.

The oracle for a float32 plan is the same plan evaluated by numpy in float64
(each node's numpy forward on float64 copies of the float32 sources). An output
agrees when its largest error is within 1e-5 of its largest magnitude, or within
8 times the error of numpy's own float32 evaluation (an output whose exact value
cancels to nearly zero, such as a balanced bias gradient, is all rounding).
These tests need a WebGPU adapter (lavapipe here and in CI) and fail without one.
"""

import re

import numpy as np
import pytest
from test_plan_gallery import EXAMPLES, example, float64_shadow, plans_of
from tolerances import assert_close, assert_trained_close, loss_bound, sum_bound

import topos
from topos import Tape
from topos.compiler import backends
from topos.compiler.wgsl.program import HostStep, Upload
from topos.model import optim
from topos.model.network import Gradients
from topos.ops import lookup
from topos.webgpu import NoAdapterError
from topos.webgpu import device as device_module
from topos.webgpu.runner import default_runner
from topos.webgpu.trainer import DeviceTrainer

TRANSFORMER = next(p for p in EXAMPLES if p.name == "06_char_transformer.py")


def assert_outputs_agree(plan, got, reference, exact, what):
    for position, (gpu, cpu, want) in enumerate(zip(got, reference, exact)):
        gpu, cpu = np.asarray(gpu, dtype=np.float64), np.asarray(cpu, dtype=np.float64)
        scale = float(np.max(np.abs(want), initial=0.0))
        error = float(np.max(np.abs(gpu - want), initial=0.0))
        numpy_error = float(np.max(np.abs(cpu - want), initial=0.0))
        assert error <= max(1e-5 * scale, 8.0 * numpy_error), (
            f"{what}: output {position} (node {plan.outputs[position]}) is off by {error:.3g} "
            f"at scale {scale:.3g}; numpy's float32 is off by {numpy_error:.3g}"
        )


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_gallery_plans_on_webgpu_agree_with_numpy(path):
    network, readables, loss, feeds = example(path, "float32")
    parameters = network.parameters()
    for plan in plans_of(network, readables, loss):
        on_device = plan.run(parameters, feeds, backend="webgpu")
        on_numpy = plan.run(parameters, feeds, backend="numpy")
        exact = float64_shadow(plan, parameters, feeds)
        assert_outputs_agree(plan, on_device.outputs(), on_numpy.outputs(), exact, f"{path.stem} {plan.direction}")
        reading = plan.kernels()
        text = reading.describe()
        computing = [
            i for i in plan.schedule if not plan.nodes[i].is_source and not lookup(plan.nodes[i].opcode).returns_view
        ]
        if all(index in reading.declined for index in computing):
            # Every node that computes runs on the host (the Mandelbrot's one While), the views read
            # its result where it lies: nothing to launch, and the reading says why (below).
            assert computing, f"{path.stem} {plan.direction}: a plan that computes nothing"
            assert reading.launches == []
        else:
            assert reading.launches, "a float32 plan launches kernels"
        for index, reason in reading.declined.items():
            assert reason and f"({reason})" in text, f"node {index}: the reading does not say why it runs on the host"
        # Only nodes without a kernel ran on numpy, and the reading says why.
        for index, backend in on_device.backends.items():
            node = plan.nodes[index]
            if node.opcode not in ("Parameter", "Input", "Leaf") and backend == "numpy":
                assert lookup(node.opcode).kernel is None or node.dtype != "float32", node
                assert reading.declined[index]


def test_a_transformer_training_step_on_webgpu_matches_numpy():
    network, readables, loss, feeds = example(TRANSFORMER, "float32")
    plan = network.entry([loss]).backward(loss).lower()
    optimizer = optim.Adam(lr=1e-2)
    parameters = {name: network.parameters() for name in ("webgpu", "numpy")}
    states = {name: optimizer.init(parameters[name]) for name in parameters}
    losses = {name: [] for name in parameters}
    for step in range(3):
        for backend in ("webgpu", "numpy"):
            result = plan.run(parameters[backend], feeds, backend=backend)
            losses[backend].append(result.of(loss).scalar())
            gradients = Gradients(
                network, {w: np.asarray(result.gradient(network.symbol(w))) for w, _ in plan.gradients}
            )
            if step == 0 and backend == "webgpu":
                first = result
            parameters[backend], states[backend] = optimizer.step(parameters[backend], gradients, states[backend])
    # The first step's loss and gradients, output by output.
    start = network.parameters()
    reference = plan.run(start, feeds, backend="numpy").outputs()
    assert_outputs_agree(plan, first.outputs(), reference, float64_shadow(plan, start, feeds), "training step")
    # The embedding's gradient (ScatterAdd, the scatter kernel) and the matrix products ran on the device.
    kinds = {(plan.nodes[i].opcode, b) for i, b in first.backends.items()}
    assert ("ScatterAdd", "webgpu") in kinds and ("MatMul", "webgpu") in kinds
    assert ("ScatterAdd", "numpy") not in kinds and ("MatMul", "numpy") not in kinds
    # The widest reduction of the step sums the batch's 16 windows of 16 characters.
    assert_close(losses["webgpu"], losses["numpy"], loss_bound(losses["numpy"], "float32", 16 * 16), "losses")


def test_training_on_the_device_keeps_parameters_there_and_tracks_the_host():
    network, readables, loss, feeds = example(TRANSFORMER, "float32")
    plan = network.entry([loss]).backward(loss).lower()
    runner = default_runner()
    optimizers = (
        optim.Adam(lr=1e-2),
        optim.AdamW(lr=1e-2),
        optim.SGD(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    )
    for optimizer in optimizers:
        parameters = network.parameters()
        trainer = DeviceTrainer(plan, parameters, optimizer)
        state = optimizer.init(parameters)
        device_losses, host_losses = [], []
        for step in range(3):
            uploaded = runner.uploaded_bytes
            device_losses.append(trainer.step(feeds).of(loss).scalar())
            if step > 0:
                # Only the feeds go up: no parameter is uploaded again.
                parameter_bytes = sum(a.nbytes for a in parameters.slots.values())
                assert runner.uploaded_bytes - uploaded < parameter_bytes / 4
            host = plan.run(parameters, feeds)
            host_losses.append(host.of(loss).scalar())
            gradients = Gradients(network, {w: np.asarray(host.gradient(network.symbol(w))) for w, _ in plan.gradients})
            parameters, state = optimizer.step(parameters, gradients, state)
        assert_close(device_losses, host_losses, loss_bound(host_losses, "float32", 16 * 16), f"{optimizer} losses")
        on_device = trainer.parameters()
        if not isinstance(optimizer, optim.SGD):
            # Adam turns rounding-sized gradients into lr-sized steps either way: held to its step bound.
            assert_trained_close(on_device, parameters, optimizer.lr, 3, f"{optimizer} on the device against the host")
            continue
        for index, array in parameters.slots.items():
            scale = np.abs(array).max()
            # SGD's steps are lr times the gradients, whose rounding is far below a thousandth of the scale.
            assert np.abs(on_device.slots[index] - array).max() <= 1e-3 * max(scale, 1e-2), network.nodes()[index].name


def test_float64_plans_run_on_numpy_and_auto_picks_webgpu_for_float32():
    def build(tape):
        x = tape.input(np.linspace(-1, 1, 12).reshape(3, 4))
        return [topos.softmax(x * 2.0), (x * x).sum()]

    for dtype, expected in (("float64", "numpy"), ("float32", "webgpu")):
        network, outputs = Tape.record(build, dtype=dtype)
        plan = network.entry(outputs).lower()
        for backend in ("webgpu", "auto"):
            result = plan.run(network.parameters(), {}, backend=backend)
            ran = {b for i, b in result.backends.items() if plan.nodes[i].opcode not in ("Input", "Leaf")}
            assert ran == {expected}, (dtype, backend, ran)
            # The sum of 12 squares, added in the device's order and in numpy's: two orders of one sum.
            total = plan.run(network.parameters(), {}).outputs()[1]
            squares = np.linspace(-1, 1, 12) ** 2
            assert_close(result.outputs()[1], total, sum_bound(squares.sum(), 12, dtype), f"{dtype} on {backend}")
        if dtype == "float64":
            assert all(isinstance(step, HostStep) for step in plan.kernels().program.steps)
            assert "float64: WGSL has no f64" in plan.kernels().describe()


def test_without_an_adapter_auto_runs_numpy_and_webgpu_says_why(monkeypatch):
    failure = NoAdapterError("wgpu-py found no WebGPU adapter (install a driver, e.g. Debian's mesa-vulkan-drivers)")

    def no_device():
        raise failure

    monkeypatch.setattr(device_module, "device", no_device)
    network, (y,) = Tape.record(lambda tape: [topos.exp(tape.input([1.0, 2.0]))], dtype="float32")
    plan = network.entry([y]).lower()
    result = plan.run(network.parameters(), {}, backend="auto")
    assert set(result.backends.values()) == {"numpy"}
    np.testing.assert_allclose(result.of(y).numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(NoAdapterError, match="no WebGPU adapter"):
        plan.run(network.parameters(), {}, backend="webgpu")
    assert {"numpy", "webgpu", "auto"} <= set(backends.backend_names())


def test_the_kernel_reading_lists_launches_views_transfers_and_totals():
    network, readables, loss, feeds = example(TRANSFORMER, "float32")
    plan = network.entry([loss]).backward(loss).lower()
    reading = plan.kernels()
    text = reading.describe()
    lines = text.splitlines()
    assert lines[-2] == reading.summary()
    assert re.fullmatch(
        r"kernels: \d+ launches for \d+ nodes, \d+ host steps?, \d+ uploads?, \d+ readbacks?, 1 submit", lines[-2]
    )
    assert re.fullmatch(
        r"device memory: \d+ buffers, \d+ bytes \(plan peak \d+ elements, \d+ bytes as float32\)", lines[-1]
    )
    launch_rows = [line for line in lines if re.match(r"\d+ ", line)]
    assert len(launch_rows) == len(reading.launches)
    for number, (row, launch) in enumerate(zip(launch_rows, reading.launches)):
        assert row.startswith(f"{number:<8}{launch.kernel}:{launch.entry}")
        assert "x".join(map(str, launch.workgroups)) in row and f"b{launch.bindings[0].buffer}[" in row
    # Every family shows up in a training step. The backward differentiates a softmax and a log-softmax
    # from their results (row kernels of their own), so the training plan runs those two fused as well;
    # LayerNormGrad reads a layer norm's row scale, so there only the forward plan fuses the layer norm.
    assert {launch.kernel for launch in reading.launches} >= {"elementwise", "reduce", "matmul", "gather", "copy"}
    entries = {launch.entry for launch in reading.launches}
    assert {"softmax", "log_softmax", "softmax_grad", "log_softmax_grad", "layer_norm_grad"} <= entries
    assert "layer_norm" not in entries
    assert not any(line.startswith("numpy ") for line in lines)  # no host step: ScatterAdd is a launch
    assert any(line.startswith(f"{n:<8}scatter:scatter_add") for n, line in enumerate(launch_rows))
    assert any(line.startswith("view    Broadcast") for line in lines)
    forward = network.entry([loss]).lower().kernels()
    fused = [launch for launch in forward.launches if launch.kernel in ("softmax", "layer_norm")]
    assert {launch.entry for launch in fused} == {"softmax", "log_softmax", "layer_norm"}
    for launch in fused:
        assert len(launch.nodes) >= 8 and launch.nodes in [group.covered for group in forward.groups.values()]


def test_device_memory_follows_the_plan_peak():
    for path in EXAMPLES:
        network, readables, loss, _ = example(path, "float32")
        for plan in plans_of(network, readables, loss):
            program = plan.kernels().program
            resident = sum(
                program.buffers[s.buffer].bytes for s in program.steps if isinstance(s, Upload) and s.resident
            )
            # Values share buffers by lifetime; parameters and constant leaves stay resident; a launch's
            # working memory (a convolution's im2col columns) comes on top of the values the plan counts.
            assert program.device_bytes <= 4 * plan.peak + resident + program.scratch_bytes, (path.stem, plan.direction)

    # A long chain needs a few buffers, not one a node.
    def chain(tape):
        x = tape.input(np.ones(1000))
        for _ in range(40):
            x = topos.tanh(x) * 0.5
        return [x]

    network, outputs = Tape.record(chain, dtype="float32")
    program = network.entry(outputs).lower().kernels().program
    # Its 80 nodes run as fused elementwise chains (topos.compiler.wgsl.fusion), seven operands a launch at most.
    assert sum(len(launch.nodes) for launch in program.launches) == 80 and len(program.launches) <= 80 // 6
    assert len(program.buffers) <= 3


def test_running_again_uploads_only_what_changed():
    network, readables, loss, feeds = example(TRANSFORMER, "float32")
    plan = network.entry([loss]).lower()
    parameters = network.parameters()
    runner = default_runner()
    plan.run(parameters, feeds, backend="webgpu")
    before = runner.uploaded_bytes
    again = plan.run(parameters, feeds, backend="webgpu")
    feed_bytes = sum(np.asarray(v, dtype=np.int32).nbytes for v in feeds.values())
    assert runner.uploaded_bytes - before == feed_bytes
    np.testing.assert_array_equal(
        again.of(loss).numpy(), plan.run(parameters, feeds, backend="webgpu").of(loss).numpy()
    )


def test_a_gather_index_out_of_range_raises_as_numpy_does():
    def build(tape):
        table = tape.parameter(np.arange(8.0).reshape(4, 2))
        ids = tape.input(np.array([0, 3]), dtype="int32")
        return [ids, topos.take(table, ids, axis=0) * 2.0]

    network, (ids, y) = Tape.record(build, dtype="float32")
    plan = network.entry([y]).lower()
    np.testing.assert_array_equal(
        plan.run(network.parameters(), {ids: [3, 1]}, backend="webgpu").of(y).numpy(), [[12.0, 14.0], [4.0, 6.0]]
    )
    for backend in ("numpy", "webgpu"):
        with pytest.raises(IndexError, match="out of range"):
            plan.run(network.parameters(), {ids: [1, 4]}, backend=backend)
