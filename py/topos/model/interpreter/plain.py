"""The plain interpreter: a schedule in order, each value freed after its last reader.

``interpret`` is what a schedule's first run takes (``PreparedOnSecondRun``),
and every run behind an *accelerator*: an object that the interpreter offers
each scheduled operation first (``accelerator.run(node, inputs)`` returns the
value, or ``None`` to decline it); the interpreter runs what it declines. An
accelerator may keep values on its device: whatever ``run`` returns is stored
as the node's value (it needs a ``size``, the element count, for the live
volume), handed back to ``run`` for later nodes, and turned into a numpy array
by ``accelerator.to_numpy(value)`` where the interpreter or the caller reads
it; without ``to_numpy``, its values must be numpy arrays.

It counts the elements of the arrays it holds after each node runs (before it
frees that node's last-read operands); its peak is the measured counterpart of
the schedule's predicted peak, and the tests hold the two equal.
"""

import numpy as np

from ...errors import ShapeError, located
from ...ops import lookup
from ...tensor import freeze
from ..nodes import source_value

#: What ``interpret`` says ran a node that numpy ran.
NUMPY = "numpy"


def interpret(schedule, parameter_slots, feeds, accelerator=None):
    """Evaluate ``schedule`` node by node: returns ``(values, ran_on, peak, peak_node)``.

    ``values`` is a list by node index, None for a node not evaluated or freed
    (a kept value is never freed); ``ran_on`` maps each evaluated node to
    ``"numpy"`` or the accelerator's ``name``. ``parameter_slots`` and ``feeds``
    map node indices to checked arrays, as ``source_value`` reads them. Every
    value numpy makes is read-only: made by this run and held by it alone.
    """
    to_numpy = getattr(accelerator, "to_numpy", None)  # optional: for an accelerator that keeps values
    on_device = set()  # nodes whose values the accelerator keeps in its own form
    nodes = schedule.nodes
    release_after = schedule.release_after
    values = [None] * len(nodes)
    ran_on = {}
    live = peak = 0
    peak_node = None
    with np.errstate(all="ignore"):
        for index in schedule.schedule:
            node = nodes[index]
            if node.is_source:
                value = source_value(node, parameter_slots, feeds)
                ran_on[index] = NUMPY
            else:
                inputs = [values[j] for j in node.operands]
                try:
                    value = None if accelerator is None else accelerator.run(node, inputs)
                    if value is None:  # declined, or no accelerator: the numpy forward runs it
                        if to_numpy is not None:
                            inputs = [to_numpy(v) if j in on_device else v for j, v in zip(node.operands, inputs)]
                        value = lookup(node.opcode).forward(inputs, node.attrs)
                        ran_on[index] = NUMPY
                    else:
                        ran_on[index] = accelerator.name
                except ShapeError as error:  # an index out of range, say: name the line that recorded the node
                    raise located(error, node.source) from None
                if ran_on[index] == NUMPY:
                    freeze(value)  # made by this run and held by it alone: a caller cannot change a run
                elif to_numpy is not None:
                    on_device.add(index)
            values[index] = value
            live += value.size
            if peak_node is None or live > peak:
                peak, peak_node = live, index
            for freed in release_after.get(index, ()):
                live -= values[freed].size
                values[freed] = None
    for index in on_device:
        if values[index] is not None:
            values[index] = to_numpy(values[index])
    return values, ran_on, peak, peak_node
