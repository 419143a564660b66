"""Bodies: a Python function recorded once, on a tape of its own, for a transformation to hold.

``vmap`` records its function at one example's shapes and emits it batched;
``scan``, ``fori_loop``, ``while_loop`` and ``cond`` hold the loop body as the
attribute of one node, so the recording does not grow with the trip count;
``custom_vjp`` holds the user's backward. Each records the function here, with
``trace``, and gets a ``Body``: the nodes, which of them stand for the
function's arguments, what it closed over, and what it returned.

Recording a function apart from the tape it is called on needs one rule, kept
here and in ``Tape.apply``: a body's tape (a ``BodyTape``) knows the tape it was
made inside (``outer``), and an operation that mixes values of the two is
recorded on the inner one, the outer value lifted in as a placeholder ``Input``
(``BodyTape.lift``) and listed in ``Body.captured``, in the order first used. A
body that only reads outer values records on the outer tape, once: a
loop-invariant product is computed before the loop, as a compiler would hoist
it. The placeholders hold zeros of their shape as payloads (zero strides: one
element of memory); a body is never run with them.

The layers below cannot import this module: a primitive that holds a body
holds ``Body.nodes``, objects with ``opcode``, ``operands``, ``attrs``, ``shape``,
``dtype`` and ``payload``, and walks them with ``topos.ops.bodies``.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentTypeError, RecordingError
from ..ops.registry import Meta
from .nodes import Node, recording_scope, user_source
from .tape import Tape, encloses
from .value import Value


class BodyTape(Tape):
    """The tape a body records on: ``outer`` is the tape it was made inside.

    A value of ``outer`` (or of a tape ``outer`` was itself made inside) used in
    an operation here is lifted into a placeholder ``Input`` of this tape, once.
    """

    def __init__(self, dtype, outer):
        super().__init__(dtype)
        self.outer = outer
        self.captured = []  # the outer values lifted in, in the order first used
        self._lifted = {}  # (id of the outer tape, index) -> the placeholder's index here

    def placeholder(self, meta, scope=()):
        """An ``Input`` of ``meta``'s shape and dtype whose payload is zeros (zero strides)."""
        self._check_open()
        payload = np.broadcast_to(np.zeros((), dtype=meta.dtype), meta.shape)
        payload.flags.writeable = False
        index = len(self._nodes)
        self._nodes.append(
            Node(index, "Input", (), meta.shape, meta.dtype, {}, payload=payload, source=user_source(), scope=scope)
        )
        return Value(self, index)

    def lift(self, value):
        """``value`` as a value of this tape: itself if it is one, else its placeholder (made once)."""
        if value.tape is self:
            return value
        if not encloses(value.tape, self):
            raise RecordingError("a value recorded on an unrelated tape was used inside a body", user_source())
        key = (id(value.tape), value.index)
        if key not in self._lifted:
            self._lifted[key] = self.placeholder(Meta(value.shape, value.dtype), scope=recording_scope()).index
            self.captured.append(value)
        return Value(self, self._lifted[key])

    def apply(self, opcode, operands, **attrs):
        operands = [self.lift(v) if isinstance(v, Value) and v.tape is not self else v for v in operands]
        return super().apply(opcode, operands, **attrs)


@dataclass(frozen=True)
class Body:
    """A function recorded once. Node indices refer to ``nodes``.

    - ``nodes``: the recorded nodes, sources first where they were recorded;
    - ``arguments``: the placeholders of the function's arguments, in order;
    - ``captured``: the outer values it closed over (``Value``s of the calling tape or
      of one enclosing it), and ``captured_inputs`` their placeholders, in the same order;
    - ``outputs``: what it returned, flattened; ``structure`` rebuilds the return
      (``None`` for one value, else a tuple or list of nested structures);
    - ``name``: the function's name, for scopes ("vmap of f").
    """

    nodes: tuple
    arguments: tuple
    captured: tuple
    captured_inputs: tuple
    outputs: tuple
    structure: object
    name: str

    def metas(self, indices):
        """The ``Meta`` of each node in ``indices``."""
        return [Meta(self.nodes[i].shape, self.nodes[i].dtype) for i in indices]

    def rebuild(self, flat):
        """What the function returned, rebuilt from ``flat`` (one item an output, in order)."""
        items = iter(flat)
        return _rebuild(self.structure, items)


def local(tape, value):
    """``value`` as a value of ``tape``: itself, or lifted in where ``tape`` is a body's and ``value`` is
    of a tape enclosing it (what a transformation does with a body's ``captured`` values before it
    records the node that reads them)."""
    if value.tape is tape:
        return value
    if isinstance(tape, BodyTape):
        return tape.lift(value)
    raise RecordingError("a value recorded on another tape was used here", user_source())


def trace(fn, arguments, outer, name=None, scope=None):
    """Record ``fn(*placeholders)`` once on a ``BodyTape`` made inside the tape ``outer``.

    ``arguments`` gives each argument's ``Meta`` (or a ``Value`` whose shape and dtype to
    take). ``fn`` returns a value, or a tuple or list of them (nested); a Python number or
    an outer value it returns is recorded or lifted on the body's tape, so every output
    is a node of the body. The placeholders carry ``scope`` (by default the calls the
    caller is recorded inside). Returns a ``Body``.
    """
    if not callable(fn):
        raise ArgumentTypeError(f"a transformation takes a function, got {type(fn).__name__}")
    tape = BodyTape(outer.dtype, outer)
    scope = tuple(recording_scope()[:-1]) if scope is None else tuple(scope)
    placeholders = [tape.placeholder(_meta(a), scope) for a in arguments]
    returned = fn(*placeholders)
    flat, structure = _flatten(returned, tape)
    nodes = tuple(tape._nodes)
    tape._sealed = True
    return Body(
        nodes=nodes,
        arguments=tuple(p.index for p in placeholders),
        captured=tuple(tape.captured),
        captured_inputs=tuple(tape._lifted[(id(v.tape), v.index)] for v in tape.captured),
        outputs=tuple(v.index for v in flat),
        structure=structure,
        name=name or getattr(fn, "__name__", "f"),
    )


def _meta(argument):
    if isinstance(argument, Meta):
        return argument
    if isinstance(argument, Value):
        return Meta(argument.shape, argument.dtype)
    raise ArgumentTypeError(
        f"a body's argument is described by a Meta or a recorded value, got {type(argument).__name__}"
    )


def _flatten(returned, tape):
    if isinstance(returned, Value):
        return [tape.lift(returned)], None
    if isinstance(returned, (tuple, list)):
        flat, parts = [], []
        for item in returned:
            items, part = _flatten(item, tape)
            flat.extend(items)
            parts.append(part)
        return flat, (type(returned), tuple(parts))
    if isinstance(returned, (int, float, np.number, np.ndarray)):
        return [tape.leaf(returned, dtype=tape.dtype)], None
    raise ArgumentTypeError(
        f"a body returns recorded values (or tuples and lists of them), got {type(returned).__name__}"
    )


def _rebuild(structure, items):
    if structure is None:
        return next(items)
    kind, parts = structure
    return kind(_rebuild(part, items) for part in parts)
