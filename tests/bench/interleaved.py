"""Median seconds of each of several calls, timed taking turns (the Pyodide micro-benchmarks
tests/bench/pyodide_matmul.mjs and pyodide_call_overhead.mjs, where tests/bench is on sys.path):
whatever else the machine does falls on all of them alike."""

import statistics
import time


def interleaved(functions, repeats):
    """Each function called once untimed, then ``repeats`` rounds of one timed call each, in turn."""
    for function in functions:
        function()
    times = [[] for _ in functions]
    for _ in range(repeats):
        for function, found in zip(functions, times):
            started = time.perf_counter()
            function()
            found.append(time.perf_counter() - started)
    return [statistics.median(found) for found in times]
