"""The derivatives of the running folds (``CumProd``, ``CumMax``, ``CumMin``, ``LogCumSumExp``), in JAX's form.

JAX differentiates ``lax.cumprod``, ``cummax``, ``cummin`` and ``cumlogsumexp`` by
running its ``associative_scan`` of the fold again under ``jvp`` (``_cumulative_jvp_rule``
in ``jax/_src/lax/control_flow/loops.py``): the scan is made of slices, pads,
concatenations and the fold itself, each of which has an exact derivative, so the
result is right at zeros (a product's cotangent goes to the product of the others),
at ties (``Maximum`` splits evenly, as ``lax.max``'s ``_balanced_eq``) and to every
order. A reverse-mode rule here does the same: ``scan_vjp`` records the scan through
the rule's emitter, noting each op it applies (``Traced``), then walks those ops
backwards, applying each primitive's own rule. The backward is O(n) work in about
2 log2(n) levels, and every reading shows it.
"""

from .emitter import Emitter
from .registry import lookup


def associative_scan(e, combine, x, axis, reverse=False):
    """The running fold of ``x`` along ``axis`` by the associative ``combine(e, a, b)``, written as
    ``jax.lax.associative_scan`` writes it: combine adjacent pairs, scan those, then fill in the rest."""
    if reverse:
        flipped = e.apply("Reverse", [x], axes=(axis,))
        return e.apply("Reverse", [associative_scan(e, combine, flipped, axis)], axes=(axis,))
    n = e.shape(x)[axis]
    if n < 2:
        return x
    odd = associative_scan(e, combine, combine(e, _cut(e, x, axis, 0, n - 1, 2), _cut(e, x, axis, 1, n, 2)), axis)
    first = _cut(e, x, axis, 0, 1, 1)
    if n == 2:
        # Nothing past the first pair: JAX's empty combine and concatenation, which XLA drops, left out.
        return _interleave(e, first, odd, axis)
    if n % 2 == 0:
        even = combine(e, _cut(e, odd, axis, 0, e.shape(odd)[axis] - 1, 1), _cut(e, x, axis, 2, n, 2))
    else:
        even = combine(e, odd, _cut(e, x, axis, 2, n, 2))
    return _interleave(e, e.apply("Concatenate", [first, even], axis=axis), odd, axis)


def _cut(e, x, axis, start, stop, step):
    """``x[start:stop:step]`` along ``axis`` (a ``Slice``)."""
    shape = e.shape(x)
    starts = tuple(start if a == axis else 0 for a in range(len(shape)))
    stops = tuple(stop if a == axis else extent for a, extent in enumerate(shape))
    steps = tuple(step if a == axis else 1 for a in range(len(shape)))
    return e.slice(x, starts, stops, steps)


def _interleave(e, even, odd, axis):
    """even[0], odd[0], even[1], odd[1], ...: each padded with zeros between its elements, then added."""
    rank = len(e.shape(even))
    same = e.shape(even)[axis] == e.shape(odd)[axis]

    def padding(low, high):
        lows = tuple(low if a == axis else 0 for a in range(rank))
        highs = tuple(high if a == axis else 0 for a in range(rank))
        return lows, highs, tuple(1 if a == axis else 0 for a in range(rank))

    return e.add(e.pad(even, *padding(0, 1 if same else 0)), e.pad(odd, *padding(1, 0 if same else 1)))


class Traced:
    """An emitter that applies through ``inner`` and notes each op it applies, for ``scan_vjp``."""

    def __init__(self, inner):
        self.inner = inner
        self.steps = []

    def __getattr__(self, name):
        # The named helpers (add, slice, pad...) of the Emitter base, bound to this emitter.
        return getattr(Emitter, name).__get__(self)

    def apply(self, opcode, operands, **attrs):
        out = self.inner.apply(opcode, operands, **attrs)
        self.steps.append((opcode, list(operands), attrs, out))
        return out

    def shape(self, handle):
        return self.inner.shape(handle)

    def like(self, handle, value):
        return self.inner.like(handle, value)


def scan_vjp(e, combine, x, g, axis, reverse):
    """The cotangent of ``x`` for the running fold ``combine`` given the result's cotangent ``g``."""
    traced = Traced(e)
    y = associative_scan(traced, combine, x, axis, reverse)
    # Handles are compared by identity: the steps keep every one alive, so no id is reused.
    depends = {id(x)}
    for _, operands, _, out in traced.steps:
        if any(id(o) in depends for o in operands):
            depends.add(id(out))
    cotangents = {id(y): g}
    saved = e.wanted
    try:
        for opcode, operands, attrs, out in reversed(traced.steps):
            ct = cotangents.pop(id(out), None)
            primitive = lookup(opcode)
            if ct is None or not primitive.differentiable:
                continue
            e.wanted = [id(o) in depends for o in operands]
            if not any(e.wanted):
                continue
            grads = primitive.vjp(e, ct, operands, out, attrs)
            for operand, grad, want in zip(operands, grads, e.wanted):
                if grad is not None and want:
                    previous = cotangents.get(id(operand))
                    cotangents[id(operand)] = grad if previous is None else e.add(previous, grad)
    finally:
        e.wanted = saved
    return cotangents[id(x)]
