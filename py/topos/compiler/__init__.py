"""Inspect, lower, emit and extend: the readings after the seal.

- ``network.entry(readables)`` gives an ``Entry``; ``.backward(target, wrt)`` adds
  gradients; ``.lower()`` gives a ``Plan`` (the plan and gradient readings).
- ``plan.emit_stablehlo()`` is the StableHLO reading, ``plan.run(...)`` executes it
  (``register_backend`` adds node-by-node backends, ``register_executor`` whole-plan
  ``Executor`` ones), ``plan.costs()`` counts FLOPs and bytes; ``plan.kernels()`` is
  the WGSL reading, as data in ``topos.compiler.wgsl``.
- ``Graph.from_nodes(tape.nodes())`` / ``Graph.from_plan(plan)`` is the graph reading.
- ``register`` / ``Primitive`` add a primitive from outside (docs/extending.md).
"""

from ..ops import Meta, Primitive, lookup, missing_rules, primitives, register, unregister
from .backends import register_backend, register_executor, unregister_backend
from .cost import Costs
from .entry import Entry
from .executor import Executor, PlanRun
from .graph import Graph
from .plan import Plan
from .stablehlo import Lowering

__all__ = [
    "Costs",
    "Entry",
    "Executor",
    "Graph",
    "Lowering",
    "Meta",
    "Plan",
    "PlanRun",
    "Primitive",
    "lookup",
    "missing_rules",
    "primitives",
    "register",
    "register_backend",
    "register_executor",
    "unregister",
    "unregister_backend",
]
