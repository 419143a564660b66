"""Benchmark: max and average pooling's numpy forward and backward against PyTorch eager on one thread.

At the shapes of a CNN training step (``[64, 32, 28, 28]``, 2x2 windows, stride 2, and a
3x3 window with stride 1 and padding 1), float32. The forward is the primitive's numpy
``forward_into`` (what the interpreter runs into its arena), the backward
``SelectAndScatterAdd`` (max) or ``WindowSum``'s transpose (average), against torch's
``max_pool2d_with_indices`` / ``max_pool2d_with_indices_backward`` and
``avg_pool2d`` / ``avg_pool2d_backward`` called directly (no autograd bookkeeping).
The contenders run interleaved, so what else the machine does falls on all alike; the
medians (and the best) are printed in milliseconds.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/pooling.py
    .venv/bin/python tests/bench/pooling.py --shape 64 32 28 28 --repeats 50

Not part of the default test run.
"""

import argparse
import statistics
import time

import numpy as np
import torch

from topos.model.autodiff import EagerEmitter
from topos.ops import lookup
from topos.ops.windows import transpose_sum


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=4, default=[64, 32, 28, 28])
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    x = np.random.default_rng(0).standard_normal(args.shape).astype(np.float32)
    for window, stride, pad in ((2, 2, 0), (3, 1, 1)):
        bench(x, window, stride, pad, args.repeats)


def bench(x, window, stride, pad, repeats):
    """Time each contender ``repeats`` times, interleaved, and print the medians and the best."""
    rng = np.random.default_rng(1)
    tx = torch.from_numpy(x)
    attrs = {
        "window": (1, 1, window, window),
        "strides": (1, 1, stride, stride),
        "padding": ((0, 0), (0, 0), (pad, pad), (pad, pad)),
    }
    grid = lookup("WindowMax").forward([x], attrs).shape
    g = rng.standard_normal(grid).astype(np.float32)
    tg = torch.from_numpy(g)
    pooled, gx = np.empty(grid, np.float32), np.empty_like(x)
    kernel, strides, padding = [window] * 2, [stride] * 2, [pad] * 2
    _, indices = torch.ops.aten.max_pool2d_with_indices(tx, kernel, strides, padding)
    contenders = {
        "max forward   topos": lambda: lookup("WindowMax").forward_into([x], attrs, pooled),
        "max forward   torch": lambda: torch.ops.aten.max_pool2d_with_indices(tx, kernel, strides, padding),
        "max backward  topos": lambda: lookup("SelectAndScatterAdd").forward_into([g, x], attrs, gx),
        "max backward  torch": lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            tg, tx, kernel, strides, padding, [1, 1], False, indices
        ),
        "avg forward   topos": lambda: lookup("WindowSum").forward_into([x], attrs, pooled),
        "avg forward   torch": lambda: torch.ops.aten.avg_pool2d(tx, kernel, strides, padding),
        "avg backward  topos": lambda: transpose_sum(EagerEmitter(), g, x.shape, attrs),
        "avg backward  torch": lambda: torch.ops.aten.avg_pool2d_backward(
            tg, tx, kernel, strides, padding, False, True, None
        ),
    }
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, run in contenders.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    print(f"{list(x.shape)}, window {window}x{window}, stride {stride}, padding {pad} (ms: median, best)")
    for name, samples in times.items():
        print(f"  {name}  {1e3 * statistics.median(samples):7.2f}  {1e3 * min(samples):7.2f}")


if __name__ == "__main__":
    main()
