"""The plan reading of a body (a ``Scan``'s step): its schedule and the memory one step holds.

A plan lists the nodes it evaluates with each value's fate; a node that holds a body runs
that body at every step, so the plan shows it under the node's row, once: the body's nodes
that its outputs read, each with its fate inside the step (``freed after N`` in the body's
own numbering, ``kept`` for what the step returns), and a line with the step's live volume.
The liveness is the interpreter's own (``Schedule``), applied to the body: the step's
arguments and captured values are live from its start, as the loop hands them in.
"""

from ..model.interpreter import Schedule
from ..ops.bodies import Region, read_by
from ..text import plural


def body_rows(node, indent="      "):
    """The lines about each body ``node`` holds: a summary of one step, then its scheduled rows."""
    lines = []
    for key, region in node.attrs.items():
        if not isinstance(region, Region):
            continue
        schedule = step_schedule(region)
        runs = node.attrs.get("length")
        times = f", run {plural(runs, 'time')}" if isinstance(runs, int) else ""
        lines.append(
            f"{indent}{key} of {node.index}{times}: {len(schedule.schedule)} of "
            f"{plural(len(region.nodes), 'node')} evaluated a step; live volume a step: peak "
            f"{plural(schedule.peak, 'element')} at node {schedule.peak_node}"
        )
        for index in schedule.schedule:
            inner = region.nodes[index]
            reader = schedule.last_reader[index]
            row = indent + inner.describe_row(shape_width=13) + ("kept" if reader is None else f"freed after {reader}")
            if inner.attrs and not inner.is_source:
                row += "  " + inner.attrs_text()
            lines.append(row)
            lines.extend(body_rows(inner, indent + "      "))
    return lines


def step_schedule(region):
    """The interpreter's ``Schedule`` of one run of ``region``: the nodes its outputs read, in order."""
    wanted = read_by(region.nodes, region.outputs)
    schedule = [node.index for node in region.nodes if wanted[node.index]]
    return Schedule(region.nodes, schedule, tuple(dict.fromkeys(region.outputs)))
