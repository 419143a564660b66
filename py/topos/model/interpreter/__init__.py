"""The one numpy interpreter: how a schedule of nodes becomes numpy arrays, with an arena or without.

Everything that evaluates nodes with numpy goes through here: the model's
``Network.forward`` and ``Run.backward``, and the compiler's ``"numpy"``
backend (``topos.compiler.interpreter``, with or without an accelerator).

- ``schedule``: ``Schedule``, what is run (nodes, the evaluated ones, the kept
  ones, each value's last reader), and ``PreparedOnSecondRun``, the one place
  that says "run plainly once, prepare from the second run";
- ``plain``: ``interpret``, the schedule node by node, each value freed after
  its last reader, behind an optional accelerator;
- ``arena``: ``Arena``, the byte offset of every value a prepared run writes;
- ``prepared``: ``PreparedPlan``, the per-node work bound once and the arena
  reused from run to run.

Sources are read in one place, ``topos.model.nodes.source_value``.

Why it lives in the model, below ``network``: the model runs its own forward
and backward, so it must reach the interpreter by an import that the layers
show (``model-layers`` in ``py/pyproject.toml``); the compiler sits above the
model and calls the same code, its ``Plan`` being a ``Schedule`` with the
readings added. Before, the model reached the compiler's prepared plans through
a class the compiler registered with it at import time, which no import showed.
"""

from .arena import ALIGNMENT, Arena
from .plain import NUMPY, interpret
from .prepared import PreparedPlan, Workspace
from .schedule import PLAIN, USED_ONCE, PreparedOnSecondRun, Schedule

__all__ = [
    "ALIGNMENT",
    "NUMPY",
    "PLAIN",
    "USED_ONCE",
    "Arena",
    "PreparedOnSecondRun",
    "PreparedPlan",
    "Schedule",
    "Workspace",
    "interpret",
]
