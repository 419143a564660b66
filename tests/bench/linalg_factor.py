"""Benchmark: the factorisations' numpy forwards (Cholesky, TriangularSolve, Lu) against numpy and scipy, and
their WGSL kernels against the interpreter, n 16 to 512.

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
    .venv/bin/python tests/bench/linalg_factor.py --webgpu   # the kernels' table alone

The second table runs a float32 recording of each op (Cholesky of the batch; the triangular
solve against n right-hand sides) through ``plan.run`` on WebGPU and on the numpy interpreter,
both whole runs as a user's call makes them (the WebGPU one uploads the operands, dispatches
``kernels/linalg.wgsl`` and reads the result back). Past a kernel's largest size
(``topos.compiler.wgsl.linalg``: Cholesky 256, the solve 512) the kernels reading declines the node
and the row says so. WebGPU here is lavapipe, a CPU rasteriser sharing the machine's cores: its
ratios say how the kernels scale, not what a GPU does.

Measured on the shared two-core build machine (batch 4, medians of 5), topos / LAPACK:
Cholesky 0.9-2.5 at every size (numpy's own LAPACK call plus the symmetrising);
TriangularSolve 1.7 at n = 16 to 4.3 at n = 512 (n numpy steps against one dtrsm); Lu, blocked
by 32 columns as getrf (the trailing block one product), 5 to 26 (at n = 512 it was 32 unblocked:
each of its n steps then updated the whole trailing block in numpy). The machine is shared, so
the ratios move by a factor of about 2 from run to run.

The kernels (``--webgpu``, batch 4, medians of 5, lavapipe on the same shared machine at a load of
about 3.5 on its 2 cores), WebGPU / numpy interpreter: Cholesky 5.1, 7.3, 10.3, 2.1 and 4.8 at n =
16, 32, 64, 128 and 256 (one workgroup a matrix waits at a barrier a column; numpy's is one LAPACK
call), declined at 512; TriangularSolve (n right-hand sides) 2.0, 2.2, 4.4, 8.6, 23 and 13.6 at
n = 16 to 512 (one invocation a right-hand side walks n^2 / 2 multiply-adds alone, where numpy
takes a row of all of them a step). lavapipe is a CPU rasteriser: these say how the kernels scale
on a CPU, not what a GPU does.

Not part of the default test run.
"""

import argparse
import functools

import numpy as np
import scipy.linalg
from interleaved import interleaved  # tests/bench, this script's folder, is on sys.path

import topos
from topos import Tape
from topos.ops import lookup

SOLVE = {"left_side": True, "lower": True, "transpose_a": False, "unit_diagonal": False}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--webgpu", action="store_true", help="only the kernels against the interpreter")
    args = parser.parse_args()
    if not args.webgpu:
        print(f"{'op':<16} {'n':>4}  {'topos us':>10}  {'LAPACK us':>10}  ratio")
        for n in (16, 32, 64, 128, 256, 512):
            for row in bench(n, args.batch, args.repeats):
                print(row)
    print(f"\n{'op':<16} {'n':>4}  {'numpy us':>10}  {'WebGPU us':>10}  ratio WebGPU / numpy (float32)")
    for n in (16, 32, 64, 128, 256, 512):
        for row in bench_webgpu(n, args.batch, max(3, args.repeats // 4)):
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


def bench_webgpu(n, batch, repeats):
    """Each op as a float32 recording, run whole by the interpreter and on WebGPU, taking turns."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((batch, n, n)) / np.sqrt(n) + np.eye(n)
    spd = (a @ np.swapaxes(a, -1, -2)).astype(np.float32)
    lower = np.tril(a + 2 * np.eye(n)).astype(np.float32)
    b = rng.standard_normal((batch, n, n)).astype(np.float32)
    recordings = {
        "cholesky": lambda tape: topos.linalg.cholesky(tape.parameter(spd)),
        "triangular_solve": lambda tape: topos.linalg.triangular_solve(tape.parameter(lower), tape.parameter(b)),
    }
    rows = []
    for name, record in recordings.items():
        tape = Tape("float32")
        out = record(tape)
        network = tape.seal()
        plan = network.entry([out]).lower()
        reading = plan.kernels()
        if reading.declined:
            (reason,) = reading.declined.values()
            rows.append(f"{name:<16} {n:>4}  declined on WebGPU: {reason}")
            continue
        parameters = network.parameters()
        calls = [functools.partial(plan.run, parameters), functools.partial(plan.run, parameters, backend="webgpu")]
        numpy_us, webgpu_us = (seconds * 1e6 for seconds in interleaved(calls, repeats))
        rows.append(f"{name:<16} {n:>4}  {numpy_us:>10.1f}  {webgpu_us:>10.1f}  {webgpu_us / numpy_us:.2f}")
    return rows


if __name__ == "__main__":
    main()
