"""Sorting, searching and scattering along an axis: ``Sort`` and ``Argsort`` (stable, either
direction), ``TakeAlongAxis`` and its transpose ``ScatterAddAlongAxis``, and ``SearchSorted``.

The order is numpy's: ascending, a NaN after every number, equal values (and -0.0 beside 0.0)
in their original order. ``descending=True`` is JAX's ``jnp.sort(x, descending=True)``: the
exact reverse of that order except that equal values still keep their original order, so a
NaN comes first (it counts as the largest, as in ``TopK``). Both readings of a row write the
same comparator: a NaN-aware "goes before" on (value, index) keys, a total order, in the
``stablehlo.sort`` region (with ``is_stable = true`` and an ``iota`` operand) and in the WGSL
bitonic network (``kernels/sort.wgsl``).

``Sort``'s derivative is JAX's: the permutation that sorts ``x`` carries the cotangent back,
``ScatterAddAlongAxis(g, Argsort(x))``; ``Argsort`` and ``SearchSorted`` give int32 indices and
have none. ``TakeAlongAxis`` and ``ScatterAddAlongAxis`` are each other's transposes, as ``Take``
and ``ScatterAdd`` are, so derivatives of any order stay in these two. Their StableHLO forms
are a ``gather`` and a ``scatter`` (adding) whose index vectors hold an ``iota`` for each axis
but the indexed one, as JAX's ``take_along_axis`` builds them.
"""

import math

import numpy as np

from ..errors import MissingRuleError
from . import attributes as kinds
from . import batching
from .index import check_indices, scatter_add_rows
from .registry import Meta, Primitive, axis_index, bytes_moved, integer_attr, register, require_float
from .scans import _iota, _multiple, _region


def _flag(primitive, metas, value, what):
    if not isinstance(value, (bool, np.bool_)):
        primitive.fail(f"{what} must be True or False, got {value!r}", metas)
    return bool(value)


def stable_argsort(x, axis, descending):
    """The stable order along ``axis`` as int64 positions (numpy's ascending order, or its
    reverse with ties kept in place): a stable ascending sort of the reversed row, read
    backwards, puts equal values back in increasing index and a NaN first."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


def _goes_before(ctx, p, a, ai, b, bi, dtype, descending):
    """Region lines giving ``{p}_pick``, an i1 true where (a, ai) goes strictly before (b, bi):
    ascending, a < b or b alone is NaN; descending, a > b or a alone is NaN; at equal values (or
    two NaNs) the lower position. A total order, so the answer is the stable one even where a
    consumer sorts unstably (IREE's sort ignores ``is_stable``)."""
    f, i1, i = ctx.tensor_type((), dtype), ctx.tensor_type((), "bool"), ctx.tensor_type((), "int32")
    lone, other = (f"{p}_bnan", f"{p}_anum") if not descending else (f"{p}_anan", f"{p}_bnum")
    return [
        f"{p}_anan = stablehlo.compare NE, {a}, {a}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_bnan = stablehlo.compare NE, {b}, {b}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_anum = stablehlo.not {p}_anan : {i1}",
        f"{p}_bnum = stablehlo.not {p}_bnan : {i1}",
        f"{p}_lone = stablehlo.and {lone}, {other} : {i1}",
        f"{p}_beats = stablehlo.compare {'GT' if descending else 'LT'}, {a}, {b}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_same = stablehlo.compare EQ, {a}, {b}, FLOAT : ({f}, {f}) -> {i1}",
        f"{p}_nans = stablehlo.and {p}_anan, {p}_bnan : {i1}",
        f"{p}_tie = stablehlo.or {p}_same, {p}_nans : {i1}",
        f"{p}_lower = stablehlo.compare LT, {ai}, {bi}, SIGNED : ({i}, {i}) -> {i1}",
        f"{p}_first = stablehlo.and {p}_tie, {p}_lower : {i1}",
        f"{p}_either = stablehlo.or {p}_beats, {p}_lone : {i1}",
        f"{p}_pick = stablehlo.or {p}_either, {p}_first : {i1}",
    ]


class Sorting(Primitive):
    """A stable sort along ``axis`` (``descending`` flips the order, ties kept in place); ``Sort``
    gives the values, ``Argsort`` the int32 positions that sort."""

    arity = 1
    kernel = "sort"
    attributes = {"axis": kinds.axis, "descending": kinds.flag}
    batch = batching.leading_axis

    def normalize(self, metas, attrs):
        axis = axis_index(attrs.get("axis", -1), metas[0].shape, self.name)
        return {"axis": axis, "descending": _flag(self, metas, attrs.get("descending", False), "descending")}

    def sorted_pair(self, ctx, node):
        """``stablehlo.sort`` of (x, iota along the axis): the names of the sorted values and positions."""
        source = ctx.operand_node(node, 0)
        dtype, axis = source.dtype, node.attrs["axis"]
        positions = _iota(ctx, source.shape, axis)
        f, i = ctx.tensor_type((), dtype), ctx.tensor_type((), "int32")
        p = f"%v{node.index}_s"
        lines = _goes_before(ctx, p, f"{p}_a", f"{p}_ai", f"{p}_b", f"{p}_bi", dtype, node.attrs["descending"])
        region = _region(
            [(f"{p}_a", f), (f"{p}_b", f), (f"{p}_ai", i), (f"{p}_bi", i)], lines, [(f"{p}_pick", "tensor<i1>")]
        )
        (x,) = ctx.operands(node)
        index_type = ctx.tensor_type(source.shape, "int32")
        return _multiple(
            ctx,
            f'"stablehlo.sort"({x}, {positions}) ({{\n{region}\n    }}) {{dimension = {axis} : i64, is_stable = true}} : '
            f"({ctx.type(source)}, {index_type}) -> ({ctx.type(source)}, {index_type})",
            2,
        )

    def wgsl_launch(self, k, node, views):
        return k.sort(node, views[0])

    def wgsl_declines(self, k, node):
        return k.sort_declines(node)

    def cost(self, operands, meta, attrs):
        # A sort's comparisons: n log2 n for each row of n.
        n = operands[0].shape[attrs["axis"]] if operands[0].shape else 1
        return operands[0].size * max(1, math.ceil(math.log2(max(n, 2)))), bytes_moved(operands, meta)


@register
class Sort(Sorting):
    """The values of ``x`` sorted along ``axis``: numpy's order (a NaN last), or its reverse with
    ``descending`` (a NaN first, equal values in their original order, as JAX's ``descending=True``)."""

    name = "Sort"

    def infer(self, metas, attrs):
        require_float(self, metas)
        if not metas[0].shape:
            self.fail("needs an operand with at least one axis", metas)
        return metas[0]

    def forward(self, inputs, attrs):
        x = inputs[0]
        # The values through the stable order: equal values that differ (-0.0 and 0.0) keep their places.
        return np.take_along_axis(x, stable_argsort(x, attrs["axis"], attrs["descending"]), attrs["axis"])

    def vjp(self, e, g, operands, out, attrs):
        # JAX's rule: the permutation that sorted x sends each cotangent back to its element.
        (x,) = operands
        order = e.apply("Argsort", [x], **attrs)
        return [e.apply("ScatterAddAlongAxis", [g, order], axis=attrs["axis"], extent=e.shape(x)[attrs["axis"]])]

    def stablehlo(self, ctx, node):
        return self.sorted_pair(ctx, node)[0]


@register
class Argsort(Sorting):
    """The int32 positions that sort ``x`` along ``axis`` (``Sort``'s order); no derivative."""

    name = "Argsort"
    differentiable = False
    device_dtypes = ("int32",)

    def infer(self, metas, attrs):
        require_float(self, metas)
        if not metas[0].shape:
            self.fail("needs an operand with at least one axis", metas)
        return Meta(metas[0].shape, "int32")

    def forward(self, inputs, attrs):
        return stable_argsort(inputs[0], attrs["axis"], attrs["descending"]).astype(np.int32)

    def stablehlo(self, ctx, node):
        return self.sorted_pair(ctx, node)[1]


def _index_vectors(ctx, indices, shape, axis):
    """Full index vectors for a gather or scatter along ``axis``: ``shape + (rank,)`` int32, the
    given ``indices`` at position ``axis`` and an iota for each other axis (JAX's take_along_axis)."""
    rank = len(shape)
    column = shape + (1,)
    parts = [ctx.reshape(indices, shape, column, "int32") if d == axis else _iota(ctx, column, d) for d in range(rank)]
    if rank == 1:
        return parts[0]
    column_type = ctx.tensor_type(column, "int32")
    return ctx.emit(
        f"stablehlo.concatenate {', '.join(parts)}, dim = {rank} : "
        f"({', '.join([column_type] * rank)}) -> {ctx.tensor_type(shape + (rank,), 'int32')}"
    )


def _along_axis_meta(primitive, metas, axis, what):
    """Check that operand 0 (values) and operand 1 (int32 indices) agree on every axis but ``axis``."""
    values, indices = metas
    if indices.dtype != "int32":
        primitive.fail(f"indices must be int32, got {indices.dtype}", metas)
    if values.rank != indices.rank or any(
        a != b for d, (a, b) in enumerate(zip(values.shape, indices.shape)) if d != axis
    ):
        primitive.fail(f"{what} and indices must agree on every axis but axis {axis}", metas)


@register
class TakeAlongAxis(Primitive):
    """``numpy.take_along_axis(values, indices, axis)`` for operands of one rank that agree on every
    other axis: element ``i`` of the result is ``values`` at ``i`` with its ``axis`` coordinate
    replaced by ``indices[i]``. Indices outside the axis raise ``IndexingError``, as ``Take``'s do."""

    name = "TakeAlongAxis"
    arity = 2
    kernel = "sort"
    element_flops = 0  # it only moves elements
    attributes = {"axis": kinds.axis}
    batch = batching.leading_axis

    def normalize(self, metas, attrs):
        return {"axis": axis_index(attrs.get("axis", -1), metas[0].shape, self.name)}

    def infer(self, metas, attrs):
        require_float(self, metas[:1])
        _along_axis_meta(self, metas, attrs["axis"], "values")
        return Meta(metas[1].shape, metas[0].dtype)

    def index_range(self, shapes, attrs):
        """How many slots the indices address, and those slots in words (``check_indices``)."""
        axis = attrs["axis"]
        return shapes[0][axis], f"axis {axis} of {tuple(shapes[0])}"

    def forward(self, inputs, attrs):
        values, indices = inputs
        check_indices(self, indices, [values.shape, indices.shape], attrs)
        return np.take_along_axis(values, indices, attrs["axis"])

    def vjp(self, e, g, operands, out, attrs):
        values, indices = operands
        extent = e.shape(values)[attrs["axis"]]
        return [e.apply("ScatterAddAlongAxis", [g, indices], axis=attrs["axis"], extent=extent), None]

    def stablehlo(self, ctx, node):
        values, indices = (ctx.operand_node(node, i) for i in (0, 1))
        rank = len(values.shape)
        full = _index_vectors(ctx, ctx.operands(node)[1], indices.shape, node.attrs["axis"])
        every = list(range(rank))
        v = ctx.operands(node)[0]
        return ctx.emit(
            f'"stablehlo.gather"({v}, {full}) {{dimension_numbers = #stablehlo.gather<offset_dims = [], '
            f"collapsed_slice_dims = {every}, start_index_map = {every}, index_vector_dim = {rank}>, "
            f"slice_sizes = array<i64: {', '.join(['1'] * rank)}>, indices_are_sorted = false}} : "
            f"({ctx.type(values)}, {ctx.tensor_type(indices.shape + (rank,), 'int32')}) -> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        return k.take_along_axis(node, *views)


@register
class ScatterAddAlongAxis(Primitive):
    """The transpose of ``TakeAlongAxis``: ``updates`` summed into zeros of ``extent`` slots along
    ``axis`` (the other axes as the updates'), each at its index; repeated indices add, in order."""

    name = "ScatterAddAlongAxis"
    arity = 2
    kernel = "sort"
    attributes = {"axis": kinds.axis, "extent": kinds.count}
    batch = batching.leading_axis

    def normalize(self, metas, attrs):
        axis = axis_index(attrs.get("axis", -1), metas[0].shape, self.name)
        return {"axis": axis, "extent": integer_attr(self, metas, attrs.get("extent"), "extent")}

    def infer(self, metas, attrs):
        require_float(self, metas[:1])
        _along_axis_meta(self, metas, attrs["axis"], "updates")
        if attrs["extent"] < 0:
            self.fail(f"extent must not be negative, got {attrs['extent']}", metas)
        axis, shape = attrs["axis"], metas[0].shape
        return Meta(shape[:axis] + (attrs["extent"],) + shape[axis + 1 :], metas[0].dtype)

    def index_range(self, shapes, attrs):
        """How many slots the indices address, and those slots in words (``check_indices``)."""
        axis, extent = attrs["axis"], attrs["extent"]
        shape = tuple(shapes[0][:axis]) + (extent,) + tuple(shapes[0][axis + 1 :])
        return extent, f"axis {axis} of {shape}"

    def forward(self, inputs, attrs):
        updates, indices = inputs
        check_indices(self, indices, [updates.shape, indices.shape], attrs)
        axis, extent = attrs["axis"], attrs["extent"]
        # Each row along the axis scatters into its own slots: flat targets row * extent + index.
        rows = np.moveaxis(updates, axis, -1)
        targets = np.moveaxis(indices, axis, -1).astype(np.int64)
        batch = rows.shape[:-1]
        targets = targets + extent * np.arange(math.prod(batch), dtype=np.int64).reshape(batch + (1,))
        flat = np.zeros(math.prod(batch) * extent, dtype=updates.dtype)
        scatter_add_rows(flat, targets.reshape(-1), np.ascontiguousarray(rows).reshape(-1))
        return np.ascontiguousarray(np.moveaxis(flat.reshape(batch + (extent,)), -1, axis))

    def vjp(self, e, g, operands, out, attrs):
        return [e.apply("TakeAlongAxis", [g, operands[1]], axis=attrs["axis"]), None]

    def stablehlo(self, ctx, node):
        updates, indices = (ctx.operand_node(node, i) for i in (0, 1))
        rank = len(updates.shape)
        u, i = ctx.operands(node)
        full = _index_vectors(ctx, i, indices.shape, node.attrs["axis"])
        zeros = ctx.splat(0.0, node.shape, node.dtype)
        every = list(range(rank))
        return ctx.emit(
            f'"stablehlo.scatter"({zeros}, {full}, {u}) ({{\n'
            f"{ctx.region('stablehlo.add', ctx.tensor_type((), node.dtype))}\n"
            f"    }}) {{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], "
            f"inserted_window_dims = {every}, scatter_dims_to_operand_dims = {every}, index_vector_dim = {rank}>, "
            f"indices_are_sorted = false, unique_indices = false}} : "
            f"({ctx.type(node)}, {ctx.tensor_type(indices.shape + (rank,), 'int32')}, {ctx.type(updates)}) "
            f"-> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        return k.scatter_add_along_axis(node, *views)

    def wgsl_declines(self, k, node):
        return k.scatter_along_declines(node)


@register
class SearchSorted(Primitive):
    """``numpy.searchsorted(a, v, side)`` as int32: for each value of ``v``, how many elements of
    the sorted vector ``a`` go before it (``side="left"``: those below it; ``"right"``: those at
    or below it), in numpy's order, where a NaN sorts last. No derivative (it is a count).

    The StableHLO form is JAX's ``method="compare_all"``: every element of ``a`` compared with
    every value, the hits summed (len(a) x len(v) work, no loop); the interpreter and the WGSL
    kernel search (log2 len(a) steps a value). Where ``a`` is not sorted the answer is unspecified, as numpy's.
    """

    name = "SearchSorted"
    arity = 2
    differentiable = False
    kernel = "sort"
    device_dtypes = ("int32",)
    attributes = {"right": kinds.flag}

    def normalize(self, metas, attrs):
        return {"right": _flag(self, metas, attrs.get("right", False), "right")}

    def batch(self, e, operands, dims, attrs):
        if dims[0] is not None:
            raise MissingRuleError("SearchSorted has no batching rule (vmap): a batched sorted vector")
        return e.apply("SearchSorted", operands, **attrs), dims[1]

    def infer(self, metas, attrs):
        require_float(self, metas)
        if metas[0].rank != 1:
            self.fail(f"searches a vector, got a sorted operand of rank {metas[0].rank}", metas)
        if metas[0].dtype != metas[1].dtype:
            self.fail(f"operand dtypes {metas[0].dtype} and {metas[1].dtype} differ", metas)
        return Meta(metas[1].shape, "int32")

    def forward(self, inputs, attrs):
        a, v = inputs
        return np.searchsorted(a, v, side="right" if attrs["right"] else "left").astype(np.int32)

    def stablehlo(self, ctx, node):
        a, v = (ctx.operand_node(node, i) for i in (0, 1))
        shape = v.shape + a.shape
        rank, dtype = len(v.shape), a.dtype
        a_name, v_name = ctx.operands(node)
        sorted_all = ctx.broadcast_in_dim(a_name, a.shape, shape, dtype, [rank])
        values = ctx.broadcast_in_dim(v_name, v.shape, shape, dtype, range(rank))
        # Numpy's order puts a NaN last: a NaN value has every number before it ("left") or
        # everything ("right"); a NaN element of a goes before no number.
        value_nan = ctx.compare("NE", values, values, shape, dtype)
        if node.attrs["right"]:
            below = ctx.compare("LE", sorted_all, values, shape, dtype)
            before = ctx.emit(f"stablehlo.or {below}, {value_nan} : {ctx.tensor_type(shape, 'bool')}")
        else:
            below = ctx.compare("LT", sorted_all, values, shape, dtype)
            number = ctx.compare("EQ", sorted_all, sorted_all, shape, dtype)
            after_numbers = ctx.emit(f"stablehlo.and {value_nan}, {number} : {ctx.tensor_type(shape, 'bool')}")
            before = ctx.emit(f"stablehlo.or {below}, {after_numbers} : {ctx.tensor_type(shape, 'bool')}")
        counts = ctx.convert(before, shape, "bool", "int32")
        return ctx.reduce_value(counts, shape, "int32", (rank,), "stablehlo.add", 0)

    def wgsl_launch(self, k, node, views):
        return k.search_sorted(node, *views)

    def cost(self, operands, meta, attrs):
        # A binary search: log2 n comparisons a value.
        n = operands[0].shape[0]
        return meta.size * max(1, math.ceil(math.log2(max(n, 2)))), bytes_moved(operands, meta)
