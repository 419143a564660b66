"""The launches of the scan kernels (``kernels/scan.wgsl``): ArgMax, ArgMin, CumSum, TopK and the
running folds (CumProd, CumMax, CumMin, LogCumSumExp).

Each reads a view whose last axis is the scanned one (the selector moves the axis
there by re-viewing its operand) and writes a contiguous result: one int32 index a
row (``arg_extreme``), the running sums row by row (``cumsum``), or k int32
indices a row (``top_k``). The parameter words follow the layout in the kernel
file's header, the row kernels' (``row_start`` in ``kernels/common.wgsl``).
"""

from ...errors import ShapeError
from ...text import format_shape
from .dispatch import LANES, LOOP_LIMIT, MAX_RANK, Binding, Launch, grid, merge_jointly, pack, padded
from .views import View, element_count

#: The scan kernel's entry for each arg-extreme opcode.
ARG_ENTRIES = {"ArgMax": "argmax", "ArgMin": "argmin"}
#: Rows up to this long take the serial entries, one invocation a row, however few they are (as
#: the reduce kernel's ``SERIAL_TERMS``).
SERIAL_LENGTH = 32
#: From this many rows every row takes one invocation (up to the loop limit): measured on lavapipe,
#: a workgroup a row is 2 to 40 times slower there from 8 rows on, at lengths 8 to 8192 (its lanes
#: wait at six barriers a chunk), and faster only for one to four long rows.
SERIAL_ROWS = 8


def scan_strategy(rows, length):
    """Which entries scan ``rows`` rows of ``length``: "serial" (one invocation a row) or
    "workgroup" (one workgroup a row, its 64 lanes sharing the row)."""
    if length <= SERIAL_LENGTH or (rows >= SERIAL_ROWS and length <= LOOP_LIMIT):
        return "serial"
    return "workgroup"


def _groups(strategy):
    return (lambda rows: rows) if strategy == "workgroup" else (lambda rows: -(-rows // LANES))


def _rows(entry, source):
    """The row count and the words every scan entry reads: rows, length, outer rank, offset, stride."""
    outer_shape, (outer_strides,) = merge_jointly(source.shape[:-1], [source.strides[:-1]])
    if len(outer_shape) > MAX_RANK:
        raise ShapeError(
            f"{entry}: {format_shape(source.shape)} keeps more than {MAX_RANK} axes before its last after merging",
            shapes=[source.shape],
        )
    rows = element_count(outer_shape)
    words = [rows, source.shape[-1], len(outer_shape), source.offset, source.strides[-1]]
    return rows, words, padded(outer_shape, MAX_RANK) + padded(outer_strides, MAX_RANK)


def _launch(entry, source, out_buffer, out_shape, extra, groups, label, fold=0):
    rows, words, outer = _rows(entry, source)
    words = words + [extra, fold, 0] + outer
    out_binding = 1 if entry.startswith(("cumsum", "cumulative")) else 3
    bindings = (Binding(out_binding, out_buffer, "read_write"), Binding(2, source.buffer, "read"))
    return Launch(
        "scan",
        entry,
        (),
        grid(groups(rows)),
        bindings,
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, out_shape)), ("source", source)),
    )


def arg_extreme(opcode, source, out_buffer, strategy=None, label=""):
    """``ArgMax`` or ``ArgMin`` along the last axis of view ``source``: one int32 index a row."""
    strategy = strategy or scan_strategy(_rows(opcode, source)[0], source.shape[-1])
    entry = ARG_ENTRIES[opcode] + ("_serial" if strategy == "serial" else "")
    return _launch(entry, source, out_buffer, source.shape[:-1], 0, _groups(strategy), label)


def cumsum(source, out_buffer, reverse=False, strategy=None, label=""):
    """The running sum along the last axis of view ``source`` (from the end with ``reverse``)."""
    strategy = strategy or scan_strategy(_rows("cumsum", source)[0], source.shape[-1])
    entry = "cumsum" + ("_serial" if strategy == "serial" else "")
    return _launch(entry, source, out_buffer, source.shape, int(bool(reverse)), _groups(strategy), label)


def cumulative(fold, source, out_buffer, reverse=False, strategy=None, label=""):
    """The running fold number ``fold`` (1 product, 2 maximum, 3 minimum, 4 log-sum-exp: the kernel's
    word 6) along the last axis of view ``source``, from the end with ``reverse``: as ``cumsum``."""
    strategy = strategy or scan_strategy(_rows("cumulative", source)[0], source.shape[-1])
    entry = "cumulative" + ("_serial" if strategy == "serial" else "")
    return _launch(entry, source, out_buffer, source.shape, int(bool(reverse)), _groups(strategy), label, fold)


def top_k(source, k, out_buffer, label=""):
    """The int32 indices of the ``k`` largest along the last axis of view ``source``, largest first."""
    length = source.shape[-1]
    shape = source.shape[:-1] + (k,)
    return _launch("top_k", source, out_buffer, shape, k, lambda rows: -(-rows * length // LANES), label)


def index_to_float(indices, out_buffer, label=""):
    """``IndexToFloat``: the dense int32 view ``indices`` as float32 (``kernels/gather.wgsl``)."""
    count = indices.size
    bindings = (Binding(1, out_buffer, "read_write"), Binding(2, indices.buffer, "read"))
    return Launch(
        "gather",
        "index_to_float",
        (),
        grid(-(-count // LANES)),
        bindings,
        pack([count, count, 0, 0]),
        label=label,
        views=(("out", View.of_buffer(out_buffer, indices.shape)), ("indices", indices)),
    )
