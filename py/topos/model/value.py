"""``Value``: a recorded node seen from the tape that holds it.

Operators and methods read like numpy; each appends nodes through
``topos.model.functions`` (where the broadcasting rules live).
"""

from ..ops.registry import format_shape


class Value:
    """A node on an open tape. Hashable by identity: ``==`` is not overloaded."""

    __slots__ = ("tape", "index")
    __array_priority__ = 1000  # so that ndarray + Value records, rather than numpy looping over the value

    def __init__(self, tape, index):
        self.tape = tape
        self.index = index

    @property
    def node(self):
        return self.tape._nodes[self.index]

    @property
    def shape(self):
        return self.node.shape

    @property
    def dtype(self):
        return self.node.dtype

    @property
    def ndim(self):
        return len(self.node.shape)

    @property
    def size(self):
        return self.node.size

    def __repr__(self):
        node = self.node
        return f"<Value {node.index}: {node.opcode} {format_shape(node.shape)} {node.dtype}>"

    def __bool__(self):
        raise TypeError("a recorded value has no truth value until it runs (use topos.where for choices)")

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a rank-0 value")
        return self.shape[0]

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

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        return F.neg(self)

    def __pos__(self):
        return self

    def __getitem__(self, index):
        return F.getitem(self, index)

    # Methods -----------------------------------------------------------------
    def exp(self):
        return F.exp(self)

    def log(self):
        return F.log(self)

    def sqrt(self):
        return F.sqrt(self)

    def rsqrt(self):
        return F.rsqrt(self)

    def tanh(self):
        return F.tanh(self)

    def sigmoid(self):
        return F.sigmoid(self)

    def relu(self):
        return F.relu(self)

    def gelu(self):
        return F.gelu(self)

    def sum(self, axis=None, keepdims=False):
        return F.sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return F.mean(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return F.max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return F.min(self, axis, keepdims)

    def var(self, axis=None, keepdims=False):
        return F.var(self, axis, keepdims)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return F.reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return F.transpose(self, axes or None)

    def permute(self, *axes):
        return self.transpose(*axes)

    @property
    def T(self):
        return F.transpose(self, None)

    def broadcast_to(self, shape):
        return F.broadcast_to(self, shape)

    def expand_dims(self, axis):
        return F.expand_dims(self, axis)

    def squeeze(self, axis=None):
        return F.squeeze(self, axis)


from . import functions as F  # noqa: E402  (functions builds on Value)
