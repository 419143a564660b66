"""Pieces the portable lowerings share (``cholesky_lowering``, ``qr_lowering``, ``spectral_lowering``).

Those lowerings are what ``plan.emit_stablehlo(portable=True)`` writes for the factorisations
StableHLO lacks or that only XLA on a CPU runs (``topos.compiler.stablehlo``'s docstring):
``stablehlo.while`` loops (``ctx.while_loop``) whose bodies read one row or column with
``dynamic_slice``, write one with ``dynamic_update_slice``, and update whole matrices with
``dot_general``, ``select`` and elementwise ops, so IREE, XLA on any device, or any other
StableHLO consumer runs them. Every helper takes the batch axes in front, as the ops do.
"""


def index(ctx, value):
    """A ``tensor<i32>`` constant: a loop counter's start, step or bound."""
    return ctx.emit(f"stablehlo.constant dense<{int(value)}> : tensor<i32>")


def counted(ctx, counter, limit):
    """``counter < limit`` (a ``tensor<i1>``), a loop's condition."""
    return ctx.compare("LT", counter, index(ctx, limit), (), "int32")


def increment(ctx, counter):
    return ctx.emit(f"stablehlo.add {counter}, {index(ctx, 1)} : tensor<i32>")


def iota(ctx, shape, axis):
    return ctx.emit(f"stablehlo.iota dim = {axis} : {ctx.tensor_type(shape, 'int32')}")


def take(ctx, value, shape, dtype, starts, sizes):
    """``value[starts : starts + sizes]``, ``starts`` a ``tensor<i32>`` name (or int) an axis."""
    starts = [index(ctx, start) if isinstance(start, int) else start for start in starts]
    return ctx.emit(
        f"stablehlo.dynamic_slice {value}, {', '.join(starts)}, sizes = [{', '.join(map(str, sizes))}] : "
        f"({ctx.tensor_type(shape, dtype)}, {', '.join(['tensor<i32>'] * len(starts))}) -> "
        f"{ctx.tensor_type(sizes, dtype)}"
    )


def put(ctx, value, update, shape, sizes, dtype, starts):
    """``value`` with ``update`` (of shape ``sizes``) written at ``starts``."""
    starts = [index(ctx, start) if isinstance(start, int) else start for start in starts]
    return ctx.emit(
        f"stablehlo.dynamic_update_slice {value}, {update}, {', '.join(starts)} : "
        f"({ctx.tensor_type(shape, dtype)}, {ctx.tensor_type(sizes, dtype)}, "
        f"{', '.join(['tensor<i32>'] * len(starts))}) -> {ctx.tensor_type(shape, dtype)}"
    )


def row(ctx, value, shape, dtype, at):
    """Row ``at`` of [..., r, c], as [..., c]."""
    batch = tuple(shape[:-2])
    picked = take(ctx, value, shape, dtype, [0] * len(batch) + [at, 0], batch + (1, shape[-1]))
    return ctx.reshape(picked, batch + (1, shape[-1]), batch + (shape[-1],), dtype)


def column(ctx, value, shape, dtype, at):
    """Column ``at`` of [..., r, c], as [..., r]."""
    batch = tuple(shape[:-2])
    picked = take(ctx, value, shape, dtype, [0] * len(batch) + [0, at], batch + (shape[-2], 1))
    return ctx.reshape(picked, batch + (shape[-2], 1), batch + (shape[-2],), dtype)


def entry(ctx, vector, shape, dtype, at):
    """Element ``at`` of the last axis of [..., n], as [...]."""
    batch = tuple(shape[:-1])
    picked = take(ctx, vector, shape, dtype, [0] * len(batch) + [at], batch + (1,))
    return ctx.reshape(picked, batch + (1,), batch, dtype)


def put_row(ctx, value, vector, shape, dtype, at):
    batch = tuple(shape[:-2])
    sizes = batch + (1, shape[-1])
    update = ctx.reshape(vector, batch + (shape[-1],), sizes, dtype)
    return put(ctx, value, update, shape, sizes, dtype, [0] * len(batch) + [at, 0])


def put_column(ctx, value, vector, shape, dtype, at):
    batch = tuple(shape[:-2])
    sizes = batch + (shape[-2], 1)
    update = ctx.reshape(vector, batch + (shape[-2],), sizes, dtype)
    return put(ctx, value, update, shape, sizes, dtype, [0] * len(batch) + [0, at])


def spread(ctx, value, from_shape, to_shape, dtype, dims):
    return ctx.broadcast_in_dim(value, from_shape, to_shape, dtype, tuple(dims))


def along_rows(ctx, vector, shape, dtype):
    """A [..., r] vector as [..., r, c]: element i on all of row i."""
    batch = tuple(range(len(shape) - 2))
    return spread(ctx, vector, tuple(shape[:-1]), shape, dtype, batch + (len(shape) - 2,))


def along_columns(ctx, vector, shape, dtype):
    """A [..., c] vector as [..., r, c]: element j on all of column j."""
    batch = tuple(range(len(shape) - 2))
    return spread(ctx, vector, tuple(shape[:-2]) + (shape[-1],), shape, dtype, batch + (len(shape) - 1,))


def of_batch(ctx, value, batch, shape, dtype):
    """A [...] (one value a matrix of the batch) spread over ``shape``."""
    return spread(ctx, value, batch, shape, dtype, range(len(batch)))


def transposed(ctx, value, shape, dtype):
    """[..., r, c] as [..., c, r]."""
    rank = len(shape)
    axes = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    out = tuple(shape[:-2]) + (shape[-1], shape[-2])
    return ctx.emit(
        f"stablehlo.transpose {value}, dims = [{', '.join(map(str, axes))}] : "
        f"({ctx.tensor_type(shape, dtype)}) -> {ctx.tensor_type(out, dtype)}"
    )


def product(ctx, a, a_shape, b, b_shape, dtype, a_axis, b_axis, batch_rank):
    """``dot_general`` of two values whose first ``batch_rank`` axes are the batch, contracting
    ``a_axis`` with ``b_axis``: the result's axes are the batch's, then ``a``'s free ones, then
    ``b``'s. Returns its name and shape."""
    batch = tuple(a_shape[:batch_rank])
    free_a = tuple(extent for axis, extent in enumerate(a_shape) if axis >= batch_rank and axis != a_axis)
    free_b = tuple(extent for axis, extent in enumerate(b_shape) if axis >= batch_rank and axis != b_axis)
    dims = ", ".join(map(str, range(batch_rank)))
    batching = f"batching_dims = [{dims}] x [{dims}], " if batch_rank else ""
    out = batch + free_a + free_b
    return ctx.emit(
        f"stablehlo.dot_general {a}, {b}, {batching}contracting_dims = [{a_axis}] x [{b_axis}] : "
        f"({ctx.tensor_type(a_shape, dtype)}, {ctx.tensor_type(b_shape, dtype)}) -> {ctx.tensor_type(out, dtype)}"
    ), out


def matmul(ctx, a, b, shape_a, shape_b, dtype):
    """[..., r, k] @ [..., k, c]."""
    rank = len(shape_a)
    return product(ctx, a, shape_a, b, shape_b, dtype, rank - 1, rank - 2, rank - 2)[0]


def elementwise(ctx, op, operands, shape, dtype):
    return ctx.emit(f"{op} {', '.join(operands)} : {ctx.tensor_type(shape, dtype)}")


def identity(ctx, shape, dtype):
    """The identity (ones where row == column) of [..., r, c]."""
    rank = len(shape)
    rows, cols = iota(ctx, shape, rank - 2), iota(ctx, shape, rank - 1)
    same = ctx.compare("EQ", rows, cols, shape, "int32")
    return ctx.select(same, ctx.splat(1.0, shape, dtype), ctx.splat(0.0, shape, dtype), shape, dtype)


def nan_unless(ctx, good, batch, value, shape, dtype):
    """``value`` for the matrices of the batch where ``good`` (a [...] of i1) holds, NaN elsewhere."""
    mask = of_batch(ctx, good, batch, shape, "bool")
    return ctx.select(mask, value, ctx.splat(float("nan"), shape, dtype), shape, dtype)


def all_of(ctx, predicate, shape, axes):
    return ctx.reduce_value(predicate, shape, "bool", tuple(axes), "stablehlo.and", True)
