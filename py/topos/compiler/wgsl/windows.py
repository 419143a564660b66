"""The launch of the ``window`` kernel family (``kernels/window.wgsl``): pooling and max pooling's derivatives.

One builder for the four entries (``window_sum``, ``window_max``, ``select_gather``,
``select_scatter_add``): one invocation an output element, every view read through
its offset and strides, x's axes padded to the kernel's six at the front (extent 1,
window 1, stride 1, no padding), as the kernel file's header lays the words out.
"""

from ...errors import ShapeError
from ...text import format_shape
from .dispatch import LANES, LOOP_LIMIT, Binding, Launch, grid, pack
from .views import View, element_count

#: The axes the kernel's parameter block holds.
AXES = 6
#: The second view's role, by entry: t (shaped like x) for the gather, g (the grid's) for the scatter.
SECOND_ROLES = {"select_gather": "t", "select_scatter_add": "g"}


def window_grid(shape, window, strides, padding):
    return tuple((n + lo + hi - k) // s + 1 for n, k, s, (lo, hi) in zip(shape, window, strides, padding))


def _leading(values, fill):
    values = list(values)
    return [fill] * (AXES - len(values)) + values


def window(entry, attrs, x, out_buffer, second=None, label=""):
    """The ``window`` kernel's ``entry`` over view ``x`` with the node's ``window``, ``strides`` and
    ``padding``; ``second`` is t (``select_gather``) or g (``select_scatter_add``)."""
    rank = len(x.shape)
    if rank > AXES:
        raise ShapeError(f"{entry}: {format_shape(x.shape)} has more than {AXES} axes", shapes=[x.shape])
    grid_shape = window_grid(x.shape, attrs["window"], attrs["strides"], attrs["padding"])
    taps = element_count(attrs["window"])
    out_shape = x.shape if entry == "select_scatter_add" else grid_shape
    count = element_count(out_shape)
    if taps > LOOP_LIMIT:
        raise ShapeError(f"{entry}: a window of {taps} elements exceeds the limit of {LOOP_LIMIT}", shapes=[x.shape])
    words = (
        [count, taps, x.offset, second.offset if second is not None else 0, 0, 0, 0, 0]
        + _leading(x.shape, 1)
        + _leading(grid_shape, 1)
        + _leading(attrs["window"], 1)
        + _leading(attrs["strides"], 1)
        + _leading((lo for lo, _ in attrs["padding"]), 0)
        + _leading(x.strides, 0)
        + _leading(second.strides if second is not None else (), 0)
    )
    bindings = [Binding(1, out_buffer, "read_write"), Binding(2, x.buffer, "read")]
    views = [("out", View.of_buffer(out_buffer, out_shape)), ("x", x)]
    if second is not None:  # window_sum and window_max read no binding 3: their layout leaves it out
        bindings.append(Binding(3, second.buffer, "read"))
        views.append((SECOND_ROLES[entry], second))
    return Launch(
        "window",
        entry,
        (),
        grid(-(-count // LANES)),
        tuple(bindings),
        pack(words),
        label=label,
        views=tuple(views),
    )
