"""The source opcodes: nodes with a payload and no operands.

A ``Parameter`` is trainable (its payload is the initial value), an ``Input`` is
fed per run (its payload is the default), and a ``Leaf`` is a constant.
"""

from .registry import Meta, Primitive, register


class Source(Primitive):
    arity = 0
    is_source = True
    differentiable = True

    def infer(self, metas, attrs):
        raise AssertionError("sources are recorded with their payload's meta")


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


def source_meta(payload):
    return Meta(tuple(payload.shape), payload.dtype.name)
