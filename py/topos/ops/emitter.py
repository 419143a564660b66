"""The emitter's named helpers, which every derivative rule is written through (``e`` in ``vjp``).

An emitter applies primitives to handles: ``topos.model.autodiff``'s eager one to numpy arrays,
the recording's and the compiler's to nodes. Its base lives here, beside the rules that call it,
so that a rule that records ops through an emitter of its own (``associative_scan``'s ``Traced``)
needs nothing from the layers above.
"""

from ..errors import MissingRuleError


class Emitter:
    """Named helpers over the three operations an emitter must provide:
    ``apply(opcode, operands, attrs)``, ``shape(handle)`` and ``like(handle, value)``
    (a constant of ``value`` with the handle's shape and dtype)."""

    def apply(self, opcode, operands, **attrs):
        raise NotImplementedError

    def shape(self, handle):
        raise NotImplementedError

    def like(self, handle, value):
        raise NotImplementedError

    def constant(self, shape, dtype, value):
        """A constant of ``value`` broadcast to ``shape`` in ``dtype`` (a body's ``Leaf``, ``topos.ops.bodies``)."""
        raise MissingRuleError(f"{type(self).__name__} makes no constants, so it cannot inline a body")

    #: Set by the reverse scan before each rule: for each operand of the node, whether
    #: the scan keeps its cotangent. ``None`` (outside a scan) means every operand.
    wanted = None

    def at(self, node):
        """Called by the reverse scan before it applies ``node``'s rule; a graph
        emitter notes the node so the gradient nodes carry its source line."""

    def wants(self, position):
        """Whether the rule being applied should form the cotangent of operand ``position``.

        A rule may return ``None`` for an operand that is not wanted (a constant,
        say) instead of computing a cotangent that the scan would drop.
        """
        return self.wanted is None or self.wanted[position]

    def neg(self, a):
        return self.apply("Neg", [a])

    def exp(self, a):
        return self.apply("Exp", [a])

    def log(self, a):
        return self.apply("Log", [a])

    def tanh(self, a):
        return self.apply("Tanh", [a])

    def add(self, a, b):
        return self.apply("Add", [a, b])

    def sub(self, a, b):
        return self.apply("Sub", [a, b])

    def mul(self, a, b):
        return self.apply("Mul", [a, b])

    def div(self, a, b):
        return self.apply("Div", [a, b])

    def pow(self, a, b):
        return self.apply("Pow", [a, b])

    def equal(self, a, b):
        return self.apply("Equal", [a, b])

    def greater(self, a, b):
        return self.apply("Greater", [a, b])

    def greater_equal(self, a, b):
        return self.apply("GreaterEqual", [a, b])

    def less(self, a, b):
        return self.apply("Less", [a, b])

    def where(self, c, a, b):
        return self.apply("Where", [c, a, b])

    def sum(self, a, axes, keepdims):
        return self.apply("Sum", [a], axes=tuple(axes), keepdims=keepdims)

    def reshape(self, a, shape):
        if tuple(self.shape(a)) == tuple(shape):
            return a
        return self.apply("Reshape", [a], shape=tuple(shape))

    def broadcast(self, a, shape):
        if tuple(self.shape(a)) == tuple(shape):
            return a
        return self.apply("Broadcast", [a], shape=tuple(shape))

    def transpose(self, a, axes):
        return self.apply("Transpose", [a], axes=tuple(axes))

    def matmul(self, a, b):
        return self.apply("MatMul", [a, b])

    def slice(self, a, start, stop, step):
        return self.apply("Slice", [a], start=tuple(start), stop=tuple(stop), step=tuple(step))

    def pad(self, a, low, high, interior):
        return self.apply("Pad", [a], low=tuple(low), high=tuple(high), interior=tuple(interior))
