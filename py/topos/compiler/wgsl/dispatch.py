"""Launches as plain data: what one dispatch of one WGSL kernel names, and the helpers that fill it.

A ``Launch`` names its kernel file (``kernels/<kernel>.wgsl``), entry point and
specialisation, the plan nodes it covers, its workgroup grid, its buffer bindings
and its uniform parameter words; the builders of ``topos.compiler.wgsl.launch``
make them. The limits below are WebGPU's and the kernels' parameter blocks'.
"""

import struct
from dataclasses import dataclass, field

from ...errors import ArgumentError, ShapeError

#: Axes a view may have after merging (the kernels' parameter blocks hold 6).
MAX_RANK = 6
#: Batch axes a matmul operand may have after merging.
MAX_BATCH_RANK = 4
#: Words in a launch's uniform parameter block (array<vec4<u32>, 16>).
PARAM_WORDS = 64
#: The most workgroups WebGPU lets one grid dimension hold.
MAX_GROUPS_PER_DIMENSION = 65535
#: Invocations per workgroup of the one-dimensional kernels.
LANES = 64
#: The most iterations any kernel loop may run in one invocation. lavapipe (llvmpipe) silently
#: leaves a loop after 32767 iterations (measured: a serial sum of 40000 ones gives 32767), so
#: the builders split work until every loop stays within this.
LOOP_LIMIT = 32767

#: WebGPU's default maxStorageBufferBindingSize (128 MiB) in 4-byte elements: the most one binding holds.
MAX_ELEMENTS = (128 << 20) // 4


def f32_bits(value):
    """The u32 word holding ``value`` as an IEEE single (how f32 parameters travel)."""
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]


@dataclass(frozen=True)
class Binding:
    """Buffer ``buffer`` bound at ``index`` (group 0), ``read`` or ``read_write``."""

    index: int
    buffer: object
    access: str


@dataclass(frozen=True)
class Launch:
    kernel: str
    entry: str
    specialisation: tuple
    workgroups: tuple
    bindings: tuple
    params: tuple
    nodes: tuple = ()
    label: str = ""
    #: what the launch reads and writes, for the kernel reading: (role, view) pairs
    views: tuple = field(default=(), compare=False)

    @property
    def key(self):
        """What the pipeline cache keys on: the compiled text and the binding layout."""
        layout = tuple((b.index, b.access) for b in self.bindings)
        return (self.kernel, self.entry, self.specialisation, layout)

    def covering(self, nodes, label=None):
        """The same launch, recorded as covering ``nodes``."""
        return Launch(
            self.kernel,
            self.entry,
            self.specialisation,
            self.workgroups,
            self.bindings,
            self.params,
            tuple(nodes),
            label if label is not None else self.label,
            self.views,
        )


def grid(groups):
    """A workgroup grid (gx, gy, 1) with at least ``groups`` workgroups, numbered gx * wy + wx."""
    groups = max(int(groups), 1)
    if groups <= MAX_GROUPS_PER_DIMENSION:
        return (groups, 1, 1)
    rows = -(-groups // MAX_GROUPS_PER_DIMENSION)
    if rows > MAX_GROUPS_PER_DIMENSION:
        raise ShapeError(
            f"{groups} workgroups do not fit a WebGPU grid of {MAX_GROUPS_PER_DIMENSION} x {MAX_GROUPS_PER_DIMENSION}"
        )
    return (MAX_GROUPS_PER_DIMENSION, rows, 1)


def pack(words):
    """Parameter words, each an int (u32) or a float (f32 bits), padded to the block size."""
    packed = []
    for word in words:
        packed.append(f32_bits(word) if isinstance(word, float) else int(word) & 0xFFFFFFFF)
    if len(packed) > PARAM_WORDS:
        raise ArgumentError(f"{len(packed)} parameter words exceed the block of {PARAM_WORDS}")
    return tuple(packed)


def padded(values, length):
    values = list(values)
    return values + [0] * (length - len(values))


def merge_jointly(shape, stride_lists):
    """Drop size-1 axes and join neighbouring axes that step evenly in *every* stride list.

    Returns ``(shape, stride_lists)`` of equal or lower rank that address the same elements.
    """
    kept = [axis for axis, extent in enumerate(shape) if extent != 1]
    merged_shape = []
    merged = [[] for _ in stride_lists]
    for axis in kept:
        extent = shape[axis]
        if merged_shape and all(strides[-1] == source[axis] * extent for strides, source in zip(merged, stride_lists)):
            merged_shape[-1] *= extent
            for strides, source in zip(merged, stride_lists):
                strides[-1] = source[axis]
        else:
            merged_shape.append(extent)
            for strides, source in zip(merged, stride_lists):
                strides.append(source[axis])
    return tuple(merged_shape), [tuple(s) for s in merged]
