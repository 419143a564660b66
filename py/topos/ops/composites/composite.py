"""``Composite``: a function written in primitives that topos also knows as one operation.

``topos.softmax`` records ``Max``, ``StopGradient``, ``Sub``, ``Exp``, ``Sum``,
``Broadcast`` and ``Div``, so the spec shows what it computes; its composite
holds, in one block, everything else topos knows about it:

- ``record(f, ...)``: the nodes it records, written against ``f``, the recording
  functions (``topos.model.functions``, passed in, so that ``ops`` imports nothing
  above it). The recipe is code rather than the pattern below because it is more
  general: any axis, optional operands, a shift clamped to the finite range,
  where the pattern only needs the canonical last-axis form a kernel computes.
- ``pattern``: the nodes a recording along the last axis holds (``composites.pattern``),
  which the one generic ``Matcher`` finds again in a graph, as XLA finds fusions;
  None for a composite that is only recorded.
- ``vjp(e, group, ...)``: its closed-form derivative (the reverse scan uses it
  for a found group where ``differentiated``), as PyTorch's ``softmax_backward``.
- ``wgsl_launch(k, group, source)``: the fused kernel that computes a found group
  on WebGPU, named by kernel file and entry (the compiler builds the launch).
- ``cost(nodes, group)``: what that fused launch computes and moves.
"""

from ...errors import MissingRuleError
from ..registry import bytes_moved, lookup
from .pattern import Group


class Composite:
    """A composite (see the module's docstring); subclasses set what applies to them."""

    #: the name of its function (``topos.softmax``) and of its fused launch
    name = None
    #: the nodes its function records along the last axis (a ``pattern`` tree), or None
    pattern = None
    #: whether the reverse scan differentiates a found group in closed form (``vjp``)
    differentiated = False
    #: the WGSL file (``kernels/<kernel>.wgsl``) and entry point that compute a found group
    kernel = None
    entry = None

    def record(self, f, *args, **kwargs):
        raise MissingRuleError(f"the composite {self.name} has no recording")

    def group(self, match):
        """The ``Group`` of a match: by default its source is the node bound to ``x``."""
        return Group(self, match.root, match.covered, match.bound["x"], bound=match.bound)

    def vjp(self, e, g, group, values):
        """The cotangent of ``group.source`` from the root's cotangent ``g``; ``values[i]`` is node i's
        forward value in the emitter's terms."""
        raise MissingRuleError(f"the composite {self.name} has no closed-form derivative")

    def wgsl_declines(self, k, group):
        """Why the device does not run a found group fused (a sentence), or None when it does.

        A row kernel's invocations each walk 1/64 of a row: rows too long for one loop stay unfused.
        """
        if -(-k.nodes[group.source].shape[-1] // k.LANES) > k.LOOP_LIMIT:
            return f"rows of {k.nodes[group.source].shape[-1]} elements: too long for the {self.kernel} kernel's loop"
        return None

    def wgsl_launch(self, k, group, source):
        """The fused launch of a found group, reading view ``source``; returns the root's view."""
        return k.fused_rows(self.kernel, self.entry, group, source)

    def cost(self, nodes, group):
        """``(flops, bytes)`` of the fused launch: the flops of the nodes it covers, and the bytes of
        its source read once and its result written once (the values inside stay in registers)."""
        flops = 0
        for index in group.covered:
            node = nodes[index]
            operands = [nodes[j].meta for j in node.operands]
            flops += int(lookup(node.opcode).cost(operands, node.meta, node.attrs)[0])
        return flops, int(bytes_moved([nodes[group.source].meta], nodes[group.root].meta))

    def __repr__(self):
        return f"<composite {self.name}>"
