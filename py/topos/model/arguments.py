"""What the recording functions take: operands turned into recorded values, indices into slices.

``topos.model.functions`` records; the helpers here check and convert what the
user passed (numbers, lists and arrays become leaves; a basic index becomes the
start, stop and step of a ``Slice``), and ``all_or_nothing`` makes each public
function record atomically: an error leaves the tape as it was.
"""

import builtins
import functools
import numbers

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, IndexingError, RecordingError, ShapeError
from ..tensor import Tensor
from ..text import format_shape
from .nodes import user_source
from .value import Value


def tape_of(*operands):
    tape = None
    for operand in operands:
        if isinstance(operand, Value):
            if tape is None:
                tape = operand.tape
            elif operand.tape is not tape:
                raise RecordingError("operands were recorded on different tapes", user_source())
    if tape is None:
        raise ArgumentTypeError("at least one operand must be a recorded value")
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


def basic_index(shape, index):
    """``(start, stop, step, out_shape)`` of a basic index (a tuple of ints, slices with positive steps,
    ``None`` and ``...``) into a value of ``shape``; raises ``IndexingError`` naming what does not fit."""

    def fail(message):
        raise IndexingError(
            f"{message} (indexing a value of shape {format_shape(shape)})", opcode="Slice", shapes=[shape]
        )

    if builtins.sum(1 for i in index if i is Ellipsis) > 1:
        fail("an index can only have a single ellipsis ('...')")
    explicit = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    if explicit > len(shape):
        fail(f"too many indices: {explicit} for {len(shape)} axes")
    expanded = []
    for item in index:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - explicit))
        else:
            expanded.append(item)
    if Ellipsis not in index:
        expanded.extend([slice(None)] * (len(shape) - explicit))
    start, stop, step, out_shape = [], [], [], []
    axis = 0
    for item in expanded:
        if item is None:
            out_shape.append(1)
            continue
        extent = shape[axis]
        if isinstance(item, slice):
            try:
                lo, hi, st = item.indices(extent)
            except (TypeError, ValueError) as error:
                fail(f"slice {item} of axis {axis}: {error}")
            if st < 1:
                fail("negative slice steps are not supported; use a gather (take) instead")
            count = builtins.max(0, (hi - lo + st - 1) // st)
            start.append(lo)
            stop.append(lo + (count - 1) * st + 1 if count else lo)
            step.append(st)
            out_shape.append(count)
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            i = int(item)
            if not -extent <= i < extent:
                fail(f"index {i} is out of range for axis {axis} with extent {extent}")
            i %= extent
            start.append(i)
            stop.append(i + 1)
            step.append(1)
        else:
            fail(f"unsupported index {item!r}: indices are ints, slices, None, ... or a list of ints")
        axis += 1
    return start, stop, step, out_shape


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
