"""What a classifier reads off its scores: the index of the extreme along an axis
(``ArgMax``, ``ArgMin``), the running sum along an axis (``CumSum``) and the indices
of the k largest along the last axis (``TopK``).

``ArgMax``, ``ArgMin`` and ``TopK`` give int32 indices and have no derivative
(``differentiable = False``, as ``OneHot``: the reverse scan gives their operand no
cotangent through them); ``topos.top_k`` takes the values with differentiable ops,
so their gradient reaches the scores. Ties go to the lower index and a NaN counts as
the extreme, as numpy's ``argmax`` and ``argmin`` have it (the first NaN wins); a
NaN counts as the largest in ``TopK``, as it sorts last in numpy. ``CumSum`` is
linear: its derivative is the running sum the other way, so derivatives of any order
are ``CumSum`` nodes too.

The StableHLO forms are the ones JAX writes: a variadic ``reduce`` over the values
and their positions (an ``iota``) for the arg-extremes, a ``reduce_window`` one axis
long with low padding for the running sum, and a ``sort`` of values and positions
followed by a slice for the k largest. ``IndexToFloat`` turns int32 values into floats,
so that ``topos.equal`` compares predicted classes with labels. On WebGPU they run in ``kernels/scan.wgsl``
(launches in ``topos.compiler.wgsl.scans``).
"""

import math

import numpy as np

from ..dtypes import FLOAT_DTYPES, canonical_dtype
from . import attributes as kinds
from . import batching
from .registry import Meta, Primitive, axis_index, bytes_moved, integer_attr, register, require_float

# StableHLO helpers ----------------------------------------------------------------------


def _iota(ctx, shape, axis):
    """Positions along ``axis`` as int32, shaped ``shape``."""
    return ctx.emit(f"stablehlo.iota dim = {axis} : {ctx.tensor_type(shape, 'int32')}")


def _multiple(ctx, text, count):
    """Write an op with ``count`` results; returns the names of its results (``%name#i``)."""
    name = ctx.emit(text)
    ctx.lines[-1][0] = f"{name}:{count}"
    return [f"{name}#{i}" for i in range(count)]


def _prefers(ctx, prefix, a, ai, b, bi, dtype, direction):
    """Region lines giving ``%{prefix}_pick``, an i1 true where (a, ai) goes before (b, bi):
    a NaN first (a NaN counts as the extreme), then the value ``direction`` says (GT for the
    largest), then on equal values (or two NaNs) the lower index."""
    f = ctx.tensor_type((), dtype)
    i1 = ctx.tensor_type((), "bool")
    i = ctx.tensor_type((), "int32")
    p = prefix
    return [
        f"{p}_anan = stablehlo.compare NE, {a}, {a}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_bnan = stablehlo.compare NE, {b}, {b}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_bnum = stablehlo.not {p}_bnan : {i1}",
        f"{p}_nan = stablehlo.and {p}_anan, {p}_bnum : {i1}",
        f"{p}_beats = stablehlo.compare {direction}, {a}, {b}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_same = stablehlo.compare EQ, {a}, {b}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_nans = stablehlo.and {p}_anan, {p}_bnan : {i1}",
        f"{p}_tie = stablehlo.or {p}_same, {p}_nans : {i1}",
        f"{p}_lower = stablehlo.compare LT, {ai}, {bi}, SIGNED : ({i}, {i}) -> {i1}",
        f"{p}_first = stablehlo.and {p}_tie, {p}_lower : {i1}",
        f"{p}_either = stablehlo.or {p}_nan, {p}_beats : {i1}",
        f"{p}_pick = stablehlo.or {p}_either, {p}_first : {i1}",
    ]


def _region(arguments, lines, results):
    """A region's text: ``arguments`` and ``results`` are (name, type) pairs, ``lines`` its body."""
    head = ", ".join(f"{name}: {type_}" for name, type_ in arguments)
    body = "".join(f"        {line}\n" for line in lines)
    names = ", ".join(name for name, _ in results)
    types = ", ".join(type_ for _, type_ in results)
    return f"      ^bb0({head}):\n{body}        stablehlo.return {names} : {types}"


# The index of the extreme -----------------------------------------------------------------


class ArgExtreme(Primitive):
    """The int32 index of the extreme along ``axis`` (dropped from the shape); ``ArgMax`` and ``ArgMin`` say which."""

    arity = 1
    differentiable = False
    kernel = "scan"
    device_dtypes = ("int32",)
    attributes = {"axis": kinds.axis}
    #: the numpy function (``np.argmax``), the StableHLO comparison that prefers a value and the reduce's start
    numpy_function = None
    direction = None
    start = None
    batch = batching.leading_axis

    def normalize(self, metas, attrs):
        return {"axis": axis_index(attrs.get("axis", -1), metas[0].shape, self.name)}

    def infer(self, metas, attrs):
        require_float(self, metas)
        shape = metas[0].shape
        if shape[attrs["axis"]] == 0:
            self.fail(f"axis {attrs['axis']} of the operand is empty: an empty axis has no extreme", metas)
        return Meta(shape[: attrs["axis"]] + shape[attrs["axis"] + 1 :], "int32")

    def forward(self, inputs, attrs):
        # numpy gives the first index of the extreme and counts a NaN as the extreme, as wanted.
        return self.numpy_function(inputs[0], axis=attrs["axis"]).astype(np.int32)

    def forward_into(self, inputs, attrs, out):
        # np.argmax writes only intp into out=; the int32 slot takes a copy.
        out[...] = self.numpy_function(inputs[0], axis=attrs["axis"])
        return out

    def stablehlo(self, ctx, node):
        # A variadic reduce over (values, positions) whose region keeps the preferred pair.
        source = ctx.operand_node(node, 0)
        axis, dtype = node.attrs["axis"], source.dtype
        positions = _iota(ctx, source.shape, axis)
        start_value = ctx.splat(self.start, (), dtype)
        start_index = ctx.splat(0, (), "int32")
        f, i = ctx.tensor_type((), dtype), ctx.tensor_type((), "int32")
        p = f"%v{node.index}_r"
        lines = _prefers(ctx, p, f"{p}_a", f"{p}_ai", f"{p}_b", f"{p}_bi", dtype, self.direction)
        lines += [
            f"{p}_v = stablehlo.select {p}_pick, {p}_a, {p}_b : {ctx.tensor_type((), 'bool')}, {f}",
            f"{p}_i = stablehlo.select {p}_pick, {p}_ai, {p}_bi : {ctx.tensor_type((), 'bool')}, {i}",
        ]
        region = _region(
            [(f"{p}_a", f), (f"{p}_ai", i), (f"{p}_b", f), (f"{p}_bi", i)], lines, [(f"{p}_v", f), (f"{p}_i", i)]
        )
        (x,) = ctx.operands(node)
        _, index = _multiple(
            ctx,
            f'"stablehlo.reduce"({x}, {positions}, {start_value}, {start_index}) ({{\n{region}\n    }}) '
            f"{{dimensions = array<i64: {axis}>}} : "
            f"({ctx.type(source)}, {ctx.tensor_type(source.shape, 'int32')}, {f}, {i}) -> "
            f"({ctx.tensor_type(node.shape, dtype)}, {ctx.type(node)})",
            2,
        )
        # The identity, so that the node's value has its own %v name.
        return ctx.emit(f"stablehlo.convert {index} : {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        return k.arg_extreme(self.name, node, views[0])

    def wgsl_declines(self, k, node):
        extent = k.operand_node(node, 0).shape[node.attrs["axis"]]
        # A lane's loop over every 64th element, then six folding steps: all one invocation's iterations.
        if -(-extent // k.LANES) + 6 > k.LOOP_LIMIT:
            return f"an axis of {extent} elements is longer than the scan kernel's loop"
        return None

    def cost(self, operands, meta, attrs):
        # One comparison for each element of the operand.
        return operands[0].size, bytes_moved(operands, meta)


@register
class ArgMax(ArgExtreme):
    """The index of the largest element along ``axis`` (int32): the first on ties, the first NaN if any."""

    name = "ArgMax"
    numpy_function = staticmethod(np.argmax)
    direction = "GT"
    start = float("-inf")


@register
class ArgMin(ArgExtreme):
    """The index of the smallest element along ``axis`` (int32): the first on ties, the first NaN if any."""

    name = "ArgMin"
    numpy_function = staticmethod(np.argmin)
    direction = "LT"
    start = float("inf")


# The running sum ---------------------------------------------------------------------------


def running_window(ctx, node, start, region):
    """The running fold of a scan node (``axis``, ``reverse``) as StableHLO: a ``reduce_window`` as long
    as the axis from ``start`` with ``region``, padded below (above, reversed) so that window j ends
    at element j (an empty axis takes no padding)."""
    axis, rank, extent = node.attrs["axis"], len(node.shape), node.shape[node.attrs["axis"]]
    window = ", ".join(str(extent if a == axis else 1) for a in range(rank))
    strides = ", ".join("1" for _ in range(rank))
    low, high = (0, max(extent - 1, 0)) if node.attrs["reverse"] else (max(extent - 1, 0), 0)
    pads = ", ".join(f"[{low}, {high}]" if a == axis else "[0, 0]" for a in range(rank))
    scalar = ctx.tensor_type((), node.dtype)
    (x,) = ctx.operands(node)
    return ctx.emit(
        f'"stablehlo.reduce_window"({x}, {start}) ({{\n{region}\n    }}) '
        f"{{window_dimensions = array<i64: {window}>, window_strides = array<i64: {strides}>, "
        f"padding = dense<[{pads}]> : tensor<{rank}x2xi64>}} : ({ctx.type(node)}, {scalar}) -> {ctx.type(node)}"
    )


def axis_beyond_the_loop(k, node):
    """Why the scan kernel cannot run a scan node along its axis (a sentence), or None."""
    extent = node.shape[node.attrs["axis"]]
    if -(-extent // k.LANES) > k.LOOP_LIMIT:
        return f"an axis of {extent} elements is longer than the scan kernel's loop"
    return None


@register
class CumSum(Primitive):
    """The running sum along ``axis``: element j is the sum of elements 0..j (``reverse``: j..n-1)."""

    name = "CumSum"
    arity = 1
    kernel = "scan"
    attributes = {"axis": kinds.axis, "reverse": kinds.flag}
    batch = batching.leading_axis

    def normalize(self, metas, attrs):
        axis = axis_index(attrs.get("axis", -1), metas[0].shape, self.name)
        return {"axis": axis, "reverse": bool(attrs.get("reverse", False))}

    def infer(self, metas, attrs):
        require_float(self, metas)
        return metas[0]

    def forward(self, inputs, attrs):
        x = inputs[0]
        return self.forward_into(inputs, attrs, np.empty_like(x))

    def forward_into(self, inputs, attrs, out):
        x, axis = inputs[0], attrs["axis"]
        if attrs["reverse"]:
            # The running sum of the flipped axis, written through a flipped view of out.
            np.cumsum(np.flip(x, axis), axis=axis, dtype=x.dtype, out=np.flip(out, axis))
            return out
        return np.cumsum(x, axis=axis, dtype=x.dtype, out=out)

    def vjp(self, e, g, operands, out, attrs):
        # Element i feeds every running sum from i on: its cotangent is the running sum of g the other way.
        return [e.apply("CumSum", [g], axis=attrs["axis"], reverse=not attrs["reverse"])]

    def stablehlo(self, ctx, node):
        scalar = ctx.tensor_type((), node.dtype)
        return running_window(ctx, node, ctx.splat(0.0, (), node.dtype), ctx.region("stablehlo.add", scalar))

    def wgsl_launch(self, k, node, views):
        return k.cumsum(node, views[0])

    def wgsl_declines(self, k, node):
        return axis_beyond_the_loop(k, node)

    def cost(self, operands, meta, attrs):
        # One add for each element.
        return meta.size, bytes_moved(operands, meta)


# Indices compared with indices --------------------------------------------------------------


@register
class IndexToFloat(Primitive):
    """int32 values as a float dtype (``dtype``), exactly up to 2^24 in float32 (2^53 in float64).

    ``topos.equal`` and ``topos.not_equal`` record it for int32 operands, so that
    predicted classes (``topos.argmax``) compare with labels: an accuracy is
    ``mean(equal(argmax(logits), labels))``.
    """

    name = "IndexToFloat"
    arity = 1
    differentiable = False
    kernel = "gather"
    attributes = {"dtype": kinds.dtype_name}
    batch = batching.elementwise

    def normalize(self, metas, attrs):
        return {"dtype": canonical_dtype(attrs.get("dtype"), FLOAT_DTYPES)}

    def infer(self, metas, attrs):
        if metas[0].dtype != "int32":
            self.fail(f"converts int32 values, got {metas[0].dtype}", metas)
        return Meta(metas[0].shape, attrs["dtype"])

    def forward(self, inputs, attrs):
        return inputs[0].astype(attrs["dtype"])

    def stablehlo(self, ctx, node):
        return ctx.convert(ctx.operands(node)[0], node.shape, "int32", node.dtype)

    def wgsl_launch(self, k, node, views):
        return k.index_to_float(node, views[0])


# The k largest -------------------------------------------------------------------------------


@register
class TopK(Primitive):
    """The int32 indices of the ``k`` largest elements along the last axis, largest first.

    Equal values come in index order and a NaN counts as the largest, as in
    ``jax.lax.top_k``; the result is shaped like the operand with its last axis ``k``
    long. ``topos.top_k`` records it with the values beside.
    """

    name = "TopK"
    arity = 1
    differentiable = False
    kernel = "scan"
    device_dtypes = ("int32",)
    attributes = {"k": kinds.count}
    batch = batching.leading

    def normalize(self, metas, attrs):
        return {"k": integer_attr(self, metas, attrs.get("k"), "k")}

    def infer(self, metas, attrs):
        require_float(self, metas)
        shape, k = metas[0].shape, attrs["k"]
        if not shape:
            self.fail("needs an operand with at least one axis", metas)
        if not 0 <= k <= shape[-1]:
            self.fail(f"k = {k} is outside 0..{shape[-1]}, the length of the last axis", metas)
        return Meta(shape[:-1] + (k,), "int32")

    def forward(self, inputs, attrs):
        x = inputs[0]
        n = x.shape[-1]
        # A stable ascending sort of the reversed row, read backwards: the largest first, NaN
        # (which numpy sorts last) before them, and equal values in increasing index.
        order = np.argsort(np.flip(x, -1), axis=-1, kind="stable")
        return (n - 1 - np.flip(order, -1)[..., : attrs["k"]]).astype(np.int32)

    def stablehlo(self, ctx, node):
        # A stable sort of (values, positions) by the same preference as ArgMax, then the first k.
        source = ctx.operand_node(node, 0)
        dtype, axis = source.dtype, len(source.shape) - 1
        positions = _iota(ctx, source.shape, axis)
        f, i = ctx.tensor_type((), dtype), ctx.tensor_type((), "int32")
        p = f"%v{node.index}_s"
        lines = _prefers(ctx, p, f"{p}_a", f"{p}_ai", f"{p}_b", f"{p}_bi", dtype, "GT")
        region = _region(
            [(f"{p}_a", f), (f"{p}_b", f), (f"{p}_ai", i), (f"{p}_bi", i)], lines, [(f"{p}_pick", "tensor<i1>")]
        )
        (x,) = ctx.operands(node)
        index_type = ctx.tensor_type(source.shape, "int32")
        _, order = _multiple(
            ctx,
            f'"stablehlo.sort"({x}, {positions}) ({{\n{region}\n    }}) {{dimension = {axis} : i64, is_stable = true}} : '
            f"({ctx.type(source)}, {index_type}) -> ({ctx.type(source)}, {index_type})",
            2,
        )
        box = ", ".join(f"0:{extent}" for extent in node.shape)
        return ctx.emit(f"stablehlo.slice {order} [{box}] : ({index_type}) -> {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        return k.top_k(node, views[0])

    def wgsl_declines(self, k, node):
        extent = k.operand_node(node, 0).shape[-1]
        if extent > k.LOOP_LIMIT:
            return f"a last axis of {extent} elements is longer than the top-k kernel's loop"
        return None

    def cost(self, operands, meta, attrs):
        # A sort's comparisons: n log2 n for each row of n.
        n = operands[0].shape[-1]
        return operands[0].size * max(1, math.ceil(math.log2(max(n, 2)))), bytes_moved(operands, meta)
