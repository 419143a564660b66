"""Convolution: XLA's ``ConvGeneralDilated`` in topos's one layout.

``Convolution(lhs, rhs)`` takes an image batch ``lhs`` [N, C, *spatial] and a
kernel ``rhs`` [O, C / feature_groups, *window] and gives [N / batch_groups,
O, *out] (NCHW and OIHW, PyTorch's layout: the gallery and the benchmarks
compare with PyTorch, and shapes read the same way there). Any number of
spatial axes (one, two, three...). Its attributes are XLA's, exactly:

- ``strides``: the step of the window along each spatial axis;
- ``padding``: a (low, high) pair of zeros added on each spatial axis; a
  negative amount crops instead (the transposes need it);
- ``lhs_dilation``: ``d - 1`` zeros put between the input's elements (a
  transposed convolution; the input gradient of a strided one);
- ``rhs_dilation``: the window's taps ``d`` apart (an atrous convolution);
- ``feature_groups``: the channels split into that many groups, each
  convolved with its own part of the kernel's output channels (depthwise
  where it equals C);
- ``batch_groups``: the batch split into that many contiguous groups, each
  giving its own part of the output channels (the weight gradient of a
  grouped convolution).

Each spatial extent of the output is ``(padded - dilated window) // stride +
1``, where ``padded = low + (extent - 1) * lhs_dilation + 1 + high`` and
``dilated window = (k - 1) * rhs_dilation + 1``.

The derivative rules are JAX's (``_conv_general_dilated_transpose_lhs`` and
``_rhs``): both gradients are convolutions again, so the backward's own nodes
are ``Convolution`` and a gradient of a gradient follows from the same rule.
JAX swaps dimension numbers where topos, whose layout is fixed, records a
``Transpose``; the input gradient reads the kernel spatially reversed
(``Reverse``).
"""

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..text import format_shape
from . import attributes as kinds
from . import batching
from .hooks import matmul
from .registry import Meta, Primitive, bytes_moved, integer_attr, integer_tuple_attr, register, require_float

#: Elements of the column matrix the numpy forward gathers at a time: a few MiB, so that the
#: gather and the product that reads it stay in the cache; the batch is taken in chunks of it.
COLUMN_BUDGET = 1 << 19

SPATIAL_ATTRIBUTES = ("strides", "lhs_dilation", "rhs_dilation")


def dilated(extent, dilation):
    """The extent of ``extent`` elements with ``dilation - 1`` zeros between each two."""
    return 0 if extent == 0 else (extent - 1) * dilation + 1


def padded_extents(shape, attrs):
    """The spatial extents of the input after its dilation and padding."""
    return tuple(
        low + dilated(extent, dilation) + high
        for extent, (low, high), dilation in zip(shape[2:], attrs["padding"], attrs["lhs_dilation"])
    )


def output_extents(lhs_shape, rhs_shape, attrs):
    """The output's spatial extents (each may be negative where the window does not fit)."""
    return tuple(
        (padded - dilated(window, dilation)) // stride + 1
        for padded, window, dilation, stride in zip(
            padded_extents(lhs_shape, attrs), rhs_shape[2:], attrs["rhs_dilation"], attrs["strides"]
        )
    )


@register
class Convolution(Primitive):
    """``Convolution(lhs, rhs)``: lhs [N, C, *spatial] convolved with rhs [O, C / feature_groups, *window].

    XLA's ``ConvGeneralDilated`` semantics (this module's docstring); the result is
    [N / batch_groups, O, *out]. ``topos.conv`` records it.
    """

    name = "Convolution"
    arity = 2
    kernel = "convolution"
    attributes = {
        "strides": kinds.per_spatial_axis,
        "padding": kinds.padding_pairs,
        "lhs_dilation": kinds.per_spatial_axis,
        "rhs_dilation": kinds.per_spatial_axis,
        "feature_groups": kinds.positive,
        "batch_groups": kinds.positive,
    }

    def normalize(self, metas, attrs):
        if metas[0].rank < 3:
            self.fail(f"needs an input [N, C, *spatial] of rank >= 3, got {format_shape(metas[0].shape)}", metas)
        spatial = metas[0].rank - 2
        result = {}
        for key in SPATIAL_ATTRIBUTES:
            value = attrs.get(key, 1)
            values = integer_tuple_attr(self, metas, value, key)
            result[key] = values * spatial if len(values) == 1 and spatial > 1 else values
        padding = attrs.get("padding", ((0, 0),) * spatial)
        if not isinstance(padding, (tuple, list)) or not all(
            isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in padding
        ):
            self.fail(f"padding must be a (low, high) pair per spatial axis, got {padding!r}", metas)
        result["padding"] = tuple(integer_tuple_attr(self, metas, pair, "padding") for pair in padding)
        for key in ("feature_groups", "batch_groups"):
            result[key] = integer_attr(self, metas, attrs.get(key, 1), key)
        return result

    def infer(self, metas, attrs):
        require_float(self, metas)
        lhs, rhs = metas
        if lhs.dtype != rhs.dtype:
            self.fail(f"operand dtypes {lhs.dtype} and {rhs.dtype} differ", metas)
        if lhs.rank < 3 or rhs.rank != lhs.rank:
            self.fail(
                f"needs an input [N, C, *spatial] and a kernel [O, I, *window] of one rank >= 3, "
                f"got {format_shape(lhs.shape)} and {format_shape(rhs.shape)}",
                metas,
            )
        spatial = lhs.rank - 2
        for key in SPATIAL_ATTRIBUTES + ("padding",):
            if len(attrs[key]) != spatial:
                self.fail(f"{key} {attrs[key]} needs one entry per spatial axis ({spatial})", metas)
        for key in SPATIAL_ATTRIBUTES:
            if min(attrs[key]) < 1:
                self.fail(f"{key} {attrs[key]} must be positive", metas)
        groups, batch_groups = attrs["feature_groups"], attrs["batch_groups"]
        if groups < 1 or batch_groups < 1:
            self.fail(f"feature_groups {groups} and batch_groups {batch_groups} must be positive", metas)
        if groups > 1 and batch_groups > 1:
            self.fail(f"at most one of feature_groups ({groups}) and batch_groups ({batch_groups}) may exceed 1", metas)
        (n, c), (o, i) = lhs.shape[:2], rhs.shape[:2]
        if c % groups:
            self.fail(f"feature_groups {groups} does not divide the input's {c} channels", metas)
        if c // groups != i:
            per_group = f" / feature_groups {groups} = {c // groups}" if groups > 1 else ""
            self.fail(
                f"channels differ: the input {format_shape(lhs.shape)} has {c}{per_group}, "
                f"the kernel {format_shape(rhs.shape)} takes {i}",
                metas,
            )
        for what, count in (("feature_groups", groups), ("batch_groups", batch_groups)):
            if o % count:
                self.fail(f"{what} {count} does not divide the kernel's {o} output channels", metas)
        if n % batch_groups:
            self.fail(f"batch_groups {batch_groups} does not divide the batch of {n}", metas)
        if min(rhs.shape[2:]) < 1:
            self.fail(f"the kernel {format_shape(rhs.shape)} has an empty window", metas)
        padded = padded_extents(lhs.shape, attrs)
        for axis, (extent, window, dilation) in enumerate(zip(padded, rhs.shape[2:], attrs["rhs_dilation"])):
            if extent < dilated(window, dilation):
                self.fail(
                    f"spatial axis {axis}: the window spans {dilated(window, dilation)} "
                    f"(extent {window}, dilation {dilation}), more than the {extent} of the padded input",
                    metas,
                )
        return Meta((n // batch_groups, o) + output_extents(lhs.shape, rhs.shape, attrs), lhs.dtype)

    def forward(self, inputs, attrs):
        lhs, rhs = inputs
        shape = (lhs.shape[0] // attrs["batch_groups"], rhs.shape[0]) + output_extents(lhs.shape, rhs.shape, attrs)
        return self.forward_into(inputs, attrs, np.empty(shape, dtype=np.result_type(lhs, rhs)))

    def forward_into(self, inputs, attrs, out):
        lhs, rhs = (np.asarray(a) for a in inputs)
        if not out.flags.c_contiguous:
            out[...] = self.forward(inputs, attrs)
            return out
        convolve(lhs, rhs, attrs, out)
        return out

    def batch(self, e, operands, dims, attrs):
        # JAX's conv batching rule. A batch of inputs is a longer N (inside each of the batch groups,
        # which split N); a batch of kernels is B times the groups, each example's [B, G, ...] its own.
        groups = attrs["batch_groups"]
        if dims[1] is None:
            lhs = batching.to_front(e, operands[0], dims[0])
            shape = e.shape(lhs)  # [B, N, C, ...] -> [G, B, N / G, C, ...] -> [G B N / G, C, ...]
            lhs = e.reshape(lhs, (shape[0], groups, shape[1] // groups) + shape[2:])
            lhs = e.reshape(batching.move(e, lhs, 0, 1), (shape[0] * shape[1],) + shape[2:])
            out = e.apply("Convolution", [lhs, operands[1]], **attrs)
            return e.reshape(out, (shape[0], e.shape(out)[0] // shape[0]) + e.shape(out)[1:]), 0
        lhs, rhs = batching.to_front_all(e, operands, dims)
        shape, kernel = e.shape(lhs), e.shape(rhs)
        if groups == 1:  # channels [B, G, C / G] against kernels whose outputs are [B, G, O / G]
            lhs = e.reshape(batching.move(e, lhs, 0, 1), (shape[1], shape[0] * shape[2]) + shape[3:])
            attrs = dict(attrs, feature_groups=attrs["feature_groups"] * shape[0])
        else:  # N [B, G, N / G] against outputs [B, G, O / G]
            lhs = e.reshape(lhs, (shape[0] * shape[1],) + shape[2:])
            attrs = dict(attrs, batch_groups=groups * shape[0])
        out = e.apply("Convolution", [lhs, e.reshape(rhs, (kernel[0] * kernel[1],) + kernel[2:])], **attrs)
        out_shape = e.shape(out)
        return e.reshape(out, (out_shape[0], shape[0], kernel[1]) + out_shape[2:]), 1

    def vjp(self, e, g, operands, out, attrs):
        lhs, rhs = operands
        grad_lhs = input_gradient(e, g, e.shape(lhs), rhs, attrs) if e.wants(0) else None
        grad_rhs = kernel_gradient(e, g, lhs, e.shape(rhs), attrs) if e.wants(1) else None
        return [grad_lhs, grad_rhs]

    def stablehlo(self, ctx, node):
        lhs, rhs = ctx.operands(node)
        attrs = node.attrs
        axes = ", ".join(str(axis) for axis in range(len(node.shape) - 2))

        def listed(values):
            return "[" + ", ".join(str(v) for v in values) + "]"

        pads = "[" + ", ".join(f"[{low}, {high}]" for low, high in attrs["padding"]) + "]"
        lhs_type, rhs_type = (ctx.type(ctx.operand_node(node, i)) for i in (0, 1))
        return ctx.emit(
            f"stablehlo.convolution({lhs}, {rhs}) dim_numbers = [b, f, {axes}]x[o, i, {axes}]->[b, f, {axes}], "
            f"window = {{stride = {listed(attrs['strides'])}, pad = {pads}, "
            f"lhs_dilate = {listed(attrs['lhs_dilation'])}, rhs_dilate = {listed(attrs['rhs_dilation'])}}} "
            f"{{batch_group_count = {attrs['batch_groups']} : i64, feature_group_count = {attrs['feature_groups']} : i64}}"
            f" : ({lhs_type}, {rhs_type}) -> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        return k.convolution(node, *views)

    def wgsl_declines(self, k, node):
        return k.convolution_declines(node)

    def cost(self, operands, meta, attrs):
        # A multiply and an add for each tap of the window, over each group's input channels, for each output.
        rhs = operands[1]
        terms = Meta(rhs.shape[1:], rhs.dtype).size
        return 2 * meta.size * terms, bytes_moved(operands, meta)


# The numpy forward: dilate and pad, then the windows as a strided view and one product per chunk ------------


def placement(lhs_shape, attrs):
    """Where the input's elements land in its dilated, padded extents: per spatial axis the first element
    that lands inside, how many do, where the first lands and the step between them; None where the
    padding crops every element away. The numpy forward and the device's im2col both place the input so."""
    places = []
    for (low, _), extent, d, size in zip(
        attrs["padding"], lhs_shape[2:], attrs["lhs_dilation"], padded_extents(lhs_shape, attrs)
    ):
        first = max(0, -(low // d))  # a negative low crops the elements before it
        last = min(extent - 1, (size - 1 - low) // d)
        if last < first:
            return None
        places.append((first, last - first + 1, first * d + low, d))
    return tuple(places)


def only_crops(attrs):
    """Whether the padding only crops (or is none) and nothing is dilated: the padded input is a view."""
    return all(d == 1 for d in attrs["lhs_dilation"]) and all(low <= 0 and high <= 0 for low, high in attrs["padding"])


def padded_input(lhs, attrs, tail=None):
    """The input with its dilation's zeros and its padding (a view where it only crops). With ``tail``, a
    view [N, C, *padded] of an array [N, C, size + tail] of zeros: each channel flat, ``tail`` zeros after."""
    if only_crops(attrs) and tail is None:
        crop = tuple(slice(-low, extent + high) for (low, high), extent in zip(attrs["padding"], lhs.shape[2:]))
        return lhs[(slice(None), slice(None)) + crop]
    shape = padded_extents(lhs.shape, attrs)
    size = int(np.prod(shape, dtype=np.int64))
    flat = np.zeros(lhs.shape[:2] + (size + (tail or 0),), dtype=lhs.dtype)
    result = flat[:, :, :size].reshape(lhs.shape[:2] + shape)
    places = placement(lhs.shape, attrs)
    if places is not None:
        source = tuple(slice(first, first + count) for first, count, _, _ in places)
        target = tuple(slice(start, start + (count - 1) * step + 1, step) for _, count, start, step in places)
        result[(slice(None), slice(None)) + target] = lhs[(slice(None), slice(None)) + source]
    return result


def window_geometry(shape, strides, attrs, out_spatial, rhs_shape):
    """The windows of a padded input of ``shape`` and element ``strides`` as a shape and strides
    [M, groups, C / groups, *out, *window]; with batch groups, group ``b`` reads the batch's ``b``-th
    contiguous part. (numpy's strides are in bytes, the device's views' in elements: both work.)"""
    n, c = shape[:2]
    batch_stride, channel_stride, *spatial_strides = strides
    steps = tuple(s * st for s, st in zip(spatial_strides, attrs["strides"]))
    taps = tuple(s * d for s, d in zip(spatial_strides, attrs["rhs_dilation"]))
    batch_groups, groups = attrs["batch_groups"], attrs["feature_groups"]
    if batch_groups > 1:
        m = n // batch_groups
        head, head_strides = (m, batch_groups, c), (batch_stride, m * batch_stride, channel_stride)
    else:
        head, head_strides = (n, groups, c // groups), (batch_stride, (c // groups) * channel_stride, channel_stride)
    return head + tuple(out_spatial) + tuple(rhs_shape[2:]), head_strides + steps + taps


def windows(lhs, rhs_shape, attrs, out_spatial):
    """The windows of the padded input as a read-only strided view [M, groups, C / groups, *out, *window]."""
    x = padded_input(lhs, attrs)
    shape, strides = window_geometry(x.shape, x.strides, attrs, out_spatial, rhs_shape)
    return as_strided(x, shape, strides, writeable=False)


def columns_last(out_spatial, rhs_shape):
    """Whether the im2col columns are [terms, outputs] (the output's last axis at least as long as the
    window's: a forward) rather than [outputs, terms] (a weight gradient, whose window is an image): the
    gather's inner loop then runs along the longer axis, on numpy and on the device alike."""
    return out_spatial[-1] >= rhs_shape[-1]


def convolve(lhs, rhs, attrs, out):
    """Write the convolution into ``out`` (contiguous): the windows gathered into columns a chunk at a time
    (im2col, a few MiB), then BLAS products of each group's kernel with them. Three layouts: whole rows of
    the padded input for a stride-1 forward (``convolve_rows``), [batch, group, terms, outputs] for
    another forward, and a chunk of input channels at a time for a weight gradient (its window an image)."""
    out_spatial = out.shape[2:]
    view = windows(lhs, rhs.shape, attrs, out_spatial)
    m, groups, per_group = view.shape[:3]
    spatial = len(out_spatial)
    outputs = int(np.prod(out_spatial, dtype=np.int64))
    taps = per_group * int(np.prod(rhs.shape[2:], dtype=np.int64))
    o_group = rhs.shape[0] // groups
    kernel = rhs.reshape(groups, o_group, taps)
    result = out.reshape(m, groups, o_group, outputs)
    out_axes = tuple(range(3, 3 + spatial))
    window_axes = tuple(range(3 + spatial, 3 + 2 * spatial))
    # The gather's inner loop runs along the destination's last axis: the output's last axis where it is at
    # least as long as the window's (a forward), else the window's (a weight gradient, whose window is an image).
    # Whole rows spare the gather its short pieces but compute and copy the padded width: they pay where
    # the terms outnumber a group's output channels (measured: 23% faster for 32 -> 32 channels at 28x28,
    # 1.5 times slower for 1 -> 32).
    if columns_last(out_spatial, rhs.shape) and max(attrs["strides"]) == 1 and taps >= o_group:
        return convolve_rows(lhs, rhs, attrs, out)
    if columns_last(out_spatial, rhs.shape):
        # Columns [chunk of the batch, group, terms, outputs]: each group's kernel times them, into ``out``.
        order = (0, 1, 2) + window_axes + out_axes
        per_item = max(groups * taps * outputs, 1)
        chunk = max(1, min(m, COLUMN_BUDGET // per_item))
        buffer = np.empty((chunk,) + tuple(view.shape[i] for i in order[1:]), dtype=out.dtype)
        for start in range(0, m, chunk):
            stop = min(m, start + chunk)
            gathered = buffer[: stop - start]
            np.copyto(gathered, view[start:stop].transpose(order))
            matmul(kernel, gathered.reshape(stop - start, groups, taps, outputs), out=result[start:stop])
        return out
    # A weight gradient's window is an image and its output the small kernel: the columns of a chunk of input
    # channels [group, channels, batch x outputs, window], one product a channel with its part of the kernel
    # (small, so it stays in the cache), summed over the channels (twice as fast as a product over all the
    # terms an output position, which reads the whole image-sized kernel once a position).
    order = (1, 2, 0) + out_axes + window_axes
    window = int(np.prod(rhs.shape[2:], dtype=np.int64))
    kernel = rhs.reshape(groups, o_group, per_group, window).transpose(0, 2, 3, 1)
    moved = view.transpose(order)
    chunk = max(1, min(per_group, COLUMN_BUDGET // max(groups * m * outputs * window, 1)))
    buffer = np.empty((groups, chunk) + moved.shape[2:], dtype=out.dtype)
    total = np.zeros((groups, m * outputs, o_group), dtype=out.dtype)
    for start in range(0, per_group, chunk):
        stop = min(per_group, start + chunk)
        gathered = buffer[:, : stop - start]
        np.copyto(gathered, moved[:, start:stop])
        products = matmul(gathered.reshape(groups, stop - start, m * outputs, window), kernel[:, start:stop])
        total += products.sum(axis=1)
    result[...] = total.reshape(groups, m, outputs, o_group).transpose(1, 0, 3, 2)
    return out


def convolve_rows(lhs, rhs, attrs, out):
    """A convolution of stride 1 over whole rows: with each channel of the padded input flat, the taps of
    every output position along the first axis's rows, across the full padded width, start at one offset
    per tap, so each column row is one contiguous run (a fast copy, not a gather of short pieces); the
    product covers the padded width and the output keeps its first extents of each axis after the first."""
    out_spatial = out.shape[2:]
    padded_shape = padded_extents(lhs.shape, attrs)
    row = int(np.prod(padded_shape[1:], dtype=np.int64))  # elements of one row of the first axis
    spans = [int(np.prod(padded_shape[a + 1 :], dtype=np.int64)) for a in range(len(padded_shape))]
    window = rhs.shape[2:]
    # The last output row reads up to a whole row past its window's start: zeros after each channel.
    tail = sum((k - 1) * d * span for k, d, span in zip(window[1:], attrs["rhs_dilation"][1:], spans[1:]))
    x = padded_input(lhs, attrs, tail=tail)
    channel_stride, batch_stride = x.strides[1], x.strides[0]
    item = x.itemsize
    n, c = x.shape[:2]
    batch_groups, groups = attrs["batch_groups"], attrs["feature_groups"]
    if batch_groups > 1:
        m = n // batch_groups
        head, head_strides = (m, batch_groups, c), (batch_stride, m * batch_stride, channel_stride)
    else:
        head, head_strides = (n, groups, c // groups), (batch_stride, (c // groups) * channel_stride, channel_stride)
    positions = out_spatial[0] * row
    taps = tuple(d * span * item for d, span in zip(attrs["rhs_dilation"], spans))
    rows = as_strided(x, head + window + (positions,), head_strides + taps + (item,), writeable=False)
    m, group_count, per_group = head
    terms = per_group * int(np.prod(window, dtype=np.int64))
    o_group = rhs.shape[0] // group_count
    kernel = rhs.reshape(group_count, o_group, terms)
    chunk = max(1, min(m, COLUMN_BUDGET // max(group_count * terms * positions, 1)))
    buffer = np.empty((chunk,) + rows.shape[1:], dtype=out.dtype)
    product = np.empty((chunk, group_count, o_group, positions), dtype=out.dtype)
    grid = (rhs.shape[0], out_spatial[0]) + tuple(padded_shape[1:])
    keep = (slice(None), slice(None)) + tuple(slice(0, extent) for extent in out_spatial)
    for start in range(0, m, chunk):
        stop = min(m, start + chunk)
        count = stop - start
        np.copyto(buffer[:count], rows[start:stop])
        matmul(kernel, buffer[:count].reshape(count, group_count, terms, positions), out=product[:count])
        out[start:stop] = product[:count].reshape((count,) + grid)[keep]
    return out


# The derivative rules: JAX's transposes, in the fixed layout --------------------------------------------


def swap_leading(e, value):
    """Axes 0 and 1 exchanged: JAX's swapped dimension numbers, recorded as a ``Transpose``."""
    rank = len(e.shape(value))
    return e.transpose(value, (1, 0) + tuple(range(2, rank)))


def vjp_lhs_padding(in_shape, window, out_shape, attrs):
    """JAX's ``_conv_general_vjp_lhs_padding``: the input gradient's padding."""
    pads = []
    for extent, k, out, (low, _), stride, lhs_d, rhs_d in zip(
        in_shape, window, out_shape, attrs["padding"], attrs["strides"], attrs["lhs_dilation"], attrs["rhs_dilation"]
    ):
        before = dilated(k, rhs_d) - low - 1
        after = dilated(extent, lhs_d) + dilated(k, rhs_d) - 1 - dilated(out, stride) - before
        pads.append((before, after))
    return tuple(pads)


def vjp_rhs_padding(in_shape, window, out_shape, attrs):
    """JAX's ``_conv_general_vjp_rhs_padding``: the kernel gradient's padding."""
    pads = []
    for extent, k, out, (low, _), stride, lhs_d, rhs_d in zip(
        in_shape, window, out_shape, attrs["padding"], attrs["strides"], attrs["lhs_dilation"], attrs["rhs_dilation"]
    ):
        high = dilated(out, stride) - dilated(extent, lhs_d) + dilated(k, rhs_d) - low - 1
        pads.append((low, high))
    return tuple(pads)


def input_gradient(e, g, lhs_shape, rhs, attrs):
    """d lhs: ``g`` convolved with the kernel spatially reversed, its channel axes exchanged per group;
    the strides become the input's dilation and the input's dilation the strides."""
    rhs_shape = e.shape(rhs)
    spatial = len(rhs_shape) - 2
    o, i = rhs_shape[:2]
    groups = max(attrs["feature_groups"], attrs["batch_groups"])
    kernel = rhs
    if groups > 1:
        # JAX's reshape of the group axis out of O and into I: [O, I] -> [O / G, G * I], group-major.
        kernel = e.reshape(kernel, (groups, o // groups, i) + rhs_shape[2:])
        kernel = e.transpose(kernel, (1, 0, 2) + tuple(range(3, 3 + spatial)))
        kernel = e.reshape(kernel, (o // groups, groups * i) + rhs_shape[2:])
    kernel = e.apply("Reverse", [swap_leading(e, kernel)], axes=tuple(range(2, 2 + spatial)))
    padding = vjp_lhs_padding(lhs_shape[2:], rhs_shape[2:], e.shape(g)[2:], attrs)
    grad = e.apply(
        "Convolution",
        [g, kernel],
        strides=attrs["lhs_dilation"],
        padding=padding,
        lhs_dilation=attrs["strides"],
        rhs_dilation=attrs["rhs_dilation"],
        feature_groups=groups,
        batch_groups=1,
    )
    if attrs["batch_groups"] > 1:
        # [N / B, B * C, *s]: the group axis moves out of the channels and into the batch, group-major.
        b = attrs["batch_groups"]
        n, c = e.shape(grad)[:2]
        grad = e.reshape(grad, (n, b, c // b) + lhs_shape[2:])
        grad = e.transpose(grad, (1, 0, 2) + tuple(range(3, 3 + spatial)))
        grad = e.reshape(grad, lhs_shape)
    return grad


def kernel_gradient(e, g, lhs, rhs_shape, attrs):
    """d rhs: the input (batch and channels exchanged) convolved with ``g`` (the same) as the kernel;
    the strides become the kernel's dilation, the kernel's dilation the strides, and feature groups
    batch groups (and back)."""
    lhs_shape = e.shape(lhs)
    padding = vjp_rhs_padding(lhs_shape[2:], rhs_shape[2:], e.shape(g)[2:], attrs)
    grad = e.apply(
        "Convolution",
        [swap_leading(e, lhs), swap_leading(e, g)],
        strides=attrs["rhs_dilation"],
        padding=padding,
        lhs_dilation=attrs["lhs_dilation"],
        rhs_dilation=attrs["strides"],
        feature_groups=attrs["batch_groups"],
        batch_groups=attrs["feature_groups"],
    )
    return swap_leading(e, grad)
