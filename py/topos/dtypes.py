"""The dtypes topos records, and the one check that names them.

Below the ops and ``Tensor`` alike: an op's shape rule and a caller's array are
checked against the same names.
"""

import numpy as np

from .errors import DtypeError

FLOAT_DTYPES = ("float32", "float64")
INDEX_DTYPES = ("int32",)
#: Unsigned 32-bit words: random keys and the bits a counter-based generator makes (``topos.ops.random``).
#: A uint32 value is data, not a number to differentiate; WGSL computes it as ``u32``.
BITS_DTYPES = ("uint32",)
INTEGER_DTYPES = INDEX_DTYPES + BITS_DTYPES
DTYPES = FLOAT_DTYPES + INDEX_DTYPES + BITS_DTYPES
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UINT32_MAX = 2**32 - 1


def canonical_dtype(dtype, supported=DTYPES):
    """Return the dtype's name if it is one of ``supported``, else raise ``DtypeError`` listing them."""
    try:
        name = np.dtype(dtype).name
    except (TypeError, ValueError):
        raise DtypeError(f"unknown dtype {dtype!r}: topos records {', '.join(supported)}") from None
    if name not in supported:
        raise DtypeError(f"unsupported dtype {name!r}: topos records {', '.join(supported)}")
    return name
