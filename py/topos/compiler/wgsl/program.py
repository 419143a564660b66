"""A kernel program: device buffers and the steps that fill and read them, as data.

The kernel reading (``topos.compiler.kernels``) turns a plan into a ``Program``;
``topos.webgpu.runner`` executes one with wgpu-py. Steps run in order:

- ``Upload``: a value the host holds (a parameter, a feed, a constant, the
  result of a node the interpreter ran) is written into a buffer;
- ``Launch`` (``topos.compiler.wgsl.launch``): one kernel dispatch;
- ``Readback``: a view is read back into a host array (a readable, a gradient,
  or the operand of a node the interpreter runs);
- ``HostStep``: the numpy interpreter runs a node the device declined;
- ``ViewStep``: a node's value is a view of another's buffer (nothing runs).

Values are named by *keys* (plan node indices): an upload reads
``values[key]``, a readback and a host step write it.
"""

from dataclasses import dataclass, replace

from .launch import Launch


@dataclass(frozen=True)
class Buffer:
    """A device buffer of ``elements`` 4-byte elements (``float32`` or ``int32``).

    A *window* (``base`` a buffer id) has no memory of its own: it is elements ``start`` to
    ``start + elements`` of buffer ``base``, and every step that names it is bound to, writes or
    reads that range (``DeviceTrainer`` lays its parameters, gradients and moments end to end so
    that one launch updates them all). ``start`` is a multiple of ``WINDOW_ALIGNMENT`` elements.
    """

    id: int
    elements: int
    dtype: str = "float32"
    base: object = None
    start: int = 0

    @property
    def bytes(self):
        return 4 * max(self.elements, 1)


#: Elements between two windows' starts: WebGPU's default minStorageBufferOffsetAlignment, 256 bytes.
WINDOW_ALIGNMENT = 64


@dataclass(frozen=True)
class Upload:
    """Write host value ``key`` (a dense array) to the head of ``buffer``.

    ``constant``: the value is the same on every run (a leaf's payload), so it is written
    once per prepared program. ``resident``: the buffer is never reused for another value,
    so when the host hands over the very same array object as on the previous run, the
    write is skipped (parameters stay on the device between runs). topos treats the arrays
    it is given as immutable, as ``Parameters`` does: one changed in place is not seen.
    """

    key: object
    buffer: int
    dtype: str = "float32"
    constant: bool = False
    resident: bool = False


@dataclass(frozen=True)
class Readback:
    """Read ``view`` into host value ``key`` (of ``dtype``)."""

    key: object
    view: object
    dtype: str = "float32"


@dataclass(frozen=True)
class ViewStep:
    """Value ``key`` is ``view``: a new view of an existing buffer (or a constant), nothing runs.

    Recorded so that the kernel reading can show where reshapes, broadcasts and
    transposes went; runners skip it.
    """

    key: object
    view: object


@dataclass(frozen=True)
class HostStep:
    """The host (numpy) computes value ``key``; ``reason`` says why the device declined it."""

    key: object
    reason: str = ""


@dataclass(frozen=True, eq=False)
class Program:
    """Buffers and steps; compared by identity so that runners can cache their preparation."""

    buffers: tuple
    steps: tuple
    #: the most bytes of launch working memory (a convolution's im2col columns, say) live at one step:
    #: memory the plan's peak, which counts values, does not hold
    scratch_bytes: int = 0

    @property
    def launches(self):
        return [step for step in self.steps if isinstance(step, Launch)]

    @property
    def device_bytes(self):
        """The device memory the program's buffers take together (its peak: buffers are never freed mid-run;
        a window takes none of its own)."""
        return sum(buffer.bytes for buffer in self.buffers if buffer.base is None)


def scratch_peak(buffers, steps, scratch):
    """The most bytes of the ``scratch`` buffers (ids) that are live at one step, before sharing:
    a buffer lives from the first step that names it to the last."""
    spans = {}
    for position, step in enumerate(steps):
        for buffer_id in _named_buffers(step):
            if buffer_id in scratch:
                first, _ = spans.get(buffer_id, (position, position))
                spans[buffer_id] = (first, position)
    sizes = {buffer.id: buffer.bytes for buffer in buffers}
    events = sorted(
        [(lo, sizes[b]) for b, (lo, _) in spans.items()] + [(hi + 1, -sizes[b]) for b, (_, hi) in spans.items()]
    )
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return peak


def share_buffers(buffers, steps, pinned=()):
    """Map one-value-each buffers onto as few shared buffers as their lifetimes allow.

    A buffer lives from the first step that names it to the last (a pinned one for
    the whole program: its contents outlive a run). Buffers are placed largest first,
    each into the smallest shared buffer of its dtype whose tenants' lifetimes it does
    not overlap, else into a new one: the greedy-by-size assignment of TFLite's GPU
    delegate. Two buffers named by one step never share. Returns ``(buffers, steps)``.
    """
    first, last = {}, {}
    for position, step in enumerate(steps):
        for buffer_id in _named_buffers(step):
            first.setdefault(buffer_id, position)
            last[buffer_id] = position
    end = len(steps)
    shared = []  # [Buffer, [(first, last), ...]]
    mapping = {}
    for buffer in sorted(buffers, key=lambda b: (-b.elements, b.id)):
        if buffer.id not in first:
            continue
        span = (0, end) if buffer.id in pinned else (first[buffer.id], last[buffer.id])
        fits = [
            entry
            for entry in shared
            if entry[0].dtype == buffer.dtype and all(span[1] < lo or hi < span[0] for lo, hi in entry[1])
        ]
        if fits:
            entry = min(fits, key=lambda e: e[0].elements)
        else:
            entry = [Buffer(len(shared), buffer.elements, buffer.dtype), []]
            shared.append(entry)
        entry[1].append(span)
        mapping[buffer.id] = entry[0].id
    # Number the shared buffers in the order the program first names them (b0 is written first).
    order = {}
    for step in steps:
        for buffer_id in _named_buffers(step):
            order.setdefault(mapping[buffer_id], len(order))
    mapping = {virtual: order[shared_id] for virtual, shared_id in mapping.items()}
    renumbered = [Buffer(order[entry[0].id], entry[0].elements, entry[0].dtype) for entry in shared]
    return tuple(sorted(renumbered, key=lambda b: b.id)), tuple(_renamed(step, mapping) for step in steps)


def _named_buffers(step):
    if isinstance(step, Launch):
        return [binding.buffer for binding in step.bindings]
    if isinstance(step, Upload):
        return [step.buffer]
    if isinstance(step, (Readback, ViewStep)):
        return [] if step.view.is_constant else [step.view.buffer]
    return []


def _renamed(step, mapping):
    def view(v):
        return v if v.is_constant else replace(v, buffer=mapping[v.buffer])

    if isinstance(step, Launch):
        return replace(
            step,
            bindings=tuple(replace(b, buffer=mapping[b.buffer]) for b in step.bindings),
            views=tuple((role, view(v)) for role, v in step.views),
        )
    if isinstance(step, Upload):
        return replace(step, buffer=mapping[step.buffer])
    if isinstance(step, (Readback, ViewStep)):
        return replace(step, view=view(step.view))
    return step


def run_counts(program):
    """What one run of ``program`` asks of the device, read from its steps: ``{"dispatches",
    "submits", "readbacks"}``. The runner submits the launches recorded since the last
    submission whenever the host must see or change a buffer (a readback, a host step, an
    upload after launches) and at the end; uploads that open the program precede any launch.
    """
    dispatches = submits = readbacks = 0
    pending = 0
    for step in program.steps:
        if isinstance(step, Launch):
            dispatches += 1
            pending += 1
        elif isinstance(step, (Readback, HostStep, Upload)):
            readbacks += isinstance(step, Readback)
            submits += pending > 0
            pending = 0
    submits += pending > 0
    return {"dispatches": dispatches, "submits": submits, "readbacks": readbacks}
