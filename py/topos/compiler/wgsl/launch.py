"""Launches: one dispatch of one WGSL kernel, as plain data, and the builders that make them.

A ``Launch`` (``topos.compiler.wgsl.dispatch``, with the limits it keeps to) names its kernel file (``kernels/<kernel>.wgsl``), entry point and
specialisation (the text substituted into the file's ``{{NAME}}`` tokens), the
plan nodes it covers, its workgroup grid, its buffer bindings and its uniform
parameter words. Nothing here touches a GPU: the kernel reading prints launches,
``topos.webgpu.runner`` executes them with wgpu-py, and the browser's runner can
execute the same data.

The builders below turn views (``topos.compiler.wgsl.views``) into launches; each
one follows the parameter layout written in its kernel file's header comment.
What an op computes is its own: an elementwise primitive states its expression
(``wgsl`` in its op block), which ``elementwise`` puts into the shared template, and
a reduction its ``fold``, which ``reduce`` puts into the reduce kernel.
"""

from ...errors import ArgumentError, ShapeError
from ...ops import primitives
from ...text import format_shape
from .dispatch import (
    LANES,
    LOOP_LIMIT,
    MAX_BATCH_RANK,
    MAX_GROUPS_PER_DIMENSION,
    MAX_RANK,
    Binding,
    Launch,
    grid,
    merge_jointly,
    pack,
    padded,
)
from .views import View, contiguous_strides, element_count

# Elementwise -------------------------------------------------------------------------

#: The template's operands, in binding and parameter order (bindings 2..8, view words from 8, 7 apiece).
OPERAND_NAMES = ("x", "y", "z", "u", "v", "w", "s")


def elementwise(expression, out_buffer, shape, operands, label="", always_strided=False, body="", extra=None):
    """``out = expression(x, y, z, ...)`` over ``shape``; ``operands`` are views (constants allowed),
    at most seven, named ``OPERAND_NAMES`` in order. ``body`` is let statements computed before the
    expression (a fused chain's intermediates, ``topos.compiler.wgsl.fusion``); ``extra`` a buffer the
    body stores a second output in (``extra[i] = ...``), which leaves room for six operands.

    An operand laid out like the output is read at ``offset + i``; any other through its
    strides. ``always_strided`` decodes every index (the general path, for benchmarks).
    """
    shape = tuple(shape)
    room = len(OPERAND_NAMES) - (extra is not None)
    if len(operands) > room:
        raise ArgumentError(f"elementwise: {len(operands)} operands, more than the template's {room}")
    count = element_count(shape)
    merged_shape, strides = merge_jointly(shape, [contiguous_strides(shape)] + [v.strides for v in operands])
    out_strides, operand_strides = strides[0], strides[1:]
    if len(merged_shape) > MAX_RANK:
        raise ShapeError(
            f"elementwise: {format_shape(shape)} keeps {len(merged_shape)} axes after merging, more than {MAX_RANK}",
            shapes=[shape],
        )
    words = [count, len(merged_shape)] + padded(merged_shape, MAX_RANK)
    specialisation = {"EXPRESSION": expression, "BODY": body}
    bindings = [Binding(1, out_buffer, "read_write")]
    for position, name in enumerate(OPERAND_NAMES):
        base = 8 + 7 * position
        token = f"LOAD_{name.upper()}"
        if position >= len(operands):
            specialisation[token] = "0.0"
            words += [0] * 7
            continue
        view = operands[position]
        if view.is_constant:
            specialisation[token] = f"bitcast<f32>(word({base}u))"
            words += [float(view.constant)] + [0] * 6
            continue
        bindings.append(Binding(2 + position, view.buffer, "read"))
        if operand_strides[position] == out_strides and not always_strided:
            specialisation[token] = f"{name}_buffer[word({base}u) + i]"
        else:
            specialisation[token] = f"{name}_buffer[strided(i, {base}u)]"
        words += [view.offset] + padded(operand_strides[position], MAX_RANK)
    # Only the words the operands use: the block holds 64, and seven operands' views end at word 57.
    words = words[: 8 + 7 * max(len(operands), 3)]
    if extra is not None:
        bindings.append(Binding(9, extra, "read_write"))
    roles = (("out", View.of_buffer(out_buffer, shape)),) + tuple(zip(OPERAND_NAMES, operands))
    if extra is not None:
        roles += (("extra", View.of_buffer(extra, shape)),)
    return Launch(
        "elementwise",
        "main",
        tuple(sorted(specialisation.items())),
        grid(-(-count // LANES)),
        tuple(bindings),
        pack(words),
        label=label,
        views=roles,
    )


# Copy and fill -------------------------------------------------------------------------


def copy(source, out, label=""):
    """Element i of view ``out`` gets element i of view ``source`` (equal shapes)."""
    merged_shape, (source_strides, out_strides) = merge_jointly(source.shape, [source.strides, out.strides])
    if len(merged_shape) > MAX_RANK:
        raise ShapeError(
            f"copy: {format_shape(source.shape)} keeps {len(merged_shape)} axes after merging, more than {MAX_RANK}",
            shapes=[source.shape],
        )
    count = source.size
    words = (
        [count, len(merged_shape)]
        + padded(merged_shape, MAX_RANK)
        + [source.offset]
        + padded(source_strides, MAX_RANK)
        + [out.offset]
        + padded(out_strides, MAX_RANK)
    )
    bindings = (Binding(1, out.buffer, "read_write"), Binding(2, source.buffer, "read"))
    return Launch(
        "copy",
        "copy",
        (),
        grid(-(-count // LANES)),
        bindings,
        pack(words),
        label=label,
        views=(("out", out), ("source", source)),
    )


def fill(out, value, label=""):
    """Every element of view ``out`` gets ``value``."""
    merged_shape, (out_strides,) = merge_jointly(out.shape, [out.strides])
    count = out.size
    words = (
        [count, len(merged_shape)]
        + padded(merged_shape, MAX_RANK)
        + [0] * 7
        + [out.offset]
        + padded(out_strides, MAX_RANK)
        + [float(value)]
    )
    return Launch(
        "copy",
        "fill",
        (),
        grid(-(-count // LANES)),
        (Binding(1, out.buffer, "read_write"),),
        pack(words),
        label=label,
        views=(("out", out),),
    )


# Reductions ------------------------------------------------------------------------------

#: Terms per output up to which one invocation per output folds them all.
SERIAL_TERMS = 32
#: Terms per output from which a reduction over few outputs takes two passes.
TWO_PASS_TERMS = 8192
#: Outputs below which a long reduction takes two passes (too few workgroups otherwise).
TWO_PASS_OUTPUTS = 64
#: Terms per chunk of a two-pass reduction's first pass.
CHUNK_TERMS = 2048


def reduction_strategy(outputs, terms):
    """Which reduction kernel to use: "serial", "workgroup" or "two-pass"."""
    if terms <= SERIAL_TERMS:
        return "serial"
    if (terms >= TWO_PASS_TERMS and outputs < TWO_PASS_OUTPUTS) or -(-terms // LANES) > LOOP_LIMIT:
        return "two-pass"
    return "workgroup"


def _check_loop(what, iterations):
    if iterations > LOOP_LIMIT:
        raise ShapeError(f"{what}: {iterations} iterations of one loop exceed the limit of {LOOP_LIMIT}")


def reduce(opcode, source, axes, out_buffer, scale=1.0, allocate=None, strategy=None, chunk=CHUNK_TERMS, label=""):
    """Reduce view ``source`` over ``axes`` into ``out_buffer`` (contiguous, the kept axes in order), folding
    as the primitive ``opcode`` declares (its ``fold``). Returns the launches: one, or two for a two-pass
    reduction, whose partial results go to a scratch buffer from ``allocate(elements)``.
    """
    folds = {name: primitive.fold for name, primitive in primitives().items() if getattr(primitive, "fold", None)}
    if opcode not in folds:
        raise ArgumentError(f"reduce: no fold for {opcode!r}; the kernel folds {', '.join(folds)}")
    fold = folds[opcode]
    kept = [axis for axis in range(source.rank) if axis not in axes]
    outer = View(source.buffer, 0, tuple(source.shape[a] for a in kept), tuple(source.strides[a] for a in kept))
    inner = View(source.buffer, 0, tuple(source.shape[a] for a in axes), tuple(source.strides[a] for a in axes))
    outer, inner = outer.merged(), inner.merged()
    if outer.rank > MAX_RANK or inner.rank > MAX_RANK:
        raise ShapeError(
            f"reduce: {format_shape(source.shape)} over axes {format_shape(axes)} keeps more than {MAX_RANK} "
            "axes after merging",
            shapes=[source.shape],
        )
    outputs, terms = outer.size, inner.size
    strategy = strategy or reduction_strategy(outputs, terms)
    specialisation = (("COMBINE", fold.combine), ("IDENTITY", fold.identity))

    def launch(entry, read, outer, inner, out, per_chunk, chunks, launch_scale, groups):
        words = (
            [outer.size, inner.size, outer.rank, inner.rank, read.offset, per_chunk, chunks, float(launch_scale)]
            + padded(outer.shape, MAX_RANK)
            + padded(outer.strides, MAX_RANK)
            + padded(inner.shape, MAX_RANK)
            + padded(inner.strides, MAX_RANK)
        )
        bindings = (Binding(1, out, "read_write"), Binding(2, read.buffer, "read"))
        return Launch(
            "reduce",
            entry,
            specialisation,
            grid(groups),
            bindings,
            pack(words),
            label=label,
            views=(("out", View.of_buffer(out, (outer.size * chunks,))), ("source", read)),
        )

    if strategy == "serial":
        _check_loop("serial reduction", terms)
        return [launch("reduce_serial", source, outer, inner, out_buffer, terms, 1, scale, -(-outputs // LANES))]
    if strategy == "workgroup":
        _check_loop("workgroup reduction", -(-terms // LANES))
        return [launch("reduce_workgroup", source, outer, inner, out_buffer, terms, 1, scale, outputs)]
    if strategy != "two-pass":
        raise ArgumentError(f"unknown reduction strategy {strategy!r}; the strategies are serial, workgroup, two-pass")
    chunks = -(-terms // chunk)
    _check_loop("two-pass reduction", max(-(-chunk // LANES), -(-chunks // LANES)))
    partials = allocate(outputs * chunks)
    first = launch("reduce_workgroup", source, outer, inner, partials, chunk, chunks, 1.0, outputs * chunks)
    rows = View(partials, 0, (outputs,), (chunks,)).merged()
    across = View(partials, 0, (chunks,), (1,))
    second_entry = "reduce_serial" if chunks <= SERIAL_TERMS else "reduce_workgroup"
    second_groups = -(-outputs // LANES) if second_entry == "reduce_serial" else outputs
    table = View.of_buffer(partials, (outputs, chunks))
    second = launch(second_entry, table, rows, across, out_buffer, chunks, 1, scale, second_groups)
    return [first, second]


# Matrix products ---------------------------------------------------------------------------

#: The tiled kernel (kernels/matmul.wgsl): a workgroup's tile of the output, an invocation's block
#: of it, and the steps along k of one iteration of its loop past LOOP_LIMIT.
MATMUL_TILE = 64
MATMUL_BLOCK = 8
MATMUL_UNROLLED = 16
#: The tiled kernel runs for a product whose output (in each batch) has this many blocks, or
#: fewer blocks but a contraction this long.
MIN_TILED_BLOCKS = 16
MIN_TILED_DEPTH = 256
#: The most the blocks may pad a product's output before the simple kernel runs instead.
MAX_BLOCK_PADDING = 2.0


def matmul_strategy(batch, m, n, k):
    """ "tiled" (8 x 8 blocks an invocation) or "simple" (one invocation an output), by a rule
    measured on lavapipe and SwiftShader (docs/kernels.md): tiled for a product whose output (in
    each batch) fills its blocks at least half and has at least 16 of them or a contraction of at
    least 256, and for any contraction longer than the simple kernel's loop may run; simple
    otherwise, and for more batches than a grid dimension holds."""
    if k > LOOP_LIMIT:
        return "tiled"
    if batch > MAX_GROUPS_PER_DIMENSION:
        return "simple"
    blocks = -(-m // MATMUL_BLOCK) * -(-n // MATMUL_BLOCK)
    enough = blocks >= MIN_TILED_BLOCKS or k >= MIN_TILED_DEPTH
    if enough and blocks * MATMUL_BLOCK**2 <= MAX_BLOCK_PADDING * m * n:
        return "tiled"
    return "simple"


def matmul(a, b, out_buffer, strategy=None, label=""):
    """``out = a @ b`` over the last two axes of views ``a`` [..., m, k] and ``b`` [..., k, n]."""
    batch_shape = a.shape[:-2]
    m, k = a.shape[-2:]
    n = b.shape[-1]
    merged_batch, (a_batch, b_batch) = merge_jointly(batch_shape, [a.strides[:-2], b.strides[:-2]])
    if len(merged_batch) > MAX_BATCH_RANK:
        raise ShapeError(
            f"matmul: batch axes {format_shape(batch_shape)} keep {len(merged_batch)} after merging, "
            f"more than {MAX_BATCH_RANK}",
            shapes=[a.shape, b.shape],
        )
    batch = element_count(batch_shape)
    words = (
        [m, n, k, len(merged_batch)]
        + padded(merged_batch, MAX_BATCH_RANK)
        + [a.offset]
        + padded(a_batch, MAX_BATCH_RANK)
        + [a.strides[-2], a.strides[-1]]
        + [b.offset]
        + padded(b_batch, MAX_BATCH_RANK)
        + [b.strides[-2], b.strides[-1]]
        + [batch]
    )
    strategy = strategy or matmul_strategy(batch, m, n, k)
    _check_loop(f"{strategy} matmul", -(-k // MATMUL_UNROLLED) if strategy == "tiled" and k > LOOP_LIMIT else k)
    if strategy == "tiled":
        if batch > MAX_GROUPS_PER_DIMENSION:
            raise ShapeError(
                f"matmul: {batch} batches exceed a grid dimension of {MAX_GROUPS_PER_DIMENSION}",
                shapes=[a.shape, b.shape],
            )
        entry, workgroups = "matmul_tiled", (-(-n // MATMUL_TILE), -(-m // MATMUL_TILE), batch)
    elif strategy == "simple":
        entry, workgroups = "matmul_simple", grid(-(-(batch * m * n) // LANES))
    else:
        raise ArgumentError(f"unknown matmul strategy {strategy!r}; the strategies are simple, tiled")
    bindings = (Binding(1, out_buffer, "read_write"), Binding(2, a.buffer, "read"), Binding(3, b.buffer, "read"))
    out = View.of_buffer(out_buffer, batch_shape + (m, n))
    return Launch(
        "matmul",
        entry,
        (),
        workgroups,
        tuple(bindings),
        pack(words),
        label=label,
        views=(("out", out), ("a", a), ("b", b)),
    )


# Rows: fused softmax, log-softmax and layer norm -------------------------------------------------


#: The roles of a row kernel's read views, bound at 2, 3 and 4: the row derivatives read two or three.
ROW_ROLES = ("source", "second", "third")


def rows(kernel, entry, source, out_buffer, eps=0.0, label="", others=()):
    """A one-workgroup-per-row kernel over the last axis of view ``source``; the output is contiguous.

    ``others`` are further views read row by row (a derivative's second and third operands): each
    has the same axes before its last as ``source``, and a last axis as long or of length 1.
    """
    views = (source,) + tuple(others)
    outer_shape, outer_strides = merge_jointly(source.shape[:-1], [view.strides[:-1] for view in views])
    _check_loop(entry, -(-source.shape[-1] // LANES))
    if len(outer_shape) > MAX_RANK:
        raise ShapeError(
            f"{entry}: {format_shape(source.shape)} keeps more than {MAX_RANK} axes before its last after merging",
            shapes=[source.shape],
        )
    count = element_count(outer_shape)
    words = (
        [count, source.shape[-1], len(outer_shape), source.offset, source.strides[-1], float(eps), 0, 0]
        + padded(outer_shape, MAX_RANK)
        + padded(outer_strides[0], MAX_RANK)
    )
    for view, strides in zip(views[1:], outer_strides[1:]):
        words += [view.offset, view.strides[-1] if view.shape[-1] > 1 else 0] + padded(strides, MAX_RANK)
    bindings = [Binding(1, out_buffer, "read_write")]
    bindings += [Binding(2 + position, view.buffer, "read") for position, view in enumerate(views)]
    return Launch(
        kernel,
        entry,
        (),
        grid(count),
        tuple(bindings),
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, source.shape)),) + tuple(zip(ROW_ROLES, views)),
    )


def softmax(source, out_buffer, label=""):
    return rows("softmax", "softmax", source, out_buffer, label=label)


def log_softmax(source, out_buffer, label=""):
    return rows("softmax", "log_softmax", source, out_buffer, label=label)


def layer_norm(source, out_buffer, eps, label=""):
    return rows("layer_norm", "layer_norm", source, out_buffer, eps=eps, label=label)


def softmax_grad(g, y, out_buffer, label=""):
    """``SoftmaxGrad(g, y)``: y (g - sum(g y)) along the rows."""
    return rows("softmax", "softmax_grad", g, out_buffer, label=label, others=(y,))


def log_softmax_grad(g, y, out_buffer, label=""):
    """``LogSoftmaxGrad(g, y)``: g - exp(y) sum(g) along the rows."""
    return rows("softmax", "log_softmax_grad", g, out_buffer, label=label, others=(y,))


def layer_norm_grad(g, normed, scale, out_buffer, label=""):
    """``LayerNormGrad(g, n, r)``: r (g - mean(g) - n mean(g n)) along the rows, ``r`` one element a row."""
    return rows("layer_norm", "layer_norm_grad", g, out_buffer, label=label, others=(normed, scale))


# Gathers ----------------------------------------------------------------------------------------


def take(values, indices, axis, out_buffer, label=""):
    """``Take(values, indices)`` along ``axis``; both views dense (values float32, indices int32)."""
    extent = values.shape[axis]
    inner = element_count(values.shape[axis + 1 :])
    out_shape = values.shape[:axis] + indices.shape + values.shape[axis + 1 :]
    count = element_count(out_shape)
    words = [count, indices.size, extent, inner]
    bindings = (
        Binding(1, out_buffer, "read_write"),
        Binding(2, indices.buffer, "read"),
        Binding(3, values.buffer, "read"),
    )
    return Launch(
        "gather",
        "take",
        (),
        grid(-(-count // LANES)),
        bindings,
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, out_shape)), ("indices", indices), ("values", values)),
    )


def one_hot(indices, depth, out_buffer, label=""):
    """``OneHot(indices)`` with ``depth`` classes; ``indices`` a dense int32 view."""
    count = indices.size * depth
    words = [count, indices.size, depth, 1]
    bindings = (Binding(1, out_buffer, "read_write"), Binding(2, indices.buffer, "read"))
    out = View.of_buffer(out_buffer, indices.shape + (depth,))
    return Launch(
        "gather",
        "one_hot",
        (),
        grid(-(-count // LANES)),
        bindings,
        pack(words),
        label=label,
        views=(("out", out), ("indices", indices)),
    )
