"""``topos.linalg``: linear algebra in the recording, under numpy.linalg's names.

Each function records its factorisation (``topos.ops.linalg_factor``) once and reaches
the results with ordinary ops, so every reading shows it and its derivative is made of
recorded primitives (a second derivative too). Matrices are the last two axes; the axes
before them are a batch.
"""

from . import arguments
from . import functions as F

__all__ = ["cholesky", "cho_solve", "triangular_solve", "eigh", "eigvalsh"]


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
    l = topos.linalg.cholesky(a)
    network = tape.seal()
    print(network.forward(network.parameters()).of(l).numpy())  # [[2. 0.] [1. 1.41421356]]
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


def cho_solve(l, b):
    """``x`` with ``(l l^T) x = b`` for a lower Cholesky factor ``l``: two triangular solves (``scipy.linalg.cho_solve``).

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
    y = triangular_solve(l, b, lower=True)
    return triangular_solve(l, y, lower=True, transpose_a=True)


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
