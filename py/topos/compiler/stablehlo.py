"""The StableHLO reading: a plan as MLIR text that XLA (and IREE) compile.

Each primitive lowers itself in its own block (``stablehlo(self, ctx, node)`` in
``topos/ops/*.py``), writing through the ``Lowering`` context defined here. The
context owns naming and types; the op owns what to say:

- ``ctx.operands(node)`` are the SSA names of the node's operands, ``ctx.type(node)``
  its result type (``tensor<2x3xf64>``), ``ctx.tensor_type(shape, dtype)`` any type;
- ``ctx.emit(text)`` writes ``%name = text`` and returns the new name; helpers write
  common forms (``elementwise``, ``splat``, ``compare``, ``convert``, ``select``,
  ``broadcast_in_dim``, ``reshape``, ``reduce``, ``reduce_value``, ``comparison``);
- the method returns the name that holds the node's value; the context renames the
  node's last line to ``%v{index}``. Sources return ``ctx.argument(node)`` (``%argN``)
  or ``ctx.constant(node)``.

An op whose ``stablehlo`` raises ``NotImplementedError`` (or returns nothing)
becomes a ``LoweringError`` naming the node and its opcode.

``ctx.portable`` says which consumer the text is for. StableHLO has no eigendecomposition,
QR or SVD, and IREE (or XLA on a GPU) runs neither ``stablehlo.cholesky`` nor
``stablehlo.triangular_solve`` nor XLA CPU's LAPACK custom calls. The default
(``portable=False``) is XLA on a CPU: those ops lower to the LAPACK calls and the two
StableHLO ops, XLA's fastest form there. ``plan.emit_stablehlo(portable=True)`` asks every
op for a form any StableHLO consumer runs: ``stablehlo.while`` loops of ``dynamic_slice``,
``dot_general`` and ``select`` (``topos/ops/cholesky_lowering.py``, ``qr_lowering.py``,
``spectral_lowering.py``), written with ``ctx.while_loop``. Only those op blocks read the flag.

The forms are the ones XLA's parser accepts (see DESIGN.md): a public ``@main``,
explicit broadcasts, ``array<i64: ...>`` or ``[...]`` dimension lists, reductions
and scatters with regions.
"""

import struct

import numpy as np

from ..errors import LoweringError
from ..model.nodes import Node
from ..ops import lookup
from ..ops.bodies import read_by
from ..text import recorded_at

ELEMENT_TYPES = {"float32": "f32", "float64": "f64", "int32": "i32", "uint32": "ui32", "bool": "i1"}

#: constants with more elements than this are written as hex blobs (exact and fast)
LITERAL_LIMIT = 16


def tensor_type(shape, dtype):
    element = ELEMENT_TYPES[dtype]
    if not shape:
        return f"tensor<{element}>"
    return "tensor<" + "x".join(str(extent) for extent in shape) + "x" + element + ">"


def i64_array(values):
    """A dense i64 array attribute: ``array<i64: 1, 2>``, or ``array<i64>`` when empty."""
    values = list(values)
    return "array<i64: " + ", ".join(str(v) for v in values) + ">" if values else "array<i64>"


def scalar_literal(value, dtype):
    """One element as MLIR writes it: exact decimal floats, hex bit patterns for inf and NaN."""
    if dtype in ("int32", "uint32"):
        return str(int(value))
    if dtype == "bool":
        return "true" if value else "false"
    if not np.isfinite(value):
        bits = struct.pack(">f", value) if dtype == "float32" else struct.pack(">d", value)
        return "0x" + bits.hex().upper()
    # str() of a numpy scalar is the shortest decimal that reads back to the same value.
    text = str(np.float32(value)) if dtype == "float32" else repr(float(value))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"  # MLIR reads "1e-05" as an integer; "1.0e-05" is a float
    return mantissa + ("e" + exponent if exponent else "")


def dense_literal(array, dtype):
    """The ``dense<...>`` attribute of a constant: a splat, nested literals, or a hex blob."""
    array = np.asarray(array)
    if array.size == 0:
        return "dense<>"  # MLIR's literal of an empty tensor, whatever its shape
    first = array.reshape(-1)[0]
    if array.size == 1 or _all_equal(array, first):
        return f"dense<{scalar_literal(first, dtype)}>"
    if array.size > LITERAL_LIMIT:
        little = array.astype(np.dtype(dtype).newbyteorder("<"), copy=False)
        return 'dense<"0x' + np.ascontiguousarray(little).tobytes().hex().upper() + '">'
    return f"dense<{_nested(array, dtype)}>"


def _all_equal(array, first):
    if array.strides and all(stride == 0 for stride in array.strides):
        return True  # a broadcast scalar (the gradient's constants)
    if array.dtype.kind != "f":
        return bool(np.all(array == first))
    if np.isnan(first):
        return bool(np.all(np.isnan(array)))
    # -0.0 == 0.0, but a splat must not lose a sign (1 / x tells them apart).
    return bool(np.all((array == first) & (np.signbit(array) == np.signbit(first))))


def _nested(array, dtype):
    if array.ndim == 0:
        return scalar_literal(array.item(), dtype)
    return "[" + ", ".join(_nested(part, dtype) for part in array) + "]"


class Lowering:
    """The ``ctx`` of ``Primitive.stablehlo(ctx, node)``: names, types and common forms."""

    def __init__(self, plan, portable=False):
        self.plan = plan
        self.portable = portable
        self.names = {}
        self.arguments = []
        self.lines = []
        self.node = None
        self._temporaries = 0
        # A body's nodes (``inline``) are numbered after every node of the plan and of the bodies
        # inlined before them, so each name a rule writes (``%v{index}...``) stays unique in the module.
        self.root = self
        self.next_index = len(plan.nodes)

    # Names and types -------------------------------------------------------------
    def value(self, index):
        """The SSA name of node ``index``'s value (lowered before the node that asks)."""
        return self.names[index]

    def operands(self, node):
        """The SSA names of the node's operands, in order."""
        return [self.names[j] for j in node.operands]

    def operand_node(self, node, position):
        """The operand node itself (its shape and dtype)."""
        return self.plan.nodes[node.operands[position]]

    @staticmethod
    def tensor_type(shape, dtype):
        """The MLIR type of a value: ``tensor<2x3xf64>``, ``tensor<f32>``, ``tensor<4xi32>``."""
        return tensor_type(shape, dtype)

    def type(self, node):
        """The MLIR type of the node's value."""
        return tensor_type(node.shape, node.dtype)

    # Writing -------------------------------------------------------------------------
    def emit(self, text):
        """Write ``%name = text`` (text may span lines, for regions); returns the new name."""
        self._temporaries += 1
        name = f"%v{self.node.index}_{self._temporaries}"
        self.lines.append([name, text, self.node.index])
        return name

    def argument(self, node):
        """Make the node (a parameter or an input) the next function argument, ``%argN``."""
        name = f"%arg{len(self.arguments)}"
        self.arguments.append((name, self.type(node)))
        return name

    def constant(self, node):
        """Write the node's payload (a leaf) as a ``stablehlo.constant``."""
        return self.emit(f"stablehlo.constant {dense_literal(node.payload, node.dtype)} : {self.type(node)}")

    def splat(self, value, shape, dtype):
        """A constant of one value everywhere in ``shape``."""
        return self.emit(f"stablehlo.constant dense<{scalar_literal(value, dtype)}> : {tensor_type(shape, dtype)}")

    def elementwise(self, op, node, operands=None):
        """``op`` over operands of the node's own type (the default: its operands)."""
        names = self.operands(node) if operands is None else operands
        return self.emit(f"{op} {', '.join(names)} : {self.type(node)}")

    def compare(self, direction, a, b, shape, dtype):
        """A ``tensor<...xi1>`` of ``a direction b`` (LT, LE, GT, GE, EQ, NE)."""
        kind = {"int32": "SIGNED", "uint32": "UNSIGNED"}.get(dtype, "FLOAT")
        operand_type = tensor_type(shape, dtype)
        return self.emit(
            f"stablehlo.compare {direction}, {a}, {b}, {kind} : "
            f"({operand_type}, {operand_type}) -> {tensor_type(shape, 'bool')}"
        )

    def convert(self, value, shape, from_dtype, to_dtype):
        """Convert elementwise between element types (``"bool"`` for ``i1``)."""
        return self.emit(
            f"stablehlo.convert {value} : ({tensor_type(shape, from_dtype)}) -> {tensor_type(shape, to_dtype)}"
        )

    def comparison(self, direction, node):
        """A comparison node: 1.0 where ``a direction b`` holds, else 0.0.

        A select of two constants, not a ``convert`` of the predicate: XLA rewrites
        ``x * convert(p)`` into ``select(p, x, 0)``, which is 0 where numpy's
        ``inf * 0.0`` is NaN (a mask times an infinity, as in ``abs(v) = v * sign(v)``).
        """
        a, b = self.operands(node)
        predicate = self.compare(direction, a, b, node.shape, node.dtype)
        one = self.splat(1.0, node.shape, node.dtype)
        zero = self.splat(0.0, node.shape, node.dtype)
        return self.select(predicate, one, zero, node.shape, node.dtype)

    def select(self, predicate, on_true, on_false, shape, dtype):
        """``on_true`` where the ``i1`` predicate holds, else ``on_false``."""
        return self.emit(
            f"stablehlo.select {predicate}, {on_true}, {on_false} : {tensor_type(shape, 'bool')}, {tensor_type(shape, dtype)}"
        )

    def broadcast_in_dim(self, value, from_shape, to_shape, dtype, dims):
        """An explicit broadcast: operand axis i becomes result axis ``dims[i]``."""
        dims_text = ", ".join(str(d) for d in dims)
        return self.emit(
            f"stablehlo.broadcast_in_dim {value}, dims = [{dims_text}] : "
            f"({tensor_type(from_shape, dtype)}) -> {tensor_type(to_shape, dtype)}"
        )

    def reshape(self, value, from_shape, to_shape, dtype):
        """The same elements in row-major order, in a new shape."""
        return self.emit(
            f"stablehlo.reshape {value} : ({tensor_type(from_shape, dtype)}) -> {tensor_type(to_shape, dtype)}"
        )

    def region(self, op, element_type):
        """A two-argument region applying ``op`` (the body of reduce and scatter)."""
        prefix = f"%v{self.node.index}_{self._temporaries + 1}"
        lhs, rhs, result = f"{prefix}_lhs", f"{prefix}_rhs", f"{prefix}_result"
        return (
            f"      ^bb0({lhs}: {element_type}, {rhs}: {element_type}):\n"
            f"        {result} = {op} {lhs}, {rhs} : {element_type}\n"
            f"        stablehlo.return {result} : {element_type}"
        )

    def reduce(self, node, op, init):
        """A reduction node (``axes``, ``keepdims`` attributes) with ``op`` from ``init``."""
        source = self.operand_node(node, 0)
        axes = node.attrs["axes"]
        result = self.reduce_value(self.operands(node)[0], source.shape, node.dtype, axes, op, init)
        reduced = tuple(extent for axis, extent in enumerate(source.shape) if axis not in axes)
        if reduced != node.shape:
            result = self.reshape(result, reduced, node.shape, node.dtype)
        return result

    def reduce_value(self, value, shape, dtype, axes, op, init):
        """``value`` (of ``shape``) folded over ``axes`` with ``op`` from ``init``; those axes are dropped."""
        scalar = tensor_type((), dtype)
        init_name = self.splat(init, (), dtype)
        reduced = tuple(extent for axis, extent in enumerate(shape) if axis not in axes)
        return self.emit(
            f'"stablehlo.reduce"({value}, {init_name}) ({{\n'
            f"{self.region(op, scalar)}\n"
            f"    }}) {{dimensions = {i64_array(axes)}}} : "
            f"({tensor_type(shape, dtype)}, {scalar}) -> {tensor_type(reduced, dtype)}"
        )

    def fresh_name(self, suffix):
        """A name no other line of the node uses, for a region's arguments: ``%v3_7_s``."""
        self._temporaries += 1
        return f"%v{self.node.index}_{self._temporaries}_{suffix}"

    def while_loop(self, initial, types, condition, body):
        """A ``stablehlo.while`` over the state ``initial`` (names, of MLIR ``types``); returns the
        names of its results. ``condition(state)`` and ``body(state)`` get the state's block
        arguments and write their lines through this context (into the loop's regions): the first
        returns the ``tensor<i1>`` that continues the loop, the second the next state's names."""
        tag = self.fresh_name("s")
        state = [f"{tag}{position}" for position in range(len(initial))]
        regions = []
        for build in (condition, body):
            saved, self.lines = self.lines, []
            results = build(state)
            results = [results] if isinstance(results, str) else list(results)
            written, self.lines = self.lines, saved
            result_types = ["tensor<i1>"] if build is condition else list(types)
            lines = [f"      {name} = {text}".replace("\n", "\n  ") for name, text, _ in written]
            lines.append(f"      stablehlo.return {', '.join(results)} : {', '.join(result_types)}")
            regions.append("\n".join(lines))
        bound = ", ".join(f"{name} = {value}" for name, value in zip(state, initial))
        name = self.emit(
            f"stablehlo.while({bound}) : {', '.join(types)}\n"
            f"    cond {{\n{regions[0]}\n    }} do {{\n{regions[1]}\n    }}"
        )
        self.lines[-1][0] = f"{name}:{len(initial)}"
        return [f"{name}#{position}" for position in range(len(initial))]

    def inline(self, region, given):
        """Lower the nodes of the body ``region`` (``topos.ops.bodies.Region``) here, inside the region
        being written (a loop's), and return the names of its outputs. ``given`` maps its placeholders
        (arguments and captured values) to names; only the nodes its outputs read are lowered, each by
        its own rule, renumbered after every node lowered so far (``%v57`` in a plan of 20 nodes)."""
        offset = self.root.next_index
        self.root.next_index += len(region.nodes)
        renumbered = {
            offset + node.index: Node(
                offset + node.index,
                node.opcode,
                [offset + j for j in node.operands],
                node.shape,
                node.dtype,
                node.attrs,
                payload=node.payload,
                source=node.source,
            )
            for node in region.nodes
        }
        inner = Lowering(_Nodes(renumbered), self.portable)
        inner.root = self.root
        inner.names = {offset + index: name for index, name in given.items()}
        wanted = read_by(region.nodes, region.outputs)
        for node in region.nodes:
            if wanted[node.index] and offset + node.index not in inner.names:
                inner.lower(renumbered[offset + node.index])
        self.lines.extend(inner.lines)
        return [inner.names[offset + index] for index in region.outputs]

    # The pass ----------------------------------------------------------------------------
    def lower(self, node):
        """Lower one node through its primitive's ``stablehlo`` rule (the emitter's loop calls this)."""
        self.node = node
        self._temporaries = 0
        start = len(self.lines)
        try:
            name = lookup(node.opcode).stablehlo(self, node)
        except NotImplementedError as error:
            raise _lowering_error(node, str(error) or "the primitive has no StableHLO lowering") from None
        if not name:
            raise _lowering_error(node, "its stablehlo rule returned no value")
        if len(self.lines) > start and self.lines[-1][0] == name:
            name = self.lines[-1][0] = f"%v{node.index}"
        self.names[node.index] = name


class _Nodes:
    """What a body's ``Lowering`` reads as its plan: its renumbered nodes, by index."""

    def __init__(self, nodes):
        self.nodes = nodes


def _lowering_error(node, reason):
    where = f" ({recorded_at(node.source)})" if node.source else ""
    return LoweringError(
        f"node {node.index} ({node.opcode}) cannot be lowered to StableHLO: {reason}{where}",
        node=node.index,
        opcode=node.opcode,
    )


def emit_plan(plan, portable=False):
    return "\n".join(line for line, _ in emit_plan_rows(plan, portable))


def lower_plan(plan, portable=False):
    """A ``Lowering`` holding every scheduled node's lines (the body of ``emit_plan``);
    ``portable`` asks for the forms any StableHLO consumer runs (the module's docstring)."""
    ctx = Lowering(plan, portable)
    for index in plan.schedule:
        ctx.lower(plan.nodes[index])
    return ctx


def emit_plan_rows(plan, portable=False):
    """The lines of ``emit_plan(plan, portable)``, each with the nodes it is about: every line a node's
    lowering wrote names that node, ``(line, (index,))``; the module's frame, ``(line, ())``."""
    ctx = lower_plan(plan, portable)
    results = [(ctx.names[i], ctx.type(plan.nodes[i])) for i in plan.outputs]
    return module_rows(ctx, results)


def module_rows(ctx, results, argument_attributes=None):
    """The module around a ``Lowering``'s lines: ``@main`` of its arguments returning ``results``
    ((name, type) pairs). ``argument_attributes`` maps an argument's name to the attribute text
    written after its type (``{tf.aliasing_output = 2 : i32}``). A line written for no node
    (index None: an optimizer's update) is about no node, as the frame is."""
    attributes = argument_attributes or {}
    arguments = ", ".join(
        f"{name}: {type_}" + (f" {attributes[name]}" if name in attributes else "") for name, type_ in ctx.arguments
    )
    result_types = ", ".join(type_ for _, type_ in results)
    rows = [("module @topos {", ()), (f"  func.func @main({arguments}) -> ({result_types}) {{", ())]
    for name, text, index in ctx.lines:
        # A region (the body of a reduce or a scatter) spans several lines: each is the node's.
        about = () if index is None else (index,)
        rows.extend((line, about) for line in f"    {name} = {text}".split("\n"))
    if results:
        rows.append((f"    return {', '.join(name for name, _ in results)} : {result_types}", ()))
    else:
        rows.append(("    return", ()))
    rows.append(("  }", ()))
    rows.append(("}", ()))
    return rows
