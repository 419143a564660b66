"""Which nodes XLA fused: read from the compiled module's HLO text.

XLA keeps, on every instruction it compiles, the line of the StableHLO text it
came from (``metadata={... source_line=N ...}``). A fusion instruction
(``fusion(...), calls=%fused_computation``) runs the instructions of the
computation it calls as one kernel; the lines of those instructions, mapped to
nodes through ``emit_plan_rows`` (each line knows its node), are the nodes
fused into that kernel. A "fusion" of one instruction (XLA wraps single
operations too) fuses nothing and is left out.
"""

import re

_COMPUTATION = re.compile(r"^%(\S+) \(.*\{$")
_FUSION_CALL = re.compile(r"^\s*%(\S+) = .* fusion\(.*calls=%([\w.\-]+)")
_SOURCE_LINE = re.compile(r"source_line=(\d+)")


def fused_nodes(hlo_text, rows):
    """``[(fusion name, (node index, ...)), ...]`` for every fusion of two nodes or more.

    ``hlo_text`` is the compiled module (``Compiled.hlo_text()``); ``rows`` the
    emitted module's lines with their nodes (``emit_plan_rows(plan)`` or a
    ``TrainingStep``'s ``rows``), line N of the text being ``rows[N - 1]``.
    """
    lines_of = {}  # computation name -> the source lines of its instructions
    current = None
    for line in hlo_text.splitlines():
        header = _COMPUTATION.match(line)
        if header:
            current = lines_of.setdefault(header.group(1), [])
        elif line == "}":
            current = None
        elif current is not None:
            current.extend(int(n) for n in _SOURCE_LINE.findall(line))
    fusions = []
    for line in hlo_text.splitlines():
        call = _FUSION_CALL.match(line)
        if not call:
            continue
        nodes = set()
        for number in lines_of.get(call.group(2), []):
            if 0 < number <= len(rows):
                nodes.update(rows[number - 1][1])
        if len(nodes) > 1:
            fusions.append((call.group(1), tuple(sorted(nodes))))
    return fusions
