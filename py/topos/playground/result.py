"""One run's result as the page reads it: the output, the error or the recording and its readings, as JSON.

An error in the user's code returns no readings (the page keeps the last good
ones) and names the user's line. A script that recorded nothing gets, for each
reading, why it is empty.
"""

import json
import time

from .output import finite, output_json, output_text
from .readings import READINGS, Readings, compute_readings
from .sandbox import describe_error, execute


def run_and_read(code, filename, limit):
    """Run ``code``, its printed output kept up to ``limit`` characters.

    Returns ``(the result's JSON text, the readings or None)``.
    """
    started = time.perf_counter()
    output, watch, error = execute(code, filename, limit)
    timings = {"code": milliseconds_since(started)}
    result = {
        "output": output_json(output),
        "output_text": output_text(output),
        "error": None,
        "recording": None,
        "nodes": [],
        "readings": None,
    }
    readings = None
    if error is not None:
        result["error"] = describe_error(error, filename)
    else:
        picked = watch.pick(filename)
        if picked is None:
            result["readings"] = {name: {"empty": "this script recorded no tape"} for name in READINGS}
        else:
            network, readables, kind = picked
            result["recording"] = {"kind": kind, "nodes": len(network), "readables": readables}
            result["nodes"] = nodes_json(network, filename)
            readings = Readings(network, readables, filename)
            result["readings"], reading_timings = compute_readings(readings)
            timings.update(reading_timings)
    timings["total"] = milliseconds_since(started)
    result["timings"] = timings
    try:
        return json.dumps(result, allow_nan=False, default=str), readings
    except ValueError:
        # JSON has no NaN or infinity (an attribute such as a clip bound may hold one): spell them as text.
        return json.dumps(finite(result), allow_nan=False, default=str), readings


def milliseconds_since(started):
    return round((time.perf_counter() - started) * 1000, 2)


def nodes_json(network, filename):
    """Each node's opcode and the user's line that recorded it (None when topos recorded it)."""
    return [
        {
            "index": node.index,
            "opcode": node.opcode,
            "line": node.source[1] if node.source and node.source[0] == filename else None,
        }
        for node in network.nodes()
    ]
