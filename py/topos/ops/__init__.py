"""Every primitive topos records, one class per opcode (see ``registry``)."""

from . import (  # noqa: F401  (registers the primitives)
    activations,
    branches,
    convolution,
    cumulative,
    custom,
    elementwise,
    elementwise_more,
    fft,
    index,
    linalg,
    linalg_factor,
    linalg_spectral,
    loops,
    random,
    reduce,
    remainder,
    rows,
    scans,
    shape,
    sort,
    sources,
    special,
    whiles,
    windows,
)
from .registry import Meta, Primitive, lookup, missing_rules, primitives, register, unregister

__all__ = ["Meta", "Primitive", "lookup", "missing_rules", "primitives", "register", "unregister"]
