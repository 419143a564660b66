"""``CustomVjp``: a value whose derivative is the user's backward, held as a body (``topos.custom_vjp``).

``topos.custom_vjp`` (``topos.model.custom_vjp``) records the user's forward inline, then one
``CustomVjp`` node over ``(out, *arguments, *residuals, *captured)``: ``out`` is what the forward
returned, the arguments are the recorded values the function was called with, the residuals what
the forward saved for the backward, and the captured values what the backward closed over. The
attribute ``backward`` is the user's backward recorded once (a ``Region``, ``topos.ops.bodies``),
whose arguments are the residuals' placeholders and then the output's cotangent, and whose outputs
are the cotangents of the arguments ``cotangents`` marks (the others have none).

- forward: ``out`` itself, relabelled (as ``StopGradient``: a view, no copy, a ``convert`` in
  StableHLO, a view on WebGPU);
- derivative: the backward's nodes applied through the emitter (``inline``), so eager runs compute
  them, the gradient reading shows them as ordinary nodes, and ``topos.grad`` records them on the
  tape, differentiable again through their own rules. ``out``, the residuals and the captured
  values get no cotangent: the forward's own rules are never used, which is the point;
- batching: the node over the batched values, its backward batched as a body
  (``topos.ops.loops.batched_step``, as a ``Scan``'s step is).
"""

from . import attributes as kinds
from . import batching
from .bodies import inline
from .loops import batched_step
from .registry import Primitive, integer_attr, register


def cotangent_flags(value, metas):
    """One flag an argument: whether the backward gives it a cotangent."""
    if not (isinstance(value, tuple) and all(isinstance(v, bool) for v in value)):
        return "expected a tuple of true or false, one an argument"
    return None


def counts(attrs):
    """``(arguments, residuals, captured)``: how many operands of each kind follow ``out``."""
    region = attrs["backward"]
    return attrs["arguments"], len(region.arguments) - 1, len(region.captured)


@register
class CustomVjp(Primitive):
    """``CustomVjp(out, *arguments, *residuals, *captured)``: ``out``, differentiated by the held ``backward``."""

    name = "CustomVjp"
    kernel = "copy"
    returns_view = True  # its forward hands back ``out`` itself
    attributes = {"backward": kinds.body, "arguments": kinds.count, "cotangents": cotangent_flags}

    def normalize(self, metas, attrs):
        arguments = integer_attr(self, metas, attrs["arguments"], "arguments")
        flags = tuple(bool(flag) for flag in attrs["cotangents"])
        return {"backward": attrs["backward"], "arguments": arguments, "cotangents": flags}

    def infer(self, metas, attrs):
        region = attrs["backward"]
        arguments, residuals, captured = counts(attrs)
        if residuals < 0 or len(metas) != 1 + arguments + residuals + captured:
            self.fail(
                f"takes out, {arguments} arguments, {max(residuals, 0)} residuals and {captured} captured values, "
                f"got {len(metas)} operands",
                metas,
            )
        out, given = metas[0], metas[1 : 1 + arguments]
        placeholders = region.metas(region.arguments + region.captured)
        supplied = list(metas[1 + arguments :])
        supplied.insert(residuals, out)  # the backward's last argument is the output's cotangent
        for position, (have, want) in enumerate(zip(supplied, placeholders)):
            if have != want:
                self.fail(f"operand {position} for the backward is {have}, the backward read {want}", metas)
        flags = attrs["cotangents"]
        if len(flags) != arguments or sum(flags) != len(region.outputs):
            self.fail(f"the backward returns {len(region.outputs)} cotangents for {arguments} arguments", metas)
        cotangents = iter(region.metas(region.outputs))
        for position, (meta, flag) in enumerate(zip(given, flags)):
            if flag and (got := next(cotangents)) != meta:
                self.fail(f"the backward's cotangent of argument {position} is {got}, the argument is {meta}", metas)
        return out

    def forward(self, inputs, attrs):
        return inputs[0]

    def vjp(self, e, g, operands, out, attrs):
        region = attrs["backward"]
        arguments, residuals, captured = counts(attrs)
        given = operands[1 + arguments :]
        sources = dict(zip(region.arguments, list(given[:residuals]) + [g]))
        sources.update(zip(region.captured, given[residuals:]))
        handles = inline(e, region.nodes, sources)
        cotangents = iter(handles[i] for i in region.outputs)
        found = [next(cotangents) if flag else None for flag in attrs["cotangents"]]
        return [None] + found + [None] * (residuals + captured)

    def batch(self, e, operands, dims, attrs):
        # ``out`` and the arguments are batched, shared ones stretched (so each cotangent the batched
        # backward returns, batched, has its argument's shape; a stretch's own rule sums it for a shared
        # value), the residuals and captured values as they come; the backward batched as a body whose
        # cotangent argument is batched, as ``out`` is.
        arguments, residuals, _ = counts(attrs)
        size = batching.batch_size(e, operands, dims)
        moved, given = [], []
        for position, (operand, dim) in enumerate(zip(operands, dims)):
            if dim is None and position <= arguments:
                operand, dim = batching.stretched(e, operand, size), 0
            moved.append(operand if dim is None else batching.to_front(e, operand, dim))
            given.append(None if dim is None else 0)
        backward = batched_step(
            attrs["backward"], given[1 + arguments :][:residuals] + [0] + given[1 + arguments + residuals :], size
        )
        return e.apply("CustomVjp", moved, **dict(attrs, backward=backward)), 0

    def stablehlo(self, ctx, node):
        # The identity: a convert to the same type, so that the node still has its own %v name.
        return ctx.emit(f"stablehlo.convert {ctx.operands(node)[0]} : {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        return k.new_view(node, views[0])  # ``out``'s own view: nothing runs on the device

    def cost(self, operands, meta, attrs):
        return 0, 0  # it relabels out's memory: nothing is computed or moved
