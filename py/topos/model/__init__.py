"""Record, run, differentiate, train and checkpoint."""

from . import optim
from .network import Field, Gradients, Network, Parameters, Run, Symbol
from .tape import Node, Tape, detach
from .value import Value

__all__ = ["Field", "Gradients", "Network", "Node", "Parameters", "Run", "Symbol", "Tape", "Value", "detach", "optim"]
