"""Entries: what a reading of a network asks for, before it is lowered to a ``Plan``.

``network.entry([loss])`` names the readable values; ``.backward(loss, [w])``
adds the gradients of a rank-0 target; ``.lower()`` schedules only the nodes
those need. Entries are immutable: ``backward`` returns a new one.

``Entry`` registers itself as what ``Network.entry`` makes
(``topos.model.network.register_entry_class``): the model sits below the
compiler and does not import it. Only ``network.entry`` goes through that
registration: the model's own forward and backward run through
``topos.model.lowering`` and ``topos.model.interpreter``, which it imports.
"""

from ..errors import ArgumentError, ArgumentTypeError
from ..model.autodiff import check_backward
from ..model.lowering import lower
from ..model.network import register_entry_class
from ..model.remat import check_policy
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

    def lower(self, remat="checkpoint"):
        """Schedule the nodes the readables (and gradients) need; returns a ``Plan``.

        ``remat`` says which forward values the backward recomputes rather than keeps
        (``topos.model.remat.POLICIES``): ``"checkpoint"``, the values ``topos.checkpoint``
        marked; ``"elementwise"``, those and the cheap elementwise ones; ``None``, none.
        An entry that reads nothing (no readables and no gradients) raises
        ``ArgumentError``: its plan would evaluate no node.
        """
        if not self.readables and not self.wrt:
            raise ArgumentError(
                "this entry reads nothing: name a readable (network.entry([loss])) or the gradients of a target "
                "(network.entry([]).backward(loss))"
            )
        check_policy(remat)
        plan = self._plan(remat)
        if plan.recomputed:
            plan.compare_without_remat(self._plan(None))
        return plan

    def _plan(self, remat):
        nodes, schedule, gradients = lower(self.network, self.readables, self.target, self.wrt, remat)
        return Plan(
            network=self.network,
            nodes=nodes,
            forward_count=len(self.network),
            schedule=schedule,
            readables=self.readables,
            gradients=tuple(zip(self.wrt, gradients)),
            target=self.target,
            remat=remat,
        )
