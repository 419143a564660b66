"""``topos.linalg``: linear algebra in the recording, under numpy.linalg's names.

Each function records its factorisation (``topos.ops.linalg_factor``) once and reaches
the results with ordinary ops, so every reading shows it and its derivative is made of
recorded primitives (a second derivative too). Matrices are the last two axes; the axes
before them are a batch.
"""

import numpy as np

from ..errors import ArgumentError
from . import arguments
from . import functions as F
from . import shape_functions as S

__all__ = [
    "cholesky",
    "cho_solve",
    "triangular_solve",
    "lu",
    "solve",
    "inv",
    "det",
    "slogdet",
    "eigh",
    "eigvalsh",
    "qr",
    "lstsq",
    "svd",
    "svdvals",
]


def cholesky(a):
    """The lower Cholesky factor ``l`` of a symmetric positive-definite ``a``: ``a = l l^T`` (records ``Cholesky``).

    As ``numpy.linalg.cholesky`` on ``(a + a^T) / 2`` (``jax.numpy.linalg.cholesky``
    symmetrises too, so the derivative is symmetric). A matrix that is not positive
    definite gives NaNs where numpy raises ``LinAlgError``, as JAX does.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    a = tape.parameter(np.array([[4.0, 2.0], [2.0, 3.0]]))
    factor = topos.linalg.cholesky(a)
    network = tape.seal()
    print(network.forward(network.parameters()).of(factor).numpy())  # [[2. 0.] [1. 1.41421356]]
    ```
    """
    return arguments.recorded(a, "cholesky").tape.apply("Cholesky", [a])


def triangular_solve(a, b, *, lower=True, left_side=True, transpose_a=False, unit_diagonal=False):
    """``x`` with ``op(a) x = b`` (``left_side``) or ``x op(a) = b``, reading one triangle of ``a``.

    ``op(a)`` is ``a`` or, with ``transpose_a``, ``a^T``; only the ``lower`` (else the
    upper) triangle of ``a`` is read, and its diagonal is taken as ones with
    ``unit_diagonal``: ``jax.lax.linalg.triangular_solve``'s options, and
    ``scipy.linalg.solve_triangular`` for the left side. ``a`` is [..., n, n]; ``b`` is
    [..., n, m] on the left ([..., n], a vector, too), [..., m, n] on the right, with
    ``a``'s batch axes. A zero on the diagonal gives infinities or NaNs, not an error.
    Records one ``TriangularSolve``.
    """
    a = arguments.recorded(a, "triangular_solve")
    b = arguments.as_value(a.tape, b, a.dtype)
    vector = left_side and len(b.shape) == len(a.shape) - 1
    if vector:
        b = F.reshape(b, b.shape + (1,))
    attrs = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    x = a.tape.apply("TriangularSolve", [a, b], **attrs)
    return F.reshape(x, x.shape[:-1]) if vector else x


def cho_solve(factor, b):
    """``x`` with ``(l l^T) x = b`` for a lower Cholesky factor ``factor`` (``l``): two triangular solves (``scipy.linalg.cho_solve``).

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    a = tape.leaf(np.array([[4.0, 2.0], [2.0, 3.0]]))
    x = topos.linalg.cho_solve(topos.linalg.cholesky(a), np.array([2.0, 1.0]))
    network = tape.seal()
    print(network.forward({}).of(x).numpy())  # [0.5 0. ]
    ```
    """
    y = triangular_solve(factor, b, lower=True)
    return triangular_solve(factor, y, lower=True, transpose_a=True)


def _lu_parts(a, what):
    """The ``Lu`` node of ``a`` and its three parts: the packed factors, ``p`` (``p a = l u``) and its sign."""
    a = arguments.recorded(a, what)
    packed = a.tape.apply("Lu", [a])
    n = a.shape[-1]
    return packed[..., :n], packed[..., n : 2 * n], packed[..., 2 * n]


def lu(a):
    """``(p, l, u)`` with ``a = p l u``: LU with partial pivoting, as ``scipy.linalg.lu`` (records one ``Lu``).

    ``l`` is unit lower triangular, ``u`` upper triangular and ``p`` a permutation matrix;
    the pivot of each column is its first element of largest magnitude at or below the
    diagonal, as LAPACK's. A singular ``a`` factors without error (a zero on ``u``'s diagonal).
    The gradient flows through ``l`` and ``u``; ``p`` is piecewise constant.
    """
    factors, perm, _ = _lu_parts(a, "lu")
    n = factors.shape[-1]
    lower = np.tril(np.ones((n, n)), -1)
    unit_lower = factors * lower + np.eye(n)
    upper = factors * (1.0 - lower)
    return S.swapaxes(perm, -1, -2), unit_lower, upper


def _lu_solve(factors, perm, b):
    y = triangular_solve(factors, F.matmul(perm, b), lower=True, unit_diagonal=True)
    return triangular_solve(factors, y, lower=False)


def solve(a, b):
    """``x`` with ``a x = b``, as ``numpy.linalg.solve``: one ``Lu`` and two triangular solves.

    ``a`` is [..., n, n]; ``b`` is [..., n, k] with ``a``'s batch axes, or a vector [..., n]
    (rank one less than ``a``). A singular ``a`` gives infinities or NaNs where numpy raises
    ``LinAlgError``, as JAX's ``solve``: a recording cannot stop on a value it has not seen.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    a = tape.leaf(np.array([[3.0, 1.0], [1.0, 2.0]]))
    x = topos.linalg.solve(a, np.array([9.0, 8.0]))
    network = tape.seal()
    print(network.forward({}).of(x).numpy())  # [2. 3.]
    ```
    """
    factors, perm, _ = _lu_parts(a, "solve")
    b = arguments.as_value(factors.tape, b, factors.dtype)
    if len(b.shape) == len(a.shape) - 1:
        return F.reshape(_lu_solve(factors, perm, F.reshape(b, b.shape + (1,))), b.shape)
    return _lu_solve(factors, perm, b)


def inv(a):
    """The inverse of each matrix of ``a`` [..., n, n], as ``numpy.linalg.inv``: ``solve(a, I)``.

    A singular matrix gives infinities or NaNs rather than ``LinAlgError``, as ``solve``.
    """
    factors, perm, _ = _lu_parts(a, "inv")
    return _lu_solve(factors, perm, perm * 0.0 + np.eye(a.shape[-1]))


def slogdet(a):
    """``(sign, logabsdet)`` of each matrix of ``a``, as ``numpy.linalg.slogdet``: from one ``Lu``.

    ``logabsdet`` is the sum of ``log |u_ii|`` and ``sign`` the permutation's sign times the
    signs of ``u``'s diagonal; a singular matrix gives sign 0 and ``logabsdet`` -inf, as
    numpy's, and there the gradient of ``logabsdet`` is infinite or NaN.
    """
    factors, _, perm_sign = _lu_parts(a, "slogdet")
    n = factors.shape[-1]
    diagonal = F.sum(factors * np.eye(n), axis=-1)
    logabsdet = F.sum(F.log(F.abs(diagonal)), axis=-1)
    # (-1) to the number of negative pivots, and 0 where a pivot is 0.
    negatives = F.sum(F.less(diagonal, 0.0), axis=-1)
    zero = F.max(F.equal(diagonal, 0.0), axis=-1)
    sign = perm_sign[..., 0] * F.cos(negatives * np.pi) * (1.0 - zero)
    return sign, logabsdet


def det(a):
    """The determinant of each matrix of ``a``, as ``numpy.linalg.det``: ``sign * exp(logabsdet)`` of ``slogdet``.

    0 for a singular matrix, whose gradient is then NaN (an infinite log times a zero).

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    a = tape.parameter(np.array([[1.0, 2.0], [3.0, 4.0]]))
    d = topos.linalg.det(a)
    network = tape.seal()
    run = network.forward(network.parameters())
    print(round(float(run.of(d).numpy()), 6), run.backward(d).of(a).numpy())  # -2.0 [[ 4. -3.] [-2.  1.]]
    ```
    """
    sign, logabsdet = slogdet(a)
    return sign * F.exp(logabsdet)


def _symmetric_eigh(a, name):
    """The packed ``Eigh`` node of ``(a + a^T) / 2`` and n (``topos.ops.linalg_spectral``)."""
    a = arguments.recorded(a, name)
    rank = len(a.shape)
    if rank < 2 or a.shape[-1] != a.shape[-2]:
        return a.tape.apply("Eigh", [a]), None  # its shape rule names what is wrong
    swapped = a.tape.apply("Transpose", [a], axes=tuple(range(rank - 2)) + (rank - 1, rank - 2))
    symmetric = F.mul(F.add(a, swapped), 0.5)
    return a.tape.apply("Eigh", [symmetric]), a.shape[-1]


def _rows(packed, start, stop):
    shape = packed.shape
    begin, end = (0,) * (len(shape) - 2) + (start, 0), shape[:-2] + (stop, shape[-1])
    return packed.tape.apply("Slice", [packed], start=begin, stop=end, step=(1,) * len(shape))


def eigh(a):
    """``(w, v)``: the eigenvalues ``w`` [..., n] of a symmetric ``a`` [..., n, n] in ascending order and
    the eigenvectors ``v`` [..., n, n], column j for ``w[..., j]`` (``numpy.linalg.eigh``; records one ``Eigh``).

    ``a`` is read as ``(a + a^T) / 2``, as ``jax.numpy.linalg.eigh`` reads it, so the gradient is
    symmetric. Each eigenvector's sign makes its largest-magnitude component positive. Where
    eigenvalues repeat the eigenvectors are not unique, and a gradient through ``v`` is inf or NaN
    (JAX's too); a gradient through ``w`` alone stays finite.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    a = tape.parameter(np.array([[2.0, 1.0], [1.0, 2.0]]))
    w, v = topos.linalg.eigh(a)
    network = tape.seal()
    run = network.forward(network.parameters())
    print(run.of(w).numpy(), run.of(v).numpy())  # [1. 3.] [[ 0.70710678  0.70710678] [-0.70710678  0.70710678]]
    ```
    """
    packed, n = _symmetric_eigh(a, "eigh")
    w = F.reshape(_rows(packed, 0, 1), packed.shape[:-2] + (n,))
    return w, _rows(packed, 1, n + 1)


def eigvalsh(a):
    """The eigenvalues [..., n] of a symmetric ``a`` [..., n, n], ascending (``numpy.linalg.eigvalsh``):
    ``eigh(a)[0]``, one ``Eigh`` node whose vectors the derivative reads, finite at repeated eigenvalues."""
    return eigh(a)[0]


def qr(a):
    """``(q, r)``: the reduced QR factorisation ``a = q r`` of ``a`` [..., m, n], k = min(m, n)
    (``numpy.linalg.qr``; records one ``Qr``): ``q`` [..., m, k] with orthonormal columns, ``r``
    [..., k, n] upper triangular, LAPACK's Householder signs.

    A wide ``a`` (m < n) is JAX's split: ``q, r1 = qr(a[..., :m])`` and ``r = [r1 | q^T a[..., m:]]``,
    the factors LAPACK gives, whose derivative the recorded ops carry. Dependent columns (a
    singular ``r``) give an inf or NaN gradient, no error.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    q, r = topos.linalg.qr(tape.parameter(np.array([[3.0, 1.0], [4.0, 2.0], [0.0, 2.0]])))
    network = tape.seal()
    run = network.forward(network.parameters())
    print(np.round(run.of(r).numpy(), 6))  # [[-5. -2.2] [ 0. -2.039608]]
    ```
    """
    a = arguments.recorded(a, "qr")
    if len(a.shape) >= 2 and a.shape[-2] < a.shape[-1]:
        q, left = qr(a[..., : a.shape[-2]])
        rank = len(a.shape)
        qt = a.tape.apply("Transpose", [q], axes=tuple(range(rank - 2)) + (rank - 1, rank - 2))
        return q, S.concatenate([left, F.matmul(qt, a[..., a.shape[-2] :])], axis=rank - 1)
    packed = a.tape.apply("Qr", [a])
    m = a.shape[-2]
    return _rows(packed, 0, m), _rows(packed, m, packed.shape[-2])


def lstsq(a, b):
    """``x`` minimising ``|a x - b|`` for ``a`` [..., m, n] of full column rank, m >= n
    (``numpy.linalg.lstsq``'s solution, without its residuals, rank and singular values):
    ``qr(a)`` and one triangular solve, ``r x = q^T b``.

    ``b`` is [..., m, k], or a vector [..., m] (rank one less than ``a``). Dependent columns
    give infinities or NaNs where numpy returns its minimum-norm solution.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    a = tape.leaf(np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]))
    x = topos.linalg.lstsq(a, np.array([1.0, 2.0, 2.0]))
    network = tape.seal()
    print(network.forward(network.parameters()).of(x).numpy())  # [1.16666667 0.5]
    ```
    """
    a = arguments.recorded(a, "lstsq")
    b = arguments.as_value(a.tape, b, a.dtype)
    vector = len(b.shape) == len(a.shape) - 1
    if vector:
        b = F.reshape(b, b.shape + (1,))
    q, r = qr(a)
    rank = len(q.shape)
    qt = a.tape.apply("Transpose", [q], axes=tuple(range(rank - 2)) + (rank - 1, rank - 2))
    x = triangular_solve(r, F.matmul(qt, b), lower=False)
    return F.reshape(x, x.shape[:-1]) if vector else x


def svd(a, full_matrices=False, compute_uv=True):
    """``(u, s, vh)``: the reduced singular value decomposition ``a = u diag(s) vh`` of ``a`` [..., m, n]
    (``numpy.linalg.svd(a, full_matrices=False)``; records one ``Svd``), the singular values ``s``
    [..., k] descending, k = min(m, n), ``u`` [..., m, k] and ``vh`` [..., k, n].

    Only the reduced form: ``full_matrices=True`` (numpy's default) raises ``ArgumentError`` for a
    non-square ``a``. ``compute_uv=False`` gives ``s`` alone, as ``svdvals``. Each pair
    (u[:, i], vh[i]) has u[:, i]'s largest-magnitude component positive. Where singular values
    repeat, a gradient through ``u`` or ``vh`` is inf or NaN (JAX's too); through ``s`` alone it
    stays finite.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    u, s, vh = topos.linalg.svd(tape.parameter(np.array([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]])))
    network = tape.seal()
    print(network.forward(network.parameters()).of(s).numpy())  # [3. 2.]
    ```
    """
    a = arguments.recorded(a, "svd")
    m, n = a.shape[-2:] if len(a.shape) >= 2 else (None, None)
    if full_matrices and m != n:
        raise ArgumentError(
            f"svd: full_matrices=True needs a square matrix, got shape {a.shape}; "
            "topos.linalg.svd computes the reduced form (full_matrices=False)"
        )
    packed = a.tape.apply("Svd", [a])
    shape = packed.shape
    rank = len(shape)

    def columns(start, stop):
        begin, end = (0,) * (rank - 1) + (start,), shape[:-1] + (stop,)
        return packed.tape.apply("Slice", [packed], start=begin, stop=end, step=(1,) * rank)

    s = F.reshape(columns(m, m + 1), shape[:-1])
    if not compute_uv:
        return s
    u = a.tape.apply("Transpose", [columns(0, m)], axes=tuple(range(rank - 2)) + (rank - 1, rank - 2))
    return u, s, columns(m + 1, m + 1 + n)


def svdvals(a):
    """The singular values [..., min(m, n)] of ``a`` [..., m, n], descending (``numpy.linalg.svdvals``):
    ``svd(a)``'s ``s``, one ``Svd`` node; its gradient ``u vh`` stays finite at repeated values."""
    return svd(a, compute_uv=False)


# Each public function records atomically: an error leaves the tape as it was, and names the user's line.
for _name in __all__:
    globals()[_name] = arguments.all_or_nothing(globals()[_name])
del _name
