"""Reads tests/cases/primitives.json and replays a case on a backend (see tests/cases/README.md)."""

import base64
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from topos import Tape

CASES_FILE = Path(__file__).resolve().parents[1] / "cases" / "primitives.json"


def decode(tensor):
    raw = base64.b64decode(tensor["data"])
    return (
        np.frombuffer(raw, dtype=np.dtype(tensor["dtype"]).newbyteorder("<"))
        .reshape(tensor["shape"])
        .astype(tensor["dtype"])
    )


@lru_cache(maxsize=1)
def load_cases():
    document = json.loads(CASES_FILE.read_text())
    assert document["format"] == "topos-cases/1"
    return document["cases"]


def record(case):
    """The case's graph recorded on a float32 tape: ``(network, output symbols)``."""

    def build(tape):
        values = [tape.input(decode(tensor), dtype=tensor["dtype"]) for tensor in case["inputs"]]
        for node in case["nodes"]:
            if node["opcode"] == "Leaf":
                payload = decode(node["value"])
                values.append(tape.leaf(payload, dtype=node["value"]["dtype"]))
            else:
                operands = [values[i] for i in node["operands"]]
                values.append(tape.apply(node["opcode"], operands, **node.get("attrs", {})))
        return [values[i] for i in case["outputs"]]

    return Tape.record(build, dtype="float32")


def replay(case, backend):
    """The case's outputs run through ``plan.run`` on ``backend``; returns (outputs, plan run)."""
    network, outputs = record(case)
    plan = network.entry(outputs).lower()
    run = plan.run(network.parameters(), {}, backend=backend)
    return [np.asarray(run.of(symbol)) for symbol in outputs], run, plan


def disagreement(case, outputs):
    """A sentence naming the worst element outside the case's tolerance, or None when all agree."""
    rtol, atol = case["tolerance"]["rtol"], case["tolerance"]["atol"]
    for position, (got, tensor) in enumerate(zip(outputs, case["expected"])):
        if tensor["dtype"] in ("int32", "uint32"):
            # Words (random bits, keys) and indices agree exactly.
            want = decode(tensor)
            got = np.asarray(got)
            if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
                return f"output {position}: got {got.dtype} {got.tolist()}, expected {want.dtype} {want.tolist()}"
            continue
        want = decode(tensor).astype(np.float64)
        got = np.asarray(got, dtype=np.float64)
        if got.shape != want.shape:
            return f"output {position}: shape {got.shape}, expected {want.shape}"
        with np.errstate(invalid="ignore"):  # inf - inf: the same infinity, judged just below
            excess = np.abs(got - want) - (atol + rtol * np.abs(want))
        both_nan = np.isnan(got) & np.isnan(want)
        same_infinity = np.isinf(want) & (got == want)
        bad = ~(both_nan | same_infinity) & ~(excess <= 0)
        if bad.any():
            where = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(excess, nan=np.inf), -np.inf)), got.shape)
            return (
                f"output {position} at {where}: got {got[where]!r}, expected {want[where]!r} (rtol {rtol}, atol {atol})"
            )
    return None
