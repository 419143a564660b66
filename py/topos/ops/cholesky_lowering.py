"""``Cholesky``'s and ``TriangularSolve``'s portable StableHLO: ``stablehlo.while`` loops of one column
or one row a step, for consumers without ``stablehlo.cholesky`` and ``stablehlo.triangular_solve``.

IREE refuses both ops ("failed to legalize"), and XLA expands them itself; these loops are what
``plan.emit_stablehlo(portable=True)`` writes instead (``topos.compiler.stablehlo``'s docstring).

Cholesky is the right-looking outer-product form (Golub and Van Loan, algorithm 4.2.2): step k
reads column k of the working matrix with ``dynamic_slice``, takes ``l_kk = sqrt(a_kk)`` and
``l_ik = a_ik / l_kk`` below it, writes that column back and subtracts ``l l^T`` from the trailing
block (an outer product of whole matrices, kept where row and column are past k). A
pivot ``a_kk <= 0`` is where ``potrf`` fails, and the loop carries whether one was met: such a
matrix becomes all NaN, the forward's (and JAX's) answer. A NaN pivot is not a failure there (the
OpenBLAS ``potrf`` numpy calls tests ``a_kk <= 0`` only), so NaNs spread as the arithmetic takes
them, as in the forward.

TriangularSolve is substitution, one row of x a step (the forward's ``substitute``): the solve is
brought to a lower or upper ``t x = b`` on the left by transposing ``a``, ``b`` and the result,
the other triangle of ``a`` is never read (a ``select`` of its zeros), and row r of x is
``(b_r - t_r x) / t_rr`` where the unsolved rows of x are still 0.
"""

from .portable_lowering import (
    along_columns,
    along_rows,
    column,
    counted,
    elementwise,
    entry,
    increment,
    index,
    iota,
    nan_unless,
    product,
    put_column,
    put_row,
    row,
    transposed,
)


def cholesky_portable(ctx, sym, shape, dtype):
    """The lower factor of the symmetric ``sym`` [..., n, n], its upper triangle 0, NaN where it fails."""
    rank, n, batch = len(shape), shape[-1], tuple(shape[:-2])
    matrix, vector = ctx.tensor_type(shape, dtype), ctx.tensor_type(batch + (n,), dtype)

    def body(state):
        a, k, healthy = state
        positions = iota(ctx, batch + (n,), rank - 2)
        at_k = ctx.broadcast_in_dim(k, (), batch + (n,), "int32", ())
        current = column(ctx, a, shape, dtype, k)
        squared = entry(ctx, current, batch + (n,), dtype, k)
        failed = ctx.compare("LE", squared, ctx.splat(0.0, batch, dtype), batch, dtype)
        passed = ctx.emit(f"stablehlo.not {failed} : {ctx.tensor_type(batch, 'bool')}")
        healthy = ctx.emit(f"stablehlo.and {healthy}, {passed} : {ctx.tensor_type(batch, 'bool')}")
        pivot = ctx.emit(f"stablehlo.sqrt {squared} : {ctx.tensor_type(batch, dtype)}")
        pivots = ctx.broadcast_in_dim(pivot, batch, batch + (n,), dtype, tuple(range(len(batch))))
        scaled = ctx.emit(f"stablehlo.divide {current}, {pivots} : {vector}")
        zeros = ctx.splat(0.0, batch + (n,), dtype)
        below = ctx.compare("GT", positions, at_k, batch + (n,), "int32")
        on = ctx.compare("EQ", positions, at_k, batch + (n,), "int32")
        factor = ctx.select(below, scaled, ctx.select(on, pivots, zeros, batch + (n,), dtype), batch + (n,), dtype)
        # The trailing block loses l l^T; where l is 0 (left of and above k) nothing changes.
        outer = elementwise(
            ctx,
            "stablehlo.multiply",
            [along_rows(ctx, factor, shape, dtype), along_columns(ctx, factor, shape, dtype)],
            shape,
            dtype,
        )
        updated = ctx.emit(f"stablehlo.subtract {a}, {outer} : {matrix}")
        # Only the trailing block changes: elsewhere l's zeros would turn a NaN pivot's 0 * NaN into NaN.
        rows, cols = iota(ctx, shape, rank - 2), iota(ctx, shape, rank - 1)
        corner = ctx.broadcast_in_dim(k, (), shape, "int32", ())
        below = ctx.compare("GT", rows, corner, shape, "int32")
        right = ctx.compare("GT", cols, corner, shape, "int32")
        trailing = ctx.emit(f"stablehlo.and {below}, {right} : {ctx.tensor_type(shape, 'bool')}")
        updated = ctx.select(trailing, updated, a, shape, dtype)
        return put_column(ctx, updated, factor, shape, dtype, k), increment(ctx, k), healthy

    start = [sym, index(ctx, 0), ctx.splat(True, batch, "bool")]
    types = [matrix, "tensor<i32>", ctx.tensor_type(batch, "bool")]
    result, _, healthy = ctx.while_loop(start, types, lambda state: counted(ctx, state[1], n), body)
    rows, cols = iota(ctx, shape, rank - 2), iota(ctx, shape, rank - 1)
    lower = ctx.compare("GE", rows, cols, shape, "int32")
    factor = ctx.select(lower, result, ctx.splat(0.0, shape, dtype), shape, dtype)
    return nan_unless(ctx, healthy, batch, factor, shape, dtype)


def triangular_solve_portable(ctx, node):
    """``TriangularSolve``'s value by substitution in a ``stablehlo.while``, one row of x a step."""
    a, b = ctx.operands(node)
    attrs = node.attrs
    a_shape, dtype = ctx.operand_node(node, 0).shape, node.dtype
    rank, n, batch = len(a_shape), a_shape[-1], tuple(a_shape[:-2])
    rows, cols = iota(ctx, a_shape, rank - 2), iota(ctx, a_shape, rank - 1)
    kept = ctx.compare("GE" if attrs["lower"] else "LE", rows, cols, a_shape, "int32")
    t = ctx.select(kept, a, ctx.splat(0.0, a_shape, dtype), a_shape, dtype)
    if attrs["unit_diagonal"]:
        diagonal = ctx.compare("EQ", rows, cols, a_shape, "int32")
        t = ctx.select(diagonal, ctx.splat(1.0, a_shape, dtype), t, a_shape, dtype)
    lower = attrs["lower"] != attrs["transpose_a"]
    if attrs["transpose_a"]:
        t = transposed(ctx, t, a_shape, dtype)
    rhs, rhs_shape = b, tuple(node.shape)
    if not attrs["left_side"]:
        # x t = b is t^T x^T = b^T: the triangle flips with the transpose.
        t, lower = transposed(ctx, t, a_shape, dtype), not lower
        rhs_shape = batch + (node.shape[-1], node.shape[-2])
        rhs = transposed(ctx, b, tuple(node.shape), dtype)
    m = rhs_shape[-1]
    x_type = ctx.tensor_type(rhs_shape, dtype)

    def body(state):
        # t and b ride in the state: a loop's regions read only their own arguments.
        x, step, t, rhs = state
        at = step if lower else ctx.emit(f"stablehlo.subtract {index(ctx, n - 1)}, {step} : tensor<i32>")
        t_row = row(ctx, t, a_shape, dtype, at)
        positions = iota(ctx, batch + (n,), rank - 2)
        on = ctx.compare(
            "EQ", positions, ctx.broadcast_in_dim(at, (), batch + (n,), "int32", ()), batch + (n,), "int32"
        )
        # The diagonal is left out of the sum (0 * an unsolved row would be NaN where t_rr is infinite).
        off = ctx.select(on, ctx.splat(0.0, batch + (n,), dtype), t_row, batch + (n,), dtype)
        known, _ = product(ctx, off, batch + (n,), x, rhs_shape, dtype, rank - 2, rank - 2, len(batch))
        rest = ctx.emit(
            f"stablehlo.subtract {row(ctx, rhs, rhs_shape, dtype, at)}, {known} : {ctx.tensor_type(batch + (m,), dtype)}"
        )
        pivot = entry(ctx, t_row, batch + (n,), dtype, at)
        pivots = ctx.broadcast_in_dim(pivot, batch, batch + (m,), dtype, tuple(range(len(batch))))
        solved = ctx.emit(f"stablehlo.divide {rest}, {pivots} : {ctx.tensor_type(batch + (m,), dtype)}")
        return put_row(ctx, x, solved, rhs_shape, dtype, at), increment(ctx, step), t, rhs

    start = ctx.splat(0.0, rhs_shape, dtype)
    types = [x_type, "tensor<i32>", ctx.tensor_type(a_shape, dtype), x_type]
    x, *_ = ctx.while_loop([start, index(ctx, 0), t, rhs], types, lambda state: counted(ctx, state[1], n), body)
    if not attrs["left_side"]:
        x = transposed(ctx, x, rhs_shape, dtype)
    return x
