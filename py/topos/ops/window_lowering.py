"""The StableHLO of the window ops (``topos.ops.windows``): reduce_window, select_and_scatter, and taps.

- ``WindowSum`` and ``WindowMax`` are ``stablehlo.reduce_window`` with an add or a
  maximum region (padding is the init value: 0, -inf).
- ``SelectAndScatterAdd`` without padding is ``stablehlo.select_and_scatter``: a select
  that keeps the selected element over the next one where it is at least as large (XLA's
  GE select: the first maximum) or is NaN, and a scatter that adds.
- Where there is padding, and always for ``SelectAndGather``, the selection is written
  tap by tap, as the numpy forward computes it: a tap is the strided slice of the padded
  operand one offset of the window reads for every window; it is a window's selection
  where it equals the window's maximum (or is NaN), is no padding, and no earlier tap was.
  The scatter then pads each tap's share of the cotangent back into place (interior
  padding of stride - 1) and sums them. XLA's CPU ``select_and_scatter`` with padding
  breaks ties out of row-major order under high padding on the minor axis, and selects
  the padding of a window whose elements are all -inf (measured, jaxlib 0.10.2): the taps
  keep one rule on every backend.
"""

import itertools


def window_text(attrs, padding=None):
    """The window attributes as ``reduce_window`` and ``select_and_scatter`` write them."""
    pairs = ", ".join(f"[{lo}, {hi}]" for lo, hi in (padding or attrs["padding"]))
    return (
        f"window_dimensions = {_i64(attrs['window'])}, window_strides = {_i64(attrs['strides'])}, "
        f"padding = dense<[{pairs}]> : tensor<{len(attrs['window'])}x2xi64>"
    )


def _i64(values):
    return "array<i64: " + ", ".join(str(v) for v in values) + ">"


def has_padding(attrs):
    return any(lo or hi for lo, hi in attrs["padding"])


def padded_shape(shape, padding):
    return tuple(n + lo + hi for n, (lo, hi) in zip(shape, padding))


def reduce_window(ctx, node, x, x_node, op, init, grid):
    """``x`` (of ``x_node``) folded over each window with ``op`` from ``init``: a value of shape ``grid``."""
    scalar = ctx.tensor_type((), node.dtype)
    init_name = ctx.splat(init, (), node.dtype)
    return ctx.emit(
        f'"stablehlo.reduce_window"({x}, {init_name}) ({{\n{ctx.region(op, scalar)}\n    }}) '
        f"{{{window_text(node.attrs)}}} : ({ctx.type(x_node)}, {scalar}) -> {ctx.tensor_type(grid, node.dtype)}"
    )


def pad(ctx, value, shape, padding, fill, dtype, interior=None):
    """``value`` (of ``shape``) with ``padding`` ((low, high) pairs) of ``fill``, and ``interior`` between elements."""
    fill_name = ctx.splat(fill, (), dtype)
    interior = interior or (0,) * len(shape)
    low, high = (", ".join(str(pair[side]) for pair in padding) for side in (0, 1))
    between = ", ".join(str(i) for i in interior)
    out_shape = tuple(lo + hi + n + max(n - 1, 0) * inner for n, (lo, hi), inner in zip(shape, padding, interior))
    return ctx.emit(
        f"stablehlo.pad {value}, {fill_name}, low = [{low}], high = [{high}], interior = [{between}] : "
        f"({ctx.tensor_type(shape, dtype)}, {ctx.tensor_type((), dtype)}) -> {ctx.tensor_type(out_shape, dtype)}"
    )


def select_and_scatter(ctx, node, g, x, g_node, x_node):
    """``SelectAndScatterAdd`` without padding: XLA's select_and_scatter, NaN counting as the largest."""
    scalar = ctx.tensor_type((), node.dtype)
    zero = ctx.splat(0.0, (), node.dtype)
    prefix = f"%v{node.index}_regions"
    a, b, flag = f"{prefix}_a", f"{prefix}_b", "tensor<i1>"

    def compare(name, direction, left, right):
        return (
            f"        {prefix}_{name} = stablehlo.compare {direction}, {left}, {right}, FLOAT : "
            f"({scalar}, {scalar}) -> {flag}\n"
        )

    # Keep the selected a over the next b where a >= b and b is no NaN, or where a is NaN.
    select = (
        f"      ^bb0({a}: {scalar}, {b}: {scalar}):\n"
        + compare("ge", "GE", a, b)
        + compare("a_nan", "NE", a, a)
        + compare("b_number", "EQ", b, b)
        + f"        {prefix}_number = stablehlo.and {prefix}_b_number, {prefix}_ge : {flag}\n"
        f"        {prefix}_keep = stablehlo.or {prefix}_a_nan, {prefix}_number : {flag}\n"
        f"        stablehlo.return {prefix}_keep : {flag}"
    )
    scatter = (
        f"      ^bb0({prefix}_c: {scalar}, {prefix}_d: {scalar}):\n"
        f"        {prefix}_sum = stablehlo.add {prefix}_c, {prefix}_d : {scalar}\n"
        f"        stablehlo.return {prefix}_sum : {scalar}"
    )
    return ctx.emit(
        f'"stablehlo.select_and_scatter"({x}, {g}, {zero}) ({{\n{select}\n    }}, {{\n{scatter}\n    }}) '
        f"{{{window_text(node.attrs)}}} : ({ctx.type(x_node)}, {ctx.type(g_node)}, {scalar}) -> {ctx.type(node)}"
    )


def selected_taps(ctx, node, x, x_node, grid):
    """For each tap in row-major window order: ``(offset, slicing, first)``, the window offset, the text
    that slices the padded operand to that tap, and the i1 flags of the windows that select it."""
    attrs, dtype = node.attrs, node.dtype
    largest = reduce_window(ctx, node, x, x_node, "stablehlo.maximum", float("-inf"), grid)
    xp, real = x, None
    if has_padding(attrs):
        xp = pad(ctx, x, x_node.shape, attrs["padding"], float("-inf"), dtype)
        real = pad(ctx, ctx.splat(1.0, x_node.shape, dtype), x_node.shape, attrs["padding"], 0.0, dtype)
    source_type = ctx.tensor_type(padded_shape(x_node.shape, attrs["padding"]), dtype)
    grid_type, flags = ctx.tensor_type(grid, dtype), ctx.tensor_type(grid, "bool")
    taken, selected = None, []
    for offset in itertools.product(*(range(k) for k in attrs["window"])):
        box = ", ".join(f"{o}:{o + s * (m - 1) + 1}:{s}" for o, s, m in zip(offset, attrs["strides"], grid))
        slicing = f"[{box}] : ({source_type}) -> {grid_type}"
        values = ctx.emit(f"stablehlo.slice {xp} {slicing}")
        hit = ctx.compare("EQ", values, largest, grid, dtype)
        nan = ctx.compare("NE", values, values, grid, dtype)
        hit = ctx.emit(f"stablehlo.or {hit}, {nan} : {flags}")
        if real is not None:
            inside = ctx.compare(
                "EQ", ctx.emit(f"stablehlo.slice {real} {slicing}"), ctx.splat(1.0, grid, dtype), grid, dtype
            )
            hit = ctx.emit(f"stablehlo.and {hit}, {inside} : {flags}")
        if taken is None:
            first, taken = hit, hit
        else:
            fresh = ctx.emit(f"stablehlo.not {taken} : {flags}")
            first = ctx.emit(f"stablehlo.and {hit}, {fresh} : {flags}")
            taken = ctx.emit(f"stablehlo.or {taken}, {hit} : {flags}")
        selected.append((offset, slicing, first))
    return selected


def tap_scatter(ctx, node, g, x, g_node, x_node):
    """``SelectAndScatterAdd`` tap by tap: each tap's share of ``g`` padded back into place, summed."""
    attrs, dtype, grid = node.attrs, node.dtype, g_node.shape
    full = padded_shape(x_node.shape, attrs["padding"])
    zeros = ctx.splat(0.0, grid, dtype)
    total = None
    for offset, _, first in selected_taps(ctx, node, x, x_node, grid):
        share = ctx.select(first, g, zeros, grid, dtype)
        placement = tuple((o, n - o - s * (m - 1) - 1) for o, s, m, n in zip(offset, attrs["strides"], grid, full))
        spread = pad(ctx, share, grid, placement, 0.0, dtype, tuple(s - 1 for s in attrs["strides"]))
        total = (
            spread if total is None else ctx.emit(f"stablehlo.add {total}, {spread} : {ctx.tensor_type(full, dtype)}")
        )
    if not has_padding(attrs):
        return total
    box = ", ".join(f"{lo}:{lo + n}:1" for n, (lo, _) in zip(x_node.shape, attrs["padding"]))
    return ctx.emit(f"stablehlo.slice {total} [{box}] : ({ctx.tensor_type(full, dtype)}) -> {ctx.type(node)}")


def tap_gather(ctx, node, t, x, t_node, x_node):
    """``SelectAndGather``: for each window, t at its selected tap (the taps' flags pick one each)."""
    attrs, dtype, grid = node.attrs, node.dtype, node.shape
    tp = pad(ctx, t, t_node.shape, attrs["padding"], 0.0, dtype) if has_padding(attrs) else t
    chosen = ctx.splat(0.0, grid, dtype)
    for _, slicing, first in selected_taps(ctx, node, x, x_node, grid):
        chosen = ctx.select(first, ctx.emit(f"stablehlo.slice {tp} {slicing}"), chosen, grid, dtype)
    return chosen
