"""``Qr``'s portable StableHLO: Householder reflections in a ``stablehlo.while``, then Q formed explicitly
in a second one, LAPACK's ``geqrf`` and ``orgqr`` (unblocked: ``geqr2``, ``org2r``) written out.

XLA CPU runs the LAPACK custom calls the default reading writes; IREE and XLA on other devices do
not, so ``plan.emit_stablehlo(portable=True)`` writes this instead (``topos.compiler.stablehlo``).
Step k of the first loop reads column k of the working matrix (``dynamic_slice``) and makes the
reflector ``H = I - tau v v^T`` of LAPACK's ``dlarfg``: ``beta = -sign(alpha) ||x||`` with
``alpha = x_k`` (a zero ``alpha`` counts as positive), ``v = x / (alpha - beta)`` below row k and
1 on it, ``tau = (beta - alpha) / beta``; where the column is already 0 below the diagonal,
``tau = 0`` and ``beta = alpha``, so R's diagonal keeps that sign. These are the forward's
(``numpy.linalg.qr``'s) signs: no sign is fixed afterwards. The norm is taken of ``x / max |x|``
and scaled back, as ``dnrm2`` does, so squares neither overflow nor underflow. ``H`` reaches the
whole matrix as one rank-one update (columns left of k are 0 from row k down, so they keep their
values); column k is then written as ``beta`` on the diagonal and zeros below. The second loop
applies ``H_{n-1}`` ... ``H_0`` to the identity's first n columns, last reflector first, as ``orgqr``.
"""

from .portable_lowering import (
    column,
    counted,
    elementwise,
    entry,
    identity,
    increment,
    index,
    iota,
    of_batch,
    product,
    put,
    put_column,
)


def householder_qr(ctx, a, shape, dtype):
    """``(q [..., m, n], r [..., n, n])`` of ``a`` [..., m, n], m >= n: the reduced QR with LAPACK's signs."""
    rank, (m, n), batch = len(shape), shape[-2:], tuple(shape[:-2])
    matrix, vector, lead = ctx.tensor_type(shape, dtype), batch + (m,), tuple(range(len(batch)))
    scalar_type = ctx.tensor_type(batch, dtype)

    def scalars(op, *operands):
        return elementwise(ctx, op, operands, batch, dtype)

    def outer_update(target, v, tau, target_shape):
        """``target - tau v (v^T target)``: one reflector applied from the left."""
        w, w_shape = product(ctx, v, vector, target, target_shape, dtype, rank - 2, rank - 2, len(batch))
        spread_v = ctx.broadcast_in_dim(v, vector, target_shape, dtype, lead + (rank - 2,))
        spread_w = ctx.broadcast_in_dim(w, w_shape, target_shape, dtype, lead + (rank - 1,))
        spread_tau = of_batch(ctx, tau, batch, target_shape, dtype)
        step = elementwise(ctx, "stablehlo.multiply", [spread_v, spread_w], target_shape, dtype)
        step = elementwise(ctx, "stablehlo.multiply", [step, spread_tau], target_shape, dtype)
        return elementwise(ctx, "stablehlo.subtract", [target, step], target_shape, dtype)

    def factor(state):
        r, reflectors, taus, k = state
        positions = iota(ctx, vector, rank - 2)
        at_k = ctx.broadcast_in_dim(k, (), vector, "int32", ())
        below = ctx.compare("GT", positions, at_k, vector, "int32")
        on = ctx.compare("EQ", positions, at_k, vector, "int32")
        zeros = ctx.splat(0.0, vector, dtype)
        x = column(ctx, r, shape, dtype, k)
        alpha = entry(ctx, x, vector, dtype, k)
        tail = ctx.select(below, x, zeros, vector, dtype)
        # ||(alpha, tail)|| as dnrm2: of x / max|x| (1 where x is 0), scaled back.
        size = ctx.select(ctx.compare("GE", positions, at_k, vector, "int32"), x, zeros, vector, dtype)
        size = ctx.emit(f"stablehlo.abs {size} : {ctx.tensor_type(vector, dtype)}")
        largest = ctx.reduce_value(size, vector, dtype, (rank - 2,), "stablehlo.maximum", 0.0)
        nothing = ctx.compare("EQ", largest, ctx.splat(0.0, batch, dtype), batch, dtype)
        largest = ctx.select(nothing, ctx.splat(1.0, batch, dtype), largest, batch, dtype)
        unit = elementwise(ctx, "stablehlo.divide", [size, of_batch(ctx, largest, batch, vector, dtype)], vector, dtype)
        squares = ctx.reduce_value(
            elementwise(ctx, "stablehlo.multiply", [unit, unit], vector, dtype),
            vector,
            dtype,
            (rank - 2,),
            "stablehlo.add",
            0.0,
        )
        norm = scalars("stablehlo.multiply", ctx.emit(f"stablehlo.sqrt {squares} : {scalar_type}"), largest)
        tail_size = ctx.reduce_value(
            ctx.emit(f"stablehlo.abs {tail} : {ctx.tensor_type(vector, dtype)}"),
            vector,
            dtype,
            (rank - 2,),
            "stablehlo.maximum",
            0.0,
        )
        settled = ctx.compare("EQ", tail_size, ctx.splat(0.0, batch, dtype), batch, dtype)
        positive = ctx.compare("GE", alpha, ctx.splat(0.0, batch, dtype), batch, dtype)
        negated = ctx.emit(f"stablehlo.negate {norm} : {scalar_type}")
        beta = ctx.select(settled, alpha, ctx.select(positive, negated, norm, batch, dtype), batch, dtype)
        tau = scalars("stablehlo.divide", scalars("stablehlo.subtract", beta, alpha), beta)
        tau = ctx.select(settled, ctx.splat(0.0, batch, dtype), tau, batch, dtype)
        inverse = scalars("stablehlo.divide", ctx.splat(1.0, batch, dtype), scalars("stablehlo.subtract", alpha, beta))
        inverse = ctx.select(settled, ctx.splat(0.0, batch, dtype), inverse, batch, dtype)
        scaled = elementwise(
            ctx, "stablehlo.multiply", [tail, of_batch(ctx, inverse, batch, vector, dtype)], vector, dtype
        )
        v = ctx.select(on, ctx.splat(1.0, vector, dtype), scaled, vector, dtype)
        updated = outer_update(r, v, tau, shape)
        written = ctx.select(on, of_batch(ctx, beta, batch, vector, dtype), zeros, vector, dtype)
        kept = ctx.select(ctx.compare("LT", positions, at_k, vector, "int32"), x, written, vector, dtype)
        r = put_column(ctx, updated, kept, shape, dtype, k)
        reflectors = put_column(ctx, reflectors, v, shape, dtype, k)
        one = ctx.reshape(tau, batch, batch + (1,), dtype)
        taus = put(ctx, taus, one, batch + (n,), batch + (1,), dtype, [0] * len(batch) + [k])
        return r, reflectors, taus, increment(ctx, k)

    taus_type = ctx.tensor_type(batch + (n,), dtype)
    start = [a, ctx.splat(0.0, shape, dtype), ctx.splat(0.0, batch + (n,), dtype), index(ctx, 0)]
    types = [matrix, matrix, taus_type, "tensor<i32>"]
    r, reflectors, taus, _ = ctx.while_loop(start, types, lambda state: counted(ctx, state[3], n), factor)

    def form(state):
        q, reflectors, taus, left = state
        k = ctx.emit(f"stablehlo.subtract {left}, {index(ctx, 1)} : tensor<i32>")
        v = column(ctx, reflectors, shape, dtype, k)
        tau = entry(ctx, taus, batch + (n,), dtype, k)
        return outer_update(q, v, tau, shape), reflectors, taus, k

    def more(state):
        return ctx.compare("GT", state[3], index(ctx, 0), (), "int32")

    start = [identity(ctx, shape, dtype), reflectors, taus, index(ctx, n)]
    q, *_ = ctx.while_loop(start, types, more, form)
    square = batch + (n, n)
    box = ", ".join(f"0:{extent}:1" for extent in square)
    top = ctx.emit(f"stablehlo.slice {r} [{box}] : ({matrix}) -> {ctx.tensor_type(square, dtype)}")
    upper = ctx.compare("LE", iota(ctx, square, rank - 2), iota(ctx, square, rank - 1), square, "int32")
    return q, ctx.select(upper, top, ctx.splat(0.0, square, dtype), square, dtype)


def qr_portable(ctx, node):
    """``Qr``'s packed value [..., m + n, n]: Q, then R."""
    (a,) = ctx.operands(node)
    source = ctx.operand_node(node, 0)
    shape, dtype = source.shape, source.dtype
    rank, n, batch = len(shape), shape[-1], tuple(shape[:-2])
    q, r = householder_qr(ctx, a, shape, dtype)
    return ctx.emit(
        f"stablehlo.concatenate {q}, {r}, dim = {rank - 2} : "
        f"({ctx.type(source)}, {ctx.tensor_type(batch + (n, n), dtype)}) -> {ctx.type(node)}"
    )
