"""The op registry: one ``Primitive`` subclass per opcode, its rules side by side.

A primitive declares, in one class body:

- ``infer(metas, attrs)``: the output ``Meta`` (shape, dtype) from the operands'
  metas, raising ``ShapeError`` when they cannot meet;
- ``forward(inputs, attrs)``: the numpy evaluation;
- ``vjp(e, g, operands, out, attrs)``: the derivative rule, written with the
  emitter ``e`` (see ``topos.model.autodiff``) so the same rule both computes
  gradients eagerly and writes the backward as graph nodes; it returns one
  cotangent (or ``None``) per operand. A primitive that has no derivative sets
  ``differentiable = False`` instead;
- ``stablehlo(ctx, node)``: its StableHLO lowering (``topos.compiler``);
- ``kernel``: the WGSL kernel that runs it on WebGPU, or ``None`` where the
  WebGPU backend declines it.

Passes only look rules up here; ``REQUIRED_RULES`` is what a test checks every
registered primitive for, so that an op cannot be half added.
"""

from dataclasses import dataclass

from ..errors import ShapeError

REQUIRED_RULES = ("infer", "forward", "vjp", "stablehlo")


@dataclass(frozen=True)
class Meta:
    """What recording knows of a value before it runs: its shape and dtype."""

    shape: tuple
    dtype: str

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
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

    def infer(self, metas, attrs):
        raise NotImplementedError

    def forward(self, inputs, attrs):
        raise NotImplementedError

    def vjp(self, e, g, operands, out, attrs):
        raise NotImplementedError(f"{self.name} has no derivative rule")

    def stablehlo(self, ctx, node):
        raise NotImplementedError

    def normalize(self, metas, attrs):
        """Canonicalise attributes before inference (axes made positive, sorted)."""
        return attrs

    def fail(self, message, metas):
        """Raise the ShapeError that recording decorates with the user's line."""
        raise ShapeError(f"{self.name}: {message}", opcode=self.name, shapes=[m.shape for m in metas])


_REGISTRY = {}


def register(cls):
    """Class decorator: instantiate the primitive and register it under its name."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY:
        raise ValueError(f"a primitive named {cls.name!r} is already registered")
    instance = cls()
    _REGISTRY[cls.name] = instance
    return cls


def unregister(name):
    """Remove a primitive (for tests and user extensions that are replaced)."""
    _REGISTRY.pop(name, None)


def lookup(name):
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no primitive named {name!r} is registered") from None


def primitives():
    """Every registered primitive, by name."""
    return dict(_REGISTRY)


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


def format_shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def same_shape(primitive, metas):
    """The shared meta of operands that must agree in shape and dtype."""
    first = metas[0]
    for other in metas[1:]:
        if other.shape != first.shape:
            primitive.fail(
                f"operand shapes {format_shape(first.shape)} and {format_shape(other.shape)} differ", metas
            )
        if other.dtype != first.dtype:
            primitive.fail(f"operand dtypes {first.dtype} and {other.dtype} differ", metas)
    return first


def require_float(primitive, metas):
    for meta in metas:
        if meta.dtype not in ("float32", "float64"):
            primitive.fail(f"needs floating-point operands, got {meta.dtype}", metas)


def normalize_axes(primitive, metas, axes, rank):
    """Axes as a sorted tuple of non-negative ints; None means every axis."""
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, int):
        axes = (axes,)
    result = []
    for axis in axes:
        axis = int(axis)
        if not -rank <= axis < rank:
            primitive.fail(f"axis {axis} is out of range for {format_shape(metas[0].shape)} (rank {rank})", metas)
        result.append(axis % rank)
    if len(set(result)) != len(result):
        primitive.fail(f"repeated axis in {tuple(axes)}", metas)
    return tuple(sorted(result))
