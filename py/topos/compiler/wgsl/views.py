"""Strided views: how a kernel finds a value's elements in a device buffer.

A value on the device is a window on a buffer: an element offset and one stride
per axis (in elements, as numpy's strides divided by the item size). Reshaping a
contiguous value, broadcasting (stride 0), transposing (permuted strides) and
slicing (a moved offset, multiplied strides) make new views of the same buffer
without moving a single element; a kernel reads its operands through their views.

A *constant* view has no buffer at all: every element holds ``constant``. The
backward pass's full-shape constants (``Leaf`` nodes of one repeated value) and
scalar leaves become constants, and the elementwise kernel reads them from its
parameters.
"""

from dataclasses import dataclass


def contiguous_strides(shape):
    strides = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def element_count(shape):
    count = 1
    for extent in shape:
        count *= extent
    return count


@dataclass(frozen=True)
class View:
    """``buffer`` (a buffer id, None for a constant), ``offset``, ``shape``, ``strides``."""

    buffer: object
    offset: int
    shape: tuple
    strides: tuple
    constant: float = None

    @classmethod
    def of_buffer(cls, buffer, shape):
        """The whole of a contiguous value held at the start of ``buffer``."""
        shape = tuple(shape)
        return cls(buffer, 0, shape, contiguous_strides(shape))

    @classmethod
    def of_constant(cls, value, shape):
        shape = tuple(shape)
        return cls(None, 0, shape, (0,) * len(shape), float(value))

    @property
    def is_constant(self):
        return self.buffer is None

    @property
    def size(self):
        return element_count(self.shape)

    @property
    def rank(self):
        return len(self.shape)

    @property
    def is_contiguous(self):
        """True when the elements lie in row-major order, one after another, from ``offset``."""
        if self.is_constant:
            return False
        return all(
            stride == expected or extent == 1
            for stride, expected, extent in zip(self.strides, contiguous_strides(self.shape), self.shape)
        )

    @property
    def is_dense(self):
        """Contiguous and starting at the buffer's first element: the value *is* the buffer's head."""
        return self.is_contiguous and self.offset == 0

    def span(self):
        """One past the largest buffer index the view touches (how much of the buffer to read)."""
        if self.size == 0:
            return self.offset
        return self.offset + sum((extent - 1) * stride for extent, stride in zip(self.shape, self.strides)) + 1

    # New views of the same elements ------------------------------------------------
    def reshape(self, shape):
        """The same elements in a new shape, or None when this view cannot be reshaped in place (a strided
        view can where numpy's reshape needs no copy: ``split_view``)."""
        shape = tuple(shape)
        if self.is_constant:
            return View.of_constant(self.constant, shape)
        if not self.is_contiguous:
            return split_view(self, shape)
        return View(self.buffer, self.offset, shape, contiguous_strides(shape))

    def broadcast(self, shape):
        """numpy's broadcast_to: new leading axes and stretched size-1 axes get stride 0."""
        shape = tuple(shape)
        lead = len(shape) - len(self.shape)
        strides = [0] * lead
        for axis, (extent, stride) in enumerate(zip(self.shape, self.strides)):
            strides.append(0 if extent == 1 and shape[lead + axis] != 1 else stride)
        return View(self.buffer, self.offset, shape, tuple(strides), self.constant)

    def transpose(self, axes):
        """Output axis i is this view's axis ``axes[i]``."""
        return View(
            self.buffer,
            self.offset,
            tuple(self.shape[a] for a in axes),
            tuple(self.strides[a] for a in axes),
            self.constant,
        )

    def slice(self, start, step, shape):
        """The strided box that starts at ``start`` and takes every ``step``-th element, ``shape`` of them."""
        if self.is_constant:
            return View.of_constant(self.constant, shape)
        offset = self.offset + sum(lo * stride for lo, stride in zip(start, self.strides))
        strides = tuple(stride * st for stride, st in zip(self.strides, step))
        return View(self.buffer, offset, tuple(shape), strides)

    def reversed(self, axes):
        """The same elements in reverse order along ``axes``: the offset moves to each such axis's last
        element and its stride changes sign (the kernels add offsets in u32, which wraps, so a negative
        stride steps back)."""
        if self.is_constant:
            return self
        offset = self.offset + sum((self.shape[axis] - 1) * self.strides[axis] for axis in axes)
        strides = tuple(-stride if axis in axes else stride for axis, stride in enumerate(self.strides))
        return View(self.buffer, offset, self.shape, strides)

    def merged(self):
        """An equivalent view of lowest rank: size-1 axes dropped, axes that step evenly joined.

        Kernels decode indices axis by axis, so fewer axes mean less work per element.
        """
        pairs = [(extent, stride) for extent, stride in zip(self.shape, self.strides) if extent != 1]
        merged = []
        for extent, stride in pairs:
            if merged and merged[-1][1] == stride * extent:
                previous_extent, _ = merged[-1]
                merged[-1] = (previous_extent * extent, stride)
            else:
                merged.append((extent, stride))
        return View(
            self.buffer,
            self.offset,
            tuple(e for e, _ in merged),
            tuple(s for _, s in merged),
            self.constant,
        )


def split_view(view, shape):
    """``view`` (strided) seen in ``shape``, the same elements in row-major order, without moving any;
    None when its strides do not allow it (numpy's no-copy reshape)."""
    shape = tuple(shape)
    if view.is_constant or view.size == 0 or view.size != element_count(shape):
        return None
    old = [(e, s) for e, s in zip(view.shape, view.strides) if e != 1]
    new = [e for e in shape if e != 1]
    strides = []
    oi = ni = 0
    while ni < len(new):
        oj, nj = oi + 1, ni + 1
        old_count, new_count = old[oi][0], new[ni]
        while old_count != new_count:
            if new_count < old_count:
                new_count *= new[nj]
                nj += 1
            else:
                old_count *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None
        group = [old[oj - 1][1]]
        for extent in reversed(new[ni + 1 : nj]):
            group.insert(0, group[0] * extent)
        strides.extend(group)
        oi, ni = oj, nj
    full = iter(strides)
    return View(view.buffer, view.offset, shape, tuple(0 if e == 1 else next(full) for e in shape))
