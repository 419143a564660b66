"""Benchmark: the factorisations' numpy forwards (Cholesky, TriangularSolve, Lu) against numpy and scipy, n 16 to 512.

Each primitive's forward is what the interpreter runs for the node (``topos.ops.linalg_factor``):
Cholesky is numpy.linalg.cholesky of the symmetrised matrix; TriangularSolve and Lu are
substitutions written in numpy, one row (or column) a step, vectorised over the rest and the
batch, since numpy has neither (and Pyodide's numpy has no LAPACK behind scipy). The floor is
LAPACK: numpy.linalg.cholesky, scipy.linalg.solve_triangular and scipy.linalg.lu_factor, a
matrix at a time. A batch of 4 matrices a size, float64, one right-hand side column a row; the
contenders run interleaved, so what else the machine does falls on all alike; the medians are
printed in microseconds with the ratio topos / LAPACK.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/linalg_factor.py
    .venv/bin/python tests/bench/linalg_factor.py --batch 1 --repeats 5

Measured on the shared two-core build machine (batch 4, medians of 5), topos / LAPACK:
Cholesky 0.9-2.5 at every size (numpy's own LAPACK call plus the symmetrising);
TriangularSolve 1.7 at n = 16 to 4.3 at n = 512 (n numpy steps against one dtrsm); Lu, blocked
by 32 columns as getrf (the trailing block one product), 5 to 26 (at n = 512 it was 32 unblocked:
each of its n steps then updated the whole trailing block in numpy). The machine is shared, so
the ratios move by a factor of about 2 from run to run.

Not part of the default test run.
"""

import argparse

import numpy as np
import scipy.linalg
from interleaved import interleaved  # tests/bench, this script's folder, is on sys.path

from topos.ops import lookup

SOLVE = {"left_side": True, "lower": True, "transpose_a": False, "unit_diagonal": False}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"{'op':<16} {'n':>4}  {'topos us':>10}  {'LAPACK us':>10}  ratio")
    for n in (16, 32, 64, 128, 256, 512):
        for row in bench(n, args.batch, args.repeats):
            print(row)


def bench(n, batch, repeats):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((batch, n, n)) + n * np.eye(n)
    spd = a @ np.swapaxes(a, -1, -2)
    lower = np.tril(a)
    b = rng.standard_normal((batch, n, n))
    contenders = {
        "cholesky": (
            lambda: lookup("Cholesky").forward([spd], {}),
            lambda: np.linalg.cholesky(spd),
        ),
        "triangular_solve": (
            lambda: lookup("TriangularSolve").forward([lower, b], SOLVE),
            lambda: [scipy.linalg.solve_triangular(lower[i], b[i], lower=True) for i in range(batch)],
        ),
        "lu": (
            lambda: lookup("Lu").forward([a], {}),
            lambda: [scipy.linalg.lu_factor(a[i]) for i in range(batch)],
        ),
    }
    rows = []
    for name, (ours, theirs) in contenders.items():
        topos_us, lapack_us = (seconds * 1e6 for seconds in interleaved([ours, theirs], repeats))
        rows.append(f"{name:<16} {n:>4}  {topos_us:>10.1f}  {lapack_us:>10.1f}  {topos_us / lapack_us:.2f}")
    return rows


if __name__ == "__main__":
    main()
