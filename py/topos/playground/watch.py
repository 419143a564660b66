"""Watching what the user's code records, and picking the recording the panes read.

Which recording the panes read, when a script makes several:

1. the last network sealed from the user's code (``tape.seal()``,
   ``Tape.record``), else
2. the last tape the user's code recorded a node on, read as it stands.

A recording counts as the user's when one of its nodes was recorded by a line
of the user's code (not by topos itself). The values the readings read (the
readables) are what the builder returned to ``Tape.record`` (a dict's values
in its order), less its parameters, inputs and leaves; else the last recorded node.
"""

from ..model.network import Network
from ..model.nodes import Symbol
from ..model.tape import TapeObserver


class RecordingWatch(TapeObserver):
    """Notes every tape made, every network sealed and what ``Tape.record`` returned.

    ``execute`` has it observe the tapes (``topos.model.tape.observe``) while the
    user's code runs, and only then.
    """

    def __init__(self):
        self.tapes = []
        self.networks = []
        self.returned = {}

    def made(self, tape):
        self.tapes.append(tape)

    def sealed(self, tape, network):
        self.networks.append(network)

    def recorded(self, network, symbols):
        self.returned[id(network)] = symbols

    def pick(self, filename):
        """The recording the panes read: ``(network, readable indices, kind)`` or None."""
        for network in reversed(self.networks):
            if recorded_by(network.nodes(), filename):
                symbols = self.returned.get(id(network))
                return network, readable_indices(network, symbols), "network"
        for tape in reversed(self.tapes):
            nodes = tape.nodes()
            if nodes and recorded_by(nodes, filename):
                network = Network(nodes, tape.dtype, tape.lineages)
                return network, readable_indices(network, None), "tape"
        return None


def recorded_by(nodes, filename):
    return any(node.source and node.source[0] == filename for node in nodes)


def flatten_symbols(value):
    if isinstance(value, Symbol):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from flatten_symbols(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from flatten_symbols(item)


def readable_indices(network, symbols):
    """The builder's returned values that are computed (not sources), else the last node."""
    nodes = network.nodes()
    indices = []
    for symbol in flatten_symbols(symbols):
        index = network.index_of(symbol)
        if not nodes[index].is_source and index not in indices:
            indices.append(index)
    return indices or [len(nodes) - 1]
