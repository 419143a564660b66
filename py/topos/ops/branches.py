"""``Cond``: one of two bodies, chosen by a rank-0 predicate when the node runs (``topos.cond``, JAX's ``lax.cond``).

``topos.cond(pred, true_fun, false_fun, *operands)`` (``topos.model.loops``) records both
functions once, as bodies of the same arguments whose outputs agree in shape and dtype, and
one ``Cond`` node over the predicate, the operands, then what each branch closed over. The
node packs the chosen branch's outputs into one vector, as a ``Scan`` packs its results
(``topos.ops.loops.unpack`` reads them the same way: its ``pieces`` with ``carries`` 0 and
``length`` 1 are the outputs' shapes).

- forward: the predicate's branch, run on numpy (``evaluate``); a nonzero predicate is true;
- derivative: a second ``Cond`` on the same predicate whose branches are the branches' vjps
  (``branch_derivative``, recorded by ``topos.model.loops``): each gives the operands'
  cotangents and its own captured values', and zeros for the other branch's, so the two
  agree in shape. Ordinary nodes: differentiable again. The predicate gets no cotangent;
- StableHLO: ``stablehlo.if`` on ``pred != 0``, each region holding its branch's nodes;
- WebGPU: declined, as a ``Scan`` is (the interpreter runs it);
- cost: the dearer branch's.
"""

import numpy as np

from ..dtypes import FLOAT_DTYPES
from . import attributes as kinds
from . import batching
from .bodies import body_cost, evaluate, inline
from .loops import batched_step
from .registry import Meta, Primitive, lookup, register

_DERIVATIVE = {}


def derive_branches_with(rule):
    """Install ``rule(region, others) -> Region`` (``branch_derivative``); ``topos.model.loops`` does."""
    _DERIVATIVE["rule"] = rule
    return rule


def branch_derivative(region, others, first):
    """The vjp of one branch as a body: arguments the outputs' cotangents then the operands; captured
    its own captured values; outputs the operands' cotangents, then the captured values' of both branches
    in node order (``first``: whether this is the true branch), zeros for ``others``, the other's metas;
    only the float ones."""
    return _DERIVATIVE["rule"](region, others, first)


def _split(attrs):
    """``(operands, captured by true, captured by false)``: how many operands of each kind follow the predicate."""
    true, false = attrs["true_body"], attrs["false_body"]
    return len(true.arguments), len(true.captured), len(false.captured)


@register
class Cond(Primitive):
    """``Cond(pred, *operands, *captured_true, *captured_false)``: the chosen branch's outputs, packed."""

    name = "Cond"
    kernel_declined = "a branch runs on the host: no WGSL kernel chooses between two bodies' launches yet"
    attributes = {"true_body": kinds.body, "false_body": kinds.body}

    def infer(self, metas, attrs):
        true, false = attrs["true_body"], attrs["false_body"]
        operands, first, second = _split(attrs)
        if len(metas) != 1 + operands + first + second:
            self.fail(f"takes a predicate, {operands} operands and {first} + {second} captured values", metas)
        if metas[0].shape != () or metas[0].dtype not in ("float32", "float64"):
            self.fail(f"the predicate is a rank-0 float, got {metas[0]}", metas)
        if true.metas(true.arguments) != false.metas(false.arguments):
            self.fail("the two branches take different arguments", metas)
        if list(metas[1 : 1 + operands]) != true.metas(true.arguments):
            self.fail("the operands are not what the branches take", metas)
        captured = true.metas(true.captured) + false.metas(false.captured)
        if list(metas[1 + operands :]) != captured:
            self.fail("the captured values are not what the branches read", metas)
        outputs = true.metas(true.outputs)
        if outputs != false.metas(false.outputs):
            self.fail("the two branches return values of different shapes or dtypes", metas)
        if not outputs or len({m.dtype for m in outputs}) != 1 or outputs[0].dtype not in ("float32", "float64"):
            self.fail("the branches return one or more values of one float dtype", metas)
        return Meta((sum(m.size for m in outputs),), outputs[0].dtype)

    def forward(self, inputs, attrs):
        operands, first, _ = _split(attrs)
        chosen = attrs["true_body"] if inputs[0] != 0 else attrs["false_body"]
        captured = inputs[1 + operands :]
        captured = captured[:first] if chosen is attrs["true_body"] else captured[first:]
        sources = dict(zip(chosen.arguments, inputs[1 : 1 + operands]))
        sources.update(zip(chosen.captured, captured))
        results = evaluate(chosen.nodes, sources, chosen.outputs)
        return np.concatenate([np.ravel(r) for r in results]).astype(inputs[0].dtype, copy=False)

    def vjp(self, e, g, operands, out, attrs):
        true, false = attrs["true_body"], attrs["false_body"]
        outputs = true.metas(true.outputs)
        cotangents, offset = [], 0
        for meta in outputs:
            cotangents.append(e.reshape(e.slice(g, (offset,), (offset + meta.size,), (1,)), meta.shape))
            offset += meta.size
        derived = dict(
            true_body=branch_derivative(true, false.metas(false.captured), True),
            false_body=branch_derivative(false, true.metas(true.captured), False),
        )
        packed = e.apply("Cond", [operands[0]] + cotangents + list(operands[1:]), **derived)
        # The derived branches return a cotangent for each float operand and captured value, in order.
        results, offset = [None], 0
        for meta in true.metas(true.arguments) + true.metas(true.captured) + false.metas(false.captured):
            if meta.dtype not in FLOAT_DTYPES:
                results.append(None)
                continue
            results.append(e.reshape(e.slice(packed, (offset,), (offset + meta.size,), (1,)), meta.shape))
            offset += meta.size
        return results

    def batch(self, e, operands, dims, attrs):
        # JAX's cond batching rule. Under a shared predicate, one Cond of the two branches batched alike
        # (every output batched); under a batched one, both branches run batched, inline, and a Where
        # takes each example's own (both are computed, as in JAX).
        true, false = attrs["true_body"], attrs["false_body"]
        count, first, _ = _split(attrs)
        size = batching.batch_size(e, operands, dims)
        moved = [h if d is None else batching.to_front(e, h, d) for h, d in zip(operands[1:], dims[1:])]
        given = [None if d is None else 0 for d in dims[1:]]
        captured = (moved[count : count + first], moved[count + first :])
        branches = (
            batched_step(true, given[:count] + given[count : count + first], size),
            batched_step(false, given[:count] + given[count + first :], size),
        )
        if dims[0] is None:
            packed = e.apply("Cond", [operands[0]] + moved, true_body=branches[0], false_body=branches[1])
            outputs, offset = [], 0
            for meta in true.metas(true.outputs):
                step = size * meta.size
                outputs.append(e.reshape(e.slice(packed, (offset,), (offset + step,), (1,)), (size,) + meta.shape))
                offset += step
            return batching.rows(e, outputs, size), 0
        results = []
        for region, values in zip(branches, captured):
            sources = dict(zip(region.arguments, moved[:count]))
            sources.update(zip(region.captured, values))
            handles = inline(e, region.nodes, sources)
            results.append([handles[index] for index in region.outputs])
        predicate = batching.to_front(e, operands[0], dims[0])
        chosen = []
        for on_true, on_false in zip(*results):
            shape = e.shape(on_true)
            condition = e.broadcast(e.reshape(predicate, (size,) + (1,) * (len(shape) - 1)), shape)
            chosen.append(e.where(condition, on_true, on_false))
        return batching.rows(e, chosen, size), 0

    def stablehlo(self, ctx, node):
        count, first, _ = _split(node.attrs)
        names = ctx.operands(node)
        zero = ctx.splat(0.0, (), node.dtype)
        predicate = ctx.compare("NE", names[0], zero, (), node.dtype)
        regions = []
        chosen = [
            (node.attrs["true_body"], names[1 + count : 1 + count + first]),
            (node.attrs["false_body"], names[1 + count + first :]),
        ]
        for branch, captured in chosen:
            saved, ctx.lines = ctx.lines, []
            given = dict(zip(branch.arguments, names[1 : 1 + count]))
            given.update(zip(branch.captured, captured))
            results = ctx.inline(branch, given)
            flat = [ctx.reshape(r, m.shape, (m.size,), m.dtype) for r, m in zip(results, branch.metas(branch.outputs))]
            if len(flat) > 1:
                types = ", ".join(ctx.tensor_type((m.size,), m.dtype) for m in branch.metas(branch.outputs))
                flat = [ctx.emit(f"stablehlo.concatenate {', '.join(flat)}, dim = 0 : ({types}) -> {ctx.type(node)}")]
            written, ctx.lines = ctx.lines, saved
            lines = [f"      {name} = {text}".replace("\n", "\n  ") for name, text, _ in written]
            lines.append(f"      stablehlo.return {flat[0]} : {ctx.type(node)}")
            regions.append("\n".join(lines))
        return ctx.emit(
            f'"stablehlo.if"({predicate}) ({{\n{regions[0]}\n    }}, {{\n{regions[1]}\n    }}) : '
            f"(tensor<i1>) -> {ctx.type(node)}"
        )

    def cost(self, operands, meta, attrs):
        def cost_of(region):
            def one(node):
                metas = [Meta(region.nodes[j].shape, region.nodes[j].dtype) for j in node.operands]
                return lookup(node.opcode).cost(metas, Meta(node.shape, node.dtype), node.attrs)

            return body_cost(region, one)

        return max(cost_of(attrs["true_body"]), cost_of(attrs["false_body"]))
