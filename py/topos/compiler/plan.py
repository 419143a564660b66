"""The plan reading: scheduled nodes, each value's fate, and the live volume.

A ``Plan`` is what ``entry.lower()`` returns. It holds every node (the
network's, then the backward nodes when the entry asked for gradients), the
schedule (the evaluated nodes, in index order), and for each evaluated value
its last reader. From those follow the live volume at each node, the peak and
the retain-all volume, which ``describe()`` prints and which the interpreter
(``plan.run``) reproduces by freeing each value after its last reader. From
the same liveness follows the arena (``plan.arena``, ``topos.model.interpreter.arena``):
the byte offset of every value the interpreter computes, two values sharing
bytes only when their lifetimes do not meet; ``describe(arena=True)`` shows
it after the peak. A ``Plan`` is a ``Schedule`` (``topos.model.interpreter``)
with the readings added: the liveness, the arena and the prepared form are
the interpreter's, which the model's own runs use too.

The other readings of a plan live in their own modules and take the plan as
data: ``stablehlo`` (``emit_stablehlo``), ``backends`` (``run``), ``cost``
(FLOPs and bytes), ``graph`` (``Graph.from_plan``). A kernel reading can do the
same: ``plan.kernels()`` calls ``topos.compiler.kernels.kernel_reading(plan)``.
"""

from ..display import bundle, table_html, text_card
from ..model.interpreter import Schedule
from ..model.nodes import checkpoint_scope, derivative_scope, source_value
from ..model.remat import RECOMPUTED
from ..text import format_shape, plural
from .body_plan import body_rows


class Plan(Schedule):
    """A lowered entry: immutable, safe to run from several threads at once.

    Attributes: ``network``; ``nodes`` (forward nodes, then backward ones);
    ``forward_count``; ``schedule`` (evaluated indices, ascending); ``readables``
    (indices, as the entry named them); ``gradients`` (``(wrt index, gradient
    node index)`` pairs, in the order asked); ``target`` (the backward target's
    index, or None); ``last_reader`` (index -> the last scheduled node reading it,
    None for a kept value); ``live`` (index -> live elements at that node);
    ``peak``, ``peak_node`` and ``retain_all``; ``arena``, where the interpreter
    puts each value (planned on first use); ``runs`` (its ``PreparedOnSecondRun``).
    What it caches (costs, the arena, its prepared form) never changes a reading or a result.
    """

    def __init__(self, network, nodes, forward_count, schedule, readables, gradients, target, remat=None):
        super().__init__(nodes, schedule, readables, gradients, forward_count)
        self.network = network
        self.target = target
        self._costs = None
        self.remat = remat
        #: the nodes the backward recomputes (``topos.checkpoint``, ``entry.lower(remat=...)``), in order
        self.recomputed = tuple(i for i in self.schedule if self.nodes[i].scope[-1:] == (RECOMPUTED,))
        #: ``(peak, peak node, retain-all)`` of the same entry lowered with nothing recomputed, where some is
        self.without_remat = None

    def compare_without_remat(self, plain):
        """Note the live volume of ``plain``, this entry's plan with nothing recomputed (the reading's last line)."""
        self.without_remat = (plain.peak, plain.peak_node, plain.retain_all)

    def remat_text(self):
        """The line after the live volume where the backward recomputes values: how many, and the peak without."""
        peak, node, retain_all = self.without_remat
        return (
            f"remat {self.remat}: {plural(len(self.recomputed), 'node')} recomputed; without: "
            f"peak {plural(peak, 'element')} at node {node}, retain-all {retain_all}"
        )

    @property
    def direction(self):
        """``"forward"``, or ``"forward+backward"`` when the entry asked for gradients."""
        return "forward" if self.target is None else "forward+backward"

    def arguments(self):
        """The indices of the parameters and inputs the plan evaluates, in node order
        (the ``%argN`` of ``emit_stablehlo``)."""
        return tuple(i for i in self.schedule if self.nodes[i].opcode in ("Parameter", "Input"))

    def argument_values(self, parameters, feeds=None):
        """The arrays to pass an executable compiled from ``emit_stablehlo()``, in argument order."""
        self.network.check_parameters(parameters)
        feeds = self.network.check_feeds(feeds)
        return [source_value(self.nodes[index], parameters.slots, feeds) for index in self.arguments()]

    # Printing ---------------------------------------------------------------------
    def fate(self, index):
        """What happens to node ``index``'s value: ``"kept"`` or ``"freed after N"``."""
        reader = self.last_reader[index]
        return "kept" if reader is None else f"freed after {reader}"

    def describe(self, costs=False, arena=False):
        """One row a scheduled node, then the summary and the live volume (see API.md).

        ``costs=True`` adds each node's FLOPs and bytes moved to its row and a total line;
        ``arena=True`` adds the arena's line after the live volume (``Arena.describe``).
        """
        return "\n".join(line for line, _ in self.describe_rows(costs, arena))

    def describe_rows(self, costs=False, arena=False):
        """The lines of ``describe(costs, arena)``, each with the nodes it is about:
        ``(line, (index,))`` for a node's row, ``(line, ())`` for the summary lines."""
        table = self.costs() if costs else None
        rows = []
        for index in self.schedule:
            node = self.nodes[index]
            row = node.describe_row(shape_width=13) + self.fate(index)
            if node.attrs and not node.is_source:
                row += "  " + node.attrs_text()
            derivative = derivative_scope(node)
            if derivative:  # a node topos.grad recorded, as the spec marks it
                row += f"  [{derivative}]"
            region = checkpoint_scope(node)
            if node.scope[-1:] == (RECOMPUTED,):
                row += f"  [{RECOMPUTED}: {region or 'elementwise'}]"
            elif region:
                row += f"  [{region}]"
            if table is not None:
                row += "  " + table.node_text(index)
            rows.append((row, (index,)))
            rows.extend((line, (index,)) for line in body_rows(node))  # a Scan's step, once
        peak = plural(self.peak, "element")
        live = f"live volume: peak {peak} at node {self.peak_node}, retain-all {self.retain_all}"
        rows.append((self.summary(), ()))
        rows.append((live, ()))
        if self.without_remat is not None:
            rows.append((self.remat_text(), ()))
        if arena:
            rows.append((self.arena.describe(), ()))
        if table is not None:
            rows.append((table.total_text(), ()))
        return rows

    def summary(self):
        """The summary line of ``describe()``: ``plan: forward; 6 of 6 nodes evaluated, 1 readable``."""
        text = (
            f"plan: {self.direction}; {len(self.schedule)} of {plural(len(self.nodes), 'node')} evaluated, "
            f"{len(self.readables)} readable"
        )
        if self.target is not None:
            text += ", " + plural(len(self.gradients), "gradient")
        return text

    def __repr__(self):
        return f"<Plan: {self.summary()}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The plan reading for Jupyter: its text, an HTML table (the peak's row marked) and the plan card."""
        rows = self.describe_rows()
        cells = []
        for index in self.schedule:
            node = self.nodes[index]
            peak = "peak" if index == self.peak_node else ""
            reads = ", ".join(str(i) for i in node.operands)
            attributes = node.attrs_text() if node.attrs and not node.is_source else ""
            fate = self.fate(index)
            cells.append(
                (index, node.opcode, reads, format_shape(node.shape), fate, attributes, self.live[index], peak)
            )
        columns = ["node", "opcode", "reads", "shape", "fate", "attributes", "live elements", ""]
        marked = {self.schedule.index(self.peak_node)} if self.peak_node is not None else set()
        caption = [line for line, nodes in rows if not nodes]
        card = text_card("plan", rows)
        return bundle(card["text"], table_html("plan", columns, cells, caption=caption, marked=marked), card)

    # The other readings -------------------------------------------------------------
    def costs(self):
        """FLOPs and bytes moved, per node and in total (a ``Costs`` table)."""
        if self._costs is None:
            from .cost import plan_costs

            self._costs = plan_costs(self)
        return self._costs

    def emit_stablehlo(self, portable=False):
        """The plan as StableHLO MLIR text; results are the readables, then the gradients.

        The default is for XLA on a CPU, where Cholesky, TriangularSolve, Eigh, Qr and Svd lower
        to ``stablehlo.cholesky``, ``stablehlo.triangular_solve`` and XLA CPU's LAPACK custom calls;
        ``portable=True`` writes them as ``stablehlo.while`` loops any StableHLO consumer (IREE,
        XLA on a GPU) runs (``topos.compiler.stablehlo``'s docstring)."""
        from .stablehlo import emit_plan

        return emit_plan(self, portable)

    def run(self, parameters, feeds=None, backend="numpy"):
        """Evaluate the plan, freeing each value after its last reader; returns a ``PlanRun``."""
        from .backends import run_plan

        return run_plan(self, parameters, feeds, backend)

    def graph(self):
        """The plan's evaluated nodes as a ``Graph`` (the graph reading)."""
        from .graph import Graph

        return Graph.from_plan(self)

    def kernels(self):
        """The kernel reading: WGSL launches (``topos.compiler.kernels``)."""
        from .kernels import kernel_reading

        return kernel_reading(self)
