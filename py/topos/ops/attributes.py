"""Attribute kinds: what each attribute of a primitive is, as recording leaves it.

A primitive declares the attributes it takes beside its other rules, each name
with its kind: ``attributes = {"axes": kinds.axes, "keepdims": kinds.flag}``
(``from . import attributes as kinds``). A kind is a check of the value
against the operands' metas that returns what was expected, as a phrase for
the error, or None when the value is one recording could give. Loading a
network (``topos.model.checkpoint``) holds every node to its primitive's
declaration before it asks the primitive's ``normalize``, so that a damaged
file is refused with an error that names the attribute and what it should be.
"""

from ..dtypes import DTYPES
from ..text import format_shape
from .bodies import Region


def is_whole(value):
    """An int that is not a bool: JSON's ``true`` is not the number 1 in a topos file."""
    return isinstance(value, int) and not isinstance(value, bool)


def _axes_text(meta):
    return f"{format_shape(meta.shape)} (rank {meta.rank})"


def flag(value, metas):
    """True or False."""
    if not isinstance(value, bool):
        return "expected true or false"
    return None


def extents(value, metas):
    """A shape: a tuple of non-negative integers."""
    if not (isinstance(value, tuple) and all(is_whole(v) and v >= 0 for v in value)):
        return "expected a tuple of non-negative integers (a shape)"
    return None


def per_axis(value, metas):
    """A tuple of non-negative integers, one per axis of the first operand (a slice's bounds, a padding)."""
    meta = metas[0]
    if not (isinstance(value, tuple) and len(value) == meta.rank and all(is_whole(v) and v >= 0 for v in value)):
        return f"expected a tuple of non-negative integers, one per axis of the operand {_axes_text(meta)}"
    return None


def axis(value, metas):
    """One axis of the first operand, counted from 0."""
    meta = metas[0]
    if not (is_whole(value) and 0 <= value < meta.rank):
        return f"expected an axis of the operand {_axes_text(meta)}, counted from 0"
    return None


def axes(value, metas):
    """Distinct axes of the first operand, counted from 0, in increasing order."""
    meta = metas[0]
    if not (
        isinstance(value, tuple)
        and all(is_whole(a) and 0 <= a < meta.rank for a in value)
        and list(value) == sorted(set(value))
    ):
        return (
            f"expected a tuple of distinct axes of the operand {_axes_text(meta)}, counted from 0, in increasing order"
        )
    return None


def permutation(value, metas):
    """An order of the first operand's axes, each once."""
    meta = metas[0]
    if not (isinstance(value, tuple) and all(is_whole(a) for a in value) and sorted(value) == list(range(meta.rank))):
        return f"expected a tuple that orders the axes of the operand {_axes_text(meta)}, each once"
    return None


def scatter_axis(value, metas):
    """The axis of the updates (operand 0) where the indices (operand 1) begin: 0 up to their rank difference."""
    updates, indices = metas
    last = updates.rank - indices.rank
    if not (is_whole(value) and 0 <= value <= last):
        return (
            f"expected an axis from 0 to {last}, where updates {format_shape(updates.shape)} "
            f"can hold indices {format_shape(indices.shape)}"
        )
    return None


def count(value, metas):
    """A non-negative integer."""
    if not (is_whole(value) and value >= 0):
        return "expected a non-negative integer"
    return None


def positive(value, metas):
    """An integer of at least 1."""
    if not (is_whole(value) and value >= 1):
        return "expected a positive integer"
    return None


def dtype_name(value, metas):
    """The name of a dtype topos records (``"float32"``)."""
    if not (isinstance(value, str) and value in DTYPES):
        return f"expected one of {', '.join(DTYPES)}"
    return None


def window_extents(value, metas):
    """A tuple of positive integers, one per axis of the first operand (a window, its strides)."""
    meta = metas[0]
    if not (isinstance(value, tuple) and len(value) == meta.rank and all(is_whole(v) and v >= 1 for v in value)):
        return f"expected a tuple of positive integers, one per axis of the operand {_axes_text(meta)}"
    return None


def window_padding(value, metas):
    """A (low, high) pair of non-negative integers for each axis of the first operand."""
    meta = metas[0]
    if not (
        isinstance(value, tuple)
        and len(value) == meta.rank
        and all(isinstance(p, tuple) and len(p) == 2 and all(is_whole(v) and v >= 0 for v in p) for p in value)
    ):
        return f"expected a (low, high) pair of non-negative integers for each axis of the operand {_axes_text(meta)}"
    return None


def per_spatial_axis(value, metas):
    """A tuple of positive integers, one per spatial axis of the first operand (a convolution's [N, C, *spatial])."""
    meta = metas[0]
    spatial = meta.rank - 2
    if not (isinstance(value, tuple) and len(value) == spatial and all(is_whole(v) and v >= 1 for v in value)):
        return f"expected a tuple of positive integers, one per spatial axis of the operand {_axes_text(meta)}"
    return None


def padding_pairs(value, metas):
    """A (low, high) pair of integers (negative crops) per spatial axis of the first operand ([N, C, *spatial])."""
    meta = metas[0]
    spatial = meta.rank - 2
    if not (
        isinstance(value, tuple)
        and len(value) == spatial
        and all(isinstance(pair, tuple) and len(pair) == 2 and all(is_whole(v) for v in pair) for pair in value)
    ):
        return f"expected a (low, high) pair of integers per spatial axis of the operand {_axes_text(meta)}"
    return None


def body(value, metas):
    """A function recorded once (``topos.ops.bodies.Region``), its nodes in order and its placeholders its Inputs."""
    if not isinstance(value, Region):
        return "expected a body: a function recorded once (nodes, arguments, captured values, outputs)"
    problem = value.problem()
    return f"a malformed body: {problem}" if problem else None
