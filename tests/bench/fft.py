"""Benchmark: the Fourier transforms (Fft, Rfft, Irfft), n 16 to 512: the interpreter against numpy.fft, and WebGPU.

Each primitive's forward is what the interpreter runs for the node: numpy.fft on the
complex values rebuilt from the real/imaginary pairs (``topos.ops.fft``), then the pairs
of the result. numpy.fft on complex arrays is the floor, so the ratio is the price of
the pairs: two copies at the boundary. A batch of 64 transforms a size, float64; the
contenders run interleaved, so what else the machine does falls on all alike; the
medians are printed in microseconds with the ratio topos / numpy.

``--webgpu`` times the kernels of ``kernels/fft.wgsl`` instead: a float32 plan of one
transform of a batch of 64, run on WebGPU (natively through wgpu-py; on a machine with no
GPU that is lavapipe, Mesa's CPU rasteriser, so the numbers are for ratios, not for a GPU)
and by the interpreter (numpy.fft in float32), taking turns. Both runs read the result
back to the host and the operand stays where it is (a parameter, resident on the device),
so the WebGPU time is one submission, the kernel and one readback. The ratio is WebGPU /
interpreter, and the entry the kernels reading chose is printed beside it. Measured once
(2026-12-06, lavapipe on a shared 2-core machine, load about 3): 7.7 to 9.7 for fft, 8.2 to
14 for rfft and 8.6 to 18 for irfft from n = 16 to 512. A run's fixed cost (about 0.4 ms:
a submission and a readback) dominates at 16; from 128 on it is the kernel, which lavapipe
runs on the CPU at a fraction of pocketfft's speed, and Rfft and Irfft transform n complex
values where numpy's real transforms do half the work.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/fft.py
    .venv/bin/python tests/bench/fft.py --batch 16 --repeats 200
    .venv/bin/python tests/bench/fft.py --webgpu --repeats 30

Not part of the default test run.
"""

import argparse

import numpy as np
from interleaved import interleaved  # tests/bench, this script's folder, is on sys.path

import topos
from topos import Tape
from topos.ops import lookup


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--webgpu", action="store_true", help="the WGSL kernels against the interpreter")
    args = parser.parse_args()
    if args.webgpu:
        from topos.webgpu.device import adapter_description

        print(f"WebGPU adapter: {adapter_description()}")
        print(f"{'transform':<8} {'n':>4}  {'entry':<6} {'webgpu us':>10}  {'interp us':>10}  ratio")
    else:
        print(f"{'transform':<8} {'n':>4}  {'topos us':>9}  {'numpy us':>9}  ratio")
    for n in (16, 32, 64, 128, 256, 512):
        for row in (webgpu_bench if args.webgpu else bench)(n, args.batch, args.repeats):
            print(row)


def bench(n, batch, repeats):
    rng = np.random.default_rng(n)
    pairs = rng.standard_normal((batch, n, 2))
    values = pairs[..., 0] + 1j * pairs[..., 1]
    real = rng.standard_normal((batch, n))
    half = np.fft.rfft(real)
    half_pairs = np.stack([half.real, half.imag], -1)
    contenders = {
        "fft": (
            lambda: lookup("Fft").forward([pairs], {"inverse": False}),
            lambda: np.fft.fft(values),
        ),
        "rfft": (lambda: lookup("Rfft").forward([real], {}), lambda: np.fft.rfft(real)),
        "irfft": (lambda: lookup("Irfft").forward([half_pairs], {"n": n}), lambda: np.fft.irfft(half, n)),
    }
    rows = []
    for name, (ours, theirs) in contenders.items():
        topos_us, numpy_us = (seconds * 1e6 for seconds in interleaved([ours, theirs], repeats))
        rows.append(f"{name:<8} {n:>4}  {topos_us:>9.1f}  {numpy_us:>9.1f}  {topos_us / numpy_us:.2f}")
    return rows


def webgpu_bench(n, batch, repeats):
    rng = np.random.default_rng(n)
    transforms = {
        "fft": (topos.fft.fft, (batch, n, 2)),
        "rfft": (topos.fft.rfft, (batch, n)),
        "irfft": (lambda v: topos.fft.irfft(v, n), (batch, n // 2 + 1, 2)),
    }
    rows = []
    for name, (record, shape) in transforms.items():
        entry, contenders = webgpu_and_interpreter(record, rng.standard_normal(shape))
        webgpu_s, interpreter_s = interleaved(contenders, repeats)
        rows.append(
            f"{name:<8} {n:>4}  {entry:<6} {webgpu_s * 1e6:>10.1f}  {interpreter_s * 1e6:>10.1f}  "
            f"{webgpu_s / interpreter_s:.2f}"
        )
    return rows


def webgpu_and_interpreter(record, operand):
    """The entry the kernels reading chose for ``record`` of a float32 parameter, and two calls that
    run its plan on WebGPU and in the interpreter, each reading the result back."""
    tape = Tape("float32")
    out = record(tape.parameter(operand))
    network = tape.seal()
    plan = network.entry([out]).lower()
    parameters = network.parameters()
    (entry,) = [launch.entry for launch in plan.kernels().launches]
    return entry, [lambda: plan.run(parameters, backend="webgpu").of(out), lambda: plan.run(parameters).of(out)]


if __name__ == "__main__":
    main()
