"""Benchmark: one training step of a small CNN, topos (numpy interpreter) against PyTorch eager, one thread.

Two sizes, batch 64, float32 in both frameworks:

- ``digits``: the gallery's model (``docs/examples/07_digits_cnn.py``) at its
  own shapes: [64, 1, 8, 8] images, conv 3x3 1->16 (padding 1), ReLU, max pool
  2x2, conv 3x3 16->32, ReLU, max pool 2x2, dropout 0.25 on the 128 features,
  a dense layer to 10 logits, cross-entropy; the recording is checked to be
  the example's, node for node.
- ``28x28``: the same layers at MNIST's size with 32 channels in both blocks:
  [64, 1, 28, 28] -> [32, 14, 14] -> [32, 7, 7] -> 1568 features -> 10.

A step is a forward run, the backward pass and an Adam update, on a fresh
batch (random images at 28x28) and a fresh dropout key. The two frameworks run
in one process, step for step interleaved, so whatever else the machine does
falls on both alike; the medians and their ratio are printed for each size.
Both run on one thread (BLAS and torch), as the gallery targets one core
(Pyodide has no threads). Before any step is timed, the model without dropout
is checked to give PyTorch's loss and gradients on the first batch (float32
rounding), so both time the same network.

Then the time split. topos: a few more steps with every prepared node of the
plans timed alone (``PreparedPlan._run_steps`` wrapped for the measurement),
summed by kind: convolution (``Conv`` nodes, forward and the gradients, which
are convolutions too, and the ``Reverse`` that flips the kernel for the
input's gradient), pooling (the windows and max pooling's gradient),
randomness (the dropout mask's bits), matrix products, the other nodes; and
what is not a node: the optimizer and the Python around the nodes (feeds,
tables, the reverse scan's bookkeeping). PyTorch: ``torch.profiler`` over as
many forward and backward passes, its self CPU time summed over the same kinds
of aten op, and Adam's step timed on its own.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/cnn_step.py
    .venv/bin/python tests/bench/cnn_step.py --sizes 28x28 --repetitions 20

Not part of the default test run.
"""

import os

# One BLAS thread for numpy, set before numpy is imported.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "py"))

import topos  # noqa: E402
from topos import Tape  # noqa: E402
from topos.model import optim  # noqa: E402
from topos.model.interpreter.prepared import PreparedPlan  # noqa: E402


@dataclass(frozen=True)
class Size:
    name: str
    side: int  # images are [batch, 1, side, side]
    channels: tuple  # the two convolution blocks' feature maps
    batch: int = 64
    kernel: int = 3
    dropout: float = 0.25
    classes: int = 10
    learning_rate: float = 1e-3

    @property
    def features(self):
        side = self.side // 2 ** len(self.channels)
        return self.channels[-1] * side * side


SIZES = {"digits": Size("digits", 8, (16, 32)), "28x28": Size("28x28", 28, (32, 32))}


def initial_weights(size, seed=0):
    """He initialisation, OIHW kernels, as the gallery's model."""
    rng = np.random.default_rng(seed)
    weights = {}
    in_channels = 1
    for block, out_channels in enumerate(size.channels, start=1):
        fan_in = in_channels * size.kernel * size.kernel
        shape = (out_channels, in_channels, size.kernel, size.kernel)
        weights[f"conv{block}.weight"] = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)
        weights[f"conv{block}.bias"] = np.zeros(out_channels, np.float32)
        in_channels = out_channels
    weights["head.weight"] = rng.normal(0.0, np.sqrt(1.0 / size.features), (size.features, size.classes))
    weights["head.weight"] = weights["head.weight"].astype(np.float32)
    weights["head.bias"] = np.zeros(size.classes, np.float32)
    return weights


def build(tape, size, weights, training=True):
    """The CNN in topos: ``(images, labels, key or None, loss)``."""
    images = tape.input(np.zeros((size.batch, 1, size.side, size.side)), name="images")
    labels = tape.input(np.zeros(size.batch), name="labels", dtype="int32")
    key = tape.input(topos.random_key(0), name="key", dtype="uint32") if training else None
    p = {name: tape.parameter(array, name=name) for name, array in weights.items()}
    x = images
    for block in range(1, len(size.channels) + 1):
        x = topos.conv2d(x, p[f"conv{block}.weight"], p[f"conv{block}.bias"], padding=size.kernel // 2)
        x = topos.max_pool(topos.relu(x), 2)
    x = x.reshape(size.batch, size.features)
    if training:
        x = topos.dropout(x, size.dropout, key)
    logits = x @ p["head.weight"] + p["head.bias"]
    topos.mean(topos.equal(topos.argmax(logits, axis=-1), labels))  # the example's guesses and accuracy
    return images, labels, key, topos.cross_entropy(logits, labels)


def load_example():
    path = os.path.join(ROOT, "docs", "examples", "07_digits_cnn.py")
    spec = importlib.util.spec_from_file_location("digits_cnn_example", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # records the model; main() runs only as a script
    return module


def check_the_example_is_this_model(size):
    """At the digits' shapes the bench times the gallery's recording: the same nodes, opcodes and shapes."""
    example = load_example()
    config = example.Config()
    assert (config.channels, config.batch, config.kernel, config.dropout) == (
        size.channels,
        size.batch,
        size.kernel,
        size.dropout,
    ), "the bench's digits size is not the example's Config"
    mine, _ = Tape.record(lambda tape: build(tape, size, initial_weights(size)), dtype="float32")
    theirs = example.network

    def skeleton(network):
        return [(node.opcode, node.operands, node.shape, node.dtype) for node in network.nodes()]

    assert skeleton(mine) == skeleton(theirs), "the bench's digits model is not the example's recording"


class ToposTrainer:
    def __init__(self, size, weights):
        self.size = size
        self.network, (self.images, self.labels, self.key, self.loss) = Tape.record(
            lambda tape: build(tape, size, weights), dtype="float32"
        )
        self.parameters = self.network.parameters()
        self.optimizer = optim.Adam(lr=size.learning_rate)
        self.state = self.optimizer.init(self.parameters)
        self.optimizer_seconds = 0.0

    def step(self, images, labels, key):
        run = self.network.forward(self.parameters, {self.images: images, self.labels: labels, self.key: key})
        gradients = run.backward(self.loss).parameters(self.parameters)
        started = time.perf_counter()
        self.parameters, self.state = self.optimizer.step(self.parameters, gradients, self.state)
        self.optimizer_seconds += time.perf_counter() - started
        return run.of(self.loss).scalar()


class TorchTrainer:
    """The same model in plain eager PyTorch, as a PyTorch user would write it."""

    def __init__(self, size, weights):
        self.size = size
        self.weights = {name: torch.tensor(array, requires_grad=True) for name, array in weights.items()}
        self.optimizer = torch.optim.Adam(list(self.weights.values()), lr=size.learning_rate)

    def loss(self, images, labels, training=True):
        w, size = self.weights, self.size
        x = images
        for block in range(1, len(size.channels) + 1):
            x = F.conv2d(x, w[f"conv{block}.weight"], w[f"conv{block}.bias"], padding=size.kernel // 2)
            x = F.max_pool2d(F.relu(x), 2)
        x = x.reshape(size.batch, size.features)
        x = F.dropout(x, size.dropout, training=training)
        return F.cross_entropy(x @ w["head.weight"] + w["head.bias"], labels)

    def step(self, images, labels):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64)))
        loss.backward()
        self.optimizer.step()
        return loss.item()


def check_same_model(size, weights, images, labels):
    """Without dropout, topos's loss and gradients equal PyTorch's on one batch (float32 rounding)."""
    network, (x, y, _, loss) = Tape.record(lambda tape: build(tape, size, weights, training=False), dtype="float32")
    run = network.forward(network.parameters(), {x: images, y: labels})
    gradients = run.backward(loss).parameters(network.parameters())
    reference = TorchTrainer(size, weights)
    torch_loss = reference.loss(torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64)), training=False)
    torch_loss.backward()
    if not abs(torch_loss.item() - run.of(loss).scalar()) <= 1e-5 * max(1.0, abs(torch_loss.item())):
        raise AssertionError(
            f"not the same model: loss {run.of(loss).scalar()!r} in topos, {torch_loss.item()!r} in torch"
        )
    for name, gradient in gradients.items():
        want = reference.weights[name].grad.numpy()
        difference = float(np.max(np.abs(np.asarray(gradient) - want)))
        if not difference <= 1e-4 * max(1e-6, float(np.max(np.abs(want)))):
            raise AssertionError(f"not the same model: the gradients of {name} differ by {difference:.3g}")


def batch_of(size, rng, digits):
    """A batch of images and labels: the digits themselves at their size, random images at another."""
    if size.side == 8:
        images, labels = digits
        chosen = rng.choice(len(labels), size.batch, replace=False)
        return images[chosen], labels[chosen]
    images = rng.random((size.batch, 1, size.side, size.side), dtype=np.float32)
    return images, rng.integers(0, size.classes, size.batch).astype(np.int32)


def timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


# The time split ----------------------------------------------------------------------------------------------

KINDS = ("convolution", "pooling", "randomness", "matrix products", "other nodes")


def kind_of_opcode(opcode):
    name = opcode.lower()
    if "conv" in name or name == "reverse":  # Reverse flips the kernel for the input's gradient
        return "convolution"
    if "pool" in name or "window" in name or "selectandscatter" in name:
        return "pooling"
    if any(mark in name for mark in ("random", "uniform", "bernoulli", "threefry", "key", "foldin", "dropout")):
        return "randomness"
    if name in ("matmul", "dot", "dotgeneral"):
        return "matrix products"
    return "other nodes"


def kind_of_aten(name):
    name = name.lower()
    if "conv" in name:
        return "convolution"
    if "pool" in name:
        return "pooling"
    if any(mark in name for mark in ("dropout", "bernoulli", "uniform", "rand")):
        return "randomness"
    if any(mark in name for mark in ("mm", "matmul", "addmm", "linear")):
        return "matrix products"
    return "other nodes"


class NodeTimes:
    """Times each prepared step of every plan run while active, summed by the kind of its node."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.by_opcode = defaultdict(float)

    def __enter__(self):
        self._original = PreparedPlan._run_steps
        seconds, by_opcode, clock = self.seconds, self.by_opcode, time.perf_counter

        def run_steps(plan, values):
            for step, node in zip(plan._steps, plan._step_nodes):
                started = clock()
                step(values)
                spent = clock() - started
                seconds[kind_of_opcode(node.opcode)] += spent
                by_opcode[node.opcode] += spent

        PreparedPlan._run_steps = run_steps
        return self

    def __exit__(self, *exc):
        PreparedPlan._run_steps = self._original


def split_line(shares, total, steps):
    parts = ", ".join(f"{name} {100 * seconds / total:.0f}%" for name, seconds in shares.items() if seconds > 0)
    return f"{1e3 * total / steps:.2f} ms a step: {parts}"


def topos_split(trainer, size, rng, digits, steps):
    trainer.optimizer_seconds = 0.0
    total = 0.0
    with NodeTimes() as node_times:
        for step in range(steps):
            images, labels = batch_of(size, rng, digits)
            seconds, _ = timed(trainer.step, images, labels, topos.fold_in(topos.random_key(1), step))
            total += seconds
    shares = {kind: node_times.seconds.get(kind, 0.0) for kind in KINDS}
    shares["optimizer"] = trainer.optimizer_seconds
    shares["Python around the nodes"] = max(0.0, total - sum(shares.values()))
    print(f"  topos split ({steps} steps, each node timed alone): {split_line(shares, total, steps)}")
    slowest = sorted(node_times.by_opcode.items(), key=lambda item: -item[1])[:6]
    print("    slowest opcodes: " + ", ".join(f"{op} {1e3 * s / steps:.2f} ms" for op, s in slowest))


def torch_split(trainer, size, rng, digits, steps):
    """torch.profiler over forward and backward alone (its self CPU time by kind of aten op), the optimizer timed apart."""
    from torch.profiler import ProfilerActivity, profile

    batches = [batch_of(size, rng, digits) for _ in range(steps)]
    tensors = [(torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))) for x, y in batches]
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        started = time.perf_counter()
        for images, labels in tensors:
            trainer.optimizer.zero_grad(set_to_none=True)
            trainer.loss(images, labels).backward()
        forward_backward = time.perf_counter() - started
    optimizer_seconds = 0.0
    for images, labels in tensors:
        trainer.optimizer.zero_grad(set_to_none=True)
        trainer.loss(images, labels).backward()
        optimizer_seconds += timed(trainer.optimizer.step)[0]
    shares = dict.fromkeys(KINDS, 0.0)
    for event in profiler.key_averages():
        if event.key.startswith("aten::"):
            shares[kind_of_aten(event.key)] += event.self_cpu_time_total / 1e6
    shares["optimizer"] = optimizer_seconds
    shares["Python and dispatch (the rest)"] = max(0.0, forward_backward - sum(shares.values()) + optimizer_seconds)
    total = forward_backward + optimizer_seconds
    print(f"  torch split ({steps} steps, torch.profiler self CPU time, profiled): {split_line(shares, total, steps)}")


def measure(size, arguments, digits):
    weights = initial_weights(size)
    rng = np.random.default_rng(0)
    first_images, first_labels = batch_of(size, np.random.default_rng(0), digits)
    check_same_model(size, weights, first_images, first_labels)
    topos_trainer = ToposTrainer(size, weights)
    torch_trainer = TorchTrainer(size, weights)
    topos_times, torch_times, losses = [], [], []
    for repetition in range(arguments.warmup + arguments.repetitions):
        images, labels = batch_of(size, rng, digits)
        key = topos.fold_in(topos.random_key(1), repetition)
        topos_seconds, topos_loss = timed(topos_trainer.step, images, labels, key)
        torch_seconds, torch_loss = timed(torch_trainer.step, images, labels)
        if repetition >= arguments.warmup:
            topos_times.append(topos_seconds)
            torch_times.append(torch_seconds)
        losses.append((topos_loss, torch_loss))
    topos_median, torch_median = statistics.median(topos_times), statistics.median(torch_times)
    print(
        f"{size.name}: images [{size.batch}, 1, {size.side}, {size.side}], channels {size.channels}, "
        f"{size.features} features, float32, {len(topos_trainer.network)} topos nodes"
    )
    print(
        f"  losses, first step: topos {losses[0][0]:.5f}, torch {losses[0][1]:.5f}; "
        f"last: topos {losses[-1][0]:.5f}, torch {losses[-1][1]:.5f}"
    )
    print(f"  topos  median step {topos_median * 1e3:8.3f} ms  ({arguments.repetitions} steps)")
    print(f"  torch  median step {torch_median * 1e3:8.3f} ms  ({arguments.repetitions} steps)")
    print(f"  ratio topos / torch: {topos_median / torch_median:.2f}")
    if arguments.split:
        topos_split(topos_trainer, size, rng, digits, arguments.split)
        torch_split(torch_trainer, size, rng, digits, arguments.split)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="digits,28x28", help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--repetitions", type=int, default=40, help="timed steps for each framework and size")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--split", type=int, default=10, metavar="STEPS", help="steps timed for the split (0: none)")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    digits = topos.datasets.digits()
    names = arguments.sizes.split(",")
    if "digits" in names:
        check_the_example_is_this_model(SIZES["digits"])
    for name in names:
        measure(SIZES[name], arguments, digits)


if __name__ == "__main__":
    main()
