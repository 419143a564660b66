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
measured: in Pyodide (its numpy's LAPACK).

``--webgpu`` times instead a float32 plan of one Eigh node run on WebGPU (kernels/eigh.wgsl on
lavapipe, natively through wgpu-py: a run is the launch and the read-back, the parameter resident)
against the same plan on the interpreter (numpy's float32 syevd), n 16 to 64, the largest the
kernel takes; Qr and Svd have no kernel. lavapipe is a CPU rasteriser, so the ratio says what the
Jacobi kernel costs where a tab has no GPU, not what a GPU would do.

    .venv/bin/python tests/bench/linalg_spectral.py --webgpu --repeats 5

Measured once on the shared two-core build machine (lavapipe, batch 4, medians of 5), WebGPU /
interpreter: 8.3 at n = 16, 21 at 32, 35 at 48, 47 at 64 (3.1 ms against 0.38 ms, 98 ms against
2.1 ms): about seven sweeps of 63 rounds, each round's blocks waiting at three barriers, against LAPACK's
blocked divide and conquer on the host. The machine is shared, so these ratios are rough.
Not part of the default test run.
"""

import argparse

import numpy as np
from interleaved import interleaved  # tests/bench, this script's folder, is on sys.path

from topos import Tape
from topos.ops import lookup


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--largest", type=int, default=512)
    parser.add_argument("--webgpu", action="store_true", help="Eigh on WebGPU (lavapipe) against the interpreter")
    args = parser.parse_args()
    if args.webgpu:
        print(f"{'op':<6} {'n':>4}  {'webgpu us':>10}  {'interpreter us':>14}  ratio")
        for n in (16, 32, 48, 64):
            print(bench_webgpu(n, args.batch, args.repeats), flush=True)
        return
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


def bench_webgpu(n, batch, repeats):
    """One row: the medians of a float32 Eigh plan run on WebGPU and on the interpreter, taking turns."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((batch, n, n))
    symmetric = ((a + np.swapaxes(a, -1, -2)) / 2).astype(np.float32)
    tape = Tape("float32")
    node = tape.apply("Eigh", [tape.parameter(symmetric)])
    network = tape.seal()
    plan = network.entry([node]).lower()
    parameters = network.parameters()
    assert plan.run(parameters, {}, backend="webgpu").backends[node.index] == "webgpu", "Eigh ran on the host"
    device_us, host_us = (
        seconds * 1e6
        for seconds in interleaved(
            [lambda: plan.run(parameters, {}, backend="webgpu"), lambda: plan.run(parameters, {}, backend="numpy")],
            repeats,
        )
    )
    return f"{'eigh':<6} {n:>4}  {device_us:>10.1f}  {host_us:>14.1f}  {device_us / host_us:.2f}"


if __name__ == "__main__":
    main()
