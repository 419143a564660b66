"""``Value``: a recorded node seen from the tape that holds it.

Operators and methods read like numpy; each appends nodes through
``topos.model.functions`` (where the broadcasting rules live). That module
builds on this one (it checks its operands against ``Value`` and returns new
ones), so the operators and methods are not written here: as JAX attaches its
array methods from ``jax/_src/numpy/array_methods.py``, ``topos.model.value_methods``
sets them on ``Value`` when ``topos.model`` is imported, and every import of
topos imports it first.
"""

from ..errors import ArgumentTypeError
from ..text import format_shape


class Value:
    """A node on an open tape. Hashable by identity: ``==`` is not overloaded."""

    __slots__ = ("tape", "index")
    __array_priority__ = 1000  # so that ndarray + Value records, rather than numpy looping over the value

    def __init__(self, tape, index):
        self.tape = tape
        self.index = index

    @property
    def node(self):
        """The recorded ``Node``: opcode, operands, shape, dtype, attributes and source line."""
        return self.tape._nodes[self.index]

    @property
    def shape(self):
        """The shape, a tuple of ints, known when the value is recorded."""
        return self.node.shape

    @property
    def dtype(self):
        """The dtype's name: ``"float32"``, ``"float64"`` or ``"int32"``."""
        return self.node.dtype

    @property
    def ndim(self):
        """The rank: ``len(shape)``."""
        return len(self.node.shape)

    @property
    def size(self):
        """The number of elements: the product of ``shape`` (1 for rank 0)."""
        return self.node.size

    def __repr__(self):
        node = self.node
        return f"<Value {node.index}: {node.opcode} {format_shape(node.shape)} {node.dtype}>"

    def __bool__(self):
        raise ArgumentTypeError("a recorded value has no truth value until it runs (use topos.where for choices)")

    def __len__(self):
        if not self.shape:
            raise ArgumentTypeError("len() of a rank-0 value")
        return self.shape[0]
