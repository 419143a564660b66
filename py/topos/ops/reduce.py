"""Reductions over a set of axes, with or without keeping them as size 1."""

import math
from dataclasses import dataclass

import numpy as np

from . import attributes as kinds
from . import batching
from .registry import Meta, Primitive, bytes_moved, normalize_axes, register, require_float


@dataclass(frozen=True)
class Fold:
    """How the reduce kernel (``kernels/reduce.wgsl``) folds the terms: ``combine`` of ``a`` and ``b``
    in WGSL, starting from ``identity`` (a WGSL expression too)."""

    identity: str
    combine: str


class Reduction(Primitive):
    batch = batching.leading_axes
    arity = 1
    kernel = "reduce"
    attributes = {"axes": kinds.axes, "keepdims": kinds.flag}
    #: how the reduce kernel folds this reduction's terms (a ``Fold``); each reduction states its own
    fold = None

    def normalize(self, metas, attrs):
        axes = normalize_axes(self, metas, attrs.get("axes"), metas[0].rank)
        return {"axes": axes, "keepdims": bool(attrs.get("keepdims", False))}

    def infer(self, metas, attrs):
        require_float(self, metas)
        return Meta(reduced_shape(metas[0].shape, attrs["axes"], attrs["keepdims"]), metas[0].dtype)

    def wgsl_launch(self, k, node, views):
        # The reduce kernel folds as this op's ``fold`` says (Sum adds, Max takes the larger).
        return k.reduce(self.name, node, views[0])

    def cost(self, operands, meta, attrs):
        # One flop for each input element folded away.
        return operands[0].size - meta.size, bytes_moved(operands, meta)


def reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if axis in axes else extent for axis, extent in enumerate(shape))
    return tuple(extent for axis, extent in enumerate(shape) if axis not in axes)


def expand_reduced(e, value, in_shape, attrs):
    """Broadcast a reduction's result (or cotangent) back to the reduced operand's shape."""
    kept = reduced_shape(in_shape, attrs["axes"], True)
    if not attrs["keepdims"]:
        value = e.reshape(value, kept)
    return e.broadcast(value, in_shape)


@register
class Sum(Reduction):
    name = "Sum"
    fold = Fold(identity="0.0", combine="a + b")

    def forward(self, inputs, attrs):
        x = inputs[0]
        shape = reduced_shape(x.shape, attrs["axes"], attrs["keepdims"])
        if ones_product(x, attrs["axes"]) is not None:
            return self.forward_into(inputs, attrs, np.empty(shape, x.dtype))
        # np.add.reduce is what np.sum calls for an array, without np.sum's Python wrapper (a hot path).
        return np.add.reduce(x, axis=attrs["axes"], dtype=x.dtype, keepdims=attrs["keepdims"])

    def forward_into(self, inputs, attrs, out):
        x = inputs[0]
        product = ones_product(x, attrs["axes"])
        if product is not None and out.flags.c_contiguous:
            matrix, ones, along_rows = product
            flat = out.reshape(-1)  # a view: the result's elements in order, whatever axes it keeps
            if along_rows:
                np.matmul(matrix, ones, out=flat)
            else:
                np.matmul(ones, matrix, out=flat)
            return out
        return np.add.reduce(x, axis=attrs["axes"], dtype=x.dtype, keepdims=attrs["keepdims"], out=out)

    def vjp(self, e, g, operands, out, attrs):
        return [expand_reduced(e, g, e.shape(operands[0]), attrs)]

    def stablehlo(self, ctx, node):
        return ctx.reduce(node, "stablehlo.add", 0.0)


#: The most terms a ``Sum`` adds as a product with a vector of ones (BLAS) rather than with numpy's
#: reduction: numpy reduces short rows one at a time (16 us for a layer norm's 256 rows of 32 where
#: the product takes 3), and a product of more terms than this would round more than numpy's
#: pairwise sum does.
ONES_TERMS = 1024

_ONES = {}
_PRODUCTS = {}


def ones_product(x, axes):
    """``(matrix, ones, along_rows)`` where ``Sum`` over ``axes`` is a product of ``x`` seen as a matrix
    with a vector of ones (``axes`` the trailing axes: ``matrix @ ones``; the leading ones: ``ones @ matrix``),
    of float32 or float64, C-contiguous, 2 to ``ONES_TERMS`` terms a sum; None otherwise."""
    if not x.flags.c_contiguous:
        return None
    key = (x.shape, axes, x.dtype)
    product = _PRODUCTS.get(key, False)
    if product is False:  # worked out once for each shape, axes and dtype
        product = _PRODUCTS.setdefault(key, product_for(x.shape, axes, x.dtype))
    if product is None:
        return None
    terms, along_rows, ones = product
    matrix = x.reshape(-1, terms) if along_rows else x.reshape(terms, -1)
    return matrix, ones, along_rows


def product_for(shape, axes, dtype):
    """``(terms, along_rows, ones)`` for ``ones_product``, or None where a Sum over ``axes`` is not one."""
    size = math.prod(shape)
    if dtype.kind != "f" or dtype.itemsize < 4 or not axes or size == 0:
        return None
    count, rank = len(axes), len(shape)
    if axes == tuple(range(rank - count, rank)):
        terms, along_rows = math.prod(shape[rank - count :]), True
    elif axes == tuple(range(count)):
        terms, along_rows = math.prod(shape[:count]), False
    else:
        return None
    if not 1 < terms <= ONES_TERMS:
        return None
    return terms, along_rows, ones_of(terms, dtype)


def ones_of(count, dtype):
    """A read-only vector of ``count`` ones of ``dtype``, made once."""
    key = (count, np.dtype(dtype))
    ones = _ONES.get(key)
    if ones is None:
        ones = np.ones(count, dtype)
        ones.flags.writeable = False
        ones = _ONES.setdefault(key, ones)
    return ones


#: Last axes up to this length take ``Max``'s moved-axis path.
SHORT_AXIS = 64


@register
class Max(Reduction):
    """The largest element over ``axes``; over an empty axis it is -inf (the StableHLO reduce's identity)."""

    name = "Max"
    fold = Fold(identity="-infinity()", combine="nan_max(a, b)")  # NaN if any term is, as in numpy (common.wgsl)

    def forward(self, inputs, attrs):
        x = inputs[0]
        axes = attrs["axes"]
        if x.size == 0:
            # The maximum of no elements is -inf, the identity the StableHLO reduce starts from.
            return np.maximum.reduce(x, axis=axes, keepdims=attrs["keepdims"], initial=x.dtype.type(-np.inf))
        if x.ndim >= 2 and axes == (x.ndim - 1,) and 1 < x.shape[-1] <= SHORT_AXIS:
            # numpy reduces a short last axis row by row, slowly (50 us for a softmax's rows); with
            # that axis moved first and made contiguous, the reduction runs across whole rows
            # at once, five times faster. The maximum is exact, so the order does not matter.
            last_first = (x.ndim - 1, *range(x.ndim - 1))  # np.moveaxis(x, -1, 0), without its Python wrapper
            moved = np.ascontiguousarray(x.transpose(last_first))
            result = np.maximum.reduce(moved, axis=0)
            return result[..., None] if attrs["keepdims"] else result
        return np.maximum.reduce(x, axis=axes, keepdims=attrs["keepdims"])

    def vjp(self, e, g, operands, out, attrs):
        # The cotangent goes to the maxima, split evenly among ties (as torch.amax does).
        x = operands[0]
        shape = e.shape(x)
        mask = e.equal(x, expand_reduced(e, out, shape, attrs))
        count = e.sum(mask, attrs["axes"], attrs["keepdims"])
        share = e.div(g, count)
        return [e.mul(mask, expand_reduced(e, share, shape, attrs))]

    def stablehlo(self, ctx, node):
        return ctx.reduce(node, "stablehlo.maximum", float("-inf"))
