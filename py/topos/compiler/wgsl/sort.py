"""The sort kernel's launches (``kernels/sort.wgsl``): Sort, Argsort, TakeAlongAxis,
ScatterAddAlongAxis and SearchSorted.

Each reads dense operands whose sorted or indexed axis is last (the selector moves it there
and back, ``LaunchHelpers.sort`` and its neighbours) and writes a dense result. A sort runs
one workgroup a row, all of a bitonic network's stages between barriers in workgroup memory,
for a row of up to ``MAX_SORT_LENGTH``; a longer row runs the same network through storage,
one launch a stage (log2(n) (log2(n) + 1) / 2 of them: 66 for 2^11, 210 for 2^20), and is
declined only where its padded keys outgrow one binding. The scatter walks every index of its row for each slot, so a row holds at most
``LOOP_LIMIT`` indices.
"""

from .dispatch import LANES, LOOP_LIMIT, Binding, Launch, grid, pack
from .views import View, element_count

#: The longest row one workgroup sorts: its values and positions fill 8 KB of workgroup memory
#: (WebGPU promises 16 KB), and its 55 stages of 16 compare-exchanges a lane stay far inside a loop's
#: budget. A longer row takes the network through storage, one launch a stage ("stages").
MAX_SORT_LENGTH = 1024
#: The most padded keys the staged sort holds: each of its two scratch buffers is one binding, within
#: WebGPU's default maxStorageBufferBindingSize (128 MiB of 4-byte words).
MAX_STAGED_KEYS = (128 << 20) // 4


def sort_length(n):
    """The bitonic network's length: the power of two at or above ``n``."""
    return 1 << max(n - 1, 0).bit_length()


def sort_strategy(n):
    """Which way rows of ``n`` are sorted: "workgroup" (in one workgroup's memory, one launch) up to
    ``MAX_SORT_LENGTH``, else "stages" (through storage, one launch a stage)."""
    return "workgroup" if n <= MAX_SORT_LENGTH else "stages"


def sort_declines(rows, n):
    """Why the sort entries cannot sort ``rows`` rows of ``n`` (a sentence), or None."""
    if sort_strategy(n) == "stages" and rows * sort_length(n) > MAX_STAGED_KEYS:
        keys = rows * sort_length(n)
        return f"{rows} rows padded to {sort_length(n)}: {keys} keys exceed the {MAX_STAGED_KEYS} one binding holds"
    return None


def _launch(entry, invocations, bindings, words, views, label, per_row=False):
    groups = invocations if per_row else -(-invocations // LANES)
    return Launch("sort", entry, (), grid(groups), tuple(bindings), pack(words), label=label, views=views)


def sort_rows(source, out_buffer, descending, indices=False, label="", scratch=None):
    """The launches sorting the rows of the dense view ``source`` (its last axis): their values into the
    float32 ``out_buffer`` or, with ``indices``, their int32 positions. A row longer than
    ``MAX_SORT_LENGTH`` is sorted through two scratch buffers of rows x padded words from
    ``scratch(elements, dtype)``, one launch a stage."""
    n = source.shape[-1]
    rows, padded = element_count(source.shape[:-1]), sort_length(n)
    words = [rows, n, padded, int(bool(descending))]
    out = View.of_buffer(out_buffer, source.shape)
    at = 2 if indices else 1
    write_out, read_source = Binding(at, out_buffer, "read_write"), Binding(3, source.buffer, "read")
    if sort_strategy(n) == "workgroup":
        entry = "sort_indices" if indices else "sort_values"
        views = (("out", out), ("source", source))
        return [_launch(entry, rows, (write_out, read_source), words, views, label, per_row=True)]
    keys = View.of_buffer(scratch(rows * padded, "float32"), (rows, padded))
    places = View.of_buffer(scratch(rows * padded, "uint32"), (rows, padded))
    write_keys, write_places = Binding(6, keys.buffer, "read_write"), Binding(7, places.buffer, "read_write")
    total = rows * padded
    launches = [
        _launch(
            "sort_load", total, (read_source, write_keys, write_places), [total] + words[1:], (("out", keys),), label
        )
    ]
    k = 2
    while k <= padded:
        j = k // 2
        while j >= 1:
            stage = [total] + words[1:] + [0, 0, 0, k, j]
            launches.append(_launch("sort_stage", total, (write_keys, write_places), stage, (("out", keys),), label))
            j //= 2
        k *= 2
    entry = "sort_store_indices" if indices else "sort_store_values"
    store = [rows * n] + words[1:]
    bindings = (write_out, write_keys) if not indices else (write_out, write_places)
    launches.append(_launch(entry, rows * n, bindings, store, (("out", out), ("keys", keys)), label))
    return launches


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
