"""Integer-indexed primitives: gather (embedding lookup), its scatter-add
transpose, and one-hot encoding. Index operands have dtype int32."""

import math

import numpy as np

from ..dtypes import FLOAT_DTYPES, canonical_dtype
from ..errors import IndexingError
from ..text import format_shape
from . import attributes as kinds
from . import batching
from .hooks import matmul
from .registry import Meta, Primitive, axis_index, bytes_moved, integer_attr, register


def _require_indices(primitive, metas, meta):
    if meta.dtype != "int32":
        primitive.fail(f"indices must be int32, got {meta.dtype}", metas)


def check_indices(primitive, indices, shapes, attrs):
    """Refuse an index outside the range it addresses, naming the first such index, where it is, and the range.

    ``primitive`` (Take, ScatterAdd or OneHot) gives the range from its operands'
    ``shapes`` and its ``attrs`` through ``index_range``; the WebGPU backend checks
    the indices it uploads here too, so both backends refuse with the same words.
    A gather never wraps a negative index, clamps a large one or drops it: each of
    those would give a wrong value without a word. PyTorch refuses them too.
    """
    extent, what = primitive.index_range(shapes, attrs)
    # np.minimum.reduce rather than indices.min(): the same answer without numpy's Python wrapper.
    if indices.size == 0 or (
        np.minimum.reduce(indices, axis=None) >= 0 and np.maximum.reduce(indices, axis=None) < extent
    ):
        return
    opcode = primitive.name
    outside = (indices < 0) | (indices >= extent)
    position = np.unravel_index(int(np.argmax(outside)), indices.shape)
    where = f" at {format_shape(position)}" if indices.ndim else ""
    allowed = f"allowed 0..{extent - 1}" if extent else "none is allowed: the extent is 0"
    more = int(np.count_nonzero(outside)) - 1
    others = f"; {more} more {'index is' if more == 1 else 'indices are'} out of range" if more else ""
    raise IndexingError(
        f"{opcode}: index {int(indices[position])}{where} is out of range for {what}: {allowed}{others}",
        opcode=opcode,
        shapes=[tuple(shape) for shape in shapes],
    )


@register
class Take(Primitive):
    """``Take(v, indices)`` along ``axis``: out shape = v[:axis] + indices + v[axis+1:].

    Indices are checked against the axis when the node runs; out-of-range indices
    raise ``IndexingError`` (an ``IndexError``) rather than wrap.
    """

    name = "Take"
    attributes = {"axis": kinds.axis}
    arity = 2
    kernel = "gather"
    element_flops = 0  # it only moves elements

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

    def index_range(self, shapes, attrs):
        """How many slots the indices address, and those slots in words (``check_indices``)."""
        axis = attrs["axis"]
        return shapes[0][axis], f"axis {axis} of {format_shape(shapes[0])}"

    def forward(self, inputs, attrs):
        values, indices = inputs
        check_indices(self, indices, [values.shape, indices.shape], attrs)
        return np.take(values, indices, axis=attrs["axis"])

    def forward_into(self, inputs, attrs, out):
        values, indices = inputs
        if counts_up(indices, values.shape[attrs["axis"]]):  # every slot in order: the values as they are
            np.copyto(out, values)
            return out
        check_indices(self, indices, [values.shape, indices.shape], attrs)
        # The indices are checked: "clip" changes none of them, and unlike "raise" it writes out= unbuffered.
        return np.take(values, indices, axis=attrs["axis"], out=out, mode="clip")

    def batch(self, e, operands, dims, attrs):
        (values, indices), (dv, di), axis = operands, dims, attrs["axis"]
        if di is None:  # every example takes the same rows of its own values
            return e.apply("Take", [batching.to_front(e, values, dv), indices], axis=axis + 1), 0
        if dv is None:  # shared values: the indices' batch axis lands where the indices do
            return e.apply("Take", [values, indices], axis=axis), axis + di
        # Both batched: each example's indices along its own values, a TakeAlongAxis over the
        # indices flattened and stretched across the other axes, then the indices' shape restored.
        values, indices = batching.to_front_all(e, operands, dims)
        shape, taken = e.shape(values), e.shape(indices)[1:]
        flat = batching.along_axis(e, indices, shape, axis + 1)
        gathered = e.apply("TakeAlongAxis", [values, flat], axis=axis + 1)
        return e.reshape(gathered, shape[: axis + 1] + taken + shape[axis + 2 :]), 0

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

    def wgsl_launch(self, k, node, views):
        return k.take(node, *views)


_COUNTS = {}  # extent -> np.arange(extent), made once


def counts_up(indices, extent):
    """Whether ``indices`` are ``0, 1, ..., extent - 1``: a vector of ``extent`` integers, each slot once, in order."""
    if indices.ndim != 1 or indices.size != extent or indices.dtype.kind not in "iu" or extent == 0:
        return False
    count = _COUNTS.get(extent)
    if count is None:
        count = _COUNTS.setdefault(extent, np.arange(extent))
    return bool(np.equal(indices, count).all())


#: Up to this many rows ``scatter_add_rows`` leaves to ``np.add.at``.
SHORT_SCATTER = 32


#: The most elements of the one-hot matrix ``one_hot_product`` builds (4 MB of float32).
ONE_HOT_ELEMENTS = 1 << 20


def one_hot_product(out, indices, rows):
    """``out = one_hot(indices).T @ rows`` (BLAS), for float rows, all finite (a product with the zeros of
    the one-hot matrix would spread a NaN or an infinity to every index), whose one-hot matrix is small:
    twice as fast again as the sort for the gallery's embeddings. Returns whether it did."""
    if rows.dtype.kind != "f" or rows.dtype.itemsize < 4 or out.shape[0] * indices.size > ONE_HOT_ELEMENTS:
        return False
    if not (out.flags.c_contiguous and np.isfinite(rows).all()):
        return False
    one_hot = np.equal(np.arange(out.shape[0], dtype=indices.dtype)[:, None], indices).astype(rows.dtype)
    # np.matmul, or the product a runtime installed (ops/hooks.py)
    matmul(one_hot, rows.reshape(indices.size, -1), out=out.reshape(out.shape[0], -1))
    return True


def scatter_add_rows(out, indices, rows):
    """``np.add.at(out, indices, rows)`` for a zeroed ``out``, several times faster.

    ``np.add.at`` adds one row at a time through a slow general path (60 us for the gallery
    transformer's 256 token rows). Small problems of finite rows are a product with a one-hot
    matrix (``one_hot_product``); otherwise the rows are sorted by index (stably: each index's rows
    keep their order), each index's run is summed by ``np.add.reduceat`` (numpy's own summation
    order: the result may differ from ``np.add.at``'s in the last bit, and is the same from run to
    run), and each sum is written to its target once.
    """
    if indices.size <= SHORT_SCATTER:
        np.add.at(out, indices, rows)  # a few rows: the sort costs more than it saves
        return
    if one_hot_product(out, indices, rows):
        return
    order = np.argsort(indices, kind="stable")
    ordered = indices[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    sums = np.add.reduceat(rows[order], starts, axis=0)
    targets = ordered[starts]
    out[targets] = out[targets] + sums  # each target once: a plain indexed write


@register
class ScatterAdd(Primitive):
    """The transpose of Take: sums rows of ``updates`` into ``extent`` slots along ``axis``.

    ``ScatterAdd(updates, indices)`` with updates shaped like ``Take``'s output
    gives a value shaped like ``Take``'s first operand. Indices outside
    ``0..extent-1`` raise ``IndexingError``, as ``Take``'s do.
    """

    name = "ScatterAdd"
    attributes = {"axis": kinds.scatter_axis, "extent": kinds.count}
    arity = 2
    kernel = "scatter"  # a gather on WebGPU (kernels/scatter.wgsl): no float atomics, the same bits every run

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

    def index_range(self, shapes, attrs):
        """How many slots the indices address, and those slots in words (``check_indices``)."""
        (updates, indices), axis, extent = shapes, attrs["axis"], attrs["extent"]
        shape = tuple(updates[:axis]) + (extent,) + tuple(updates[axis + len(indices) :])
        return extent, f"axis {axis} of {format_shape(shape)}"

    def forward(self, inputs, attrs):
        updates, indices = inputs
        axis = attrs["axis"]
        shape = updates.shape[:axis] + (attrs["extent"],) + updates.shape[axis + indices.ndim :]
        return self.forward_into(inputs, attrs, np.zeros(shape, dtype=updates.dtype))

    def forward_into(self, inputs, attrs, out):
        updates, indices = inputs
        axis = attrs["axis"]
        if counts_up(indices, attrs["extent"]):
            # Each slot once, in order (a position embedding's 0, 1, ..., extent - 1): the updates are
            # the result as they are, where np.add.at took 20 us to add each to a zero. In range, too.
            np.copyto(out, updates)
            return out
        check_indices(self, indices, [updates.shape, indices.shape], attrs)
        out[...] = 0
        # Move the scattered axis first, then add the updates of each index together.
        flat_updates = updates.reshape(updates.shape[:axis] + (-1,) + updates.shape[axis + indices.ndim :])
        if axis == 0:  # already first (np.moveaxis costs 8 us in Python)
            scatter_add_rows(out, indices.reshape(-1), flat_updates)
        else:
            scatter_add_rows(np.moveaxis(out, axis, 0), indices.reshape(-1), np.moveaxis(flat_updates, axis, 0))
        return out

    def batch(self, e, operands, dims, attrs):
        axis, extent = attrs["axis"], attrs["extent"]
        if dims[1] is None:
            updates = batching.to_front(e, operands[0], dims[0])
            return e.apply("ScatterAdd", [updates, operands[1]], axis=axis + 1, extent=extent), 0
        # Batched indices: Take's batched rule transposed, a ScatterAddAlongAxis over flat indices.
        updates, indices = batching.to_front_all(e, operands, dims)
        shape, rank = e.shape(updates), len(e.shape(indices)) - 1
        size = math.prod(shape[axis + 1 : axis + 1 + rank])
        updates = e.reshape(updates, shape[: axis + 1] + (size,) + shape[axis + 1 + rank :])
        flat = batching.along_axis(e, indices, e.shape(updates), axis + 1)
        return e.apply("ScatterAddAlongAxis", [updates, flat], axis=axis + 1, extent=extent), 0

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

    def wgsl_launch(self, k, node, views):
        return k.scatter_add(node, *views)

    def wgsl_declines(self, k, node):
        count = k.operand_node(node, 1).size
        if count > k.MAX_SCATTER_INDICES:
            return f"{count} indices: the scatter kernel walks at most {k.MAX_SCATTER_INDICES}"
        if node.attrs["extent"] * count > k.MAX_SORT_KEYS:
            return f"{node.attrs['extent']} slots x {count} indices: more than the scatter kernel's u32 keys hold"
        return None

    def cost(self, operands, meta, attrs):
        # One add for each update.
        return operands[0].size, bytes_moved(operands, meta)


@register
class OneHot(Primitive):
    """``OneHot(indices)`` with ``depth`` n: 1.0 at each index along a new last axis.

    An index outside ``0..n-1`` raises ``IndexingError`` when the node runs, as
    PyTorch's ``one_hot`` and ``cross_entropy`` refuse a class out of range: a row
    of zeros would make ``cross_entropy`` add 0 for that target without a word.
    """

    name = "OneHot"
    attributes = {"depth": kinds.positive, "dtype": kinds.dtype_name}
    arity = 1
    differentiable = False
    kernel = "gather"
    batch = batching.leading

    def normalize(self, metas, attrs):
        depth = integer_attr(self, metas, attrs.get("depth"), "depth")
        return {"depth": depth, "dtype": canonical_dtype(attrs.get("dtype"), FLOAT_DTYPES)}

    def infer(self, metas, attrs):
        _require_indices(self, metas, metas[0])
        if attrs["depth"] < 1:
            self.fail(f"depth must be positive, got {attrs['depth']}", metas)
        return Meta(metas[0].shape + (attrs["depth"],), attrs["dtype"])

    def index_range(self, shapes, attrs):
        """How many classes the indices address, and the range in words (``check_indices``)."""
        return attrs["depth"], f"depth {attrs['depth']}"

    def forward(self, inputs, attrs):
        indices = inputs[0]
        check_indices(self, indices, [indices.shape], attrs)
        return (indices[..., None] == np.arange(attrs["depth"], dtype=indices.dtype)).astype(attrs["dtype"])

    def forward_into(self, inputs, attrs, out):
        # The comparison written straight into the float result (a safe cast from bool): one pass,
        # no boolean array to copy. The same 1.0s and 0.0s as forward.
        indices = inputs[0]
        check_indices(self, indices, [indices.shape], attrs)
        return np.equal(indices[..., None], np.arange(attrs["depth"], dtype=indices.dtype), out=out)

    def stablehlo(self, ctx, node):
        indices = ctx.operand_node(node, 0)
        rank = len(indices.shape)
        positions = ctx.emit(f"stablehlo.iota dim = {rank} : {ctx.tensor_type(node.shape, 'int32')}")
        spread = ctx.broadcast_in_dim(ctx.operands(node)[0], indices.shape, node.shape, "int32", range(rank))
        hits = ctx.compare("EQ", spread, positions, node.shape, "int32")
        return ctx.convert(hits, node.shape, "bool", node.dtype)

    def wgsl_launch(self, k, node, views):
        return k.one_hot(node, views[0])
