"""Which numpy forwards the in-page runtime takes over, filled into ``topos.ops.hooks`` by ``install``.

numpy in Pyodide has no BLAS and runs its loops as scalar WebAssembly; the ops' forwards stay
numpy's own, and ``install`` puts this runtime's in their place (each falls back to the op's
own forward where its kernel does not take the operands):

- the matrix product (``blas.matmul_into``: MatMul, the convolutions, ScatterAdd's one-hot product);
- Exp and Tanh (``kernels.exp``, ``kernels.tanh``: the SIMD kernels from 1024 and 512 elements);
- Gelu and GeluGrad through one exp instead of tanh (``kernels.gelu_into``, ``gelu_grad_into``);
- SoftmaxGrad, LogSoftmaxGrad and LayerNormGrad (row_derivatives.py);
- Sum where it is a product with ones (``sum_into``: the SIMD row and column sums), and Max over
  the last axis (``kernels.max_last``);
- Where's forward, and the interpreter's steps for Add, Sub, Mul, Div and Where (binary.py).

``install`` runs in Pyodide only (``topos.pyodide.load_kernels``); the native tests call it to
check the routing with fake kernels, and ``topos.ops.hooks.restore`` undoes it.
"""

import numpy as np

from ..ops import hooks, lookup
from ..ops.reduce import product_for
from . import binary, blas, kernels, row_derivatives

_FLOAT32 = np.dtype(np.float32)
_NO = object()
_MATRICES = {}
_MATRICES_KEPT = 256


def install():
    """Fill ``topos.ops.hooks`` with this runtime's forwards (see the module's docstring); again, the same."""
    hooks.restore()
    hooks.HOOKS.product = blas.matmul_into
    hooks.override("Exp", numpy_function=kernels.exp)
    hooks.override("Tanh", numpy_function=kernels.tanh)
    hooks.override("Gelu", forward_into=lambda inputs, attrs, out: kernels.gelu_into(inputs[0], out))
    hooks.override("GeluGrad", forward_into=lambda inputs, attrs, out: kernels.gelu_grad_into(*inputs, out))
    hooks.override("SoftmaxGrad", forward_into=lambda inputs, attrs, out: row_derivatives.softmax_grad(*inputs, out))
    hooks.override(
        "LogSoftmaxGrad", forward_into=lambda inputs, attrs, out: row_derivatives.log_softmax_grad(*inputs, out)
    )
    hooks.override(
        "LayerNormGrad", forward_into=lambda inputs, attrs, out: row_derivatives.layer_norm_grad(*inputs, out)
    )
    hooks.override("Sum", forward_into=_sum_forward_into(lookup("Sum")))
    hooks.override("Max", forward=_max_forward(lookup("Max")))
    where_forward_into = _where_forward_into(lookup("Where"))
    hooks.override("Where", forward_into=where_forward_into)
    hooks.HOOKS.steps[where_forward_into] = lambda operands, index, fallback: binary.where_step(
        *operands, index, fallback
    )
    for ufunc in binary.UFUNCS:
        hooks.HOOKS.steps[ufunc] = _ufunc_step(ufunc)


def _ufunc_step(ufunc):
    def make(operands, index, fallback):
        return binary.ufunc_step(ufunc, *operands, index, fallback) if len(operands) == 2 else fallback

    return make


def _where_forward_into(where):
    native = type(where).forward_into

    def forward_into(inputs, attrs, out):
        c, a, b = inputs
        if binary.where_into(c, a, b, out):
            return out  # float32: the SIMD kernel
        return native(where, inputs, attrs, out)

    return forward_into


def _max_forward(maximum):
    native = type(maximum).forward

    def forward(inputs, attrs):
        x = inputs[0]
        if x.ndim and attrs["axes"] == (x.ndim - 1,):
            result = kernels.max_last(x, attrs["keepdims"])  # float32: the SIMD maxima (wasm_sum.py)
            if result is not None:
                return result
        return native(maximum, inputs, attrs)

    return forward


def _sum_forward_into(total):
    native = type(total).forward_into

    def forward_into(inputs, attrs, out):
        if sum_into(inputs[0], attrs["axes"], out):
            return out  # float32: the SIMD sums (wasm_sum.py)
        return native(total, inputs, attrs, out)

    return forward_into


def sum_into(x, axes, out):
    """Whether the SIMD sums (``kernels.sum_matrix``) wrote ``Sum`` of ``x`` over ``axes`` into
    ``out``: float32 ndarrays, both C-contiguous, where the sum is a ones product (``ones_product``).

    The decision and the matrix's shape are remembered by the shapes, strides and axes (a training
    step sums the same layouts every run): no ``flags`` object nor reshaped view a call, a few us
    each in Pyodide, where ``Sum`` runs 30-odd times a step."""
    if type(x) is not np.ndarray or x.dtype is not _FLOAT32 or out.dtype is not _FLOAT32:
        return False
    key = (x.shape, x.strides, axes, out.strides)
    found = _MATRICES.get(key, _NO)
    if found is _NO:
        product = product_for(x.shape, axes, x.dtype) if x.flags.c_contiguous and out.flags.c_contiguous else None
        if product is not None:
            terms, along_rows, _ = product
            found = ((x.size // terms, terms) if along_rows else (terms, x.size // terms), along_rows)
        else:
            found = None
        if len(_MATRICES) >= _MATRICES_KEPT:
            _MATRICES.clear()
        _MATRICES[key] = found
    return found is not None and kernels.sum_matrix(x, out, *found)
