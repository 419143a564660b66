"""Benchmark: the Fourier transforms' numpy forwards (Fft, Rfft, Irfft) against numpy.fft itself, n 16 to 512.

Each primitive's forward is what the interpreter runs for the node: numpy.fft on the
complex values rebuilt from the real/imaginary pairs (``topos.ops.fft``), then the pairs
of the result. numpy.fft on complex arrays is the floor, so the ratio is the price of
the pairs: two copies at the boundary. A batch of 64 transforms a size, float64; the
contenders run interleaved, so what else the machine does falls on all alike; the
medians are printed in microseconds with the ratio topos / numpy.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/fft.py
    .venv/bin/python tests/bench/fft.py --batch 16 --repeats 200

Not part of the default test run.
"""

import argparse

import numpy as np
from interleaved import interleaved  # tests/bench, this script's folder, is on sys.path

from topos.ops import lookup


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args()
    print(f"{'transform':<8} {'n':>4}  {'topos us':>9}  {'numpy us':>9}  ratio")
    for n in (16, 32, 64, 128, 256, 512):
        for row in bench(n, args.batch, args.repeats):
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


if __name__ == "__main__":
    main()
