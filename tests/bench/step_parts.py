"""Benchmark: the gallery transformer's step against PyTorch eager, part by part.

``train_step.py`` times the whole step; this says where the two frameworks differ. Two tables
for each size, one CPU thread each, the frameworks interleaved step for step:

- the phases: forward, backward and the Adam update, medians over the timed steps;
- the matrix products: every product of a topos step, in the layouts the step passes them
  (a transposed operand stays a transposed view; "layout" says C for C-contiguous, V for a
  strided view, a then b), timed alone in numpy and in torch on the same memory, with each
  shape's ratio and the sum over the step.

When the products take the same time in both and so does everything else, the step's ratio
can only come from doing less work, not from doing the same work faster: this is the bench
behind docs/training.md's account of d 256. Not part of the default test run.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/step_parts.py --embeds 64,256
"""

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(__file__))
import train_step  # noqa: E402  (sets the thread counts before numpy and torch load)
from train_step import ToposTrainer, TorchTrainer, example, np, torch  # noqa: E402

import topos.ops.linalg as linalg  # noqa: E402


def phases(config, steps, warmup):
    """Median milliseconds of forward, backward and the update, topos's and torch's, interleaved."""
    topos_trainer = ToposTrainer(config, config.learning_rate)
    torch_trainer = TorchTrainer(config, topos_trainer.initial_weights(), config.learning_rate)
    rng = np.random.default_rng(0)
    times = {
        name: []
        for name in ("topos forward", "topos backward", "topos Adam", "torch forward", "torch backward", "torch Adam")
    }
    for step in range(warmup + steps):
        tokens, targets = (a.astype(np.int64) for a in example.sample_windows(rng, config))
        marks = [time.perf_counter()]
        run = topos_trainer.network.forward(
            topos_trainer.parameters, {topos_trainer.tokens: tokens, topos_trainer.targets: targets}
        )
        marks.append(time.perf_counter())
        gradients = run.backward(topos_trainer.loss).parameters(topos_trainer.parameters)
        marks.append(time.perf_counter())
        topos_trainer.parameters, topos_trainer.state = topos_trainer.optimizer.step(
            topos_trainer.parameters, gradients, topos_trainer.state, donate=True
        )
        marks.append(time.perf_counter())
        torch_trainer.optimizer.zero_grad(set_to_none=True)
        marks.append(time.perf_counter())
        loss = torch_trainer.loss(torch.from_numpy(tokens), torch.from_numpy(targets))
        marks.append(time.perf_counter())
        loss.backward()
        marks.append(time.perf_counter())
        torch_trainer.optimizer.step()
        marks.append(time.perf_counter())
        if step >= warmup:
            spans = [marks[1] - marks[0], marks[2] - marks[1], marks[3] - marks[2]]
            spans += [marks[5] - marks[4], marks[6] - marks[5], marks[7] - marks[6]]
            for name, span in zip(times, spans):
                times[name].append(span * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}, topos_trainer


def step_products(trainer, config):
    """Each product of one topos step: (shape of a, shape of b, a's strides, b's strides), counted."""
    seen = Counter()
    original = linalg.matmul

    def recording(a, b, out=None):
        seen[(a.shape, b.shape, a.strides, b.strides)] += 1
        return original(a, b, out)

    linalg.matmul = recording
    try:
        tokens, targets = (a.astype(np.int64) for a in example.sample_windows(np.random.default_rng(1), config))
        trainer.step(tokens, targets)
    finally:
        linalg.matmul = original
    return seen


def laid_out(shape, strides, rng):
    """A float32 array of ``shape`` whose strides order its axes as ``strides`` does (a transposed view stays one)."""
    order = sorted(range(len(shape)), key=lambda axis: -strides[axis])
    base = rng.random([shape[axis] for axis in order], dtype=np.float32)
    return base.transpose([order.index(axis) for axis in range(len(shape))])


def median_ms(call, repetitions):
    call()
    times = []
    for _ in range(repetitions):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def products_table(products, repetitions):
    rng = np.random.default_rng(2)
    totals = [0.0, 0.0]
    print(f"  {'a':>18} @ {'b':<18} {'layout':>7} {'calls':>5} {'numpy ms':>9} {'torch ms':>9} {'ratio':>6}")
    for (a_shape, b_shape, a_strides, b_strides), calls in sorted(
        products.items(), key=lambda item: -np.prod(item[0][0]) * item[0][1][-1]
    ):
        a, b = laid_out(a_shape, a_strides, rng), laid_out(b_shape, b_strides, rng)
        out = np.empty(a_shape[:-1] + b_shape[-1:], np.float32)
        a_torch, b_torch = torch.from_numpy(a), torch.from_numpy(b)  # the same memory and strides
        numpy_ms = median_ms(lambda a=a, b=b, out=out: np.matmul(a, b, out=out), repetitions)
        torch_ms = median_ms(lambda a=a_torch, b=b_torch: torch.matmul(a, b), repetitions)
        totals[0] += numpy_ms * calls
        totals[1] += torch_ms * calls
        layout = ("C" if a.flags.c_contiguous else "V") + ("C" if b.flags.c_contiguous else "V")
        print(
            f"  {str(a_shape):>18} @ {str(b_shape):<18} {layout:>7} {calls:>5} {numpy_ms:9.3f} {torch_ms:9.3f} {numpy_ms / torch_ms:6.2f}"
        )
    print(f"  a step's products: numpy {totals[0]:.2f} ms, torch {totals[1]:.2f} ms, ratio {totals[0] / totals[1]:.2f}")
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embeds", default="64,256", help="residual stream widths, comma-separated")
    parser.add_argument("--context", type=int, default=example.Config().context)
    parser.add_argument("--steps", type=int, default=50, help="timed steps for the phases")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repetitions", type=int, default=30, help="timed calls of each product")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    print(train_step.blas_line())
    for embed in (int(width) for width in arguments.embeds.split(",")):
        config = dataclasses.replace(example.Config(), embed=embed, context=arguments.context)
        medians, trainer = phases(config, arguments.steps, arguments.warmup)
        print(f"d {embed}, context {config.context}: medians of {arguments.steps} steps, ms")
        for part in ("forward", "backward", "Adam"):
            mine, theirs = medians[f"topos {part}"], medians[f"torch {part}"]
            print(f"  {part:<9} topos {mine:8.2f}  torch {theirs:8.2f}  ratio {mine / theirs:.2f}")
        topos_step = sum(medians[f"topos {part}"] for part in ("forward", "backward", "Adam"))
        torch_step = sum(medians[f"torch {part}"] for part in ("forward", "backward", "Adam"))
        print(f"  step      topos {topos_step:8.2f}  torch {torch_step:8.2f}  ratio {topos_step / torch_step:.2f}")
        _, torch_products = products_table(step_products(trainer, config), arguments.repetitions)
        print(
            f"  torch's products are {torch_products / torch_step:.2f} of its step: a topos step whose "
            f"products ran as torch's and everything else took no time would be {torch_products / torch_step:.2f} of torch's"
        )


if __name__ == "__main__":
    main()
