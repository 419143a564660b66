"""The exceptions topos raises.

Every error is a ``ToposError``; the ones about bad user input are also
``ValueError`` so that code written against numpy's habits keeps working.
Errors that concern a recorded node carry the user's source line, so a reader
(a terminal, the playground's editor) can point at the line that caused it.
"""


class ToposError(Exception):
    """Base class of every error topos raises on purpose."""


class ShapeError(ToposError, ValueError):
    """Operands whose shapes (or dtypes) cannot meet in the recorded operation.

    Attributes: ``opcode``, ``shapes`` (the operand shapes as tuples) and
    ``source`` (``(filename, line)`` of the user's code that recorded it).
    """

    def __init__(self, message, opcode=None, shapes=(), source=None):
        if source is not None:
            message = f"{message} (recorded at {source[0]}:{source[1]})"
        super().__init__(message)
        self.opcode = opcode
        self.shapes = tuple(shapes)
        self.source = source


class FeedError(ToposError, ValueError):
    """A feed or a symbol that does not fit the network it was given to."""


class LoweringError(ToposError):
    """An operation that a lowering or an emitter cannot express.

    Attributes: ``node`` (its index) and ``opcode``.
    """

    def __init__(self, message, node=None, opcode=None):
        super().__init__(message)
        self.node = node
        self.opcode = opcode


class CheckpointError(ToposError):
    """A checkpoint or a saved spec that cannot be written or read back."""
