"""``Eigh``'s and ``Svd``'s portable StableHLO: Jacobi rotations in a ``stablehlo.while``.

XLA CPU runs the LAPACK custom calls (``syevd``, ``gesdd``) the default reading writes; IREE and
XLA on other devices do not, so ``plan.emit_stablehlo(portable=True)`` writes these instead
(``topos.compiler.stablehlo``). Both return what the LAPACK calls return, and the op blocks' shared
tail then fixes the signs (each vector's largest-magnitude component positive) and writes NaN
where the matrix is not finite, so the two forms agree by construction on everything but rounding.

**Eigh: cyclic Jacobi, a round-robin round a step.** The n/2 disjoint pairs (p, q) of one round
of a round-robin tournament (the circle method, as in Brent and Luk's parallel Jacobi) rotate at once: each pair's rotation zeroes
``a_pq`` (Golub and Van Loan, algorithm 8.5.1: ``tau = (a_qq - a_pp) / (2 a_pq)``,
``t = sign(tau) / (|tau| + sqrt(1 + tau^2))``, ``c = 1 / sqrt(1 + t^2)``, ``s = t c``), the
rotations together are one orthogonal J, and the step is ``A <- J^T A J``, ``V <- V J``: two
``dot_general`` of whole matrices rather than n/2 loop steps each reading and writing two rows
and two columns, so a sweep is n - 1 steps (n odd: a dummy n + 1-th index sits out each round)
and each step is the dense products every StableHLO consumer is fastest at. The price is
n^4 flops a sweep where rotating two rows and columns in place costs n^3: at the sizes a tab
uses the products keep up (XLA CPU, float32, shared machine: 10 ms at 64 x 64, 0.18 s at
128, 1.4 s at 256, against syevd's 0.4, 100 (noisy) and 5 ms), and past them the default
reading's LAPACK call is the form to use where the consumer has it. A round's
partners are index arithmetic on the round number: no table, no gather. The operand's lower
triangle is read, as ``syevd``'s (``uplo = L``), mirrored into a symmetric matrix, and divided by
its largest magnitude so that the squares of the convergence test neither overflow nor
underflow. The loop stops when the off-diagonal part's Frobenius norm is at most ``n u`` times the
matrix's (``u`` the unit roundoff; by Weyl's theorem the diagonal is then that close to the
eigenvalues, LAPACK's own backward error), or after ``SWEEPS`` sweeps (cyclic Jacobi converges
quadratically: a handful of sweeps; at repeated eigenvalues the rotations inside the repeated
block may keep off-diagonal rounding of a few ``u`` alive, and the cap ends that). The
eigenvalues are then sorted ascending with their columns of V (a stable ``stablehlo.sort``).

**Svd: one-sided Jacobi (Hestenes).** The same rotations orthogonalise the columns of W: for the
Gram matrix ``G = W^T W`` the rotation above, with G for A, gives ``W <- W J``, ``V <- V J``; when
the columns are orthogonal, ``s_j = ||w_j||``, ``u_j = w_j / s_j``. A tall matrix is first
factored ``a = Q R`` (``qr_lowering``) and the rotations run on the n x n R, U being Q times
R's (Drmac's preconditioning: the rounds cost n^3, not m n^2); a wide one is transposed and
its factors swapped. The test is each pair's cosine, ``|g_ij| <= 4 n u sqrt(g_ii g_jj)``, which
keeps small singular values accurate relative to themselves (Demmel and Veselic) where a
test against ``||A||`` would not; it is also capped at ``SWEEPS``. An exactly zero column (a
zero singular value) has no direction: its u is completed from the standard basis vector least
in the span of the others, orthogonalised twice, as LAPACK completes an orthonormal u.
Singular values are sorted descending with their u and v, as ``gesdd`` returns them.
"""

from . import portable_lowering as p
from .qr_lowering import householder_qr

#: The most sweeps a Jacobi loop makes (each sweep is n - 1 rounds; a few suffice).
SWEEPS = 30


def unit_roundoff(dtype):
    return 2.0**-53 if dtype == "float64" else 2.0**-24


def partners(ctx, round_, n, shape):
    """[..., n] int32: the partner of each index in round ``round_`` of the round-robin, n (no one) for
    the index that sits out. With N = n rounded up to even and L = N - 1, index i < L meets
    ``(2 r - i) mod L`` (or N - 1 where that is i itself), and N - 1 meets ``r mod L``."""
    span = n + n % 2 - 1
    rank = len(shape)
    r = ctx.emit(f"stablehlo.remainder {round_}, {p.index(ctx, span)} : tensor<i32>")
    i = p.iota(ctx, shape, rank - 1)
    twice = ctx.emit(f"stablehlo.add {r}, {r} : tensor<i32>")
    twice = ctx.emit(f"stablehlo.add {twice}, {p.index(ctx, 2 * span)} : tensor<i32>")
    spread = ctx.broadcast_in_dim(twice, (), shape, "int32", ())
    met = p.elementwise(ctx, "stablehlo.subtract", [spread, i], shape, "int32")
    met = p.elementwise(ctx, "stablehlo.remainder", [met, ctx.splat(span, shape, "int32")], shape, "int32")
    alone = ctx.compare("EQ", met, i, shape, "int32")
    met = ctx.select(alone, ctx.splat(span, shape, "int32"), met, shape, "int32")
    last = ctx.compare("EQ", i, ctx.splat(span, shape, "int32"), shape, "int32")
    met = ctx.select(last, ctx.broadcast_in_dim(r, (), shape, "int32", ()), met, shape, "int32")
    out = ctx.compare("GE", met, ctx.splat(n, shape, "int32"), shape, "int32")
    return ctx.select(out, ctx.splat(n, shape, "int32"), met, shape, "int32")


def rotation(ctx, gram, shape, dtype, round_):
    """The orthogonal J [..., n, n] of one round's rotations, each zeroing ``gram[p, q]`` of its pair."""
    rank, n, batch = len(shape), shape[-1], tuple(shape[:-2])
    vector = batch + (n,)
    rows, cols = p.iota(ctx, shape, rank - 2), p.iota(ctx, shape, rank - 1)
    partner = partners(ctx, round_, n, vector)
    at_partner = ctx.compare("EQ", cols, p.along_rows(ctx, partner, shape, "int32"), shape, "int32")
    on_diagonal = ctx.compare("EQ", rows, cols, shape, "int32")
    zeros = ctx.splat(0.0, shape, dtype)

    def picked(mask, value):
        """Each row's one element where ``mask`` holds (0 where it holds nowhere: no partner)."""
        return ctx.reduce_value(
            ctx.select(mask, value, zeros, shape, dtype), shape, dtype, (rank - 1,), "stablehlo.add", 0.0
        )

    own = picked(on_diagonal, gram)
    other = picked(at_partner, p.along_columns(ctx, own, shape, dtype))
    off = picked(at_partner, gram)
    first = ctx.compare("LT", p.iota(ctx, vector, rank - 2), partner, vector, "int32")
    a_pp = ctx.select(first, own, other, vector, dtype)
    a_qq = ctx.select(first, other, own, vector, dtype)

    def op(name, *operands):
        return p.elementwise(ctx, name, operands, vector, dtype)

    one, zero = ctx.splat(1.0, vector, dtype), ctx.splat(0.0, vector, dtype)
    tau = op("stablehlo.divide", op("stablehlo.subtract", a_qq, a_pp), op("stablehlo.add", off, off))
    # t = sign(tau) / (|tau| + sqrt(1 + tau^2)), the smaller root (a rotation of at most 45 degrees).
    # Past sqrt(the largest float), tau^2 is infinite and t is 0, within rounding of its 1 / (2 tau).
    root = op("stablehlo.sqrt", op("stablehlo.add", one, op("stablehlo.multiply", tau, tau)))
    t = op("stablehlo.divide", one, op("stablehlo.add", op("stablehlo.abs", tau), root))
    upward = ctx.compare("GE", tau, zero, vector, dtype)
    t = ctx.select(upward, t, op("stablehlo.negate", t), vector, dtype)
    # A pair already orthogonal (or no pair) turns by nothing: tau would be 0 / 0.
    t = ctx.select(ctx.compare("EQ", off, zero, vector, dtype), zero, t, vector, dtype)
    c = op("stablehlo.divide", one, op("stablehlo.sqrt", op("stablehlo.add", one, op("stablehlo.multiply", t, t))))
    s = op("stablehlo.multiply", t, c)
    signed = ctx.select(first, s, op("stablehlo.negate", s), vector, dtype)
    j = ctx.select(at_partner, p.along_rows(ctx, signed, shape, dtype), zeros, shape, dtype)
    return ctx.select(on_diagonal, p.along_rows(ctx, c, shape, dtype), j, shape, dtype)


def off_diagonal(ctx, value, shape, dtype):
    rank = len(shape)
    same = ctx.compare("EQ", p.iota(ctx, shape, rank - 2), p.iota(ctx, shape, rank - 1), shape, "int32")
    return ctx.select(same, ctx.splat(0.0, shape, dtype), value, shape, dtype)


def diagonal(ctx, value, shape, dtype):
    rank = len(shape)
    same = ctx.compare("EQ", p.iota(ctx, shape, rank - 2), p.iota(ctx, shape, rank - 1), shape, "int32")
    kept = ctx.select(same, value, ctx.splat(0.0, shape, dtype), shape, dtype)
    return ctx.reduce_value(kept, shape, dtype, (rank - 1,), "stablehlo.add", 0.0)


def scaled(ctx, a, shape, dtype):
    """``(a / max|a|, max|a|)`` (1 for a zero matrix), so that the squares below stay in range."""
    rank, batch = len(shape), tuple(shape[:-2])
    size = ctx.emit(f"stablehlo.abs {a} : {ctx.tensor_type(shape, dtype)}")
    largest = ctx.reduce_value(size, shape, dtype, (rank - 2, rank - 1), "stablehlo.maximum", 0.0)
    zero = ctx.compare("EQ", largest, ctx.splat(0.0, batch, dtype), batch, dtype)
    # A matrix with NaN or an infinity is NaN in the end anyway: 1 keeps the loop's test finite.
    finite = ctx.emit(
        f"stablehlo.is_finite {largest} : ({ctx.tensor_type(batch, dtype)}) -> {ctx.tensor_type(batch, 'bool')}"
    )
    flags = ctx.tensor_type(batch, "bool")
    nonzero = ctx.emit(f"stablehlo.not {zero} : {flags}")
    usable = ctx.emit(f"stablehlo.and {finite}, {nonzero} : {flags}")
    largest = ctx.select(usable, largest, ctx.splat(1.0, batch, dtype), batch, dtype)
    return p.elementwise(
        ctx, "stablehlo.divide", [a, p.of_batch(ctx, largest, batch, shape, dtype)], shape, dtype
    ), largest


def jacobi(ctx, start, shape, dtype, gram_of, apply, converged):
    """The sweep loop: state (X, V, round, done); ``gram_of(X)`` the symmetric matrix whose pairs rotate,
    ``apply(X, J)`` the next X, ``converged(gram)`` a [...] of i1. The test reads the round's own
    Gram matrix (no second product for it), so the loop ends one round after it holds, a round
    whose rotations are all within rounding of the identity. Returns (X, V)."""
    n, batch = shape[-1], tuple(shape[:-2])
    square = batch + (n, n)
    x_type, v_type = ctx.tensor_type(shape, dtype), ctx.tensor_type(square, dtype)
    rounds = SWEEPS * max(n + n % 2 - 1, 1)

    def condition(state):
        more = ctx.emit(f"stablehlo.not {state[3]} : tensor<i1>")
        return ctx.emit(f"stablehlo.and {p.counted(ctx, state[2], rounds)}, {more} : tensor<i1>")

    def body(state):
        x, v, round_, _ = state
        gram = gram_of(x)
        done = p.all_of(ctx, converged(gram), batch, range(len(batch)))
        j = rotation(ctx, gram, square, dtype, round_)
        return apply(x, j), p.matmul(ctx, v, j, square, square, dtype), p.increment(ctx, round_), done

    start = [start, p.identity(ctx, square, dtype), p.index(ctx, 0), ctx.splat(False, (), "bool")]
    x, v, *_ = ctx.while_loop(start, [x_type, v_type, "tensor<i32>", "tensor<i1>"], condition, body)
    return x, v


def within(ctx, value, bound, shape, dtype):
    """``not (value > bound)``: a NaN (a matrix that is not finite, NaN in the end anyway) stops the loop."""
    over = ctx.compare("GT", value, bound, shape, dtype)
    return ctx.emit(f"stablehlo.not {over} : {ctx.tensor_type(shape, 'bool')}")


def sort_columns(ctx, keys, key_shape, values, shape, dtype, direction):
    """``values`` [..., r, k] with its columns ordered by ``keys`` [..., k] (stable), and the sorted keys."""
    rank, batch = len(shape), tuple(shape[:-2])
    spread = p.along_columns(ctx, keys, shape, dtype)
    scalar = ctx.tensor_type((), dtype)
    prefix = ctx.fresh_name("c")
    region = (
        f"      ^bb0({prefix}a: {scalar}, {prefix}b: {scalar}, {prefix}x: {scalar}, {prefix}y: {scalar}):\n"
        f"        {prefix}r = stablehlo.compare {direction}, {prefix}a, {prefix}b, FLOAT : ({scalar}, {scalar}) -> tensor<i1>\n"
        f"        stablehlo.return {prefix}r : tensor<i1>"
    )
    kind = ctx.tensor_type(shape, dtype)
    name = ctx.emit(
        f'"stablehlo.sort"({spread}, {values}) ({{\n{region}\n    }}) {{dimension = {rank - 1} : i64, is_stable = true}} : '
        f"({kind}, {kind}) -> ({kind}, {kind})"
    )
    ctx.lines[-1][0] = f"{name}:2"
    box = ", ".join(f"0:{extent}:1" for extent in batch + (1, shape[-1]))
    first = ctx.emit(f"stablehlo.slice {name}#0 [{box}] : ({kind}) -> {ctx.tensor_type(batch + (1, shape[-1]), dtype)}")
    return f"{name}#1", ctx.reshape(first, batch + (1, shape[-1]), key_shape, dtype)


def eigh_portable(ctx, a, shape, dtype):
    """``(vectors [..., n, n], values [..., n])`` of the symmetric matrix in ``a``'s lower triangle, ascending."""
    rank, n, batch = len(shape), shape[-1], tuple(shape[:-2])
    rows, cols = p.iota(ctx, shape, rank - 2), p.iota(ctx, shape, rank - 1)
    zeros = ctx.splat(0.0, shape, dtype)
    lower = ctx.select(ctx.compare("GE", rows, cols, shape, "int32"), a, zeros, shape, dtype)
    strict = ctx.select(ctx.compare("GT", rows, cols, shape, "int32"), a, zeros, shape, dtype)
    mirrored = p.elementwise(ctx, "stablehlo.add", [lower, p.transposed(ctx, strict, shape, dtype)], shape, dtype)
    unit, largest = scaled(ctx, mirrored, shape, dtype)
    tolerance = (n * unit_roundoff(dtype)) ** 2

    def squares(value):
        return ctx.reduce_value(
            p.elementwise(ctx, "stablehlo.multiply", [value, value], shape, dtype),
            shape,
            dtype,
            (rank - 2, rank - 1),
            "stablehlo.add",
            0.0,
        )

    def converged(gram):
        # The Frobenius norm does not change under the rotations: the current matrix's is the input's.
        bound = p.elementwise(
            ctx, "stablehlo.multiply", [squares(gram), ctx.splat(tolerance, batch, dtype)], batch, dtype
        )
        return within(ctx, squares(off_diagonal(ctx, gram, shape, dtype)), bound, batch, dtype)

    def gram_of(x):
        half = ctx.splat(0.5, shape, dtype)
        both = p.elementwise(ctx, "stablehlo.add", [x, p.transposed(ctx, x, shape, dtype)], shape, dtype)
        return p.elementwise(ctx, "stablehlo.multiply", [both, half], shape, dtype)

    def apply(x, j):
        turned = p.matmul(ctx, p.transposed(ctx, j, shape, dtype), x, shape, shape, dtype)
        return p.matmul(ctx, turned, j, shape, shape, dtype)

    x, v = jacobi(ctx, unit, shape, dtype, gram_of, apply, converged)
    values = diagonal(ctx, gram_of(x), shape, dtype)
    values = p.elementwise(
        ctx, "stablehlo.multiply", [values, p.of_batch(ctx, largest, batch, batch + (n,), dtype)], batch + (n,), dtype
    )
    vectors, values = sort_columns(ctx, values, batch + (n,), v, shape, dtype, "LT")
    return vectors, values


def svd_portable(ctx, a, shape, dtype):
    """``(u [..., m, k], s [..., k], vh [..., k, n])`` of ``a`` [..., m, n], k = min(m, n), s descending."""
    rank, (m, n), batch = len(shape), shape[-2:], tuple(shape[:-2])
    wide = m < n
    if wide:  # a^T = U S V^T gives a = V S U^T: the factors swap
        a, shape = p.transposed(ctx, a, shape, dtype), batch + (n, m)
    tall, k = shape[-2], shape[-1]
    square = batch + (k, k)
    unit, largest = scaled(ctx, a, shape, dtype)
    q, start = householder_qr(ctx, unit, shape, dtype) if tall > k else (None, unit)
    tolerance = 4 * k * unit_roundoff(dtype)

    def gram_of(x):
        return p.product(ctx, x, square, x, square, dtype, rank - 2, rank - 2, len(batch))[0]

    def converged(gram):
        lengths = ctx.emit(
            f"stablehlo.sqrt {diagonal(ctx, gram, square, dtype)} : {ctx.tensor_type(batch + (k,), dtype)}"
        )
        pairs = p.elementwise(
            ctx,
            "stablehlo.multiply",
            [p.along_rows(ctx, lengths, square, dtype), p.along_columns(ctx, lengths, square, dtype)],
            square,
            dtype,
        )
        bound = p.elementwise(ctx, "stablehlo.multiply", [pairs, ctx.splat(tolerance, square, dtype)], square, dtype)
        size = ctx.emit(f"stablehlo.abs {off_diagonal(ctx, gram, square, dtype)} : {ctx.tensor_type(square, dtype)}")
        return p.all_of(ctx, within(ctx, size, bound, square, dtype), square, (rank - 2, rank - 1))

    def apply(x, j):
        return p.matmul(ctx, x, j, square, square, dtype)

    x, v = jacobi(ctx, start, square, dtype, gram_of, apply, converged)
    squares = p.elementwise(ctx, "stablehlo.multiply", [x, x], square, dtype)
    lengths = ctx.reduce_value(squares, square, dtype, (rank - 2,), "stablehlo.add", 0.0)
    lengths = ctx.emit(f"stablehlo.sqrt {lengths} : {ctx.tensor_type(batch + (k,), dtype)}")
    u = completed(ctx, x, lengths, square, dtype)
    if q is not None:
        u = p.matmul(ctx, q, u, shape, square, dtype)
    values = p.elementwise(
        ctx, "stablehlo.multiply", [lengths, p.of_batch(ctx, largest, batch, batch + (k,), dtype)], batch + (k,), dtype
    )
    u, sorted_values = sort_columns(ctx, values, batch + (k,), u, shape, dtype, "GT")
    v, _ = sort_columns(ctx, values, batch + (k,), v, square, dtype, "GT")
    if wide:
        return v, sorted_values, p.transposed(ctx, u, shape, dtype)
    return u, sorted_values, p.transposed(ctx, v, square, dtype)


def completed(ctx, x, lengths, shape, dtype):
    """The columns of x [..., k, k] divided by their ``lengths``; an exactly zero column, which has no
    direction, becomes the standard basis vector least in the span of the columns so far,
    orthogonalised against them twice (classical Gram-Schmidt, twice is enough: Giraud et al.)."""
    rank, k, batch = len(shape), shape[-1], tuple(shape[:-2])
    vector = batch + (k,)
    zero = ctx.compare("EQ", lengths, ctx.splat(0.0, vector, dtype), vector, dtype)
    safe = ctx.select(zero, ctx.splat(1.0, vector, dtype), lengths, vector, dtype)
    u = p.elementwise(ctx, "stablehlo.divide", [x, p.along_columns(ctx, safe, shape, dtype)], shape, dtype)
    u = ctx.select(p.along_columns(ctx, zero, shape, "bool"), ctx.splat(0.0, shape, dtype), u, shape, dtype)

    def project_out(u, e):
        along, _ = p.product(ctx, u, shape, e, vector, dtype, rank - 2, len(batch), len(batch))
        back, _ = p.product(ctx, u, shape, along, vector, dtype, rank - 1, len(batch), len(batch))
        return p.elementwise(ctx, "stablehlo.subtract", [e, back], vector, dtype)

    def body(state):
        u, j, zero = state
        squares = p.elementwise(ctx, "stablehlo.multiply", [u, u], shape, dtype)
        covered = ctx.reduce_value(squares, shape, dtype, (rank - 1,), "stablehlo.add", 0.0)
        least = ctx.reduce_value(covered, vector, dtype, (rank - 2,), "stablehlo.minimum", float("inf"))
        positions = p.iota(ctx, vector, rank - 2)
        at_least = ctx.compare("EQ", covered, p.of_batch(ctx, least, batch, vector, dtype), vector, dtype)
        first = ctx.select(at_least, positions, ctx.splat(k, vector, "int32"), vector, "int32")
        first = ctx.reduce_value(first, vector, "int32", (rank - 2,), "stablehlo.minimum", k)
        basis = ctx.compare("EQ", positions, p.of_batch(ctx, first, batch, vector, "int32"), vector, "int32")
        e = ctx.select(basis, ctx.splat(1.0, vector, dtype), ctx.splat(0.0, vector, dtype), vector, dtype)
        w = project_out(u, project_out(u, e))
        norm = ctx.reduce_value(
            p.elementwise(ctx, "stablehlo.multiply", [w, w], vector, dtype),
            vector,
            dtype,
            (rank - 2,),
            "stablehlo.add",
            0.0,
        )
        norm = ctx.emit(f"stablehlo.sqrt {norm} : {ctx.tensor_type(batch, dtype)}")
        w = p.elementwise(ctx, "stablehlo.divide", [w, p.of_batch(ctx, norm, batch, vector, dtype)], vector, dtype)
        missing = p.entry(ctx, ctx.convert(zero, vector, "bool", "int32"), vector, "int32", j)
        missing = ctx.compare("NE", missing, ctx.splat(0, batch, "int32"), batch, "int32")
        chosen = ctx.select(
            p.of_batch(ctx, missing, batch, vector, "bool"), w, p.column(ctx, u, shape, dtype, j), vector, dtype
        )
        return p.put_column(ctx, u, chosen, shape, dtype, j), p.increment(ctx, j), zero

    types = [ctx.tensor_type(shape, dtype), "tensor<i32>", ctx.tensor_type(vector, "bool")]
    u, *_ = ctx.while_loop([u, p.index(ctx, 0), zero], types, lambda state: p.counted(ctx, state[1], k), body)
    return u
