"""The composites: functions written in primitives that topos also knows as one operation.

Each is one class (``Composite``) holding how it records, the pattern that
finds it again, its closed-form derivative, its fused kernel and its cost:

- ``softmax``: softmax, log-softmax (found, fused, differentiated), logsumexp
  and cross-entropy (recorded only);
- ``norm``: layer norm (found, fused, differentiated) and the mean (found and
  fused by the kernel selection);
- ``attention``: scaled dot-product attention (recorded only).

``pattern`` holds the pattern language and the one ``Matcher`` every pass uses.
"""

from .attention import ATTENTION
from .composite import Composite
from .norm import LAYER_NORM, MEAN
from .pattern import Group, Matcher, readers_of
from .softmax import CROSS_ENTROPY, LOG_SOFTMAX, LOGSUMEXP, SOFTMAX

#: The composites the reverse scan differentiates in closed form, in the order they are looked for.
DIFFERENTIATED = (LAYER_NORM, SOFTMAX, LOG_SOFTMAX)
#: The composites the WebGPU kernel selection runs as one launch, in the order they are looked for.
FUSED = (LAYER_NORM, SOFTMAX, LOG_SOFTMAX, MEAN)

__all__ = [
    "ATTENTION",
    "CROSS_ENTROPY",
    "DIFFERENTIATED",
    "FUSED",
    "LAYER_NORM",
    "LOGSUMEXP",
    "LOG_SOFTMAX",
    "MEAN",
    "SOFTMAX",
    "Composite",
    "Group",
    "Matcher",
    "readers_of",
]
