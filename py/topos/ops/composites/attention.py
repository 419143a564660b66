"""Attention: scaled dot-product attention, recorded in matrix products and a softmax.

Only recorded: the passes see its ``MatMul`` nodes and its softmax, which is
found again as the softmax composite (``composites.softmax``).
"""

import math

from .composite import Composite


class Attention(Composite):
    """``softmax(q k^T / sqrt(d)) v`` over the last two axes, the scores masked first where asked."""

    name = "attention"

    def record(self, f, q, k, v, causal=False, mask=None):
        d = q.shape[-1]
        scores = f.matmul(q, f.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(d))
        if causal:
            mask = f.causal_mask(q.tape, q.shape[-2], q.dtype)
        if mask is not None:
            scores = f.where(mask, scores, -1e9)
        return f.matmul(f.softmax(scores, -1), v)


ATTENTION = Attention()
