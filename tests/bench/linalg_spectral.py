"""Benchmark: the spectral factorisations' numpy forwards (Eigh, Svd, Qr) against numpy.linalg, n 16 to 512.

Each primitive's forward is what the interpreter runs for the node (``topos.ops.linalg_spectral``):
numpy.linalg's own LAPACK call (syevd, gesdd, geqrf and orgqr), then what topos adds to it: the
sign rule of the eigenvectors and singular vectors (an argmax a column, a gather, a product), the
non-finite check, and packing the results into one value. So the ratio topos / numpy is that
overhead alone. A batch of 4 square float64 matrices a size (symmetric for Eigh); the contenders
run interleaved, so what else the machine does falls on both alike; the medians are printed in
microseconds with the ratio topos / numpy.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/linalg_spectral.py
    .venv/bin/python tests/bench/linalg_spectral.py --batch 1 --repeats 5

Measured on the shared two-core build machine (OMP_NUM_THREADS=1, batch 4, medians of 5),
topos / numpy: Eigh 1.38 at n = 16 falling to 1.05-1.16 from n = 32 on, Svd 1.28 at 16 then
1.08-1.13, Qr 0.99-1.19 (it adds only the packing): the sign rule and packing cost a few percent
past n = 32. The machine is shared, so the ratios move by about 0.1 from run to run. Not yet
measured: in Pyodide (its numpy's LAPACK) and on WebGPU, which declines the three. Not part of
the default test run.
"""

import argparse

import numpy as np
from interleaved import interleaved  # tests/bench, this script's folder, is on sys.path

from topos.ops import lookup


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--largest", type=int, default=512)
    args = parser.parse_args()
    print(f"{'op':<6} {'n':>4}  {'topos us':>10}  {'numpy us':>10}  ratio")
    for n in (16, 32, 64, 128, 256, 512):
        if n <= args.largest:
            for row in bench(n, args.batch, args.repeats):
                print(row, flush=True)


def bench(n, batch, repeats):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((batch, n, n))
    symmetric = (a + np.swapaxes(a, -1, -2)) / 2
    contenders = {
        "eigh": (lambda: lookup("Eigh").forward([symmetric], {}), lambda: np.linalg.eigh(symmetric)),
        "svd": (lambda: lookup("Svd").forward([a], {}), lambda: np.linalg.svd(a, full_matrices=False)),
        "qr": (lambda: lookup("Qr").forward([a], {}), lambda: np.linalg.qr(a)),
    }
    rows = []
    for name, (ours, theirs) in contenders.items():
        topos_us, numpy_us = (seconds * 1e6 for seconds in interleaved([ours, theirs], repeats))
        rows.append(f"{name:<6} {n:>4}  {topos_us:>10.1f}  {numpy_us:>10.1f}  {topos_us / numpy_us:.2f}")
    return rows


if __name__ == "__main__":
    main()
