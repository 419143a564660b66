"""Loops that stay loops: ``Scan``, one node however many steps, its step held as a body (a ``Region``).

``topos.scan(f, init, xs)`` (``topos.model.loops``) records ``f`` once and one ``Scan`` node
over the initial carries, the stacked xs and what ``f`` closed over, in that order. A node
has one value, so the node's value packs every result into one vector (as ``Eigh`` packs
its two): the final carries, then each stacked output ``ys`` ([length, ...]), each flattened
in order; ``unpack`` cuts them apart with ``Slice`` and ``Reshape``. Every carry and output
holds the body's one float dtype, and a carry keeps its shape and dtype through the step.

- forward: the body run on numpy, ``length`` times (``topos.ops.bodies.evaluate``), so a
  step computes what the same ops recorded unrolled compute, bit for bit;
- derivative: JAX's (``_scan_transpose`` in ``jax/_src/lax/control_flow/loops.py``): a
  second ``Scan`` that runs the other way, whose step is the vjp of the forward step. Its
  carries are the carries' cotangents and the running sums of the captured values'; its
  xs are each step's carry, the xs and the ys' cotangents; its outputs the xs' cotangents.
  The carry each step started from is *recomputed*: the rule records one more forward
  ``Scan`` over the same body that also returns its carries as outputs. A forward that
  always kept them would hold ``length`` carries for every loop, differentiated or not,
  and the node is recorded before anyone asks for a gradient; the step's other
  intermediates are recomputed inside the backward step from that carry (memory
  ``length`` carries, not ``length`` whole steps; twice the forward's work). Both are
  ordinary ``Scan`` nodes, so the derivative is differentiated again the same way
  (``jvp``, second order).
- StableHLO: a ``stablehlo.while`` over (step, carries, ys, xs, captured), the body's nodes
  lowered inside its region (``ctx.inline``), each step's x read with ``dynamic_slice`` and
  its y written with ``dynamic_update_slice``;
- WebGPU: declined (the interpreter runs the loop), stated in ``kernel_declined``;
- cost: the body's (the nodes its outputs read) times ``length``.
"""

import numpy as np

from ..dtypes import FLOAT_DTYPES as FLOAT_TYPES
from ..text import format_shape
from . import attributes as kinds
from . import batching
from . import portable_lowering as p
from .bodies import body_cost, evaluate
from .registry import Meta, Primitive, integer_attr, lookup, register

#: ``step_derivative`` fills this with ``topos.model.loops``' rule when that module is imported:
#: recording a step's vjp as a body needs the tape and the reverse scan, layers above this one.
_DERIVATIVE = {}


def derive_steps_with(rule):
    """Install ``rule(region, carries, wanted_xs, wanted_captured) -> Region`` (``step_derivative``)."""
    _DERIVATIVE["rule"] = rule
    return rule


def step_derivative(region, carries, wanted_xs, wanted_captured):
    """The body of the backward ``Scan`` (the module's docstring) for the step ``region``."""
    return _DERIVATIVE["rule"](region, carries, wanted_xs, wanted_captured)


def batch_steps_with(rule):
    """Install ``rule(region, dims, size) -> Region`` (``batched_step``), as ``derive_steps_with`` does."""
    _DERIVATIVE["batch"] = rule
    return rule


def batched_step(region, dims, size):
    """The step of a batched ``Scan`` (``topos.model.vmap``): ``region`` applied to a batch of ``size``
    at once, ``dims`` saying which of its arguments, then captured values, are batched (at axis 0);
    every output batched at axis 0."""
    return _DERIVATIVE["batch"](region, dims, size)


def batch_loops_with(rule):
    """Install ``rule(cond, body, dims, size) -> (cond, body)`` (``batched_loop``)."""
    _DERIVATIVE["batch loop"] = rule
    return rule


def batched_loop(cond, body, dims, size):
    """A ``While``'s predicate and body batched (``topos.model.vmap``): the predicate holds while any
    example's does, and the body steps only the examples whose own predicate holds (the others keep
    their carries). ``dims``: the carries' (all 0), the predicate's captured values', the body's; the
    batched body reads the body's captured values, then the predicate's again."""
    return _DERIVATIVE["batch loop"](cond, body, dims, size)


def counts(attrs):
    """``(carries, xs, captured)``: how many operands of each kind a ``Scan`` of ``attrs`` takes, in order."""
    region, carries = attrs["body"], attrs["carries"]
    return carries, len(region.arguments) - carries, len(region.captured)


def pieces(attrs):
    """``(shape, offset)`` of each result packed in a ``Scan``'s value: the carries, then the stacked ys."""
    region, carries, length = attrs["body"], attrs["carries"], attrs["length"]
    found, offset = [], 0
    for position, meta in enumerate(region.metas(region.outputs)):
        shape = meta.shape if position < carries else (length,) + meta.shape
        found.append((shape, offset))
        offset += Meta(shape, meta.dtype).size
    return found


def unpack(e, packed, attrs):
    """The results a ``Scan``'s value packs (final carries, then the stacked ys), cut apart through ``e``."""
    results = []
    for shape, offset in pieces(attrs):
        size = Meta(shape, "float64").size
        whole = offset == 0 and (size,) == tuple(e.shape(packed))  # one result: the value itself, no Slice
        results.append(e.reshape(packed if whole else e.slice(packed, (offset,), (offset + size,), (1,)), shape))
    return results


@register
class Scan(Primitive):
    """``Scan(*carries, *xs, *captured)``: ``length`` steps of ``body``; packs final carries and stacked ys."""

    name = "Scan"
    kernel_declined = (
        "a loop's body runs on the host: no WGSL loop repeats a body's launches with the carry resident yet"
    )
    attributes = {"body": kinds.body, "length": kinds.count, "carries": kinds.count, "reverse": kinds.flag}

    def normalize(self, metas, attrs):
        length = integer_attr(self, metas, attrs["length"], "length")
        carries = integer_attr(self, metas, attrs["carries"], "carries")
        return {"body": attrs["body"], "length": length, "carries": carries, "reverse": bool(attrs["reverse"])}

    def infer(self, metas, attrs):
        region, length = attrs["body"], attrs["length"]
        carries, xs, captured = counts(attrs)
        if length < 0 or xs < 0 or len(metas) != carries + xs + captured:
            self.fail(f"takes {carries} carries, {xs} xs and {captured} captured values, got {len(metas)}", metas)
        arguments = region.metas(region.arguments)
        for position, (operand, argument) in enumerate(zip(metas, arguments)):
            expected = argument if position < carries else Meta((length,) + argument.shape, argument.dtype)
            if operand != expected:
                what = f"carry {position}" if position < carries else f"xs {position - carries}"
                self.fail(f"{what} is {_text(operand)}, the body takes {_text(expected)}", metas)
        for position, (operand, placeholder) in enumerate(zip(metas[carries + xs :], region.metas(region.captured))):
            if operand != placeholder:
                self.fail(f"captured value {position} is {_text(operand)}, the body read {_text(placeholder)}", metas)
        outputs = region.metas(region.outputs)
        if len(outputs) < carries or not outputs:
            self.fail(f"the body returns {len(outputs)} values, fewer than its {carries} carries or none", metas)
        for position, (output, argument) in enumerate(zip(outputs[:carries], arguments)):
            if output != argument:
                self.fail(f"the body returns carry {position} as {_text(output)}, it takes {_text(argument)}", metas)
        dtypes = {output.dtype for output in outputs}
        if len(dtypes) != 1 or not dtypes <= set(FLOAT_TYPES):
            self.fail(f"a loop's carries and outputs hold one float dtype, got {', '.join(sorted(dtypes))}", metas)
        size = sum(Meta(shape, "float64").size for shape, _ in pieces(attrs))
        return Meta((size,), outputs[0].dtype)

    def forward(self, inputs, attrs):
        region, length, reverse = attrs["body"], attrs["length"], attrs["reverse"]
        carries, xs, _ = counts(attrs)
        state = list(inputs[:carries])
        stacked = inputs[carries : carries + xs]
        sources = dict(zip(region.captured, inputs[carries + xs :]))
        outputs = region.metas(region.outputs)
        ys = [np.empty((length,) + meta.shape, meta.dtype) for meta in outputs[carries:]]
        for step in range(length):
            t = length - 1 - step if reverse else step
            sources.update(zip(region.arguments, state + [x[t] for x in stacked]))
            results = evaluate(region.nodes, sources, region.outputs)
            state = results[:carries]
            for y, result in zip(ys, results[carries:]):
                y[t] = result
        flat = [np.ravel(value) for value in state + ys]
        return np.concatenate(flat).astype(outputs[0].dtype, copy=False)

    def vjp(self, e, g, operands, out, attrs):
        region, length, reverse = attrs["body"], attrs["length"], attrs["reverse"]
        carries, xs, captured = counts(attrs)
        arguments = region.metas(region.arguments)
        captured_metas = region.metas(region.captured)
        wanted_xs = [arguments[carries + i].dtype in FLOAT_TYPES and e.wants(carries + i) for i in range(xs)]
        wanted_captured = [
            captured_metas[i].dtype in FLOAT_TYPES and e.wants(carries + xs + i) for i in range(captured)
        ]
        # The carry each step starts from: the same steps again, each carry also returned as an output.
        history_attrs = dict(attrs, body=region.with_outputs(region.outputs[:carries] + region.arguments[:carries]))
        history = e.apply("Scan", list(operands), **history_attrs)
        befores = unpack(e, history, history_attrs)[carries:]
        cotangents = unpack(e, g, attrs)
        sums = [e.constant(m.shape, m.dtype, 0.0) for m, want in zip(captured_metas, wanted_captured) if want]
        backward_attrs = dict(
            body=step_derivative(region, carries, wanted_xs, wanted_captured),
            length=length,
            carries=carries + len(sums),
            reverse=not reverse,
        )
        xs_operands = list(operands[carries : carries + xs])
        backward = e.apply(
            "Scan",
            cotangents[:carries] + sums + befores + xs_operands + cotangents[carries:] + list(operands[carries + xs :]),
            **backward_attrs,
        )
        results = iter(unpack(e, backward, backward_attrs))
        grads = [next(results) for _ in range(carries)]
        captured_grads = [next(results) if want else None for want in wanted_captured]
        xs_grads = [next(results) if want else None for want in wanted_xs]
        return grads + xs_grads + captured_grads

    def batch(self, e, operands, dims, attrs):
        # JAX's scan batching rule: one Scan of the batched step. Every carry is batched (a carry
        # the step mixes with a batched value is batched from then on), so is every y; a batched
        # xs keeps its steps on axis 0 and its batch on axis 1, so each step's x has it on axis 0.
        carries, xs, _ = counts(attrs)
        size = batching.batch_size(e, operands, dims)
        moved, step_dims = [], []
        for position, (operand, dim) in enumerate(zip(operands, dims)):
            if position < carries:
                operand, dim = (batching.stretched(e, operand, size), 0) if dim is None else (operand, dim)
            moved.append(
                operand if dim is None else batching.move(e, operand, dim, int(carries <= position < carries + xs))
            )
            step_dims.append(None if dim is None else 0)
        batched = dict(attrs, body=batched_step(attrs["body"], step_dims, size))
        results = unpack(e, e.apply("Scan", moved, **batched), batched)
        results = [r if position < carries else batching.move(e, r, 1, 0) for position, r in enumerate(results)]
        return batching.rows(e, results, size), 0

    def stablehlo(self, ctx, node):
        region, length, reverse = node.attrs["body"], node.attrs["length"], node.attrs["reverse"]
        carries, xs, _ = counts(node.attrs)
        names = ctx.operands(node)
        metas = [ctx.operand_node(node, i) for i in range(len(names))]
        ys = [Meta((length,) + m.shape, m.dtype) for m in region.metas(region.outputs)[carries:]]
        accumulators = [ctx.splat(0.0, y.shape, y.dtype) for y in ys]
        shapes = [m.shape for m in metas[:carries]] + [y.shape for y in ys]
        if length == 0:
            return _pack(ctx, node, names[:carries] + accumulators, shapes)
        initial = [p.index(ctx, 0)] + names[:carries] + accumulators + names[carries:]
        state = (
            [Meta(m.shape, m.dtype) for m in metas[:carries]] + ys + [Meta(m.shape, m.dtype) for m in metas[carries:]]
        )
        types = ["tensor<i32>"] + [ctx.tensor_type(m.shape, m.dtype) for m in state]
        arguments = region.metas(region.arguments)

        def body(state):
            step, state = state[0], state[1:]
            held, sums, rest = state[:carries], state[carries : carries + len(ys)], state[carries + len(ys) :]
            t = ctx.emit(f"stablehlo.subtract {p.index(ctx, length - 1)}, {step} : tensor<i32>") if reverse else step
            slices = []
            for x, meta in zip(rest[:xs], arguments[carries:]):
                one = (1,) + meta.shape
                taken = p.take(ctx, x, (length,) + meta.shape, meta.dtype, [t] + [0] * len(meta.shape), one)
                slices.append(ctx.reshape(taken, one, meta.shape, meta.dtype))
            given = dict(zip(region.arguments, held + slices))
            given.update(zip(region.captured, rest[xs:]))
            results = ctx.inline(region, given)
            written = []
            for total, y, result in zip(sums, ys, results[carries:]):
                one = (1,) + y.shape[1:]
                update = ctx.reshape(result, y.shape[1:], one, y.dtype)
                written.append(p.put(ctx, total, update, y.shape, one, y.dtype, [t] + [0] * (len(one) - 1)))
            return [p.increment(ctx, step)] + results[:carries] + written + rest

        final = ctx.while_loop(initial, types, lambda state: p.counted(ctx, state[0], length), body)
        return _pack(ctx, node, final[1 : 1 + carries + len(ys)], shapes)

    def cost(self, operands, meta, attrs):
        def cost_of(body_node):
            metas = [Meta(attrs["body"].nodes[j].shape, attrs["body"].nodes[j].dtype) for j in body_node.operands]
            return lookup(body_node.opcode).cost(metas, Meta(body_node.shape, body_node.dtype), body_node.attrs)

        flops, moved = body_cost(attrs["body"], cost_of)
        return flops * attrs["length"], moved * attrs["length"]


def _pack(ctx, node, names, shapes):
    """The results flattened and joined into the node's one vector (``pieces``' order)."""
    flat = [ctx.reshape(name, shape, (Meta(shape, node.dtype).size,), node.dtype) for name, shape in zip(names, shapes)]
    if len(flat) == 1:
        return flat[0]
    types = ", ".join(ctx.tensor_type((Meta(shape, node.dtype).size,), node.dtype) for shape in shapes)
    return ctx.emit(f"stablehlo.concatenate {', '.join(flat)}, dim = 0 : ({types}) -> {ctx.type(node)}")


def _text(meta):
    return f"{format_shape(meta.shape)} {meta.dtype}"
