"""The page's float32 SIMD kernels other than the products, and GELU through one ``np.exp``.

``KERNELS`` holds the WebAssembly SIMD kernels the page installed (GELU and its derivative,
exp, tanh, the row and column sums and maxima, the binary ops; ``topos.pyodide.installKERNELS``),
by their export names less "_f32"; each takes the address of its pointer-sized arguments.

GELU and its derivative for numpy in Pyodide, where ``np.tanh`` is slow, go through one ``np.exp``.

numpy in Pyodide runs ``np.tanh`` at about 41 ns an element (natively 0.33) and ``np.exp`` at
about 15 (natively 0.48), so the tanh form of GELU spends most of its time in tanh. With
t = tanh(u) = 2 s - 1, s = sigmoid(2u) = 1 / (1 + exp(-2u)), u = c (x + k x^3):

    gelu(x)  = 0.5 x (1 + t)                          = x / (1 + exp(-2u))
    gelu'(x) = 0.5 (1 + t) (1 + x (1 - t) (c + 3ck x^2)) = s (1 + x (1 - s) (2c + 6ck x^2))

One exp and no tanh; fewer passes (six for GELU, fourteen for its gradient) over float32
kept float32. Where the page installed them (``install``), float32 goes through the
WebAssembly SIMD forms of the same formulas instead (wasm_gelu.py): one pass each. ``Gelu`` and
``GeluGrad`` use these where the runtime is installed (routing.py): natively their results are
unchanged, bit for bit.
The rounding differs from the tanh form's: within ``GELU_TOLERANCE`` eps of the dtype times
(1 + |x|) for GELU and (1 + |x|) |g| for the gradient, against the tanh form in float64
(tests/python/test_blas.py checks both dtypes, natively and in Pyodide). Overflow goes where
the tanh form's does: exp(-2u) = inf gives gelu -0.0 and gelu' 0 for very negative x.
"""

import math
import struct
import weakref

import numpy as np

from . import wasm_heap

GELU_C = math.sqrt(2.0 / math.pi)
GELU_K = 0.044715
# The documented bound, in units of the dtype's eps (see the module's docstring).
GELU_TOLERANCE = 16

# The SIMD exp's documented bound (wasm_exp.py): |exp_f32(x) - exp(x)| <= EXP_TOLERANCE[0] eps |exp(x)|
# + EXP_TOLERANCE[1], exp(x) in float64, eps float32's (and the smallest denormal absolutely).
EXP_TOLERANCE = (2, 2.0**-149)
# The SIMD tanh's (wasm_exp.py), alike: |tanh_f32(x) - tanh(x)| <= TANH_TOLERANCE[0] eps |tanh(x)| + TANH_TOLERANCE[1].
TANH_TOLERANCE = (3, 2.0**-149)
# The SIMD sums' bound (wasm_sum.py), n terms a sum: |sum_f32(x) - sum(x)| <= SUM_TOLERANCE n eps sum |x|,
# sum(x) in float64, eps float32's (a sum in any order of n float32 additions: (n - 1) u sum |x| to first order).
SUM_TOLERANCE = 1
# The fewest elements a kernel takes: below, numpy's own loop costs less than the call from Python
# (about 8 us in Pyodide 0.27.7 under Node; np.exp 7-15 ns an element, np.tanh 18-41, the kernels 1-2).
KERNEL_MIN = {"exp": 1024, "tanh": 512}

# The WebAssembly SIMD forms of both (wasm_gelu.py, float32), where the page installed them.
KERNELS = {}
_ARGUMENTS = np.zeros(4, np.intp)
_ARGUMENTS_ADDRESS = _ARGUMENTS.__array_interface__["data"][0]
# The arguments are written through this (``_PACK.pack_into(_SLOTS, 0, ...)``): one C call, about
# 0.4 us in Pyodide, where ``_ARGUMENTS[:] = (...)`` converts a tuple through numpy (3-4 us).
_SLOTS = memoryview(_ARGUMENTS)
_PACK = struct.Struct("4n")  # ssize_t: intp's size
_WRAP = 1 << (8 * _ARGUMENTS.itemsize - 1)


def install(kernels):
    """Use the SIMD kernels for float32: ``kernels`` maps names ("gelu", "exp", "colsum", "add",
    ...: the module's exports less "_f32") to callables taking the address of their arguments."""
    KERNELS.update({name: kernel for name, kernel in kernels.items() if kernel is not None})


def warm_up(calls=16):
    """Run the sum and maximum kernels ``calls`` times over a [256, 256] matrix of zeros (about a ms).

    V8 first runs WebAssembly through its baseline compiler and optimizes a function once it has
    run enough; the training step calls these kernels a few dozen times on small matrices, so
    without this they would stay unoptimized (the column sums 2.4 times slower, measured) for the first hundreds of
    steps. ``blas.installKERNELS`` calls it once."""
    x = np.zeros((256, 256), np.float32)
    out = np.empty(256, np.float32)
    for name in ("colsum", "rowsum", "rowmax"):
        if name in KERNELS:
            _PACK.pack_into(_SLOTS, 0, address(x), address(out), 256, 256)
            for _ in range(calls):
                KERNELS[name](_ARGUMENTS_ADDRESS)


def uninstall():
    KERNELS.clear()


def _through_kernel(name, g, x, out):
    """The kernel over the whole multiple-of-4 part of contiguous float32 arrays; the count done."""
    count = x.size - x.size % 4
    if count:
        _PACK.pack_into(_SLOTS, 0, address(x), address(g), address(out), count)
        KERNELS[name](_ARGUMENTS_ADDRESS)
    return count


def call(name, *arguments):
    """Kernel ``name`` over its four pointer-sized arguments (addresses as ``address`` gives them)."""
    _PACK.pack_into(_SLOTS, 0, *arguments)
    KERNELS[name](_ARGUMENTS_ADDRESS)


def address(array):
    """``array``'s data address as the kernels' signed argument."""
    address = wasm_heap.address(array)  # in Pyodide, read from the array's struct (wasm_heap.py)
    return _wrapped(array.__array_interface__["data"][0] if address is None else address)


def _wrapped(address):
    """An address as the kernels' signed pointer-sized argument (in wasm32, past 2 GiB wraps as i32 does)."""
    return address - 2 * _WRAP if address >= _WRAP else address


def _kernel_fits(out, *arrays):
    return bool(KERNELS) and all(a.dtype == np.float32 and a.flags.c_contiguous for a in (out, *arrays))


def exp(x, out=None):
    """``np.exp(x, out=out)``; contiguous float32 through the SIMD kernel where installed (wasm_exp.py).

    The Exp row's forward in Pyodide (routing.py). Within ``EXP_TOLERANCE`` of exp in
    float64 and raising no floating-point warning; anything else (other dtypes, strided or
    broadcast operands, fewer than ``KERNEL_MIN["exp"]`` elements, no kernel) is ``np.exp`` itself.
    """
    return _unary("exp", np.exp, x, out)


def tanh(x, out=None):
    """``np.tanh(x, out=out)``, as ``exp`` is ``np.exp``: the Tanh row's forward in Pyodide, within ``TANH_TOLERANCE``."""
    return _unary("tanh", np.tanh, x, out)


def _unary(name, ufunc, x, out):
    if (
        name in KERNELS
        and type(x) is np.ndarray
        and x.dtype == np.float32
        and x.size >= KERNEL_MIN[name]
        and x.flags.c_contiguous
    ):
        if out is None:
            out = np.empty(x.shape, np.float32)
        if out.dtype == np.float32 and out.shape == x.shape and out.flags.c_contiguous:
            done = _through_kernel(name, x, x, out)
            if done < x.size:
                ufunc(x.reshape(-1)[done:], out=out.reshape(-1)[done:])
            return out
    return ufunc(x) if out is None else ufunc(x, out=out)


def sum_matrix(x, out, shape, along_rows):
    """Whether the SIMD sums wrote the row sums (``along_rows``) or column sums of ``x`` seen as a
    matrix of ``shape`` into ``out``.

    ``Sum``'s forward in Pyodide (routing.py) calls this where it would multiply that matrix by
    a vector of ones, ``x`` and ``out`` C-contiguous and ``out`` of the sums' count; it does where
    this returns False. Float32 only, within ``SUM_TOLERANCE``.
    """
    kernel = KERNELS.get("rowsum" if along_rows else "colsum")
    if kernel is None or x.dtype is not _FLOAT32 or out.dtype is not _FLOAT32:
        return False
    rows, columns = shape
    _PACK.pack_into(_SLOTS, 0, kept_address(x), kept_address(out), rows, columns)
    kernel(_ARGUMENTS_ADDRESS)
    return True


def max_last(x, keepdims):
    """The largest element of each row of ``x``'s last axis through the SIMD kernel (wasm_sum.py),
    ``x`` float32, C-contiguous and not empty; None (the caller's numpy) otherwise.

    ``Max``'s forward in Pyodide (routing.py) over the last axis: exact, NaN where numpy has it.
    """
    kernel = KERNELS.get("rowmax")
    if kernel is None or type(x) is not np.ndarray or x.dtype is not _FLOAT32 or not x.size or not x.flags.c_contiguous:
        return None
    shape = x.shape[:-1] + ((1,) if keepdims else ())
    out = np.empty(shape, np.float32)
    _PACK.pack_into(_SLOTS, 0, kept_address(x), address(out), x.size // x.shape[-1], x.shape[-1])
    kernel(_ARGUMENTS_ADDRESS)
    return out


_FLOAT32 = np.dtype(np.float32)
# Data addresses by id, each entry with a weak reference to its array (an id is only the same
# array while that array lives; a dead entry's reference answers None): ``__array_interface__``
# builds a dict, about 2 us in Pyodide, and most operands the kernels are passed (here and in
# blas.py) are the interpreter's kept buffers, step after step. The references are weak so
# that the table keeps nothing alive: a kept block or a donated optimizer state is reused only
# once nothing else refers to it. An ndarray's data never moves.
_ADDRESSES = {}
_ADDRESSES_KEPT = 256


def remembered_address(array):
    """``array``'s data address (as ``__array_interface__`` gives it), remembered by id (see above);
    in Pyodide read from the array's struct (wasm_heap.py) where that works, fresh views too."""
    address = wasm_heap.address(array)
    if address is not None:
        return address
    entry = _ADDRESSES.get(id(array))
    if entry is not None and entry[0]() is array:
        return entry[1]
    address = array.__array_interface__["data"][0]
    if len(_ADDRESSES) >= _ADDRESSES_KEPT:
        _ADDRESSES.clear()
    _ADDRESSES[id(array)] = (weakref.ref(array), address)
    return address


def kept_address(array):
    """``address`` through the remembered addresses."""
    address = wasm_heap.address(array)  # the common case first: one call fewer (a hot path)
    if address is None:
        address = remembered_address(array)
    return address - 2 * _WRAP if address >= _WRAP else address


def _sigmoid_2u(x, x2, scratch):
    """s = 1 / (1 + exp(-2c (x + k x^3))) into ``scratch``, from x and x^2."""
    number = x.dtype.type
    np.multiply(x2, number(-2.0 * GELU_C * GELU_K), out=scratch)
    scratch += number(-2.0 * GELU_C)
    scratch *= x  # -2u
    with np.errstate(over="ignore"):  # exp(-2u) = inf for very negative x: the result is then 0, as tanh's
        np.exp(scratch, out=scratch)
    scratch += number(1.0)
    return scratch


def gelu_into(x, out):
    """gelu(x) = x / (1 + exp(-2u)) into ``out`` (x's shape and dtype)."""
    if _kernel_fits(out, x):
        done = _through_kernel("gelu", x, x, out)
        if done < x.size:
            _gelu_numpy(x.reshape(-1)[done:], out.reshape(-1)[done:])
        return out
    return _gelu_numpy(x, out)


def _gelu_numpy(x, out):
    scratch = np.multiply(x, x, out=np.empty(x.shape, x.dtype))
    _sigmoid_2u(x, scratch, scratch)  # 1 + exp(-2u), in place over x^2
    return np.divide(x, scratch, out=out)


def gelu_grad_into(g, x, out):
    """g * gelu'(x) = g s (1 + x (1 - s) (2c + 6ck x^2)) into ``out``."""
    if g.shape == x.shape and _kernel_fits(out, g, x):
        done = _through_kernel("gelu_grad", g, x, out)
        if done < x.size:
            _gelu_grad_numpy(g.reshape(-1)[done:], x.reshape(-1)[done:], out.reshape(-1)[done:])
        return out
    return _gelu_grad_numpy(g, x, out)


def _gelu_grad_numpy(g, x, out):
    number = x.dtype.type
    x2 = np.multiply(x, x, out=out)
    s = _sigmoid_2u(x, x2, np.empty(x.shape, x.dtype))
    np.reciprocal(s, out=s)
    slope = x2  # 2c + 6ck x^2, in place over x^2 (in out)
    slope *= number(6.0 * GELU_C * GELU_K)
    slope += number(2.0 * GELU_C)
    slope *= x
    # (1 - s) without a third array: slope - slope * s.
    slope -= np.multiply(slope, s, out=np.empty(x.shape, x.dtype))
    slope += number(1.0)
    slope *= s
    slope *= g
    return slope
