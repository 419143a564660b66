"""Windowed reductions (pooling): sums and maxima over windows that span every axis, and max's derivatives.

Each op here sees windows as ``lax.reduce_window`` does: ``window``, ``strides`` and
``padding`` (a (low, high) pair) for every axis of its operand, so the public
functions (``topos.max_pool``, ``topos.avg_pool``) put a window of 1 on the batch and
channel axes. Window ``w`` reads the padded operand from ``w * stride`` to
``w * stride + window - 1`` on each axis; each padding side is shorter than the
window, so every window holds at least one element of the operand.

- ``WindowSum(x)``: each window's sum (padding counts as 0). Its derivative is a
  window sum of the cotangent, padded and dilated by the strides (JAX's
  ``_reduce_window_sum_transpose_rule``), so derivatives of every order are window sums.
- ``WindowMax(x)``: each window's maximum (padding counts as -inf; a NaN makes it NaN).
  Its derivative is ``SelectAndScatterAdd(g, x)``.
- ``SelectAndScatterAdd(g, x)``: each window's cotangent ``g`` added at the element the
  window selects: its *first* maximum in row-major window order (PyTorch's max_pool
  backward and XLA's ``select_and_scatter`` with a GE select agree on it), a NaN
  counting as the largest; padding is never selected. Its derivative with respect to
  ``g`` is ``SelectAndGather``.
- ``SelectAndGather(t, x)``: for each window, ``t`` at the element that window selects;
  its derivative with respect to ``t`` is ``SelectAndScatterAdd``. So a gradient of a
  gradient of max pooling is again these two ops. Neither has a derivative with
  respect to ``x``: the selection is piecewise constant (zero almost everywhere).

The numpy forwards loop over the window's taps (its offsets, a handful for pooling),
each a strided slice over every window at once, so a 2x2 pool is a few whole-array
operations. On WebGPU they run the ``window`` kernel family (``kernels/window.wgsl``);
the scatter is written as a gather over the windows holding each element, so it needs
no atomics.
"""

import itertools

import numpy as np

from ..text import format_shape
from . import attributes as kinds
from . import batching
from . import window_lowering as lowering
from .registry import Meta, Primitive, bytes_moved, integer_tuple_attr, register, require_float

# Geometry -------------------------------------------------------------------------------------


def window_grid(shape, window, strides, padding):
    """The shape of the windows' grid: ``(n + low + high - window) // stride + 1`` on each axis."""
    return tuple(
        (n + lo + hi - k) // s + 1 if n + lo + hi >= k else 0
        for n, k, s, (lo, hi) in zip(shape, window, strides, padding)
    )


def taps(window):
    """The window's offsets in row-major order: the order its first maximum is found in."""
    return list(itertools.product(*(range(k) for k in window)))


def tap_slices(window, strides, grid):
    """For each tap, the strided slice of the padded operand that it reads for every window at once."""
    return [
        tuple(slice(o, o + s * (n - 1) + 1, s) if n else slice(0, 0) for o, s, n in zip(offset, strides, grid))
        for offset in taps(window)
    ]


def padded(x, padding, fill):
    """``x`` with ``padding`` of ``fill`` around it (``x`` itself where there is none)."""
    if not any(lo or hi for lo, hi in padding):
        return x
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, padding))
    out = np.full(shape, fill, dtype=x.dtype)
    out[interior(x.shape, padding)] = x
    return out


def interior(shape, padding):
    """The slice of a padded array that holds the operand."""
    return tuple(slice(lo, lo + n) for n, (lo, _) in zip(shape, padding))


def has_padding(attrs):
    return any(lo or hi for lo, hi in attrs["padding"])


def tiles(shape, attrs):
    """Whether the windows cover the operand exactly once: strides equal to the window, no padding, no rest."""
    return not has_padding(attrs) and all(
        s == k and n % k == 0 for n, k, s in zip(shape, attrs["window"], attrs["strides"])
    )


def fold_max(xp, slices, dtype):
    """The largest of the taps ``slices`` of the padded ``xp`` for every window (NaN where one is)."""
    out = np.array(xp[slices[0]], dtype=dtype, copy=True)
    for tap in slices[1:]:
        np.maximum(out, xp[tap], out=out)
    return out


def window_max(x, attrs, grid):
    """Each window's maximum (NaN where a window holds one), padding counting as -inf."""
    slices = tap_slices(attrs["window"], attrs["strides"], grid)
    return fold_max(padded(x, attrs["padding"], -np.inf), slices, x.dtype)


def selection(x, attrs, grid):
    """``(slices, firsts)``: for each tap, its slice of the padded operand and where it is the element its
    window selects (a bool array over the windows): the first maximum in row-major window order, a NaN
    counting as the largest, never the padding. Each window selects one tap."""
    xp = padded(x, attrs["padding"], -np.inf)
    slices = tap_slices(attrs["window"], attrs["strides"], grid)
    largest = fold_max(xp, slices, x.dtype)
    with_nan = bool(np.isnan(largest).any())
    # The padding (-inf) ties only with a window whose maximum is -inf: only then are the real elements marked.
    real = None
    if has_padding(attrs) and bool(np.isneginf(largest).any()):
        real = padded(np.ones(x.shape, dtype=bool), attrs["padding"], False)
    taken = None
    firsts = []
    for position, tap in enumerate(slices):
        if taken is not None and position == len(slices) - 1:
            firsts.append(~taken)  # every window selects a tap: the last where no earlier one did
            break
        values = xp[tap]
        hit = values == largest
        if with_nan:
            hit |= values != values
        if real is not None:
            hit &= real[tap]
        if taken is None:
            first, taken = hit, hit.copy()
        else:
            first = hit > taken  # a hit where no earlier tap was
            taken |= hit
        firsts.append(first)
    return slices, firsts


def masked(values, mask):
    """``values`` where ``mask`` holds, else 0: a product (fast) unless a value is not finite (inf * 0 is NaN)."""
    if np.isfinite(values).all():
        return values * mask
    return np.where(mask, values, values.dtype.type(0))


# The ops ----------------------------------------------------------------------------------------


class Windowed(Primitive):
    """The attributes and shape rule the window ops share; ``x_position`` is where the windowed operand is."""

    kernel = "window"
    attributes = {"window": kinds.window_extents, "strides": kinds.window_extents, "padding": kinds.window_padding}
    x_position = 0

    def normalize(self, metas, attrs):
        rank = metas[self.x_position].rank
        window = integer_tuple_attr(self, metas, attrs.get("window"), "window")
        strides = attrs.get("strides")
        strides = (1,) * rank if strides is None else integer_tuple_attr(self, metas, strides, "strides")
        padding = attrs.get("padding")
        if padding is None:
            padding = ((0, 0),) * rank
        if not isinstance(padding, (tuple, list)) or any(
            not isinstance(pair, (tuple, list)) or len(pair) != 2 for pair in padding
        ):
            self.fail(f"padding must be a (low, high) pair for each axis, got {padding!r}", metas)
        padding = tuple(integer_tuple_attr(self, metas, pair, "padding") for pair in padding)
        return {"window": window, "strides": strides, "padding": padding}

    def batch(self, e, operands, dims, attrs):
        # A window of one element along the batch: each example's windows stay its own.
        window, strides, padding = attrs["window"], attrs["strides"], attrs["padding"]
        operands = batching.to_front_all(e, operands, dims)
        attrs = {"window": (1,) + window, "strides": (1,) + strides, "padding": ((0, 0),) + padding}
        return e.apply(self.name, operands, **attrs), 0

    def grid(self, metas, attrs):
        """The windows' grid shape, once the attributes are checked against the windowed operand."""
        x = metas[self.x_position]
        require_float(self, metas)
        window, strides, padding = attrs["window"], attrs["strides"], attrs["padding"]
        if x.rank == 0:
            self.fail("needs an operand with at least one axis", metas)
        for name, values in (("window", window), ("strides", strides), ("padding", padding)):
            if len(values) != x.rank:
                self.fail(f"{name} {values} has {len(values)} entries for the {x.rank} axes of the operand", metas)
        for axis, (n, k, s, (lo, hi)) in enumerate(zip(x.shape, window, strides, padding)):
            if k < 1 or s < 1:
                self.fail(f"axis {axis}: the window ({k}) and the stride ({s}) must be at least 1", metas)
            if lo < 0 or hi < 0 or lo >= k or hi >= k:
                self.fail(
                    f"axis {axis}: padding ({lo}, {hi}) must be non-negative and shorter than the window ({k}) "
                    "on each side, so that every window holds an element",
                    metas,
                )
            if n + lo + hi < k and not (n == 0 and k == 1):
                self.fail(
                    f"axis {axis}: the window ({k}) is longer than the padded axis ({n} + {lo} + {hi}) "
                    f"of {format_shape(x.shape)}",
                    metas,
                )
        return window_grid(x.shape, window, strides, padding)

    def wgsl_launch(self, k, node, views):
        return k.window(self.entry, node, views)

    def wgsl_declines(self, k, node):
        size = 1
        for extent in node.attrs["window"]:
            size *= extent
        windows = self.windows_per_element(node.attrs) if self.name == "SelectAndScatterAdd" else 1
        # Eight loop steps a tap (the axes' loops) for each window an invocation visits.
        if 8 * windows * size > k.LOOP_LIMIT:
            return f"a window of {size} elements (in {windows} windows an element) is past the kernel's loop limit"
        return None

    @staticmethod
    def windows_per_element(attrs):
        count = 1
        for k, s in zip(attrs["window"], attrs["strides"]):
            count *= -(-k // s)
        return count


def transpose_sum(e, g, x_shape, attrs):
    """The cotangent of ``WindowSum``'s operand: each element sums the cotangents of the windows
    holding it, a window sum (stride 1) of the cotangent dilated by the strides and padded by
    ``window - 1 - low`` before and the rest after (JAX's ``_conv_general_vjp_lhs_padding``)."""
    grid = e.shape(g)
    low, high, interior_ = [], [], []
    for n, k, s, (lo, _), m in zip(x_shape, attrs["window"], attrs["strides"], attrs["padding"], grid):
        before = k - 1 - lo
        after = n + k - 1 - (s * (m - 1) + 1 if m else 0) - before
        low.append(before)
        high.append(after)
        interior_.append(s - 1 if m else 0)
    spread = g
    if any(low) or any(high) or any(interior_):
        spread = e.pad(g, low, high, interior_)
    rank = len(x_shape)
    return e.apply("WindowSum", [spread], window=attrs["window"], strides=(1,) * rank, padding=((0, 0),) * rank)


@register
class WindowSum(Windowed):
    """Each window's sum, padding counting as 0 (``topos.avg_pool`` divides it by the window's size)."""

    name = "WindowSum"
    entry = "window_sum"

    def infer(self, metas, attrs):
        return Meta(self.grid(metas, attrs), metas[0].dtype)

    def forward(self, inputs, attrs):
        x = inputs[0]
        grid = window_grid(x.shape, attrs["window"], attrs["strides"], attrs["padding"])
        return self.forward_into(inputs, attrs, np.empty(grid, dtype=x.dtype))

    def forward_into(self, inputs, attrs, out):
        x = inputs[0]
        xp = padded(x, attrs["padding"], 0.0)
        slices = tap_slices(attrs["window"], attrs["strides"], out.shape)
        out[...] = xp[slices[0]]
        for tap in slices[1:]:
            np.add(out, xp[tap], out=out)
        return out

    def vjp(self, e, g, operands, out, attrs):
        return [transpose_sum(e, g, e.shape(operands[0]), attrs)]

    def stablehlo(self, ctx, node):
        x, x_node = ctx.operands(node)[0], ctx.operand_node(node, 0)
        return lowering.reduce_window(ctx, node, x, x_node, "stablehlo.add", 0.0, node.shape)

    def cost(self, operands, meta, attrs):
        size = int(np.prod(attrs["window"]))
        return meta.size * (size - 1), bytes_moved(operands, meta)


@register
class WindowMax(Windowed):
    """Each window's maximum, padding counting as -inf; NaN where the window holds a NaN (as numpy, torch)."""

    name = "WindowMax"
    entry = "window_max"

    def infer(self, metas, attrs):
        return Meta(self.grid(metas, attrs), metas[0].dtype)

    def forward(self, inputs, attrs):
        x = inputs[0]
        return window_max(x, attrs, window_grid(x.shape, attrs["window"], attrs["strides"], attrs["padding"]))

    def forward_into(self, inputs, attrs, out):
        x = inputs[0]
        xp = padded(x, attrs["padding"], -np.inf)
        slices = tap_slices(attrs["window"], attrs["strides"], out.shape)
        out[...] = xp[slices[0]]
        for tap in slices[1:]:
            np.maximum(out, xp[tap], out=out)
        return out

    def vjp(self, e, g, operands, out, attrs):
        return [e.apply("SelectAndScatterAdd", [g, operands[0]], **attrs)]

    def stablehlo(self, ctx, node):
        x, x_node = ctx.operands(node)[0], ctx.operand_node(node, 0)
        return lowering.reduce_window(ctx, node, x, x_node, "stablehlo.maximum", float("-inf"), node.shape)

    def cost(self, operands, meta, attrs):
        size = int(np.prod(attrs["window"]))
        return meta.size * (size - 1), bytes_moved(operands, meta)


@register
class SelectAndScatterAdd(Windowed):
    """``SelectAndScatterAdd(g, x)``: zeros shaped like ``x``, each window's ``g`` added at the element
    it selects (its first maximum in row-major window order): ``WindowMax``'s derivative."""

    name = "SelectAndScatterAdd"
    entry = "select_scatter_add"
    arity = 2
    x_position = 1

    def infer(self, metas, attrs):
        g, x = metas
        grid = self.grid(metas, attrs)
        if g.shape != grid or g.dtype != x.dtype:
            self.fail(
                f"the cotangent {format_shape(g.shape)} ({g.dtype}) must have the windows' shape "
                f"{format_shape(grid)} and the dtype of {format_shape(x.shape)} ({x.dtype})",
                metas,
            )
        return Meta(x.shape, x.dtype)

    def forward(self, inputs, attrs):
        return self.forward_into(inputs, attrs, np.empty(inputs[1].shape, dtype=inputs[1].dtype))

    def forward_into(self, inputs, attrs, out):
        g, x = inputs
        slices, firsts = selection(x, attrs, g.shape)
        finite = bool(np.isfinite(g).all())
        if tiles(x.shape, attrs):
            # Each element lies in exactly one window: every tap writes its slice once, no zeros first.
            for tap, first in zip(slices, firsts):
                if finite:
                    np.multiply(g, first, out=out[tap])
                else:
                    out[tap] = masked(g, first)
            return out
        target = np.zeros(tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, attrs["padding"])), dtype=x.dtype)
        share = np.empty_like(g)
        for tap, first in zip(slices, firsts):
            window = target[tap]
            if finite:
                window += np.multiply(g, first, out=share)
            else:
                window += masked(g, first)
        out[...] = target[interior(x.shape, attrs["padding"])]
        return out

    def vjp(self, e, g, operands, out, attrs):
        # Linear in the cotangent; the selection is piecewise constant in x (no cotangent).
        return [e.apply("SelectAndGather", [g, operands[1]], **attrs) if e.wants(0) else None, None]

    def stablehlo(self, ctx, node):
        g, x = ctx.operands(node)
        g_node, x_node = (ctx.operand_node(node, i) for i in (0, 1))
        if has_padding(node.attrs):
            return lowering.tap_scatter(ctx, node, g, x, g_node, x_node)
        return lowering.select_and_scatter(ctx, node, g, x, g_node, x_node)

    def cost(self, operands, meta, attrs):
        # A comparison a tap for each window to select, and an add for each.
        size = int(np.prod(attrs["window"]))
        return operands[0].size * (size + 1), bytes_moved(operands, meta)


@register
class SelectAndGather(Windowed):
    """``SelectAndGather(t, x)``: for each window, ``t`` (shaped like ``x``) at the element the window
    selects (as ``SelectAndScatterAdd``): the derivative of ``SelectAndScatterAdd`` in its cotangent."""

    name = "SelectAndGather"
    entry = "select_gather"
    arity = 2
    x_position = 1

    def infer(self, metas, attrs):
        t, x = metas
        grid = self.grid(metas, attrs)
        if t.shape != x.shape or t.dtype != x.dtype:
            self.fail(f"gathers from {format_shape(t.shape)} ({t.dtype}), which must be shaped like x", metas)
        return Meta(grid, x.dtype)

    def forward(self, inputs, attrs):
        t, x = inputs
        grid = window_grid(x.shape, attrs["window"], attrs["strides"], attrs["padding"])
        return self.forward_into(inputs, attrs, np.empty(grid, dtype=x.dtype))

    def forward_into(self, inputs, attrs, out):
        t, x = inputs
        slices, firsts = selection(x, attrs, out.shape)
        tp = padded(t, attrs["padding"], 0.0)
        finite = bool(np.isfinite(t).all())
        share = np.empty_like(out)
        out[...] = 0
        for tap, first in zip(slices, firsts):
            out += np.multiply(tp[tap], first, out=share) if finite else masked(tp[tap], first)
        return out

    def vjp(self, e, g, operands, out, attrs):
        return [e.apply("SelectAndScatterAdd", [g, operands[1]], **attrs) if e.wants(0) else None, None]

    def stablehlo(self, ctx, node):
        t, x = ctx.operands(node)
        return lowering.tap_gather(ctx, node, t, x, ctx.operand_node(node, 0), ctx.operand_node(node, 1))

    def cost(self, operands, meta, attrs):
        size = int(np.prod(attrs["window"]))
        return meta.size * size, bytes_moved(operands, meta)
