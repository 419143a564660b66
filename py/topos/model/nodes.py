"""Nodes and symbols: what a tape records, how a network names it, how both print.

The bottom of ``topos.model``: the tape, the network, the checkpoint formats
and the compiler all build on these, and nothing here knows of them.

- ``Node``: one recorded operation (opcode, operands, shape, dtype, attributes,
  payload, name and the user's source line);
- ``Symbol``: names one node of one network (and of the networks reopened from it);
- ``user_source()``: the user's line that is recording now;
- ``recording_scope()``: the calls it is recording inside (the graph's groups);
- ``source_value()``: what a source node holds in one run (the one place that says so);
- ``describe_nodes`` (the spec reading), ``describe_node`` (how errors name a node).
"""

import sys
from dataclasses import dataclass

from ..frames import inside_package, user_source  # noqa: F401  (user_source: for the tape and the functions)
from ..ops.bodies import Region
from ..ops.registry import Meta
from ..text import format_shape, plural, recorded_at


def recording_scope():
    """The calls that the node being recorded now is recorded inside, outermost first.

    These are the functions of the user's file on the stack (by qualified name,
    ``"causal_self_attention.split_heads"``), and last the module-level topos function
    that the innermost of them called (``"layer_norm"``), as TensorBoard's name scopes
    group a graph. The module's top level, lambdas and comprehensions name no scope;
    the walk ends at the first frame of another file (``Tape.record`` calling a lambda:
    what called ``Tape.record`` is not counted).
    """
    frame = sys._getframe(1)
    called = []  # the topos frames under the user's innermost frame, innermost first
    while frame is not None and inside_package(frame.f_code.co_filename):
        called.append(frame.f_code)
        frame = frame.f_back
    if frame is None:
        return ()
    names = []
    # A method the user called (``x + y``, ``x.reshape``) names no scope; a public function
    # (``topos.layer_norm``, reached through its all-or-nothing wrapper) does, by its own name.
    public = [code for code in called if "." not in code.co_qualname and not code.co_name.startswith(("_", "<"))]
    method = called and "." in called[-1].co_qualname and "<locals>" not in called[-1].co_qualname
    if public and not method:
        names.append(public[-1].co_qualname)
    # The user's frames, outwards until the first frame of another file (``Tape.record``, a test
    # runner, the playground's runner): a walk of a few frames for each node recorded.
    filename = frame.f_code.co_filename
    while frame is not None and frame.f_code.co_filename == filename:
        code = frame.f_code
        if not code.co_name.startswith("<"):
            names.append(code.co_qualname.replace(".<locals>", ""))
        frame = frame.f_back
    return tuple(reversed(names))


class Node:
    """One recorded operation. Nodes are never changed after recording."""

    __slots__ = ("index", "opcode", "operands", "shape", "dtype", "attrs", "payload", "name", "source", "scope")

    def __init__(self, index, opcode, operands, shape, dtype, attrs, payload=None, name=None, source=None, scope=()):
        self.index = index
        self.opcode = opcode
        self.operands = tuple(operands)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.attrs = attrs
        self.payload = payload
        self.name = name
        self.source = source
        # The calls it was recorded inside (recording_scope()); only the graph's drawing groups by them.
        self.scope = tuple(scope)

    @property
    def meta(self):
        """The node's ``Meta``: its shape and dtype, as ``Primitive.infer`` sees an operand."""
        return Meta(self.shape, self.dtype)

    @property
    def size(self):
        """The number of elements: the product of ``shape`` (1 for rank 0)."""
        return self.meta.size

    @property
    def is_source(self):
        """Whether the node is a ``Parameter``, an ``Input`` or a ``Leaf``: it holds a payload and has no operands."""
        return self.opcode in ("Parameter", "Input", "Leaf")

    def describe_row(self, shape_width=0):
        """The row of ``describe()``: index, opcode, operands, shape (padded), attributes."""
        operands = ", ".join(str(i) for i in self.operands)
        shape = format_shape(self.shape)
        if shape_width:
            shape = f"{shape:<{shape_width}}"
        row = f"{self.index:>4}  {self.opcode:<15}{operands:<19}{shape}"
        return row

    def attrs_text(self):
        """The attributes as ``describe()`` prints them: space-separated ``key=repr(value)`` pairs.

        For a ``Sum`` over axis 1: ``axes=(1,) keepdims=False``; for a node without attributes, ``""``.
        """
        return " ".join(f"{key}={value!r}" for key, value in self.attrs.items())

    def __repr__(self):
        return f"Node({self.describe_row()})"


@dataclass(frozen=True)
class Symbol:
    """Names one node of one network (and of the networks reopened from it)."""

    lineage: int
    index: int

    def __repr__(self):
        return f"Symbol({self.index})"


def source_value(node, parameter_slots, feeds):
    """The value of a source node in one run: a parameter's slot, an input's feed, else its recorded payload.

    ``parameter_slots`` and ``feeds`` map node indices to arrays (checked already);
    a parameter or input missing from them runs with its payload, as a leaf always
    does. ``Network.forward``, every backend of ``plan.run`` and
    ``plan.argument_values`` read sources here.
    """
    if node.opcode == "Parameter":
        return parameter_slots.get(node.index, node.payload)
    if node.opcode == "Input":
        return feeds.get(node.index, node.payload)
    return node.payload


def describe_node(node):
    """How errors name a node: opcode, index, name and the line that recorded it."""
    name = f" {node.name!r}" if node.name else ""
    where = f" ({recorded_at(node.source)})" if node.source else ""
    return f"{node.opcode.lower()} {node.index}{name}{where}"


def tape_summary(nodes):
    counts = {"Parameter": 0, "Input": 0, "Leaf": 0}
    for node in nodes:
        if node.opcode in counts:
            counts[node.opcode] += 1
    parts = [
        plural(len(nodes), "node"),
        plural(counts["Parameter"], "parameter"),
        plural(counts["Input"], "input"),
    ]
    if counts["Leaf"]:
        parts.append(plural(counts["Leaf"], "leaf", "leaves"))
    return "tape: " + ", ".join(parts)


def describe_nodes(nodes):
    """The spec reading: one row a node (attributes after the shape), then the summary."""
    return "\n".join(line for line, _ in describe_node_rows(nodes))


#: The scopes ``topos.grad``, ``jvp``, ``hvp`` and ``hessian`` give the nodes they append begin so.
DERIVATIVE_SCOPES = ("grad of ", "jvp of ", "hvp of ", "hessian of ", "jacobian of ", "jacfwd of ")

#: The scope ``topos.vmap`` gives the nodes it emits begins so (``topos.model.vmap``).
VMAP_SCOPE = "vmap of "

#: The scope ``topos.checkpoint`` gives a region's nodes begins so (``topos.model.remat``).
CHECKPOINT_SCOPE = "checkpoint of "


def checkpoint_scope(node):
    """The innermost ``topos.checkpoint`` region ``node`` was recorded in (``"checkpoint of block"``), or ``None``."""
    regions = [entry for entry in node.scope if entry.startswith(CHECKPOINT_SCOPE)]
    return regions[-1] if regions else None


def vmap_scope(node):
    """The innermost ``topos.vmap`` that emitted ``node`` batched (``"vmap of f"``), or ``None``."""
    batched = [entry for entry in node.scope if entry.startswith(VMAP_SCOPE)]
    return batched[-1] if batched else None


def derivative_scope(node):
    """The derivative that appended ``node`` (``"grad of sum 6 with respect to 'x'"``), or ``None``."""
    if node.scope and node.scope[-1].startswith(DERIVATIVE_SCOPES):
        return node.scope[-1]
    return None


def describe_node_rows(nodes):
    """The lines of ``describe_nodes``, each with the indices of the nodes it is about:
    ``(line, (index,))`` for a node's row, ``(line, ())`` for the summary.

    A node a derivative appended (``topos.grad``) ends its row with that derivative, in brackets, and so
    does a node of a ``topos.checkpoint`` region with the region and one ``topos.vmap`` emitted with it."""
    rows = []
    for node in nodes:
        row = node.describe_row()
        if node.attrs and not node.is_source:
            row += "  " + node.attrs_text()
        derivative = derivative_scope(node)
        if derivative:
            row += f"  [{derivative}]"
        region = checkpoint_scope(node)
        if region:  # recomputed by a plan's backward rather than kept (topos.checkpoint)
            row += f"  [{region}]"
        batched = vmap_scope(node)
        if batched:  # one node for the whole batch (topos.vmap)
            row += f"  [{batched}]"
        rows.append((row, (node.index,)))
        rows.extend((line, (node.index,)) for line in body_lines(node, "      "))
    rows.append((tape_summary(nodes), ()))
    return rows


def body_lines(node, indent):
    """The bodies ``node`` holds (``Region`` attributes: a ``Scan``'s step, shown as ``body=<9 nodes>``
    in its row), once each: a line naming the body's placeholders and outputs, then its rows, numbered
    from 0 and indented by ``indent`` under the node (a body inside it further still)."""
    lines = []
    for key, region in node.attrs.items():
        if not isinstance(region, Region):
            continue
        arguments = ", ".join(str(i) for i in region.arguments) or "none"
        captured = ", ".join(str(i) for i in region.captured) or "none"
        returns = ", ".join(str(i) for i in region.outputs)
        lines.append(f"{indent}{key} of {node.index}: arguments {arguments}; captured {captured}; returns {returns}")
        for inner in region.nodes:
            row = inner.describe_row()
            if inner.attrs and not inner.is_source:
                row += "  " + inner.attrs_text()
            lines.append(indent + row)
            lines.extend(body_lines(inner, indent + "      "))
    return lines
