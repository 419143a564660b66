"""The device check: topos's WebGPU kernels and training step on whatever GPU this machine has.

Prepared for a machine lent with a GPU (an NVIDIA H200, Vulkan through wgpu-py), and run
unchanged anywhere else: on a software adapter (lavapipe, the project's machines) or with
no adapter at all it runs what it can and says so. It prints

- the adapter (and ``nvidia-smi``'s name for the GPU, where there is one) and the CPU;
- the matrix product natively (wgpu-py), the kernel topos selects for square float32
  products, each result checked against a float64 product, in GFLOP/s against the GPU's
  published float32 peak (``PEAKS``) and against numpy's sgemm on one thread;
- the gallery transformer's training step (``tests/bench/train_webgpu.py``:
  ``DeviceTrainer`` against the numpy trainer on the same batches), its median step time,
  the ratio to numpy, how far the losses drift apart, and what a step asks of the device
  (dispatches, submits, read-backs); on a hardware GPU also a wider model (d 256);
- in headless Chromium, where node, playwright-core and Chromium are all here, the page's
  matrix product (``tests/bench/matmul_browser.mjs``) and training step
  (``tests/bench/browser_train.mjs``); otherwise why not.

    sh tests/bench/device_check.sh                 # the wrapper: GPU facts, then this file
    .venv/bin/python tests/bench/device_check.py --quick --json report.json
    .venv/bin/python tests/bench/device_check.py --no-browser

Not part of the default test run: timings belong here, never in tests.
"""

import os

# One BLAS thread for numpy, as tests/bench/train_webgpu.py (the examples target one core).
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: Published float32 peaks (non-tensor-core FP32, dense), matched against the adapter's and
#: nvidia-smi's names, most specific first. Sources, NVIDIA's own data sheets:
#: - H200 SXM: 67 TFLOP/s FP32; H200 NVL: 60 TFLOP/s. NVIDIA H200 Tensor Core GPU,
#:   https://www.nvidia.com/en-us/data-center/h200/ (the specifications table, "FP32").
#: - H100 SXM: 67 TFLOP/s FP32; H100 PCIe: 51 TFLOP/s. NVIDIA H100 Tensor Core GPU,
#:   https://www.nvidia.com/en-us/data-center/h100/ (the specifications table, "FP32").
#: - A100: 19.5 TFLOP/s FP32. NVIDIA A100 Tensor Core GPU data sheet,
#:   https://www.nvidia.com/en-us/data-center/a100/ ("FP32").
PEAKS = (
    ("H200 NVL", 60e12, "NVIDIA H200 NVL data sheet (nvidia.com/en-us/data-center/h200)"),
    ("H200", 67e12, "NVIDIA H200 SXM data sheet (nvidia.com/en-us/data-center/h200)"),
    ("H100 PCIe", 51e12, "NVIDIA H100 PCIe data sheet (nvidia.com/en-us/data-center/h100)"),
    ("H100", 67e12, "NVIDIA H100 SXM data sheet (nvidia.com/en-us/data-center/h100)"),
    ("A100", 19.5e12, "NVIDIA A100 data sheet (nvidia.com/en-us/data-center/a100)"),
)


def published_peak(*names):
    """``(flop/s, source, matched name)`` of the first ``PEAKS`` entry one of ``names`` contains, or None."""
    for key, peak, source in PEAKS:
        for name in names:
            if name and key.lower() in name.lower():
                return peak, source, key
    return None


# The machine -------------------------------------------------------------------------------------


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def nvidia_gpu():
    """nvidia-smi's name, driver and memory of the first GPU, or None without one."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
        line = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    return line[0] if line else None


def webgpu_adapter():
    """``(adapter, None)`` for the adapter wgpu-py finds, or ``(None, why not)``."""
    import topos

    try:
        return topos.webgpu.adapter(), None
    except topos.webgpu.NoAdapterError as error:
        return None, str(error)


# The matrix product ---------------------------------------------------------------------------------


def median_seconds(run, rounds):
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def matmul_native(sizes, rounds, target_seconds):
    """One row a square size (``matmul_size``)."""
    from topos.webgpu.runner import default_runner

    runner = default_runner()
    rng = np.random.default_rng(0)
    return [matmul_size(runner, rng, size, rounds, target_seconds) for size in sizes]


def matmul_size(runner, rng, size, rounds, target_seconds):
    """The selected kernel's GFLOP/s for [size, size] @ [size, size] (timed as a submission of repeated
    launches finished by a 4-byte read-back), its error against float64, and numpy's sgemm on one thread."""
    from topos.compiler.wgsl import launch as build
    from topos.webgpu import Buffer, Program, Readback, Upload, View

    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    launch = build.matmul(View.of_buffer(0, a.shape), View.of_buffer(1, b.shape), 2)
    buffers = (Buffer(0, a.size), Buffer(1, b.size), Buffer(2, size * size))
    uploads = (Upload("a", 0, constant=True), Upload("b", 1, constant=True))

    def program(repeats, read):
        return Program(buffers, uploads + (launch,) * repeats + (Readback("out", read),))

    def runs(program):
        return lambda: runner.run(program, {"a": a, "b": b})

    got = runs(program(1, View.of_buffer(2, (size, size))))()["out"]
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # The documented rule for a sum of k terms: 4 sqrt(k) 2^-24 sum(|terms|), plus 1e-5 relative.
    allowed = 4.0 * math.sqrt(size) * 2.0**-24 * (np.abs(a).astype(np.float64) @ np.abs(b)) + 1e-5 * np.abs(exact)
    worst = float((np.abs(got - exact) / allowed).max())
    one = View(2, 0, (1,), (1,))
    single = runs(program(1, one))
    single()  # compile and upload
    repeats = int(min(max(target_seconds / max(median_seconds(single, 3), 1e-6), 1), 256))
    timed = runs(program(repeats, one))
    timed()
    seconds = median_seconds(timed, rounds) / repeats
    numpy_seconds = median_seconds(lambda: a @ b, rounds)
    flops = 2.0 * size**3
    return {
        "size": size,
        "kernel": launch.entry,
        "repeats": repeats,
        "ms": 1e3 * seconds,
        "gflops": flops / seconds / 1e9,
        "numpy_gflops": flops / numpy_seconds / 1e9,
        "error_vs_allowed": worst,
        "correct": worst <= 1.0,
    }


# The training step ---------------------------------------------------------------------------------------


def training_steps(configs, steps, warmup):
    """``train_webgpu.measure`` for each (name, config overrides): numpy and DeviceTrainer on the same batches."""
    import train_webgpu

    example = train_webgpu.load_example()
    reports = []
    for name, overrides in configs:
        config = dataclasses.replace(example.Config(), **overrides)
        report = train_webgpu.measure(example, ("numpy", "webgpu"), steps, warmup, config=config)
        report["model"] = name
        reports.append(report)
    return reports


# In the page ----------------------------------------------------------------------------------------------


def browser_missing():
    """Why the in-page benchmarks cannot run here (a sentence), or None when node, playwright-core and Chromium are all here."""
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if shutil.which("node") is None:
        return "no node on the PATH"
    if not (ROOT / "node_modules" / "playwright-core").exists():
        return "no node_modules/playwright-core (run npm ci in the checkout)"
    if not Path(chromium).exists():
        return f"no Chromium at {chromium} (set CHROMIUM)"
    return None


def browser_benchmarks(timeout, software):
    """The page's matmul and training benchmarks (each builds the site with its bench pages): their last lines.
    The page's adapter is its own (SwiftShader where Chromium finds no GPU): the benchmarks name it."""
    sizes, steps = ("256", "3") if software else ("256,1024,2048", "10")
    runs = {
        "matmul": (["node", "tests/bench/matmul_browser.mjs"], {"SIZES": sizes, "ROUNDS": "3"}),
        "train": (["node", "tests/bench/browser_train.mjs"], {"STEPS": steps, "WARMUP": "2", "NATIVE_STEPS": "10"}),
    }
    results = {}
    for name, (command, extra) in runs.items():
        try:
            done = subprocess.run(
                command, cwd=ROOT, env={**os.environ, **extra}, capture_output=True, text=True, timeout=timeout
            )
            text = (done.stdout + done.stderr).strip().splitlines()
            results[name] = {"rc": done.returncode, "tail": text[-25:]}
        except subprocess.TimeoutExpired:
            results[name] = {"rc": None, "tail": [f"timed out after {timeout} s"]}
    return results


# The report ----------------------------------------------------------------------------------------------


def describe(report):
    rows = [f"CPU: {report['cpu']}", f"GPU (nvidia-smi): {report['nvidia'] or 'none found'}"]
    adapter = report["adapter"]
    if adapter is None:
        rows.append(f"WebGPU: no adapter ({report['no_adapter']}): nothing ran on a device")
        return "\n".join(rows)
    kind = "software (runs on the CPU): the rates are no GPU's" if adapter["software"] else "hardware"
    rows.append(f"WebGPU adapter: {adapter['name']} [{kind}]")
    peak = report["peak"]
    if peak:
        rows.append(f"published f32 peak: {peak['flops'] / 1e12:g} TFLOP/s ({peak['name']}: {peak['source']})")
    else:
        rows.append("published f32 peak: none known for this adapter (PEAKS lists the GPUs the check knows)")
    rows.append("matrix product, natively (wgpu-py), [n, n] @ [n, n] float32:")
    for row in report["matmul"]:
        share = f"  {100 * row['gflops'] * 1e9 / peak['flops']:6.2f}% of peak" if peak else ""
        verdict = "ok" if row["correct"] else "WRONG"
        rows.append(
            f"  n {row['size']:5d}  {row['kernel']:<14} {row['ms']:9.3f} ms  {row['gflops']:9.1f} GFLOP/s{share}"
            f"   numpy (1 thread) {row['numpy_gflops']:7.1f} GFLOP/s   error {row['error_vs_allowed']:.2f} of allowed {verdict}"
        )
    for train in report["training"]:
        rows.append(f"training step, {train['model']}, {train['steps']} timed steps after {train['warmup']}:")
        numpy_ms = train["backends"]["numpy"]["median_ms"]
        webgpu_ms = train["backends"]["webgpu"]["median_ms"]
        rows.append(
            f"  numpy {numpy_ms:9.2f} ms   webgpu {webgpu_ms:9.2f} ms   webgpu / numpy {webgpu_ms / numpy_ms:6.2f}"
        )
        counts = train.get("counts") or {}
        if counts:
            rows.append(
                f"  a step: {counts['dispatches']} dispatches, {counts['submits']} submit(s), "
                f"{counts['readbacks']} read-back(s)"
            )
        rows.append(f"  largest |loss difference| {train['largest_loss_difference']:.2e}")
    browser = report["browser"]
    if isinstance(browser, str):
        rows.append(f"in the page: not run ({browser})")
    else:
        for name, result in browser.items():
            rows.append(f"in the page, {name} (rc {result['rc']}):")
            rows.extend(f"  {line}" for line in result["tail"])
            if name == "matmul" and peak:
                rows.append(f"  (against the published f32 peak of {peak['flops'] / 1e9:.0f} GFLOP/s, {peak['name']})")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes, rounds and steps")
    parser.add_argument("--no-browser", action="store_true", help="skip the in-page benchmarks")
    parser.add_argument("--browser-timeout", type=int, default=300, help="seconds for each in-page benchmark")
    parser.add_argument("--json", help="also write the report as JSON to this path")
    options = parser.parse_args()
    adapter, no_adapter = webgpu_adapter()
    nvidia = nvidia_gpu()
    report = {"cpu": cpu_model(), "nvidia": nvidia, "adapter": None, "no_adapter": no_adapter}
    report.update({"peak": None, "matmul": [], "training": [], "browser": "no WebGPU adapter natively"})
    if adapter is not None:
        report["adapter"] = {"name": adapter.name, "software": adapter.software}
        peak = None if adapter.software else published_peak(adapter.name, nvidia)
        if peak:
            report["peak"] = {"flops": peak[0], "source": peak[1], "name": peak[2]}
        if adapter.software:  # a CPU adapter: small sizes, so that the check stays quick
            sizes, rounds, target = ((128, 256) if options.quick else (128, 256, 512)), 3, 0.05
            configs = [("gallery transformer (d 32)", {})]
            steps, warmup = (3, 2) if options.quick else (10, 2)
        else:
            sizes = (256, 1024, 2048) if options.quick else (256, 1024, 2048, 4096)
            rounds, target = (3, 0.1) if options.quick else (5, 0.25)
            configs = [("gallery transformer (d 32)", {}), ("wider (d 256, context 64, batch 32)", {})]
            configs[1] = (configs[1][0], {"embed": 256, "context": 64, "batch": 32})
            steps, warmup = (10, 3) if options.quick else (30, 3)
        report["matmul"] = matmul_native(sizes, rounds, target)
        report["training"] = training_steps(configs, steps, warmup)
        missing = "--no-browser" if options.no_browser else browser_missing()
        report["browser"] = missing if missing else browser_benchmarks(options.browser_timeout, adapter.software)
    print(describe(report))
    if options.json:
        Path(options.json).write_text(json.dumps(report, indent=1))
    if any(not row["correct"] for row in report["matmul"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
