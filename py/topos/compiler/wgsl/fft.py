"""The launches of the Fourier transform kernels (``kernels/fft.wgsl``): Fft, Rfft and Irfft.

One launch a node, one workgroup a transform: the operand's leading axes are the rows
(merged where their strides allow, as the row kernels' layout of ``row_start`` in
``kernels/common.wgsl``), its transformed axis is read through its stride, and the
result is written contiguous. A length that is a power of two takes the Stockham
entries (``fft``, ``rfft``, ``irfft``), any other the direct sums (``dft``, ``rdft``,
``irdft``); a transform longer than ``LARGEST`` points is declined (``declines``).
"""

from .dispatch import MAX_RANK, Binding, Launch, grid, merge_jointly, pack, padded
from .views import View, element_count

#: The longest transform the kernels take: a workgroup holds it as two arrays of n complex
#: float32 values, 16 KiB at n = 1024, WebGPU's default maxComputeWorkgroupStorageSize.
LARGEST = 1024
#: Each opcode's entry points: (n a power of two, any other n).
ENTRIES = {"Fft": ("fft", "dft"), "Rfft": ("rfft", "rdft"), "Irfft": ("irfft", "irdft")}


def entry(opcode, n):
    """The entry point that runs ``opcode`` over ``n`` points: Stockham for a power of two, else direct."""
    stockham, direct = ENTRIES[opcode]
    return stockham if n & (n - 1) == 0 else direct


def declines(n):
    """Why the kernels cannot run a transform of ``n`` points (a sentence), or None."""
    if n > LARGEST:
        return (
            f"a transform of {n} points is longer than the FFT kernel's {LARGEST}: one workgroup holds a "
            "transform, two arrays of n complex float32 values in WebGPU's 16 KiB of workgroup memory"
        )
    return None


def transform(opcode, source, n, inverse, out_buffer, out_shape, label=""):
    """The launch of ``opcode`` over view ``source`` (pairs ``[..., m, 2]``, or ``[..., n]`` real for
    Rfft), a transform of ``n`` points (``inverse``: exp(+...) and a scale of 1 / n), into the
    contiguous ``out_shape`` of buffer ``out_buffer``."""
    axis = source.rank - (1 if opcode == "Rfft" else 2)
    outer_shape, (outer_strides,) = merge_jointly(source.shape[:axis], [source.strides[:axis]])
    rows = element_count(outer_shape)
    part = 0 if opcode == "Rfft" else source.strides[-1]
    scale = 1.0 / n if inverse else 1.0
    words = [rows, n, len(outer_shape), source.offset, source.strides[axis], part, int(bool(inverse)), scale]
    words += padded(outer_shape, MAX_RANK) + padded(outer_strides, MAX_RANK)
    return Launch(
        "fft",
        entry(opcode, n),
        (),
        grid(rows),
        (Binding(1, out_buffer, "read_write"), Binding(2, source.buffer, "read")),
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, out_shape)), ("source", source)),
    )
