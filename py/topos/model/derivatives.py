"""Derivatives as values: ``grad``, ``jvp``, ``hvp`` and ``hessian`` inside a recording, of any order.

Derivative rules are written once against an emitter (``topos.model.autodiff``).
``EagerEmitter`` computes numbers, the gradient reading's ``GraphEmitter`` appends
nodes to a copy of a sealed network; ``TapeEmitter`` here appends them to the tape
being recorded, and its handles are ``Value``s. So ``topos.grad(loss, x)`` runs the
very reverse scan ``Run.backward`` runs, and what it returns is an ordinary value:
it can be combined, differentiated again (the rules of the nodes it appended are
rules like any other), sealed, lowered, emitted, run on any backend and trained
through.

Every node a derivative appends carries the scope ``"grad of <y> with respect to <x>"``
after the calls it was recorded inside (``Node.scope``), so the graph groups a
gradient's nodes as it groups a composite's, and the spec ends their rows with it.
"""

import numpy as np

from ..dtypes import FLOAT_DTYPES
from ..errors import ArgumentTypeError, DtypeError, MissingRuleError, RecordingError, ShapeError
from ..text import format_shape
from .autodiff import Emitter, check_backward, needed_nodes, reverse_scan
from .composites import differentiated_composites
from .nodes import DERIVATIVE_SCOPES, recording_scope, user_source
from .value import Value

_PUBLIC = ("grad", "jvp", "hvp", "hessian")


class TapeEmitter(Emitter):
    """Handles are ``Value``s of the tape being recorded; every rule appends checked nodes to it.

    The nodes appended while the scan applies a forward node's rule carry that node's
    source line (as the gradient reading's do) and the emitter's ``scope``.
    """

    def __init__(self, tape, scope, source):
        self.tape = tape
        self.scope = tuple(scope)
        self.source = source

    #: The forward node whose rule is being applied (named when a rule is missing).
    node = None

    def at(self, node):
        self.node = node
        self.source = node.source

    def apply(self, opcode, operands, **attrs):
        index = self.tape.append(opcode, [handle.index for handle in operands], attrs, self.source, self.scope)
        return Value(self.tape, index)

    def shape(self, handle):
        return handle.shape

    def like(self, handle, value):
        return self.constant(handle.shape, handle.dtype, value)

    def constant(self, shape, dtype, value):
        """A ``Leaf`` of ``value`` with the given shape and dtype (a zero-stride payload)."""
        payload = np.broadcast_to(np.array(value, dtype=dtype), tuple(shape))
        return Value(self.tape, self.tape.append_leaf(payload, self.source, self.scope))


def _label(value):
    node = value.node
    return repr(node.name) if node.name else f"{node.opcode.lower()} {node.index}"


def _scope(kind, y, wrt):
    """The calls the user made this one from, then ``"<kind> of <y> with respect to <x, w>"``."""
    outer = [name for name in recording_scope() if name not in _PUBLIC]
    return tuple(outer) + (f"{kind} of {_label(y)} with respect to {', '.join(_label(w) for w in wrt)}",)


def _values(what, wrt):
    """``(list of values, whether one value was given)``; anything else raises ``ArgumentTypeError``."""
    if isinstance(wrt, Value):
        return [wrt], True
    if not isinstance(wrt, (list, tuple)) or not wrt:
        raise ArgumentTypeError(f"{what} takes a recorded value or a non-empty list of them, got {type(wrt).__name__}")
    for item in wrt:
        if not isinstance(item, Value):
            raise ArgumentTypeError(f"{what} takes recorded values, got a {type(item).__name__} among them")
    return list(wrt), False


def _check(fn, y, wrt):
    if not isinstance(y, Value):
        raise ArgumentTypeError(f"{fn}() differentiates a recorded value, got {type(y).__name__}")
    tape = y.tape
    tape._check_open()
    for w in wrt:
        if w.tape is not tape:
            raise RecordingError(f"{fn}(): a value to differentiate with respect to is on another tape", user_source())
        if w.dtype not in FLOAT_DTYPES:
            raise DtypeError(f"{fn}(): no derivative with respect to {_label(w)}: it holds {w.dtype}")
    if y.dtype not in FLOAT_DTYPES:
        raise DtypeError(f"{fn}() needs a floating-point value to differentiate; {_label(y)} is {y.dtype}")
    return tape


def vjp_values(y, wrt, seed, scope):
    """The cotangents of the values ``wrt`` given ``seed``, the cotangent of ``y`` (both values).

    Appends the reverse scan's nodes to ``y``'s tape inside ``scope``; a value that
    ``y`` does not read gets zeros. Each result has its value's shape.
    """
    tape = y.tape
    nodes = tape.nodes()
    emitter = TapeEmitter(tape, scope, y.node.source)
    indices = [w.index for w in wrt]
    needed = needed_nodes(nodes, y.index, indices)
    composites = differentiated_composites(nodes, keep=indices)
    handles = [Value(tape, i) for i in range(len(nodes))]
    try:
        cotangents = reverse_scan(nodes, y.index, emitter, handles, needed, seed, composites)
    except MissingRuleError as error:
        node = emitter.node
        order = 1 + sum(1 for name in node.scope if name.startswith(DERIVATIVE_SCOPES))
        raise MissingRuleError(
            f"{node.opcode} has no derivative rule, so no derivative of order {order} of it "
            f"(node {node.index}{', itself a derivative node' if order > 1 else ''}): {error}"
        ) from None
    results = []
    for w in wrt:
        emitter.source = w.node.source
        cotangent = cotangents.get(w.index)
        if cotangent is None:
            cotangent = emitter.constant(w.shape, w.dtype, 0.0)
        results.append(emitter.broadcast(cotangent, w.shape))
    return results


def grad(y, wrt):
    """The gradient of the rank-0 value ``y`` with respect to ``wrt``, recorded as values.

    ``wrt`` is one value or a list (or tuple) of values of ``y``'s tape: inputs,
    parameters or any recorded value. Returns one value shaped like ``wrt``, or a
    list with one value shaped like each. The backward's nodes are appended to the
    tape being recorded, so the gradient can be computed with, differentiated again
    (``grad(grad(...)...)``, any order), sealed, lowered and trained through. A value
    ``y`` does not read has a zero gradient.

    ```python
    tape = topos.Tape()
    x = tape.input(np.array([1.0, 2.0]), name="x")
    y = topos.sum(x**3)
    dy = topos.grad(y, x)                        # 3 x**2
    d2y = topos.grad(topos.sum(dy), x)           # 6 x
    ```

    ``y`` must be rank 0 (``ShapeError``) and hold floats, as must each of
    ``wrt`` (``DtypeError``).
    """
    wrt, single = _values("grad()", wrt)
    tape = _check("grad", y, wrt)
    if y.shape != ():
        raise ShapeError(
            f"grad() needs a rank-0 value to differentiate; {_label(y)} has shape {format_shape(y.shape)} "
            "(sum it first, or use topos.jvp for the derivative of every element along a direction)",
            shapes=[y.shape],
            source=user_source(),
        )
    check_backward(tape.nodes(), y.index, [w.index for w in wrt])
    scope = _scope("grad", y, wrt)
    seed = TapeEmitter(tape, scope, y.node.source).constant((), y.dtype, 1.0)
    results = vjp_values(y, wrt, seed, scope)
    return results[0] if single else results


def _dot(emitter, a, b):
    """The rank-0 sum of ``a * b`` (values of one shape)."""
    product = emitter.mul(a, b)
    if not product.shape:
        return product
    return emitter.sum(product, tuple(range(len(product.shape))), False)


def _tangents(fn, wrt, tangents, single):
    tangents = [tangents] if single and isinstance(tangents, Value) else tangents
    if not isinstance(tangents, (list, tuple)) or len(tangents) != len(wrt):
        raise ArgumentTypeError(f"{fn}() takes one tangent a value to differentiate with respect to")
    for w, t in zip(wrt, tangents):
        if not isinstance(t, Value) or t.tape is not w.tape:
            raise ArgumentTypeError(f"{fn}(): each tangent is a value of the same tape, got {type(t).__name__}")
        if t.shape != w.shape:
            raise ShapeError(
                f"{fn}(): a tangent of shape {format_shape(t.shape)} for {_label(w)} of shape {format_shape(w.shape)}",
                shapes=[t.shape, w.shape],
                source=user_source(),
            )
    return list(tangents)


def jvp(y, wrt, tangents):
    """The derivative of ``y`` along ``tangents``: J v, a value shaped like ``y`` (of any rank).

    ``wrt`` is one value or a list of values, ``tangents`` one value (or a list)
    shaped like each. Built from the reverse rules by the double-vjp trick: the
    vjp ``u -> J^T u`` is linear in ``u``, so the gradient of ``<J^T u, v>`` with
    respect to ``u`` is ``J v``. Every rule is written once, as a vjp, so forward
    mode needs no second set of rules that could drift from the first; ``u``'s
    value (zeros) never matters, and the nodes that do not lead to ``J v`` are
    never evaluated (a plan keeps only what its outputs read).
    """
    wrt, single = _values("jvp()", wrt)
    tape = _check("jvp", y, wrt)
    tangents = _tangents("jvp", wrt, tangents, single)
    scope = _scope("jvp", y, wrt)
    emitter = TapeEmitter(tape, scope, y.node.source)
    u = emitter.constant(y.shape, y.dtype, 0.0)
    cotangents = vjp_values(y, wrt, u, scope)
    total = None
    for cotangent, tangent in zip(cotangents, tangents):
        term = _dot(emitter, cotangent, tangent)
        total = term if total is None else emitter.add(total, term)
    seed = emitter.constant((), y.dtype, 1.0)
    return vjp_values(total, [u], seed, scope)[0]


def hvp(y, wrt, vectors):
    """The Hessian of the rank-0 ``y`` times ``vectors``: H v, shaped like ``wrt`` (one value or a list).

    The gradient of ``<grad(y), v>``: two reverse passes, the cheap composition
    for rules that are all reverse ones (forward over reverse, built with this
    module's ``jvp``, would add a third pass). Never forms the Hessian.
    """
    wrt, single = _values("hvp()", wrt)
    _check("hvp", y, wrt)
    vectors = _tangents("hvp", wrt, vectors, single)
    gradients = grad(y, wrt)
    scope = _scope("hvp", y, wrt)
    emitter = TapeEmitter(y.tape, scope, y.node.source)
    total = None
    for gradient, vector in zip(gradients, vectors):
        term = _dot(emitter, gradient, vector)
        total = term if total is None else emitter.add(total, term)
    results = grad(total, wrt)
    return results[0] if single else results


def hessian(y, x):
    """The Hessian of the rank-0 ``y`` with respect to the one value ``x``: shape ``x.shape + x.shape``.

    One reverse pass over the gradient for each element of ``x`` (``x.size`` of
    them), so it suits small problems, a Newton step say; ``hvp`` never forms the
    matrix. Entry ``[i..., j...]`` is d2 y / dx[i...] dx[j...].
    """
    if not isinstance(x, Value):
        raise ArgumentTypeError(f"hessian() differentiates with respect to one recorded value, got {type(x).__name__}")
    gradient = grad(y, x)
    scope = _scope("hessian", y, [x])
    emitter = TapeEmitter(y.tape, scope, y.node.source)
    size = x.size
    flat = emitter.reshape(gradient, (size,))
    seed = emitter.constant((), y.dtype, 1.0)
    rows = []
    for i in range(size):
        element = emitter.reshape(emitter.slice(flat, (i,), (i + 1,), (1,)), ())
        row = vjp_values(element, [x], seed, scope)[0]
        rows.append(emitter.reshape(row, (1, size)))
    matrix = rows[0] if size == 1 else emitter.apply("Concatenate", rows, axis=0)
    return emitter.reshape(matrix, x.shape + x.shape)
