"""The source opcodes: nodes with a payload and no operands.

A ``Parameter`` is trainable (its payload is the initial value), an ``Input`` is
fed per run (its payload is the default), and a ``Leaf`` is a constant.
"""

from ..errors import ArgumentError
from .registry import Primitive, register


class Source(Primitive):
    arity = 0
    is_source = True
    differentiable = True

    def infer(self, metas, attrs):
        raise ArgumentError(
            f"a {self.name} has no operands to infer from: tape.{self.name.lower()}(payload) records it with the "
            "payload's shape and dtype"
        )

    def cost(self, operands, meta, attrs):
        return 0, 0  # its value is resident already: nothing is computed or moved


@register
class Parameter(Source):
    name = "Parameter"

    def stablehlo(self, ctx, node):
        return ctx.argument(node)


@register
class Input(Source):
    name = "Input"

    def stablehlo(self, ctx, node):
        return ctx.argument(node)


@register
class Leaf(Source):
    name = "Leaf"

    def stablehlo(self, ctx, node):
        return ctx.constant(node)
