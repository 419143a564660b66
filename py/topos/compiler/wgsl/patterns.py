"""Fusion patterns: groups of plan nodes that one kernel computes at once.

``topos.softmax``, ``topos.log_softmax``, ``topos.layer_norm`` and ``topos.mean``
are recorded as primitives (Max, StopGradient, Sub, Exp, Sum, Div, ...). Where
a plan holds exactly the nodes such a function records, and no node outside the
group reads a value inside it (nor is one an output), the group runs as one
fused launch: the ``softmax`` and ``layer_norm`` kernels, or a reduction with a
scale for a mean. A forward+backward plan reads the inner values of a softmax
in its backward nodes, so there the nodes stay separate launches.

Matching reads node attributes only; it never changes the plan.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Group:
    """A fused group: ``kind``, its ``root`` (the node whose value it produces),
    the ``covered`` nodes (root included), the ``source`` node it reads, and a
    ``constant`` (the layer norm's eps, the mean's divisor)."""

    kind: str
    root: int
    covered: tuple
    source: int
    constant: float = 0.0


class Matcher:
    def __init__(self, nodes, schedule, outputs, on_device):
        self.nodes = nodes
        self.outputs = set(outputs)
        self.on_device = on_device
        self.readers = {index: [] for index in schedule}
        for index in schedule:
            for operand in nodes[index].operands:
                self.readers[operand].append(index)

    # Small predicates ---------------------------------------------------------------
    def opcode(self, index):
        return self.nodes[index].opcode

    def operand(self, index, position=0):
        return self.nodes[index].operands[position]

    def is_op(self, index, opcode):
        return self.nodes[index].opcode == opcode and self.on_device(index)

    def is_last_axis_reduction(self, index, opcode):
        node = self.nodes[index]
        rank = len(self.nodes[node.operands[0]].shape) if node.operands else 0
        return (
            self.is_op(index, opcode)
            and rank >= 1
            and node.attrs.get("axes") == (rank - 1,)
            and node.attrs.get("keepdims") is True
        )

    def constant(self, index):
        """The value of a constant node (a leaf of one repeated value, or a broadcast or reshape of one)."""
        node = self.nodes[index]
        while node.opcode in ("Broadcast", "Reshape"):
            node = self.nodes[node.operands[0]]
        if node.opcode != "Leaf" or node.dtype != "float32" or node.payload is None or node.payload.size == 0:
            return None
        payload = np.asarray(node.payload)
        first = payload.reshape(-1)[0]
        return float(first) if np.all(payload == first) else None

    def private(self, covered, root):
        """True when no node outside ``covered`` reads an inner node, and none is an output."""
        inner = set(covered) - {root}
        return all(i not in self.outputs and set(self.readers.get(i, ())) <= set(covered) for i in inner)

    def shifted(self, index):
        """``v - broadcast(stop_gradient(max(v, last axis, keepdims)))``: returns (v, nodes) or None."""
        if not self.is_op(index, "Sub"):
            return None
        v, broadcast = self.nodes[index].operands
        if not self.is_op(broadcast, "Broadcast"):
            return None
        stop = self.operand(broadcast)
        if not self.is_op(stop, "StopGradient"):
            return None
        maximum = self.operand(stop)
        if not self.is_last_axis_reduction(maximum, "Max") or self.operand(maximum) != v:
            return None
        return v, [maximum, stop, broadcast, index]

    def row_sum_of_exp(self, index):
        """``sum(exp(s), last axis, keepdims)``: returns (s, nodes) or None."""
        if not self.is_last_axis_reduction(index, "Sum"):
            return None
        exp = self.operand(index)
        if not self.is_op(exp, "Exp"):
            return None
        return self.operand(exp), [exp, index]

    def mean(self, index):
        """``sum(x, last axis, keepdims) / n`` with n the axis's extent: returns (x, nodes) or None."""
        if not self.is_op(index, "Div"):
            return None
        total, divisor = self.nodes[index].operands
        if not self.is_last_axis_reduction(total, "Sum"):
            return None
        x = self.operand(total)
        if self.constant(divisor) != float(self.nodes[x].shape[-1]):
            return None
        return x, [total, index] + ([divisor] if self.opcode(divisor) == "Broadcast" else [])

    # The patterns -----------------------------------------------------------------------
    def softmax(self, root):
        if not self.is_op(root, "Div"):
            return None
        e, broadcast = self.nodes[root].operands
        if not self.is_op(broadcast, "Broadcast"):
            return None
        found = self.row_sum_of_exp(self.operand(broadcast))
        if found is None or found[1][0] != e:
            return None
        shifted = self.shifted(self.operand(e))
        if shifted is None:
            return None
        v, shift_nodes = shifted
        return Group("softmax", root, tuple(sorted(shift_nodes + found[1] + [broadcast, root])), v)

    def log_softmax(self, root):
        if not self.is_op(root, "Sub"):
            return None
        shifted_index, broadcast = self.nodes[root].operands
        if not self.is_op(broadcast, "Broadcast"):
            return None
        log = self.operand(broadcast)
        if not self.is_op(log, "Log"):
            return None
        found = self.row_sum_of_exp(self.operand(log))
        if found is None or found[0] != shifted_index:
            return None
        shifted = self.shifted(shifted_index)
        if shifted is None:
            return None
        v, shift_nodes = shifted
        return Group("log_softmax", root, tuple(sorted(shift_nodes + found[1] + [log, broadcast, root])), v)

    def layer_norm(self, root):
        if not self.is_op(root, "Mul"):
            return None
        centred, broadcast = self.nodes[root].operands
        if not self.is_op(broadcast, "Broadcast"):
            return None
        rsqrt = self.operand(broadcast)
        if not self.is_op(rsqrt, "Rsqrt"):
            return None
        shifted = self.operand(rsqrt)
        if not self.is_op(shifted, "Add"):
            return None
        variance, eps_node = self.nodes[shifted].operands
        eps = self.constant(eps_node)
        found = self.mean(variance)
        if eps is None or found is None:
            return None
        square, variance_nodes = found
        if not self.is_op(square, "Mul") or self.nodes[square].operands != (centred, centred):
            return None
        if not self.is_op(centred, "Sub"):
            return None
        x, mean_broadcast = self.nodes[centred].operands
        if not self.is_op(mean_broadcast, "Broadcast"):
            return None
        found = self.mean(self.operand(mean_broadcast))
        if found is None or found[0] != x:
            return None
        covered = found[1] + [mean_broadcast, centred, square] + variance_nodes + [shifted, rsqrt, broadcast, root]
        if self.opcode(eps_node) == "Broadcast":
            covered.append(eps_node)
        return Group("layer_norm", root, tuple(sorted(covered)), x, eps)

    def scaled_sum(self, root):
        """``sum(x, axes) / c`` for a constant c: one reduction that multiplies by 1 / c."""
        if not self.is_op(root, "Div"):
            return None
        total, divisor = self.nodes[root].operands
        value = self.constant(divisor)
        if not self.is_op(total, "Sum") or not value:
            return None
        covered = [total, root] + ([divisor] if self.opcode(divisor) == "Broadcast" else [])
        return Group("mean", root, tuple(sorted(covered)), self.operand(total), 1.0 / value)


def find_groups(nodes, schedule, outputs, on_device):
    """The fused groups of a plan, keyed by the first node each covers.

    ``on_device(index)`` says whether the device runs a node at all; every node
    of a group must be one it runs. A node belongs to at most one group.
    """
    matcher = Matcher(nodes, schedule, outputs, on_device)
    taken = set()
    groups = {}
    for pattern in (matcher.layer_norm, matcher.softmax, matcher.log_softmax, matcher.scaled_sum):
        for root in schedule:
            group = pattern(root)
            if group is None or taken & set(group.covered) or not matcher.private(group.covered, root):
                continue
            taken.update(group.covered)
            groups[min(group.covered)] = group
    return groups
