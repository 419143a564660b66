"""``topos.linalg``: the recording's linear algebra under numpy.linalg's names (``topos.model.linalg``).

A module of its own, as ``numpy.linalg`` is, so that ``import topos.linalg`` and
``topos.linalg.cholesky`` both work; every name lives in ``topos.model.linalg``.
"""

from .model.linalg import *  # noqa: F403  (the functions __all__ lists)
from .model.linalg import __all__  # noqa: F401
