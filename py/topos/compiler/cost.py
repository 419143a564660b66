"""The cost of a plan: floating-point operations and bytes moved, per node and in total.

The model is deliberately simple and stated here so that its numbers can be read:

- FLOPs: one per output element for elementwise arithmetic, comparisons and
  selections (transcendentals count one too; ``Gelu`` counts its 9 steps,
  ``GeluGrad`` its 15, the row derivatives ``SoftmaxGrad``, ``LogSoftmaxGrad``
  and ``LayerNormGrad`` 4, 4 and 8 an element);
  ``2 m n k`` per batch for ``MatMul``; one per input element folded away for
  reductions (``in - out``); one per update for ``ScatterAdd``; none for sources
  and for ops that only move elements (reshape, broadcast, transpose, slice, pad,
  concatenate, take).
- Bytes moved: each operand read once and the result written once, at the
  dtype's width. Sources move nothing (their values are already resident), and
  ``Reshape`` and ``StopGradient`` move nothing (they relabel memory).

Each primitive states its own cost beside its other rules (``Primitive.cost``:
by default ``element_flops`` a result element and every value read or written
once; ops that differ say so in their block), and one registered from outside
may define ``cost(self, operand_metas, meta, attrs)`` returning
``(flops, bytes)`` the same way.
"""

from ..ops import lookup
from ..ops.registry import Meta
from ..text import plural


def node_cost(node, operand_nodes):
    """``(flops, bytes)`` of one node, as its primitive counts them."""
    operands = [Meta(n.shape, n.dtype) for n in operand_nodes]
    flops, moved = lookup(node.opcode).cost(operands, node.meta, node.attrs)
    return int(flops), int(moved)


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
