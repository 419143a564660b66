"""The convolution kernel's launch (``kernels/convolution.wgsl``) and what it declines.

One kernel runs every convolution on WebGPU for now: the direct kernel, one
invocation per output element, which reads both operands through their views
and handles every attribute (strides, padding, both dilations, feature and
batch groups), so the backward's own convolutions run on the device too.
docs/kernels.md ("Convolution") says what was measured on the CPU adapters and
why an im2col into the tiled matmul is not chosen yet.
"""

from ...errors import ShapeError
from ...ops.convolution import output_extents
from ...text import format_shape
from .dispatch import LANES, LOOP_LIMIT, Binding, Launch, grid, pack, padded
from .views import View, element_count

#: Spatial axes the kernel's parameter block holds.
MAX_SPATIAL = 4
#: Terms one iteration of the kernel's loop sums.
TERMS_PER_ITERATION = 4
#: The most terms (input channels of a group times the window's size) one output may sum.
MAX_TERMS = TERMS_PER_ITERATION * LOOP_LIMIT


def terms(rhs_shape):
    """The terms one output sums: the kernel's input channels times its window's size."""
    return element_count(rhs_shape[1:])


def declines(lhs_shape, rhs_shape):
    """Why the direct kernel cannot run a convolution of these operands (a sentence), or None."""
    if len(lhs_shape) - 2 > MAX_SPATIAL:
        return f"more than {MAX_SPATIAL} spatial axes (the convolution kernel's parameter block)"
    if terms(rhs_shape) > MAX_TERMS:
        return f"{terms(rhs_shape)} terms an output, more than the convolution kernel's loop limit of {MAX_TERMS}"
    return None


def convolution(lhs, rhs, attrs, out_buffer, label=""):
    """``Convolution(lhs, rhs)`` with the node's ``attrs`` into ``out_buffer`` (contiguous); views ``lhs``
    [N, C, *in] and ``rhs`` [O, I, *window] are read through their strides."""
    reason = declines(lhs.shape, rhs.shape)
    if reason is not None:
        raise ShapeError(f"convolution: {reason}", shapes=[lhs.shape, rhs.shape])
    spatial = lhs.rank - 2
    out_spatial = output_extents(lhs.shape, rhs.shape, attrs)
    feature_groups, batch_groups = attrs["feature_groups"], attrs["batch_groups"]
    groups = max(feature_groups, batch_groups)
    batch, channels, per_group = lhs.shape[0] // batch_groups, rhs.shape[0], rhs.shape[1]
    out_shape = (batch, channels) + out_spatial
    count = element_count(out_shape)
    words = (
        [count, spatial, batch, channels, per_group, channels // groups]
        + [per_group if feature_groups > 1 else 0, batch if batch_groups > 1 else 0]
        + [terms(rhs.shape), element_count(rhs.shape[2:])]
        + padded(out_spatial, MAX_SPATIAL)
        + padded(lhs.shape[2:], MAX_SPATIAL)
        + padded(rhs.shape[2:], MAX_SPATIAL)
        + padded(attrs["strides"], MAX_SPATIAL)
        + padded([low for low, _ in attrs["padding"]], MAX_SPATIAL)
        + padded(attrs["lhs_dilation"], MAX_SPATIAL)
        + padded(attrs["rhs_dilation"], MAX_SPATIAL)
        + [lhs.offset, lhs.strides[0], lhs.strides[1]]
        + padded(lhs.strides[2:], MAX_SPATIAL)
        + [rhs.offset, rhs.strides[0], rhs.strides[1]]
        + padded(rhs.strides[2:], MAX_SPATIAL)
    )
    bindings = (Binding(1, out_buffer, "read_write"), Binding(2, lhs.buffer, "read"), Binding(3, rhs.buffer, "read"))
    if count == 0:
        raise ShapeError(f"convolution: an empty output {format_shape(out_shape)}", shapes=[lhs.shape, rhs.shape])
    return Launch(
        "convolution",
        "convolution",
        (),
        grid(-(-count // LANES)),
        bindings,
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, out_shape)), ("lhs", lhs), ("rhs", rhs)),
    )
