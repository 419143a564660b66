"""Benchmark: convolution on numpy against PyTorch eager (one thread), and its two WebGPU paths.

    .venv/bin/python tests/bench/convolution.py            # numpy against torch, then lavapipe
    .venv/bin/python tests/bench/convolution.py --numpy    # numpy against torch alone
    .venv/bin/python tests/bench/convolution.py --device   # the two WebGPU paths alone

numpy rows: a 3x3 convolution with padding 1 at 28x28, batch 64 (the issue's CNN step shapes: 1 -> 32
and 32 -> 32 channels, and 32 -> 32 at 14x14 after a pooling), float32: the forward, the input
gradient and the kernel gradient, each as topos's numpy forward runs the Convolution nodes the
gradient rules record (``topos.ops.convolution``), against ``torch.nn.functional.conv2d`` and its
backward on one thread. Each figure is the best of the rounds, topos and torch interleaved.

Device rows (``device_report``): a plan of one convolution run on WebGPU with each path forced (im2col
into the tiled matmul, the direct kernel), interleaved, at the shapes of ``DEVICE_SHAPES``. Natively
that is lavapipe through wgpu-py; tests/bench/convolution_browser.mjs runs the same function in the
page (SwiftShader in headless Chromium) and prints both. docs/kernels.md ("Convolution") reports them.
Not part of the default test run. ``--shapes "digits conv1,depthwise"`` picks rows, ``--json`` prints
the report as JSON.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

if len(Path(__file__).resolve().parents) > 2:  # in the page, this file lies in /bench and topos is installed
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


#: The device rows: (name, input shape, kernel shape, attributes). The digits CNN's two layers, the issue's
#: 28x28 batch-64 layers, grouped ones (1 to 16 output channels a group), dense ones with few output channels, and
#: the grouped ones again at batch 8 and the
#: kernel gradients of the digits CNN's layers (an image-sized window, a small output).
PAD = dict(padding=((1, 1), (1, 1)))
DEVICE_SHAPES = [
    ("digits conv1", (64, 1, 8, 8), (16, 1, 3, 3), PAD),
    ("digits conv2", (64, 16, 4, 4), (32, 16, 3, 3), PAD),
    ("28x28 1->32", (64, 1, 28, 28), (32, 1, 3, 3), PAD),
    ("28x28 32->32", (64, 32, 28, 28), (32, 32, 3, 3), PAD),
    ("depthwise", (64, 32, 14, 14), (32, 1, 3, 3), dict(PAD, feature_groups=32)),
    ("2 a group", (64, 32, 14, 14), (32, 2, 3, 3), dict(PAD, feature_groups=16)),
    ("4 a group", (64, 32, 14, 14), (32, 4, 3, 3), dict(PAD, feature_groups=8)),
    ("8 a group", (64, 32, 14, 14), (32, 8, 3, 3), dict(PAD, feature_groups=4)),
    ("16 a group", (64, 32, 14, 14), (32, 16, 3, 3), dict(PAD, feature_groups=2)),
    ("14x14 32->32", (64, 32, 14, 14), (32, 32, 3, 3), PAD),
    ("14x14 32->4", (64, 32, 14, 14), (4, 32, 3, 3), PAD),
    ("14x14 32->8", (64, 32, 14, 14), (8, 32, 3, 3), PAD),
    ("4 a group N8", (8, 32, 14, 14), (32, 4, 3, 3), dict(PAD, feature_groups=8)),
    ("8 a group N8", (8, 32, 14, 14), (32, 8, 3, 3), dict(PAD, feature_groups=4)),
    ("16 a group N8", (8, 32, 14, 14), (32, 16, 3, 3), dict(PAD, feature_groups=2)),
    ("d kernel conv1", (1, 64, 8, 8), (16, 64, 8, 8), PAD),
    ("d kernel conv2", (16, 64, 4, 4), (32, 64, 4, 4), PAD),
]


def device_report(rounds, names=None, shapes=DEVICE_SHAPES):
    """Each shape's plan of one convolution, run on WebGPU with each path forced
    (``topos.compiler.wgsl.convolution.FORCED_PATH``), the paths interleaved over ``rounds`` rounds after
    one untimed run each; a JSON-able report with the adapter, the rule's choice and the median
    milliseconds a run (upload, launches, read-back) of each path. Runs natively (wgpu-py) and in the
    page (web/bench/convolution.html, through run_sync)."""
    import statistics

    import topos
    import topos.compiler.wgsl.convolution as paths
    from topos.compiler.wgsl.views import View

    rng = np.random.default_rng(0)
    rows = []
    for name, x_shape, w_shape, attrs in shapes:
        if names and name not in names:
            continue
        tape = Tape("float32")
        x, w = tape.input(rng.standard_normal(x_shape)), tape.parameter(rng.standard_normal(w_shape))
        y = tape.apply("Convolution", [x, w], **attrs)
        network = tape.seal()
        feeds = {detach(x): rng.standard_normal(x_shape).astype(np.float32)}
        expected = network.entry([detach(y)]).lower().run(network.parameters(), feeds).of(detach(y))
        chosen = paths.strategy(
            View.of_buffer(0, x_shape),
            w_shape,
            lookup("Convolution").normalize([Meta(x_shape, "float32"), Meta(w_shape, "float32")], dict(attrs)),
        )
        plans = {}
        try:
            for path in ("im2col", "direct"):
                paths.FORCED_PATH = path
                plans[path] = network.entry([detach(y)]).lower()
                plans[path].kernels()
                got = plans[path].run(network.parameters(), feeds, backend="webgpu").of(detach(y))
                error = float(np.max(np.abs(np.asarray(got, np.float64) - expected)))
                scale = float(np.max(np.abs(expected)))
                if not error <= 1e-4 * scale:
                    raise AssertionError(f"{name}, {path}: off numpy by {error} at scale {scale}")
        finally:
            paths.FORCED_PATH = None
        timings = {path: [] for path in plans}
        for round_ in range(rounds):
            order = list(plans) if round_ % 2 == 0 else list(plans)[::-1]
            for path in order:
                timings[path].append(timed(plans[path].run, network.parameters(), feeds, backend="webgpu"))
        medians = {path: statistics.median(values) for path, values in timings.items()}
        rows.append(
            dict(
                name=name,
                lhs=list(x_shape),
                rhs=list(w_shape),
                groups=attrs.get("feature_groups", 1),
                outputs=int(np.prod(y.shape)),
                terms=int(np.prod(w_shape[1:])),
                rule=chosen,
                im2col_ms=medians["im2col"],
                direct_ms=medians["direct"],
                im2col_all=timings["im2col"],
                direct_all=timings["direct"],
            )
        )
    return dict(adapter=topos.webgpu.adapter().name, rounds=rounds, rows=rows)


def describe_device(report):
    """The device report as lines of text."""
    lines = [
        f"WebGPU ({report['adapter']}): a plan of one convolution, each path forced, ms a run "
        f"(median of {report['rounds']}, interleaved)"
    ]
    for row in report["rows"]:
        faster = "im2col" if row["im2col_ms"] <= row["direct_ms"] else "direct"
        lines.append(
            f"  {row['name']:<15} {str(row['lhs']):<18} * {str(row['rhs']):<16} g{row['groups']:<3} "
            f"{row['outputs']:>8} outputs x {row['terms']:>5} terms | im2col {row['im2col_ms']:8.1f} "
            f"direct {row['direct_ms']:8.1f} | direct/im2col {row['direct_ms'] / row['im2col_ms']:5.2f} "
            f"| faster {faster:<6} rule {row['rule']}"
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--numpy", action="store_true", help="numpy against torch alone")
    parser.add_argument("--device", action="store_true", help="the WebGPU paths alone")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="the device report as JSON (with --device)")
    parser.add_argument("--shapes", help="comma-separated names of DEVICE_SHAPES rows to run")
    args = parser.parse_args()
    if not args.device:
        numpy_rows(args.rounds)
    if not args.numpy:
        report = device_report(args.rounds, args.shapes.split(",") if args.shapes else None)
        if args.json:
            print(json.dumps(report))
        else:
            print("\n".join(describe_device(report)))


if __name__ == "__main__":
    main()
