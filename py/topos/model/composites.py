"""Composites: the node groups that ``topos.softmax``, ``topos.log_softmax`` and ``topos.layer_norm`` record.

These functions are written in primitives (``Max``, ``StopGradient``, ``Sub``,
``Exp``, ``Sum``, ``Div``, ``Log``, ``Rsqrt``, ...), so the spec shows what they
compute. Two passes find the groups again by the shape of the graph, as XLA
finds fusions: the WebGPU kernel selection runs each as one row kernel
(``topos.compiler.wgsl.patterns``), and the reverse scan differentiates each in
closed form, as PyTorch's ``softmax_backward`` and ``layer_norm_backward`` do,
instead of through the rules of its dozen primitives
(``Composite.vjp``: one ``SoftmaxGrad``, ``LogSoftmaxGrad`` or ``LayerNormGrad``
node).

A group matches only where a plan holds exactly the nodes such a function
records, along the last axis with ``keepdims``, and where no node outside it
reads a value inside it. Matching reads node attributes only; it never changes
the nodes.
"""

import weakref
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Group:
    """A composite: ``kind``, its ``root`` (the node whose value it produces), the ``covered``
    nodes (root included), the ``source`` node it reads, a ``constant`` (the layer norm's eps,
    the mean's divisor) and, for a layer norm, its ``scale`` node (``rsqrt(var + eps)``, a row each)."""

    kind: str
    root: int
    covered: tuple
    source: int
    constant: float = 0.0
    scale: int = None

    def vjp(self, e, g, values):
        """The closed-form derivative: ``(source, cotangent)`` from the root's cotangent ``g``.

        ``values[i]`` is node i's forward value in the emitter's terms; the rule reads
        the root's value (and a layer norm's scale), never the inner ones.
        """
        out = values[self.root]
        if self.kind == "softmax":
            return self.source, e.apply("SoftmaxGrad", [g, out])
        if self.kind == "log_softmax":
            return self.source, e.apply("LogSoftmaxGrad", [g, out])
        return self.source, e.apply("LayerNormGrad", [g, out, values[self.scale]])


#: The composites whose derivative ``Group.vjp`` gives in closed form.
DIFFERENTIATED = ("softmax", "log_softmax", "layer_norm")


class Matcher:
    """Finds composites among ``nodes``: ``accepts(index)`` says whether a node may be part of one
    (the WebGPU selection accepts the nodes the device runs), ``readers`` lists who reads each node,
    and ``outputs`` are values someone outside reads (which therefore cannot be inner ones)."""

    def __init__(self, nodes, readers, outputs=(), accepts=None):
        self.nodes = nodes
        self.readers = readers
        self.outputs = set(outputs)
        self.accepts = accepts

    # Small predicates ---------------------------------------------------------------
    def opcode(self, index):
        return self.nodes[index].opcode

    def operand(self, index, position=0):
        return self.nodes[index].operands[position]

    def is_op(self, index, opcode):
        return self.nodes[index].opcode == opcode and (self.accepts is None or self.accepts(index))

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
        if node.opcode != "Leaf" or node.dtype not in ("float32", "float64") or node.payload is None:
            return None
        payload = np.asarray(node.payload)
        if payload.size == 0:
            return None
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

    # The composites ---------------------------------------------------------------------
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
        return Group("layer_norm", root, tuple(sorted(covered)), x, eps, rsqrt)

    def find(self, patterns, order):
        """The groups ``patterns`` (methods of this matcher) find, trying roots in ``order``,
        keyed by the first node each covers; a node belongs to at most one group."""
        taken = set()
        groups = {}
        for pattern in patterns:
            for root in order:
                group = pattern(root)
                if group is None or taken & set(group.covered) or not self.private(group.covered, root):
                    continue
                taken.update(group.covered)
                groups[min(group.covered)] = group
        return groups


def readers_of(nodes, indices):
    """Node index -> the indices among ``indices`` that read it."""
    readers = {index: [] for index in indices}
    for index in indices:
        for operand in nodes[index].operands:
            readers.setdefault(operand, []).append(index)
    return readers


def differentiated_composites(nodes, keep=()):
    """The composites of ``nodes`` that the reverse scan differentiates in closed form, by root.

    ``keep`` holds nodes whose own cotangent is read (the gradients an entry asks
    for): a group with one of them inside is left to its primitives' rules, which
    form that cotangent.
    """
    indices = range(len(nodes))
    matcher = Matcher(nodes, readers_of(nodes, indices), outputs=keep)
    found = matcher.find((matcher.layer_norm, matcher.softmax, matcher.log_softmax), indices)
    return {group.root: group for group in found.values()}


def inner_nodes(composites):
    """The nodes inside the given composites other than their roots: the scan forms no cotangent for them."""
    return {i for group in composites.values() for i in group.covered if i != group.root}


_by_network = weakref.WeakKeyDictionary()


def network_composites(network):
    """``differentiated_composites`` of a network's nodes, found once per network (networks never change)."""
    found = _by_network.get(network)
    if found is None:
        found = differentiated_composites(network.nodes())
        _by_network[network] = found
    return found
