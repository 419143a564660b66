"""Record, run, differentiate, train and checkpoint."""

from . import optim, schedules, value_methods  # noqa: F401  (value_methods gives Value its operators and methods)
from .network import Field, Gradients, Network, Parameters, Run
from .nodes import Node, Symbol
from .tape import Tape, detach
from .value import Value

__all__ = [
    "Field",
    "Gradients",
    "Network",
    "Node",
    "Parameters",
    "Run",
    "Symbol",
    "Tape",
    "Value",
    "detach",
    "optim",
    "schedules",
]
