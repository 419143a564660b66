"""The playground's WebGPU bridge: the host side of running a kernel program in the browser.

The worker executes the kernel program of the newest readings on the browser's
WebGPU, step by step, as ``topos.webgpu.runner`` does natively. Python holds the
host side: the values uploads read, readbacks write and host steps compute, and
the interpreter's values that each launch is compared against.
``topos.playground.gpu_bridge()`` hands one out for the newest readings.
"""

import json

from ..errors import ArgumentTypeError, ToposError


class NoReadingsError(ToposError, RuntimeError):
    """``gpu_bridge()`` before a run that recorded a tape: there is no kernel program to run."""


def view_json(view):
    if view is None:
        return None
    return {
        "buffer": view.buffer,
        "offset": view.offset,
        "shape": list(view.shape),
        "strides": list(view.strides),
        "constant": view.constant,
    }


def step_json(step):
    from ..compiler.wgsl.launch import Launch
    from ..compiler.wgsl.program import HostStep, Readback, Upload, ViewStep

    if isinstance(step, Launch):
        return {
            "type": "launch",
            "kernel": step.kernel,
            "entry": step.entry,
            "specialisation": dict(step.specialisation),
            "workgroups": list(step.workgroups),
            "bindings": [{"index": b.index, "buffer": b.buffer, "access": b.access} for b in step.bindings],
            "params": list(step.params),
            "nodes": list(step.nodes),
            "out": view_json(dict(step.views).get("out")),
        }
    if isinstance(step, Upload):
        return {"type": "upload", "key": step.key, "buffer": step.buffer, "dtype": step.dtype}
    if isinstance(step, Readback):
        return {"type": "readback", "key": step.key, "view": view_json(step.view), "dtype": step.dtype}
    if isinstance(step, HostStep):
        return {"type": "host", "key": step.key, "reason": step.reason}
    if isinstance(step, ViewStep):
        return {"type": "view", "key": step.key}  # a new view of a buffer: nothing runs
    raise ArgumentTypeError(
        f"a program's steps are Launch, Upload, Readback, HostStep or ViewStep, got {type(step).__name__}"
    )


class GpuBridge:
    """The host side of one WebGPU run of the newest readings' kernel program."""

    def __init__(self, readings):
        import numpy as np

        self.np = np
        self.plan = readings.plan()
        self.program = readings.kernels().program
        network = readings.network
        # The interpreter's value of every node: what uploads start from and what launches are held to.
        self.expected = network.forward(network.parameters(), {}).values()
        nodes = self.plan.nodes
        self.values = {i: self.expected[i] for i in self.plan.schedule if nodes[i].is_source}

    def program_json(self):
        buffers = [{"id": b.id, "elements": b.elements, "dtype": b.dtype} for b in self.program.buffers]
        return json.dumps({"buffers": buffers, "steps": [step_json(s) for s in self.program.steps],
                           "outputs": list(self.plan.outputs)})

    def upload(self, key, dtype):
        """The bytes an upload writes: host value ``key`` as a dense array of ``dtype``."""
        return self.np.ascontiguousarray(self.values[key], dtype=dtype).tobytes()

    def array(self, data, dtype, shape):
        # The worker hands over a JavaScript Uint8Array (a JsProxy with to_bytes()); tests pass bytes.
        raw = data.to_bytes() if hasattr(data, "to_bytes") else bytes(data)
        return self.np.frombuffer(raw, dtype=dtype).reshape(shape)

    def readback(self, key, dtype, shape, data):
        self.values[key] = self.array(data, dtype, shape)

    def host_step(self, key):
        """The interpreter computes node ``key`` from the host values (as the native runner's host does)."""
        from ..ops import lookup

        node = self.plan.nodes[key]
        inputs = [self.values[j] for j in node.operands]
        self.values[key] = lookup(node.opcode).forward(inputs, node.attrs)

    def difference(self, node, dtype, shape, data):
        """Largest |device - interpreter| for node ``node``; None when the shapes do not match."""
        return self.gap(self.array(data, dtype, shape), self.expected[node])

    def output_differences(self):
        """After the program ran: each readable's largest |run - interpreter|, as JSON."""
        return json.dumps([{"node": k, "maxAbsDiff": self.gap(self.values[k], self.expected[k])} for k in self.plan.outputs])

    def gap(self, actual, expected):
        np = self.np
        actual, expected = np.asarray(actual), np.asarray(expected)
        if actual.size != expected.size:
            return None
        actual = actual.reshape(expected.shape).astype(np.float64)
        expected = expected.astype(np.float64)
        same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
        gap = np.where(same, 0.0, np.abs(actual - expected))
        return float(np.max(gap)) if gap.size else 0.0
