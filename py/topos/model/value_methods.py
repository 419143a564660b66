"""The operators and numpy-like methods of ``Value``, set on the class when ``topos.model`` is imported.

Each records through ``topos.model.functions``, which builds on ``Value``, so
``value.py`` cannot import it. They are written below as the body of a class,
so that they read as the methods they are, and ``attach`` copies them onto
``Value``: the pattern JAX uses for its arrays (``jax/_src/numpy/array_methods.py``).
``topos.model`` imports this module, and every import of topos goes through it.
"""

from . import activations_more, elementwise_more, indexing, reductions, scans, sorting
from . import functions as F
from .building import diagonal, repeat, trace
from .value import Value


class ValueMethods:
    """What ``Value`` gets: its arithmetic operators, indexing and numpy-like methods."""

    # Arithmetic ------------------------------------------------------------
    def __add__(self, other):
        return F.add(self, other)

    def __radd__(self, other):
        return F.add(other, self)

    def __sub__(self, other):
        return F.sub(self, other)

    def __rsub__(self, other):
        return F.sub(other, self)

    def __mul__(self, other):
        return F.mul(self, other)

    def __rmul__(self, other):
        return F.mul(other, self)

    def __truediv__(self, other):
        return F.div(self, other)

    def __rtruediv__(self, other):
        return F.div(other, self)

    def __pow__(self, other):
        return F.power(self, other)

    def __rpow__(self, other):
        return F.power(other, self)

    def __mod__(self, other):
        return activations_more.mod(self, other)

    def __rmod__(self, other):
        return activations_more.mod(other, self)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        return F.neg(self)

    def __abs__(self):
        return F.abs(self)

    def __pos__(self):
        return self

    def __getitem__(self, index):
        return F.getitem(self, index)

    def __setitem__(self, index, update):
        indexing.refuse_setitem(self, index)

    # Methods -----------------------------------------------------------------
    def exp(self):
        """e to the power of each element (records ``Exp``)."""
        return F.exp(self)

    def log(self):
        """The natural logarithm of each element (records ``Log``)."""
        return F.log(self)

    def sqrt(self):
        """The square root of each element (records ``Sqrt``)."""
        return F.sqrt(self)

    def rsqrt(self):
        """``1 / sqrt(x)`` of each element (records ``Rsqrt``)."""
        return F.rsqrt(self)

    def tanh(self):
        """The hyperbolic tangent of each element (records ``Tanh``)."""
        return F.tanh(self)

    def sigmoid(self):
        """``1 / (1 + exp(-x))`` of each element (records ``Sigmoid``)."""
        return F.sigmoid(self)

    def relu(self):
        """``max(x, 0)`` of each element (records ``Relu``; its derivative at 0 is 0)."""
        return F.relu(self)

    def gelu(self):
        """GELU of each element, in its tanh form (PyTorch's ``approximate="tanh"``; records ``Gelu``)."""
        return F.gelu(self)

    def round(self, decimals=0):
        """Each element rounded to ``decimals`` places, halves to even, as ``ndarray.round``; see ``topos.round``."""
        return elementwise_more.round(self, decimals)

    def sum(self, axis=None, keepdims=False):
        """The sum over ``axis`` (an int, a tuple of ints, or None for every axis), as ``numpy.sum`` (records ``Sum``).

        ``keepdims=True`` keeps the summed axes with length 1. A repeated axis
        raises ``ShapeError``, an out-of-range one ``AxisError`` (a ``ShapeError``
        naming the axis and the shape). Over an empty axis the sum is 0.
        """
        return F.sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        """The mean over ``axis``, as ``numpy.mean`` (records ``Sum``, then ``Div`` by the count, a ``Leaf``)."""
        return F.mean(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        """The largest element over ``axis``, as ``numpy.max`` (records ``Max``); over an empty axis, -inf."""
        return F.max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        """The smallest element over ``axis``, as ``numpy.min`` (recorded as ``Neg``, ``Max``, ``Neg``)."""
        return F.min(self, axis, keepdims)

    def var(self, axis=None, keepdims=False):
        """The biased variance over ``axis`` (divides by n, as ``numpy.var`` and layer norm do).

        Recorded as ``mean((x - m) * (x - m), axis)`` with ``m = mean(x, axis, keepdims=True)``.
        """
        return F.var(self, axis, keepdims)

    def reshape(self, *shape):
        """The same elements in row-major order in a new shape (records ``Reshape``; nothing if unchanged).

        The shape is given as ints or as one tuple: ``x.reshape(3, 2)`` or
        ``x.reshape((3, 2))``; one extent may be ``-1``, inferred from the size.
        A shape of another size raises ``ShapeError``.
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return F.reshape(self, shape)

    def transpose(self, *axes):
        """The axes permuted, as ``numpy.transpose`` (records ``Transpose``; nothing for the identity).

        ``axes`` are ints or one tuple; none reverses the axes. Result axis ``i``
        is operand axis ``axes[i]``.
        """
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return F.transpose(self, axes or None)

    def permute(self, *axes):
        """The same as ``transpose(*axes)`` (PyTorch's name; records ``Transpose``)."""
        return self.transpose(*axes)

    @property
    def T(self):
        """The axes reversed, as numpy's ``.T`` (records ``Transpose``; nothing for rank 0 or 1)."""
        return F.transpose(self, None)

    def broadcast_to(self, shape):
        """The value broadcast to ``shape`` by numpy's rules (records ``Broadcast``; nothing if the shape matches)."""
        return F.broadcast_to(self, shape)

    def expand_dims(self, axis):
        """A new axis of length 1 at ``axis``, as ``numpy.expand_dims`` (records ``Reshape``).

        An axis out of range for the new rank raises ``AxisError``.
        """
        return F.expand_dims(self, axis)

    def squeeze(self, axis=None):
        """Axes of length 1 removed: all of them, or those in ``axis`` (records ``Reshape``; nothing if none).

        Naming an axis whose length is not 1 raises ``ShapeError``; an axis out
        of range raises ``AxisError``, never wrapped modulo the rank.
        """
        return F.squeeze(self, axis)

    def argmax(self, axis=-1, keepdims=False):
        """The int32 index of the largest element along ``axis`` (records ``ArgMax``); see ``topos.argmax``.

        As ``numpy.argmax`` (ties go to the first index, a NaN counts as the largest),
        but along the last axis by default, as ``topos.argmax``; ``axis=None`` indexes
        the flattened value, numpy's default.
        """
        return scans.argmax(self, axis, keepdims)

    def argmin(self, axis=-1, keepdims=False):
        """The int32 index of the smallest element along ``axis``, as ``numpy.argmin`` (records ``ArgMin``)."""
        return scans.argmin(self, axis, keepdims)

    def cumsum(self, axis=-1, reverse=False):
        """The running sum along ``axis`` (records ``CumSum``); see ``topos.cumsum``."""
        return scans.cumsum(self, axis, reverse)

    def prod(self, axis=None, keepdims=False):
        """The product over ``axis``, as ``numpy.prod`` (records ``Prod``); see ``topos.prod``."""
        return reductions.prod(self, axis, keepdims)

    def any(self, axis=None, keepdims=False):
        """1.0 where some element over ``axis`` is nonzero (or NaN), else 0.0, as ``numpy.any``; see ``topos.any``."""
        return reductions.any(self, axis, keepdims)

    def all(self, axis=None, keepdims=False):
        """1.0 where every element over ``axis`` is nonzero (or NaN), else 0.0, as ``numpy.all``; see ``topos.all``."""
        return reductions.all(self, axis, keepdims)

    def cumprod(self, axis=-1, reverse=False):
        """The running product along ``axis`` (records ``CumProd``); see ``topos.cumprod``."""
        return reductions.cumprod(self, axis, reverse)

    def flatten(self):
        """The elements in one axis, in row-major order, as ``ndarray.flatten`` (records ``Reshape``)."""
        return F.reshape(self, (-1,))

    def ravel(self):
        """The same as ``flatten()``: a recorded value is never a view to share memory with."""
        return F.reshape(self, (-1,))

    def repeat(self, repeats, axis=None):
        """Each element repeated ``repeats`` times along ``axis``, as ``ndarray.repeat``; see ``topos.repeat``."""
        return repeat(self, repeats, axis)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """The ``offset``-th diagonal on a new last axis, as ``ndarray.diagonal``; see ``topos.diagonal``."""
        return diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1):
        """The sum of the ``offset``-th diagonal, as ``ndarray.trace``; see ``topos.trace``."""
        return trace(self, offset, axis1, axis2)

    def sort(self, axis=-1, descending=False):
        """``x`` sorted along ``axis``, stable, a NaN last (records ``Sort``); see ``topos.sort``.

        A new value, where ``ndarray.sort`` sorts in place and returns None: a recorded
        value never changes (``jax.Array.sort`` returns one too).
        """
        return sorting.sort(self, axis, descending)

    def argsort(self, axis=-1, descending=False):
        """The int32 positions that sort ``x`` along ``axis``, stable, as ``ndarray.argsort(kind="stable")``; see ``topos.argsort``."""
        return sorting.argsort(self, axis, descending)

    def searchsorted(self, v, side="left"):
        """Where each value of ``v`` would go in this sorted vector, as ``ndarray.searchsorted``; see ``topos.searchsorted``."""
        return sorting.searchsorted(self, v, side)

    def cummax(self, axis=-1, reverse=False):
        """The running maximum along ``axis`` (records ``CumMax``), as ``torch.Tensor.cummax``'s values; see ``topos.cummax``."""
        return reductions.cummax(self, axis, reverse)

    def cummin(self, axis=-1, reverse=False):
        """The running minimum along ``axis`` (records ``CumMin``); see ``topos.cummin``."""
        return reductions.cummin(self, axis, reverse)

    def swapaxes(self, axis1, axis2):
        """The two axes exchanged, as ``ndarray.swapaxes`` (records ``Transpose``); see ``topos.swapaxes``."""
        return F.swapaxes(self, axis1, axis2)

    def clip(self, min=None, max=None):  # noqa: A002  (numpy's ndarray.clip names them so)
        """The elements limited to ``[min, max]``, as ``ndarray.clip`` (records ``Maximum``, ``Minimum``); see ``topos.clip``."""
        return activations_more.clip(self, min, max)


def attach():
    """Set every method and property of ``ValueMethods`` on ``Value``, under the same names."""
    for name, member in vars(ValueMethods).items():
        if callable(member) or isinstance(member, property):
            setattr(Value, name, member)


attach()
