"""What the interpreter runs: nodes, the ones evaluated, the ones kept; and when to prepare it.

A ``Schedule`` is the part of a plan the interpreter reads: every node (the
network's, then any backward nodes), the schedule (the evaluated ones, in
index order), the outputs the run hands back (the readables, then the
gradients), and, worked out from those, each value's last reader, what is
freed after each node, the live volume and its peak. The compiler's ``Plan``
is a ``Schedule`` with its readings added; ``Network.forward`` and
``Run.backward`` make schedules of their own (``topos.model.lowering``).

``PreparedOnSecondRun`` is the one place that decides how a schedule that is
run again and again is run: plainly the first time (``interpret``), so that a
schedule run once pays no preparation, and through its ``PreparedPlan``
(arena and bound calls) from the second run on.
"""

import threading

from .arena import Arena
from .prepared import PreparedPlan

#: The state of a key that has run once, plainly: its next run prepares it.
USED_ONCE = "used once"
#: The state of a key whose preparation gave nothing (a backward with respect to nothing): it always runs plainly.
PLAIN = "plain"


class Schedule:
    """Nodes to evaluate in order, and their liveness: immutable, safe to run from several threads.

    Attributes: ``nodes``; ``forward_count`` (the nodes before it are the
    network's); ``schedule`` (evaluated indices, ascending); ``readables``;
    ``gradients`` (``(wrt index, gradient node index)`` pairs); ``outputs``
    (readables, then gradient nodes); ``last_reader`` (index -> the last
    scheduled node reading it, None for a kept value); ``release_after``
    (index -> the values freed once it has run); ``live`` (index -> live
    elements at that node); ``peak``, ``peak_node`` and ``retain_all``;
    ``arena``, where the prepared interpreter puts each value (planned on first
    use); ``runs``, its ``PreparedOnSecondRun``.
    """

    def __init__(self, nodes, schedule, readables, gradients=(), forward_count=None):
        self.nodes = tuple(nodes)
        self.forward_count = len(self.nodes) if forward_count is None else forward_count
        self.schedule = tuple(schedule)
        self.readables = tuple(readables)
        self.gradients = tuple(gradients)
        self.outputs = self.readables + tuple(g for _, g in self.gradients)
        self._liveness()
        self._arena = None
        self.runs = PreparedOnSecondRun()

    def _liveness(self):
        nodes = self.nodes
        last_reader = {}
        for index in self.schedule:
            for operand in nodes[index].operands:
                last_reader[operand] = index
        kept = set(self.outputs)
        self.last_reader = {i: (None if i in kept else last_reader.get(i, i)) for i in self.schedule}
        # release_after[k]: the values whose last reader is node k, freed once k has run.
        self.release_after = {}
        for index, reader in self.last_reader.items():
            if reader is not None:
                self.release_after.setdefault(reader, []).append(index)
        self.live = {}
        live = 0
        self.peak, self.peak_node, self.retain_all = 0, None, 0
        for index in self.schedule:
            size = nodes[index].size
            live += size
            self.retain_all += size
            self.live[index] = live
            if self.peak_node is None or live > self.peak:
                self.peak, self.peak_node = live, index
            for freed in self.release_after.get(index, ()):
                live -= nodes[freed].size

    @property
    def arena(self):
        """Where the prepared interpreter keeps each value it computes: an ``Arena``
        (``topos.model.interpreter.arena``), planned on first use; ``arena.describe()`` reads it."""
        if self._arena is None:
            self._arena = Arena(self)
        return self._arena

    def prepared(self):
        """The schedule's ``PreparedPlan`` (``topos.model.interpreter.prepared``): its calls bound once,
        its arena reused; the one its second and later runs go through."""
        return self.runs.now("outputs", self.prepare)

    def prepare(self, keep_inside=False, after_forward=False):
        """A new ``PreparedPlan`` with options: ``keep_inside`` places the kept values in the arena
        (the run then holds it); ``after_forward`` evaluates only the nodes after the forward ones,
        reading the forward values from the run it is given (what ``Run.backward`` does)."""
        return PreparedPlan(self, keep_inside=keep_inside, bound=self.forward_count if after_forward else 0)


class PreparedOnSecondRun(dict):
    """Key -> ``USED_ONCE``, a prepared form, or ``PLAIN``: "run plainly once, prepare from the second run".

    ``for_run(key, prepare)`` is asked before each run of the thing ``key``
    names: None means run it plainly (its first run, or always when
    ``prepare()`` gave None), else it is the prepared form, made by
    ``prepare()`` on the second run and reused from then on. Threads asking at
    once count the runs and prepare each key once.
    """

    def __init__(self):
        super().__init__()
        self._lock = threading.RLock()

    def for_run(self, key, prepare):
        """None for ``key``'s first run (and for every run where ``prepare()`` gives None), else its prepared form."""
        with self._lock:
            state = self.get(key)
            if state is None:
                self[key] = USED_ONCE
                return None
            if state is USED_ONCE:
                state = self[key] = prepare() or PLAIN
        return None if state is PLAIN else state

    def now(self, key, prepare):
        """``key``'s prepared form, made now if it has none yet (None where ``prepare()`` gives None)."""
        with self._lock:
            state = self.get(key)
            if state is None or state is USED_ONCE:
                state = self[key] = prepare() or PLAIN
        return None if state is PLAIN else state
