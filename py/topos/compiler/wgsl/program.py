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
    """Map one-value-each buffers onto as few device buffers as their lifetimes allow.

    A buffer lives from the first step that names it to the last (a pinned one for the whole
    program: its contents outlive a run). Buffers are placed largest first, each at the lowest
    aligned offset of the smallest device buffer of its dtype where no tenant whose lifetime it
    overlaps holds those elements, else into a new one: TFLite GPU's greedy-by-size offsets, within
    one buffer a size. Without offsets a buffer held one tenant at a time, and a program whose large
    values end while many small ones live (the mixture density network's backward: eight of 1500
    elements beside one of 8000) took a buffer each, 1.1x its plan's peak. A tenant past offset 0 is
    a window (``Buffer.base``). Two buffers named by one step never share a device buffer (WebGPU
    forbids one buffer bound writable and read in one dispatch), and a pinned one has its device
    buffer alone (``DeviceTrainer`` makes it a window of a bank). Returns ``(buffers, steps)``.
    """
    first, last, named = {}, {}, {}
    for position, step in enumerate(steps):
        for buffer_id in _named_buffers(step):
            first.setdefault(buffer_id, position)
            last[buffer_id] = position
            named.setdefault(buffer_id, set()).add(position)
    end = len(steps)
    shared = []  # [Buffer, [(span, start, elements, steps), ...], closed]
    placed = {}  # virtual id -> (shared id, start)
    for buffer in sorted(buffers, key=lambda b: (-b.elements, b.id)):
        if buffer.id not in first:
            continue
        alone = buffer.id in pinned
        span = (0, end) if alone else (first[buffer.id], last[buffer.id])
        size = max(buffer.elements, 1)
        choices = []
        for entry in [] if alone else shared:
            if entry[0].dtype != buffer.dtype or entry[2]:
                continue
            if any(named[buffer.id] & tenant[3] for tenant in entry[1]):
                continue
            start = _lowest_start(entry[0].elements, size, [t for t in entry[1] if _overlap(span, t[0])])
            if start is not None:
                choices.append((entry[0].elements, start, entry[0].id, entry))
        if choices:
            _, start, _, entry = min(choices, key=lambda c: c[:3])
        else:
            start, entry = 0, [Buffer(len(shared), buffer.elements, buffer.dtype), [], alone]
            shared.append(entry)
        entry[1].append((span, start, size, named[buffer.id]))
        placed[buffer.id] = (entry[0].id, start)
    # Number the device buffers in the order the program first names them (b0 is written first), then
    # the windows, in the same order.
    order, windows = {}, {}
    for step in steps:
        for buffer_id in _named_buffers(step):
            order.setdefault(placed[buffer_id][0], len(order))
    renumbered = [Buffer(order[entry[0].id], entry[0].elements, entry[0].dtype) for entry in shared]
    renumbered.sort(key=lambda b: b.id)
    sizes = {buffer.id: buffer.elements for buffer in buffers}
    mapping = {}
    for step in steps:
        for buffer_id in _named_buffers(step):
            if buffer_id in mapping:
                continue
            shared_id, start = placed[buffer_id]
            if start == 0:
                mapping[buffer_id] = order[shared_id]
                continue
            base = renumbered[order[shared_id]]
            windows[buffer_id] = Buffer(len(renumbered) + len(windows), sizes[buffer_id], base.dtype, base.id, start)
            mapping[buffer_id] = windows[buffer_id].id
    return tuple(renumbered) + tuple(windows.values()), tuple(_renamed(step, mapping) for step in steps)


def _overlap(span, other):
    return not (span[1] < other[0] or other[1] < span[0])


def _lowest_start(capacity, size, tenants):
    """The lowest multiple of ``WINDOW_ALIGNMENT`` where ``size`` elements fit within ``capacity`` clear of
    every ``(span, start, elements, steps)`` tenant; None when none does."""
    start = 0
    for _, lo, elements, _ in sorted(tenants, key=lambda t: t[1]):
        if start + size <= lo:
            break
        start = max(start, -(-(lo + elements) // WINDOW_ALIGNMENT) * WINDOW_ALIGNMENT)
    return start if start + size <= capacity else None


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
