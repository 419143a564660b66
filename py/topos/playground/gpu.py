"""The kernels pane's WebGPU section: the newest readings' kernel program run on WebGPU.

When the page's backend asks for WebGPU, the worker asks, after a run, for
``report_json(readings)``: the kernels reading's program runs through
``topos.webgpu``'s runner on the process's device (in the page, the browser's
WebGPU, reached through ``pyodide.ffi.run_sync``), each launch alone so that it
can be timed, and the value each launch finishes is read back and held against
the numpy interpreter's (the largest absolute difference), then each readable's.
``status_json()`` names the adapter for the page's backend picker, or says why
there is none.
"""

import json

import numpy as np

from ..compiler.wgsl.launch import Launch
from ..errors import ToposError
from ..ops import lookup
from ..webgpu import device as device_module
from ..webgpu.device import NoAdapterError
from ..webgpu.runner import default_runner


class NoReadingsError(ToposError, RuntimeError):
    """A WebGPU report before any run recorded a tape: there is no kernel program to run."""


def status():
    """The WebGPU adapter as the page names it: ``{available, fallback, reason, detail}``.

    ``detail`` names the adapter, or says why there is none; ``reason`` is that why in a word
    (``NoAdapterError.reason``), ``"fallback"`` for an adapter that ``backend="auto"`` leaves to
    numpy, and None where "auto" takes WebGPU.
    """
    try:
        adapter = device_module.adapter()
    except NoAdapterError as error:
        return {"available": False, "fallback": False, "reason": error.reason, "detail": str(error)}
    detail = f"{adapter.name} (software fallback)" if adapter.fallback else adapter.name
    reason = "fallback" if adapter.fallback else None
    return {"available": True, "fallback": adapter.fallback, "reason": reason, "detail": detail}


def status_json():
    return json.dumps(status())


class KernelsRun:
    """One run of a recording's kernel program on WebGPU, launch by launch, held against the interpreter.

    ``values`` holds what the program's uploads read (the interpreter's source values), and
    receives what its readbacks and host steps produce; ``expected`` is the interpreter's value
    of every node; ``launches`` gets one row a launch (``kernel``, ``nodes``, ``ms``, ``maxAbsDiff``).
    """

    def __init__(self, readings):
        self.plan = readings.plan()
        self.program = readings.kernels().program
        network = readings.network
        self.expected = network.forward(network.parameters(), {}).values()
        nodes = self.plan.nodes
        self.values = {i: self.expected[i] for i in self.plan.schedule if nodes[i].is_source}
        launches = [step for step in self.program.steps if isinstance(step, Launch)]
        # A launch finishes its nodes' value when no later launch covers the same nodes.
        self._finishing = {
            id(launch)
            for i, launch in enumerate(launches)
            if not any(later.nodes == launch.nodes for later in launches[i + 1 :])
        }
        self.launches = []

    def run(self, runner=None):
        (runner or default_runner()).run(self.program, self.values, self.host_step, self.trace)
        return self

    def host_step(self, key, values):
        """The interpreter computes node ``key`` from the host values, as the native runner's host does."""
        node = self.plan.nodes[key]
        with np.errstate(all="ignore"):
            return lookup(node.opcode).forward([values[j] for j in node.operands], node.attrs)

    def trace(self, launch, ms, read):
        difference = None
        out = dict(launch.views).get("out")
        if id(launch) in self._finishing and out is not None:
            difference = gap(read(out), self.expected[max(launch.nodes)])
        self.launches.append(
            {
                "kernel": f"{launch.kernel}:{launch.entry}",
                "nodes": list(launch.nodes),
                "ms": ms,
                "maxAbsDiff": difference,
            }
        )

    def outputs(self):
        """Each readable's largest |run - interpreter| once the whole program ran."""
        return [{"node": k, "maxAbsDiff": gap(self.values[k], self.expected[k])} for k in self.plan.outputs]


def report(readings):
    """The pane's ``WebGpuReport``: the launches' timings and differences, or why WebGPU did not run."""
    adapter = status()
    if not adapter["available"]:
        return {"ran": False, "detail": f"{adapter['detail']}; the numpy interpreter ran", "launches": []}
    try:
        run = KernelsRun(readings).run()
    except Exception as error:  # noqa: BLE001  (the pane says what failed; the readings stand)
        return {"ran": False, "detail": f"the kernels failed on WebGPU ({adapter['detail']}): {error}", "launches": []}
    return {"ran": True, "detail": adapter["detail"], "launches": run.launches, "outputs": run.outputs()}


def report_json(readings):
    return json.dumps(report(readings))


def gap(actual, expected):
    """Largest |actual - expected| (NaN against NaN is no difference); None when the sizes differ.

    An infinite difference (or NaN against a number) is the largest float, which JSON can carry.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.size != expected.size:
        return None
    actual = actual.reshape(expected.shape).astype(np.float64)
    expected = expected.astype(np.float64)
    same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    difference = np.where(same, 0.0, np.abs(actual - expected))
    largest = float(np.max(difference, initial=0.0))  # 0 for an empty array; NaN stays NaN
    return largest if np.isfinite(largest) else float(np.finfo(np.float64).max)
