"""``topos.einsum``: every subscript numpy accepts, recorded as the transposes, reshapes, products and sums it means.

The subscripts are read as numpy reads them (explicit ``->`` or implicit output, ``...``,
repeated letters, one operand or many, numpy's interleaved ``einsum(a, [0, 1], b, [1, 2])``
form), then recorded in primitives that already exist, so that every reading shows the
work and the gradient is theirs:

1. per operand, a letter repeated in its own subscript is a diagonal (``Transpose``,
   ``Reshape`` and a ``Slice`` of step ``n + 1``: ``topos.diagonal``); an axis of length 1
   under a letter that is longer elsewhere is broadcast (``Broadcast``), as numpy does;
2. a letter that no other operand and not the output names is summed at once (``Sum``);
3. the operands are contracted in pairs, left to right (numpy's ``optimize=False``), or with
   ``optimize="greedy"`` in opt_einsum's greedy order (JAX's default): letters both share and
   another operand or the output needs are batch axes, the others they share are contracted. With
   letters to contract, the pair is transposed and reshaped to ``[batch, M, K]`` and
   ``[batch, K, N]`` and multiplied by one ``MatMul``; with none, it is a broadcast ``Mul``;
4. the result is transposed into the output's order.
"""

import numbers
import string

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..text import format_shape
from . import arguments
from . import functions as F
from .building import diagonal
from .value import Value

LETTERS = string.ascii_letters


def _fail(message, operands):
    raise ShapeError(f"einsum: {message}", opcode="einsum", shapes=[getattr(v, "shape", ()) for v in operands])


def _from_sublists(args):
    """numpy's interleaved form ``(a, [0, 1], b, [1, 2], [0, 2])`` as a subscript string and its operands.

    Integers 0..25 become ``A``..``Z`` and 26..51 ``a``..``z``, so the implicit output's
    alphabetical order is the integers' order, as numpy's."""

    def term(sublist):
        letters = []
        for item in sublist:
            if item is Ellipsis:
                letters.append("...")
            elif isinstance(item, numbers.Integral) and not isinstance(item, bool) and 0 <= item < 52:
                letters.append(string.ascii_uppercase[item] if item < 26 else string.ascii_lowercase[item - 26])
            else:
                raise ArgumentError(f"einsum: a subscript list holds integers 0..51 and ..., got {item!r}")
        return "".join(letters)

    output = None
    if len(args) % 2:
        output, args = term(args[-1]), args[:-1]
    operands, terms = list(args[0::2]), [term(s) for s in args[1::2]]
    if len(terms) != len(operands):
        raise ArgumentError("einsum: give a subscript list after each operand")
    return ",".join(terms) + ("" if output is None else "->" + output), operands


def _labels(term, value, ellipsis_rank, operands):
    """One label per axis of ``value``: its letters, and for ``...`` the last of the shared ellipsis labels."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        _fail(f"'{term}' has a '.' that is not one '...'", operands)
    if any(c not in LETTERS for c in term.replace("...", "")):
        _fail(f"subscripts are letters, got '{term}'", operands)
    if "..." not in term:
        if len(term) != value.ndim:
            _fail(f"'{term}' names {len(term)} axes of an operand of shape {format_shape(value.shape)}", operands)
        return list(term)
    before, after = term.split("...")
    extra = value.ndim - len(before) - len(after)
    if extra < 0:
        _fail(f"'{term}' names more axes than the operand of shape {format_shape(value.shape)} has", operands)
    return list(before) + [_ellipsis(i) for i in range(ellipsis_rank - extra, ellipsis_rank)] + list(after)


def _ellipsis(i):
    """The label of the ``i``-th broadcast axis ``...`` stands for (no letter, so it never collides)."""
    return ("...", i)


def parse(subscripts, values):
    """Each operand's labels and the output's, numpy's way (see the module's docstring)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(values):
        _fail(f"'{subscripts}' has {len(terms)} operand subscripts for {len(values)} operands", values)
    ellipsis_rank = max(
        (v.ndim - len(t.replace("...", "")) for t, v in zip(terms, values) if "..." in t),
        default=0,
    )
    labels = [_labels(t, v, max(ellipsis_rank, 0), values) for t, v in zip(terms, values)]
    ellipsis = [_ellipsis(i) for i in range(max(ellipsis_rank, 0))]
    letters = [label for term in labels for label in term if isinstance(label, str)]
    if not arrow:
        return labels, ellipsis + sorted(c for c in set(letters) if letters.count(c) == 1)
    if "..." not in output and any(
        isinstance(label, tuple) and values[n].shape[axis] != 1
        for n, term in enumerate(labels)
        for axis, label in enumerate(term)
    ):
        _fail(f"'{subscripts}': the output needs '...' for the axes '...' stands for in the operands", values)
    rank = len(output.replace("...", "")) + (len(ellipsis) if "..." in output else 0)
    out = _labels(output, _Rank(rank), len(ellipsis), values)
    for label in out:
        if isinstance(label, str) and label not in letters:
            _fail(f"output subscript '{label}' names no operand's axis", values)
        if out.count(label) > 1:
            _fail(f"output subscript '{label}' appears more than once", values)
    return labels, out


class _Rank:
    """A stand-in with only ``ndim``, ``shape``: the output, read with the operands' parser."""

    def __init__(self, ndim):
        self.ndim, self.shape = ndim, (None,) * ndim


def _sizes(values, labels):
    """Each label's length: the operands agree on it, or have 1 (broadcast, as numpy)."""
    sizes = {}
    for value, term in zip(values, labels):
        for label, n in zip(term, value.shape):
            if sizes.get(label, 1) not in (1, n) and n != 1:
                name = "..." if isinstance(label, tuple) else f"'{label}'"
                _fail(f"subscript {name} has lengths {sizes[label]} and {n}", values)
            sizes[label] = n if sizes.get(label, 1) == 1 else sizes[label]
    return sizes


def _prepared(value, term, sizes, needed):
    """An operand with its repeated letters taken as diagonals, its length-1 axes broadcast and the
    letters nobody else needs summed."""
    term = list(term)
    while len(set(term)) < len(term):
        label = next(label for label in term if term.count(label) > 1)
        first = term.index(label)
        second = term.index(label, first + 1)
        if value.shape[first] != value.shape[second]:
            _fail(
                f"the repeated subscript '{label}' takes axes of lengths {value.shape[first]} and "
                f"{value.shape[second]}",
                [value],
            )
        value = diagonal(value, 0, first, second)
        term = [t for axis, t in enumerate(term) if axis not in (first, second)] + [label]
    wanted = tuple(sizes[label] for label in term)
    value = F.broadcast_to(value, wanted) if value.shape != wanted else value
    return _summed(value, term, needed)


def _summed(value, term, needed):
    axes = tuple(axis for axis, label in enumerate(term) if label not in needed)
    if not axes:
        return value, term
    return F.sum(value, axis=axes), [label for label in term if label in needed]


def _contracted(a, a_term, b, b_term, needed, sizes):
    """``a`` and ``b`` contracted over the letters they share that ``needed`` does not hold."""
    batch = [label for label in a_term if label in b_term and label in needed]
    shared = [label for label in a_term if label in b_term and label not in needed]
    a_free = [label for label in a_term if label not in b_term]
    b_free = [label for label in b_term if label not in a_term]
    batch_shape = tuple(sizes[label] for label in batch)
    a_shape, b_shape = tuple(sizes[label] for label in a_free), tuple(sizes[label] for label in b_free)
    a = F.transpose(a, [a_term.index(label) for label in batch + a_free + shared])
    b = F.transpose(b, [b_term.index(label) for label in batch + shared + b_free])
    if shared:
        k = int(np.prod([sizes[label] for label in shared], dtype=np.int64))
        a = F.reshape(a, batch_shape + (int(np.prod(a_shape, dtype=np.int64)), k))
        b = F.reshape(b, batch_shape + (k, int(np.prod(b_shape, dtype=np.int64))))
        product = a.tape.apply("MatMul", [a, b])
    else:
        a = F.reshape(a, batch_shape + a_shape + (1,) * len(b_free))
        b = F.reshape(b, batch_shape + (1,) * len(a_free) + b_shape)
        product = a * b
    return F.reshape(product, batch_shape + a_shape + b_shape), batch + a_free + b_free


#: What ``optimize`` may ask: numpy's and JAX's spellings, each meaning one of topos's two orders.
ORDERS = {False: "left", None: "left", "left": "left", True: "greedy", "greedy": "greedy", "auto": "greedy"}


def _size(labels, sizes):
    return int(np.prod([sizes[label] for label in labels], dtype=np.int64))


def _pair(operands, output, order, sizes):
    """The two operands to contract next: the first two (``"left"``), or the pair whose result
    shrinks the total most (``"greedy"``: opt_einsum's cost, the result's size less the pair's;
    ties to the pair that comes first)."""
    if order == "left":
        return 0, 1
    best = None
    for i in range(len(operands)):
        for j in range(i + 1, len(operands)):
            rest = {label for n, (_, term) in enumerate(operands) if n not in (i, j) for label in term}
            kept = (set(operands[i][1]) | set(operands[j][1])) & (rest | set(output))
            cost = _size(kept, sizes) - _size(operands[i][1], sizes) - _size(operands[j][1], sizes)
            if best is None or cost < best[0]:
                best = (cost, i, j)
    return best[1], best[2]


def einsum(subscripts, *operands, optimize=False):
    """The Einstein sum ``subscripts`` of ``operands``, as ``numpy.einsum`` (see the module's docstring).

    ``einsum("ij,jk->ik", a, b)`` is a matrix product, ``einsum("ii", a)`` a trace,
    ``einsum("bhqd,bhkd->bhqk", q, k)`` attention's scores; numbers and arrays become leaves.
    ``optimize=False`` (numpy's default) contracts the operands pairwise left to right, as
    written; ``True``, ``"greedy"`` or ``"auto"`` (JAX's default) take opt_einsum's greedy
    order instead: each step the pair whose product shrinks the total most. The result is
    the same up to rounding; the readings show the order taken.
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts,) + operands)
    if not operands:
        raise ArgumentError("einsum needs at least one operand")
    if not any(isinstance(operand, Value) for operand in operands):
        raise ArgumentTypeError("einsum: at least one operand must be a recorded value")
    if not isinstance(optimize, (bool, str, type(None))) or optimize not in ORDERS:
        raise ArgumentError(f"einsum: optimize must be False, True, 'greedy' or 'auto', got {optimize!r}")
    tape = arguments.tape_of(*operands)
    dtype = arguments.float_dtype(tape, operands)
    values = [arguments.as_value(tape, operand, dtype) for operand in operands]
    labels, output = parse(subscripts, values)
    sizes = _sizes(values, labels)
    remaining = []
    for n, (value, term) in enumerate(zip(values, labels)):
        others = {label for m, other in enumerate(labels) if m != n for label in other}
        remaining.append(_prepared(value, term, sizes, others | set(output)))
    while len(remaining) > 1:
        i, j = _pair(remaining, output, ORDERS[optimize], sizes)
        (a, a_term), (b, b_term) = remaining[i], remaining[j]
        rest = [item for n, item in enumerate(remaining) if n not in (i, j)]
        later = {label for _, term in rest for label in term} | set(output)
        a, a_term = _summed(a, a_term, later | set(b_term))
        b, b_term = _summed(b, b_term, later | set(a_term))
        # The product takes the first one's place: left to right, it is the next step's left operand.
        rest.insert(i, _contracted(a, a_term, b, b_term, later, sizes))
        remaining = rest
    result, term = _summed(*remaining[0], set(output))
    return F.transpose(result, [term.index(label) for label in output])


einsum = arguments.all_or_nothing(einsum)
