"""The composites the reverse scan differentiates in closed form, found in a network's nodes.

``topos.softmax``, ``topos.log_softmax`` and ``topos.layer_norm`` are recorded as
primitives; their composites (``topos.ops.composites``) declare the pattern each
records, which the one matcher finds again, and the closed-form derivative the
reverse scan then uses, as PyTorch's ``softmax_backward`` and
``layer_norm_backward`` do, instead of the rules of its dozen primitives (one
``SoftmaxGrad``, ``LogSoftmaxGrad`` or ``LayerNormGrad`` node).

A group matches only where a plan holds exactly the nodes such a function
records, along the last axis with ``keepdims``, and where no node outside it
reads a value inside it. Matching reads node attributes only; it never changes
the nodes.
"""

import weakref

from ..ops.composites import DIFFERENTIATED, Matcher, readers_of


def differentiated_composites(nodes, keep=()):
    """The composites of ``nodes`` that the reverse scan differentiates in closed form, by root.

    ``keep`` holds nodes whose own cotangent is read (the gradients an entry asks
    for): a group with one of them inside is left to its primitives' rules, which
    form that cotangent.
    """
    indices = range(len(nodes))
    found = Matcher(nodes, readers_of(nodes, indices), outputs=keep).find(DIFFERENTIATED, indices)
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
