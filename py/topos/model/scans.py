"""The recording functions a classifier reads its scores with: ``topos.argmax(x)``,
``topos.argmin(x)``, ``topos.cumsum(x)`` and ``topos.top_k(x, k)``.

Each records its primitive (``topos.ops.scans``) and, where the public form asks
for it, reshapes around it (``keepdims``, ``axis=None``); ``top_k`` takes the
values beside the indices with differentiable ops, so that a loss on them
reaches the scores.
"""

from ..ops.registry import axis_index
from . import arguments
from . import functions as F


def _arg_extreme(opcode, x, axis, keepdims):
    tape = arguments.recorded(x, opcode.lower()).tape
    shape = x.shape
    if axis is None:
        # As numpy: the index into the flattened value.
        index = tape.apply(opcode, [F.reshape(x, (-1,))], axis=0)
        return F.reshape(index, (1,) * len(shape)) if keepdims else index
    index = tape.apply(opcode, [x], axis=axis)
    if keepdims:
        axis = axis_index(axis, shape, opcode)
        index = F.reshape(index, shape[:axis] + (1,) + shape[axis + 1 :])
    return index


def argmax(x, axis=-1, keepdims=False):
    """The index of the largest element along ``axis``, as int32 (records ``ArgMax``).

    As ``numpy.argmax``: ties go to the first index and a NaN counts as the
    largest (the first NaN wins); ``axis=None`` indexes the flattened value.
    ``keepdims=True`` keeps the axis with length 1 (a ``Reshape``). The result
    has no derivative: a gradient does not flow through it. An empty axis
    raises ``ShapeError``.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape(dtype="float32")
    logits = tape.input(np.array([[0.1, 2.0, -1.0], [3.0, 0.0, 3.0]], dtype=np.float32))
    labels = tape.input(np.array([1, 2], dtype=np.int32), dtype="int32")
    predicted = topos.argmax(logits, axis=-1)
    accuracy = topos.mean(topos.equal(predicted, labels))
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    print(run.of(predicted).numpy(), run.of(accuracy))  # [1 0] 0.5
    ```
    """
    return _arg_extreme("ArgMax", x, axis, keepdims)


def argmin(x, axis=-1, keepdims=False):
    """The index of the smallest element along ``axis``, as int32 (records ``ArgMin``).

    As ``numpy.argmin``: ties go to the first index and a NaN counts as the
    smallest (the first NaN wins); ``axis`` and ``keepdims`` as in ``argmax``.
    """
    return _arg_extreme("ArgMin", x, axis, keepdims)


def cumsum(x, axis=-1, reverse=False):
    """The running sum along ``axis`` (records ``CumSum``): element j sums elements 0..j.

    ``reverse=True`` sums from the end instead (element j sums j..n-1), as
    ``jax.lax.cumsum(x, axis, reverse=True)``. Its derivative is the running sum
    of the cotangent the other way, a ``CumSum`` too, so gradients of gradients work.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    x = tape.parameter(np.array([1.0, 2.0, 3.0, 4.0]))
    running = topos.cumsum(x)
    loss = topos.sum(running * running)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    print(run.of(running).numpy())  # [ 1.  3.  6. 10.]
    print(run.backward(loss).of(x).numpy())  # [40. 38. 32. 20.]
    ```
    """
    arguments.recorded(x, "cumsum")
    return x.tape.apply("CumSum", [x], axis=axis, reverse=bool(reverse))


def top_k(x, k):
    """The ``k`` largest elements along the last axis and their int32 indices, largest first.

    Returns ``(values, indices)``, each shaped like ``x`` with its last axis
    ``k`` long, as ``jax.lax.top_k`` and ``torch.topk``: equal values come in
    index order and a NaN counts as the largest. The indices are a ``TopK``
    node; the values pick those elements out with a one-hot mask (``OneHot``,
    ``Where``, ``Sum``), so a loss on them sends its gradient to the picked
    elements of ``x``. A ``k`` larger than the last axis raises ``ShapeError``.

    ```python
    import numpy as np
    import topos

    tape = topos.Tape()
    x = tape.parameter(np.array([[0.5, 3.0, 1.0, 3.0]]))
    values, indices = topos.top_k(x, 2)
    loss = topos.sum(values)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    print(run.of(values).numpy(), run.of(indices).numpy())  # [[3. 3.]] [[1 3]]
    print(run.backward(loss).of(x).numpy())  # [[0. 1. 0. 1.]]
    ```
    """
    tape = arguments.recorded(x, "top_k").tape
    indices = tape.apply("TopK", [x], k=k)
    n = x.shape[-1]
    picked = F.one_hot(indices, n, dtype=x.dtype)
    rows = F.broadcast_to(F.reshape(x, x.shape[:-1] + (1, n)), picked.shape)
    values = F.sum(F.where(picked, rows, 0.0), axis=-1)
    return values, indices


for _name, _function in [("argmax", argmax), ("argmin", argmin), ("cumsum", cumsum), ("top_k", top_k)]:
    globals()[_name] = arguments.all_or_nothing(_function)
del _name, _function
