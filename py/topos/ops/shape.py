"""Primitives that move elements without arithmetic: reshape, broadcast,
transpose, slice, pad and concatenate.

None of them computes a FLOP. On WebGPU reshape, broadcast, transpose and
slice launch nothing: each is a new view of its operand's buffer, which the
next kernel reads through strides; pad and concatenate write their operands
into windows of a new buffer."""

import numpy as np

from ..errors import ShapeError
from ..text import format_shape
from . import attributes as kinds
from . import batching
from .registry import Meta, Primitive, axis_index, integer_tuple_attr, register


def reshape_target(shape, source_shape):
    """The shape a reshape of ``source_shape`` to ``shape`` gives: its one ``-1`` worked out from the size.

    Raises ``ShapeError`` for a shape that is not integers, more than one ``-1``,
    or a ``-1`` that no extent fits (``(0, -1)``: any extent would do).
    """

    def fail(message):
        raise ShapeError(f"Reshape: {message}", opcode="Reshape", shapes=[tuple(source_shape)])

    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or any(
        isinstance(extent, bool) or not isinstance(extent, (int, np.integer)) for extent in shape
    ):
        fail(f"the target shape must be a tuple of integers, got {shape!r}")
    shape = tuple(int(extent) for extent in shape)
    if shape.count(-1) > 1:
        fail(f"at most one -1 in the target shape {shape}")
    if -1 in shape:
        size = Meta(tuple(source_shape), "").size
        known = 1
        for extent in shape:
            if extent != -1:
                known *= extent
        if known <= 0 or size % known:
            fail(f"cannot reshape {format_shape(source_shape)} into {shape}")
        shape = tuple(size // known if extent == -1 else extent for extent in shape)
    if any(extent < 0 for extent in shape):
        fail(f"cannot reshape {format_shape(source_shape)} into {shape}: extents are not negative")
    return shape


#: The result dtypes the device computes a shape op in: the copy kernel moves 4-byte words bit for
#: bit, so a random key split and sliced stays on the device (int32 indices stay on the host).
VIEWED_DTYPES = ("float32", "uint32")


@register
class Reshape(Primitive):
    name = "Reshape"
    attributes = {"shape": kinds.extents}
    arity = 1
    kernel = "copy"
    device_dtypes = VIEWED_DTYPES
    returns_view = True  # numpy copies instead where the operand's strides cannot be reshaped

    def normalize(self, metas, attrs):
        return {"shape": reshape_target(attrs.get("shape"), metas[0].shape)}

    def infer(self, metas, attrs):
        shape = attrs["shape"]
        if any(extent < 0 for extent in shape) or Meta(shape, "").size != metas[0].size:
            self.fail(f"cannot reshape {format_shape(metas[0].shape)} into {format_shape(shape)}", metas)
        return Meta(shape, metas[0].dtype)

    def forward(self, inputs, attrs):
        x = inputs[0]
        return x.reshape(attrs["shape"]) if isinstance(x, np.ndarray) else np.reshape(x, attrs["shape"])

    def batch(self, e, operands, dims, attrs):
        x = batching.to_front(e, operands[0], dims[0])
        return e.reshape(x, e.shape(x)[:1] + attrs["shape"]), 0

    def vjp(self, e, g, operands, out, attrs):
        return [e.reshape(g, e.shape(operands[0]))]

    def stablehlo(self, ctx, node):
        return ctx.reshape(ctx.operands(node)[0], ctx.operand_node(node, 0).shape, node.shape, node.dtype)

    def wgsl_launch(self, k, node, views):
        # A strided view cannot always be reshaped in place: then its elements are copied first.
        view = views[0].reshape(node.shape) or k.dense(views[0], node).reshape(node.shape)
        return k.new_view(node, view)

    def cost(self, operands, meta, attrs):
        return 0, 0  # it relabels its operand's memory: nothing is computed or moved


@register
class Broadcast(Primitive):
    """numpy's broadcast_to: new leading axes, and size-1 axes stretched."""

    name = "Broadcast"
    attributes = {"shape": kinds.extents}
    arity = 1
    kernel = "copy"
    device_dtypes = VIEWED_DTYPES
    element_flops = 0
    returns_view = True

    def normalize(self, metas, attrs):
        return {"shape": integer_tuple_attr(self, metas, attrs.get("shape"), "the target shape")}

    def infer(self, metas, attrs):
        source, target = metas[0].shape, attrs["shape"]
        offset = len(target) - len(source)
        if offset < 0 or any(extent not in (1, target[offset + axis]) for axis, extent in enumerate(source)):
            self.fail(f"cannot broadcast {format_shape(source)} to {format_shape(target)}", metas)
        return Meta(target, metas[0].dtype)

    def forward(self, inputs, attrs):
        return broadcast_view(inputs[0], attrs["shape"])

    def batch(self, e, operands, dims, attrs):
        # The example's new leading axes go after the batch: the operand takes them as extent 1 first.
        x = batching.to_front(e, operands[0], dims[0])
        shape, target = e.shape(x), attrs["shape"]
        x = e.reshape(x, shape[:1] + (1,) * (len(target) + 1 - len(shape)) + shape[1:])
        return e.broadcast(x, shape[:1] + target), 0

    def vjp(self, e, g, operands, out, attrs):
        source = e.shape(operands[0])
        target = attrs["shape"]
        offset = len(target) - len(source)
        axes = tuple(range(offset)) + tuple(
            offset + axis for axis, extent in enumerate(source) if extent == 1 and target[offset + axis] != 1
        )
        if not axes:
            return [e.reshape(g, source)] if source != target else [g]
        return [e.reshape(e.sum(g, axes, False), source)]

    def stablehlo(self, ctx, node):
        source = ctx.operand_node(node, 0).shape
        dims = broadcast_axes(source, node.shape)
        return ctx.broadcast_in_dim(ctx.operands(node)[0], source, node.shape, node.dtype, dims)

    def wgsl_launch(self, k, node, views):
        return k.new_view(node, views[0].broadcast(node.shape))


def broadcast_view(x, shape):
    """``np.broadcast_to(x, shape)``, a read-only view, made directly for a C-contiguous ``x``.

    ``np.broadcast_to`` checks and wraps in Python (10 us a call, eighteen calls a step of the
    gallery transformer); the view is an ndarray over ``x``'s buffer with zero strides on the
    new and stretched axes (2 us). Any other ``x`` takes ``np.broadcast_to``.
    """
    if not isinstance(x, np.ndarray) or not x.flags.c_contiguous or x.ndim > len(shape):
        return np.broadcast_to(x, shape)
    offset = len(shape) - x.ndim
    strides = [0] * offset
    for axis, extent in enumerate(x.shape):
        target = shape[offset + axis]
        if extent == target:
            strides.append(x.strides[axis])
        elif extent == 1:
            strides.append(0)
        else:
            return np.broadcast_to(x, shape)  # names the shapes that do not broadcast
    view = np.ndarray(shape, x.dtype, x, 0, tuple(strides))
    view.flags.writeable = False
    return view


def broadcast_axes(source, target):
    """For each axis of ``source``, the axis of ``target`` it maps to (StableHLO's broadcast_dimensions)."""
    offset = len(target) - len(source)
    return tuple(range(offset, len(target)))


@register
class Transpose(Primitive):
    """Permutes axes: output axis i is input axis ``axes[i]``."""

    name = "Transpose"
    attributes = {"axes": kinds.permutation}
    arity = 1
    kernel = "copy"
    device_dtypes = VIEWED_DTYPES
    element_flops = 0
    returns_view = True

    def normalize(self, metas, attrs):
        rank = metas[0].rank
        axes = attrs.get("axes")
        if axes is None:
            axes = tuple(reversed(range(rank)))
        if not isinstance(axes, (tuple, list)):
            self.fail(f"axes must be a tuple of integers, got {axes!r}", metas)
        axes = tuple(axis_index(axis, metas[0].shape, self.name) for axis in axes)
        if sorted(axes) != list(range(rank)):
            self.fail(f"axes {axes} are not a permutation of {rank} axes", metas)
        return {"axes": axes}

    def infer(self, metas, attrs):
        shape = metas[0].shape
        return Meta(tuple(shape[axis] for axis in attrs["axes"]), metas[0].dtype)

    def forward(self, inputs, attrs):
        x = inputs[0]
        # The method, not np.transpose's Python wrapper (26 transposes a step of the gallery transformer).
        return x.transpose(attrs["axes"]) if isinstance(x, np.ndarray) else np.transpose(x, attrs["axes"])

    def batch(self, e, operands, dims, attrs):
        x = batching.to_front(e, operands[0], dims[0])
        return e.transpose(x, (0,) + batching.shifted(attrs["axes"])), 0

    def vjp(self, e, g, operands, out, attrs):
        inverse = tuple(int(i) for i in np.argsort(attrs["axes"]))
        return [e.transpose(g, inverse)]

    def stablehlo(self, ctx, node):
        dims = ", ".join(str(axis) for axis in node.attrs["axes"])
        source_type = ctx.type(ctx.operand_node(node, 0))
        return ctx.emit(
            f"stablehlo.transpose {ctx.operands(node)[0]}, dims = [{dims}] : ({source_type}) -> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        return k.new_view(node, views[0].transpose(node.attrs["axes"]))


@register
class Slice(Primitive):
    """A strided box: ``start``, ``stop`` and positive ``step`` per axis.

    ``0 <= start <= stop <= extent``; ``start == stop`` takes nothing, an empty axis.
    """

    name = "Slice"
    attributes = {"start": kinds.per_axis, "stop": kinds.per_axis, "step": kinds.per_axis}
    arity = 1
    kernel = "copy"
    device_dtypes = VIEWED_DTYPES
    element_flops = 0
    returns_view = True

    def normalize(self, metas, attrs):
        return {key: integer_tuple_attr(self, metas, attrs.get(key), key) for key in ("start", "stop", "step")}

    def infer(self, metas, attrs):
        shape = metas[0].shape
        start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
        if not len(start) == len(stop) == len(step) == len(shape):
            self.fail(f"needs one start, stop and step per axis of {format_shape(shape)}", metas)
        out = []
        for axis, extent in enumerate(shape):
            lo, hi, st = start[axis], stop[axis], step[axis]
            if st < 1 or not 0 <= lo <= hi <= extent:
                self.fail(f"axis {axis} of {format_shape(shape)}: slice {lo}:{hi}:{st} is out of range", metas)
            out.append((hi - lo + st - 1) // st)
        return Meta(tuple(out), metas[0].dtype)

    def forward(self, inputs, attrs):
        index = tuple(slice(lo, hi, st) for lo, hi, st in zip(attrs["start"], attrs["stop"], attrs["step"]))
        return inputs[0][index]

    def batch(self, e, operands, dims, attrs):
        x = batching.to_front(e, operands[0], dims[0])
        start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
        return e.slice(x, (0,) + start, e.shape(x)[:1] + stop, (1,) + step), 0

    def vjp(self, e, g, operands, out, attrs):
        shape = e.shape(operands[0])
        out_shape = e.shape(out)
        low = attrs["start"]
        interior = tuple(st - 1 for st in attrs["step"])
        # An axis the slice left empty pads its whole extent after ``lo``.
        high = tuple(
            extent - (lo + (n - 1) * st + 1 if n else lo)
            for extent, lo, n, st in zip(shape, low, out_shape, attrs["step"])
        )
        return [e.pad(g, low, high, interior)]

    def stablehlo(self, ctx, node):
        box = ", ".join(
            f"{lo}:{hi}:{st}" for lo, hi, st in zip(node.attrs["start"], node.attrs["stop"], node.attrs["step"])
        )
        source_type = ctx.type(ctx.operand_node(node, 0))
        return ctx.emit(f"stablehlo.slice {ctx.operands(node)[0]} [{box}] : ({source_type}) -> {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        return k.new_view(node, views[0].slice(node.attrs["start"], node.attrs["step"], node.shape))


@register
class Pad(Primitive):
    """Zero padding: ``low`` before, ``high`` after, ``interior`` between elements (all >= 0)."""

    name = "Pad"
    attributes = {"low": kinds.per_axis, "high": kinds.per_axis, "interior": kinds.per_axis}
    arity = 1
    kernel = "copy"
    element_flops = 0

    def normalize(self, metas, attrs):
        return {key: integer_tuple_attr(self, metas, attrs.get(key), key) for key in ("low", "high", "interior")}

    def infer(self, metas, attrs):
        shape = metas[0].shape
        low, high, interior = attrs["low"], attrs["high"], attrs["interior"]
        if not len(low) == len(high) == len(interior) == len(shape) or min(low + high + interior, default=0) < 0:
            self.fail(f"needs non-negative low, high and interior padding per axis of {format_shape(shape)}", metas)
        out = tuple(
            lo + hi + extent + max(extent - 1, 0) * inner for extent, lo, hi, inner in zip(shape, low, high, interior)
        )
        return Meta(out, metas[0].dtype)

    def forward(self, inputs, attrs):
        x = inputs[0]
        out_shape = self.infer([Meta(x.shape, x.dtype.name)], attrs).shape
        return self.forward_into(inputs, attrs, np.empty(out_shape, dtype=x.dtype))

    def forward_into(self, inputs, attrs, out):
        x = inputs[0]
        out[...] = 0
        # An empty axis writes nothing: its window stops where it starts (lo - inner would wrap below 0).
        index = tuple(
            slice(lo, lo + (extent - 1) * (inner + 1) + 1 if extent else lo, inner + 1)
            for extent, lo, inner in zip(x.shape, attrs["low"], attrs["interior"])
        )
        out[index] = x
        return out

    def batch(self, e, operands, dims, attrs):
        x = batching.to_front(e, operands[0], dims[0])
        return e.pad(x, (0,) + attrs["low"], (0,) + attrs["high"], (0,) + attrs["interior"]), 0

    def vjp(self, e, g, operands, out, attrs):
        shape = e.shape(operands[0])
        start = attrs["low"]
        step = tuple(inner + 1 for inner in attrs["interior"])
        stop = tuple(lo + (extent - 1) * st + 1 if extent else lo for lo, extent, st in zip(start, shape, step))
        return [e.slice(g, start, stop, step)]

    def stablehlo(self, ctx, node):
        zero = ctx.splat(0.0, (), node.dtype)
        low, high, interior = (", ".join(str(n) for n in node.attrs[key]) for key in ("low", "high", "interior"))
        source_type = ctx.type(ctx.operand_node(node, 0))
        return ctx.emit(
            f"stablehlo.pad {ctx.operands(node)[0]}, {zero}, low = [{low}], high = [{high}], interior = [{interior}] : "
            f"({source_type}, {ctx.tensor_type((), node.dtype)}) -> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        # Zeros, then the operand written into the window its padding leaves.
        out = k.output(node)
        k.fill(out, 0.0, node)
        step = tuple(inner + 1 for inner in node.attrs["interior"])
        k.place(views[0], out.slice(node.attrs["low"], step, views[0].shape), node)
        return out


@register
class Concatenate(Primitive):
    """Joins operands of one rank along ``axis``; the other axes must agree."""

    name = "Concatenate"
    attributes = {"axis": kinds.axis}
    arity = None
    kernel = "copy"
    device_dtypes = VIEWED_DTYPES
    element_flops = 0
    batch = batching.leading_axis

    def normalize(self, metas, attrs):
        if not metas:
            self.fail("needs at least one operand", metas)
        return {"axis": axis_index(attrs.get("axis"), metas[0].shape, self.name)}

    def infer(self, metas, attrs):
        if not metas:
            self.fail("needs at least one operand", metas)
        axis = attrs["axis"]
        first = metas[0]
        total = 0
        for meta in metas:
            if meta.dtype != first.dtype:
                self.fail(f"operand dtypes {first.dtype} and {meta.dtype} differ", metas)
            if meta.rank != first.rank or any(
                a != b for i, (a, b) in enumerate(zip(meta.shape, first.shape)) if i != axis
            ):
                self.fail(
                    f"shapes {format_shape(first.shape)} and {format_shape(meta.shape)} differ off axis {axis}",
                    metas,
                )
            total += meta.shape[axis]
        shape = list(first.shape)
        shape[axis] = total
        return Meta(tuple(shape), first.dtype)

    def forward(self, inputs, attrs):
        return np.concatenate(inputs, axis=attrs["axis"])

    def forward_into(self, inputs, attrs, out):
        return np.concatenate(inputs, axis=attrs["axis"], out=out)

    def vjp(self, e, g, operands, out, attrs):
        axis = attrs["axis"]
        out_shape = e.shape(out)
        grads = []
        offset = 0
        for operand in operands:
            extent = e.shape(operand)[axis]
            start = tuple(offset if i == axis else 0 for i in range(len(out_shape)))
            stop = tuple(offset + extent if i == axis else n for i, n in enumerate(out_shape))
            grads.append(e.slice(g, start, stop, (1,) * len(out_shape)))
            offset += extent
        return grads

    def stablehlo(self, ctx, node):
        types = ", ".join(ctx.type(ctx.operand_node(node, i)) for i in range(len(node.operands)))
        operands = ", ".join(ctx.operands(node))
        return ctx.emit(f"stablehlo.concatenate {operands}, dim = {node.attrs['axis']} : ({types}) -> {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        # Each operand written into its window of the output, one after another along the axis.
        axis = node.attrs["axis"]
        out = k.output(node)
        offset = 0
        for view in views:
            start = tuple(offset if a == axis else 0 for a in range(len(node.shape)))
            k.place(view, out.slice(start, (1,) * len(node.shape), view.shape), node)
            offset += view.shape[axis]
        return out


@register
class Reverse(Primitive):
    """The elements in reverse order along ``axes`` (numpy's ``flip``, StableHLO's ``reverse``).

    Recorded by the engine: a convolution's input gradient reads its kernel spatially reversed.
    Its derivative is itself. On WebGPU the copy kernel writes it, reading through negative strides.
    """

    name = "Reverse"
    attributes = {"axes": kinds.axes}
    arity = 1
    kernel = "copy"
    element_flops = 0
    batch = batching.leading_axes

    def normalize(self, metas, attrs):
        axes = attrs.get("axes")
        if not isinstance(axes, (tuple, list)):
            self.fail(f"axes must be a tuple of integers, got {axes!r}", metas)
        axes = tuple(axis_index(axis, metas[0].shape, self.name) for axis in axes)
        if len(set(axes)) != len(axes):
            self.fail(f"repeated axis in {axes}", metas)
        return {"axes": tuple(sorted(axes))}

    def infer(self, metas, attrs):
        return metas[0]

    def forward(self, inputs, attrs):
        return np.flip(inputs[0], attrs["axes"]).copy()

    def forward_into(self, inputs, attrs, out):
        out[...] = np.flip(inputs[0], attrs["axes"])
        return out

    def vjp(self, e, g, operands, out, attrs):
        return [e.apply("Reverse", [g], axes=attrs["axes"])]

    def stablehlo(self, ctx, node):
        dims = ", ".join(str(axis) for axis in node.attrs["axes"])
        return ctx.emit(f"stablehlo.reverse {ctx.operands(node)[0]}, dims = [{dims}] : {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        # The operand read from its last element backwards along each axis (u32 offsets wrap, so a
        # negative stride steps back), copied into a buffer of its own.
        out = k.output(node)
        k.place(views[0].reversed(node.attrs["axes"]), out, node)
        return out
