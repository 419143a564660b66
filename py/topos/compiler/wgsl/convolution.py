"""The convolution kernel's launch (``kernels/convolution.wgsl``) and what it declines.

Two paths run a convolution on WebGPU. The im2col path writes the dilated,
padded input into a buffer (fill and copy), gathers its windows into columns
[M, groups, I * window, out] (the copy kernel, through a strided view of the
windows) and multiplies each group's kernel with them (the matmul kernel,
tiled for large products). The direct kernel (``kernels/convolution.wgsl``),
one invocation per output element, reads both operands through their views and
handles every attribute, so it runs what the im2col path's views cannot hold
(batch groups, three spatial axes: more axes than the copy kernel's six after
merging), and what it runs faster (groups of fewer than eight output channels,
depthwise). ``strategy`` chooses, by the rule docs/kernels.md ("Convolution")
gives with what was measured on lavapipe and SwiftShader.
"""

from ...errors import ShapeError
from ...ops.convolution import columns_last, only_crops, output_extents, padded_extents, window_geometry
from ...text import format_shape
from .dispatch import LANES, LOOP_LIMIT, MAX_RANK, Binding, Launch, grid, merge_jointly, pack
from .views import View, contiguous_strides, element_count

#: Spatial axes the kernel's parameter block holds.
MAX_SPATIAL = 4
#: The most terms (input channels of a group times the window's size) one output of the direct kernel
#: may sum: one an iteration of its loop.
MAX_TERMS = LOOP_LIMIT
#: The fewest output channels a group may have for the im2col path. The direct kernel's work is this many
#: multiply-adds for each element the im2col gather writes, so below it the gather costs more than the
#: products save: with 1, 2 and 4 the direct kernel was faster on lavapipe and SwiftShader, with 16 and
#: more im2col was; at 8 lavapipe favours im2col (1.5-2x), SwiftShader the direct kernel (1.6x), and
#: im2col there loses the least at worst (docs/kernels.md, "Convolution").
MIN_IM2COL_CHANNELS = 8
#: The buffer of a dense view that only stands for a shape (what a dense input's windows would merge to).
SHAPE_ONLY = "dense"
#: The most elements the im2col path's columns may take: one storage binding (128 MiB of float32).
MAX_COLUMNS = (128 << 20) // 4
#: The path every convolution takes where that path can run it, or None for the rule: a knob for
#: tests/bench/convolution.py, which times both paths at the same shapes; not an API.
FORCED_PATH = None


def terms(rhs_shape):
    """The terms one output sums: the kernel's input channels times its window's size."""
    return element_count(rhs_shape[1:])


def axis_words(values, unused):
    """One word an axis for the kernel's 4, an unused axis holding ``unused`` (an extent 1, a stride 0)."""
    return list(values) + [unused] * (MAX_SPATIAL - len(values))


def declines(lhs_shape, rhs_shape, attrs):
    """Why neither path can run a convolution of these operands (a sentence), or None. The im2col path
    is judged over a dense input: the selector makes the input dense where its own view does not merge."""
    if len(lhs_shape) - 2 > MAX_SPATIAL:
        return f"more than {MAX_SPATIAL} spatial axes (the convolution kernel's parameter block)"
    if im2col_fits(View.of_buffer(SHAPE_ONLY, lhs_shape), rhs_shape, attrs):
        return None
    if terms(rhs_shape) > MAX_TERMS:
        return f"{terms(rhs_shape)} terms an output, more than the convolution kernel's loop limit of {MAX_TERMS}"
    return None


def convolution(lhs, rhs, attrs, out_buffer, label=""):
    """``Convolution(lhs, rhs)`` with the node's ``attrs`` into ``out_buffer`` (contiguous); views ``lhs``
    [N, C, *in] and ``rhs`` [O, I, *window] are read through their strides."""
    if len(lhs.shape) - 2 > MAX_SPATIAL or terms(rhs.shape) > MAX_TERMS:
        raise ShapeError(
            f"convolution: the direct kernel takes at most {MAX_SPATIAL} spatial axes and {MAX_TERMS} terms an output",
            shapes=[lhs.shape, rhs.shape],
        )
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
        + axis_words(out_spatial, 1)
        + axis_words(lhs.shape[2:], 1)
        + axis_words(rhs.shape[2:], 1)
        + axis_words(attrs["strides"], 1)
        + axis_words([low for low, _ in attrs["padding"]], 0)
        + axis_words(attrs["lhs_dilation"], 1)
        + axis_words(attrs["rhs_dilation"], 1)
        + [lhs.offset, lhs.strides[0], lhs.strides[1]]
        + axis_words(lhs.strides[2:], 0)
        + [rhs.offset, rhs.strides[0], rhs.strides[1]]
        + axis_words(rhs.strides[2:], 0)
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


# im2col: the windows gathered into columns by the copy kernel, then one tiled matmul ---------------------


def windows_view(padded, rhs_shape, attrs, out_spatial):
    """The windows of view ``padded`` (the dilated, padded input) as a view [M, groups, I, *out, *window]."""
    shape, strides = window_geometry(padded.shape, padded.strides, attrs, out_spatial, rhs_shape)
    return View(padded.buffer, padded.offset, shape, strides)


def column_order(spatial, last):
    """The windows' axes [M, groups, I, *out, *window] in the columns' order: [M, groups, I, *window,
    *out] where ``last`` (``columns_last``: a column per output position), else [groups, M, *out, I,
    *window] (a row per batch item and output position, which one product a group takes)."""
    outs = tuple(range(3, 3 + spatial))
    window = tuple(range(3 + spatial, 3 + 2 * spatial))
    return (0, 1, 2) + window + outs if last else (1, 0) + outs + (2,) + window


def cropped(lhs, attrs):
    """The padded input as a view of ``lhs`` where the padding only crops; None where it needs a buffer."""
    if not only_crops(attrs):
        return None
    start = (0, 0) + tuple(-low for low, _ in attrs["padding"])
    return lhs.slice(start, (1,) * lhs.rank, lhs.shape[:2] + padded_extents(lhs.shape, attrs))


def gathered_windows(padded, rhs_shape, attrs, out_spatial):
    """The windows of view ``padded`` in the columns' order (``column_order``)."""
    last = columns_last(out_spatial, rhs_shape)
    return windows_view(padded, rhs_shape, attrs, out_spatial).transpose(column_order(len(out_spatial), last))


def im2col_fits(lhs, rhs_shape, attrs):
    """Whether the im2col path can run over view ``lhs``: its gather keeps at most MAX_RANK axes after
    merging, and its columns fit one storage binding (reasons for the direct kernel otherwise)."""
    out_spatial = output_extents(lhs.shape, rhs_shape, attrs)
    padded = cropped(lhs, attrs) or View.of_buffer(SHAPE_ONLY, lhs.shape[:2] + padded_extents(lhs.shape, attrs))
    windows = gathered_windows(padded, rhs_shape, attrs, out_spatial)
    merged, _ = merge_jointly(windows.shape, [windows.strides, contiguous_strides(windows.shape)])
    return len(merged) <= MAX_RANK and element_count(windows.shape) <= MAX_COLUMNS


def strategy(lhs, rhs_shape, attrs):
    """ "im2col" (a gather into columns, then the tiled matmul) where its views fit the kernels and a group
    has at least ``MIN_IM2COL_CHANNELS`` output channels; "im2col over a dense copy" where the input's own
    view does not merge but a dense one would (a transposed input); else "direct" (one invocation an
    output). The rule measured on lavapipe and SwiftShader: docs/kernels.md, "Convolution"."""
    per_group = rhs_shape[0] // max(attrs["feature_groups"], attrs["batch_groups"])
    direct_runs = len(lhs.shape) - 2 <= MAX_SPATIAL and terms(rhs_shape) <= MAX_TERMS
    if FORCED_PATH == "direct" and direct_runs:
        return "direct"
    if per_group < MIN_IM2COL_CHANNELS and direct_runs and FORCED_PATH != "im2col":
        return "direct"
    if im2col_fits(lhs, rhs_shape, attrs):
        return "im2col"
    if im2col_fits(View.of_buffer(SHAPE_ONLY, lhs.shape), rhs_shape, attrs):
        return "im2col over a dense copy"
    return "direct"
