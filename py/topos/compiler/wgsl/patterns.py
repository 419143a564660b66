"""Fusion patterns: groups of plan nodes that one kernel computes at once.

``topos.softmax``, ``topos.log_softmax``, ``topos.layer_norm`` and ``topos.mean``
are recorded as primitives (Max, StopGradient, Sub, Exp, Sum, Div, ...). Where
a plan holds exactly the nodes such a function records, and no node outside the
group reads a value inside it (nor is one an output), the group runs as one
fused launch, the one its composite names (``topos.ops.composites``): the
``softmax`` and ``layer_norm`` kernels, or a reduction with a scale for a mean.
The first three the reverse scan also differentiates in closed form: a
forward+backward plan's ``SoftmaxGrad`` and ``LogSoftmaxGrad`` read only a
softmax's result, so there too the forward runs fused. ``LayerNormGrad`` reads
the row scale inside a layer norm, so a training plan runs the layer norm's
nodes as separate launches.

Matching reads node attributes only; it never changes the plan.
"""

from ...ops.composites import FUSED, Matcher, readers_of


def find_groups(nodes, schedule, outputs, on_device):
    """The fused groups of a plan, keyed by the first node each covers.

    ``on_device(index)`` says whether the device runs a node at all; every node
    of a group must be one it runs. A node belongs to at most one group.
    """
    return Matcher(nodes, readers_of(nodes, schedule), outputs, on_device).find(FUSED, schedule)
