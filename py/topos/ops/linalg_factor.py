"""Factorisations over the last two axes, batched over the rest: ``Cholesky`` and ``TriangularSolve``.

Their derivative rules are JAX's (jax/_src/lax/linalg.py), written with the emitter so that a
derivative is made of the same primitives and differentiates again. On WebGPU, Cholesky and
TriangularSolve run in ``kernels/linalg.wgsl`` (launches in ``topos.compiler.wgsl.linalg``) up to the
sizes lavapipe's loop budget allows, where ``wgsl_declines`` gives the reason; Lu has no kernel yet:
the kernels reading shows it as a host step with ``DECLINED``, and the interpreter runs it.
"""

import numpy as np

from . import attributes as kinds
from . import batching
from .cholesky_lowering import cholesky_portable, triangular_solve_portable
from .lu_lowering import lu_stablehlo
from .registry import Meta, Primitive, bytes_moved, register, require_float

#: The columns of one panel of ``Lu``'s blocked forward (LAPACK's getrf blocks by 32 to 64 too).
BLOCK = 32

#: Why WebGPU runs no kernel for Lu (the kernels reading prints it on the host step).
DECLINED = "no WGSL kernel yet: a factorisation's substitutions are sequential over the rows; the host runs it"


def require_square(primitive, meta, metas):
    if meta.rank < 2 or meta.shape[-1] != meta.shape[-2]:
        primitive.fail(f"needs square matrices in its last two axes, got shape {meta.shape}", metas)


def swap_last(e, value):
    rank = len(e.shape(value))
    return e.transpose(value, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def lower_mask(n, dtype, strict=False):
    """1 on and below the diagonal (below it only, ``strict``), 0 above: a triangle as a product."""
    return np.tril(np.ones((n, n), dtype=dtype), -1 if strict else 0)


def triangle_select(ctx, value, shape, dtype, lower):
    """``value`` with the other triangle zeroed (StableHLO leaves it implementation-defined)."""
    rows = ctx.emit(f"stablehlo.iota dim = {len(shape) - 2} : {ctx.tensor_type(shape, 'int32')}")
    cols = ctx.emit(f"stablehlo.iota dim = {len(shape) - 1} : {ctx.tensor_type(shape, 'int32')}")
    keep = ctx.compare("GE" if lower else "LE", rows, cols, shape, "int32")
    return ctx.select(keep, value, ctx.splat(0.0, shape, dtype), shape, dtype)


@register
class Cholesky(Primitive):
    """``Cholesky(a)``: the lower factor ``l`` of ``(a + a^T) / 2 = l l^T`` over the last two axes.

    The operand is symmetrised first (as ``jax.numpy.linalg.cholesky`` does), so the result and
    its derivative see both triangles. A matrix that is not positive definite gives a factor of
    NaNs, as JAX's, where numpy raises: a recording cannot stop on a value it has not seen yet.
    The upper triangle of the result is 0.
    """

    name = "Cholesky"
    kernel = "linalg"
    arity = 1
    attributes = {}
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        require_square(self, metas[0], metas)
        return metas[0]

    def forward(self, inputs, attrs):
        a = np.asarray(inputs[0])
        sym = (a + np.swapaxes(a, -1, -2)) * a.dtype.type(0.5)
        try:
            return np.linalg.cholesky(sym)
        except np.linalg.LinAlgError:
            flat = sym.reshape((-1,) + sym.shape[-2:])
            out = np.full_like(flat, np.nan)
            for i, matrix in enumerate(flat):
                try:
                    out[i] = np.linalg.cholesky(matrix)
                except np.linalg.LinAlgError:
                    pass
            return out.reshape(sym.shape)

    def vjp(self, e, g, operands, out, attrs):
        # phi(L^T g) halves the diagonal of its lower triangle; a = L^-T phi L^-1, symmetrised.
        n = e.shape(out)[-1]
        # e.like casts the float64 mask to the handle's dtype.
        half = lower_mask(n, "float64") - 0.5 * np.eye(n)
        phi = e.mul(e.matmul(swap_last(e, out), g), e.like(out, half))
        left = e.apply("TriangularSolve", [out, phi], **solve_attrs(transpose_a=True))
        both = e.apply("TriangularSolve", [out, left], **solve_attrs(left_side=False))
        return [e.mul(e.add(both, swap_last(e, both)), e.like(out, 0.5))]

    def stablehlo(self, ctx, node):
        (a,) = ctx.operands(node)
        rank, kind = len(node.shape), ctx.type(node)
        axes = ", ".join(str(i) for i in tuple(range(rank - 2)) + (rank - 1, rank - 2))
        flipped = ctx.emit(f"stablehlo.transpose {a}, dims = [{axes}] : ({kind}) -> {kind}")
        total = ctx.elementwise("stablehlo.add", node, [a, flipped])
        sym = ctx.elementwise("stablehlo.multiply", node, [total, ctx.splat(0.5, node.shape, node.dtype)])
        if ctx.portable:  # a while of columns, for consumers without stablehlo.cholesky (IREE)
            return cholesky_portable(ctx, sym, node.shape, node.dtype)
        factor = ctx.emit(f'"stablehlo.cholesky"({sym}) {{lower = true}} : ({kind}) -> {kind}')
        return triangle_select(ctx, factor, node.shape, node.dtype, lower=True)

    def cost(self, operands, meta, attrs):
        # n^3 / 3 multiply-adds a matrix (Golub and Van Loan, algorithm 4.2.1), and the symmetrising.
        n = meta.shape[-1]
        batch = meta.size // (n * n) if n else 0
        return batch * (n**3 // 3 + 2 * n * n), bytes_moved(operands, meta)

    def wgsl_launch(self, k, node, views):
        return k.cholesky(node, views[0])

    def wgsl_declines(self, k, node):
        # One workgroup a matrix whose busiest lane walks about n^3 / 1536 loop iterations: past
        # k.MAX_CHOLESKY (256) lavapipe's loop budget would end the kernel early.
        n = node.shape[-1]
        if n > k.MAX_CHOLESKY:
            return f"a {n} x {n} matrix is larger than the Cholesky kernel's {k.MAX_CHOLESKY} x {k.MAX_CHOLESKY}: its loops would pass lavapipe's iteration limit"
        return None


def solve_attrs(**given):
    """TriangularSolve's attributes, every one given (the eager emitter does not normalise them)."""
    return {"left_side": True, "lower": True, "transpose_a": False, "unit_diagonal": False, **given}


@register
class TriangularSolve(Primitive):
    """``TriangularSolve(a, b)``: ``x`` with ``op(a) x = b`` (``left_side``) or ``x op(a) = b``.

    ``a`` is [..., n, n] and only its ``lower`` (else upper) triangle is read, its diagonal taken
    as ones where ``unit_diagonal``; ``op(a)`` is ``a^T`` where ``transpose_a``. ``b`` is
    [..., n, m] on the left, [..., m, n] on the right, with ``a``'s batch axes. A zero on the
    diagonal gives infinities and NaNs, as back substitution does, and no error.
    """

    name = "TriangularSolve"
    kernel = "linalg"
    arity = 2
    attributes = {"left_side": kinds.flag, "lower": kinds.flag, "transpose_a": kinds.flag, "unit_diagonal": kinds.flag}
    batch = batching.leading

    def normalize(self, metas, attrs):
        return {name: bool(attrs.get(name, value)) for name, value in solve_attrs().items()}

    def infer(self, metas, attrs):
        require_float(self, metas)
        a, b = metas
        require_square(self, a, metas)
        if a.dtype != b.dtype or b.rank != a.rank or b.shape[:-2] != a.shape[:-2]:
            self.fail(f"needs b of a's dtype and batch axes, got {a.shape} {a.dtype} and {b.shape} {b.dtype}", metas)
        if b.shape[-2 if attrs["left_side"] else -1] != a.shape[-1]:
            self.fail(
                f"{a.shape} cannot solve against {b.shape} on the {'left' if attrs['left_side'] else 'right'}", metas
            )
        return b

    def forward(self, inputs, attrs):
        a, b = (np.asarray(x) for x in inputs)
        n = a.shape[-1]
        mask = lower_mask(n, bool) if attrs["lower"] else lower_mask(n, bool).T
        # Selected, not multiplied by the mask: the triangle not read (and a unit diagonal) holds no NaN or
        # infinity that a product by 0 would bring in, as LAPACK's trsm and the WGSL kernel never read it.
        m = np.where(mask, a, a.dtype.type(0))
        if attrs["unit_diagonal"]:
            m = np.where(np.eye(n, dtype=bool), a.dtype.type(1), m)
        lower = attrs["lower"] != attrs["transpose_a"]
        if attrs["transpose_a"]:
            m = np.swapaxes(m, -1, -2)
        if not attrs["left_side"]:
            # x m = b is m^T x^T = b^T: the triangle flips with the transpose.
            return np.swapaxes(substitute(np.swapaxes(m, -1, -2), np.swapaxes(b, -1, -2), not lower), -1, -2)
        return substitute(m, b, lower)

    def vjp(self, e, g, operands, out, attrs):
        a, _ = operands
        flipped = dict(attrs, transpose_a=not attrs["transpose_a"])
        grad_b = e.apply("TriangularSolve", [a, g], **flipped)
        if not e.wants(0):
            return [None, grad_b]
        # d op(a) meets -grad_b x^T on the left, -x^T grad_b on the right (JAX's transpose rule).
        if attrs["left_side"]:
            grad_op = e.neg(e.matmul(grad_b, swap_last(e, out)))
        else:
            grad_op = e.neg(e.matmul(swap_last(e, out), grad_b))
        grad_a = swap_last(e, grad_op) if attrs["transpose_a"] else grad_op
        n = e.shape(a)[-1]
        mask = lower_mask(n, "float64", strict=attrs["unit_diagonal"])
        return [e.mul(grad_a, e.like(a, mask if attrs["lower"] else mask.T)), grad_b]

    def stablehlo(self, ctx, node):
        if ctx.portable:  # a while of rows, for consumers without stablehlo.triangular_solve (IREE)
            return triangular_solve_portable(ctx, node)
        a, b = ctx.operands(node)
        a_type = ctx.type(ctx.operand_node(node, 0))
        flags = ", ".join(
            f"{name} = {str(node.attrs[name]).lower()}" for name in ("left_side", "lower", "unit_diagonal")
        )
        transpose = "TRANSPOSE" if node.attrs["transpose_a"] else "NO_TRANSPOSE"
        return ctx.emit(
            f'"stablehlo.triangular_solve"({a}, {b}) {{{flags}, transpose_a = #stablehlo<transpose {transpose}>}} : '
            f"({a_type}, {ctx.type(node)}) -> {ctx.type(node)}"
        )

    def cost(self, operands, meta, attrs):
        # n^2 multiply-adds a right-hand side (n(n+1)/2 products and as many sums).
        n = operands[0].shape[-1]
        return meta.size * n, bytes_moved(operands, meta)

    def wgsl_launch(self, k, node, views):
        return k.triangular_solve(node, views[0], views[1])

    def wgsl_declines(self, k, node):
        # One invocation a right-hand side walks n^2 / 16 loop iterations: past k.MAX_SOLVE (512)
        # lavapipe's loop budget would end the kernel early.
        n = k.operand_node(node, 0).shape[-1]
        if n > k.MAX_SOLVE:
            return f"a {n} x {n} matrix is larger than the triangular-solve kernel's {k.MAX_SOLVE} x {k.MAX_SOLVE}: its loops would pass lavapipe's iteration limit"
        return None


def swap_rows(x, every, k, p):
    """Rows k and p (one p a matrix of the batch) of x exchanged, in place."""
    row_k, row_p = x[(*every, k)].copy(), x[(*every, p)].copy()
    x[(*every, p)] = row_k
    x[(*every, k)] = row_p


def substitute(m, b, lower):
    """Forward (``lower``) or back substitution of ``m x = b``, batched, one row at a time."""
    n = m.shape[-1]
    x = np.zeros(np.broadcast_shapes(m.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype=b.dtype)
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)
            rest = b[..., i, :] - np.einsum("...k,...km->...m", m[..., i, done], x[..., done, :])
            x[..., i, :] = rest / m[..., i, i, None]
    return x


@register
class Lu(Primitive):
    """``Lu(a)``: LU with partial pivoting of [..., n, n], packed as [..., n, 2n + 1].

    Columns ``0..n-1`` hold the factors as LAPACK's ``getrf`` leaves them (``l``, unit
    lower, below the diagonal; ``u`` on and above it); columns ``n..2n-1`` the permutation
    matrix ``p`` with ``p a = l u``; column ``2n`` the permutation's sign (+1 or -1, on every
    row). The pivot of column k is the first row at or below k of largest magnitude, as
    LAPACK's. A singular matrix factors without error (a zero on ``u``'s diagonal), as
    LAPACK's does. The derivative (JAX's ``lu`` rule) flows through the factors only: the
    permutation is piecewise constant.
    """

    name = "Lu"
    kernel_declined = DECLINED
    arity = 1
    attributes = {}
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        (a,) = metas
        require_square(self, a, metas)
        return Meta(a.shape[:-1] + (2 * a.shape[-1] + 1,), a.dtype)

    def forward(self, inputs, attrs):
        a = np.array(inputs[0], copy=True)
        n = a.shape[-1]
        batch = a.shape[:-2]
        perm = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape).copy()
        sign = np.ones(batch + (n, 1), dtype=a.dtype)
        every = np.indices(batch) if batch else ()
        # Blocked as LAPACK's getrf: a panel of BLOCK columns is factored a column at a time; its
        # row swaps then reach the columns right of it, whose panel rows become u's by forward
        # substitution, and the trailing block takes one product.
        with np.errstate(divide="ignore", invalid="ignore"):
            for start in range(0, n, BLOCK):
                stop = min(start + BLOCK, n)
                pivots = []
                for k in range(start, stop):
                    p = k + np.argmax(np.abs(a[..., k:, k]), axis=-1)
                    swap_rows(a[..., :stop], every, k, p)
                    swap_rows(perm, every, k, p)
                    pivots.append(p)
                    sign[p != k] *= -1
                    pivot = a[..., k, k, None]
                    column = np.where(pivot == 0, 0, a[..., k + 1 :, k] / pivot)
                    a[..., k + 1 :, k + 1 : stop] -= column[..., :, None] * a[..., k, None, k + 1 : stop]
                    a[..., k + 1 :, k] = column
                right = a[..., stop:]
                for k, p in zip(range(start, stop), pivots):
                    swap_rows(right, every, k, p)
                for k in range(start, stop - 1):
                    right[..., k + 1 : stop, :] -= a[..., k + 1 : stop, k, None] * right[..., k, None, :]
                right[..., stop:, :] -= a[..., stop:, start:stop] @ right[..., start:stop, :]
        return np.concatenate([a, perm, sign], axis=-1)

    def vjp(self, e, g, operands, out, attrs):
        # With x = l^-1 p da u^-1, d(lu) = l tril(x, -1) + triu(x) u; so the cotangent of a is
        # p^T l^-T (tril(l^T tril(g, -1), -1) + triu(triu(g) u^T)) u^-T.
        shape = e.shape(out)
        n, batch = shape[-2], tuple(shape[:-2])
        zeros = (0,) * len(batch)

        def columns(value, start, stop):
            return e.slice(value, zeros + (0, start), batch + (n, stop), (1,) * len(shape))

        lu, perm, g_lu = columns(out, 0, n), columns(out, n, 2 * n), columns(g, 0, n)
        strict, upper = lower_mask(n, "float64", strict=True), lower_mask(n, "float64").T

        def masked(value, mask):
            return e.mul(value, e.like(value, mask))

        g_l, g_u = masked(g_lu, strict), masked(g_lu, upper)
        u = masked(lu, upper)
        unit_lower = e.add(masked(lu, strict), e.like(lu, np.eye(n)))
        middle = e.add(
            masked(e.matmul(swap_last(e, unit_lower), g_l), strict), masked(e.matmul(g_u, swap_last(e, u)), upper)
        )
        left = e.apply("TriangularSolve", [lu, middle], **solve_attrs(transpose_a=True, unit_diagonal=True))
        right = e.apply("TriangularSolve", [lu, left], **solve_attrs(left_side=False, lower=False, transpose_a=True))
        return [e.matmul(swap_last(e, perm), right)]

    def stablehlo(self, ctx, node):
        return lu_stablehlo(ctx, node)

    def cost(self, operands, meta, attrs):
        # 2 n^3 / 3 flops a matrix (Golub and Van Loan, algorithm 3.4.1).
        n = operands[0].shape[-1]
        batch = operands[0].size // (n * n) if n else 0
        return batch * (2 * n**3 // 3), bytes_moved(operands, meta)
