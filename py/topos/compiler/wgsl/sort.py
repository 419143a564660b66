"""The sort kernel's launches (``kernels/sort.wgsl``): Sort, Argsort, TakeAlongAxis,
ScatterAddAlongAxis and SearchSorted.

Each reads dense operands whose sorted or indexed axis is last (the selector moves it there
and back, ``LaunchHelpers.sort`` and its neighbours) and writes a dense result. A sort runs
one workgroup a row, all of a bitonic network's stages between barriers in workgroup memory,
so a row is at most ``MAX_SORT_LENGTH`` long; a longer one is declined (a multi-launch sort,
one launch a stage as ``scatter.wgsl``'s, would take it, at 55 launches for 2^10 and more
beyond). The scatter walks every index of its row for each slot, so a row holds at most
``LOOP_LIMIT`` indices.
"""

from .dispatch import LANES, LOOP_LIMIT, Binding, Launch, grid, pack
from .views import View, element_count

#: The longest row the sort entries take: its values and positions fill 8 KB of workgroup memory
#: (WebGPU promises 16 KB), and its 55 stages of 16 compare-exchanges a lane stay far inside a loop's budget.
MAX_SORT_LENGTH = 1024


def sort_length(n):
    """The bitonic network's length: the power of two at or above ``n``."""
    return 1 << max(n - 1, 0).bit_length()


def sort_declines(n):
    """Why the sort entries cannot sort rows of ``n`` (a sentence), or None."""
    if n > MAX_SORT_LENGTH:
        return f"rows of {n} elements: the bitonic sort holds a row of at most {MAX_SORT_LENGTH} in workgroup memory"
    return None


def _launch(entry, invocations, bindings, words, views, label, per_row=False):
    groups = invocations if per_row else -(-invocations // LANES)
    return Launch("sort", entry, (), grid(groups), tuple(bindings), pack(words), label=label, views=views)


def sort_rows(source, out_buffer, descending, indices=False, label=""):
    """The rows of the dense view ``source`` (its last axis) sorted: their values into the float32
    ``out_buffer`` or, with ``indices``, their int32 positions."""
    n = source.shape[-1]
    rows = element_count(source.shape[:-1])
    words = [rows, n, sort_length(n), int(bool(descending))]
    out = View.of_buffer(out_buffer, source.shape)
    entry, at = ("sort_indices", 2) if indices else ("sort_values", 1)
    bindings = (Binding(at, out_buffer, "read_write"), Binding(3, source.buffer, "read"))
    return _launch(entry, rows, bindings, words, (("out", out), ("source", source)), label, per_row=True)


def take_along(values, indices, out_buffer, label=""):
    """``values[r, indices[r, t]]`` for dense views values [rows, n] and int32 indices [rows, m]."""
    total = indices.size
    words = [total, values.shape[-1], 0, 0, indices.shape[-1]]
    out = View.of_buffer(out_buffer, indices.shape)
    bindings = (
        Binding(1, out_buffer, "read_write"),
        Binding(3, values.buffer, "read"),
        Binding(4, indices.buffer, "read"),
    )
    return _launch(
        "take_along", total, bindings, words, (("out", out), ("values", values), ("indices", indices)), label
    )


def scatter_along(updates, indices, extent, out_buffer, label=""):
    """The dense views updates and int32 indices [rows, m] summed into [rows, extent] at the indices."""
    shape = updates.shape[:-1] + (extent,)
    total = element_count(shape)
    words = [total, 0, 0, 0, updates.shape[-1], extent]
    out = View.of_buffer(out_buffer, shape)
    bindings = (
        Binding(1, out_buffer, "read_write"),
        Binding(3, updates.buffer, "read"),
        Binding(4, indices.buffer, "read"),
    )
    views = (("out", out), ("updates", updates), ("indices", indices))
    return _launch("scatter_along", total, bindings, words, views, label)


def search_sorted(sorted_values, values, right, out_buffer, label=""):
    """For each element of the dense view ``values``, how many of the dense sorted vector go before it."""
    total = values.size
    words = [total, sorted_values.shape[0], 0, 0, 0, 0, int(bool(right))]
    out = View.of_buffer(out_buffer, values.shape)
    bindings = (
        Binding(2, out_buffer, "read_write"),
        Binding(3, sorted_values.buffer, "read"),
        Binding(5, values.buffer, "read"),
    )
    views = (("out", out), ("sorted", sorted_values), ("values", values))
    return _launch("search_sorted", total, bindings, words, views, label)


def scatter_declines(count):
    """Why the scatter entry cannot walk ``count`` indices a row (a sentence), or None."""
    if count > LOOP_LIMIT:
        return f"{count} indices a row: the scatter walks at most {LOOP_LIMIT} in one loop"
    return None
