"""Data-parallel training on XLA's SPMD partitioner equals the single-device run.

Each case runs ``spmd_training.py`` in a process of its own, which makes 8 host
devices (``XLA_FLAGS`` must be set before jax is imported, and the rest of the
suite must see one device). Three Adam steps of the gallery transformer, batch
split over the 8 devices by the module's sharding annotations, give the losses
and parameters of the same steps on one device, within float32 rounding; the
partitioned module shows the split (one device's slice of the batch) and the
all-reduce XLA inserted. The same holds for the whole step as one program
(``DataParallelTrainer``: forward, backward and Adam's update on the devices). The annotations themselves are checked as text here.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tolerances import assert_close, assert_trained_close, loss_bound

from topos import Tape
from topos.compiler.sharding import annotate, shard_batch
from topos.compiler.training_step import emit_training_step
from topos.errors import ArgumentError, ArgumentTypeError, FeedError
from topos.model import optim
from topos.xla.spmd import DataParallel, DataParallelTrainer

HERE = Path(__file__).parent


def test_eight_devices_train_the_transformer_like_one(tmp_path):
    out = tmp_path / "transformer.npz"
    environment = dict(os.environ, OMP_NUM_THREADS="1")
    completed = subprocess.run(
        [sys.executable, str(HERE / "spmd_training.py"), "8", "3", str(out)],
        cwd=HERE,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = np.load(out)
    # The all-reduce sums the batch in another order: the losses agree to the rounding of the widest
    # reduction (the batch's windows times the context), and the parameters to what Adam (lr 1e-2, as
    # spmd_training.py trains) promises: a weight whose gradient is rounding noise may step either way.
    losses = loss_bound(result["one_losses"], "float32", terms=16 * 16)
    assert_close(result["many_losses"], result["one_losses"], losses, "8 devices' losses")
    assert_trained_close(result["many_parameters"], result["one_parameters"], 1e-2, 3, "8 devices' parameters")
    partitioned = str(result["partitioned"])
    assert str(result["device_slice"]) in partitioned
    assert "all-reduce(" in partitioned
    # The whole step as one program (DataParallelTrainer): the update on the devices, the same numbers.
    assert_close(result["program_losses"], result["one_losses"], losses, "the one program's losses")
    assert_trained_close(result["program_parameters"], result["one_parameters"], 1e-2, 3, "the program's parameters")
    program = str(result["program_partitioned"])
    assert str(result["device_slice"]) in program and "all-reduce(" in program


def _network():
    def build(tape):
        x = tape.input(np.ones((8, 3)), name="x")
        w = tape.parameter(np.ones((3, 2)), name="w")
        return (x @ w).sum()

    return Tape.record(build)


def test_the_annotations_split_the_named_input_and_replicate_the_rest():
    network, total = _network()
    plan = network.entry([total]).backward(total).lower()
    x = plan.arguments()[0]
    text = shard_batch(plan, {x: 0}, devices=4)
    lines = text.splitlines()
    assert lines[0] == "module @topos attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {"
    assert lines[1] == '  sdy.mesh @mesh = <["batch"=4]>'
    assert lines[2] == (
        '  func.func @main(%arg0: tensor<8x3xf64> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}]>}, '
        "%arg1: tensor<3x2xf64> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> "
        "(tensor<f64> {sdy.sharding = #sdy.sharding<@mesh, []>}, "
        "tensor<3x2xf64> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {"
    )
    # The body is the plan's own text.
    assert lines[3:] == plan.emit_stablehlo().splitlines()[2:]


def test_a_batch_that_does_not_divide_names_the_input_and_the_devices():
    network, total = _network()
    plan = network.entry([total]).lower()
    # The input is named as a feed's errors name it: its index, its name and the line that recorded it.
    named = rf"input 0 'x' \(recorded at {re.escape(__file__)}:\d+\)"
    with pytest.raises(
        ArgumentError,
        match=rf"^batch axis of {named}, of shape \[8, 3\]: axis 0 of extent 8 does not divide over 3 devices \(recorded at {re.escape(__file__)}:\d+\)$",
    ):
        shard_batch(plan, {0: 0}, devices=3)
    with pytest.raises(
        ArgumentError,
        match=rf"^batch axis of {named}, of shape \[8, 3\]: it has no axis 2 to split \(recorded at {re.escape(__file__)}:\d+\)$",
    ):
        shard_batch(plan, {network.symbol(0): 2}, devices=2)
    with pytest.raises(ArgumentError, match=r"^matmul 2 \(recorded at .*\) is not an argument of this plan"):
        shard_batch(plan, {2: 0}, devices=2)
    with pytest.raises(ArgumentTypeError, match="batch_axes maps each split argument to its axis .* got list"):
        shard_batch(plan, [(0, 0)], devices=2)
    with pytest.raises(ArgumentTypeError, match="by its node index or symbol, got str"):
        shard_batch(plan, {"x": 0}, devices=2)
    other, _ = _network()
    with pytest.raises(FeedError, match="belongs to another network"):
        shard_batch(plan, {other.symbol(0): 0}, devices=2)


def test_data_parallel_runs_and_trainers_name_the_input_whose_batch_does_not_divide():
    # Both check the split before they compile (or import jax): no devices are needed to see the error.
    network, total = _network()
    plan = network.entry([total]).backward(total).lower()
    uneven = (
        r"^batch axis of input 0 'x' \(recorded at .*\), of shape \[8, 3\]: axis 0 of extent 8 does not divide over 3"
    )
    with pytest.raises(ArgumentError, match=uneven):
        DataParallel(plan, {network.symbol(0): 0}, devices=3)
    with pytest.raises(ArgumentError, match=uneven):
        DataParallelTrainer(plan, network.parameters(), optim.SGD(lr=0.1), {0: 0}, devices=3)


def test_a_training_step_keeps_its_aliasing_and_gains_the_shardings():
    network, total = _network()
    plan = network.entry([total]).backward(total).lower()
    module = emit_training_step(plan, optim.SGD(lr=0.1))
    text = annotate(module.text, 2, {0: 0}, [2, 2] + [0] * len(module.scalars), [0, 2])
    header = text.splitlines()[2]
    assert '%arg0: tensor<8x3xf64> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}]>}' in header
    assert (
        "%arg1: tensor<3x2xf64> {tf.aliasing_output = 1 : i32, sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}" in header
    )
