"""``Tensor``: a read-only numpy array with topos's printing conventions.

Also the rules every way into topos shares for arrays that come from the
caller: what counts as an array of numbers, which numbers fit int32, and when
an array is immutable, so that a table or a run can keep it without a copy
(which dtypes topos supports is ``topos.dtypes``). ``Tensor`` builds on the
ops' axis and reshape rules, so the ops never import this module.
"""

import math

import numpy as np

from .dtypes import DTYPES, INT32_MAX, INT32_MIN, UINT32_MAX
from .errors import ArgumentError, ArgumentTypeError, DtypeError, IndexingError, ShapeError
from .frames import user_line
from .ops.registry import axis_tuple
from .ops.shape import reshape_target


def numeric_array(value, what, error_class):
    """``value`` (a number, a nested list, an array or a ``Tensor``) as an ndarray of numbers.

    The array may be ``value`` itself or share its memory. Anything else (text,
    objects, a ragged or too deeply nested list, complex numbers) raises
    ``error_class`` with a message that starts with ``what``.
    """
    if isinstance(value, Tensor):
        value = value.array
    try:
        array = np.asarray(value)
    except (ValueError, TypeError, OverflowError, RecursionError) as error:
        raise error_class(f"{what}: not an array of numbers ({error})") from None
    if array.dtype.kind not in "biuf":
        raise error_class(f"{what}: expected numbers, got {array.dtype}")
    return array


def int32_problem(array):
    """Why the numbers of ``array`` cannot be int32 values (a phrase), or None when they can.

    Each must be whole and within -2**31..2**31-1: a value out of range would
    otherwise wrap around silently (2**40 becomes 0).
    """
    if array.size == 0 or array.dtype.kind == "b":
        return None
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)):
            return "needs whole numbers, got a value that is not finite"
        if not np.all(np.mod(array, 1) == 0):
            return "needs whole numbers"
    low, high = int(array.min()), int(array.max())
    if low < INT32_MIN or high > INT32_MAX:
        return f"values {low}..{high} do not fit int32"
    return None


def uint32_problem(array):
    """Why the numbers of ``array`` cannot be uint32 words (a phrase), or None when they can.

    Each must be whole and within 0..2**32-1: a negative value would otherwise wrap
    around silently (-1 becomes 4294967295), and so would one past the top.
    """
    if array.size == 0 or array.dtype.kind in "bu" and array.dtype.itemsize <= 4:
        return None
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)):
            return "needs whole numbers, got a value that is not finite"
        if not np.all(np.mod(array, 1) == 0):
            return "needs whole numbers"
    low, high = int(array.min()), int(array.max())
    if low < 0 or high > UINT32_MAX:
        return f"values {low}..{high} do not fit uint32"
    return None


def integer_problem(array, dtype):
    """``int32_problem`` or ``uint32_problem`` for an integer ``dtype``; None for a float dtype."""
    if dtype == "int32":
        return int32_problem(array)
    if dtype == "uint32":
        return uint32_problem(array)
    return None


def is_immutable(array):
    """Whether no one can write the elements of ``array``.

    True when it is read-only and so is every array it views, down to the one
    that owns the memory (or to a read-only buffer such as ``bytes``). A
    read-only view of a writeable array is not: its owner may still write it.
    """
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    if array is None:
        return True
    try:
        return memoryview(array).readonly
    except TypeError:
        return False


def immutable(array):
    """``array`` itself when it is immutable (``is_immutable``), else a read-only copy of it."""
    if is_immutable(array):
        return array
    return freeze(np.array(array, copy=True))


def freeze(array):
    """Make an array topos has just made read-only in place, and return it.

    Only for arrays that nothing outside topos holds: the holder can no longer
    write it. Such an array (a fresh result of numpy) is immutable, so tables
    take it without a copy.
    """
    if isinstance(array, np.ndarray) and array.flags.writeable:
        array.flags.writeable = False
    return array


def frozen(array):
    """Return ``array`` as a read-only ndarray (no copy when it already is one).

    A writeable array is seen through a read-only view, so the caller keeps
    its right to write the original: use ``immutable`` where a copy must not change.
    """
    array = np.asarray(array)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def _numpy_dtype(dtype):
    try:
        return np.dtype(dtype)
    except (TypeError, ValueError):
        raise DtypeError(f"unknown dtype {dtype!r}: topos records {', '.join(DTYPES)}") from None


def _unwrap(value):
    return value.array if isinstance(value, Tensor) else value


def _result(array):
    """The Tensor of an array this module's arithmetic has just made (read-only in place, no view)."""
    return Tensor(freeze(np.asarray(array)))


class Tensor:
    """A value that a run, a gradient or a parameter table hands back.

    It wraps a read-only numpy array: ``np.asarray(t)`` sees the same memory.
    Made from a writeable array of the caller's, it is a read-only view of it,
    and a parameter table or a run that takes it copies it first. Arithmetic
    with tensors, arrays and Python numbers gives new tensors; it is numpy's
    arithmetic, and raises numpy's errors for operands that are not numbers.
    """

    __slots__ = ("array",)
    __array_priority__ = 100

    def __init__(self, value, dtype=None):
        value = _unwrap(value)
        if dtype is not None:
            dtype = _numpy_dtype(dtype)
        elif not isinstance(value, (np.ndarray, np.generic)):
            dtype = "float64"  # Python numbers and lists are float64 values, as on a default tape
        try:
            array = np.asarray(value, dtype=dtype)
        except (ValueError, TypeError, OverflowError, RecursionError) as error:
            raise ArgumentError(f"Tensor() takes numbers: {error}") from None
        if array.dtype.kind not in "biuf":
            raise ArgumentError(f"Tensor() takes numbers, got {array.dtype}")
        if isinstance(value, np.ndarray) and np.may_share_memory(array, value):
            self.array = frozen(array)  # the caller's array, seen read-only
        else:
            self.array = freeze(array)  # made here: nobody else holds it

    # Reading -----------------------------------------------------------
    @property
    def shape(self):
        """The shape, a tuple of ints (``()`` for rank 0)."""
        return tuple(self.array.shape)

    @property
    def dtype(self):
        """The dtype's name: ``"float64"``, ``"float32"``, ``"int32"`` or ``"uint32"`` (a random key)."""
        return self.array.dtype.name

    @property
    def size(self):
        """The number of elements."""
        return int(self.array.size)

    def numpy(self):
        """The values as a read-only numpy array (no copy)."""
        return self.array

    def scalar(self):
        """The single element as a Python number; more than one element raises."""
        if self.array.size != 1:
            raise ShapeError(
                f"scalar() needs a tensor of one element, this one has shape {list(self.shape)}", source=user_line()
            )
        return self.array.reshape(()).item()

    def __array__(self, dtype=None, copy=None):
        if dtype is not None and np.dtype(dtype) != self.array.dtype:
            if copy is False:
                # numpy 2's protocol: copy=False promises no copy, so a conversion must refuse.
                raise ArgumentError(f"a {self.dtype} tensor cannot become {np.dtype(dtype).name} without a copy")
            return self.array.astype(dtype)
        if copy:
            return self.array.copy()
        return self.array

    def __float__(self):
        return float(self.scalar())

    def __int__(self):
        return int(self.scalar())

    def __len__(self):
        if self.array.ndim == 0:
            raise ArgumentTypeError("len() of a rank-0 tensor")
        return self.array.shape[0]

    def __getitem__(self, index):
        try:
            return Tensor(self.array[index])
        except (IndexError, TypeError, ValueError) as error:
            message = f"{error} (indexing a tensor of shape {list(self.shape)})"
            raise IndexingError(message, shapes=[self.shape], source=user_line()) from None

    def __iter__(self):
        if self.array.ndim == 0:
            raise ArgumentTypeError("iteration over a rank-0 tensor")
        return (Tensor(row) for row in self.array)

    # Printing ------------------------------------------------------------
    def __str__(self):
        if self.array.ndim == 0:
            return str(self.array[()])
        return str(self.array)

    def __repr__(self):
        if self.array.ndim == 0:
            return f"Tensor({self.array[()]!s}, dtype={self.dtype})"
        body = np.array2string(self.array, separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self.dtype})"

    def __format__(self, spec):
        if not spec:
            # f"{t}" reads like str(t); numpy's float32 scalars would format as a float64 repr.
            return str(self)
        if self.array.ndim == 0:
            return format(self.array[()], spec)
        return format(str(self), spec)

    # Arithmetic --------------------------------------------------------
    def __add__(self, other):
        return _result(self.array + _unwrap(other))

    def __radd__(self, other):
        return _result(_unwrap(other) + self.array)

    def __sub__(self, other):
        return _result(self.array - _unwrap(other))

    def __rsub__(self, other):
        return _result(_unwrap(other) - self.array)

    def __mul__(self, other):
        return _result(self.array * _unwrap(other))

    def __rmul__(self, other):
        return _result(_unwrap(other) * self.array)

    def __truediv__(self, other):
        return _result(self.array / _unwrap(other))

    def __rtruediv__(self, other):
        return _result(_unwrap(other) / self.array)

    def __pow__(self, other):
        return _result(self.array ** _unwrap(other))

    def __rpow__(self, other):
        return _result(_unwrap(other) ** self.array)

    def __matmul__(self, other):
        return _result(self.array @ _unwrap(other))

    def __rmatmul__(self, other):
        return _result(_unwrap(other) @ self.array)

    def __neg__(self):
        return _result(-self.array)

    def __abs__(self):
        return _result(np.abs(self.array))

    def __lt__(self, other):
        return _result(self.array < _unwrap(other))

    def __le__(self, other):
        return _result(self.array <= _unwrap(other))

    def __gt__(self, other):
        return _result(self.array > _unwrap(other))

    def __ge__(self, other):
        return _result(self.array >= _unwrap(other))

    def __bool__(self):
        return bool(self.array)

    def sqrt(self):
        """The square root, elementwise."""
        return _result(np.sqrt(self.array))

    def sum(self, axis=None, keepdims=False):
        """The sum over ``axis`` (None: every element), as ``numpy.sum``; a bad axis raises ``AxisError``."""
        return _result(self.array.sum(axis=self._axes(axis, "sum"), keepdims=keepdims))

    def mean(self, axis=None, keepdims=False):
        """The mean over ``axis`` (None: every element), as ``numpy.mean``; a bad axis raises ``AxisError``."""
        return _result(self.array.mean(axis=self._axes(axis, "mean"), keepdims=keepdims))

    def _axes(self, axis, what):
        return axis_tuple(axis, self.shape, what)

    def reshape(self, *shape):
        """The same elements in a new shape: ``t.reshape(2, 3)`` or ``t.reshape((2, 3))``.

        One extent may be -1; a shape of another size raises ``ShapeError``.
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = reshape_target(shape, self.shape)
        if math.prod(shape) != self.size:
            raise ShapeError(
                f"reshape: cannot reshape {list(self.shape)} into {list(shape)}",
                shapes=[self.shape],
                source=user_line(),
            )
        return _result(self.array.reshape(shape))
