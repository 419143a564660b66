"""Fusion patterns: groups of plan nodes that one kernel computes at once.

``topos.softmax``, ``topos.log_softmax``, ``topos.layer_norm`` and ``topos.mean``
are recorded as primitives (Max, StopGradient, Sub, Exp, Sum, Div, ...). Where
a plan holds exactly the nodes such a function records, and no node outside the
group reads a value inside it (nor is one an output), the group runs as one
fused launch: the ``softmax`` and ``layer_norm`` kernels, or a reduction with a
scale for a mean. The first three are the composites of ``topos.model.composites``,
which the reverse scan also differentiates in closed form: a forward+backward
plan's ``SoftmaxGrad`` and ``LogSoftmaxGrad`` read only a softmax's result, so
there too the forward runs fused. ``LayerNormGrad`` reads the row scale inside a
layer norm, so a training plan runs the layer norm's nodes as separate launches.

Matching reads node attributes only; it never changes the plan.
"""

from ...model.composites import Group, Matcher, readers_of


class PlanMatcher(Matcher):
    """The composites' matcher over a plan's schedule, with the mean that one reduction computes."""

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
    matcher = PlanMatcher(nodes, readers_of(nodes, schedule), outputs, on_device)
    return matcher.find((matcher.layer_norm, matcher.softmax, matcher.log_softmax, matcher.scaled_sum), schedule)
