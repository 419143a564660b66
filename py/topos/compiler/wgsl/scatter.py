"""The scatter kernel's launches (``kernels/scatter.wgsl``): ``ScatterAdd`` without atomics.

Each output element adds, in increasing index order, the updates whose index
points at its slot: a run's bits are the same every time, and the same as numpy's
``np.add.at``, which adds in that order. Two strategies (``scatter_strategy``):

- ``"gather"``: one launch; each output element walks every index (extent x count
  x inner work), for a small table such as the gallery's embeddings;
- ``"sorted"``: the indices, packed with their positions into u32 keys, are sorted
  on the device (a bitonic sort, one launch a stage), each slot finds its segment
  by a binary search, and each output element adds its segment's updates in order
  (count log^2 count + count x inner work), for a vocabulary's table.
"""

from ...errors import ArgumentError, ShapeError
from .dispatch import LANES, LOOP_LIMIT, Binding, Launch, grid, pack
from .views import View, element_count

#: Indices the kernel's walk takes an iteration (its loop is unrolled by this much).
SCATTER_UNROLL = 8
#: The most indices one launch walks: its loop stays within LOOP_LIMIT iterations.
MAX_SCATTER_INDICES = SCATTER_UNROLL * LOOP_LIMIT
#: The gather form runs while its work, extent x count x inner (every output element walks every index),
#: stays within this: the gallery's token embedding is 40 x 256 x 32. On lavapipe (tests/bench/kernels.py
#: --scatter) the gather form is 1.25x the sorted form's rate at [40, 32] x 256 and 0.22x at [256, 32] x 256;
#: on a GPU its one launch against the sort's dozens favours it further for small tables.
GATHER_WORK = 1 << 20
#: The sorted form packs a slot and a position into one u32 key: extent x count must stay below 2^32.
MAX_SORT_KEYS = (1 << 32) - 1


def scatter_strategy(extent, count, inner):
    """``"gather"`` for a small table (extent x count x inner within ``GATHER_WORK``), ``"sorted"`` otherwise."""
    return "gather" if extent * count * inner <= GATHER_WORK else "sorted"


def sort_length(count):
    """The bitonic sort's length: the power of two at or above ``count``."""
    return 1 << max(count - 1, 0).bit_length()


def scatter_add(updates, indices, axis, extent, out_buffer, label="", strategy=None, allocate=None):
    """``ScatterAdd(updates, indices)`` along ``axis`` into ``extent`` slots; both views dense
    (updates float32 [outer..., indices..., inner...], indices int32). Returns the launches: one
    (the gather form) or the sorted form's, whose keys and segment starts go to u32 scratch buffers
    from ``allocate(elements, dtype)``."""
    count = indices.size
    if count > MAX_SCATTER_INDICES:
        raise ShapeError(f"scatter_add: {count} indices exceed the {MAX_SCATTER_INDICES} one launch walks")
    index_rank = indices.rank
    outer_shape = updates.shape[:axis]
    inner_shape = updates.shape[axis + index_rank :]
    inner = element_count(inner_shape)
    out_shape = tuple(outer_shape) + (extent,) + tuple(inner_shape)
    total = element_count(out_shape)
    padded = sort_length(count)
    strategy = strategy or scatter_strategy(extent, count, inner)
    out = View.of_buffer(out_buffer, out_shape)

    def launch(entry, invocations, bindings, views, k=0, j=0):
        words = [total, count, extent, inner, -(-count // SCATTER_UNROLL), padded, k, j]
        groups = grid(-(-invocations // LANES))
        return Launch("scatter", entry, (), groups, tuple(bindings), pack(words), label=label, views=views)

    read_indices, read_updates = Binding(2, indices.buffer, "read"), Binding(3, updates.buffer, "read")
    if strategy == "gather":
        bindings = (Binding(1, out_buffer, "read_write"), read_indices, read_updates)
        return [launch("scatter_add", total, bindings, (("out", out), ("indices", indices), ("updates", updates)))]
    if strategy != "sorted":
        raise ArgumentError(f"unknown scatter strategy {strategy!r}; the strategies are gather, sorted")
    if extent * count > MAX_SORT_KEYS:
        raise ShapeError(f"scatter_add: {extent} slots x {count} indices do not fit the sort's u32 keys")
    keys = View.of_buffer(allocate(padded, "uint32"), (padded,))
    starts = View.of_buffer(allocate(extent + 1, "uint32"), (extent + 1,))
    write_keys, write_starts = Binding(4, keys.buffer, "read_write"), Binding(5, starts.buffer, "read_write")
    launches = [launch("scatter_keys", padded, (read_indices, write_keys), (("out", keys), ("indices", indices)))]
    k = 2
    while k <= padded:
        j = k // 2
        while j >= 1:
            launches.append(launch("scatter_sort_step", padded, (write_keys,), (("out", keys),), k, j))
            j //= 2
        k *= 2
    launches.append(launch("scatter_starts", extent + 1, (write_keys, write_starts), (("out", starts), ("keys", keys))))
    bindings = (Binding(1, out_buffer, "read_write"), read_updates, write_keys, write_starts)
    views = (("out", out), ("updates", updates), ("keys", keys), ("starts", starts))
    launches.append(launch("scatter_add_sorted", total, bindings, views))
    return launches
