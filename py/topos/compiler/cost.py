"""The cost of a plan: floating-point operations and bytes moved, per node and in total.

The model is deliberately simple and stated here so that its numbers can be read:

- FLOPs: one per output element for elementwise arithmetic, comparisons and
  selections (transcendentals count one too; ``Gelu`` counts its 9 steps);
  ``2 m n k`` per batch for ``MatMul``; one per input element folded away for
  reductions (``in - out``); one per update for ``ScatterAdd``; none for sources
  and for ops that only move elements (reshape, broadcast, transpose, slice, pad,
  concatenate, take).
- Bytes moved: each operand read once and the result written once, at the
  dtype's width. Sources move nothing (their values are already resident), and
  ``Reshape`` and ``StopGradient`` move nothing (they relabel memory).

A primitive registered from outside may define ``cost(self, operand_metas,
meta, attrs)`` returning ``(flops, bytes)`` to replace these defaults.
"""

from ..ops import lookup
from ..ops.registry import Meta
from ..text import plural

ITEM_BYTES = {"float32": 4, "float64": 8, "int32": 4}

MOVES_ONLY = {"Reshape", "Broadcast", "Transpose", "Slice", "Pad", "Concatenate", "Take"}
RELABELS = {"Reshape", "StopGradient"}
ELEMENT_FLOPS = {"Gelu": 9}


def default_cost(opcode, operands, meta, attrs):
    """``(flops, bytes)`` of one node under the model above."""
    if opcode in ("Parameter", "Input", "Leaf") or opcode in RELABELS:
        return 0, 0
    moved = sum(m.size * ITEM_BYTES[m.dtype] for m in operands) + meta.size * ITEM_BYTES[meta.dtype]
    if opcode in MOVES_ONLY:
        flops = 0
    elif opcode == "MatMul":
        a = operands[0]
        flops = 2 * meta.size * a.shape[-1]
    elif opcode in ("Sum", "Max"):
        flops = operands[0].size - meta.size
    elif opcode == "ScatterAdd":
        flops = operands[0].size
    else:
        flops = meta.size * ELEMENT_FLOPS.get(opcode, 1)
    return flops, moved


def node_cost(node, operand_nodes):
    operands = [Meta(n.shape, n.dtype) for n in operand_nodes]
    primitive = lookup(node.opcode)
    custom = getattr(primitive, "cost", None)
    if custom is not None:
        flops, moved = custom(operands, node.meta, node.attrs)
        return int(flops), int(moved)
    return default_cost(node.opcode, operands, node.meta, node.attrs)


class Costs:
    """FLOPs and bytes moved: ``per_node`` (index -> (flops, bytes)), ``flops`` and ``bytes`` in total."""

    def __init__(self, per_node):
        self.per_node = per_node
        self.flops = sum(f for f, _ in per_node.values())
        self.bytes = sum(b for _, b in per_node.values())

    def node_text(self, index):
        """How ``describe(costs=True)`` shows one node's cost: ``[48 flops, 208 bytes]``."""
        flops, moved = self.per_node[index]
        return f"[{plural(flops, 'flop')}, {plural(moved, 'byte')}]"

    def total_text(self):
        """The total line of ``describe(costs=True)``: ``cost: 63 flops, 408 bytes moved``."""
        return f"cost: {plural(self.flops, 'flop')}, {plural(self.bytes, 'byte')} moved"

    def __repr__(self):
        return f"<Costs: {self.total_text()}>"


def plan_costs(plan):
    nodes = plan.nodes
    per_node = {i: node_cost(nodes[i], [nodes[j] for j in nodes[i].operands]) for i in plan.schedule}
    return Costs(per_node)
