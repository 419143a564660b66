"""Cases for the row derivatives' forwards in Pyodide (topos/pyodide/row_derivatives.py): natively without
kernels or with fakes (tests/python/test_blas.py), in Pyodide with the real ones (tests/pyodide/blas.mjs).

Each forward against its formula in float64, within a bound of ``ROW_TOLERANCE`` n eps times the
magnitudes of the formula's terms (n elements a row: the row sums round in another order than
numpy's, the binary ops are one IEEE operation an element); shape and dtype numpy's; the kernels
called (``calls()`` counts them) exactly where the case says.
"""

import numpy as np

ROW_TOLERANCE = 4


def _rows(shape, dtype, seed, layout="contiguous"):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    if layout == "transposed":  # the same shape, not C-contiguous
        g, x = (
            np.ascontiguousarray(g.swapaxes(-1, -2)).swapaxes(-1, -2),
            np.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2),
        )
    return g, x


def row_cases():
    """(label, shape, dtype, layout, kernel expected: True, False, or None for either)."""
    return [
        ("a layer norm's rows", (256, 32), np.float32, "contiguous", True),
        ("attention's rows", (16, 4, 16, 16), np.float32, "contiguous", True),
        ("the logits' rows", (16, 16, 40), np.float32, "contiguous", True),
        ("odd rows of 33", (9, 33), np.float32, "contiguous", True),
        ("one row of 3", (1, 3), np.float32, "contiguous", None),  # the binary ops numpy's (MIN_ELEMENTS), the sums either
        ("rank 1", (200,), np.float32, "contiguous", True),
        ("transposed operands", (64, 32), np.float32, "transposed", None),  # numpy's, but what reads out
        ("float64", (64, 32), np.float64, "contiguous", False),
    ]  # fmt: skip


def _formulas(g, x):
    """Each forward's inputs (float64 kept aside) and its result and term magnitudes in float64."""
    g64, x64 = g.astype(np.float64), x.astype(np.float64)
    n = x.shape[-1]
    # SoftmaxGrad: y = softmax(x); y (g - sum(g y))
    y64 = np.exp(x64 - x64.max(-1, keepdims=True))
    y64 /= y64.sum(-1, keepdims=True)
    y = y64.astype(x.dtype)
    y64 = y.astype(np.float64)
    s = (g64 * y64).sum(-1, keepdims=True)
    softmax = (y64 * (g64 - s), np.abs(y64) * (np.abs(g64) + (np.abs(g64 * y64)).sum(-1, keepdims=True)))
    # LogSoftmaxGrad: l = log_softmax(x); g - exp(l) sum(g)
    l64 = x64 - x64.max(-1, keepdims=True)
    l64 -= np.log(np.exp(l64).sum(-1, keepdims=True))
    lsm = l64.astype(x.dtype)
    p = np.exp(lsm.astype(np.float64))
    log_softmax = (g64 - p * g64.sum(-1, keepdims=True), np.abs(g64) + p * np.abs(g64).sum(-1, keepdims=True))
    # LayerNormGrad: n = (x - mean) r; r (g - mean(g) - n mean(g n))
    centred = x64 - x64.mean(-1, keepdims=True)
    r64 = 1 / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-5)
    normed, r = (centred * r64).astype(x.dtype), r64.astype(x.dtype)
    n64, r64 = normed.astype(np.float64), r.astype(np.float64)
    mean_g, mean_gn = g64.mean(-1, keepdims=True), (g64 * n64).mean(-1, keepdims=True)
    layer_norm = (
        r64 * (g64 - mean_g - n64 * mean_gn),
        np.abs(r64) * (np.abs(g64) + np.abs(g64).mean(-1, keepdims=True) + np.abs(n64) * np.abs(g64 * n64).mean(-1, keepdims=True)),
    )  # fmt: skip
    del n
    return [
        ("SoftmaxGrad", "softmax_grad", (g, y), softmax),
        ("LogSoftmaxGrad", "log_softmax_grad", (g, lsm), log_softmax),
        ("LayerNormGrad", "layer_norm_grad", (g, normed, r), layer_norm),
    ]


def check_rows(row_derivatives, calls, kernels=True):
    """``row_derivatives``' three forwards over ``row_cases`` (see the module's docstring); ``calls()``
    counts the kernels' calls (none at all without ``kernels``). The failures, as text."""
    failures = []
    for label, shape, dtype, layout, kernel in row_cases():
        g, x = _rows(shape, dtype, len(label), layout)
        kernel = kernel if kernels else False
        eps = float(np.finfo(dtype).eps)
        for name, function, inputs, (want, magnitude) in _formulas(g, x):
            out = np.empty(shape, dtype)
            before = calls()
            got = getattr(row_derivatives, function)(*inputs, out)
            case = f"{name} {label}"
            if got is not out or got.dtype != dtype:
                failures.append(f"{case}: not written into out as {np.dtype(dtype)}")
                continue
            if kernel is not None and (calls() > before) != kernel:
                failures.append(f"{case}: {calls() - before} kernel calls")
            bound = ROW_TOLERANCE * shape[-1] * eps * (magnitude + np.finfo(dtype).tiny)
            error = np.abs(got.astype(np.float64) - want)
            if not np.all(error <= bound):
                failures.append(f"{case}: off by up to {float(np.max(error / bound)):.3g} of the bound")
    return failures
