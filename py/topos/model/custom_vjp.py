"""``topos.custom_vjp``: a function whose derivative is the user's own, as JAX's ``jax.custom_vjp``.

```python
@topos.custom_vjp
def clip_gradient(x):
    return x

def forward(x):
    return x, ()                              # the output, and the residuals the backward reads

def backward(residuals, g):
    return (topos.clip(g, -1.0, 1.0),)        # one cotangent an argument (None: none)

clip_gradient.defvjp(forward, backward)
```

Calling the function records ``fwd`` inline (its nodes visible, in the scope ``"custom_vjp of f"``),
then one ``CustomVjp`` node (``topos.ops.custom``) over its output, the arguments, the residuals and
what ``bwd`` closes over; ``bwd`` is recorded once, with ``topos.model.bodies.trace``, as the node's
``backward`` attribute. The node's value is the output; its derivative rule inlines ``bwd``'s nodes
through whichever emitter differentiates it, so a plan's gradient reading shows the user's backward
as ordinary nodes, ``Run.backward`` computes it, and ``topos.grad`` records it on the tape, where it
is differentiated again like any other nodes (second order through a differentiable ``bwd``). The
forward's own nodes get no cotangent: their rules are never used.

``f`` itself (the undecorated function) is what a call with no recorded argument runs (JAX too runs
``f``, not ``fwd``, outside differentiation), and what a call of the decorated function inside
``fwd`` records (``return f(x), x``, as JAX's examples write it). A recording always records
``fwd``, whose output must be ``f``'s.
"""

import functools

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, RecordingError
from ..ops.bodies import Region
from ..ops.registry import Meta
from .bodies import local, trace
from .nodes import Node, recording_scope, user_source
from .tape import innermost
from .value import Value

#: The scope of a custom derivative's nodes, before the function's name.
CUSTOM_VJP_SCOPE = "custom_vjp of "


class custom_vjp:  # noqa: N801 (JAX's spelling: a decorator)
    """Decorate ``f``; then ``f.defvjp(fwd, bwd)`` gives its derivative (JAX's ``custom_vjp``).

    ``fwd(*args)`` returns ``(out, residuals)``: ``out`` one recorded value (what ``f``
    returns), ``residuals`` a value or a tuple or list of them (or numbers), saved for the
    backward. ``bwd(residuals, g)`` returns a tuple with one entry an argument of ``f``: the
    cotangent of that argument (shaped like it), or ``None`` for none (a Python number argument
    always takes ``None``). ``g`` is the cotangent of ``out``.
    """

    def __init__(self, fun):
        if not callable(fun):
            raise ArgumentTypeError(f"custom_vjp() takes a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = None
        self.bwd = None
        self._in_fwd = False  # fwd is being recorded: a call of f inside it records f plainly

    def defvjp(self, fwd, bwd):
        """Give the forward ``fwd(*args) -> (out, residuals)`` and backward ``bwd(residuals, g) -> cotangents``."""
        for what, rule in (("fwd", fwd), ("bwd", bwd)):
            if not callable(rule):
                raise ArgumentTypeError(f"defvjp(): {what} is a function, got {type(rule).__name__}")
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args):
        if self.fwd is None:
            raise ArgumentError(f"custom_vjp: give {self.__name__} its rule with defvjp(fwd, bwd) before calling it")
        values = [a for a in args if isinstance(a, Value)]
        if not values or self._in_fwd:
            return self.fun(*args)
        tape = innermost([v.tape for v in values])
        if tape is None:
            raise RecordingError("custom_vjp: the arguments were recorded on unrelated tapes", user_source())
        tape._check_open()
        return _record(self, tape, args)


def _record(rule, tape, args):
    name = rule.__name__
    label = CUSTOM_VJP_SCOPE + name
    scope = tuple(recording_scope()) + (label,)
    start = len(tape)
    rule._in_fwd = True
    try:
        returned = rule.fwd(*args)
    finally:
        rule._in_fwd = False
    if not (isinstance(returned, (tuple, list)) and len(returned) == 2):
        raise ArgumentTypeError(
            f"custom_vjp {name}: fwd returns a pair (out, residuals), got {type(returned).__name__}"
        )
    out, residuals = returned
    if not isinstance(out, Value):
        raise ArgumentTypeError(f"custom_vjp {name}: fwd's output is one recorded value, got {type(out).__name__}")
    _rescope(tape, start, scope, getattr(rule.fwd, "__qualname__", ""))
    out = local(tape, out)
    flat, structure = _flatten(residuals, tape)
    positions = [i for i, a in enumerate(args) if isinstance(a, Value)]
    found = {}

    def backward(*placeholders):
        cotangents = rule.bwd(_rebuild(structure, iter(placeholders[:-1])), placeholders[-1])
        if not isinstance(cotangents, (tuple, list)) or len(cotangents) != len(args):
            raise ArgumentTypeError(
                f"custom_vjp {name}: bwd returns a tuple of {len(args)} cotangents (one an argument, None for none)"
            )
        for position, cotangent in enumerate(cotangents):
            if cotangent is not None and position not in positions:
                raise ArgumentTypeError(
                    f"custom_vjp {name}: argument {position} is no recorded value; its cotangent is None"
                )
        found["flags"] = tuple(cotangents[p] is not None for p in positions)
        return [cotangents[p] for p in positions if cotangents[p] is not None]

    metas = [Meta(v.shape, v.dtype) for v in flat] + [Meta(out.shape, out.dtype)]
    hoisted = len(tape)
    body = trace(backward, metas, tape, name=name, scope=scope)
    _rescope(tape, hoisted, scope, getattr(rule.bwd, "__qualname__", ""))  # what bwd computed from outer values only
    region = Region(body.nodes, body.arguments, body.captured_inputs, body.outputs)
    operands = [out] + [local(tape, args[p]) for p in positions] + flat + [local(tape, v) for v in body.captured]
    attrs = {"backward": region, "arguments": len(positions), "cotangents": found["flags"]}
    index = tape.append("CustomVjp", [v.index for v in operands], attrs, user_source(), scope)
    return Value(tape, index)


def _rescope(tape, start, scope, own):
    """Place the nodes ``fwd`` recorded (from ``start``) under ``scope``: the pair groups as one in the graph.

    Each node's scope is what ``recording_scope()`` saw inside ``fwd`` (``fwd``'s own frame first,
    where it is the user's); nothing has read the nodes but the values ``fwd`` returned, by index."""
    own = own.replace(".<locals>", "")
    for index in range(start, len(tape)):
        node = tape._nodes[index]
        inner = node.scope[1:] if node.scope[:1] == (own,) else node.scope
        fields = {"payload": node.payload, "name": node.name, "source": node.source, "scope": scope + tuple(inner)}
        tape._nodes[index] = Node(index, node.opcode, node.operands, node.shape, node.dtype, node.attrs, **fields)


def _flatten(residuals, tape):
    """The residuals as a flat list of values of ``tape`` (numbers recorded as leaves), and their structure."""
    if isinstance(residuals, Value):
        return [local(tape, residuals)], None
    if isinstance(residuals, (tuple, list)):
        flat, parts = [], []
        for item in residuals:
            items, part = _flatten(item, tape)
            flat.extend(items)
            parts.append(part)
        return flat, (type(residuals), tuple(parts))
    if residuals is None:
        return [], "none"
    if isinstance(residuals, (int, float, np.number, np.ndarray)) and not isinstance(residuals, bool):
        return [tape.leaf(residuals, dtype=tape.dtype)], None
    raise ArgumentTypeError(
        f"custom_vjp: a residual is a recorded value, a number, or a tuple or list of them, got {type(residuals).__name__}"
    )


def _rebuild(structure, items):
    if structure == "none":
        return None
    if structure is None:
        return next(items)
    kind, parts = structure
    return kind(_rebuild(part, items) for part in parts)
