"""Rematerialisation: values the backward recomputes from a few kept ones instead of keeping them all.

A backward reads forward values (``tanh``'s rule reads its result, a product's rule
its operands), so a plan of forward and backward keeps every such value alive from
the forward until the backward's reader: the activations of every layer at once,
the plan's peak. ``topos.checkpoint(f)`` (JAX's ``checkpoint``, or ``remat``) trades
compute for that memory: ``f``'s nodes are recorded inline as usual, each marked by
its scope ``"checkpoint of f"``, and the lowering of a forward and backward entry
(``rematerialise``, from ``topos.model.lowering``) gives each backward node that
reads a marked value a copy of it, recomputed just before the first such reader from
the values the region kept: its inputs, what it closed over, and its outputs. The
originals then die after their last forward reader. A copy is the same op over the
same inputs, so every result is bit-identical; the copies carry their original's
scope and then ``"recomputed for the backward"``, numbered after the forward.

A region's value is recomputed when every forward node that reads it is inside the
region (so an output the rest of the model reads is kept, and two checkpointed
blocks in a row each recompute only their own interior). Each call is a region of
its own: a second call of the same function is ``"checkpoint of f (2)"``.

``entry.lower(remat=...)`` chooses what is recomputed (``POLICIES``): the marked
nodes (the default), also cheap elementwise values, or nothing at all.
"""

from ..errors import ArgumentError, ArgumentTypeError, RecordingError
from ..ops import lookup
from .nodes import CHECKPOINT_SCOPE, Node, recording_scope, user_source
from .tape import innermost
from .value import Value

#: The last scope entry of a node the backward recomputes (the plan reading marks its row with it).
RECOMPUTED = "recomputed for the backward"

#: What ``entry.lower(remat=...)`` takes: which forward values the backward recomputes.
POLICIES = {
    "checkpoint": "the values topos.checkpoint marked, inside each region",
    "elementwise": "those, and every elementwise value of one operand (exp, tanh, a cast, a scale by a constant)",
    None: "none: every value the backward reads is kept from the forward",
}


def checkpoint(f):
    """``f``, whose values a plan's backward recomputes rather than keeps (JAX's ``checkpoint``/``remat``).

    Calling the result records ``f``'s nodes inline, as calling ``f`` would, each with
    the scope ``"checkpoint of f"`` (the graph groups them). In a plan of forward and
    backward (``network.entry([...]).backward(loss).lower()``), the values inside that
    region that the backward reads are recomputed from the region's inputs just before
    the backward needs them, so the forward's copies are freed early: a lower peak,
    the same bits, and the extra work of one forward through ``f``. ``f`` takes and
    returns recorded values (a value, or a tuple or list of them); Python numbers are
    passed through.

    ```python
    block = topos.checkpoint(lambda x: topos.tanh(x @ w) @ v)
    y = block(block(x))                      # two regions, each recomputed on its own
    plan = network.entry([loss]).backward(loss).lower()
    ```
    """
    if not callable(f):
        raise ArgumentTypeError(f"checkpoint() takes a function, got {type(f).__name__}")

    def checkpointed(*args):
        return _call(f, args)

    checkpointed.__name__ = f"checkpoint_{getattr(f, '__name__', 'f')}"
    checkpointed.__doc__ = f.__doc__
    return checkpointed


def _call(f, args):
    values = [a for a in args if isinstance(a, Value)]
    if not values:
        raise ArgumentTypeError("checkpoint(): the function is called with no recorded value")
    tape = innermost([v.tape for v in values])
    if tape is None:
        raise RecordingError("checkpoint(): the arguments were recorded on unrelated tapes", user_source())
    tape._check_open()
    outer = tuple(recording_scope())
    name = getattr(f, "__name__", "f")
    label = _label(tape, name)
    start = len(tape)
    returned = f(*args)
    # The nodes f recorded, marked as the region's: each scope is what recording_scope() saw inside f
    # (f's own frame first, where f is the user's), now placed under the caller's and the region's.
    # Nothing has read them yet but the values f returned, which name them by index.
    own = getattr(f, "__qualname__", name).replace(".<locals>", "")
    for index in range(start, len(tape)):
        node = tape._nodes[index]
        inner = node.scope[1:] if node.scope[:1] == (own,) else node.scope
        scope = outer + (label,) + tuple(inner)
        fields = {"payload": node.payload, "name": node.name, "source": node.source, "scope": scope}
        tape._nodes[index] = Node(index, node.opcode, node.operands, node.shape, node.dtype, node.attrs, **fields)
    return returned


def _label(tape, name):
    """``"checkpoint of f"``, numbered from the second call on the tape: each call is a region of its own."""
    used = {entry for node in tape._nodes for entry in node.scope if entry.startswith(CHECKPOINT_SCOPE)}
    label, count = f"{CHECKPOINT_SCOPE}{name}", 1
    while label in used:
        count += 1
        label = f"{CHECKPOINT_SCOPE}{name} ({count})"
    return label


# The lowering's side ------------------------------------------------------------------------


def check_policy(remat):
    """``remat`` if it names a policy of ``POLICIES``, else ``ArgumentError`` listing them."""
    if remat not in POLICIES:
        names = ", ".join(repr(name) for name in POLICIES)
        raise ArgumentError(f"remat is one of {names}; got {remat!r}")
    return remat


def recomputable(nodes, forward_count, evaluated, kept, policy):
    """Marks (a bytearray over the forward nodes) of the values the backward recomputes under ``policy``.

    ``evaluated`` marks the nodes the plan evaluates, ``kept`` holds the indices it hands
    back (readables, gradients, the target), which are never recomputed.
    """
    marks = bytearray(forward_count)
    if policy is None:
        return marks
    readers = [[] for _ in range(forward_count)]
    for node in nodes[:forward_count]:
        if evaluated[node.index]:
            for j in node.operands:
                readers[j].append(node)
    for node in nodes[:forward_count]:
        if node.is_source or node.index in kept or not evaluated[node.index]:
            continue
        if _interior(node, readers[node.index]) or (policy == "elementwise" and _cheap(node, nodes)):
            marks[node.index] = 1
    return marks


def _interior(node, readers):
    """Whether some checkpoint region holds ``node`` and every forward node that reads it."""
    for position, entry in enumerate(node.scope):
        if entry.startswith(CHECKPOINT_SCOPE):
            region = node.scope[: position + 1]
            if all(reader.scope[: position + 1] == region for reader in readers):
                return True
    return False


def _cheap(node, nodes):
    """An elementwise value of one operand that is not a constant: recomputing it keeps that operand
    alive in its place, no larger, and costs one pass over it."""
    if lookup(node.opcode).wgsl is None:
        return False
    varying = [j for j in node.operands if nodes[j].opcode != "Leaf"]
    return len(varying) == 1 and nodes[varying[0]].size == node.size


def rematerialise(nodes, forward_count, gradients, marks, evaluated):
    """The backward nodes rewritten to read recomputed copies of the forward values ``marks`` names.

    Each evaluated backward node reading a marked value reads a copy, made just before
    the first such reader from the unmarked values (a chain of marked values is copied
    whole, in forward order, once). Returns ``(nodes, gradients, count of copies)``.
    """
    result = list(nodes[:forward_count])
    copies, moved = {}, {}

    def add(node, operands, scope, name):
        index = len(result)
        attrs = {"payload": node.payload, "name": name, "source": node.source, "scope": scope}
        result.append(Node(index, node.opcode, operands, node.shape, node.dtype, node.attrs, **attrs))
        return index

    def copy(start):
        chain, stack = set(), [start]
        while stack:
            index = stack.pop()
            if index not in chain and index not in copies:
                chain.add(index)
                stack.extend(j for j in nodes[index].operands if marks[j])
        for index in sorted(chain):
            node = nodes[index]
            operands = [copies[j] if marks[j] else j for j in node.operands]
            copies[index] = add(node, operands, node.scope + (RECOMPUTED,), None)
        return copies[start]

    for node in nodes[forward_count:]:
        operands = []
        for j in node.operands:
            if j >= forward_count:
                operands.append(moved[j])
            else:
                operands.append(copy(j) if marks[j] and evaluated[node.index] else j)
        moved[node.index] = add(node, operands, node.scope, node.name)
    gradients = tuple(moved.get(g, g) for g in gradients)
    return tuple(result), gradients, len(copies)
