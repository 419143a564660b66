"""Every primitive topos records, one class per opcode (see ``registry``)."""

from . import activations, elementwise, index, linalg, reduce, rows, shape, sources  # noqa: F401  (registers the primitives)
from . import windows  # noqa: F401  (pooling's windowed reductions)
from .registry import Meta, Primitive, lookup, missing_rules, primitives, register, unregister

__all__ = ["Meta", "Primitive", "lookup", "missing_rules", "primitives", "register", "unregister"]
