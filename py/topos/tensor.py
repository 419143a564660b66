"""``Tensor``: an immutable numpy array with topos's printing conventions."""

import numpy as np

FLOAT_DTYPES = ("float32", "float64")
INDEX_DTYPES = ("int32",)
DTYPES = FLOAT_DTYPES + INDEX_DTYPES


def canonical_dtype(dtype):
    """Return the dtype's name if topos supports it, else raise ``ValueError``."""
    name = np.dtype(dtype).name
    if name not in DTYPES:
        raise ValueError(f"unsupported dtype {name!r}: topos records {', '.join(DTYPES)}")
    return name


def frozen(array):
    """Return ``array`` as a read-only ndarray (no copy when it already is one)."""
    array = np.asarray(array)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def _unwrap(value):
    return value.array if isinstance(value, Tensor) else value


class Tensor:
    """A value that a run, a gradient or a parameter table hands back.

    It wraps a read-only numpy array: ``np.asarray(t)`` sees the same memory.
    Arithmetic with tensors, arrays and Python numbers gives new tensors.
    """

    __slots__ = ("array",)
    __array_priority__ = 100

    def __init__(self, value, dtype=None):
        value = _unwrap(value)
        if dtype is None and not isinstance(value, (np.ndarray, np.generic)):
            dtype = "float64"  # Python numbers and lists are float64 values, as on a default tape
        array = np.asarray(value, dtype=dtype)
        self.array = frozen(array)

    # Reading -----------------------------------------------------------
    @property
    def shape(self):
        """The shape, a tuple of ints (``()`` for rank 0)."""
        return tuple(self.array.shape)

    @property
    def dtype(self):
        """The dtype's name: ``"float64"``, ``"float32"`` or ``"int32"``."""
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
            raise ValueError(f"scalar() needs a tensor of one element, this one has shape {list(self.shape)}")
        return self.array.reshape(()).item()

    def __array__(self, dtype=None, copy=None):
        if dtype is not None and np.dtype(dtype) != self.array.dtype:
            if copy is False:
                # numpy 2's protocol: copy=False promises no copy, so a conversion must refuse.
                raise ValueError(f"a {self.dtype} tensor cannot become {np.dtype(dtype).name} without a copy")
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
            raise TypeError("len() of a rank-0 tensor")
        return self.array.shape[0]

    def __getitem__(self, index):
        return Tensor(self.array[index])

    def __iter__(self):
        if self.array.ndim == 0:
            raise TypeError("iteration over a rank-0 tensor")
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
        return Tensor(self.array + _unwrap(other))

    def __radd__(self, other):
        return Tensor(_unwrap(other) + self.array)

    def __sub__(self, other):
        return Tensor(self.array - _unwrap(other))

    def __rsub__(self, other):
        return Tensor(_unwrap(other) - self.array)

    def __mul__(self, other):
        return Tensor(self.array * _unwrap(other))

    def __rmul__(self, other):
        return Tensor(_unwrap(other) * self.array)

    def __truediv__(self, other):
        return Tensor(self.array / _unwrap(other))

    def __rtruediv__(self, other):
        return Tensor(_unwrap(other) / self.array)

    def __pow__(self, other):
        return Tensor(self.array ** _unwrap(other))

    def __rpow__(self, other):
        return Tensor(_unwrap(other) ** self.array)

    def __matmul__(self, other):
        return Tensor(self.array @ _unwrap(other))

    def __rmatmul__(self, other):
        return Tensor(_unwrap(other) @ self.array)

    def __neg__(self):
        return Tensor(-self.array)

    def __abs__(self):
        return Tensor(np.abs(self.array))

    def __lt__(self, other):
        return Tensor(self.array < _unwrap(other))

    def __le__(self, other):
        return Tensor(self.array <= _unwrap(other))

    def __gt__(self, other):
        return Tensor(self.array > _unwrap(other))

    def __ge__(self, other):
        return Tensor(self.array >= _unwrap(other))

    def __bool__(self):
        return bool(self.array)

    def sqrt(self):
        """The square root, elementwise."""
        return Tensor(np.sqrt(self.array))

    def sum(self, axis=None, keepdims=False):
        """The sum over ``axis`` (None: every element), as ``numpy.sum``."""
        return Tensor(self.array.sum(axis=axis, keepdims=keepdims))

    def mean(self, axis=None, keepdims=False):
        """The mean over ``axis`` (None: every element), as ``numpy.mean``."""
        return Tensor(self.array.mean(axis=axis, keepdims=keepdims))

    def reshape(self, *shape):
        """The same elements in a new shape: ``t.reshape(2, 3)`` or ``t.reshape((2, 3))``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return Tensor(self.array.reshape(shape))

