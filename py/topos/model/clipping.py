"""Gradient clipping: ``clip_by_global_norm``, a transformation of a ``Gradients`` table that an
optimizer's step takes afterwards (``topos.model.optim`` re-exports it beside the optimizers)."""

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError
from ..tensor import freeze
from .network import Gradients


def clip_by_global_norm(gradients, max_norm):
    """Scale all gradients together so that their joint L2 norm is at most ``max_norm``.

    Returns ``(clipped Gradients, norm)`` where ``norm`` is the joint norm before
    clipping, as a Python float. As ``torch.nn.utils.clip_grad_norm_``: each
    slot's norm is taken in its dtype, the joint norm is the norm of those, and
    every gradient is multiplied by ``min(max_norm / (norm + 1e-6), 1)``.
    """
    if not isinstance(gradients, Gradients):
        raise ArgumentTypeError(f"clip_by_global_norm() takes a Gradients table, got {type(gradients).__name__}")
    try:
        max_norm = float(max_norm)
    except (TypeError, ValueError):
        raise ArgumentError(f"clip_by_global_norm: max_norm must be a number, got {max_norm!r}") from None
    if not max_norm > 0.0:
        raise ArgumentError(f"clip_by_global_norm: max_norm must be positive, got {max_norm}")
    if not gradients.slots:
        return gradients, 0.0
    with np.errstate(all="ignore"):
        slot_norms = [np.sqrt(np.sum(np.square(array), dtype=array.dtype)) for array in gradients.slots.values()]
        joint_dtype = np.result_type(*slot_norms)
        joint = np.asarray(slot_norms, dtype=joint_dtype)
        total = np.sqrt(np.sum(np.square(joint), dtype=joint_dtype))
        coefficient = np.minimum(joint_dtype.type(max_norm) / (total + joint_dtype.type(1e-6)), 1.0)
        clipped = {index: freeze(array * array.dtype.type(coefficient)) for index, array in gradients.slots.items()}
    return Gradients._made_here(gradients.network, clipped), float(total)
