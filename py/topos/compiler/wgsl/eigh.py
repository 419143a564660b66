"""The launch of the Jacobi eigensolver (``kernels/eigh.wgsl``): ``Eigh`` of small symmetric matrices.

One workgroup a matrix reads it through its view (any strides, batch axes merged as the row
kernels' are), works in a scratch buffer of [matrices, 2, m, m] (A, then V; m is n rounded up
to even) and writes the node's packed value, contiguous: row 0 the eigenvalues ascending, rows
1..n the eigenvectors as columns, each with the op's sign. The parameter words follow the layout
in the kernel file's header.

What it takes, and why:

- ``MAX_SWEEPS``: the sweep cap. Jacobi converges quadratically once the off-diagonal is small
  (Golub and Van Loan, 8.5.3): random float32 matrices reach off(A) <= 2^-24 ||A||_F in six
  round-robin sweeps at n = 16 and 32 and seven at 64 (on lavapipe); the cap allows four times
  that before the kernel gives NaN.
- ``MAX_SIZE``: n at most 64. The kernel's busiest loop, one 2 x 2 block of A and one of V an
  iteration, runs ceil((m / 2)^2 / 64) iterations a round, m - 1 rounds a sweep; lavapipe leaves
  a loop after 32767 iterations in one invocation, counted over every sweep, so a cap of 30
  sweeps holds it for m <= 64 (30240 iterations) and not for m = 66 (35100). 64 is also the
  digits' covariance (the gallery's PCA) and about where a CPU adapter's run time (a few tens of
  milliseconds a matrix on lavapipe) stops being worth a tab's while against the host's LAPACK.
"""

from ...errors import ShapeError
from ...text import format_shape
from .dispatch import LANES, LOOP_LIMIT, MAX_RANK, Binding, Launch, grid, merge_jointly, pack, padded
from .views import View, element_count

#: The most sweeps the kernel runs before it gives NaN (module docstring).
MAX_SWEEPS = 30
#: The largest n the kernel takes (module docstring).
MAX_SIZE = 64


def padded_size(n):
    """m: n rounded up to even (the round-robin ordering pairs every index)."""
    return n + n % 2


def block_iterations(n, sweeps=MAX_SWEEPS):
    """The iterations of the kernel's busiest loop (the blocks of a round) over ``sweeps`` sweeps, in one invocation."""
    m = padded_size(n)
    return sweeps * (m - 1) * -(-((m // 2) ** 2) // LANES)


def work_shape(shape):
    """The scratch buffer's shape for operand shape [..., n, n]: [matrices, 2, m, m]."""
    m = padded_size(shape[-1])
    return (element_count(shape[:-2]), 2, m, m)


def declines(shape, max_elements):
    """Why the kernel cannot take operand shape [..., n, n] (a sentence), or None."""
    n = shape[-1]
    if n > MAX_SIZE:
        return (
            f"a {n} x {n} matrix: the Jacobi kernel takes up to {MAX_SIZE} x {MAX_SIZE}, past which its "
            f"{MAX_SWEEPS} sweeps would run more than the loop limit of {LOOP_LIMIT} iterations"
        )
    if element_count(work_shape(shape)) > max_elements:
        return f"{element_count(shape[:-2])} matrices of {n}: the Jacobi kernel's scratch buffer would pass one storage binding"
    return None


def eigh(source, out_buffer, work_buffer, label=""):
    """``Eigh`` of the [..., n, n] view ``source`` into ``out_buffer`` ([..., n + 1, n], contiguous),
    working in ``work_buffer`` (``work_shape``)."""
    n = source.shape[-1]
    if n > MAX_SIZE or block_iterations(n) > LOOP_LIMIT:
        raise ShapeError(
            f"eigh: {n} x {n} matrices are past the kernel's {MAX_SIZE} x {MAX_SIZE}", shapes=[source.shape]
        )
    batch_shape, (batch_strides,) = merge_jointly(source.shape[:-2], [source.strides[:-2]])
    if len(batch_shape) > MAX_RANK:
        raise ShapeError(
            f"eigh: {format_shape(source.shape)} keeps more than {MAX_RANK} batch axes after merging",
            shapes=[source.shape],
        )
    matrices = element_count(batch_shape)
    words = [matrices, n, len(batch_shape), source.offset, source.strides[-2], source.strides[-1]]
    words += [padded_size(n), MAX_SWEEPS] + padded(batch_shape, MAX_RANK) + padded(batch_strides, MAX_RANK)
    bindings = (
        Binding(1, out_buffer, "read_write"),
        Binding(2, source.buffer, "read"),
        Binding(3, work_buffer, "read_write"),
    )
    out_shape = source.shape[:-2] + (n + 1, n)
    return Launch(
        "eigh",
        "eigh",
        (),
        grid(matrices),
        bindings,
        pack(words),
        label=label,
        views=(
            ("out", View.of_buffer(out_buffer, out_shape)),
            ("source", source),
            ("work", View.of_buffer(work_buffer, work_shape(source.shape))),
        ),
    )
