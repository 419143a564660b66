"""The op registry: one ``Primitive`` subclass per opcode, its rules side by side.

A primitive declares, in one class body:

- ``infer(metas, attrs)``: the output ``Meta`` (shape, dtype) from the operands'
  metas, raising ``ShapeError`` when they cannot meet;
- ``forward(inputs, attrs)``: the numpy evaluation, and ``forward_into(inputs,
  attrs, out)`` the same written into a given array (by default a copy of
  ``forward``'s; ``returns_view`` marks an op whose forward is a view);
- ``vjp(e, g, operands, out, attrs)``: the derivative rule, written with the
  emitter ``e`` (see ``topos.model.autodiff``) so the same rule both computes
  gradients eagerly and writes the backward as graph nodes; it returns one
  cotangent (or ``None``) per operand. A primitive that has no derivative sets
  ``differentiable = False`` instead;
- ``batch(e, operands, dims, attrs)``: its batching rule (``topos.vmap``), written with
  the same emitter, which applies the op once to operands that carry a batch axis
  (``topos.ops.batching`` holds the common forms);
- ``stablehlo(ctx, node)``: its StableHLO lowering (``topos.compiler``);
- ``kernel``: the WGSL kernel family that runs it on WebGPU, or ``None`` where
  the WebGPU backend declines it; an elementwise op states its ``wgsl``
  expression (``"exp(x)"``), any other op its ``wgsl_launch(k, node, views)``
  rule, and ``wgsl_declines(k, node)`` says why the device cannot run a node
  its family could (a contraction longer than a kernel's loop, say);
- ``cost(operands, meta, attrs)``: its FLOPs and bytes moved (``plan.costs()``),
  by default ``element_flops`` a result element and every value read or
  written once;
- ``attributes``: the attributes it takes, each name with its kind
  (``topos.ops.attributes``), which loading a network holds every node to.

Passes only look rules up here, on the primitive, never on its name;
``REQUIRED_RULES`` is what a test checks every registered primitive for, so
that an op cannot be half added.
"""

import numbers
from dataclasses import dataclass

from ..errors import ArgumentError, ArgumentTypeError, AxisError, MissingRuleError, ShapeError, UnknownOpcodeError
from ..text import format_shape

REQUIRED_RULES = ("infer", "forward", "vjp", "stablehlo")

#: Bytes one element of each dtype takes, for the bytes a node moves (``Primitive.cost``).
ITEM_BYTES = {"float32": 4, "float64": 8, "int32": 4, "uint32": 4}


@dataclass(frozen=True)
class Meta:
    """What recording knows of a value before it runs: its shape and dtype."""

    shape: tuple
    dtype: str

    @property
    def rank(self):
        """The number of axes: ``len(shape)``."""
        return len(self.shape)

    @property
    def size(self):
        """The number of elements: the product of ``shape`` (1 for rank 0)."""
        size = 1
        for extent in self.shape:
            size *= extent
        return size


class Primitive:
    """Base class of every opcode. Subclasses are registered by ``@register``."""

    name = None
    #: number of operands, or None for a variadic op (Concatenate)
    arity = None
    #: False for ops with no derivative (comparisons, OneHot); their vjp is never called
    differentiable = True
    #: True for Parameter, Input and Leaf, the nodes with payloads and no operands
    is_source = False
    #: name of the WGSL kernel family that runs this op, None where WebGPU declines it
    kernel = None
    #: where ``kernel`` is None, the sentence the kernels reading shows for why WebGPU declines the op
    kernel_declined = None
    #: the result dtypes the device computes this op in: WGSL has f32, i32 and u32, and a result of any
    #: other dtype (float64), or of one an op does not list here, stays on the host
    device_dtypes = ("float32",)
    #: an elementwise op's WGSL expression over its operands x, y and z (``"exp(x)"``, ``"x + y"``),
    #: which the shared elementwise template computes for every element; None for other ops
    wgsl = None
    #: FLOPs one result element costs in the default cost model (``cost``): 0 for an op that only moves elements
    element_flops = 1
    #: True where the numpy forward returns a view of operand 0 rather than a new array (reshape,
    #: transpose, slice): the interpreter's arena (``topos.model.interpreter``) gives its value no memory
    #: of its own and keeps the operand's memory as long as the view is read
    returns_view = False
    #: the attributes this op takes as ``normalize`` leaves them, each name with its kind (a check of the
    #: value, ``topos.ops.attributes``): loading a network holds every node to them. None where the op
    #: does not declare them; a built-in op that declares none takes none
    attributes = None

    def infer(self, metas, attrs):
        """The shape rule: the output's ``Meta`` (shape, dtype) from the operands' metas.

        ``metas`` holds one ``Meta`` per operand (``arity`` of them unless the op is
        variadic), ``attrs`` the dict that ``normalize`` returned. Operands come as
        recorded: the ``topos.*`` functions insert ``Broadcast`` nodes, ``infer`` does
        not. When they cannot meet, raise through ``self.fail(message, metas)``: the
        ``ShapeError`` then names the user's line. ``Tape.append`` calls it once per
        recorded node (the graph emitter's backward nodes included), and loading a
        network calls it again to check each node, so it must be pure.

        ```python
        def infer(self, metas, attrs):
            if metas[0].rank != 2:
                self.fail(f"needs a matrix, got rank {metas[0].rank}", metas)
            rows, cols = metas[0].shape
            return Meta((cols, rows), metas[0].dtype)
        ```
        """
        raise MissingRuleError(f"{self.name} has no shape rule (infer)")

    def forward(self, inputs, attrs):
        """The numpy evaluation: one array, of the shape and dtype ``infer`` gave, from ``inputs``.

        ``inputs`` holds one numpy array per operand; they are read-only and may be
        shared, so never write into them. The numpy interpreter (``Network.forward``,
        ``plan.run``) calls it, and so does ``EagerEmitter.apply`` when a derivative
        rule applies the op eagerly: there a constant from ``e.like`` is a rank-0
        array, which the forward must broadcast as numpy does.
        """
        raise MissingRuleError(f"{self.name} has no numpy forward")

    def forward_into(self, inputs, attrs, out):
        """The numpy evaluation written into ``out``, which it returns: what the interpreter runs.

        ``out`` is a writable array of the shape and dtype ``infer`` gave, a slot of
        the plan's arena (``topos.model.interpreter``) that no input overlaps; the
        interpreter reuses it from run to run. This base copies ``forward``'s value in;
        an op whose numpy call takes ``out=`` writes there directly and spares an
        allocation and a copy. The result must equal ``forward``'s to the last bit.

        ```python
        def forward_into(self, inputs, attrs, out):  # Exp
            return np.exp(inputs[0], out=out)
        ```
        """
        out[...] = self.forward(inputs, attrs)
        return out

    def vjp(self, e, g, operands, out, attrs):
        """The derivative rule: a list of one cotangent (or ``None``) per operand, given ``g``.

        ``g`` is the cotangent of the node's output; ``operands`` and ``out`` are the
        forward values of its operands and of itself. All are handles of the emitter
        ``e`` (``topos.model.autodiff``): numpy arrays for ``EagerEmitter``
        (``Run.backward``), node indices for ``topos.model.lowering``'s ``GraphEmitter`` (the
        gradient reading), values of the tape being recorded for ``topos.model.derivatives``'
        ``TapeEmitter`` (``topos.grad``: so the rule's own nodes are differentiated again,
        and every op a rule applies needs a rule of its own), so compute only through ``e``: its helpers (``e.add``,
        ``e.mul``, ``e.sum(a, axes, keepdims)``, ``e.broadcast``, ...),
        ``e.apply(opcode, operands, **attrs)``, ``e.shape(handle)`` and
        ``e.like(handle, value)`` (a constant shaped like ``handle``). Each cotangent
        has its operand's shape and dtype. ``None`` means no cotangent (a condition
        operand, say); return it where ``e.wants(position)`` is false to skip the work.

        The reverse scan calls it only when some operand is wanted, never for a
        primitive with ``differentiable = False``; this base raises ``MissingRuleError``
        (a ``NotImplementedError``).

        ```python
        def vjp(self, e, g, operands, out, attrs):  # Exp: d exp(x) = exp(x)
            return [e.mul(g, out)]
        ```
        """
        raise MissingRuleError(f"{self.name} has no derivative rule")

    def batch(self, e, operands, dims, attrs):
        """The batching rule (``topos.vmap``): ``(handle, out_dim)``, the op applied once to a batch.

        ``operands`` are handles of the emitter ``e`` (values of the tape being recorded),
        ``dims`` one entry an operand: the axis its batch runs along, or None for an operand
        every example shares (at least one is batched: a node of shared operands only is
        re-emitted as is). It returns the batched result and the axis its batch runs along.
        ``topos.ops.batching`` writes the common forms (every batch moved to the front, axis
        attributes shifted by one), which most ops name: ``batch = batching.leading``. This
        base declines with ``MissingRuleError`` naming the op.

        ```python
        def batch(self, e, operands, dims, attrs):  # Transpose: the batch first, the axes after it
            x = batching.to_front(e, operands[0], dims[0])
            return e.transpose(x, (0,) + batching.shifted(attrs["axes"])), 0
        ```
        """
        raise MissingRuleError(f"{self.name} has no batching rule (vmap)")

    def stablehlo(self, ctx, node):
        """The StableHLO lowering: write the node through ``ctx`` and return the SSA name of its value.

        ``node`` is the plan's ``Node`` (``.shape``, ``.dtype``, ``.attrs``,
        ``.operands``); ``ctx`` is a ``topos.compiler.Lowering``:
        ``ctx.operands(node)`` are the operands' SSA names, ``ctx.operand_node(node, i)``
        an operand's node, ``ctx.type(node)`` and ``ctx.tensor_type(shape, dtype)``
        MLIR types (``tensor<2x3xf64>``); ``ctx.emit(text)`` writes ``%name = text``
        and returns the new name, and ``elementwise``, ``splat``, ``compare``,
        ``convert``, ``select``, ``broadcast_in_dim``, ``reshape``, ``reduce`` and
        ``region`` write common forms. The context renames the node's last line
        ``%v{index}``. Raising ``NotImplementedError`` (this base raises
        ``MissingRuleError``, one) or returning nothing makes emitting raise
        ``LoweringError`` naming the node.

        ```python
        def stablehlo(self, ctx, node):  # Exp
            return ctx.elementwise("stablehlo.exponential", node)
        ```
        """
        raise MissingRuleError(f"{self.name} has no StableHLO lowering")

    def wgsl_launch(self, k, node, views):
        """The WebGPU rule: write the node's launches through ``k`` and return the view of its value.

        ``node`` is the plan's ``Node``; ``views`` hold its operands' views on the
        device (``topos.compiler.wgsl.views.View``: a buffer, an offset and strides,
        or a constant), which ``.broadcast``, ``.transpose``, ``.slice`` and
        ``.reshape`` re-view without moving an element. ``k`` is the kernel selector
        (``topos.compiler.kernels.Selector``): ``k.elementwise(expression, node,
        views)``, ``k.reduce(fold, node, view)``, ``k.matmul(node, a, b)``,
        ``k.rows(kernel, entry, node, views)`` (a row kernel over the last axis),
        ``k.take(node, values, indices)`` and ``k.one_hot(node, indices)`` launch a
        kernel family into a new buffer and return its view; ``k.output(node)``
        allocates one, which ``k.fill(view, value, node)`` and ``k.place(view,
        target, node)`` write; ``k.dense(view, node)`` is a view made contiguous;
        ``k.new_view(node, view)`` records an op that only re-views its operand.

        This base computes an elementwise op from its ``wgsl`` expression; an op with
        neither that nor a rule of its own is declined, and the numpy interpreter runs it.

        ```python
        def wgsl_launch(self, k, node, views):  # Transpose: nothing runs, the strides change
            return k.new_view(node, views[0].transpose(node.attrs["axes"]))
        ```
        """
        if self.wgsl is None:
            raise MissingRuleError(f"{self.name} has no WGSL kernel rule")
        return k.elementwise(self.wgsl, node, views)

    def wgsl_declines(self, k, node):
        """Why WebGPU cannot run ``node`` though its kernel family could (a sentence), or None.

        Asked after the reasons every op shares (float64, int32 results, empty or
        oversized values, too many axes); ``k.operand_node(node, i)`` is an operand's
        node and ``k.LOOP_LIMIT``, ``k.MAX_BATCH_RANK``, ``k.LANES`` the kernels' limits.
        """
        return None

    def cost(self, operands, meta, attrs):
        """``(flops, bytes moved)`` of one node (``plan.costs()``): ``operands`` the operands' metas, ``meta`` the result's.

        By default ``element_flops`` a result element, each operand read once and
        the result written once, at its dtype's width (``bytes_moved``).
        """
        return self.element_flops * meta.size, bytes_moved(operands, meta)

    def index_range(self, shapes, attrs):
        """For an op whose last operand holds int32 indices: how many slots they address and
        those slots in words (``check_indices``); None for an op that reads no indices."""
        return None

    def normalize(self, metas, attrs):
        """Canonicalise attributes before inference (axes made positive, sorted)."""
        return attrs

    def fail(self, message, metas):
        """Raise the ShapeError that recording decorates with the user's line."""
        raise ShapeError(f"{self.name}: {message}", opcode=self.name, shapes=[m.shape for m in metas])


_REGISTRY = {}


def register(cls):
    """Class decorator: instantiate the primitive and register it under its name."""
    if not (isinstance(cls, type) and issubclass(cls, Primitive)):
        raise ArgumentTypeError(f"register() takes a Primitive subclass, got {cls!r}")
    if not cls.name:
        raise ArgumentTypeError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY:
        raise ArgumentError(f"a primitive named {cls.name!r} is already registered")
    instance = cls()
    _REGISTRY[cls.name] = instance
    return cls


def unregister(name):
    """Remove a primitive (for tests and user extensions that are replaced)."""
    _REGISTRY.pop(name, None)


def lookup(name):
    """The registered primitive (the one instance ``@register`` made) whose opcode is ``name``.

    Raises ``UnknownOpcodeError`` (a ``KeyError``) if no primitive of that name is registered.
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownOpcodeError(f"no primitive named {name!r} is registered") from None


def primitives():
    """Every registered primitive, by name."""
    return dict(_REGISTRY)


def snapshot():
    """The registry as it stands, for ``restore`` (the playground puts it back after each script)."""
    return dict(_REGISTRY)


def restore(saved):
    """Make the registered primitives exactly those of ``saved``, a ``snapshot()``."""
    _REGISTRY.clear()
    _REGISTRY.update(saved)


def missing_rules(primitive):
    """The required rules a primitive does not define itself (for the completeness test)."""
    missing = []
    for rule in REQUIRED_RULES:
        if rule == "vjp" and (not primitive.differentiable or primitive.is_source):
            continue
        if rule == "forward" and primitive.is_source:
            continue
        if getattr(type(primitive), rule) is getattr(Primitive, rule):
            missing.append(rule)
    return missing


def bytes_moved(operands, meta):
    """Every operand read once and the result written once, at each dtype's width: the default cost's bytes."""
    return sum(m.size * ITEM_BYTES[m.dtype] for m in operands) + meta.size * ITEM_BYTES[meta.dtype]


def same_shape(primitive, metas):
    """The shared meta of operands that must agree in shape and dtype."""
    first = metas[0]
    for other in metas[1:]:
        if other.shape != first.shape:
            primitive.fail(f"operand shapes {format_shape(first.shape)} and {format_shape(other.shape)} differ", metas)
        if other.dtype != first.dtype:
            primitive.fail(f"operand dtypes {first.dtype} and {other.dtype} differ", metas)
    return first


def require_float(primitive, metas):
    for meta in metas:
        if meta.dtype not in ("float32", "float64"):
            primitive.fail(f"needs floating-point operands, got {meta.dtype}", metas)


def axis_index(axis, shape, opcode, new_axis=False):
    """``axis`` of a value of ``shape`` as an index in ``0..rank-1``; raises ``AxisError`` otherwise.

    Negative axes count from the end, as in numpy. With ``new_axis`` the axis is
    where a new axis goes (``expand_dims``, ``stack``), so the rank is one more.
    An axis that is not an integer, or out of ``-rank..rank-1``, raises an error
    naming the axis and the shape; it is never wrapped modulo the rank.
    """
    rank = len(shape) + (1 if new_axis else 0)
    what = "a new axis of " if new_axis else ""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise AxisError(f"{opcode}: axis {axis!r} is not an integer", opcode=opcode, shapes=[shape])
    axis = int(axis)
    if not -rank <= axis < rank:
        valid = f"axes {-rank}..{rank - 1}" if rank else "no axes"
        raise AxisError(
            f"{opcode}: axis {axis} is out of range for {what}{format_shape(shape)} ({valid})",
            opcode=opcode,
            shapes=[shape],
        )
    return axis % rank


def axis_tuple(axes, shape, opcode):
    """``axes`` (None for every axis, an int, or a tuple or list of ints) as a sorted tuple of
    indices in ``0..rank-1``; raises ``AxisError`` for an axis out of range, ``ShapeError`` for a repeat."""
    if axes is None:
        return tuple(range(len(shape)))
    if isinstance(axes, (tuple, list)):
        result = [axis_index(axis, shape, opcode) for axis in axes]
    else:
        result = [axis_index(axes, shape, opcode)]
    if len(set(result)) != len(result):
        raise ShapeError(f"{opcode}: repeated axis in {tuple(axes)}", opcode=opcode, shapes=[shape])
    return tuple(sorted(result))


def normalize_axes(primitive, metas, axes, rank):
    """Axes as a sorted tuple of non-negative ints; None means every axis (``axis_tuple`` for an operand)."""
    return axis_tuple(axes, metas[0].shape, primitive.name)


def integer_attr(primitive, metas, value, what):
    """An attribute that must be an integer (a depth, an extent), as an int; raises ``ShapeError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        primitive.fail(f"{what} must be an integer, got {value!r}", metas)
    return int(value)


def integer_tuple_attr(primitive, metas, values, what):
    """An attribute that must be a sequence of integers (a shape, a box), as a tuple;
    raises ``ShapeError`` otherwise."""
    if isinstance(values, numbers.Integral) and not isinstance(values, bool):
        values = (values,)
    if not isinstance(values, (tuple, list)) or any(
        isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in values
    ):
        primitive.fail(f"{what} must be a tuple of integers, got {values!r}", metas)
    return tuple(int(v) for v in values)
