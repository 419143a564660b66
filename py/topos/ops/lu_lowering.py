"""``Lu``'s StableHLO: a ``stablehlo.while`` of n pivoting steps, built from ops any XLA backend runs.

StableHLO has no LU op; JAX's CPU lowering calls LAPACK's ``getrf`` (a custom call only the CPU
plugin has) and then turns its row swaps into a permutation with a second loop. This lowering
keeps the whole factorisation portable: step k finds the pivot of column k (the first row at
or below k of largest magnitude, as LAPACK's ``idamax``), swaps rows k and p of the factors and
of the permutation with ``select`` (exact, where an add of the difference would round),
flips the sign, and eliminates below the pivot. Every step works on whole matrices through
masks of ``iota`` against k, so the batch axes cost nothing extra and no slice is dynamic.
"""


def lu_stablehlo(ctx, node):
    a_node = ctx.operand_node(node, 0)
    (a,) = ctx.operands(node)
    shape, dtype = a_node.shape, a_node.dtype
    n, batch = shape[-1], tuple(shape[:-2])
    rank = len(shape)
    scalars = batch
    mtype, ktype = ctx.tensor_type(shape, dtype), ctx.tensor_type((), "int32")
    stype = ctx.tensor_type(scalars, dtype)
    rows = ctx.emit(f"stablehlo.iota dim = {rank - 2} : {ctx.tensor_type(shape, 'int32')}")
    cols = ctx.emit(f"stablehlo.iota dim = {rank - 1} : {ctx.tensor_type(shape, 'int32')}")
    eye = ctx.select(
        ctx.compare("EQ", rows, cols, shape, "int32"),
        ctx.splat(1.0, shape, dtype),
        ctx.splat(0.0, shape, dtype),
        shape,
        dtype,
    )
    ones = ctx.splat(1.0, scalars, dtype)
    zero_k = ctx.emit(f"stablehlo.constant dense<0> : {ktype}")

    # The loop's body, written through ctx's helpers into lines of its own.
    prefix = f"%v{node.index}_it"
    A, P, S, K = (f"{prefix}{name}" for name in "apsk")
    saved, ctx.lines = ctx.lines, []
    body = step(ctx, A, P, S, K, shape, dtype)
    body_lines, ctx.lines = ctx.lines, saved
    n_const = f"{prefix}_n"
    result = ctx.emit(
        f"stablehlo.while({A} = {a}, {P} = {eye}, {S} = {ones}, {K} = {zero_k}) : {mtype}, {mtype}, {stype}, {ktype}\n"
        f"    cond {{\n"
        f"      {n_const} = stablehlo.constant dense<{n}> : {ktype}\n"
        f"      {prefix}_lt = stablehlo.compare LT, {K}, {n_const}, SIGNED : ({ktype}, {ktype}) -> tensor<i1>\n"
        f"      stablehlo.return {prefix}_lt : tensor<i1>\n"
        f"    }} do {{\n"
        + "\n".join(f"      {name} = {text}".replace("\n", "\n  ") for name, text, _ in body_lines)
        + f"\n      stablehlo.return {', '.join(body)} : {mtype}, {mtype}, {stype}, {ktype}\n"
        f"    }}"
    )
    ctx.lines[-1][0] = f"{result}:4"
    column_shape = batch + (n, 1)
    sign = ctx.broadcast_in_dim(f"{result}#2", scalars, column_shape, dtype, tuple(range(len(batch))))
    out_type = ctx.type(node)
    return ctx.emit(
        f"stablehlo.concatenate {result}#0, {result}#1, {sign}, dim = {rank - 1} : "
        f"({mtype}, {mtype}, {ctx.tensor_type(column_shape, dtype)}) -> {out_type}"
    )


def step(ctx, A, P, S, K, shape, dtype):
    """One pivoting step on (A, P, S) at column K; returns the names of the next state."""
    n, batch = shape[-1], tuple(shape[:-2])
    rank = len(shape)
    vector = batch + (n,)
    lead = tuple(range(len(batch)))
    i32 = "int32"

    def k_like(target):
        return ctx.broadcast_in_dim(K, (), target, i32, ())

    rows = ctx.emit(f"stablehlo.iota dim = {rank - 2} : {ctx.tensor_type(shape, i32)}")
    cols = ctx.emit(f"stablehlo.iota dim = {rank - 1} : {ctx.tensor_type(shape, i32)}")
    index = ctx.emit(f"stablehlo.iota dim = {rank - 2} : {ctx.tensor_type(vector, i32)}")
    k_matrix, k_vector = k_like(shape), k_like(vector)
    zeros = ctx.splat(0.0, shape, dtype)

    def pick(x, mask, axis):
        """The row (axis rank-2) or column (rank-1) of x where ``mask`` holds: a sum of zeros and it."""
        return ctx.reduce_value(ctx.select(mask, x, zeros, shape, dtype), shape, dtype, (axis,), "stablehlo.add", 0.0)

    # The pivot: the first row at or below k of largest magnitude in column k.
    column = pick(A, ctx.compare("EQ", cols, k_matrix, shape, i32), rank - 1)
    size = ctx.emit(f"stablehlo.abs {column} : {ctx.tensor_type(vector, dtype)}")
    below = ctx.compare("GE", index, k_vector, vector, i32)
    candidates = ctx.select(below, size, ctx.splat(-1.0, vector, dtype), vector, dtype)
    largest = ctx.reduce_value(candidates, vector, dtype, (rank - 2,), "stablehlo.maximum", -2.0)
    hits = ctx.compare("EQ", candidates, ctx.broadcast_in_dim(largest, batch, vector, dtype, lead), vector, dtype)
    first = ctx.select(hits, index, ctx.splat(n, vector, i32), vector, i32)
    p = ctx.reduce_value(first, vector, i32, (rank - 2,), "stablehlo.minimum", n)
    # A column of NaNs has no largest element: it keeps its row.
    found = ctx.compare("LT", p, ctx.splat(n, batch, i32), batch, i32)
    p = ctx.select(found, p, ctx.broadcast_in_dim(K, (), batch, i32, ()), batch, i32)
    p_matrix = ctx.broadcast_in_dim(p, batch, shape, i32, lead)
    at_k = ctx.compare("EQ", rows, k_matrix, shape, i32)
    at_p = ctx.compare("EQ", rows, p_matrix, shape, i32)

    def swapped(x):
        row_k, row_p = pick(x, at_k, rank - 2), pick(x, at_p, rank - 2)
        spread = lead + (rank - 1,)
        to_k = ctx.broadcast_in_dim(row_p, vector, shape, dtype, spread)
        to_p = ctx.broadcast_in_dim(row_k, vector, shape, dtype, spread)
        return ctx.select(at_k, to_k, ctx.select(at_p, to_p, x, shape, dtype), shape, dtype), row_p

    a_swapped, pivot_row = swapped(A)
    p_swapped, _ = swapped(P)
    moved = ctx.compare("NE", p, ctx.broadcast_in_dim(K, (), batch, i32, ()), batch, i32)
    sign = ctx.select(moved, ctx.emit(f"stablehlo.negate {S} : {ctx.tensor_type(batch, dtype)}"), S, batch, dtype)

    # Elimination: l = column k below the pivot / pivot (0 where the pivot is 0, as getrf leaves it).
    column = pick(a_swapped, ctx.compare("EQ", cols, k_matrix, shape, i32), rank - 1)
    pivot = ctx.reduce_value(
        ctx.select(
            ctx.compare("EQ", index, k_vector, vector, i32), pivot_row, ctx.splat(0.0, vector, dtype), vector, dtype
        ),
        vector,
        dtype,
        (rank - 2,),
        "stablehlo.add",
        0.0,
    )
    pivot_vector = ctx.broadcast_in_dim(pivot, batch, vector, dtype, lead)
    quotient = ctx.emit(f"stablehlo.divide {column}, {pivot_vector} : {ctx.tensor_type(vector, dtype)}")
    zero_pivot = ctx.compare("EQ", pivot_vector, ctx.splat(0.0, vector, dtype), vector, dtype)
    factor = ctx.select(zero_pivot, ctx.splat(0.0, vector, dtype), quotient, vector, dtype)
    l_matrix = ctx.broadcast_in_dim(factor, vector, shape, dtype, lead + (rank - 2,))
    u_matrix = ctx.broadcast_in_dim(pivot_row, vector, shape, dtype, lead + (rank - 1,))
    product = ctx.emit(f"stablehlo.multiply {l_matrix}, {u_matrix} : {ctx.tensor_type(shape, dtype)}")
    updated = ctx.emit(f"stablehlo.subtract {a_swapped}, {product} : {ctx.tensor_type(shape, dtype)}")
    below_rows = ctx.compare("GT", rows, k_matrix, shape, i32)
    right_cols = ctx.compare("GT", cols, k_matrix, shape, i32)
    bool_type = ctx.tensor_type(shape, "bool")
    trailing = ctx.emit(f"stablehlo.and {below_rows}, {right_cols} : {bool_type}")
    in_column = ctx.emit(f"stablehlo.and {below_rows}, {ctx.compare('EQ', cols, k_matrix, shape, i32)} : {bool_type}")
    a_next = ctx.select(trailing, updated, a_swapped, shape, dtype)
    a_next = ctx.select(in_column, l_matrix, a_next, shape, dtype)
    k_next = ctx.emit(f"stablehlo.add {K}, {ctx.emit('stablehlo.constant dense<1> : tensor<i32>')} : tensor<i32>")
    return a_next, p_swapped, sign, k_next
