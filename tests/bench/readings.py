"""Benchmark: the compiler's readings of the gallery's transformer, stage by stage, in CPython.

For ``docs/examples/06_char_transformer.py`` at its own sizes: record the model
and its loss on a tape, seal it, lower a forward+backward plan (the gradient
of the loss with respect to every parameter), emit its StableHLO, and build the
plan's graph JSON. Each stage is timed over many repetitions and the medians
are printed, with the total (the playground redoes all of this as the user
types; the aim is 20 ms in CPython).

    .venv/bin/python tests/bench/readings.py              # medians of 30 repetitions
    .venv/bin/python tests/bench/readings.py --repeat 100
    .venv/bin/python tests/bench/readings.py --profile    # where the time goes, all stages together

Not part of the default test run.
"""

import argparse
import cProfile
import importlib.util
import io
import json
import os
import pstats
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "py"))

from topos import Graph, Tape, detach  # noqa: E402

STAGES = ("record", "seal", "lower", "emit", "graph")


def load_example():
    path = os.path.join(ROOT, "docs", "examples", "06_char_transformer.py")
    spec = importlib.util.spec_from_file_location("char_transformer_example", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def readings_once(example, config):
    """Every stage once; returns (seconds per stage, the plan, the HLO text, the graph JSON text)."""
    times = {}
    start = time.perf_counter()
    tape = Tape()
    values = example.build(tape, config)
    times["record"] = time.perf_counter() - start

    start = time.perf_counter()
    network = tape.seal()
    times["seal"] = time.perf_counter() - start

    loss = detach(values)[-1]
    start = time.perf_counter()
    plan = network.entry([loss]).backward(loss).lower()
    times["lower"] = time.perf_counter() - start

    start = time.perf_counter()
    text = plan.emit_stablehlo()
    times["emit"] = time.perf_counter() - start

    start = time.perf_counter()
    graph = json.dumps(Graph.from_plan(plan).to_json())
    times["graph"] = time.perf_counter() - start
    return times, plan, text, graph


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--profile", action="store_true")
    arguments = parser.parse_args()

    example = load_example()
    config = example.Config()
    times, plan, text, graph = readings_once(example, config)  # warm up imports and caches
    print(f"transformer: {plan.forward_count} recorded nodes; {plan.summary()}")
    print(plan.describe().splitlines()[-1])
    print(f"StableHLO: {len(text.splitlines())} lines, {len(text)} characters; graph JSON: {len(graph)} characters")

    if arguments.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(arguments.repeat):
            readings_once(example, config)
        profiler.disable()
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(25)
        print(stream.getvalue())
        return

    samples = {stage: [] for stage in STAGES}
    totals = []
    for _ in range(arguments.repeat):
        times, *_ = readings_once(example, config)
        for stage in STAGES:
            samples[stage].append(times[stage])
        totals.append(sum(times.values()))
    for stage in STAGES:
        print(f"{stage:<8}{statistics.median(samples[stage]) * 1e3:8.2f} ms")
    print(f"{'total':<8}{statistics.median(totals) * 1e3:8.2f} ms  (median of {arguments.repeat}; aim 20 ms)")


if __name__ == "__main__":
    main()
