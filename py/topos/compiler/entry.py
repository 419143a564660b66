"""Entries: what a reading of a network asks for, before it is lowered to a ``Plan``.

``network.entry([loss])`` names the readable values; ``.backward(loss, [w])``
adds the gradients of a rank-0 target; ``.lower()`` schedules only the nodes
those need. Entries are immutable: ``backward`` returns a new one.

``Entry`` registers itself as what ``Network.entry`` makes
(``topos.model.network.register_entry_class``): the model sits below the
compiler and does not import it.
"""

from ..errors import ArgumentError, ArgumentTypeError
from ..model.autodiff import check_backward
from ..model.network import register_entry_class
from ..model.nodes import Node
from .gradient import append_backward
from .plan import Plan


def _symbols(values, what):
    if values is None:
        return []
    if isinstance(values, (list, tuple)):
        return list(values)
    if isinstance(values, (set, frozenset, dict)):
        raise ArgumentTypeError(f"{what} are a list or tuple (their order is the order of the results)")
    return [values]


@register_entry_class
class Entry:
    """Readable values of a network, and optionally the gradients of a target with respect to some nodes.

    ``target`` and ``wrt`` are what ``backward`` takes; ``wrt=None`` means every parameter.
    """

    def __init__(self, network, readables, target=None, wrt=None):
        self.network = network
        self.readables = tuple(network.index_of(s) for s in _symbols(readables, "readables"))
        self.target = None
        self.wrt = ()
        if target is not None:
            self.target = network.index_of(target)
            symbols = network.parameter_symbols() if wrt is None else _symbols(wrt, "wrt")
            self.wrt = tuple(network.index_of(s) for s in symbols)
            check_backward(network.nodes(), self.target, self.wrt)

    def backward(self, target, wrt=None):
        """A new entry that also reads d target / d each of ``wrt`` (default: every parameter)."""
        if self.target is not None:
            raise ArgumentError("this entry already has a backward target; start again from network.entry(...)")
        return Entry(self.network, [self.network.symbol(i) for i in self.readables], target, wrt)

    def lower(self):
        """Schedule the nodes the readables (and gradients) need; returns a ``Plan``.

        An entry that reads nothing (no readables and no gradients) raises
        ``ArgumentError``: its plan would evaluate no node.
        """
        if not self.readables and not self.wrt:
            raise ArgumentError(
                "this entry reads nothing: name a readable (network.entry([loss])) or the gradients of a target "
                "(network.entry([]).backward(loss))"
            )
        forward = self.network.nodes()
        if self.target is None:
            nodes, gradients = forward, ()
        else:
            nodes, gradients = append_backward(self.network, self.target, self.wrt)
        outputs = self.readables + tuple(gradients)
        evaluated = needed_by(nodes, outputs)
        if self.target is not None:
            nodes, gradients, evaluated = _drop_dead_backward(nodes, len(forward), gradients, evaluated)
        return Plan(
            network=self.network,
            nodes=nodes,
            forward_count=len(forward),
            schedule=tuple(i for i in range(len(nodes)) if evaluated[i]),
            readables=self.readables,
            gradients=tuple(zip(self.wrt, gradients)),
            target=self.target,
        )


def needed_by(nodes, outputs):
    """Marks (a bytearray) of the nodes that ``outputs`` read, directly or not, and the outputs."""
    needed = bytearray(len(nodes))
    for index in outputs:
        needed[index] = 1
    for index in range(max(outputs, default=-1), -1, -1):
        if needed[index]:
            for operand in nodes[index].operands:
                needed[operand] = 1
    return needed


def _drop_dead_backward(nodes, forward_count, gradients, evaluated):
    """Remove backward nodes that no gradient reads (a rule's unused cotangent) and renumber the rest."""
    renumber = list(range(forward_count))
    kept = list(nodes[:forward_count])
    for node in nodes[forward_count:]:
        if not evaluated[node.index]:
            renumber.append(None)
            continue
        index = len(kept)
        renumber.append(index)
        if index == node.index:
            kept.append(node)
        else:
            operands = tuple(renumber[j] for j in node.operands)
            kept.append(
                Node(
                    index,
                    node.opcode,
                    operands,
                    node.shape,
                    node.dtype,
                    node.attrs,
                    payload=node.payload,
                    name=node.name,
                    source=node.source,
                    scope=node.scope,
                )
            )
    new_evaluated = bytearray(len(kept))
    for old, new in enumerate(renumber):
        if new is not None and evaluated[old]:
            new_evaluated[new] = 1
    return tuple(kept), tuple(renumber[g] for g in gradients), new_evaluated
