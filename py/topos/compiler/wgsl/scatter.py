"""The scatter kernel's launch (``kernels/scatter.wgsl``): ``ScatterAdd`` as a gather.

Each invocation owns one output element and adds, in increasing index order, the
updates whose index points at its slot: no atomics, so a run's bits are the same
every time (and the same order of additions as numpy's ``np.add.at``).
"""

from ...errors import ShapeError
from .dispatch import LANES, LOOP_LIMIT, Binding, Launch, grid, pack
from .views import View, element_count

#: Indices the kernel's walk takes an iteration (its loop is unrolled by this much).
SCATTER_UNROLL = 8
#: The most indices one launch walks: its loop stays within LOOP_LIMIT iterations.
MAX_SCATTER_INDICES = SCATTER_UNROLL * LOOP_LIMIT


def scatter_add(updates, indices, axis, extent, out_buffer, label=""):
    """``ScatterAdd(updates, indices)`` along ``axis`` into ``extent`` slots; both views dense
    (updates float32 [outer..., indices..., inner...], indices int32)."""
    count = indices.size
    if count > MAX_SCATTER_INDICES:
        raise ShapeError(f"scatter_add: {count} indices exceed the {MAX_SCATTER_INDICES} one launch walks")
    index_rank = indices.rank
    outer_shape = updates.shape[:axis]
    inner_shape = updates.shape[axis + index_rank :]
    inner = element_count(inner_shape)
    out_shape = tuple(outer_shape) + (extent,) + tuple(inner_shape)
    total = element_count(out_shape)
    words = [total, count, extent, inner, -(-count // SCATTER_UNROLL)]
    bindings = (
        Binding(1, out_buffer, "read_write"),
        Binding(2, indices.buffer, "read"),
        Binding(3, updates.buffer, "read"),
    )
    return Launch(
        "scatter",
        "scatter_add",
        (),
        grid(-(-total // LANES)),
        bindings,
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, out_shape)), ("indices", indices), ("updates", updates)),
    )
