"""Integer-indexed primitives: gather (embedding lookup), its scatter-add
transpose, and one-hot encoding. Index operands have dtype int32."""

import numpy as np

from ..errors import IndexingError
from ..tensor import FLOAT_DTYPES, canonical_dtype
from .registry import Meta, Primitive, axis_index, format_shape, integer_attr, register


def _require_indices(primitive, metas, meta):
    if meta.dtype != "int32":
        primitive.fail(f"indices must be int32, got {meta.dtype}", metas)


@register
class Take(Primitive):
    """``Take(v, indices)`` along ``axis``: out shape = v[:axis] + indices + v[axis+1:].

    Indices are checked against the axis when the node runs; out-of-range indices
    raise ``IndexingError`` (an ``IndexError``) rather than wrap.
    """

    name = "Take"
    arity = 2
    kernel = "gather"

    def normalize(self, metas, attrs):
        return {"axis": axis_index(attrs.get("axis", 0), metas[0].shape, self.name)}

    def infer(self, metas, attrs):
        values, indices = metas
        if values.dtype not in ("float32", "float64"):
            self.fail(f"takes from floating-point values, got {values.dtype}", metas)
        _require_indices(self, metas, indices)
        axis = attrs["axis"]
        shape = values.shape[:axis] + indices.shape + values.shape[axis + 1 :]
        return Meta(shape, values.dtype)

    def forward(self, inputs, attrs):
        values, indices = inputs
        extent = values.shape[attrs["axis"]]
        if indices.size and (indices.min() < 0 or indices.max() >= extent):
            allowed = f"0..{extent - 1}" if extent else "none: the axis is empty"
            raise IndexingError(
                f"Take: index out of range for axis {attrs['axis']} of {format_shape(values.shape)}: "
                f"allowed {allowed}, got {indices.min()}..{indices.max()}",
                opcode="Take", shapes=[values.shape, indices.shape],
            )
        return np.take(values, indices, axis=attrs["axis"])

    def vjp(self, e, g, operands, out, attrs):
        values, indices = operands
        extent = e.shape(values)[attrs["axis"]]
        return [e.apply("ScatterAdd", [g, indices], axis=attrs["axis"], extent=extent), None]

    def stablehlo(self, ctx, node):
        # A gather of one slice per index: the taken axis collapses, the others are offset axes.
        values, indices = (ctx.operand_node(node, i) for i in (0, 1))
        axis, index_rank, rank = node.attrs["axis"], len(indices.shape), len(values.shape)
        offset_dims = list(range(axis)) + list(range(axis + index_rank, rank - 1 + index_rank))
        slice_sizes = ", ".join(str(1 if i == axis else extent) for i, extent in enumerate(values.shape))
        v, i = ctx.operands(node)
        return ctx.emit(
            f'"stablehlo.gather"({v}, {i}) {{dimension_numbers = #stablehlo.gather<offset_dims = {offset_dims}, '
            f"collapsed_slice_dims = [{axis}], start_index_map = [{axis}], index_vector_dim = {index_rank}>, "
            f"slice_sizes = array<i64: {slice_sizes}>, indices_are_sorted = false}} : "
            f"({ctx.type(values)}, {ctx.type(indices)}) -> {ctx.type(node)}"
        )


@register
class ScatterAdd(Primitive):
    """The transpose of Take: sums rows of ``updates`` into ``extent`` slots along ``axis``.

    ``ScatterAdd(updates, indices)`` with updates shaped like ``Take``'s output
    gives a value shaped like ``Take``'s first operand.
    """

    name = "ScatterAdd"
    arity = 2
    kernel = None  # declined on WebGPU: float atomics are not portable WGSL

    def normalize(self, metas, attrs):
        axis = integer_attr(self, metas, attrs.get("axis"), "axis")
        return {"axis": axis, "extent": integer_attr(self, metas, attrs.get("extent"), "extent")}

    def infer(self, metas, attrs):
        updates, indices = metas
        _require_indices(self, metas, indices)
        axis = attrs["axis"]
        index_rank = indices.rank
        if updates.shape[axis : axis + index_rank] != indices.shape:
            self.fail(
                f"updates {format_shape(updates.shape)} do not hold indices {format_shape(indices.shape)} at axis {axis}",
                metas,
            )
        shape = updates.shape[:axis] + (attrs["extent"],) + updates.shape[axis + index_rank :]
        return Meta(shape, updates.dtype)

    def forward(self, inputs, attrs):
        updates, indices = inputs
        axis = attrs["axis"]
        index_rank = indices.ndim
        shape = updates.shape[:axis] + (attrs["extent"],) + updates.shape[axis + index_rank :]
        result = np.zeros(shape, dtype=updates.dtype)
        # Move the scattered axis first so that np.add.at sums repeated indices.
        moved = np.moveaxis(result, axis, 0)
        flat_updates = updates.reshape(updates.shape[:axis] + (-1,) + updates.shape[axis + index_rank :])
        np.add.at(moved, indices.reshape(-1), np.moveaxis(flat_updates, axis, 0))
        return result

    def vjp(self, e, g, operands, out, attrs):
        return [e.apply("Take", [g, operands[1]], axis=attrs["axis"]), None]

    def stablehlo(self, ctx, node):
        # Take's gather transposed: a scatter into zeros whose region adds, so repeated indices sum.
        updates, indices = (ctx.operand_node(node, i) for i in (0, 1))
        axis, index_rank = node.attrs["axis"], len(indices.shape)
        window_dims = list(range(axis)) + list(range(axis + index_rank, len(updates.shape)))
        zeros = ctx.splat(0.0, node.shape, node.dtype)
        u, i = ctx.operands(node)
        return ctx.emit(
            f'"stablehlo.scatter"({zeros}, {i}, {u}) ({{\n'
            f"{ctx.region('stablehlo.add', ctx.tensor_type((), node.dtype))}\n"
            f"    }}) {{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = {window_dims}, "
            f"inserted_window_dims = [{axis}], scatter_dims_to_operand_dims = [{axis}], index_vector_dim = {index_rank}>, "
            f"indices_are_sorted = false, unique_indices = false}} : "
            f"({ctx.type(node)}, {ctx.type(indices)}, {ctx.type(updates)}) -> {ctx.type(node)}"
        )


@register
class OneHot(Primitive):
    """``OneHot(indices)`` with ``depth`` n: 1.0 at each index along a new last axis."""

    name = "OneHot"
    arity = 1
    differentiable = False
    kernel = "gather"

    def normalize(self, metas, attrs):
        depth = integer_attr(self, metas, attrs.get("depth"), "depth")
        return {"depth": depth, "dtype": canonical_dtype(attrs.get("dtype"), FLOAT_DTYPES)}

    def infer(self, metas, attrs):
        _require_indices(self, metas, metas[0])
        if attrs["depth"] < 1:
            self.fail(f"depth must be positive, got {attrs['depth']}", metas)
        return Meta(metas[0].shape + (attrs["depth"],), attrs["dtype"])

    def forward(self, inputs, attrs):
        indices = inputs[0]
        return (indices[..., None] == np.arange(attrs["depth"], dtype=indices.dtype)).astype(attrs["dtype"])

    def stablehlo(self, ctx, node):
        indices = ctx.operand_node(node, 0)
        rank = len(indices.shape)
        positions = ctx.emit(f"stablehlo.iota dim = {rank} : {ctx.tensor_type(node.shape, 'int32')}")
        spread = ctx.broadcast_in_dim(ctx.operands(node)[0], indices.shape, node.shape, "int32", range(rank))
        hits = ctx.compare("EQ", spread, positions, node.shape, "int32")
        return ctx.convert(hits, node.shape, "bool", node.dtype)
