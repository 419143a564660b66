"""Benchmark: convolution on numpy against PyTorch eager (one thread), and its two WebGPU paths.

    .venv/bin/python tests/bench/convolution.py            # numpy against torch, then lavapipe
    .venv/bin/python tests/bench/convolution.py --numpy    # numpy against torch alone
    .venv/bin/python tests/bench/convolution.py --device   # the two WebGPU paths alone

numpy rows: a 3x3 convolution with padding 1 at 28x28, batch 64 (the issue's CNN step shapes: 1 -> 32
and 32 -> 32 channels, and 32 -> 32 at 14x14 after a pooling), float32: the forward, the input
gradient and the kernel gradient, each as topos's numpy forward runs the Convolution nodes the
gradient rules record (``topos.ops.convolution``), against ``torch.nn.functional.conv2d`` and its
backward on one thread. Each figure is the best of the rounds, topos and torch interleaved.

Device rows (lavapipe through wgpu-py): a plan of one convolution run on the device by the rule's
path (im2col into the tiled matmul) and with the direct kernel forced, interleaved; the ratio is
what docs/kernels.md ("Convolution") reports. Not part of the default test run.
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py"))

from topos import Tape, detach  # noqa: E402
from topos.model.autodiff import EagerEmitter  # noqa: E402
from topos.ops import Meta, lookup  # noqa: E402
from topos.ops.convolution import input_gradient, kernel_gradient  # noqa: E402

CONVOLUTION = lookup("Convolution")


def timed(function, *args, **keywords):
    """Milliseconds of one call of ``function(*args, **keywords)``."""
    start = time.perf_counter()
    function(*args, **keywords)
    return (time.perf_counter() - start) * 1e3


def torch_step(F, x, w, g):
    x.grad = w.grad = None
    F.conv2d(x, w, padding=1).backward(g)


def numpy_rows(rounds):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    emitter = EagerEmitter()
    print("numpy (topos) against torch eager, one thread, float32, ms (best of rounds)")
    for batch, channels, out_channels, side in [(64, 1, 32, 28), (64, 32, 32, 28), (64, 32, 32, 14)]:
        x = rng.standard_normal((batch, channels, side, side)).astype(np.float32)
        w = rng.standard_normal((out_channels, channels, 3, 3)).astype(np.float32)
        metas = [Meta(x.shape, "float32"), Meta(w.shape, "float32")]
        attrs = CONVOLUTION.normalize(metas, dict(padding=((1, 1), (1, 1))))
        g = rng.standard_normal(CONVOLUTION.infer(metas, attrs).shape).astype(np.float32)
        tx, tw, tg = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True), torch.tensor(g)

        timings = {key: [] for key in ("forward", "d input", "d kernel", "torch forward", "torch step")}
        for _ in range(rounds):
            timings["forward"].append(timed(CONVOLUTION.forward, [x, w], attrs))
            timings["d input"].append(timed(input_gradient, emitter, g, x.shape, w, attrs))
            timings["d kernel"].append(timed(kernel_gradient, emitter, g, x, w.shape, attrs))
            timings["torch forward"].append(timed(F.conv2d, tx, tw, padding=1))
            timings["torch step"].append(timed(torch_step, F, tx, tw, tg))
        got = {key: min(values) for key, values in timings.items()}
        ours = got["forward"] + got["d input"] + got["d kernel"]
        print(
            f"  [{batch}, {channels}, {side}, {side}] * [{out_channels}, {channels}, 3, 3]: forward {got['forward']:.2f}, "
            f"d input {got['d input']:.2f}, d kernel {got['d kernel']:.2f} (sum {ours:.2f}) | torch forward "
            f"{got['torch forward']:.2f}, forward and backward {got['torch step']:.2f} | ratio {ours / got['torch step']:.2f}"
        )


#: The device rows: small and large, dense and grouped (depthwise), a kernel gradient's shape.
DEVICE_SHAPES = [
    ((4, 8, 8, 8), (8, 8, 3, 3), dict(padding=((1, 1), (1, 1)))),
    ((8, 16, 8, 8), (16, 16, 3, 3), dict(padding=((1, 1), (1, 1)))),
    ((16, 1, 28, 28), (32, 1, 3, 3), dict(padding=((1, 1), (1, 1)))),
    ((8, 32, 14, 14), (32, 32, 3, 3), dict(padding=((1, 1), (1, 1)))),
    ((8, 16, 14, 14), (16, 2, 3, 3), dict(padding=((1, 1), (1, 1)), feature_groups=8)),
    ((8, 32, 14, 14), (32, 16, 3, 3), dict(padding=((1, 1), (1, 1)), feature_groups=2)),
    ((8, 32, 14, 14), (32, 1, 3, 3), dict(padding=((1, 1), (1, 1)), feature_groups=32)),
    ((16, 8, 14, 14), (16, 8, 14, 14), dict(padding=((1, 1), (1, 1)))),  # a kernel gradient's shape
]


def device_rows(rounds, shapes=DEVICE_SHAPES):
    import topos.compiler.wgsl.convolution as paths

    rng = np.random.default_rng(0)
    fits = paths.im2col_fits
    print("WebGPU (lavapipe): a plan of one convolution, im2col path against the direct kernel, ms")
    for x_shape, w_shape, attrs in shapes:
        tape = Tape("float32")
        x, w = tape.input(rng.standard_normal(x_shape)), tape.parameter(rng.standard_normal(w_shape))
        y = tape.apply("Convolution", [x, w], **attrs)
        network = tape.seal()
        feeds = {detach(x): rng.standard_normal(x_shape).astype(np.float32)}
        plans = {}
        for path in ("im2col", "direct"):
            paths.im2col_fits = fits if path == "im2col" else (lambda lhs, rhs_shape, attrs: False)
            plans[path] = network.entry([detach(y)]).lower()
            plans[path].kernels()
            plans[path].run(network.parameters(), feeds, backend="webgpu")  # compile the pipelines
        paths.im2col_fits = fits
        timings = {path: [] for path in plans}
        for _ in range(rounds):
            for path, plan in plans.items():
                timings[path].append(timed(plan.run, network.parameters(), feeds, backend="webgpu"))
        im2col, direct = min(timings["im2col"]), min(timings["direct"])
        terms = int(np.prod(w_shape[1:]))
        print(
            f"  {list(x_shape)} * {list(w_shape)} ({int(np.prod(y.shape))} outputs of {terms} terms): "
            f"im2col {im2col:.1f}, direct {direct:.1f}, direct / im2col {direct / im2col:.1f}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--numpy", action="store_true", help="numpy against torch alone")
    parser.add_argument("--device", action="store_true", help="the WebGPU paths alone")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not args.device:
        numpy_rows(args.rounds)
    if not args.numpy:
        device_rows(max(2, args.rounds // 2))


if __name__ == "__main__":
    main()
