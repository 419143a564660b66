"""Spectral factorisations, batched over leading axes: ``Eigh``, the eigendecomposition of a symmetric
matrix, ``Qr``, the reduced QR factorisation, and ``Svd``, the reduced singular value decomposition
(their rules are in their own docstrings).

``Eigh`` records one node whose value packs both results (``topos.linalg.eigh`` picks them out
with ``Slice``, the way ``topos.top_k`` does): for an operand [..., n, n] the value is
[..., n + 1, n], row 0 the eigenvalues in ascending order, rows 1..n the matrix V whose
column j is the unit eigenvector of eigenvalue j. An eigenvector's sign is free; the node
fixes it so that the component of largest magnitude (the first, among equal magnitudes) is
positive, so numpy, XLA and the gradient checks see the same vectors whatever LAPACK chose.

The derivative is JAX's (``jax/_src/lax/linalg.py``, ``_eigh_jvp_rule``) transposed:
``A_bar = V (diag(w_bar) + F * (V^T V_bar)) V^T`` with ``F[i, j] = 1 / (w[j] - w[i])`` off the
diagonal and 0 on it, written with recorded primitives, so it differentiates again. Where two
eigenvalues are equal the eigenvectors are not unique and F holds infinities: the gradient
through the vectors is then inf or NaN, as JAX's is; the eigenvalues' own gradient (no
cotangent reaching V) stays finite. The operand is read as symmetric: ``topos.linalg.eigh`` records ``(a + a^T) / 2``
first, as JAX's ``symmetrize_input`` does, so its gradient is symmetric too.

StableHLO has no eigendecomposition: the lowering is the custom call XLA's CPU client runs
(``lapack_dsyevd_ffi``, ``lapack_ssyevd_ffi``, as JAX lowers ``jnp.linalg.eigh`` with jaxlib
0.10), then the same sign rule written in StableHLO. On WebGPU a float32 ``Eigh`` of matrices up to
64 x 64 runs in ``kernels/eigh.wgsl`` (Jacobi's method, one workgroup a matrix, the same sign rule;
launches in ``topos.compiler.wgsl.eigh``, which says why 64); a larger one is declined with that
reason and the interpreter runs the node.
"""

import numpy as np

from . import batching
from .qr_lowering import qr_portable
from .registry import Meta, Primitive, bytes_moved, register, require_float
from .spectral_lowering import eigh_portable, svd_portable


@register
class Eigh(Primitive):
    """``Eigh(a)``: a [..., n, n] symmetric gives [..., n + 1, n]: eigenvalues (row 0, ascending), then V."""

    name = "Eigh"
    arity = 1
    kernel = "eigh"
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        (a,) = metas
        if a.rank < 2 or a.shape[-1] != a.shape[-2]:
            self.fail(f"needs square matrices [..., n, n], got shape {a.shape}", metas)
        return Meta(a.shape[:-2] + (a.shape[-1] + 1, a.shape[-1]), a.dtype)

    def forward(self, inputs, attrs):
        (a,) = inputs
        if a.shape[-1] == 0:
            return np.zeros(a.shape[:-2] + (1, 0), a.dtype)
        # A matrix holding NaN or an infinity gives NaNs (LAPACK would fail: numpy raises, JAX gives NaN).
        broken = ~np.isfinite(a).all(axis=(-2, -1))
        w, v = np.linalg.eigh(np.where(broken[..., None, None], 0.0, a))
        packed = np.concatenate([w[..., None, :], fix_signs(v)], axis=-2).astype(a.dtype, copy=False)
        packed[broken] = np.nan
        return packed

    def vjp(self, e, g, operands, out, attrs):
        shape = e.shape(out)
        batch, n = tuple(shape[:-2]), shape[-1]
        w, v = rows(e, out, 0, 1), rows(e, out, 1, n + 1)
        g_w, g_v = rows(e, g, 0, 1), rows(e, g, 1, n + 1)
        square = batch + (n, n)
        eye = identity(e, w, batch, n)
        # d[i, j] = w[j] - w[i]; F = 1 / (d + I) - I is 1 / d off the diagonal and 0 on it (JAX's Fmat).
        d = e.sub(e.broadcast(w, square), e.broadcast(swap_last(e, w), square))
        f = e.sub(e.div(e.like(d, 1.0), e.add(d, eye)), eye)
        # Where V^T V_bar is 0 (eigvalsh: no cotangent reaches V) its term is 0, not inf * 0, so the
        # eigenvalues' gradient stays finite at repeated eigenvalues, as under JAX's symbolic zeros.
        projected = e.matmul(swap_last(e, v), g_v)
        zero = e.like(projected, 0.0)
        vectors = e.where(e.equal(projected, zero), e.broadcast(zero, square), e.mul(f, projected))
        inner = e.add(e.mul(eye, e.broadcast(g_w, square)), vectors)
        return [e.matmul(e.matmul(v, inner), swap_last(e, v))]

    def stablehlo(self, ctx, node):
        (a,) = ctx.operands(node)
        source = ctx.operand_node(node, 0)
        shape, dtype = source.shape, source.dtype
        rank, n = len(shape), shape[-1]
        batch = shape[:-2]
        if ctx.portable:  # cyclic Jacobi in a stablehlo.while (spectral_lowering), for consumers without LAPACK
            if n == 0:
                return ctx.splat(0.0, node.shape, dtype)
            found, found_values = eigh_portable(ctx, a, shape, dtype)
            info = ctx.splat(0, batch, "int32")
        else:
            found, found_values, info = self.lapack_call(ctx, a, source)
        vectors, _ = stablehlo_fix_signs(ctx, found, shape, dtype)
        values = ctx.reshape(found_values, batch + (n,), batch + (1, n), dtype)
        packed = ctx.emit(
            f"stablehlo.concatenate {values}, {vectors}, dim = {rank - 2} : "
            f"({ctx.tensor_type(batch + (1, n), dtype)}, {ctx.type(source)}) -> {ctx.type(node)}"
        )
        return nan_where_lapack_failed(ctx, node, a, source, info, packed)

    @staticmethod
    def lapack_call(ctx, a, source):
        """XLA CPU's ``syevd``: the names of the vectors, the ascending values and LAPACK's info."""
        shape, dtype = source.shape, source.dtype
        rank, n, batch = len(shape), shape[-1], shape[:-2]
        matrix = (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))
        values_layout = (rank - 2,) + tuple(range(rank - 3, -1, -1))
        info_layout = tuple(range(rank - 3, -1, -1))
        target = "lapack_dsyevd_ffi" if dtype == "float64" else "lapack_ssyevd_ffi"
        name = ctx.emit(
            f"stablehlo.custom_call @{target}({a}) {{api_version = 4 : i32, backend_config = {{mode = 86 : ui8, uplo = 76 : ui8}}, "
            f'mhlo.frontend_attributes = {{num_batch_dims = "{len(batch)}"}}, '
            f"operand_layouts = [{layout(matrix)}], "
            f"result_layouts = [{layout(matrix)}, {layout(values_layout)}, {layout(info_layout)}]}} : "
            f"({ctx.type(source)}) -> ({ctx.type(source)}, {ctx.tensor_type(batch + (n,), dtype)}, "
            f"{ctx.tensor_type(batch, 'int32')})"
        )
        ctx.lines[-1][0] = f"{name}:3"
        return f"{name}#0", f"{name}#1", f"{name}#2"

    def wgsl_launch(self, k, node, views):
        return k.eigh(node, views[0])

    def wgsl_declines(self, k, node):
        # Past 64 x 64 the kernel's sweeps would outrun lavapipe's loop limit (topos.compiler.wgsl.eigh).
        return k.eigh_declines(node)

    def cost(self, operands, meta, attrs):
        # LAPACK's syevd with vectors: about 9 n^3 flops a matrix (Golub and Van Loan, 8.3: the
        # tridiagonal reduction's 4/3 n^3, its vectors' 4/3 n^3 and the divide and conquer's ~6 n^3).
        (a,) = operands
        n = a.shape[-1]
        batch = a.size // max(n * n, 1)
        return 9 * batch * n**3, bytes_moved(operands, meta)


@register
class Qr(Primitive):
    """``Qr(a)``: a [..., m, n] with m >= n gives [..., m + n, n]: rows 0..m the orthonormal Q, then the upper R.

    The reduced factorisation ``a = Q R`` of ``numpy.linalg.qr``; the same Householder
    convention as LAPACK's (numpy's and XLA's), so no sign is fixed. A wide matrix (m < n) is
    refused: its derivative takes another form, not written yet. The derivative (m >= n) is
    ``A_bar = (Q_bar + Q copyltu(M)) R^-T`` with ``M = R R_bar^T - Q_bar^T Q`` and ``copyltu``
    the symmetric matrix of M's lower triangle (Walter and Lehmann; torch's ``linalg_qr_backward``),
    written with recorded primitives (``TriangularSolve`` for ``R^-T``, a ``CumSum`` of the
    identity for the triangle); a singular R (dependent columns) makes it inf or NaN.
    """

    name = "Qr"
    arity = 1
    kernel_declined = "no Householder QR kernel yet: the host runs the factorisation"
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        (a,) = metas
        if a.rank < 2 or a.shape[-2] < a.shape[-1]:
            self.fail(f"needs matrices [..., m, n] with m >= n, got shape {a.shape}", metas)
        m, n = a.shape[-2:]
        return Meta(a.shape[:-2] + (m + n, n), a.dtype)

    def forward(self, inputs, attrs):
        (a,) = inputs
        q, r = np.linalg.qr(a)
        return np.concatenate([q, r], axis=-2).astype(a.dtype, copy=False)

    def vjp(self, e, g, operands, out, attrs):
        shape = e.shape(out)
        batch, n = tuple(shape[:-2]), shape[-1]
        m = shape[-2] - n
        q, r = rows(e, out, 0, m), rows(e, out, m, m + n)
        g_q, g_r = rows(e, g, 0, m), rows(e, g, m, m + n)
        eye = identity(e, r, batch, n)
        below = e.apply("CumSum", [eye], axis=len(batch), reverse=False)  # 1 on and below the diagonal
        big_m = e.sub(e.matmul(r, swap_last(e, g_r)), e.matmul(swap_last(e, g_q), q))
        copyltu = e.add(e.mul(big_m, below), swap_last(e, e.mul(big_m, e.sub(below, eye))))
        b = e.add(g_q, e.matmul(q, copyltu))
        solve = dict(left_side=False, lower=False, transpose_a=True, unit_diagonal=False)
        return [e.apply("TriangularSolve", [r, b], **solve)]

    def stablehlo(self, ctx, node):
        if ctx.portable:  # the same reflectors in stablehlo.while loops, for consumers without LAPACK
            return qr_portable(ctx, node)
        # LAPACK's geqrf (R above the diagonal, the reflectors below) then orgqr (Q from them), as JAX.
        (a,) = ctx.operands(node)
        source = ctx.operand_node(node, 0)
        shape, dtype = source.shape, source.dtype
        rank, n = len(shape), shape[-1]
        batch = shape[:-2]
        matrix = layout((rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1)))
        vector = layout((rank - 2,) + tuple(range(rank - 3, -1, -1)))
        letter = "d" if dtype == "float64" else "s"
        attributes = f'api_version = 4 : i32, backend_config = {{}}, mhlo.frontend_attributes = {{num_batch_dims = "{len(batch)}"}}'
        taus_type = ctx.tensor_type(batch + (n,), dtype)
        factored = ctx.emit(
            f"stablehlo.custom_call @lapack_{letter}geqrf_ffi({a}) {{{attributes}, operand_layouts = [{matrix}], "
            f"result_layouts = [{matrix}, {vector}]}} : ({ctx.type(source)}) -> ({ctx.type(source)}, {taus_type})"
        )
        ctx.lines[-1][0] = f"{factored}:2"
        q = ctx.emit(
            f"stablehlo.custom_call @lapack_{letter}orgqr_ffi({factored}#0, {factored}#1) {{{attributes}, "
            f"operand_layouts = [{matrix}, {vector}], result_layouts = [{matrix}]}} : "
            f"({ctx.type(source)}, {taus_type}) -> {ctx.type(source)}"
        )
        square = batch + (n, n)
        box = ", ".join(f"0:{extent}:1" for extent in square)
        top = ctx.emit(
            f"stablehlo.slice {factored}#0 [{box}] : ({ctx.type(source)}) -> {ctx.tensor_type(square, dtype)}"
        )
        row = ctx.emit(f"stablehlo.iota dim = {rank - 2} : {ctx.tensor_type(square, 'int32')}")
        column = ctx.emit(f"stablehlo.iota dim = {rank - 1} : {ctx.tensor_type(square, 'int32')}")
        upper = ctx.compare("LE", row, column, square, "int32")
        r = ctx.select(upper, top, ctx.splat(0.0, square, dtype), square, dtype)
        return ctx.emit(
            f"stablehlo.concatenate {q}, {r}, dim = {rank - 2} : "
            f"({ctx.type(source)}, {ctx.tensor_type(square, dtype)}) -> {ctx.type(node)}"
        )

    def cost(self, operands, meta, attrs):
        # Householder QR, 2 m n^2 - 2/3 n^3, and forming Q from its reflectors as much again (Golub and Van Loan, 5.2).
        (a,) = operands
        m, n = a.shape[-2:]
        batch = a.size // max(m * n, 1)
        return batch * (4 * m * n * n - 4 * n**3 // 3), bytes_moved(operands, meta)


@register
class Svd(Primitive):
    """``Svd(a)``: a [..., m, n] gives [..., k, m + 1 + n], k = min(m, n): row i holds u[:, i], s[i], vh[i, :].

    The reduced ``a = u diag(s) vh`` of ``numpy.linalg.svd(a, full_matrices=False)``, the
    singular values descending. A pair (u[:, i], vh[i, :]) may flip sign together: the node
    makes u[:, i]'s largest-magnitude component (the first of equals) positive. The derivative
    is the transpose of JAX's ``_svd_jvp_rule`` (Townsend's form): ``U (diag(s_bar) + J S + S K) V^T``
    with ``J = F * (U^T U_bar - U_bar^T U)``, ``K = F * (V^T V_bar - V_bar^T V)`` and
    ``F[i, j] = 1 / (s[j]^2 - s[i]^2)`` off the diagonal, plus, for a tall or wide ``a``, the parts
    of U_bar and V_bar outside U's and V's columns divided by s. Repeated singular values make
    it inf or NaN through the vectors (the values' own gradient stays finite, as ``Eigh``'s), and
    a zero singular value of a non-square ``a`` makes the outside parts infinite.
    """

    name = "Svd"
    arity = 1
    kernel_declined = "no Jacobi SVD kernel yet: the host runs the factorisation"
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        (a,) = metas
        if a.rank < 2:
            self.fail(f"needs matrices [..., m, n], got shape {a.shape}", metas)
        m, n = a.shape[-2:]
        return Meta(a.shape[:-2] + (min(m, n), m + 1 + n), a.dtype)

    def forward(self, inputs, attrs):
        (a,) = inputs
        broken = ~np.isfinite(a).all(axis=(-2, -1))
        u, s, vh = np.linalg.svd(np.where(broken[..., None, None], 0.0, a), full_matrices=False)
        sign = column_signs(u)
        u, vh = u * sign, vh * np.swapaxes(sign, -1, -2)
        packed = np.concatenate([np.swapaxes(u, -1, -2), s[..., :, None], vh], axis=-1).astype(a.dtype, copy=False)
        packed[broken] = np.nan
        return packed

    def vjp(self, e, g, operands, out, attrs):
        (a,) = operands
        m, n = e.shape(a)[-2:]
        batch, k = tuple(e.shape(out)[:-2]), min(m, n)
        u, s, v = svd_parts(e, out, m, n)
        g_u, g_s, g_v = svd_parts(e, g, m, n)
        square = batch + (k, k)
        eye = identity(e, s, batch, k)
        s_row = e.broadcast(s, square)
        s_col = swap_last(e, s_row)
        squares = e.mul(s, s)
        d = e.sub(e.broadcast(squares, square), swap_last(e, e.broadcast(squares, square)))
        f = e.sub(e.div(e.like(d, 1.0), e.add(d, eye)), eye)
        j = skew_part(e, f, e.matmul(swap_last(e, u), g_u), square)
        k_part = skew_part(e, f, e.matmul(swap_last(e, v), g_v), square)
        inner = e.add(e.add(e.mul(eye, e.broadcast(g_s, square)), e.mul(j, s_row)), e.mul(s_col, k_part))
        grad = e.matmul(e.matmul(u, inner), swap_last(e, v))
        if m > k:  # U_bar's part outside U's columns, divided by s: (I - U U^T) U_bar S^-1 V^T
            outside = e.sub(g_u, e.matmul(u, e.matmul(swap_last(e, u), g_u)))
            grad = e.add(grad, e.matmul(e.div(outside, e.broadcast(s, batch + (m, k))), swap_last(e, v)))
        if n > k:  # and V_bar's: U S^-1 V_bar^T (I - V V^T)
            outside = e.sub(g_v, e.matmul(v, e.matmul(swap_last(e, v), g_v)))
            grad = e.add(grad, e.matmul(u, swap_last(e, e.div(outside, e.broadcast(s, batch + (n, k))))))
        return [grad]

    def stablehlo(self, ctx, node):
        (a,) = ctx.operands(node)
        source = ctx.operand_node(node, 0)
        shape, dtype = source.shape, source.dtype
        rank, (m, n) = len(shape), shape[-2:]
        batch, k = shape[:-2], min(m, n)
        u_shape, s_shape, vh_shape = batch + (m, k), batch + (k,), batch + (k, n)
        if ctx.portable:  # one-sided Jacobi in a stablehlo.while (spectral_lowering), for consumers without LAPACK
            if k == 0:
                return ctx.splat(0.0, node.shape, dtype)
            found_u, found_s, found_vh = svd_portable(ctx, a, shape, dtype)
            info = ctx.splat(0, batch, "int32")
        else:
            found_u, found_s, found_vh, info = self.lapack_call(ctx, a, source)
        u, sign = stablehlo_fix_signs(ctx, found_u, u_shape, dtype)
        # The sign of column i of u, for row i of vh: u's signs are the same down each column.
        box = ", ".join(f"0:{extent}:1" for extent in batch + (1, k))
        row = ctx.emit(
            f"stablehlo.slice {sign} [{box}] : ({ctx.tensor_type(u_shape, dtype)}) -> {ctx.tensor_type(batch + (1, k), dtype)}"
        )
        row = ctx.reshape(row, batch + (1, k), s_shape, dtype)
        spread = ctx.broadcast_in_dim(row, s_shape, vh_shape, dtype, tuple(range(rank - 1)))
        vh = ctx.emit(f"stablehlo.multiply {found_vh}, {spread} : {ctx.tensor_type(vh_shape, dtype)}")
        axes = tuple(range(rank - 2)) + (rank - 1, rank - 2)
        u_t = ctx.emit(
            f"stablehlo.transpose {u}, dims = [{', '.join(map(str, axes))}] : "
            f"({ctx.tensor_type(u_shape, dtype)}) -> {ctx.tensor_type(batch + (k, m), dtype)}"
        )
        s_col = ctx.reshape(found_s, s_shape, batch + (k, 1), dtype)
        packed = ctx.emit(
            f"stablehlo.concatenate {u_t}, {s_col}, {vh}, dim = {rank - 1} : ({ctx.tensor_type(batch + (k, m), dtype)}, "
            f"{ctx.tensor_type(batch + (k, 1), dtype)}, {ctx.tensor_type(vh_shape, dtype)}) -> {ctx.type(node)}"
        )
        return nan_where_lapack_failed(ctx, node, a, source, info, packed)

    @staticmethod
    def lapack_call(ctx, a, source):
        """XLA CPU's ``gesdd`` (mode 'S': the reduced factors), as JAX lowers jnp.linalg.svd on CPU:
        the names of u, the descending s, vh and LAPACK's info."""
        shape, dtype = source.shape, source.dtype
        rank, (m, n) = len(shape), shape[-2:]
        batch, k = shape[:-2], min(m, n)
        minor = tuple(range(rank - 3, -1, -1))
        matrix = layout((rank - 2, rank - 1) + minor)
        u_shape, s_shape, vh_shape = batch + (m, k), batch + (k,), batch + (k, n)
        name = ctx.emit(
            f"stablehlo.custom_call @lapack_{'d' if dtype == 'float64' else 's'}gesdd_ffi({a}) {{api_version = 4 : i32, "
            f'backend_config = {{mode = 83 : ui8}}, mhlo.frontend_attributes = {{num_batch_dims = "{len(batch)}"}}, '
            f"operand_layouts = [{matrix}], result_layouts = [{matrix}, {layout((rank - 2,) + minor)}, {matrix}, "
            f"{matrix}, {layout(minor)}]}} : ({ctx.type(source)}) -> ({ctx.type(source)}, "
            f"{ctx.tensor_type(s_shape, dtype)}, {ctx.tensor_type(u_shape, dtype)}, {ctx.tensor_type(vh_shape, dtype)}, "
            f"{ctx.tensor_type(batch, 'int32')})"
        )
        ctx.lines[-1][0] = f"{name}:5"
        return f"{name}#2", f"{name}#1", f"{name}#3", f"{name}#4"

    def cost(self, operands, meta, attrs):
        # LAPACK's gesdd with the reduced vectors: about 4 m n k + 22 k^3 flops (Golub and Van Loan, 8.6, R-SVD).
        (a,) = operands
        m, n = a.shape[-2:]
        k = min(m, n)
        batch = a.size // max(m * n, 1)
        return batch * (4 * m * n * k + 22 * k**3), bytes_moved(operands, meta)


def svd_parts(e, packed, m, n):
    """``(u [..., m, k], s [..., 1, k], v [..., n, k])`` of a packed ``Svd`` value (or its cotangent)."""
    shape = tuple(e.shape(packed))
    rank = len(shape)

    def columns(start, stop):
        return (
            e.slice(packed, (0,) * rank, shape[:-1] + (stop,), (1,) * rank)
            if start == 0
            else e.slice(packed, (0,) * (rank - 1) + (start,), shape[:-1] + (stop,), (1,) * rank)
        )

    u = swap_last(e, columns(0, m))
    s = swap_last(e, columns(m, m + 1))
    v = swap_last(e, columns(m + 1, m + 1 + n))
    return u, s, v


def skew_part(e, f, product, square):
    """``F * (P - P^T)`` for P = X^T X_bar, 0 where P - P^T is (no cotangent reached X: finite at repeated values)."""
    skew = e.sub(product, swap_last(e, product))
    zero = e.like(skew, 0.0)
    return e.where(e.equal(skew, zero), e.broadcast(zero, square), e.mul(f, skew))


def layout(axes):
    return f"dense<[{', '.join(str(axis) for axis in axes)}]> : tensor<{len(axes)}xindex>"


def column_signs(v):
    """[..., 1, k]: -1 for a column of ``v`` whose largest-magnitude component (the first of equals) is negative, else 1."""
    first = np.argmax(np.abs(v), axis=-2)[..., None, :]
    return np.where(np.take_along_axis(v, first, axis=-2) < 0, -1.0, 1.0).astype(v.dtype)


def fix_signs(v):
    """``v`` with each column's sign chosen so that its largest-magnitude component (the first of equals) is positive."""
    return v * column_signs(v)


def nan_where_lapack_failed(ctx, node, a, source, info, packed):
    """``packed`` where the matrix ``a`` (of node ``source``) is finite and LAPACK's ``info`` is 0; NaN
    for a matrix holding NaN or an infinity, or one LAPACK reports a failure for, as JAX."""
    shape, dtype = source.shape, node.dtype
    rank, batch = len(shape), tuple(shape[:-2])
    finite = ctx.emit(f"stablehlo.is_finite {a} : ({ctx.type(source)}) -> {ctx.tensor_type(shape, 'bool')}")
    whole = ctx.reduce_value(finite, shape, "bool", (rank - 2, rank - 1), "stablehlo.and", True)
    converged = ctx.compare("EQ", info, ctx.splat(0, batch, "int32"), batch, "int32")
    good = ctx.emit(f"stablehlo.and {whole}, {converged} : {ctx.tensor_type(batch, 'bool')}")
    spread = ctx.broadcast_in_dim(good, batch, node.shape, "bool", tuple(range(len(batch))))
    return ctx.select(spread, packed, ctx.splat(float("nan"), node.shape, dtype), node.shape, dtype)


def stablehlo_fix_signs(ctx, v, shape, dtype):
    """``fix_signs`` in StableHLO: the first index of each column's largest magnitude, its sign, the product;
    returns the product and the signs (one a column, repeated down the rows)."""
    rank, n, rows = len(shape), shape[-1], shape[-2]
    row_axis = rank - 2
    kept = tuple(axis for axis in range(rank) if axis != row_axis)
    columns = shape[:-2] + (n,)

    def spread(value, value_dtype):
        return ctx.broadcast_in_dim(value, columns, shape, value_dtype, kept)

    magnitude = ctx.emit(f"stablehlo.abs {v} : {ctx.tensor_type(shape, dtype)}")
    largest = spread(ctx.reduce_value(magnitude, shape, dtype, (row_axis,), "stablehlo.maximum", float("-inf")), dtype)
    positions = ctx.emit(f"stablehlo.iota dim = {row_axis} : {ctx.tensor_type(shape, 'int32')}")
    at_largest = ctx.compare("EQ", magnitude, largest, shape, dtype)
    candidates = ctx.select(at_largest, positions, ctx.splat(rows, shape, "int32"), shape, "int32")
    first = spread(ctx.reduce_value(candidates, shape, "int32", (row_axis,), "stablehlo.minimum", rows), "int32")
    picked = ctx.select(
        ctx.compare("EQ", positions, first, shape, "int32"), v, ctx.splat(0.0, shape, dtype), shape, dtype
    )
    component = spread(ctx.reduce_value(picked, shape, dtype, (row_axis,), "stablehlo.add", 0.0), dtype)
    negative = ctx.compare("LT", component, ctx.splat(0.0, shape, dtype), shape, dtype)
    sign = ctx.select(negative, ctx.splat(-1.0, shape, dtype), ctx.splat(1.0, shape, dtype), shape, dtype)
    return ctx.emit(f"stablehlo.multiply {v}, {sign} : {ctx.tensor_type(shape, dtype)}"), sign


# Derivative helpers (emitter handles only) -------------------------------------------------


def rows(e, value, start, stop):
    """Rows ``start``..``stop`` of the second-to-last axis of a [..., m, n] handle."""
    shape = tuple(e.shape(value))
    rank = len(shape)
    begin = (0,) * (rank - 2) + (start, 0)
    end = shape[:-2] + (stop, shape[-1])
    return e.slice(value, begin, end, (1,) * rank)


def swap_last(e, value):
    rank = len(e.shape(value))
    return e.transpose(value, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def identity(e, handle, batch, n):
    """The n x n identity over ``batch``, from a handle whose last axis has n or more entries:
    n ones padded n apart are the diagonal of n * n."""
    shape = tuple(e.shape(handle))
    rank = len(shape)
    ones = e.slice(e.broadcast(e.like(handle, 1.0), shape), (0,) * rank, (1,) * (rank - 1) + (n,), (1,) * rank)
    diagonal = e.pad(e.reshape(ones, (n,)), (0,), (0,), (n,))
    return e.broadcast(e.reshape(diagonal, (n, n)), batch + (n, n))
