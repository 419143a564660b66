"""What the recording functions take: operands turned into recorded values.

``topos.model.functions`` records; the helpers here check and convert what the
user passed (numbers, lists and arrays become leaves; ``topos.model.indexing``
reads indices), and ``all_or_nothing`` makes each public function record
atomically: an error leaves the tape as it was.
"""

import functools
import numbers

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, RecordingError, ShapeError
from ..tensor import Tensor
from .nodes import user_source
from .tape import innermost
from .value import Value


def tape_of(*operands):
    """The tape an operation over ``operands`` records on: theirs, or, where a body's values meet
    values of a tape it was made inside (``topos.model.bodies``), the body's."""
    tapes = [operand.tape for operand in operands if isinstance(operand, Value)]
    if not tapes:
        raise ArgumentTypeError("at least one operand must be a recorded value")
    tape = innermost(tapes)
    if tape is None:
        raise RecordingError("operands were recorded on different tapes", user_source())
    return tape


def recorded(value, what):
    """``value`` itself if it is a recorded value; raises ``ArgumentTypeError`` naming ``what`` otherwise."""
    if not isinstance(value, Value):
        raise ArgumentTypeError(f"{what} takes a recorded value, got {type(value).__name__}")
    return value


def as_value(tape, operand, dtype):
    """A recorded value for an operand; numbers, lists, arrays and tensors become leaves."""
    if isinstance(operand, Value):
        return operand
    if isinstance(operand, (numbers.Number, list, tuple, np.ndarray, np.generic, Tensor)):
        return tape.leaf(operand, dtype=dtype)
    raise ArgumentTypeError(f"cannot record an operand of type {type(operand).__name__}")


def float_dtype(tape, operands):
    for operand in operands:
        if isinstance(operand, Value) and operand.dtype in ("float32", "float64"):
            return operand.dtype
    return tape.dtype


def integer_shape(shape, opcode, value):
    """``shape`` (an int or a sequence of ints) as a tuple of ints; raises ``ShapeError`` otherwise."""
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or any(
        isinstance(d, bool) or not isinstance(d, numbers.Integral) for d in shape
    ):
        raise ShapeError(
            f"{opcode}: the shape must be a tuple of integers, got {shape!r}", opcode=opcode, shapes=[value.shape]
        )
    return tuple(int(d) for d in shape)


def joined(values, what):
    """The operands of concatenate or stack as recorded values (numbers and arrays become leaves)."""
    if isinstance(values, (Value, str, bytes)) or not hasattr(values, "__iter__"):
        raise ArgumentTypeError(f"{what} takes a list of values, got {type(values).__name__}")
    values = list(values)
    if not values:
        raise ArgumentError(f"{what} needs at least one value")
    tape = tape_of(*values)
    dtype = float_dtype(tape, values)
    return [as_value(tape, v, dtype) for v in values]


def as_indices(tape, indices):
    if isinstance(indices, Value):
        return indices
    return tape.leaf(indices, dtype="int32")


def tape_in(args):
    """The tape of the first recorded value in ``args``, looking into lists and tuples.

    A loop rather than recursion, so that a deep nesting cannot exhaust the stack;
    each list is looked into once, so that one holding itself cannot loop forever.
    """
    pending = [iter(args)]
    seen = set()
    while pending:
        for arg in pending[-1]:
            if isinstance(arg, Value):
                return arg.tape
            if isinstance(arg, (list, tuple)) and id(arg) not in seen:
                seen.add(id(arg))
                pending.append(iter(arg))
                break
        else:
            pending.pop()
    return None


def all_or_nothing(function):
    """Wrap a recording function so that an error leaves the tape as it was.

    A composite records several nodes (a leaf, its broadcast, the operation);
    when a later one fails its shape check, the earlier ones are removed again,
    so a bad line in the user's code loses nothing and adds nothing. A
    ``ShapeError`` raised before any node was appended (an axis out of range,
    say) is given the user's line here, as ``tape.append`` gives it to the rest.
    """

    @functools.wraps(function)
    def recording(*args, **kwargs):
        tape = tape_in(args)
        mark = len(tape._nodes) if tape is not None else 0
        try:
            return function(*args, **kwargs)
        except ShapeError as error:
            if tape is not None:
                del tape._nodes[mark:]
            if error.source is not None:
                raise
            raise type(error)(str(error), opcode=error.opcode, shapes=error.shapes, source=user_source()) from None
        except BaseException:
            if tape is not None:
                del tape._nodes[mark:]
            raise

    return recording
