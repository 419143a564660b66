"""``While``: a body repeated while a predicate of the carries holds (``topos.while_loop``, JAX's ``lax.while_loop``).

``topos.while_loop(cond_fun, body_fun, init_val)`` (``topos.model.loops``) records both
functions once, as bodies of the carries, and one ``While`` node over the initial carries,
then what ``cond_fun`` and ``body_fun`` closed over. The trip count is known only when the
node runs; the node's value packs the final carries as a ``Scan``'s does.

- forward: the body run on numpy while the predicate (a rank-0 float) is nonzero;
- derivative: JAX declines reverse mode here, since the carries of a loop of unknown length
  cannot be kept in values of fixed shapes. topos builds forward mode from reverse rules, so
  the rule recomputes instead of keeping: one ``While`` counts the trips (N), then a backward
  ``While`` runs j = N - 1 .. 0, each step recomputing the carry of step j from the initial
  carries by an inner ``While`` of j steps and applying the body's vjp there. No memory grows
  with N; the work is N (N + 1) / 2 body runs, so ``fori_loop`` and ``scan`` (a trip count
  known when recording, the carries kept) are the loops to differentiate in earnest. The
  predicate's captured values get no cotangent (they move the trip count, a step function);
- StableHLO: ``stablehlo.while`` whose condition region holds the predicate's nodes (then
  ``!= 0``) and whose body region holds the body's;
- WebGPU: declined, as a ``Scan`` is; cost: one trip's (the count is not known), stated so.
"""

import numpy as np

from ..dtypes import FLOAT_DTYPES
from . import attributes as kinds
from . import batching
from .bodies import body_cost, evaluate
from .loops import batched_loop, unpack
from .registry import Meta, Primitive, lookup, register

_DERIVATIVE = {}


def derive_whiles_with(rule):
    """Install ``rule(cond, body, wanted) -> (counting, backward)`` (``while_derivative``)."""
    _DERIVATIVE["rule"] = rule
    return rule


def while_derivative(cond, body, wanted):
    """The two loops the derivative records, each a dict of a ``While``'s attributes: ``counting``
    (the same loop carrying a trip counter) and ``backward`` (state: the carries' cotangents, the sums
    of the ``wanted`` body-captured values' cotangents, j; captured: the initial carries, then the
    body's captured values)."""
    return _DERIVATIVE["rule"](cond, body, wanted)


def _counts(attrs):
    cond, body = attrs["cond_body"], attrs["body"]
    return len(body.arguments), len(cond.captured), len(body.captured)


def _as_carries(attrs):
    """A ``Scan``'s attributes that ``unpack`` reads as this node's: its carries, no ys."""
    return {"body": attrs["body"], "carries": len(attrs["body"].arguments), "length": 0}


@register
class While(Primitive):
    """``While(*carries, *captured_by_cond, *captured_by_body)``: the final carries, packed."""

    name = "While"
    kernel_declined = "a loop's body runs on the host: no WGSL loop repeats a body's launches yet"
    attributes = {"cond_body": kinds.body, "body": kinds.body}

    def infer(self, metas, attrs):
        cond, body = attrs["cond_body"], attrs["body"]
        carries, first, second = _counts(attrs)
        if len(metas) != carries + first + second:
            self.fail(f"takes {carries} carries and {first} + {second} captured values, got {len(metas)}", metas)
        arguments = body.metas(body.arguments)
        if list(metas[:carries]) != arguments or cond.metas(cond.arguments) != arguments:
            self.fail("the carries are not what the predicate and the body take", metas)
        if list(metas[carries:]) != cond.metas(cond.captured) + body.metas(body.captured):
            self.fail("the captured values are not what the predicate and the body read", metas)
        predicate = cond.metas(cond.outputs)
        if len(predicate) != 1 or predicate[0].shape != () or predicate[0].dtype not in FLOAT_DTYPES:
            self.fail("the predicate returns one rank-0 float", metas)
        if body.metas(body.outputs) != arguments:
            self.fail("the body returns carries of other shapes or dtypes than it takes", metas)
        if not arguments or len({m.dtype for m in arguments}) != 1 or arguments[0].dtype not in FLOAT_DTYPES:
            self.fail("a loop's carries hold one float dtype", metas)
        return Meta((sum(m.size for m in arguments),), arguments[0].dtype)

    def forward(self, inputs, attrs):
        cond, body = attrs["cond_body"], attrs["body"]
        carries, first, _ = _counts(attrs)
        state = list(inputs[:carries])
        tested = dict(zip(cond.captured, inputs[carries : carries + first]))
        stepped = dict(zip(body.captured, inputs[carries + first :]))
        while True:
            tested.update(zip(cond.arguments, state))
            if not evaluate(cond.nodes, tested, cond.outputs)[0]:
                break
            stepped.update(zip(body.arguments, state))
            state = evaluate(body.nodes, stepped, body.outputs)
        return np.concatenate([np.ravel(value) for value in state]).astype(inputs[0].dtype, copy=False)

    def vjp(self, e, g, operands, out, attrs):
        cond, body = attrs["cond_body"], attrs["body"]
        carries, first, second = _counts(attrs)
        initial = list(operands[:carries])
        by_cond, by_body = list(operands[carries : carries + first]), list(operands[carries + first :])
        wanted = [
            m.dtype in FLOAT_DTYPES and e.wants(carries + first + i) for i, m in enumerate(body.metas(body.captured))
        ]
        counting, backward = while_derivative(cond, body, wanted)
        dtype = body.nodes[body.outputs[0]].dtype
        counted = e.apply("While", initial + [e.constant((), dtype, 0.0)] + by_cond + by_body, **counting)
        trips = unpack(e, counted, _as_carries(counting))[-1]
        sums = [e.constant(m.shape, m.dtype, 0.0) for m, want in zip(body.metas(body.captured), wanted) if want]
        start = e.sub(trips, e.constant((), dtype, 1.0))
        state = unpack(e, g, _as_carries(attrs)) + sums + [start]
        results = iter(unpack(e, e.apply("While", state + initial + by_body, **backward), _as_carries(backward)))
        grads = [next(results) for _ in range(carries)]
        return grads + [None] * first + [next(results) if want else None for want in wanted]

    def batch(self, e, operands, dims, attrs):
        # JAX's while batching rule (``topos.ops.loops.batched_loop``): every carry batched, the loop
        # going on while any example's predicate holds, an example whose own fails keeping its carries.
        carries, first, _ = _counts(attrs)
        size = batching.batch_size(e, operands, dims)
        moved, given = [], []
        for position, (operand, dim) in enumerate(zip(operands, dims)):
            if dim is None and position < carries:
                operand, dim = batching.stretched(e, operand, size), 0
            moved.append(operand if dim is None else batching.to_front(e, operand, dim))
            given.append(None if dim is None else 0)
        cond, body = batched_loop(attrs["cond_body"], attrs["body"], given, size)
        tested = moved[carries : carries + first]
        packed = e.apply(
            "While", moved[:carries] + tested + moved[carries + first :] + tested, cond_body=cond, body=body
        )
        return batching.rows(e, unpack(e, packed, _as_carries({"body": body})), size), 0

    def stablehlo(self, ctx, node):
        cond, body = node.attrs["cond_body"], node.attrs["body"]
        carries, first, _ = _counts(node.attrs)
        names = ctx.operands(node)
        metas = [ctx.operand_node(node, i) for i in range(len(names))]
        types = [ctx.tensor_type(m.shape, m.dtype) for m in metas]

        def condition(state):
            given = dict(zip(cond.arguments, state[:carries]))
            given.update(zip(cond.captured, state[carries : carries + first]))
            (predicate,) = ctx.inline(cond, given)
            return ctx.compare("NE", predicate, ctx.splat(0.0, (), node.dtype), (), node.dtype)

        def step(state):
            given = dict(zip(body.arguments, state[:carries]))
            given.update(zip(body.captured, state[carries + first :]))
            return ctx.inline(body, given) + state[carries:]

        final = ctx.while_loop(names, types, condition, step)
        flat = [
            ctx.reshape(v, m.shape, (m.size,), m.dtype) for v, m in zip(final[:carries], body.metas(body.arguments))
        ]
        if len(flat) == 1:
            return flat[0]
        joined = ", ".join(ctx.tensor_type((m.size,), m.dtype) for m in body.metas(body.arguments))
        return ctx.emit(f"stablehlo.concatenate {', '.join(flat)}, dim = 0 : ({joined}) -> {ctx.type(node)}")

    def cost(self, operands, meta, attrs):
        # One trip's: the trip count is known only when the loop runs.
        def cost_of(region):
            def one(node):
                metas = [Meta(region.nodes[j].shape, region.nodes[j].dtype) for j in node.operands]
                return lookup(node.opcode).cost(metas, Meta(node.shape, node.dtype), node.attrs)

            return body_cost(region, one)

        (f1, b1), (f2, b2) = cost_of(attrs["cond_body"]), cost_of(attrs["body"])
        return f1 + f2, b1 + b2
