// The linear-algebra and Fourier primitives in Pyodide 0.27.7 under Node, as the page runs them
// (numpy-in-Pyodide, the SIMD kernels and OpenBLAS loaded as the playground's workers load them:
// tests/pyodide/load.mjs): topos's interpreter against numpy-in-Pyodide, n 16 to 512, float64, the
// two taking turns (tests/bench/interleaved.py), medians in microseconds and the ratio topos / numpy.
//   - Eigh, Svd, Qr and Fft, Rfft, Irfft: the native benches' own code, run inside Pyodide
//     (tests/bench/linalg_spectral.py and fft.py, imported as they are: their bench(n, batch, repeats)
//     times each primitive's forward against numpy.linalg / numpy.fft);
//   - Cholesky, TriangularSolve and Lu: tests/bench/linalg_factor.py's inputs, but numpy for the
//     floor, since that bench's floor is scipy (solve_triangular, lu_factor), which the page does not
//     load. numpy has no triangular solve, so TriangularSolve is timed against numpy.linalg.solve of
//     the triangular matrix (which factors it again: the floor is generous to topos), and Lu against
//     numpy.linalg.solve too (getrf, then the substitutions topos leaves out: generous again), then
//     through topos.linalg.solve ("solve"): a recording of one Lu, the permutation's product and two
//     triangular solves, run by the interpreter (network.forward), against numpy.linalg.solve.
// Batches as natively: 4 matrices a size, 64 transforms. Fewer repeats at the larger sizes, where
// numpy-in-Pyodide's LAPACK (f2c'd, no BLAS behind it) takes a second for an Eigh of 4 x 512 x 512.
// Measured once on the shared two-core build machine (the defaults, 43 s in all), topos / numpy:
// Cholesky 1.5 at n = 16 to 1.1 at 512 (numpy's own call plus the symmetrising); TriangularSolve
// 5.0 at 16, 1.4 at 64, 0.46 at 512 (n numpy steps against numpy's LU of the matrix); Lu 31 at 16,
// 2.2 at 128, 0.57 at 512 and solve 35, 3.6 and 1.6 (the per-row steps of its panels cost most at
// small n, where numpy's call is tens of microseconds); Eigh 1.6 at 16 then 1.04-1.18, Svd 1.3 then
// 0.98-1.15, Qr 0.97-1.05 (as natively: the sign rule and packing on the same LAPACK call); Fft 1.8
// at 16 to 1.2 at 512, Rfft and Irfft 1.7 to 1.1 (the real/imaginary pairs). The machine is shared:
// the ratios are rough, a few tenths apart from run to run. Not part of any test run.
//
// Usage: node tests/bench/pyodide_linalg.mjs   LARGEST (default 512), REPEATS (a factor on each
//        size's repeats, default 1)

import { pyodideWithBlas } from "../pyodide/load.mjs";

const LARGEST = Number(process.env.LARGEST ?? 512);
const REPEATS = Number(process.env.REPEATS ?? 1);
const SIZES = [16, 32, 64, 128, 256, 512].filter((n) => n <= LARGEST);
// Repeats a size: the matrices' at 16 ... 512, and the transforms' (a batch of 64 is cheap at any n).
const MATRIX_REPEATS = { 16: 20, 32: 20, 64: 10, 128: 10, 256: 5, 512: 3 };
const TRANSFORM_REPEATS = { 16: 100, 32: 100, 64: 50, 128: 50, 256: 30, 512: 20 };

const { pyodide } = await pyodideWithBlas();
pyodide.runPython(`
import numpy as np
import fft  # tests/bench/fft.py, as natively
import linalg_spectral  # tests/bench/linalg_spectral.py, as natively
import topos
from interleaved import interleaved  # tests/bench/interleaved.py
from topos import Tape
from topos.ops import lookup

SOLVE = {"left_side": True, "lower": True, "transpose_a": False, "unit_diagonal": False}


def factor_bench(n, batch, repeats):
    """linalg_factor.bench's inputs and rows, with numpy-in-Pyodide for the floor (see above)."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((batch, n, n)) + n * np.eye(n)
    spd = a @ np.swapaxes(a, -1, -2)
    lower = np.tril(a)
    b = rng.standard_normal((batch, n, n))
    network, _ = Tape.record(lambda tape: [topos.linalg.solve(tape.input(a, name="a"), tape.input(b, name="b"))])
    parameters = network.parameters()
    contenders = {
        "cholesky": (lambda: lookup("Cholesky").forward([spd], {}), lambda: np.linalg.cholesky(spd)),
        "triangular_solve": (
            lambda: lookup("TriangularSolve").forward([lower, b], SOLVE),
            lambda: np.linalg.solve(lower, b),
        ),
        "lu": (lambda: lookup("Lu").forward([a], {}), lambda: np.linalg.solve(a, b)),
        "solve": (lambda: network.forward(parameters), lambda: np.linalg.solve(a, b)),
    }
    rows = []
    for name, (ours, theirs) in contenders.items():
        topos_us, numpy_us = (seconds * 1e6 for seconds in interleaved([ours, theirs], repeats))
        rows.append(f"{name:<16} {n:>4}  {topos_us:>10.1f}  {numpy_us:>10.1f}  {topos_us / numpy_us:.2f}")
    return rows
`);

const sections = [
  ["factor_bench", 4, MATRIX_REPEATS, `${"op".padEnd(16)} ${"n".padStart(4)}  ${"topos us".padStart(10)}  ${"numpy us".padStart(10)}  ratio`],
  ["linalg_spectral.bench", 4, MATRIX_REPEATS, `${"op".padEnd(6)} ${"n".padStart(4)}  ${"topos us".padStart(10)}  ${"numpy us".padStart(10)}  ratio`],
  ["fft.bench", 64, TRANSFORM_REPEATS, `${"transform".padEnd(8)} ${"n".padStart(4)}  ${"topos us".padStart(9)}  ${"numpy us".padStart(9)}  ratio`],
];
console.log("Pyodide 0.27.7 under Node, float64, medians of interleaved repeats; topos interpreter / numpy-in-Pyodide");
for (const [bench, batch, repeats, header] of sections) {
  console.log(`\n${bench} (batch ${batch})\n${header}`);
  for (const n of SIZES) {
    const count = Math.max(1, Math.round(repeats[n] * REPEATS));
    console.log(pyodide.runPython(`"\\n".join(${bench}(${n}, ${batch}, ${count}))`));
  }
}
