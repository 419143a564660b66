"""The exceptions topos raises.

Every error topos raises on purpose is a ``ToposError``, so one
``except topos.ToposError`` catches them all. Each class also keeps the
built-in base that the same mistake raised before it had a class of its own
(``ValueError`` for bad values, ``TypeError`` for arguments of the wrong kind,
``IndexError`` for indices and axes out of range, ``RuntimeError`` for a sealed
tape, ``KeyError`` for an unknown opcode), so code written against numpy's
habits keeps working. Errors that concern a recorded node carry the user's
source line, so a reader (a terminal, the playground's editor) can point at the
line that caused it. So do the errors of the arguments a call refuses
(``ArgumentError``, ``ArgumentTypeError``, ``FeedError``, ``DtypeError``,
``RecordingError``): made without a ``source``, they find the user's line
themselves, the innermost caller outside the package, however deep in topos the
check sits (an optimizer's, a trainer's, a card's). A ``ShapeError`` does not
guess: one raised while a network runs names the line that recorded the failing
node (``located``), and the checks of a call's shapes pass the caller's line.

```text
ToposError
├── ShapeError (ValueError)            operands, axes or indices that do not fit a shape
│   ├── AxisError (IndexError)         an axis out of range for a shape
│   └── IndexingError (IndexError)     an index or slice that does not fit a value
├── DtypeError (ValueError)            a dtype topos does not support, or not here
├── FeedError (ValueError)             a feed or a symbol that does not fit its network
├── RecordingError (ValueError)        a payload or a value the tape refuses
│   └── SealedTapeError (RuntimeError) recording on a sealed tape
├── ArgumentError (ValueError)         an argument outside what the call takes
├── ArgumentTypeError (TypeError)      an argument of a kind the call does not take
├── UnknownOpcodeError (KeyError)      no primitive of that name is registered
├── MissingRuleError (NotImplementedError)  a primitive without the rule a pass needs
├── LoweringError                      an operation a lowering cannot express
└── CheckpointError                    a file that cannot be written or read back
```
"""

from .frames import user_line
from .text import recorded_at


class ToposError(Exception):
    """Base class of every error topos raises on purpose."""


def _at_the_users_line(self, message, source=None):
    """The ``__init__`` of the errors that name the user's line: ``source`` is ``(filename, line)``
    and the message ends with ``(recorded at filename:line)``; ``message`` is the message without
    it. Without a ``source``, it is the innermost caller outside the topos package when the error
    is made (none where there is no such caller)."""
    if source is None:
        source = user_line()
    #: The message without the line, for an error that re-raises this one under its own words.
    self.message = message
    if source is not None:
        message = f"{message} ({recorded_at(source)})"
    super(ToposError, self).__init__(message)
    self.source = source


def _made_again(self):
    """How pickle makes the error again: from its message and line, not from the message that names the
    line already (which the ``__init__`` would name twice, or at the line that unpickles it)."""
    return (type(self), (self.message, self.source))


class ShapeError(ToposError, ValueError):
    """Operands whose shapes (or dtypes) cannot meet in the recorded operation.

    Attributes: ``opcode``, ``shapes`` (the operand shapes as tuples) and
    ``source`` (``(filename, line)`` of the user's code that recorded it).
    """

    def __init__(self, message, opcode=None, shapes=(), source=None):
        if source is not None:
            message = f"{message} ({recorded_at(source)})"
        super().__init__(message)
        self.opcode = opcode
        self.shapes = tuple(shapes)
        self.source = source


class AxisError(ShapeError, IndexError):
    """An axis that is not an integer in ``-rank..rank-1`` of the shape it names.

    The message names the axis and the shape; it is never wrapped modulo the
    rank. Also an ``IndexError``, as numpy's ``AxisError`` is.
    """


class IndexingError(ShapeError, IndexError):
    """An index that does not fit the value it indexes: out of range, too many,
    or of a kind topos does not take (also an ``IndexError``)."""


class DtypeError(ToposError, ValueError):
    """A dtype topos does not support (the message lists those it does), or one that does not fit here."""

    __init__ = _at_the_users_line
    __reduce__ = _made_again


class FeedError(ToposError, ValueError):
    """A feed or a symbol that does not fit the network it was given to."""

    __init__ = _at_the_users_line
    __reduce__ = _made_again


class RecordingError(ToposError, ValueError):
    """A recording the tape refuses for a reason other than shapes.

    A payload that is not numbers (text, objects, a ragged or too deeply nested
    list), int32 values that are not whole or do not fit int32, a parameter
    name used twice, values of two tapes meeting in one operation.
    ``source`` is ``(filename, line)`` of the user's code that tried to record.
    """

    __init__ = _at_the_users_line
    __reduce__ = _made_again


class SealedTapeError(RecordingError, RuntimeError):
    """Recording on a tape that is sealed (also a ``RuntimeError``, as before)."""


class ArgumentError(ToposError, ValueError):
    """An argument outside what the call takes: a negative learning rate, an unknown
    backend, a backward target that is not a rank-0 float, a plan that reads nothing."""

    __init__ = _at_the_users_line
    __reduce__ = _made_again


class ArgumentTypeError(ToposError, TypeError):
    """An argument of a kind the call does not take: a string where a value goes,
    a table of the wrong class, the truth value of a recorded value."""

    __init__ = _at_the_users_line
    __reduce__ = _made_again


class UnknownOpcodeError(ToposError, KeyError):
    """No primitive of that name is registered (also a ``KeyError``)."""

    def __str__(self):
        # KeyError's str() is the repr of its argument; this message is a sentence.
        return str(self.args[0]) if self.args else ""


class MissingRuleError(ToposError, NotImplementedError):
    """A primitive without the rule a pass needs (its derivative, its lowering)."""


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


def located(error, source):
    """``error`` naming the user's line ``source`` (``(filename, line)``) that recorded its node.

    A primitive's ``forward`` raises a ``ShapeError`` (an index out of range, say)
    without knowing which node it runs; the interpreter that does know calls
    this. An error that already names a line, or a ``source`` that is unknown,
    comes back as it is.
    """
    if not isinstance(error, ShapeError) or error.source is not None or source is None:
        return error
    return type(error)(str(error), opcode=error.opcode, shapes=error.shapes, source=source)
