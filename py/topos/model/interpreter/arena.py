"""The arena: where each value a plan's kernels write lives, planned once at lowering.

The plan knows every value's size and its last reader, so memory can be
assigned as compilers assign it (XLA's buffer assignment, TVM's static memory
planner): every value the interpreter computes gets a byte offset in one block,
the *arena*, and two values share bytes only when their lifetimes do not meet.
The interpreter (``topos.model.interpreter.prepared``) allocates the block once per plan,
reuses it from run to run, and each kernel writes its value into its own slice
(``Primitive.forward_into``).

What the arena holds, and what it leaves outside:

- **sources** (parameters, inputs, leaves) are the caller's or the network's
  arrays, read where they are;
- **views**: an op whose numpy forward returns a view of its operand
  (``Primitive.returns_view``: reshape, broadcast, transpose, slice) takes no
  memory of its own; its operand's slot stays live as long as the view is read;
- **kept** values, the readables and gradients a run hands back (and the slots
  their views read), get buffers of their own each run: the caller holds them,
  so the next run must never write there. ``keep_inside=True`` places them in
  the arena instead, alive to the end of the run, for a caller that keeps the
  whole arena as long as it reads them (``Network.forward``'s ``Run``);
- **bound** values (node indices below ``bound``) come from an earlier run (the
  forward values that ``Run.backward`` reads).

A value is live from the node that computes it through its last reader (the
plan's ``last_reader``), both included: an operand and the result of the node
that reads it last never share bytes. Offsets are multiples of ``ALIGNMENT``
bytes and every slot is rounded up to it, so any dtype can be viewed at any
offset and a vector loop starts on a cache line.

Placement is greedy best fit, the classic heuristic: values are taken in some
order, each put in the tightest gap among the values already placed whose
lifetimes meet its own (the lowest such gap on ties), or on top of them. As
XLA's heap simulator does, it runs in a few orders (largest first; largest
size times lifetime first; earliest first) and keeps the smallest arena. The
arena is at least the *peak*, the most bytes live at any one node, where every
placed value must fit at once. Best fit reaches the peak exactly on chains and
on most of the gallery's plans; where gaps fragment it can exceed it (on the
transformer's forward plan, by about a tenth; on the char RNN's forward, by one
small slot), and ``describe()`` prints both.
"""

import numpy as np

from ...ops import lookup
from ...text import plural

#: Bytes every offset and every slot size is a multiple of (a cache line; wide vector loads stay aligned).
ALIGNMENT = 64


def slot_bytes(node):
    """The bytes ``node``'s value takes in the arena: its elements at its dtype's width, rounded up to ``ALIGNMENT``."""
    data = node.size * np.dtype(node.dtype).itemsize
    return -(-data // ALIGNMENT) * ALIGNMENT


class Arena:
    """The byte offset of every value a plan's kernels write, and what is left outside.

    Attributes: ``offsets`` (node index -> byte offset, for the values placed),
    ``slots`` (node index -> bytes taken), ``lifetimes`` (node index -> (first,
    last) node where it is live, both included), ``base`` (node index -> the
    node whose memory its value is: itself, or for a view the value it views;
    None for a value outside the arena's reach), ``outside`` (node index ->
    ``"source"``, ``"view"``, ``"kept"`` or ``"bound"``), ``size`` (bytes),
    ``peak`` (the most bytes live at once) and ``peak_node`` (the first node
    where that happens, None for an empty arena).
    """

    def __init__(self, plan, keep_inside=False, bound=0):
        self.plan = plan
        self.keep_inside = keep_inside
        self.bound = bound
        self._classify()
        self._place()
        self._measure_peak()

    # Which values the arena holds, and for how long ---------------------------------
    def _classify(self):
        plan = self.plan
        nodes = plan.nodes
        last = plan.schedule[-1] if plan.schedule else 0
        self.base = {}
        self.outside = {}
        for index in plan.schedule:
            node = nodes[index]
            if index < self.bound:
                self.outside[index] = "bound"
                self.base[index] = None
            elif node.is_source:
                self.outside[index] = "source"
                self.base[index] = None
            elif lookup(node.opcode).returns_view:
                self.outside[index] = "view"
                self.base[index] = self.base[node.operands[0]]
            else:
                self.base[index] = index
        # A value is live until the last reader of itself or of any view of it; a kept one to the end.
        ends = {}
        escaping = set()
        for index in plan.schedule:
            base = self.base[index]
            if base is None:
                continue
            reader = plan.last_reader[index]
            if reader is None:  # kept: the caller reads it after the run
                if not self.keep_inside:
                    escaping.add(base)
                reader = last
            ends[base] = max(ends.get(base, base), reader)
        for index in escaping:
            self.outside[index] = "kept"
        self.lifetimes = {i: (i, end) for i, end in ends.items() if i not in escaping}
        self.slots = {i: slot_bytes(nodes[i]) for i in self.lifetimes}

    # Greedy best fit ------------------------------------------------------------------
    def _place(self):
        """Place the values in each of ``ORDERS`` and keep the smallest arena (the first, on ties)."""
        self.size, self.offsets = None, {}
        lifetimes = self.lifetimes.values()
        if lifetimes and max(start for start, _ in lifetimes) <= min(end for _, end in lifetimes):
            # Every value is live at one node (all kept to the end, say): no two can share, nothing to search.
            self.size, self.offsets = place_side_by_side(sorted(self.lifetimes), self.slots)
            return
        for order in ORDERS:
            size, offsets = place_in_order(sorted(self.lifetimes, key=order(self)), self.lifetimes, self.slots)
            if self.size is None or size < self.size:
                self.size, self.offsets = size, offsets
        self.size = self.size or 0

    def _measure_peak(self):
        """The most bytes live at one node: what any placement needs at least."""
        schedule = self.plan.schedule
        position = {index: p for p, index in enumerate(schedule)}
        change = [0] * (len(schedule) + 1)
        for index, (start, end) in self.lifetimes.items():
            change[position[start]] += self.slots[index]
            change[position[end] + 1] -= self.slots[index]  # gone before the next scheduled node
        live = 0
        self.peak, self.peak_node = 0, None
        for p, index in enumerate(schedule):
            live += change[p]
            if live > self.peak:
                self.peak, self.peak_node = live, index

    # Reading ---------------------------------------------------------------------------
    def live_at(self, index):
        """The node indices whose slots are live at node ``index``."""
        return [i for i, (start, end) in self.lifetimes.items() if start <= index <= end]

    def describe(self):
        """One line: the arena's bytes, the values it holds, its peak and what lives outside it.

        ``arena: 128 bytes for 2 values, peak 128 bytes at node 4; outside: 3 sources, 1 kept``
        """
        text = f"arena: {plural(self.size, 'byte')} for {plural(len(self.offsets), 'value')}, "
        text += f"peak {plural(self.peak, 'byte')}"
        if self.peak_node is not None:
            text += f" at node {self.peak_node}"
        counts = {}
        for kind in self.outside.values():
            counts[kind] = counts.get(kind, 0) + 1
        # "3 sources, 2 views, 1 kept": "kept" and "bound" describe values, so they take no plural.
        parts = [
            plural(counts[kind], kind) if kind in ("source", "view") else f"{counts[kind]} {kind}"
            for kind in ("source", "view", "kept", "bound")
            if counts.get(kind)
        ]
        if parts:
            text += "; outside: " + ", ".join(parts)
        return text

    def __repr__(self):
        return f"<Arena: {self.describe()}>"


#: The orders greedy best fit is tried in, as XLA's heap simulator tries several: the largest
#: value first; the largest size times lifetime first; the earliest first. Each is exact on
#: graphs where another fragments.
ORDERS = (
    lambda arena: lambda i: (-arena.slots[i], i),
    lambda arena: lambda i: (-arena.slots[i] * (arena.lifetimes[i][1] - i + 1), i),
    lambda arena: lambda i: i,
)


def place_in_order(order, lifetimes, slots):
    """Greedy best fit of the values ``order`` lists; returns ``(arena size, {index: offset})``."""
    count = len(order)
    starts = np.empty(count, dtype=np.int64)
    ends = np.empty(count, dtype=np.int64)
    lows = np.empty(count, dtype=np.int64)
    highs = np.empty(count, dtype=np.int64)
    offsets = {}
    size = 0
    for placed, index in enumerate(order):
        start, end = lifetimes[index]
        need = slots[index]
        meets = (starts[:placed] <= end) & (ends[:placed] >= start)
        offset = best_fit(lows[:placed][meets], highs[:placed][meets], need)
        starts[placed], ends[placed] = start, end
        lows[placed], highs[placed] = offset, offset + need
        offsets[index] = offset
        size = max(size, offset + need)
    return size, offsets


def place_side_by_side(order, slots):
    """Each value after the one before: ``(arena size, {index: offset})``."""
    offsets = {}
    size = 0
    for index in order:
        offsets[index] = size
        size += slots[index]
    return size, offsets


def best_fit(lows, highs, need):
    """The offset for a slot of ``need`` bytes among slots ``[lows, highs)`` it must not touch.

    The smallest gap that holds it (the lowest such, on ties), else the top of them all.
    """
    if lows.size == 0:
        return 0
    order = np.argsort(lows, kind="stable")
    lows, highs = lows[order], highs[order]
    # A gap opens where every slot before it (by offset) has ended: at 0, and after each running top.
    tops = np.maximum.accumulate(highs)
    gap_starts = np.concatenate(([0], tops[:-1]))
    gaps = lows - gap_starts
    fits = np.flatnonzero(gaps >= need)
    if fits.size == 0:
        return int(tops[-1])
    tightest = fits[np.argmin(gaps[fits])]
    return int(gap_starts[tightest])
