"""The launches of the factorisation kernels (``kernels/linalg.wgsl``): Cholesky and TriangularSolve.

Each reads its operands through their views (any batch strides, a transposed or sliced
matrix) and writes a contiguous result. ``triangular_solve`` turns every attribute
combination into the kernel's one form, ``t x = b`` with ``t`` lower or upper, by
re-viewing: ``transpose_a`` reads ``a`` through swapped strides (its lower triangle
becomes an upper one), a right-side solve ``x t = b`` is ``t^T x^T = b^T``, so ``a``,
``b`` and the result are read and written transposed. The parameter words follow the
layout in the kernel file's header.

The largest matrices each entry takes come from lavapipe's loop budget (``LOOP_LIMIT``
iterations an invocation, all its loops together): ``cholesky_iterations`` and
``solve_iterations`` count what the kernel's busiest lane runs, loop by loop.
"""

from ...errors import ShapeError
from ...text import format_shape
from .dispatch import LANES, MAX_RANK, Binding, Launch, grid, merge_jointly, pack, padded
from .views import View

#: The largest n x n a Cholesky launch takes: its busiest lane runs 18940 loop iterations at 256
#: (``cholesky_iterations``); the limit would allow up to 316, and 256, a power of two, keeps a
#: margin (lavapipe factors a 256 x 256 matrix in about 20 ms: tests/bench/linalg_factor.py).
MAX_CHOLESKY = 256
#: The largest n x n a triangular solve takes: 18432 iterations an invocation at 512
#: (``solve_iterations``); the limit would allow up to 692, and 512 is the bench's largest size,
#: where lavapipe takes about a second for 4 matrices of 512 right-hand sides.
MAX_SOLVE = 512
#: Terms each main iteration of the kernel's dot products sums (``dot4_rows``, ``dot8_solve`` in the kernel).
CHOLESKY_UNROLL = 4
SOLVE_UNROLL = 8


def _dot_iterations(count, unroll):
    """A dot product's iterations: ``unroll`` terms a main iteration, then the rest one at a time."""
    return count // unroll + count % unroll


def cholesky_iterations(n):
    """Loop iterations of the busiest lane of a cholesky workgroup, every loop counted at its worst lane:
    the two sweeps over the n x n elements, the columns, each lane's rows below a column (row i is below
    i columns), and its dot products (row i's against each column's row j < i, then its pivot's)."""
    before = [0]  # before[i]: the dot iterations of columns 0..i-1, what row i runs below them
    for j in range(n):
        before.append(before[-1] + _dot_iterations(j, CHOLESKY_UNROLL))
    rows = max(sum(range(lane, n, LANES)) for lane in range(LANES))
    dots = max(
        sum(before[i] + _dot_iterations(i, CHOLESKY_UNROLL) for i in range(lane, n, LANES)) for lane in range(LANES)
    )
    return 2 * -(-n * n // LANES) + n + rows + dots


def solve_iterations(n):
    """Loop iterations of one triangular_solve invocation: n rows, each a dot product over the rows before it."""
    return n + sum(_dot_iterations(step, SOLVE_UNROLL) for step in range(n))


def _batch(entry, views):
    """The batch shape and each view's batch strides, merged jointly (the matrices keep their row-major numbering)."""
    shape, strides = merge_jointly(views[0].shape[:-2], [view.strides[:-2] for view in views])
    if len(shape) > MAX_RANK:
        raise ShapeError(
            f"{entry}: {format_shape(views[0].shape)} keeps more than {MAX_RANK} batch axes after merging",
            shapes=[views[0].shape],
        )
    count = 1
    for extent in shape:
        count *= extent
    return count, shape, strides


def _check_order(entry, n, largest):
    if n > largest:
        raise ShapeError(f"{entry}: {n} x {n} matrices are larger than the kernel's {largest} x {largest}")


def cholesky(source, out_buffer, label=""):
    """The lower Cholesky factor of each n x n matrix of view ``source`` (symmetrised first), contiguous."""
    n = source.shape[-1]
    _check_order("cholesky", n, MAX_CHOLESKY)
    matrices, shape, (strides,) = _batch("cholesky", [source])
    words = [matrices, n, len(shape), source.offset, source.strides[-2], source.strides[-1], 0, 0]
    words += padded(shape, MAX_RANK) + padded(strides, MAX_RANK)
    bindings = (Binding(1, out_buffer, "read_write"), Binding(2, source.buffer, "read"))
    return Launch(
        "linalg",
        "cholesky",
        (),
        grid(matrices),
        bindings,
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, source.shape)), ("a", source)),
    )


def _swap_last(view):
    rank = view.rank
    return view.transpose(tuple(range(rank - 2)) + (rank - 1, rank - 2))


def triangular_solve(a, b, attrs, out_buffer, label=""):
    """x with op(a) x = b (``left_side``) or x op(a) = b, for views ``a`` [..., n, n] and ``b``; x is
    contiguous in b's shape. ``attrs``: TriangularSolve's four flags."""
    n = a.shape[-1]
    _check_order("triangular_solve", n, MAX_SOLVE)
    t, rhs, lower = a, b, attrs["lower"]
    if attrs["transpose_a"]:
        t, lower = _swap_last(t), not lower
    # x as the kernel writes it, [n, m] a matrix: b's own layout on the left, its transpose on the right.
    x_strides = (b.shape[-1], 1)
    if not attrs["left_side"]:
        t, lower, rhs, x_strides = _swap_last(t), not lower, _swap_last(rhs), (1, n)
    m = rhs.shape[-1]
    matrices, shape, (t_strides, rhs_strides) = _batch("triangular_solve", [t, rhs])
    flags = (1 if lower else 0) | (2 if attrs["unit_diagonal"] else 0)
    words = [matrices * m, n, len(shape), t.offset, t.strides[-2], t.strides[-1], m, flags]
    words += padded(shape, MAX_RANK) + padded(t_strides, MAX_RANK)
    words += [rhs.offset, rhs.strides[-2], rhs.strides[-1], x_strides[0], x_strides[1], 0]
    words += padded(rhs_strides, MAX_RANK)
    bindings = (Binding(1, out_buffer, "read_write"), Binding(2, t.buffer, "read"), Binding(3, rhs.buffer, "read"))
    return Launch(
        "linalg",
        "triangular_solve",
        (),
        grid(-(-matrices * m // LANES)),
        bindings,
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, b.shape)), ("a", a), ("b", b)),
    )
