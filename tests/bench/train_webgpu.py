"""Benchmark: the gallery transformer's training step on numpy and on WebGPU, the same run.

The model is ``docs/examples/06_char_transformer.py`` at its own sizes, float32
(the one precision of the WGSL kernels), trained by the example's own trainers
(``make_trainer``): ``"numpy"`` runs the network and Adam on the host,
``"webgpu"`` is ``topos.webgpu.DeviceTrainer``, whose parameters stay on the
device. Both start from the same parameters and read the same batches, step for
step interleaved so that whatever else the machine does falls on both alike. A
step is one ``trainer.step(feeds)`` and reading its loss. The medians, their
ratio and how far the two runs' losses drift apart are printed.

Natively the WebGPU side is wgpu-py, on whatever adapter it finds (lavapipe, a
CPU, on the project's machines):

    .venv/bin/python tests/bench/train_webgpu.py
    .venv/bin/python tests/bench/train_webgpu.py --steps 40 --warmup 3

In the page the same ``measure`` runs inside Pyodide, on numpy-in-Pyodide and on
the browser's WebGPU: ``node tests/bench/browser_train.mjs`` (it loads this file
into the page and prints the four figures side by side). Keep this file free of
anything Pyodide lacks (no torch, no threads). Not part of the default test run.
"""

import os

# One BLAS thread for numpy (the examples target one core, and Pyodide has no threads).
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(ROOT, "docs", "examples", "06_char_transformer.py")


def load_example(source=None):
    """The gallery transformer as a module (its training does not run: it is not ``__main__``).

    ``source`` is the script's text, which the page hands over; natively it is read from docs/examples/.
    """
    if source is None:
        with open(EXAMPLE, encoding="utf-8") as file:
            source = file.read()
    module = types.ModuleType("char_transformer_bench")
    module.__file__ = EXAMPLE
    sys.modules[module.__name__] = module  # the example's dataclass looks its module up here
    exec(compile(source, EXAMPLE, "exec"), module.__dict__)
    return module


# The numpy trainers that do without some of topos.pyodide.blas's kernels, and which.
SUSPENDED = {"numpy-no-blas": ("simd", "openblas"), "numpy-openblas": ("simd",)}


def measure(example, backends=("numpy", "webgpu"), steps=30, warmup=3, config=None):
    """Train one float32 model per backend on the same batches; returns a JSON-able report.

    ``config`` replaces the example's own ``Config()`` (a wider model, say: tests/bench/device_check.py).
    The report's ``"counts"`` holds what a WebGPU step asked of the device (``DeviceTrainer.counts()``).

    ``{"adapter": ..., "steps": n, "backends": {name: {"median_ms", "mean_ms", "times_ms", "losses"}},
    "largest_loss_difference": ...}``; the times and losses cover the timed steps only. Where no
    WebGPU device can be had, numpy runs alone and ``"webgpu_refused"`` says why.
    """
    import topos
    from topos import Tape
    from topos.model import optim

    refusal = None
    if "webgpu" in backends:
        try:
            adapter = topos.webgpu.adapter().name
        except topos.webgpu.NoAdapterError as error:  # no device here: time numpy alone, and say why
            refusal = str(error)
            backends = tuple(backend for backend in backends if backend != "webgpu")
    from topos.pyodide import blas

    config = config if config is not None else example.Config()
    trainers = {}
    for backend in backends:
        network, (tokens, targets, _, loss) = Tape.record(lambda tape: example.build(tape, config), dtype="float32")
        optimizer = optim.Adam(lr=config.learning_rate)
        # "numpy-no-blas": the numpy trainer with products kept in numpy even where the page
        # installed kernels (topos.pyodide.blas); "numpy-openblas": with OpenBLAS but not the SIMD
        # kernels. Natively both are the numpy trainer.
        kind = "numpy" if backend in SUSPENDED else backend
        trainer = example.make_trainer(kind, network, loss, network.parameters(), optimizer)
        trainers[backend] = (trainer, tokens, targets, loss)
    times = {backend: [] for backend in backends}
    losses = {backend: [] for backend in backends}
    rng = np.random.default_rng(config.seed + 1)
    for step in range(warmup + steps):
        inputs, expected = example.sample_windows(rng, config)
        for backend, (trainer, tokens, targets, loss) in trainers.items():
            with blas.suspended(SUSPENDED[backend]) if backend in SUSPENDED else contextlib.nullcontext():
                started = time.perf_counter()
                value = trainer.step({tokens: inputs, targets: expected}).of(loss).scalar()
                seconds = time.perf_counter() - started
            if step >= warmup:
                times[backend].append(seconds * 1e3)
                losses[backend].append(float(value))
    counts = None
    if "webgpu" in trainers and hasattr(trainers["webgpu"][0], "counts"):
        counts = trainers["webgpu"][0].counts()
    report = {
        "adapter": adapter if "webgpu" in backends else None,
        "counts": counts,
        "webgpu_refused": refusal,
        "steps": steps,
        "warmup": warmup,
        "backends": {
            backend: {
                "median_ms": statistics.median(times[backend]),
                "mean_ms": statistics.fmean(times[backend]),
                "times_ms": times[backend],
                "losses": losses[backend],
            }
            for backend in backends
        },
    }
    if "numpy" in backends and "webgpu" in backends:
        first, second = losses["numpy"], losses["webgpu"]
        report["largest_loss_difference"] = max(abs(a - b) for a, b in zip(first, second))
    return report


def step_runner(example, backend="numpy"):
    """``run(steps)``: train one float32 model ``steps`` more steps on fresh batches (for timing
    chunks of steps by CPU time: tests/bench/pyodide_train.mjs)."""
    from topos import Tape
    from topos.model import optim

    config = example.Config()
    network, (tokens, targets, _, loss) = Tape.record(lambda tape: example.build(tape, config), dtype="float32")
    trainer = example.make_trainer(backend, network, loss, network.parameters(), optim.Adam(lr=config.learning_rate))
    rng = np.random.default_rng(config.seed + 1)

    def run(steps):
        for _ in range(steps):
            inputs, expected = example.sample_windows(rng, config)
            trainer.step({tokens: inputs, targets: expected}).of(loss).scalar()

    return run


def cpu_per_step(run, chunks, steps):
    """Median CPU seconds a step over ``chunks`` chunks of ``steps`` steps (natively; one thread)."""
    times = []
    for _ in range(chunks):
        started = time.process_time()
        run(steps)
        times.append((time.process_time() - started) / steps)
    return statistics.median(times)


def describe(report, where):
    """The report as lines of text; ``where`` names the place ("natively", "in the page")."""
    rows = [f"gallery transformer, float32, {report['steps']} timed steps after {report['warmup']}, {where}"]
    if report["adapter"]:
        rows.append(f"  WebGPU adapter: {report['adapter']}")
    if report["webgpu_refused"]:
        rows.append(f"  WebGPU did not run: {report['webgpu_refused']}")
    if report.get("counts"):
        counts = report["counts"]
        rows.append(
            f"  a WebGPU step: {counts['dispatches']} dispatches, {counts['submits']} submit(s), "
            f"{counts['readbacks']} read-back(s), {counts['uploaded_bytes']} bytes up, {counts['read_bytes']} down"
        )
    for backend, result in report["backends"].items():
        rows.append(
            f"  {backend:<13} median step {result['median_ms']:9.2f} ms   (mean {result['mean_ms']:.2f}; "
            f"loss {result['losses'][0]:.4f} -> {result['losses'][-1]:.4f})"
        )
    medians = [result["median_ms"] for result in report["backends"].values()]
    names = list(report["backends"])
    for name, median in zip(names[1:], medians[1:]):
        rows.append(f"  ratio {name} / {names[0]}: {median / medians[0]:.2f}")
    if "largest_loss_difference" in report:
        rows.append(f"  largest |loss difference| over the timed steps: {report['largest_loss_difference']:.2e}")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps for each backend")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (pipelines compile in the first)")
    parser.add_argument(
        "--backend",
        action="append",
        choices=("numpy", "numpy-openblas", "numpy-no-blas", "webgpu"),
        help="run only these (default: numpy, webgpu)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON (browser_train.mjs reads it)")
    arguments = parser.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "py"))
    example = load_example()
    backends = tuple(arguments.backend or ("numpy", "webgpu"))
    report = measure(example, backends, arguments.steps, arguments.warmup)
    print(json.dumps(report) if arguments.json else describe(report, "natively"))


if __name__ == "__main__":
    main()
