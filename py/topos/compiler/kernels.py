"""The kernel reading: a plan as WGSL launches (``plan.kernels()``).

Kernel selection walks the plan's schedule once. Each node either runs on the
device, as the launches its primitive's own rule writes (``wgsl`` or
``wgsl_launch`` in its op block, through the kernel family it names: elementwise,
reduce, matmul, copy, gather, scatter), or on the host, where the numpy interpreter
runs it: float64 values (WGSL has no f64), int32 results, ops whose ``kernel`` is
None, values too large for one storage binding, and what the primitive itself
declines (``wgsl_declines``).

- Reshapes of contiguous values, broadcasts, transposes, slices and stop-gradients
  launch nothing: they are new views of their operand's buffer, which the next
  kernel reads through strides. Leaves of one repeated value are constants that
  need no buffer at all.
- Chains of elementwise nodes whose intermediate values only the chain reads run
  as one generated launch (``topos.compiler.wgsl.fusion``): a ``let`` a node.
- Softmax, log-softmax, layer norm and mean run fused where the plan shows the
  pattern their functions record (``topos.compiler.wgsl.patterns``), as the launch
  their composite names (``Composite.wgsl_launch``, ``topos.ops.composites``).
- Buffers follow the plan's liveness: each value is first given a buffer of its
  own, then ``share_buffers`` packs them by lifetime (from the step that writes a
  value to the last that reads it), so the device holds about the plan's peak,
  not the sum of all values. Parameters and non-constant leaves keep their
  buffers (they stay on the device between runs); inputs are uploaded every run.
- Uploads happen first (sources) or right after a host step whose value the
  device reads; readbacks only where the host needs a device value (the operand
  of a host step) and at the end (the readables and gradients).

The result, a ``KernelReading``, holds the ``Program`` (``topos.compiler.wgsl.program``)
that the WebGPU backend executes and ``describe()`` prints it. It is made once
per plan (``kernel_reading``): the plan's ``kernels()`` and the WebGPU runtime
share it.
"""

import threading
import weakref

import numpy as np

from ..errors import LoweringError
from ..ops import Primitive, lookup
from ..text import format_shape, plural
from .launch_helpers import LaunchHelpers
from .wgsl import launch as build
from .wgsl.concatenations import emit_concatenation, find_concatenations
from .wgsl.dispatch import MAX_ELEMENTS
from .wgsl.fusion import find_chains
from .wgsl.launch import LANES, LOOP_LIMIT, MAX_BATCH_RANK, MAX_RANK, Launch
from .wgsl.pad_sums import emit_pad_sum, find_pad_sums
from .wgsl.patterns import find_groups
from .wgsl.program import Buffer, HostStep, Program, Readback, Upload, ViewStep, run_counts, scratch_peak, share_buffers
from .wgsl.views import View, element_count


def has_kernel_rule(primitive):
    """Whether a primitive says how the device computes it: an elementwise expression or its own ``wgsl_launch``."""
    return primitive.wgsl is not None or type(primitive).wgsl_launch is not Primitive.wgsl_launch


class KernelReading:
    """A plan's kernel program and what it says: launches, views, transfers, host steps.

    ``program`` is what the WebGPU backend runs; ``launches`` lists its launches;
    ``backends`` maps each scheduled node to "webgpu" or "numpy" (a source: whether a
    launch reads it); ``groups`` holds the fused groups by first node, ``chains`` the fused
    elementwise chains by root (``topos.compiler.wgsl.fusion``), ``pad_sums`` the sums of
    disjoint paddings by root (``topos.compiler.wgsl.pad_sums``); ``declined`` the reason for
    each node the host runs.
    """

    def __init__(self, plan, program, backends, groups, declined, chains=None, pad_sums=None):
        self.plan = plan
        self.program = program
        self.backends = backends
        self.groups = groups
        self.declined = declined
        self.chains = chains or {}
        self.pad_sums = pad_sums or {}

    @property
    def launches(self):
        return self.program.launches

    def __len__(self):
        return len(self.launches)

    def __iter__(self):
        return iter(self.launches)

    def summary(self):
        steps = self.program.steps
        uploads = sum(isinstance(s, Upload) for s in steps)
        readbacks = sum(isinstance(s, Readback) for s in steps)
        host = sum(isinstance(s, HostStep) for s in steps)
        device_nodes = sum(
            1 for i in self.plan.schedule if self.backends[i] == "webgpu" and not self.plan.nodes[i].is_source
        )
        submits = run_counts(self.program)["submits"]
        return (
            f"kernels: {plural(len(self.launches), 'launch', 'launches')} for {plural(device_nodes, 'node')}, "
            f"{plural(host, 'host step')}, {plural(uploads, 'upload')}, {plural(readbacks, 'readback')}, "
            f"{plural(submits, 'submit')}"
        )

    def describe(self):
        """One row a step in execution order (launch, view, upload, readback, host step), then the totals.

        A launch row: its number, ``kernel:entry``, the nodes it covers, its workgroup grid, and
        its output view ``<-`` the views it reads (``b3[4, 10]``: buffer 3, a dense [4, 10]; a strided
        view adds its offset and strides), then its specialisation (the elementwise expression).
        """
        return "\n".join(line for line, _ in self.describe_rows())

    def describe_rows(self):
        """The lines of ``describe()``, each with the nodes it is about: a launch's row names the
        nodes the launch covers, another step's row its node, ``(line, ())`` the totals."""
        rows = []
        number = 0
        nodes = self.plan.nodes
        for step in self.program.steps:
            if isinstance(step, Launch):
                grid = "x".join(str(g) for g in step.workgroups)
                row = _row(str(number), f"{step.kernel}:{step.entry}", _ranges(step.nodes), grid, _launch_text(step))
                rows.append((row, tuple(step.nodes)))
                number += 1
            elif isinstance(step, ViewStep):
                row = _row("view", nodes[step.key].opcode, str(step.key), "-", _view_text(step.view))
                rows.append((row, (step.key,)))
            elif isinstance(step, Upload):
                how = " (constant)" if step.constant else " (resident)" if step.resident else ""
                row = _row("upload", nodes[step.key].opcode + how, str(step.key), "-", f"b{step.buffer} <- host")
                rows.append((row, (step.key,)))
            elif isinstance(step, Readback):
                row = _row("read", "", str(step.key), "-", f"host <- {_view_text(step.view)}")
                rows.append((row, (step.key,)))
            elif isinstance(step, HostStep):
                row = _row("numpy", nodes[step.key].opcode, str(step.key), "-", f"({step.reason})")
                rows.append((row, (step.key,)))
        memory = (
            f"device memory: {plural(len(self.program.buffers), 'buffer')}, {self.program.device_bytes} bytes "
            f"(plan peak {plural(self.plan.peak, 'element')}, {4 * self.plan.peak} bytes as float32)"
        )
        rows.append((self.summary(), ()))
        rows.append((memory, ()))
        return rows

    def counts(self):
        """What one run asks of the device: ``{"dispatches", "submits", "readbacks"}`` (``run_counts``)."""
        return run_counts(self.program)

    def __repr__(self):
        return f"<KernelReading: {self.summary()}>"


#: The columns of a reading's rows: step (launch number, view, upload, read, numpy), kernel or opcode,
#: nodes, workgroups, then the buffers. ``NODE_COLUMN`` slices a row's node column out.
COLUMN_WIDTHS = (8, 26, 14, 12)
NODE_COLUMN = slice(34, 48)


def _row(first, kernel, nodes, workgroups, text):
    step, name, node_width, grid_width = COLUMN_WIDTHS
    if len(nodes) >= node_width:  # a long list of covered nodes pushes the rest along
        return f"{first:<{step}}{kernel:<{name}}{nodes}  {workgroups:<{grid_width}}{text}"
    return f"{first:<{step}}{kernel:<{name}}{nodes:<{node_width}}{workgroups:<{grid_width}}{text}"


def _ranges(indices):
    """``1-8, 10, 12-13``: sorted node indices with runs joined."""
    parts = []
    run = []
    for index in sorted(indices):
        if run and index == run[-1] + 1:
            run.append(index)
            continue
        if run:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [index]
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(parts)


def _view_text(view):
    if view.is_constant:
        return f"constant {np.float32(view.constant)} {format_shape(view.shape)}"
    text = f"b{view.buffer}{format_shape(view.shape)}"
    if not view.is_dense:
        text += f" offset {view.offset} strides {format_shape(view.strides)}"
    return text


def _launch_text(launch):
    roles = dict(launch.views)
    written = [roles.pop(role) for role in ("out", "extra") if role in roles]  # a fused chain may write two
    reads = ", ".join(_view_text(view) for view in roles.values())
    out = ", ".join(_view_text(view) for view in written)
    text = f"{out} <- {reads}" if reads else out
    specialisation = dict(launch.specialisation)
    detail = specialisation.get("EXPRESSION") or specialisation.get("COMBINE")
    if specialisation.get("BODY"):  # a fused chain: its lets, then its expression
        detail = f"{specialisation['BODY']} {detail}"
    return f"{text}  {detail}" if detail else text


class Pool:
    """One new buffer for every value; ``share_buffers`` later packs them by lifetime."""

    def __init__(self):
        self.buffers = []
        self.pinned = set()
        self.scratch = set()  # buffers a launch works in that hold no node's value

    def allocate(self, elements, dtype="float32"):
        buffer = Buffer(len(self.buffers), int(elements), dtype)
        self.buffers.append(buffer)
        return buffer.id


class Selector(LaunchHelpers):
    """Walks a plan's schedule once and writes its kernel program.

    It is also the ``k`` of each primitive's kernel rules (``Primitive.wgsl_launch(k, node, views)``
    and ``wgsl_declines(k, node)``): the methods under "What a primitive's rule writes through"
    launch a kernel family for one node, and the kernels' limits are its attributes.
    """

    MAX_RANK = MAX_RANK
    MAX_BATCH_RANK = MAX_BATCH_RANK
    LOOP_LIMIT = LOOP_LIMIT
    LANES = LANES

    def __init__(self, plan):
        self.plan = plan
        self.nodes = plan.nodes
        self.pool = Pool()
        self.steps = []
        self.views = {}  # node -> View of its value on the device
        self.on_host = set()  # nodes whose value the host holds during a run
        self.backends = {}
        self.declined = {}
        for index in plan.schedule:
            node = self.nodes[index]
            if node.is_source:
                continue
            reason = self.decline_reason(node)
            if reason is not None:
                self.declined[index] = reason
        groups = find_groups(self.nodes, plan.schedule, plan.outputs, self.runs_on_device)
        # A group its composite declines (rows too long for a row kernel's loop) runs unfused.
        self.groups = {
            first: group for first, group in groups.items() if group.composite.wgsl_declines(self, group) is None
        }
        self.covered = {i for group in self.groups.values() for i in group.covered}
        # Sums of paddings into disjoint windows (a slice's gradient): one buffer, each part copied in.
        self.pad_sums = find_pad_sums(self.nodes, plan.schedule, plan.outputs, self.runs_on_device, self.covered)
        in_pad_sums = {i for pad_sum in self.pad_sums.values() for i in pad_sum.nodes}
        # Chains of elementwise nodes whose intermediates nobody else reads: one generated launch each.
        self.chains = find_chains(
            self.nodes, plan.schedule, plan.outputs, self.runs_on_device, self.covered | in_pad_sums
        )
        self.absorbed = {i for chain in self.chains.values() for i in chain.nodes if i != chain.root}
        self.absorbed |= in_pad_sums - set(self.pad_sums)
        # Concatenates of Reshapes only they read (a cut value's gradient): each source copied into its window.
        claimed = self.covered | self.absorbed  # a chain's root or a pad sum's is no Concatenate and no Reshape
        self.joins = find_concatenations(self.nodes, plan.schedule, plan.outputs, self.runs_on_device, claimed)
        self.absorbed |= {i for join in self.joins.values() for i in join.reshapes}

    def decline_reason(self, node):
        """Why the device does not run ``node`` (a sentence), or None when it does."""
        primitive = lookup(node.opcode)
        operands = [self.nodes[j] for j in node.operands]
        if node.dtype == "float64" or any(operand.dtype == "float64" for operand in operands):
            return "float64: WGSL has no f64"
        if primitive.kernel is None:
            return primitive.kernel_declined or f"no WGSL kernel for {node.opcode}"
        if node.dtype not in primitive.device_dtypes:
            return f"{node.dtype} results stay on the host"
        if node.size == 0 or any(operand.size == 0 for operand in operands):
            return "an empty value"
        if node.size > MAX_ELEMENTS or any(operand.size > MAX_ELEMENTS for operand in operands):
            return "a value larger than one storage binding (128 MiB)"
        if len(node.shape) > MAX_RANK or any(len(operand.shape) > MAX_RANK for operand in operands):
            return f"more than {MAX_RANK} axes"
        reason = primitive.wgsl_declines(self, node)
        if reason is not None:
            return reason
        if primitive.kernel == "elementwise" and primitive.wgsl is None:
            return f"no elementwise expression for {node.opcode}"
        if not has_kernel_rule(primitive):
            # A registered primitive may name a family (kernel = "reduce") and no rule that launches it.
            return f"no {primitive.kernel} kernel rule for {node.opcode}"
        return None

    def runs_on_device(self, index):
        return not self.nodes[index].is_source and index not in self.declined

    def operand_node(self, node, position):
        """Operand ``position`` of ``node``: its node (shape, dtype), for a primitive's ``wgsl_declines``."""
        return self.nodes[node.operands[position]]

    # Buffers, views and launches -------------------------------------------------------
    def allocate(self, shape, dtype="float32"):
        return View.of_buffer(self.pool.allocate(element_count(shape), dtype), shape)

    def launch(self, launch, covers, label=None):
        """Append a launch covering node ``covers`` (an index, or a fused group's indices)."""
        covers = (covers,) if isinstance(covers, int) else tuple(covers)
        self.steps.append(launch.covering(covers, label or self.nodes[covers[-1]].opcode))

    def with_buffer(self, view, node):
        """``view`` if it has a buffer; a constant is first written into a new one."""
        if not view.is_constant:
            return view
        dense = self.allocate(view.shape)
        self.launch(build.fill(dense, view.constant), node.index)
        return dense

    def dense(self, view, node):
        """``view`` itself when it is its buffer's head in row-major order, else a dense copy."""
        if view.is_dense:
            return view
        dense = self.allocate(view.shape)
        self.place(view, dense, node)
        return dense

    def place(self, view, target, node):
        """Write ``view``'s elements into the window ``target`` of a buffer."""
        if view.is_constant:
            self.launch(build.fill(target, view.constant), node.index)
        else:
            self.launch(build.copy(view, target), node.index)

    # Transfers --------------------------------------------------------------------
    def upload(self, index):
        node = self.nodes[index]
        constant = constant_view(node)
        if constant is not None:
            self.views[index] = constant
            return
        view = self.allocate(node.shape, node.dtype)
        step = Upload(
            index,
            view.buffer,
            node.dtype,
            constant=node.opcode == "Leaf",
            resident=node.opcode in ("Parameter", "Leaf"),
        )
        if step.resident:
            self.pool.pinned.add(view.buffer)
        self.steps.append(step)
        self.views[index] = view

    def read_back(self, index):
        if index not in self.on_host:
            self.steps.append(Readback(index, self.views[index], self.nodes[index].dtype))
            self.on_host.add(index)

    # The walk ---------------------------------------------------------------------
    def read(self, keep=()):
        """The kernel reading. ``keep``: nodes whose buffers live the whole program and hold nothing else
        (``DeviceTrainer``'s gradients, which it lays end to end for one optimizer launch)."""
        plan = self.plan
        device_reads = set()
        for index in plan.schedule:
            if self.runs_on_device(index):
                device_reads.update(self.nodes[index].operands)
        # Sources first: their uploads open the program, so a run submits them together.
        for index in plan.schedule:
            if self.nodes[index].is_source:
                self.on_host.add(index)
                self.backends[index] = "webgpu" if index in device_reads else "numpy"
                if index in device_reads:
                    self.upload(index)
        for index in plan.schedule:
            node = self.nodes[index]
            if node.is_source or (index in self.covered and index not in self.groups) or index in self.absorbed:
                continue
            if index in self.declined:
                for operand in node.operands:
                    self.read_back(operand)
                self.steps.append(HostStep(index, self.declined[index]))
                self.on_host.add(index)
                self.backends[index] = "numpy"
                if index in device_reads:
                    self.upload(index)
            elif index in self.groups:
                self.emit_group(self.groups[index])
            elif index in self.pad_sums:
                self.views[index] = emit_pad_sum(self, self.pad_sums[index])
            elif index in self.joins:
                self.views[index] = emit_concatenation(self, self.joins[index])
            elif index in self.chains:
                chain = self.chains[index]
                self.views[index] = self.fused_elementwise(chain, [self.views[j] for j in chain.operands])
            else:
                self.emit(index, [self.views[j] for j in node.operands])
        for index in plan.outputs:
            self.read_back(index)
        for index in plan.schedule:
            self.backends.setdefault(index, "webgpu")
        for index in keep:
            view = self.views.get(index)
            if view is not None and not view.is_constant:
                self.pool.pinned.add(view.buffer)
        buffers, steps = share_buffers(self.pool.buffers, self.steps, self.pool.pinned)
        return KernelReading(
            plan,
            Program(buffers, steps, scratch_peak(self.pool.buffers, self.steps, self.pool.scratch)),
            self.backends,
            self.groups,
            self.declined,
            self.chains,
            self.pad_sums,
        )

    def emit_group(self, group):
        """The fused launch of a group, as its composite names it (``Composite.wgsl_launch``)."""
        self.views[group.root] = group.composite.wgsl_launch(self, group, self.views[group.source])

    def emit(self, index, views):
        """The launches (or the new view) of one device node, as its primitive's rule writes them."""
        node = self.nodes[index]
        view = lookup(node.opcode).wgsl_launch(self, node, views)
        if not isinstance(view, View):
            raise LoweringError(
                f"{node.opcode}'s wgsl_launch returned {view!r}, not the View of the node's value",
                node=index,
                opcode=node.opcode,
            )
        self.views[index] = view


def constant_view(node):
    """A leaf of one repeated float32 value needs no buffer: it is a constant view."""
    if node.opcode != "Leaf" or node.dtype != "float32" or node.size == 0:
        return None
    flat = node.payload.reshape(-1)
    if (flat == flat[0]).all():
        return View.of_constant(float(flat[0]), node.shape)
    return None


_readings = weakref.WeakKeyDictionary()
_readings_lock = threading.Lock()


def kernel_reading(plan):
    """``plan.kernels()``: the plan's ``KernelReading``, made once per plan (plans are immutable)."""
    with _readings_lock:
        reading = _readings.get(plan)
        if reading is None:
            reading = Selector(plan).read()
            _readings[plan] = reading
        return reading
