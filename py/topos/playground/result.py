"""One run's result as the page reads it: the output, the error or the recording and its readings, as JSON.

An error in the user's code returns no readings (the page keeps the last good
ones) and names the user's line. A script that recorded nothing gets, for each
reading, why it is empty.
"""

import json
import time

from .gpu import NoReadingsError
from .output import finite, output_json, output_text
from .readings import READINGS, Readings, compute_reading
from .sandbox import describe_error, execute


def run_and_read(code, filename, limit):
    """Run ``code``, its printed output kept up to ``limit`` characters.

    Returns ``(the result's JSON text, the readings or None)``.
    """
    run = ReadRun(code, filename, limit)
    return run.result_json(), run.readings


class ReadRun:
    """``code`` run, its printed output kept up to ``limit`` characters; its readings are made as asked for.

    ``result`` is the run's result without its readings (``"readings": None``) until
    ``result_json`` reads them all; the page takes them one at a time (``read``).
    ``readings`` is None when the code raised or recorded nothing.
    """

    def __init__(self, code, filename, limit):
        self.started = time.perf_counter()
        output, watch, error = execute(code, filename, limit)
        self.timings = {"code": milliseconds_since(self.started)}
        self.result = {
            "output": output_json(output),
            "output_text": output_text(output),
            "error": None,
            "recording": None,
            "nodes": [],
            "readings": None,
        }
        self.readings = None
        if error is not None:
            self.result["error"] = describe_error(error, filename)
            return
        picked = watch.pick(filename)
        if picked is not None:
            network, readables, kind = picked
            self.result["recording"] = {"kind": kind, "nodes": len(network), "readables": readables}
            self.result["nodes"] = nodes_json(network, filename)
            self.readings = Readings(network, readables, filename)

    def read(self, name):
        """The reading ``name`` (one of ``READINGS``); the code must not have raised."""
        if self.result["error"] is not None:
            raise NoReadingsError(f"the code raised, so there is no {name} reading")
        if self.readings is None:
            return {"empty": "this script recorded no tape"}
        reading, self.timings[name] = compute_reading(self.readings, name)
        return reading

    def head_json(self):
        """The result without its readings, as JSON text."""
        return json_text({**self.result, "timings": self.timings})

    def result_json(self):
        """The whole result, every reading read, as JSON text."""
        result = dict(self.result)
        if result["error"] is None:
            result["readings"] = {name: self.read(name) for name in READINGS}
        self.timings["total"] = milliseconds_since(self.started)
        result["timings"] = self.timings
        return json_text(result)


def json_text(value):
    """``value`` as JSON text; NaN and infinity (JSON has neither) spelled as text where they occur."""
    try:
        return json.dumps(value, allow_nan=False, default=str)
    except ValueError:
        # An attribute such as a clip bound may hold one.
        return json.dumps(finite(value), allow_nan=False, default=str)


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
