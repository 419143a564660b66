"""``vmap`` and the Jacobians built on it: a function of one example recorded once, emitted batched.

``topos.vmap(f)`` records ``f`` once at one example's shapes (``topos.model.bodies.trace``:
its arguments are placeholders, what it closes over is lifted in), then walks the recorded
nodes in order and emits each on the caller's tape through its op's batching rule
(``Primitive.batch``): the batch is an axis of the values, never a Python loop, so the
recording holds one node per node of ``f`` (and the moves and broadcasts the rules add),
whatever the batch's length. A node that reads no batched value is emitted as recorded,
with no rule, as JAX's ``BatchTrace`` leaves unbatched values alone; the emitted nodes are
ordinary ones, so ``grad`` of a ``vmap``, a ``vmap`` of ``grad`` (per-example gradients:
``f``'s recording holds the backward's nodes), ``vmap`` of ``vmap`` and ``jvp`` compose.

The same walk over nodes the tape already holds gives the Jacobians: ``jacobian`` batches
the reverse pass over the rows of an identity (JAX's ``jacrev``), ``jacfwd`` the forward
product ``jvp`` over its columns. Like ``grad``, both take recorded values, not functions.
"""

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, AxisError, RecordingError, ShapeError
from ..ops import lookup
from ..ops.batching import move
from ..ops.bodies import Region
from ..ops.loops import batch_loops_with, batch_steps_with
from ..ops.registry import Meta
from ..text import format_shape
from .bodies import BodyTape, local, trace
from .derivatives import TapeEmitter, vjp_values
from .nodes import recording_scope, user_source
from .tape import innermost
from .value import Value

#: Public names whose frames name no scope of their own (the scope says "vmap of f" instead).
_PUBLIC = ("vmap", "jacobian", "jacrev", "jacfwd")


def vmap(f, in_axes=0, out_axes=0):
    """``f`` applied to each example of a batch at once: a function of batched values.

    ``in_axes`` says, for each argument, the axis its examples run along (an int, negative
    from the end) or ``None`` for an argument every example shares; one int or ``None``
    applies to every argument, a tuple or list gives one an argument. ``out_axes`` places
    the batch in each output the same way (``None``: an output that must not vary along the
    batch). ``f`` takes and returns recorded values (a value, or a tuple or list of them);
    a Python number argument is passed through and takes ``None``.

    ```python
    tape = topos.Tape()
    xs = tape.input(np.ones((8, 3)), name="xs")
    w = tape.parameter(np.ones((3, 2)), name="w")
    per_row = topos.vmap(lambda x: topos.sum(topos.tanh(x @ w)))(xs)  # shape (8,)
    ```

    ``f`` is recorded once, at one example's shapes, and emitted through the batching
    rule of each op it records (``Primitive.batch``); an op without one raises
    ``MissingRuleError`` naming it. Every emitted node carries the scope ``"vmap of f"``.
    """
    if not callable(f):
        raise ArgumentTypeError(f"vmap() takes a function, got {type(f).__name__}")
    _axes_spec("in_axes", in_axes)
    _axes_spec("out_axes", out_axes)

    def batched(*args):
        return _call(f, in_axes, out_axes, args)

    batched.__name__ = f"vmap_{getattr(f, '__name__', 'f')}"
    batched.__doc__ = f.__doc__
    return batched


def _axes_spec(what, axes):
    if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
        return
    if isinstance(axes, (tuple, list)) and all(
        a is None or (isinstance(a, int) and not isinstance(a, bool)) for a in axes
    ):
        return
    raise ArgumentTypeError(f"vmap(): {what} is an int, None, or a tuple or list of them, got {axes!r}")


def _per_item(what, axes, count, noun):
    if isinstance(axes, (tuple, list)):
        if len(axes) != count:
            raise ArgumentError(f"vmap(): {what} has {len(axes)} entries for {count} {noun}", user_source())
        return list(axes)
    return [axes] * count


def _axis(what, axis, rank):
    """``axis`` of ``rank`` axes as an index in ``0..rank-1`` (None stays None), else ``AxisError``."""
    if axis is None:
        return None
    if not -rank <= axis < rank:
        raise AxisError(
            f"vmap(): {what} is {axis}, out of range for {rank} axes ({-rank}..{rank - 1})", source=user_source()
        )
    return axis % rank


def _call(f, in_axes, out_axes, args):
    axes = _per_item("in_axes", in_axes, len(args), "arguments")
    values = [a for a in args if isinstance(a, Value)]
    if not values:
        raise ArgumentTypeError("vmap(): the function is called with no recorded value to batch")
    tape = innermost([v.tape for v in values])
    if tape is None:
        raise RecordingError("vmap(): the arguments were recorded on unrelated tapes", user_source())
    tape._check_open()
    size, dims, slots = None, [], []
    for position, (arg, axis) in enumerate(zip(args, axes)):
        if not isinstance(arg, Value):
            if axis is not None:
                raise AxisError(
                    f"vmap(): argument {position} is a {type(arg).__name__}, which has no axis {axis} to map: "
                    "give it in_axes None",
                    source=user_source(),
                )
            continue
        axis = _axis(f"in_axes[{position}]", axis, len(arg.shape))
        if axis is not None:
            if size is None:
                size = arg.shape[axis]
            elif arg.shape[axis] != size:
                raise ShapeError(
                    f"vmap(): argument {position} has {arg.shape[axis]} examples along axis {axis}, "
                    f"argument {dims[0][0]} has {size}",
                    shapes=[arg.shape],
                    source=user_source(),
                )
            dims.append((position, axis))
        slots.append((position, local(tape, arg), axis))
    if size is None:
        raise AxisError("vmap(): every argument has in_axes None: there is no batch to map", source=user_source())
    metas = [Meta(_example(v.shape, axis), v.dtype) for _, v, axis in slots]

    def example(*placeholders):
        # The placeholders stand for the recorded arguments; numbers are passed as they are.
        call = list(args)
        for (position, _, _), placeholder in zip(slots, placeholders):
            call[position] = placeholder
        return f(*call)

    body = trace(example, metas, tape, name=getattr(f, "__name__", "f"))
    sources = {index: (value, axis) for index, (_, value, axis) in zip(body.arguments, slots)}
    for index, value in zip(body.captured_inputs, body.captured):
        sources[index] = (local(tape, value), None)
    scope = _scope(f"vmap of {body.name}")
    handles = batch_nodes(tape, body.nodes, sources, size, scope, reuse=False)
    outputs = [handles[i] for i in body.outputs]
    places = _per_item("out_axes", out_axes, len(outputs), "outputs")
    emitter = TapeEmitter(tape, scope, user_source())
    results = [
        _place(emitter, value, dim, place, size, n) for n, ((value, dim), place) in enumerate(zip(outputs, places))
    ]
    return body.rebuild(results)


def _example(shape, axis):
    return tuple(shape) if axis is None else tuple(shape[:axis]) + tuple(shape[axis + 1 :])


def _scope(label):
    outer = [name for name in recording_scope() if name not in _PUBLIC]
    return tuple(outer) + (label,)


def _place(e, value, dim, place, size, position):
    """An output with its batch moved to ``place`` (an unbatched one stretched along it first)."""
    if place is None:
        if dim is not None:
            raise ArgumentError(f"vmap(): output {position} varies along the batch, so its out_axes cannot be None")
        return value
    if dim is None:
        value, dim = e.broadcast(value, (size,) + tuple(value.shape)), 0
    place = _axis(f"out_axes[{position}]", place, len(value.shape))
    return move(e, value, dim, place)


def batch_nodes(tape, nodes, sources, size, scope, reuse):
    """Emit ``nodes`` on ``tape`` batched; a dict from node index to ``(value, batch axis or None)``.

    ``sources`` maps the indices of the nodes that stand for batched or shared values to
    ``(value of tape, axis)``. An operand index that is neither a source nor one of
    ``nodes`` is a node of ``tape`` itself, shared (the Jacobians walk the reverse pass the
    tape holds). With ``reuse`` a node that reads nothing batched is ``tape``'s own node of
    that index, else it is emitted again; a ``Leaf`` is appended as a leaf. Each batched
    result is checked against its node's shape with the batch inserted, so a rule that
    misplaces the batch is named at once, not three nodes later.
    """
    handles = dict(sources)
    e = TapeEmitter(tape, scope, user_source())
    for node in nodes:
        if node.index in handles:
            continue
        node_scope = scope + _inner(node.scope, scope)
        if not node.operands:
            if node.opcode != "Leaf":
                raise RecordingError(
                    f"vmap(): the function records a {node.opcode.lower()} of its own; a parameter or input "
                    "is recorded outside it and passed in (or closed over)",
                    node.source,
                )
            if reuse:
                handles[node.index] = (Value(tape, node.index), None)
            else:
                handles[node.index] = (Value(tape, tape.append_leaf(node.payload, node.source, node_scope)), None)
            continue
        operands = [handles.get(j, (None, None)) for j in node.operands]
        operands = [(Value(tape, j), None) if v is None else (v, d) for j, (v, d) in zip(node.operands, operands)]
        values, dims = [v for v, _ in operands], [d for _, d in operands]
        e.at(node)
        e.scope = node_scope
        if all(d is None for d in dims):
            value = Value(tape, node.index) if reuse else e.apply(node.opcode, values, **node.attrs)
            handles[node.index] = (value, None)
            continue
        value, dim = lookup(node.opcode).batch(e, values, dims, node.attrs)
        expected = tuple(node.shape[:dim]) + (size,) + tuple(node.shape[dim:])
        if tuple(value.shape) != expected:
            raise ShapeError(
                f"{node.opcode}'s batching rule gave {format_shape(value.shape)} where the batch of "
                f"{format_shape(node.shape)} along axis {dim} is {format_shape(expected)}",
                opcode=node.opcode,
                shapes=[value.shape],
                source=node.source,
            )
        handles[node.index] = (value, dim)
    return handles


@batch_steps_with
def batched_step(region, dims, size):
    """A ``Scan``'s step batched (``topos.ops.loops``, ``Scan.batch``): the step's nodes walked through the
    batching rules on a body of their own, the placeholders batched at axis 0 where ``dims`` says (its
    arguments, then its captured values), every output batched at axis 0."""
    placeholders = list(region.arguments) + list(region.captured)
    tape = BodyTape(region.metas(region.outputs)[0].dtype, None)
    given = []
    for meta, dim in zip(region.metas(placeholders), dims):
        given.append(tape.placeholder(Meta(meta.shape if dim is None else (size,) + meta.shape, meta.dtype)))
    sources = {index: (value, dim) for index, value, dim in zip(placeholders, given, dims)}
    handles = batch_nodes(tape, region.nodes, sources, size, (), reuse=False)
    e = TapeEmitter(tape, (), None)
    results = [_place(e, *handles[index], 0, size, n) for n, index in enumerate(region.outputs)]
    tape._sealed = True
    count = len(region.arguments)
    return Region(
        tape.nodes(), [v.index for v in given[:count]], [v.index for v in given[count:]], [v.index for v in results]
    )


@batch_loops_with
def batched_loop(cond, body, dims, size):
    """JAX's while batching rule (``topos.ops.loops.batched_loop``): the batched predicate reduced to
    "any example goes on", and a body that steps every example and keeps, by a ``Where``, the new carries
    of those whose own predicate holds."""
    carries, tested = len(body.arguments), len(cond.captured)
    metas = body.metas(body.arguments)
    cond_dims, body_dims = dims[carries : carries + tested], dims[carries + tested :]

    def placeholders(tape, metas, dims):
        return [
            tape.placeholder(Meta(m.shape if d is None else (size,) + m.shape, m.dtype)) for m, d in zip(metas, dims)
        ]

    def predicate(tape, state, captured):
        sources = {i: (v, 0) for i, v in zip(cond.arguments, state)}
        sources.update({i: (v, d) for i, v, d in zip(cond.captured, captured, cond_dims)})
        value, dim = batch_nodes(tape, cond.nodes, sources, size, (), reuse=False)[cond.outputs[0]]
        return _place(TapeEmitter(tape, (), None), value, dim, 0, size, 0)

    tape = BodyTape(metas[0].dtype, None)
    e = TapeEmitter(tape, (), None)
    state, captured = placeholders(tape, metas, [0] * carries), placeholders(tape, cond.metas(cond.captured), cond_dims)
    going = e.apply("NotEqual", [predicate(tape, state, captured), e.constant((size,), metas[0].dtype, 0.0)])
    anyone = e.apply("Max", [going], axes=(0,), keepdims=False)
    tape._sealed = True
    batched_cond = Region(tape.nodes(), [v.index for v in state], [v.index for v in captured], [anyone.index])

    tape = BodyTape(metas[0].dtype, None)
    e = TapeEmitter(tape, (), None)
    state = placeholders(tape, metas, [0] * carries)
    stepped = placeholders(tape, body.metas(body.captured), body_dims)
    captured = placeholders(tape, cond.metas(cond.captured), cond_dims)
    holds = predicate(tape, state, captured)
    sources = {i: (v, 0) for i, v in zip(body.arguments, state)}
    sources.update({i: (v, d) for i, v, d in zip(body.captured, stepped, body_dims)})
    handles = batch_nodes(tape, body.nodes, sources, size, (), reuse=False)
    results = []
    for n, (index, old) in enumerate(zip(body.outputs, state)):
        new = _place(e, *handles[index], 0, size, n)
        condition = e.broadcast(e.reshape(holds, (size,) + (1,) * (len(old.shape) - 1)), old.shape)
        results.append(e.where(condition, new, old))
    tape._sealed = True
    given = [v.index for v in stepped + captured]
    return batched_cond, Region(tape.nodes(), [v.index for v in state], given, [v.index for v in results])


def _inner(node_scope, scope):
    """The calls inside the transformed function that a node was recorded in, after the function's own
    frame (a ``softmax`` called inside ``f``): they group inside "vmap of f" in the graph."""
    inner = tuple(node_scope[1:]) if node_scope else ()
    return tuple(name for name in inner if name not in scope)


def _jacobian_scope(kind, y, x):
    label = repr(y.node.name) if y.node.name else f"{y.node.opcode.lower()} {y.index}"
    wrt = repr(x.node.name) if x.node.name else f"{x.node.opcode.lower()} {x.index}"
    return _scope(f"{kind} of {label} with respect to {wrt}")


def _check(what, y, x):
    for name, v in (("y", y), ("x", x)):
        if not isinstance(v, Value):
            raise ArgumentTypeError(f"{what}() takes recorded values, got {type(v).__name__} for {name}")
    if x.tape is not y.tape:
        raise RecordingError(f"{what}(): x was recorded on another tape than y", user_source())
    y.tape._check_open()


def _identity(e, count, shape, dtype):
    """The rows of the identity of ``count`` elements, each shaped ``shape``: a batch of ``count`` unit vectors."""
    eye = np.eye(count, dtype=dtype).reshape((count,) + tuple(shape))
    return Value(e.tape, e.tape.append_leaf(eye, e.source, e.scope))


def jacobian(y, x):
    """The Jacobian of the value ``y`` (any shape) with respect to the value ``x``: shape ``y.shape + x.shape``.

    Entry ``[i..., j...]`` is d y[i...] / d x[j...]. Reverse mode, as JAX's ``jacrev``: the
    reverse pass of ``y`` is recorded once with a placeholder cotangent and batched over
    the rows of the identity (``vmap``'s walk), so the recording does not grow with
    ``y.size``, and the products run as one batch. Suits ``y`` smaller than ``x``;
    ``jacfwd`` suits the other way round. Like ``grad``, it takes recorded values.
    """
    _check("jacobian", y, x)
    scope = _jacobian_scope("jacobian", y, x)
    tape = y.tape
    e = TapeEmitter(tape, scope, y.node.source)
    u = e.constant(y.shape, y.dtype, 0.0)
    start = len(tape)
    cotangent = vjp_values(y, [x], u, scope)[0]
    rows = _identity(e, y.size, y.shape, y.dtype)
    handles = batch_nodes(tape, tape.nodes()[start:], {u.index: (rows, 0)}, y.size, scope, reuse=True)
    value, dim = handles.get(cotangent.index, (cotangent, None))
    batched = _place(e, value, dim, 0, y.size, 0)
    return e.reshape(batched, tuple(y.shape) + tuple(x.shape))


jacrev = jacobian


def jacfwd(y, x):
    """The Jacobian of ``y`` with respect to ``x`` in forward mode (JAX's ``jacfwd``): ``y.shape + x.shape``.

    ``jvp`` along a placeholder tangent, recorded once and batched over the columns of the
    identity (``x.size`` of them): the cheap one where ``x`` is smaller than ``y``. The
    same values as ``jacobian``, up to rounding.
    """
    _check("jacfwd", y, x)
    scope = _jacobian_scope("jacfwd", y, x)
    tape = y.tape
    e = TapeEmitter(tape, scope, y.node.source)
    t = e.constant(x.shape, x.dtype, 0.0)
    start = len(tape)
    # jvp's double vjp (topos.model.derivatives.jvp), inside this scope: J t is the gradient of <J^T u, t> in u.
    u = e.constant(y.shape, y.dtype, 0.0)
    cotangent = vjp_values(y, [x], u, scope)[0]
    total = e.sum(e.mul(cotangent, t), tuple(range(len(x.shape))), False) if x.shape else e.mul(cotangent, t)
    product = vjp_values(total, [u], e.constant((), y.dtype, 1.0), scope)[0]
    columns = _identity(e, x.size, x.shape, x.dtype)
    handles = batch_nodes(tape, tape.nodes()[start:], {t.index: (columns, 0)}, x.size, scope, reuse=True)
    value, dim = handles.get(product.index, (product, None))
    batched = _place(e, value, dim, len(y.shape), x.size, 0)
    return e.reshape(batched, tuple(y.shape) + tuple(x.shape))
