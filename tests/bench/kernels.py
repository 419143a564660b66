"""Benchmark: the WGSL kernels through wgpu-py, each against the simplest correct kernel.

    .venv/bin/python tests/bench/kernels.py            # the full table
    .venv/bin/python tests/bench/kernels.py --quick    # smaller sizes, fewer repeats
    .venv/bin/python tests/bench/kernels.py --matmul   # the matrix product rows alone
    .venv/bin/python tests/bench/kernels.py --scatter  # ScatterAdd's sorted form against its gather form

Rows: matrix products (GFLOP/s) for square sizes 64 to 1024, for shapes on both
sides of the kernel selection's rule (launch.matmul_strategy) and for the shapes
of the gallery's transformer (docs/examples/06_char_transformer.py), elementwise
ops and reductions (GB/s: bytes read and written once), and the fused softmax
and layer norm rows. Each row times the kernel topos selects and the simplest
correct kernel for the same work:

- matmul: the register-blocked tiled kernel vs one invocation per output;
- elementwise: the contiguous fast path vs decoding every index through strides;
- reductions: a workgroup per output (two passes for a long sum) vs one
  invocation per output folding its terms in order;
- softmax and layer norm: one fused launch per row vs the unfused launches
  (reductions and elementwise ops) that the recorded graph holds.

A timing is the median over rounds of a command buffer with the launch repeated,
finished by a 4-byte readback (wgpu-py 0.32's on_submitted_work_done_sync is
broken, and a readback waits for the queue). The results of both kernels are
checked against each other. On lavapipe (a CPU) the numbers are for ratios, not
for comparison with a GPU. Not part of the default test run.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py"))

from topos.compiler.wgsl import launch as build  # noqa: E402
from topos.compiler.wgsl import scatter  # noqa: E402
from topos.webgpu import Buffer, Program, Readback, Upload, View  # noqa: E402
from topos.webgpu.device import adapter_description  # noqa: E402
from topos.webgpu.runner import default_runner  # noqa: E402

rng = np.random.default_rng(0)


class Bench:
    """Runs launches on buffers filled from host arrays, times them, reads results back."""

    def __init__(self, arrays, sizes, repeats, rounds):
        self.runner = default_runner()
        self.arrays = arrays
        self.sizes = sizes
        self.repeats = repeats
        self.rounds = rounds

    def program(self, launches, repeats, read):
        buffers = [Buffer(i, a.size, "int32" if a.dtype.kind == "i" else "float32") for i, a in self.arrays.items()]
        buffers += [Buffer(i, n) for i, n in self.sizes.items()]
        uploads = [Upload(("in", i), i, b.dtype, constant=True) for i, b in zip(self.arrays, buffers)]
        return Program(tuple(buffers), tuple(uploads) + tuple(launches) * repeats + (Readback("out", read),))

    def values(self):
        return {("in", i): a for i, a in self.arrays.items()}

    def time(self, launches, out):
        """Seconds per pass of ``launches`` (median), and the output they leave in view ``out``."""
        first = self.program(launches, 1, out)
        result = self.runner.run(first, self.values())["out"]
        timed = self.program(launches, self.repeats, View(out.buffer, 0, (1,), (1,)))
        self.runner.run(timed, self.values())  # compile, upload, warm up
        samples = []
        for _ in range(self.rounds):
            start = time.perf_counter()
            self.runner.run(timed, self.values())
            samples.append((time.perf_counter() - start) / self.repeats)
        return statistics.median(samples), result

    def time_interleaved(self, contenders, out):
        """``time`` for several launch lists at once, their rounds taken in turn so that a change
        in the machine's load falls on all of them: {name: (seconds per pass, output)}."""
        results, timed = {}, {}
        for name, launches in contenders.items():
            results[name] = self.runner.run(self.program(launches, 1, out), self.values())["out"]
            timed[name] = self.program(launches, self.repeats, View(out.buffer, 0, (1,), (1,)))
            self.runner.run(timed[name], self.values())  # compile, upload, warm up
        samples = {name: [] for name in contenders}
        for round_ in range(self.rounds):
            names = list(contenders) if round_ % 2 == 0 else list(reversed(contenders))
            for name in names:
                start = time.perf_counter()
                self.runner.run(timed[name], self.values())
                samples[name].append((time.perf_counter() - start) / self.repeats)
        return {name: (statistics.median(samples[name]), results[name]) for name in contenders}


def row(table, name, unit, amount, selected, simplest, selected_name, simplest_name):
    fast = amount / selected / 1e9
    slow = amount / simplest / 1e9
    table.append(
        (name, selected_name, f"{fast:8.2f}", simplest_name, f"{slow:8.2f}", unit, f"{simplest / selected:6.2f}x")
    )


def check(a, b, what, tolerance=1e-4):
    scale = max(float(np.abs(b).max()), 1e-6)
    error = float(np.abs(a - b).max())
    if error > tolerance * scale:
        raise AssertionError(f"{what}: the two kernels disagree by {error:.3g} at scale {scale:.3g}")


def matmul_rows(table, shapes, repeats, rounds):
    for name, batch, m, k, n in shapes:
        a = rng.normal(size=batch + (m, k)).astype(np.float32)
        b = rng.normal(size=batch + (k, n)).astype(np.float32)
        count = int(np.prod(batch, dtype=int)) * m * n
        bench = Bench({0: a, 1: b}, {2: count}, repeats, rounds)
        out = View.of_buffer(2, batch + (m, n))
        contenders = {
            strategy: [build.matmul(View.of_buffer(0, a.shape), View.of_buffer(1, b.shape), 2, strategy=strategy)]
            for strategy in ("tiled", "simple")
        }
        measured = bench.time_interleaved(contenders, out)
        timings = {strategy: seconds for strategy, (seconds, _) in measured.items()}
        results = {strategy: result for strategy, (_, result) in measured.items()}
        check(results["tiled"], results["simple"], name)
        selected = build.matmul_strategy(count // (m * n), m, n, k)
        other = "simple" if selected == "tiled" else "tiled"
        flops = 2.0 * count * k
        row(table, name, "GFLOP/s", flops, timings[selected], timings["simple"], selected, "simple")
        if selected == "simple":
            table[-1] = table[-1][:6] + (f"{timings[other] / timings[selected]:6.2f}x vs tiled",)


def elementwise_rows(table, sizes, repeats, rounds):
    for n in sizes:
        x = rng.normal(size=n).astype(np.float32)
        y = rng.normal(size=n).astype(np.float32)
        bench = Bench({0: x, 1: y}, {2: n}, repeats, rounds)
        out = View.of_buffer(2, (n,))
        fast = build.elementwise("x + y", 2, (n,), [View.of_buffer(0, (n,)), View.of_buffer(1, (n,))])
        # The same work with every index decoded through the operands' strides.
        slow = build.elementwise(
            "x + y", 2, (n,), [View.of_buffer(0, (n,)), View.of_buffer(1, (n,))], always_strided=True
        )
        t_fast, r_fast = bench.time([fast], out)
        t_slow, r_slow = bench.time([slow], out)
        check(r_fast, r_slow, f"add {n}")
        row(table, f"add [{n}]", "GB/s", 12.0 * n, t_fast, t_slow, "contiguous", "strided")
        gelu = build.elementwise("gelu(x)", 2, (n,), [View.of_buffer(0, (n,))])
        t_gelu, _ = bench.time([gelu], out)
        table.append((f"gelu [{n}]", "contiguous", f"{8.0 * n / t_gelu / 1e9:8.2f}", "", "", "GB/s", ""))


def reduction_rows(table, shapes, repeats, rounds):
    for name, shape, axes in shapes:
        x = rng.normal(size=shape).astype(np.float32)
        kept = tuple(e for a, e in enumerate(shape) if a not in axes)
        outputs = int(np.prod(kept, dtype=int))
        bench = Bench({0: x}, {2: outputs, 3: outputs * 1024}, repeats, rounds)
        out = View.of_buffer(2, kept)
        terms = x.size // outputs
        selected = build.reduction_strategy(outputs, terms)
        # The simplest kernel folds each output's terms in one invocation; past lavapipe's loop
        # limit that is not correct there, and one workgroup per output is the simplest that is.
        simplest = "serial" if terms <= build.LOOP_LIMIT else "workgroup"
        launches = {}
        for strategy in {selected, simplest}:
            launches[strategy] = build.reduce(
                "Sum", View.of_buffer(0, shape), axes, 2, allocate=lambda e: 3, strategy=strategy
            )
        t_selected, r_selected = bench.time(launches[selected], out)
        t_simplest, r_simplest = bench.time(launches[simplest], out)
        check(r_selected, r_simplest, name)
        row(table, name, "GB/s", 4.0 * (x.size + outputs), t_selected, t_simplest, selected, simplest)


def rows_fused(table, shapes, repeats, rounds):
    for rows_, length in shapes:
        x = rng.normal(size=(rows_, length)).astype(np.float32)
        n = x.size
        bench = Bench({0: x}, {2: n, 3: rows_, 4: n, 5: rows_}, repeats, rounds)
        source = View.of_buffer(0, x.shape)
        out = View.of_buffer(2, x.shape)
        fused = build.softmax(source, 2)
        column = View.of_buffer(3, (rows_, 1)).broadcast(x.shape)
        total = View.of_buffer(5, (rows_, 1)).broadcast(x.shape)
        unfused = (
            build.reduce("Max", source, (1,), 3, allocate=lambda e: 6)
            + [build.elementwise("exp(x - y)", 4, x.shape, [source, column])]
            + build.reduce("Sum", View.of_buffer(4, x.shape), (1,), 5, allocate=lambda e: 6)
            + [build.elementwise("x / y", 2, x.shape, [View.of_buffer(4, x.shape), total])]
        )
        bench.sizes[6] = rows_ * 64
        t_fused, r_fused = bench.time([fused], out)
        t_unfused, r_unfused = bench.time(unfused, out)
        check(r_fused, r_unfused, "softmax")
        row(table, f"softmax [{rows_}, {length}]", "GB/s", 8.0 * n, t_fused, t_unfused, "fused", "unfused")


def scatter_rows(table, shapes, repeats, rounds):
    """ScatterAdd's sorted form against its gather form (both numpy's bits: checked equal), in updates a second."""
    for extent, count, inner in shapes:
        updates = rng.normal(size=(count, inner)).astype(np.float32)
        indices = rng.integers(0, extent, size=count).astype(np.int32)
        scratch = iter((10, 11))
        bench = Bench({0: updates, 1: indices}, {2: extent * inner, 10: count * 2 + 1, 11: extent + 1}, repeats, rounds)
        out = View.of_buffer(2, (extent, inner))
        contenders = {
            strategy: scatter.scatter_add(
                View.of_buffer(0, updates.shape),
                View.of_buffer(1, indices.shape),
                0,
                extent,
                2,
                strategy=strategy,
                allocate=lambda elements, dtype, scratch=scratch: next(scratch),
            )
            for strategy in ("sorted", "gather")
        }
        measured = bench.time_interleaved(contenders, out)
        if not np.array_equal(measured["sorted"][1], measured["gather"][1]):
            raise AssertionError(f"scatter [{extent}, {inner}] x {count}: the two forms disagree")
        selected = scatter.scatter_strategy(extent, count, inner)
        name = f"scatter_add [{extent}, {inner}] x {count}"
        seconds = {strategy: t for strategy, (t, _) in measured.items()}
        other = "gather" if selected == "sorted" else "sorted"
        # Updates added a second, in millions (row() divides by 1e9).
        row(table, name, "Mupd/s", 1e3 * count * inner, seconds[selected], seconds[other], selected, other)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    parser.add_argument("--matmul", action="store_true", help="only the matrix product rows")
    parser.add_argument("--scatter", action="store_true", help="only the ScatterAdd rows")
    options = parser.parse_args()
    repeats, rounds = (3, 3) if options.quick else (5, 5)
    squares = (64, 128, 256) if options.quick else (64, 128, 256, 512, 1024)
    transformer = [
        ("qkv [256, 32] @ [32, 96]", (), 256, 32, 96),
        ("scores [16, 4, 16, 8] @ [.., 8, 16]", (16, 4), 16, 8, 16),
        ("attend [16, 4, 16, 16] @ [.., 16, 8]", (16, 4), 16, 16, 8),
        ("mlp in [256, 32] @ [32, 128]", (), 256, 32, 128),
        ("mlp out [256, 128] @ [128, 32]", (), 256, 128, 32),
        ("head [256, 32] @ [32, 38]", (), 256, 32, 38),
    ]
    # Either side of the selection rule: 16 blocks of 8 x 8 in the output or a contraction of 256,
    # the blocks filled at least half.
    rule = [
        ("matmul 24x24x24", (), 24, 24, 24),
        ("matmul 32x32x32", (), 32, 32, 32),
        ("matmul 48x48x48", (), 48, 48, 48),
        ("matmul 65x65x65", (), 65, 65, 65),
        ("matmul [16, 64] @ [64, 16]", (), 16, 64, 16),
        ("matmul [16, 256] @ [256, 16]", (), 16, 256, 16),
        ("matmul [1, 512] @ [512, 512]", (), 1, 512, 512),
        ("matmul [8, 512] @ [512, 512]", (), 8, 512, 512),
        ("matmul [40, 512] @ [512, 40]", (), 40, 512, 40),
        ("matmul [256, 8] @ [8, 256]", (), 256, 8, 256),
    ]
    matmuls = [(f"matmul {s}x{s}x{s}", (), s, s, s) for s in squares] + rule + transformer
    table = []
    if options.scatter:
        scatter_rows(table, [(40, 256, 32), (256, 256, 32), (1024, 1024, 64), (4096, 1024, 64)], repeats, rounds)
        print_table(table)
        return
    matmul_rows(table, matmuls, repeats, rounds)
    if options.matmul:
        print_table(table)
        return
    elementwise_rows(table, (1 << 16, 1 << 20) if options.quick else (1 << 16, 1 << 20, 1 << 22), repeats, rounds)
    reductions = [
        ("sum [1048576] -> []", (1 << 20,), (0,)),
        ("sum [1024, 1024] rows", (1024, 1024), (1,)),
        ("sum [1024, 1024] columns", (1024, 1024), (0,)),
        ("sum [65536, 16] rows", (65536, 16), (1,)),
    ]
    reduction_rows(table, reductions[:2] if options.quick else reductions, repeats, rounds)
    rows_fused(table, [(256, 38), (1024, 1024)] if not options.quick else [(256, 38)], repeats, rounds)

    print_table(table)


def print_table(table):
    print(f"adapter: {adapter_description()}")
    header = ("work", "selected", "rate", "simplest", "rate", "unit", "speed-up")
    widths = [max(len(str(r[i])) for r in table + [header]) for i in range(len(header))]
    for line in [header] + table:
        print(
            "  ".join(
                str(cell).rjust(w) if i in (2, 4, 6) else str(cell).ljust(w)
                for i, (cell, w) in enumerate(zip(line, widths))
            )
        )


if __name__ == "__main__":
    main()
