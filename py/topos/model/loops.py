"""``topos.scan`` and ``topos.fori_loop``: a loop recorded once, as one ``Scan`` node holding its step.

JAX's signatures: ``scan(f, init, xs, length=None, reverse=False)`` with ``f(carry, x) ->
(carry, y)``, and ``fori_loop(lower, upper, body_fun, init_val)``. The step is recorded
once (``topos.model.bodies.trace``), whatever the trip count, and the node's packed value is
cut into the final carry and the stacked ys (``topos.ops.loops``). The rule that records a
step's derivative as a body (the backward ``Scan``'s step) is here, where the tape and the
reverse scan are, and ``topos.ops.loops`` calls it through ``derive_steps_with``.
"""

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..ops.bodies import Region, inline
from ..ops.branches import derive_branches_with
from ..ops.emitter import Emitter
from ..ops.loops import derive_steps_with, unpack
from ..ops.registry import Meta
from ..ops.whiles import derive_whiles_with
from ..text import format_shape
from .autodiff import ancestors, descendants, reverse_scan
from .bodies import BodyTape, local, trace
from .derivatives import TapeEmitter
from .nodes import user_source
from .tape import innermost
from .value import Value


class _Recording(Emitter):
    """Applies ops to values through the tape they are on (the tape's own checks and lines)."""

    def apply(self, opcode, operands, **attrs):
        return operands[0].tape.apply(opcode, operands, **attrs)

    def shape(self, handle):
        return handle.shape


def scan(f, init, xs=None, length=None, reverse=False):
    """Loop ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``: ``(final carry, stacked ys)``.

    ``init`` and the carry ``f`` returns are one value or a tuple or list of them (nested),
    each keeping its shape and dtype from step to step; ``xs`` likewise, every one of the
    same leading length, or None with ``length`` steps (``f`` then gets ``x = None``); ``y``
    may be None. ``reverse=True`` walks ``xs`` from the end and writes ``ys`` from the end,
    as JAX's. Recorded as one ``Scan`` node whatever the length (the step held once as its
    body), differentiable to any order; see docs/transformations.md.

    ```python
    def step(h, x):
        h = topos.tanh(h @ w + x)
        return h, h.sum()
    h, ys = topos.scan(step, h0, xs)   # xs: [steps, n]
    ```
    """
    if not callable(f):
        raise ArgumentTypeError(f"scan() takes a function f(carry, x), got {type(f).__name__}")
    carried, carry_structure = _flatten(init, "init")
    stacked, xs_structure = _flatten(xs, "xs")
    values = [v for v in carried + stacked if isinstance(v, Value)]
    if not values:
        raise ArgumentTypeError("scan() needs a recorded value among init or xs (it records on their tape)")
    tape = innermost([v.tape for v in values])
    carried = [v if isinstance(v, Value) else _leaf(tape, v) for v in carried]
    for x in stacked:
        if not isinstance(x, Value) or not x.shape:
            raise ArgumentTypeError("scan(): each of xs is a recorded value with a leading axis to loop over")
    lengths = {x.shape[0] for x in stacked}
    if length is not None:
        lengths.add(length)
    if len(lengths) != 1:
        found = "no xs and no length" if not lengths else f"leading lengths {sorted(lengths)}"
        raise ShapeError(f"scan() needs one length for xs and length=, got {found}", source=user_source())
    (steps,) = lengths
    metas = [Meta(v.shape, v.dtype) for v in carried] + [Meta(x.shape[1:], x.dtype) for x in stacked]
    returned = {}

    def step(*placeholders):
        carry = _rebuild(carry_structure, iter(placeholders[: len(carried)]))
        x = _rebuild(xs_structure, iter(placeholders[len(carried) :]))
        result = f(carry, x)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise ArgumentTypeError(f"scan(): {_named(f)} must return a pair (carry, y)")
        new_carry, new_structure = _flatten(result[0], "the carry")
        if new_structure != carry_structure:
            raise ShapeError(f"scan(): {_named(f)} returns a carry shaped otherwise than init", source=user_source())
        ys, returned["ys"] = _flatten(result[1], "y")
        return tuple(new_carry) + tuple(ys)

    body = trace(step, metas, tape, name=getattr(f, "__name__", "f"))
    region = Region(body.nodes, body.arguments, body.captured_inputs, body.outputs)
    _check_carries(f, region, carried)
    captured = [local(tape, v) for v in body.captured]
    attrs = dict(body=region, length=steps, carries=len(carried), reverse=bool(reverse))
    packed = tape.apply("Scan", carried + stacked + captured, **attrs)
    results = unpack(_Recording(), packed, attrs)
    final = _rebuild(carry_structure, iter(results[: len(carried)]))
    return final, _rebuild(returned["ys"], iter(results[len(carried) :]))


def fori_loop(lower, upper, body_fun, init_val):
    """``body_fun(i, val)`` for ``i`` from ``lower`` up to ``upper - 1``: the last ``val`` (JAX's ``fori_loop``).

    ``lower`` and ``upper`` are Python integers (the trip count is fixed when recording, as
    for JAX's reverse-differentiable ``fori_loop``); ``i`` is a rank-0 value of the tape's
    float dtype (JAX's is an int32), exact up to 2**24 in float32. A ``scan`` with no xs
    that carries ``(i, val)``: one ``Scan`` node, differentiable as ``scan`` is.
    """
    for bound in (lower, upper):
        if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
            raise ArgumentTypeError(f"fori_loop() takes integer bounds, got {type(bound).__name__}")
    if upper < lower:
        raise ArgumentError(f"fori_loop(): upper {upper} is below lower {lower}")
    carried, _ = _flatten(init_val, "init_val")
    values = [v for v in carried if isinstance(v, Value)]
    if not values:
        raise ArgumentTypeError("fori_loop() needs a recorded value in init_val (it records on its tape)")
    tape = innermost([v.tape for v in values])
    start = _leaf(tape, float(lower))

    def step(carry, _):
        i, val = carry
        return (i + 1.0, body_fun(i, val)), None

    (_, final), _ = scan(step, (start, init_val), None, length=int(upper) - int(lower))
    return final


def _leaf(tape, number):
    if not isinstance(number, (int, float, np.number)) or isinstance(number, bool):
        raise ArgumentTypeError(f"a loop's carry is a recorded value or a number, got {type(number).__name__}")
    return tape.leaf(number)


def _named(f):
    code = getattr(f, "__code__", None)
    where = f" (line {code.co_firstlineno} of {code.co_filename})" if code else ""
    return f"{getattr(f, '__name__', 'the function')}{where}"


def _check_carries(f, region, carried, what="scan"):
    """Each carry the step returns keeps the shape and dtype it came in with; else ``ShapeError`` naming it."""
    for position, (value, output) in enumerate(zip(carried, region.metas(region.outputs))):
        if (value.shape, value.dtype) != (output.shape, output.dtype):
            raise ShapeError(
                f"{what}(): {_named(f)} returns carry {position} as {format_shape(output.shape)} {output.dtype}, "
                f"where it came in as {format_shape(value.shape)} {value.dtype}: a carry keeps its shape and dtype",
                shapes=[value.shape, output.shape],
                source=user_source(),
            )


def _flatten(tree, what):
    """``(leaves, structure)`` of a value, number, None, or tuple or list of them (nested)."""
    if tree is None:
        return [], None
    if isinstance(tree, (Value, int, float, np.number)) and not isinstance(tree, bool):
        return [tree], "leaf"
    if isinstance(tree, (tuple, list)):
        leaves, parts = [], []
        for item in tree:
            found, part = _flatten(item, what)
            leaves.extend(found)
            parts.append(part)
        return leaves, (type(tree), tuple(parts))
    raise ArgumentTypeError(
        f"a loop's {what} is recorded values (or tuples and lists of them), got {type(tree).__name__}"
    )


def _rebuild(structure, items):
    if structure is None:
        return None
    if structure == "leaf":
        return next(items)
    kind, parts = structure
    return kind(_rebuild(part, items) for part in parts)


@derive_steps_with
def step_derivative(region, carries, wanted_xs, wanted_captured):
    """The backward step of a ``Scan`` (``topos.ops.loops``): the forward step re-applied to its saved
    carry, then the reverse scan over its nodes from the outputs' cotangents, recorded as a body.

    Arguments: the carries' cotangents, the running sums of the wanted captured values' cotangents,
    the step's carry, its xs, its ys' cotangents; captured: the forward's captured values.
    Returns the cotangents of the carry it started from, the sums with this step's added, and the
    wanted xs' cotangents (the backward's ys)."""
    arguments, captured = region.metas(region.arguments), region.metas(region.captured)
    outputs = region.metas(region.outputs)
    tape = BodyTape(outputs[0].dtype, None)
    emitter = TapeEmitter(tape, (), None)

    def placeholders(metas):
        return [tape.placeholder(meta) for meta in metas]

    carry_cotangents = placeholders(arguments[:carries])
    sums = placeholders([meta for meta, want in zip(captured, wanted_captured) if want])
    step_arguments = placeholders(arguments)
    y_cotangents = placeholders(outputs[carries:])
    constants = placeholders(captured)
    found = _reverse(region, emitter, step_arguments, constants, carry_cotangents + y_cotangents)
    kept_xs = [a for a, want in zip(region.arguments[carries:], wanted_xs) if want]
    kept_captured = [c for c, want in zip(region.captured, wanted_captured) if want]

    def cotangent(index):
        return _cotangent(region, emitter, found, index)

    results = [cotangent(index) for index in region.arguments[:carries]]
    results += [emitter.add(total, cotangent(index)) for total, index in zip(sums, kept_captured)]
    results += [cotangent(index) for index in kept_xs]
    tape._sealed = True
    given = carry_cotangents + sums + step_arguments + y_cotangents
    return Region(tape.nodes(), [v.index for v in given], [v.index for v in constants], [v.index for v in results])


def _reverse(region, emitter, arguments, captured, output_cotangents):
    """The body's nodes applied through ``emitter`` to ``arguments`` and ``captured`` (values of its tape),
    then the reverse scan over them from each output's cotangent: a dict from body node index to its
    cotangent (for the arguments and captured placeholders among others)."""
    sources = dict(zip(region.arguments, arguments))
    sources.update(zip(region.captured, captured))
    handles = inline(emitter, region.nodes, sources)
    seeds = {}
    for index, cotangent in zip(region.outputs, output_cotangents):
        seeds[index] = cotangent if index not in seeds else emitter.add(seeds[index], cotangent)
    wrt = [i for i in region.arguments + region.captured if region.nodes[i].dtype in ("float32", "float64")]
    up = bytearray(len(region.nodes))
    for index in seeds:
        up = bytearray(a | b for a, b in zip(up, ancestors(region.nodes, index)))
    needed = bytearray(a & b for a, b in zip(up, descendants(region.nodes, wrt)))
    target = max(seeds)
    seed = seeds.pop(target)
    return reverse_scan(region.nodes, target, emitter, handles, needed, seed, seeds=seeds)


def _cotangent(region, emitter, found, index):
    """The cotangent of body node ``index`` from ``found``, zeros of its shape where it has none."""
    meta = region.metas([index])[0]
    value = found.get(index)
    return emitter.constant(meta.shape, meta.dtype, 0.0) if value is None else emitter.broadcast(value, meta.shape)


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` where the rank-0 ``pred`` is nonzero when the network runs, else
    ``false_fun(*operands)`` (JAX's ``lax.cond``): both recorded once, as one ``Cond`` node.

    ``pred`` is a rank-0 float value (``topos.less(a, b)`` gives one); a Python bool or number
    chooses the branch now, recording only it. Both functions take the operands and return
    values (or a tuple or list of them) of the same shapes and one float dtype. Differentiable
    (the chosen branch's derivative, by a second ``Cond``), to any order.
    """
    if not isinstance(pred, Value):
        if isinstance(pred, (bool, int, float, np.number)):
            return (true_fun if pred else false_fun)(*operands)
        raise ArgumentTypeError(f"cond() takes a rank-0 recorded value or a number as pred, got {type(pred).__name__}")
    if pred.shape != () or pred.dtype not in ("float32", "float64"):
        raise ShapeError(
            f"cond(): pred must be a rank-0 float value, got {format_shape(pred.shape)} {pred.dtype}",
            shapes=[pred.shape],
            source=user_source(),
        )
    for operand in operands:
        if not isinstance(operand, Value):
            raise ArgumentTypeError(f"cond() takes recorded values as operands, got {type(operand).__name__}")
    tape = innermost([pred.tape] + [v.tape for v in operands])
    metas = [Meta(v.shape, v.dtype) for v in operands]
    structures = {}

    def branch(fn, key):
        def recorded(*placeholders):
            flat, structures[key] = _flatten(fn(*placeholders), "output")
            return tuple(flat)

        recorded.__name__ = getattr(fn, "__name__", key)
        return trace(recorded, metas, tape)

    bodies = [branch(true_fun, "true_fun"), branch(false_fun, "false_fun")]
    regions = [Region(b.nodes, b.arguments, b.captured_inputs, b.outputs) for b in bodies]
    shapes = [[(m.shape, m.dtype) for m in r.metas(r.outputs)] for r in regions]
    if structures["true_fun"] != structures["false_fun"] or shapes[0] != shapes[1]:
        described = [", ".join(f"{format_shape(s)} {d}" for s, d in found) for found in shapes]
        raise ShapeError(
            f"cond(): the branches return different values: ({described[0]}) and ({described[1]})",
            source=user_source(),
        )
    captured = [local(tape, v) for b in bodies for v in b.captured]
    packed = tape.apply("Cond", [pred, *operands, *captured], true_body=regions[0], false_body=regions[1])
    results, offset, emitter = [], 0, _Recording()
    for meta in regions[0].metas(regions[0].outputs):
        results.append(emitter.reshape(emitter.slice(packed, (offset,), (offset + meta.size,), (1,)), meta.shape))
        offset += meta.size
    return _rebuild(structures["true_fun"], iter(results))


@derive_branches_with
def branch_derivative(region, others, first):
    """The vjp of one branch of a ``Cond`` as a body (``topos.ops.branches.branch_derivative``)."""
    outputs = region.metas(region.outputs)
    tape = BodyTape(outputs[0].dtype, None)
    emitter = TapeEmitter(tape, (), None)
    output_cotangents = [tape.placeholder(meta) for meta in outputs]
    arguments = [tape.placeholder(meta) for meta in region.metas(region.arguments)]
    constants = [tape.placeholder(meta) for meta in region.metas(region.captured)]
    found = _reverse(region, emitter, arguments, constants, output_cotangents)

    def floats(indices):
        return [i for i in indices if region.nodes[i].dtype in ("float32", "float64")]

    own = [_cotangent(region, emitter, found, i) for i in floats(region.captured)]
    zeros = [emitter.constant(m.shape, m.dtype, 0.0) for m in others if m.dtype in ("float32", "float64")]
    results = [_cotangent(region, emitter, found, i) for i in floats(region.arguments)]
    results += own + zeros if first else zeros + own
    tape._sealed = True
    given = output_cotangents + arguments
    return Region(tape.nodes(), [v.index for v in given], [v.index for v in constants], [v.index for v in results])


def while_loop(cond_fun, body_fun, init_val):
    """``body_fun`` applied to the carry while ``cond_fun(carry)`` is nonzero when the network runs: the
    last carry (JAX's ``lax.while_loop``). Both recorded once, as one ``While`` node.

    ``init_val`` and what ``body_fun`` returns are a value or a tuple or list of values (nested), each
    keeping its shape and one float dtype; ``cond_fun`` returns a rank-0 float value (a comparison).
    The trip count is known only when the loop runs. Differentiable, unlike JAX's in reverse mode, by
    recomputation: N (N + 1) / 2 body runs for N trips and no memory growing with N
    (``topos.ops.whiles``); a loop with a trip count known when recording is a ``fori_loop``.
    """
    carried, structure = _flatten(init_val, "init_val")
    values = [v for v in carried if isinstance(v, Value)]
    if not values:
        raise ArgumentTypeError("while_loop() needs a recorded value in init_val (it records on its tape)")
    tape = innermost([v.tape for v in values])
    carried = [v if isinstance(v, Value) else _leaf(tape, v) for v in carried]
    metas = [Meta(v.shape, v.dtype) for v in carried]

    def predicate(*placeholders):
        result = cond_fun(_rebuild(structure, iter(placeholders)))
        if not isinstance(result, Value) or result.shape != () or result.dtype not in ("float32", "float64"):
            raise ShapeError(
                f"while_loop(): {_named(cond_fun)} must return a rank-0 float value (a comparison gives one)",
                source=user_source(),
            )
        return result

    def step(*placeholders):
        new, new_structure = _flatten(body_fun(_rebuild(structure, iter(placeholders))), "the carry")
        if new_structure != structure:
            raise ShapeError(
                f"while_loop(): {_named(body_fun)} returns a carry shaped otherwise than init_val", source=user_source()
            )
        return tuple(new)

    cond = trace(predicate, metas, tape, name=getattr(cond_fun, "__name__", "cond_fun"))
    body = trace(step, metas, tape, name=getattr(body_fun, "__name__", "body_fun"))
    regions = [Region(b.nodes, b.arguments, b.captured_inputs, b.outputs) for b in (cond, body)]
    _check_carries(body_fun, regions[1], carried, "while_loop")
    captured = [local(tape, v) for b in (cond, body) for v in b.captured]
    packed = tape.apply("While", carried + captured, cond_body=regions[0], body=regions[1])
    results = unpack(_Recording(), packed, {"body": regions[1], "carries": len(carried), "length": 0})
    return _rebuild(structure, iter(results))


@derive_whiles_with
def while_derivative(cond, body, wanted):
    """The counting loop and the backward loop of a ``While``'s derivative (``topos.ops.whiles``)."""
    dtype = body.nodes[body.outputs[0]].dtype
    carries = body.metas(body.arguments)
    counter = Meta((), dtype)
    counted_body = _counted(body, carries + [counter], lambda e, handles, given: _outputs(body, handles), count=True)
    counting = {
        "cond_body": _counted(cond, carries + [counter], lambda e, handles, given: [handles[cond.outputs[0]]]),
        "body": counted_body,
    }
    below = _built(carries + [counter], [counter], lambda e, given, captured: [e.less(given[-1], captured[0])])
    kept = [i for i, want in zip(body.captured, wanted) if want]
    state = carries + body.metas(kept) + [counter]

    def backward_step(e, given, captured):
        cotangents, sums, j = given[: len(carries)], given[len(carries) : -1], given[-1]
        initial, constants = captured[: len(carries)], captured[len(carries) :]
        operands = initial + [e.constant((), dtype, 0.0), j] + constants
        inner = e.apply("While", operands, cond_body=below, body=counted_body)
        carry = unpack(e, inner, {"body": counted_body, "carries": len(carries) + 1, "length": 0})[: len(carries)]
        found = _reverse(body, e, carry, constants, cotangents)
        results = [_cotangent(body, e, found, i) for i in body.arguments]
        results += [e.add(total, _cotangent(body, e, found, i)) for total, i in zip(sums, kept)]
        return results + [e.sub(j, e.constant((), dtype, 1.0))]

    backward = {
        "cond_body": _built(state, [], lambda e, given, captured: [e.greater(given[-1], e.constant((), dtype, -0.5))]),
        "body": _built(state, carries + body.metas(body.captured), backward_step),
    }
    return counting, backward


def _outputs(region, handles):
    return [handles[i] for i in region.outputs]


def _counted(region, arguments, outputs, count=False):
    """``region`` re-recorded with one more argument, a trip counter: ``outputs(e, handles, given)`` gives
    what it returns, and where ``count`` (a body, not a predicate) the counter plus 1 after it. (Told, not
    guessed from the number of outputs: a predicate of a loop of one carry returns as many as a body.)"""

    def build(e, given, captured):
        sources = dict(zip(region.arguments, given[:-1]))
        sources.update(zip(region.captured, captured))
        returned = outputs(e, inline(e, region.nodes, sources), given)
        if count:
            returned = returned + [e.add(given[-1], e.constant((), given[-1].dtype, 1.0))]
        return returned

    return _built(arguments, region.metas(region.captured), build)


def _built(arguments, captured, build):
    """A ``Region`` recorded on a tape of its own: placeholders of ``arguments`` and ``captured`` (metas),
    and the values ``build(emitter, arguments, captured)`` returns."""
    tape = BodyTape(arguments[0].dtype, None)
    emitter = TapeEmitter(tape, (), None)
    given = [tape.placeholder(meta) for meta in arguments]
    constants = [tape.placeholder(meta) for meta in captured]
    results = build(emitter, given, constants)
    tape._sealed = True
    return Region(tape.nodes(), [v.index for v in given], [v.index for v in constants], [v.index for v in results])
