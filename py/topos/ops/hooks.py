"""Where a runtime beside numpy plugs into the numpy forwards; natively every hook is empty.

The ops' numpy forwards are numpy's own. A runtime that computes some of them otherwise on
its platform (the page's in-browser CPU runtime: WebAssembly SIMD kernels, where numpy has no
BLAS and runs its loops one element at a time) fills these hooks when it is installed, and no
op block branches on the platform:

- ``HOOKS.product``: the matrix product the forwards call through ``matmul`` (MatMul, the
  convolutions, ScatterAdd's one-hot product); None: ``np.matmul`` itself;
- ``override(opcode, **rules)``: rules of one registered primitive replaced on its instance
  (``forward``, ``forward_into``, or a table row's ``numpy_function``), the class untouched;
  ``restore`` puts the class's rules back;
- ``HOOKS.steps``: the prepared interpreter's steps (``topos.model.interpreter.prepared``),
  keyed by the callable a node's step would call (a table row's ufunc, or a primitive's
  ``forward_into``): ``steps[callable](operands, index, fallback)`` gives the node's step, which
  calls ``fallback(values)`` where it does not take the values. The interpreter looks a node up
  by what its step calls, never by its opcode.

Natively none of these is filled: ``matmul`` is ``np.matmul``, every primitive keeps its class's
rules, and the interpreter makes the steps it always made, so results are the same bit for bit.
"""

import numpy as np

from .registry import lookup


class Hooks:
    """The hooks a runtime fills (see the module's docstring), and the rules it replaced."""

    __slots__ = ("product", "steps", "overridden")

    def __init__(self):
        self.product = None
        self.steps = {}
        self.overridden = set()  # (opcode, rule name) pairs set on a primitive's instance


HOOKS = Hooks()


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)``, through the runtime's product where one is installed."""
    product = HOOKS.product
    if product is None:
        return np.matmul(a, b, out=out)
    return product(a, b, out)


def override(opcode, **rules):
    """Replace rules of the primitive registered as ``opcode`` on its instance (``forward=...``)."""
    primitive = lookup(opcode)
    for name, rule in rules.items():
        setattr(primitive, name, rule)
        HOOKS.overridden.add((opcode, name))


def restore():
    """Every primitive's own rules again, no product, no steps: numpy's forwards as natively."""
    for opcode, name in HOOKS.overridden:
        primitive = lookup(opcode)
        if name in vars(primitive):
            delattr(primitive, name)
    HOOKS.overridden.clear()
    HOOKS.product = None
    HOOKS.steps.clear()
