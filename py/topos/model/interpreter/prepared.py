"""A prepared plan: the per-node Python work bound once, the arena allocated once and reused.

``PreparedPlan(plan)`` turns each scheduled node into a prepared call: the
primitive's ``forward_into`` with its operands' positions, its attributes and
its place (a slot of the arena, a buffer of its own for a kept value, or
nothing for a view). ``run`` then only walks that list. The arena
(``topos.model.interpreter.arena``) is allocated when a run first needs one, with a
view of every slot made once; a finished run hands it back to the prepared
plan's pool, and the next run takes it again, so a training loop allocates
almost nothing per step. Two runs at once (two threads) take two arenas.

Values that leave the run are never written by the next one while anyone
holds them. The kept values (the readables, the gradients) are written into a
*kept block* of their own, end to end in the order of the plan's outputs, which
the caller then holds; a later run takes that block again only once nothing
refers to it any more (so a training loop that lets each step's gradients go
writes them into the same memory every step), and the gradients of a backward
lie in it as an optimizer's flat layout wants them (``Layout.lying_end_to_end``
in ``topos.model.optim_state``). The arena holds only what the run alone
reads. With ``keep_inside=True`` (``Network.forward``, whose ``Run`` may read
any value later) kept values live in the arena too: the run then holds its
arena and gives it back with ``release``, which the ``Run`` calls when it is
gone, and what the ``Run`` hands out is a copy.

A plan's first run needs none of this: ``PreparedOnSecondRun``
(``topos.model.interpreter.schedule``) runs the plain interpreter once and
prepares from the second run on, so that a one-off run pays no preparation.
"""

import sys

import numpy as np

from ...errors import ShapeError, located
from ...ops import lookup
from ...ops.elementwise import TableRow
from ...ops.hooks import HOOKS
from .arena import ALIGNMENT, Arena

#: How many kept blocks a plan keeps for later runs (two: a loop that holds one step's gradients
#: while the next step runs still finds one free).
KEPT_BLOCKS = 2


def _local_references():
    array = np.empty(1)
    return sys.getrefcount(array)


#: The reference count of an array that only one local variable refers to.
_SOLE_LOCAL = _local_references()


class PreparedPlan:
    """A plan's prepared calls and its pool of arenas; ``run`` evaluates the plan.

    ``bound``: nodes with a lower index are not evaluated but taken from the
    ``bound_values`` a run is given (a ``Run``'s forward values, for the backward
    nodes that read them). ``keep_inside``: kept values live in the arena (see
    the module's notes).
    """

    def __init__(self, plan, keep_inside=False, bound=0):
        self.plan = plan
        self.keep_inside = keep_inside
        self.bound = bound
        if keep_inside or bound:
            self.arena = Arena(plan, keep_inside=keep_inside, bound=bound)
        else:
            self.arena = plan.arena
        self._pool = []
        self._prepare()

    def _prepare(self):
        plan, arena = self.plan, self.arena
        nodes = plan.nodes
        #: a mask of the nodes whose values lie in the arena (themselves, or viewed through a view)
        self.in_arena = bytearray(len(nodes))
        self._kept = []  # the values in buffers of their own, and views of them: read-only once the run ends
        for index, base in arena.base.items():
            if base is not None and base in arena.offsets:
                self.in_arena[index] = 1
            elif base is not None:
                self._kept.append(index)
        self._place_kept()
        self._parameters, self._inputs = [], []
        self._template = [None] * len(nodes)  # a run's values before it starts: leaves are there already
        self._static_views = []  # views of arena slots: made once per arena, as the slots are
        first = self._new_workspace()
        self._steps, self._step_nodes = [], []
        self._schedule = []  # (index, its step or None, the values freed after it), for a counting run
        for index in plan.schedule:
            node = nodes[index]
            kind = arena.outside.get(index)
            step = None
            if kind == "bound":
                pass
            elif node.opcode == "Parameter":
                self._parameters.append((index, node.payload))
            elif node.opcode == "Input":
                self._inputs.append((index, node.payload))
            elif node.is_source:
                self._template[index] = node.payload
                first.template[index] = node.payload
            elif kind == "view":
                primitive = lookup(node.opcode)
                if not self._make_static_view(first, index, primitive.forward, node.operands, node.attrs):
                    computed = all(not nodes[j].is_source for j in node.operands)
                    step = view_step(primitive.forward, index, node.operands, node.attrs, remember=computed)
            else:
                primitive = lookup(node.opcode)
                # A kept value's buffer (a view of the run's kept block) is in place when the run starts.
                callee = table_ufunc(primitive)
                if callee is not None:
                    step = ufunc_step(callee, index, node.operands)
                else:
                    callee = primitive.forward_into
                    step = slot_step(callee, index, node.operands, node.attrs)
                # A runtime's own step for what this one calls, where it installed one (ops/hooks.py).
                runtime_step = HOOKS.steps.get(callee)
                if runtime_step is not None:
                    step = runtime_step(node.operands, index, step)
            if step is not None:
                self._steps.append(step)
                self._step_nodes.append(node)
            self._schedule.append((index, step, tuple(plan.release_after.get(index, ()))))
        self._pool.append(first)

    def _place_kept(self):
        """Where each kept value lies in a run's *kept block*: end to end, in the order of the plan's outputs.

        The values a run hands back (its readables, its gradients) leave with the caller, so each
        run writes them into a block of their own; laid end to end in the order of the outputs,
        the gradients of a backward lie as an optimizer's flat layout wants them
        (``Layout.lying_end_to_end``), which then reads them where they are.
        """
        plan, arena = self.plan, self.arena
        order = [arena.base[index] for index in plan.outputs] + sorted(arena.base)
        self._kept_slots = []  # (index, byte offset in the block, bytes, shape, dtype)
        self._kept_bytes = 0
        placed = set()
        for index in order:
            if index is None or index in placed or arena.outside.get(index) != "kept":
                continue
            placed.add(index)
            node = plan.nodes[index]
            dtype = np.dtype(node.dtype)
            size = node.size * dtype.itemsize
            # Each at its dtype's natural alignment (numpy's aligned loops and BLAS take it; values of
            # one dtype meet it without a gap, so gradients lie end to end).
            offset = -(-self._kept_bytes // dtype.alignment) * dtype.alignment
            self._kept_slots.append((index, offset, size, node.shape, dtype))
            self._kept_bytes = offset + size
        self._kept_blocks = []  # blocks of earlier runs, taken again once nothing views them

    def _take_kept_block(self):
        """A block for a run's kept values: an earlier run's where nobody holds a value in it any more, else a new one.

        A run's kept values are the caller's: a block is written again only when nothing refers to
        it but this pool (every numpy view refers to the array that owns its memory), so nothing
        anyone can read changes, and a loop that lets each step's gradients go writes into the
        same memory every step instead of taking new pages.
        """
        blocks = self._kept_blocks
        for _ in range(len(blocks)):
            try:
                raw = blocks.pop(0)
            except IndexError:
                break
            if sys.getrefcount(raw) <= _SOLE_LOCAL:
                return raw
            if len(blocks) < KEPT_BLOCKS:
                blocks.append(raw)  # still read by someone: perhaps free for a later run
        return np.empty(self._kept_bytes + ALIGNMENT, dtype=np.uint8)

    def _kept_values(self, values):
        """Put a view of the kept block in each kept value's place; returns the block's owner."""
        raw = self._take_kept_block()
        start = -raw.__array_interface__["data"][0] % ALIGNMENT
        for index, offset, size, shape, dtype in self._kept_slots:
            values[index] = raw[start + offset : start + offset + size].view(dtype).reshape(shape)
        return raw

    def _give_back_kept_block(self, raw):
        if len(self._kept_blocks) < KEPT_BLOCKS:
            self._kept_blocks.append(raw)

    def _make_static_view(self, workspace, index, forward, operands, attrs):
        """Make a view once, into ``workspace``'s template, where it views what every run finds in place.

        An arena slot is the same memory in every run and a leaf the same constant,
        so a view of either (a transpose, a broadcast) is too. A view of a source
        that changes from run to run, or a reshape that numpy can only make by
        copying, runs in every run instead.
        """
        template = workspace.template
        inputs = [template[j] for j in operands]
        if any(value is None for value in inputs):
            return False
        value = forward(inputs, attrs)
        if not np.may_share_memory(value, inputs[0]):
            return False
        template[index] = value
        if self.in_arena[index]:
            self._static_views.append((index, forward, operands, attrs))
        else:  # a view of a leaf: the same in every arena
            self._template[index] = value
        return True

    # The arena and its pool ----------------------------------------------------------------
    def _new_workspace(self, offset=0):
        """A fresh arena, and the values list template with a view of each slot (and of the views of slots) in place.

        The arena starts on an ``ALIGNMENT`` boundary, ``offset`` bytes past it (the
        reproducibility tests place arenas off it: a run's bits must not depend on where it lies).
        """
        arena = self.arena
        raw = np.empty(arena.size + ALIGNMENT + offset, dtype=np.uint8)
        start = -raw.__array_interface__["data"][0] % ALIGNMENT + offset
        block = raw[start : start + arena.size]
        template = list(self._template)
        nodes = self.plan.nodes
        for index, offset in arena.offsets.items():
            node = nodes[index]
            length = node.size * np.dtype(node.dtype).itemsize
            template[index] = block[offset : offset + length].view(node.dtype).reshape(node.shape)
        for index, forward, operands, attrs in self._static_views:
            template[index] = forward([template[j] for j in operands], attrs)
        return Workspace(block, template)

    def _take(self):
        try:
            return self._pool.pop()
        except IndexError:
            return self._new_workspace()

    def release(self, workspace):
        """Give an arena back for later runs (``run(..., hold=True)`` leaves that to the caller)."""
        self._pool.append(workspace)

    # Running ----------------------------------------------------------------------------------
    def run(self, parameter_slots, feeds, bound_values=None, count=False, hold=False):
        """Evaluate the plan: returns ``(values, workspace, peak, peak_node)``.

        ``values`` is a list by node index (None for a node not evaluated).
        ``parameter_slots`` and ``feeds`` map node indices to checked arrays, as
        ``source_value`` reads them. ``count=True`` measures the peak of live
        elements as the plain interpreter does, dropping each value after its last
        reader (else ``peak`` and ``peak_node`` are None). ``hold=True`` keeps the
        arena out of the pool: the caller gives it back with ``release(workspace)``
        once nothing reads the values any more.
        """
        workspace = self._take()
        try:
            values = list(workspace.template)
            if bound_values is not None:
                values[: self.bound] = bound_values[: self.bound]
            for index, payload in self._parameters:
                values[index] = parameter_slots.get(index, payload)
            for index, payload in self._inputs:
                values[index] = feeds.get(index, payload)
            raw = self._kept_values(values) if self._kept_slots else None
            with np.errstate(all="ignore"):
                if count:
                    peak, peak_node = self._run_counting(values)
                else:
                    peak, peak_node = None, None
                    self._run_steps(values)
        except BaseException:
            self.release(workspace)
            raise
        if not hold:
            self.release(workspace)
        if raw is not None:
            self._give_back_kept_block(raw)
        for index in self._kept:
            value = values[index]
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        return values, workspace, peak, peak_node

    def _run_steps(self, values):
        position = 0
        try:
            for step in self._steps:
                step(values)
                position += 1
        except ShapeError as error:  # an index out of range, say: name the line that recorded the node
            raise located(error, self._step_nodes[position].source) from None

    def _run_counting(self, values):
        """The steps with the plain interpreter's bookkeeping: live elements after each node, then frees."""
        nodes = self.plan.nodes
        live = peak = 0
        peak_node = None
        for index, step, freed in self._schedule:
            if step is not None:
                try:
                    step(values)
                except ShapeError as error:
                    raise located(error, nodes[index].source) from None
            live += values[index].size
            if peak_node is None or live > peak:
                peak, peak_node = live, index
            for j in freed:
                live -= values[j].size
                values[j] = None
        return peak, peak_node


class Workspace:
    """One arena (``block``, a uint8 array) and the values-list template whose slots view it."""

    __slots__ = ("block", "template")

    def __init__(self, block, template):
        self.block = block
        self.template = template


# Prepared calls: one closure a node, specialised by arity so that a run builds no more than the inputs list.


def slot_step(forward_into, index, operands, attrs):
    """A node whose value goes to its arena slot (already in ``values[index]`` when the run starts)."""
    if len(operands) == 1:
        (a,) = operands

        def step(values):
            values[index] = forward_into([values[a]], attrs, values[index])

    elif len(operands) == 2:
        a, b = operands

        def step(values):
            values[index] = forward_into([values[a], values[b]], attrs, values[index])

    else:

        def step(values):
            values[index] = forward_into([values[j] for j in operands], attrs, values[index])

    return step


def table_ufunc(primitive):
    """The numpy ufunc that a table row's ``forward_into`` calls with ``out=`` (``topos.ops.elementwise``), or None."""
    function = getattr(primitive, "numpy_function", None)
    if isinstance(function, np.ufunc) and type(primitive).forward_into is TableRow.forward_into:
        return function
    return None


def ufunc_step(ufunc, index, operands):
    """A table row's node: its ufunc called straight into the value's place (its slot, or its kept buffer)."""
    if len(operands) == 1:
        (a,) = operands

        def step(values):
            ufunc(values[a], out=values[index])

    elif len(operands) == 2:
        a, b = operands

        def step(values):
            ufunc(values[a], values[b], out=values[index])

    else:

        def step(values):
            ufunc(*[values[j] for j in operands], out=values[index])

    return step


def view_step(forward, index, operands, attrs, remember=False):
    """A node whose forward is a view of its operand: nothing is written.

    ``remember``: the operand is a computed value (not a parameter or an input, which are new arrays
    each run), such as a forward value a backward reads from the forward's arena, the same array
    run after run: the view made from it is kept and handed out again while the operand is the
    same array, unless numpy had to copy (a reshape of a transposed value), whose copy would go stale.
    """
    if len(operands) == 1 and remember:
        (a,) = operands
        memo = [None]  # (operand, its view): one tuple, replaced whole, so threads read a matching pair

        def step(values):
            x = values[a]
            known = memo[0]
            if known is not None and known[0] is x:
                values[index] = known[1]
                return
            view = values[index] = forward([x], attrs)
            if isinstance(view, np.ndarray) and np.may_share_memory(view, x):
                memo[0] = (x, view)

    elif len(operands) == 1:
        (a,) = operands

        def step(values):
            values[index] = forward([values[a]], attrs)

    else:

        def step(values):
            values[index] = forward([values[j] for j in operands], attrs)

    return step
