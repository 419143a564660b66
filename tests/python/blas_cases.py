"""The exact-shape cases for ``topos.pyodide.blas``: every routing decision against ``np.matmul``.

Shared by tests/python/test_blas.py (natively, with scipy's ``_fblas`` over the native
OpenBLAS installed, and with a recording fake) and tests/pyodide/blas.mjs (in Pyodide 0.27.7
under Node, with the OpenBLAS and ``_fblas`` the playground serves). Only numpy is imported
here, so the file runs in both.

Each case builds its operands (and, for some, the output buffer ``out`` the interpreter would
pass) from a seeded generator, names the route ``topos.pyodide.blas.route`` must take, and is
checked against ``np.matmul`` of the same operands to the documented tolerance: elementwise
``|blas - numpy| <= k * eps * (|a| @ |b|)`` plus the dtype's smallest normal, k the
contracting length (two summation orders of k terms differ by at most that much).
"""

import numpy as np


def _rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _transposed(rng, shape, dtype):
    """A Fortran-ordered view: the transpose of a C-ordered array."""
    return _rand(rng, shape[::-1], dtype).T


def _strided(rng, shape, dtype):
    """Neither C- nor Fortran-ordered: every other column of a wider array."""
    return _rand(rng, shape[:-1] + (2 * shape[-1],), dtype)[..., ::2]


def _broadcast(rng, shape, dtype, batch):
    """One matrix broadcast over batch axes (zero strides), as topos.matmul records ``x @ w``."""
    return np.broadcast_to(_rand(rng, shape, dtype), batch + shape)


# The route a case takes when a SIMD kernel for its dtype is installed, "numpy" otherwise.
SIMD_OR_NUMPY = "blas-batched with a SIMD kernel"


def cases(seed=22):
    """``(name, a, b, out or None, route)`` for every decision, float32 and float64 (``seed``:
    the values; every seed gives the same layouts)."""
    rng = np.random.default_rng(seed)
    found = []
    for dtype in (np.float32, np.float64):
        tag = np.dtype(dtype).name

        def add(name, a, b, route, out=None, tag=tag):
            found.append((f"{name} {tag}", a, b, out, route))

        r = lambda shape, dtype=dtype: _rand(rng, shape, dtype)  # noqa: E731
        add("2-D square 64", r((64, 64)), r((64, 64)), "blas-2d")
        add("2-D transformer 256x32x96", r((256, 32)), r((32, 96)), "blas-2d")
        add("2-D odd 67x31x53", r((67, 31)), r((31, 53)), "blas-2d")
        add("2-D a transposed", _transposed(rng, (256, 32), dtype), r((32, 40)), "blas-2d")
        add("2-D b transposed", r((256, 32)), _transposed(rng, (32, 128), dtype), "blas-2d")
        add("2-D both transposed", _transposed(rng, (40, 256), dtype), _transposed(rng, (256, 33), dtype), "blas-2d")
        add("2-D a strided", _strided(rng, (96, 48), dtype), r((48, 20)), "blas-2d")
        add("2-D b strided", r((50, 48)), _strided(rng, (48, 70), dtype), "blas-2d")
        add("2-D one row", r((1, 2048)), r((2048, 64)), "blas-2d")
        add("2-D three rows, seven columns", r((3, 4096)), r((4096, 7)), "blas-2d")
        add("2-D a flipped (negative strides)", r((64, 48))[::-1, ::-1], r((48, 40)), "blas-2d")
        add("2-D b flipped (negative strides)", r((64, 48)), r((48, 40))[::-1, ::-1], "blas-2d")
        add("2-D vocab 65 (a column past the tiles)", r((256, 32)), r((32, 65)), "blas-2d")
        add("2-D one column", r((2048, 64)), r((64, 1)), "blas-2d")
        add("2-D contracting 1", r((512, 1)), r((1, 256)), "blas-2d")
        add("2-D into out", r((70, 33)), r((33, 90)), "blas-2d", out=np.full((70, 90), np.nan, dtype))
        add("2-D into strided out", r((64, 32)), r((32, 64)), "blas-2d", out=np.zeros((64, 128), dtype)[:, ::2])
        add("2-D into Fortran out", r((64, 32)), r((32, 48)), "blas-2d", out=np.zeros((48, 64), dtype).T)
        add("2-D tiny 3x5x7", r((3, 5)), r((5, 7)), "numpy")
        add("2-D 1x1x1", r((1, 1)), r((1, 1)), "numpy")
        add("2-D empty m", r((0, 8)), r((8, 9)), "numpy")
        add("2-D empty k", r((12, 0)), r((0, 9)), "numpy")
        add("2-D empty n", r((12, 8)), r((8, 0)), "numpy")
        batch = (4, 8)
        add("folded x @ w", r(batch + (16, 64)), _broadcast(rng, (64, 48), dtype, batch), "blas-folded")
        add(
            "folded into out",
            r((3, 40, 32)),
            _broadcast(rng, (32, 24), dtype, (3,)),
            "blas-folded",
            out=np.full((3, 40, 24), np.nan, dtype),
        )
        add(
            "folded into strided out",
            r((3, 40, 32)),
            _broadcast(rng, (32, 24), dtype, (3,)),
            "blas-folded",
            out=np.zeros((3, 40, 48), dtype)[..., ::2],
        )
        add("folded tiny", r((2, 2, 3)), _broadcast(rng, (3, 4), dtype, (2,)), "numpy")
        # a's rows do not collapse (a transposed batch): large matrices go one call each.
        add("batched large", r((3, 64, 96)), r((3, 96, 80)), "blas-batched")
        add("batched transposed views", _transposed(rng, (3, 64, 70), dtype), r((3, 70, 64)), "blas-batched")
        add(
            "batched into out",
            r((2, 2, 48, 40)),
            r((2, 2, 40, 40)),
            "blas-batched",
            out=np.empty((2, 2, 48, 40), dtype),
        )
        # Small matrices in a batch: one call of a SIMD kernel takes the whole batch (where the
        # tiles fit and there are at most two batch axes); otherwise they stay in numpy.
        add("batched attention 16x4x16x16", r((16, 4, 16, 16)), r((16, 4, 16, 8)), SIMD_OR_NUMPY)
        qkv = r((16, 16, 3 * 4 * 8)).reshape(16, 16, 3, 4, 8)  # a fused q, k, v projection's heads
        q = qkv[:, :, 0].transpose(0, 2, 1, 3)  # [16, 4, 16, 8], batch strides not collapsing
        k_t = qkv[:, :, 1].transpose(0, 2, 3, 1)  # [16, 4, 8, 16], its rows not contiguous
        add("batched attention scores q @ k^T (strided views)", q, k_t, SIMD_OR_NUMPY)
        add(
            "batched attention into strided out",
            r((32, 16, 16)),
            r((32, 16, 8)),
            SIMD_OR_NUMPY,
            out=np.zeros((32, 16, 16), dtype)[..., ::2],
        )
        add("batched three batch axes", r((2, 4, 8, 16, 16)), r((2, 4, 8, 16, 8)), "numpy")
        add("batched odd tiles", r((16, 4, 15, 16)), r((16, 4, 16, 8)), "numpy")
        add(
            "batched broadcast a rows not collapsing",
            r((64, 3, 40)).transpose(1, 0, 2),
            _broadcast(rng, (40, 50), dtype, (3,)),
            "blas-batched",
        )
        add("batched empty batch", r((0, 32, 32)), r((0, 32, 32)), "numpy")
    # Stays numpy: mixed dtypes (recording never makes them, but the routing must not assume it).
    found.append(
        ("mixed float32 x float64", _rand(rng, (64, 64), np.float32), _rand(rng, (64, 64), np.float64), None, "numpy")
    )
    found.append(("float16", _rand(rng, (64, 64), np.float16), _rand(rng, (64, 64), np.float16), None, "numpy"))
    return found


def tolerance(a, b):
    """The documented bound: k * eps * (|a| @ |b|), plus the smallest normal."""
    info = np.finfo(np.result_type(a, b))
    k = a.shape[-1]
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    return max(k, 1) * float(info.eps) * scale + float(info.tiny)


def check(blas):
    """Run every case through ``blas.matmul_into`` (the module, BLAS installed); the failures, as text.

    Twice, with other values the second time: new arrays of the same layouts (some at the first's
    ids, freed in between) through the call layouts the first made (topos/pyodide/call_layouts.py)."""
    return check_round(blas, 22) + [f"again: {failure}" for failure in check_round(blas, 23)]


def check_round(blas, seed):
    failures = []
    for name, a, b, out, want in cases(seed):
        got_route = blas.route(a, b)
        if want == SIMD_OR_NUMPY:
            want = "blas-batched" if a.dtype in blas._kernels else "numpy"
        if got_route != want:
            failures.append(f"{name}: routed {got_route}, expected {want}")
            continue
        expected = np.matmul(a, b)
        target = None if out is None else out
        result = blas.matmul_into(a, b, target)
        if target is not None and result is not target:
            failures.append(f"{name}: the result is not the out buffer")
        if result.shape != expected.shape or result.dtype != expected.dtype:
            failures.append(f"{name}: {result.shape} {result.dtype}, numpy gives {expected.shape} {expected.dtype}")
            continue
        if expected.size:
            error = np.abs(result.astype(np.float64) - expected.astype(np.float64))
            bound = tolerance(a, b)
            if not np.all(error <= bound):
                worst = float(np.max(error - bound))
                failures.append(f"{name}: exceeds k*eps*(|a|@|b|) by {worst:.3g}")
    return failures


def gelu_inputs(dtype):
    """Normal draws, a dense sweep over [-30, 30] (exp(-2u) overflows below about -10 in float32), and edges."""
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, 1e-30, -1e-30, 1e4, -1e4, np.inf, -np.inf, np.nan]
    x = np.concatenate([rng.standard_normal(20000) * 3, np.linspace(-30, 30, 6001), edges]).astype(dtype)
    return x, rng.standard_normal(x.shape).astype(dtype)


def check_gelu(gelu, gelu_grad, reference_gelu, reference_grad, tolerance):
    """``gelu(x)`` and ``gelu_grad(g, x)`` against the tanh form in float64 (the reference functions),
    within ``tolerance`` eps times (1 + |x|) (and |g| for the gradient); non-finite where the reference is.
    The failures, as text."""
    failures = []
    for dtype in (np.float32, np.float64):
        x, g = gelu_inputs(dtype)
        eps = float(np.finfo(dtype).eps)
        with np.errstate(all="ignore"):
            want = reference_gelu(x.astype(np.float64))
            want_grad = reference_grad(g.astype(np.float64), x.astype(np.float64))
            got, got_grad = gelu(x), gelu_grad(g, x)
        for name, result, expected, scale in (
            ("gelu", got, want, 1 + np.abs(x.astype(np.float64))),
            ("gelu grad", got_grad, want_grad, (1 + np.abs(x.astype(np.float64))) * np.abs(g.astype(np.float64))),
        ):
            if result.dtype != dtype:
                failures.append(f"{name} {np.dtype(dtype).name}: result is {result.dtype}")
            finite = np.isfinite(expected) & (np.abs(x) < 1e3)
            # Where the float32 result would overflow (x^3 past its range) or the reference is not finite, both are alike.
            if not np.array_equal(np.isnan(result[~finite]), np.isnan(expected[~finite].astype(dtype))):
                failures.append(f"{name} {np.dtype(dtype).name}: NaNs differ from the tanh form's")
            error = np.abs(result[finite].astype(np.float64) - expected[finite])
            if not np.all(error <= tolerance * eps * scale[finite] + float(np.finfo(dtype).tiny)):
                worst = float(np.max(error / (eps * scale[finite] + 1e-300)))
                failures.append(f"{name} {np.dtype(dtype).name}: {worst:.2f} eps (1 + |x|), over {tolerance}")
    return failures


def exp_inputs():
    """float32 arguments for exp: normal draws, a sweep over [-110, 90] (past both ends of float32's
    range: exp overflows above 88.72 and its results are denormal below -87.34 and 0 below -103.97),
    and edges: zeros, tiny and denormal arguments, the ends of the range, the infinities and NaN."""
    rng = np.random.default_rng(11)
    edges = [0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 1.4e-45, -1.4e-45, 88.7, 88.72, 88.73, 88.8, 89.0, 100.0, 1e4]
    edges += [-87.3, -87.4, -88.7, -90.0, -100.0, -103.0, -103.9, -104.0, -110.0, -1e4, np.inf, -np.inf, np.nan]
    return np.concatenate([rng.standard_normal(20000) * 10, np.linspace(-110, 90, 20001), edges]).astype(np.float32)


def tanh_inputs():
    """float32 arguments for tanh: normal draws, a sweep over [-12, 12] (tanh rounds to 1 past about 9),
    and edges: zeros, tiny and denormal arguments, either side of 0.625 (where the kernel's two forms
    meet), large arguments, the infinities and NaN."""
    rng = np.random.default_rng(13)
    edges = [0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 1.4e-45, -1.4e-45, 0.6249999, 0.625, 0.6250001, -0.6249999]
    edges += [-0.625, -0.6250001, 9.0, -9.0, 10.0, -10.0, 44.5, -44.5, 100.0, -1e4, np.inf, -np.inf, np.nan]
    return np.concatenate([rng.standard_normal(20000) * 3, np.linspace(-12, 12, 24001), edges]).astype(np.float32)


def check_exp(exp, tolerance):
    """``exp(x)`` and ``exp(x, out)`` against exp in float64 (``check_unary``). The failures, as text."""
    return check_unary("exp", exp, np.exp, exp_inputs(), tolerance)


def check_tanh(tanh, tolerance):
    """``tanh(x)`` and ``tanh(x, out)`` against tanh in float64 (``check_unary``). The failures, as text."""
    return check_unary("tanh", tanh, np.tanh, tanh_inputs(), tolerance)


def check_unary(label, function, reference, x, tolerance):
    """``function(x)`` and ``function(x, out)`` against ``reference`` in float64: within ``tolerance`` =
    (relative eps, absolute), inf and NaN where the float64 result rounded to float32 has them; float32
    and float64, at sizes around the SIMD width and the kernels' least size (0 to 9, 1020 to 1033,
    4099), in place, strided, Fortran-ordered, into a transposed out, broadcast, 0-d. The failures, as text."""
    failures = []
    eps = float(np.finfo(np.float32).eps)

    def compare(case, got, argument):
        with np.errstate(all="ignore"):
            want = reference(np.asarray(argument, np.float64))
        if got.shape != np.shape(argument) or got.dtype != np.asarray(argument).dtype:
            failures.append(
                f"{label} {case}: {got.dtype} {got.shape}, wanted {np.asarray(argument).dtype} {np.shape(argument)}"
            )
            return
        rounded = want.astype(got.dtype)
        if not np.array_equal(np.isnan(got), np.isnan(rounded)) or not np.array_equal(np.isinf(got), np.isinf(rounded)):
            failures.append(f"{label} {case}: NaN or inf where {label} in float64 has none")
            return
        finite = np.isfinite(rounded)
        error = np.abs(got[finite].astype(np.float64) - want[finite])
        bound = tolerance[0] * eps * np.abs(want[finite]) + tolerance[1]
        if got.dtype == np.float64:
            bound = 4 * float(np.finfo(np.float64).eps) * np.abs(want[finite])
        if not np.all(error <= bound):
            worst = float(np.max(error / (eps * np.abs(want[finite]) + tolerance[1])))
            failures.append(f"{label} {case}: {worst:.2f} eps relatively, over {tolerance[0]}")

    with np.errstate(all="ignore"):
        compare("all inputs", function(x), x)
        for size in (*range(10), *range(1020, 1034), 4099):
            part = x[x.size - size :]
            compare(f"size {size}", function(part), part)
        inplace = x.copy()
        result = function(inplace, inplace)
        if result is not inplace:
            failures.append(f"{label} in place: the result is not out")
        compare("in place", inplace, x)
        compare("strided", function(x[::3]), x[::3])
        square = x[: 101 * 99].reshape(101, 99)
        compare("Fortran-ordered", function(np.asfortranarray(square)), square)
        out = np.empty((99, 101), np.float32)
        compare("into a transposed out", function(square, out.T), square)
        row = x[:13]
        compare("broadcast", function(np.broadcast_to(row, (5, 13))), np.broadcast_to(row, (5, 13)))
        compare("float64", function(x.astype(np.float64)), x.astype(np.float64))
        compare("0-d", function(np.float32(1.5)), np.float32(1.5))
    return failures


def sum_cases():
    """``(label, x, axes, keepdims, kernel)`` for ``check_sum``: ``kernel`` where the SIMD sums should take it
    (C-contiguous float32, leading or trailing axes, 2 to ONES_TERMS terms a sum, out contiguous)."""
    rng = np.random.default_rng(7)

    def x(*shape, dtype=np.float32):  # a wide range of magnitudes, both signs
        return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)).astype(dtype)

    cases = []
    for shape, axes in (
        ((256, 32), (0,)), ((256, 32), (1,)), ((256, 128), (0,)), ((256, 96), (0,)),
        ((16, 4, 16, 16), (3,)), ((16, 16, 40), (2,)), ((16, 16, 32), (0,)), ((16, 16), (0, 1)),
        ((1, 7), (1,)), ((7, 1), (0,)), ((2, 1), (0,)), ((1, 2), (1,)), ((5, 3), (0,)), ((5, 3), (1,)),
        ((3, 13), (0,)), ((3, 13), (1,)), ((13, 5), (0,)), ((13, 6), (1,)), ((9, 7), (0,)), ((9, 7), (1,)),
        ((1024, 9), (0,)), ((4, 1023), (1,)), ((300, 1000), (1,)), ((300, 1001), (0,)), ((6, 5, 4), (0, 1)),
        ((6, 5, 4), (1, 2)), ((5, 21), (0,)), ((5, 38), (0,)), ((5, 38), (1,)), ((3, 59), (0,)), ((3, 77), (0,)),
    ):  # fmt: skip
        for keepdims in (False, True):
            cases.append((f"{shape} over {axes}", x(*shape), axes, keepdims, True))
    exact = rng.integers(-8, 9, (37, 23)).astype(np.float32)  # integer sums: exact in any order
    cases += [("integers over (0,)", exact, (0,), False, True), ("integers over (1,)", exact, (1,), False, True)]
    special = x(12, 11)
    special[3, 4], special[5, 0], special[7, 10], special[7, 9], special[0, 1] = (
        np.nan,
        np.inf,
        -np.inf,
        np.inf,
        -np.inf,
    )
    cases += [
        ("NaN and inf over (0,)", special, (0,), False, True),
        ("NaN and inf over (1,)", special, (1,), True, True),
    ]
    wide = x(6, 40)
    cases += [
        ("empty over (0,)", x(0, 5), (0,), False, False),
        ("empty over (1,)", x(0, 5), (1,), True, False),
        ("one term", x(1, 9), (0,), False, False),
        ("strided", wide[:, ::2], (0,), False, False),
        ("strided rows", wide[:, ::3], (1,), False, False),
        ("transposed", wide.T, (0,), False, False),
        ("a middle axis", x(4, 5, 6), (1,), False, False),
        ("float64 over (0,)", x(33, 7, dtype=np.float64), (0,), False, False),
        ("float64 over (1,)", x(7, 33, dtype=np.float64), (1,), True, False),
        ("over ONES_TERMS terms", x(2000, 3), (0,), False, False),
    ]
    return cases


def check_sum(registry, calls):
    """The Sum primitive's forward and forward_into against the sum in float64, within
    ``topos.pyodide.kernels.SUM_TOLERANCE`` n eps sum |x| (n terms), NaN and inf where the float64 sum has them,
    shape and dtype numpy's; ``calls()`` counts the SIMD sums' calls: each case takes them or not as
    ``sum_cases`` says. The failures, as text."""
    from topos.pyodide import kernels

    primitive = registry["Sum"]
    failures = []
    eps = float(np.finfo(np.float32).eps)
    for label, x, axes, keepdims, kernel in sum_cases():
        attrs = {"axes": axes, "keepdims": keepdims}
        with np.errstate(invalid="ignore"):  # inf - inf
            want = np.sum(x.astype(np.float64), axis=axes, keepdims=keepdims)
        magnitude = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=keepdims)
        terms = x.size // max(want.size, 1) if x.size else 0
        for way in ("forward", "forward_into"):
            before = calls()
            with np.errstate(all="ignore"):
                if way == "forward":
                    got = primitive.forward([x], attrs)
                else:
                    got = primitive.forward_into([x], attrs, np.empty(want.shape, x.dtype))
            took = calls() - before
            case = f"Sum {label}, keepdims {keepdims}, {way}"
            if took != (1 if kernel else 0):
                failures.append(f"{case}: {took} kernel calls, wanted {1 if kernel else 0}")
            if got.shape != want.shape or got.dtype != x.dtype:
                failures.append(f"{case}: {got.dtype} {got.shape}, wanted {x.dtype} {want.shape}")
                continue
            if label.startswith("integers") and not np.array_equal(got, want):
                failures.append(f"{case}: integer sums not exact")
            if not np.array_equal(np.isnan(got), np.isnan(want)) or not np.array_equal(np.isinf(got), np.isinf(want)):
                failures.append(f"{case}: NaN or inf where the sum in float64 has none")
                continue
            finite = np.isfinite(want)
            error = np.abs(np.asarray(got, np.float64)[finite] - want[finite])
            unit = eps if x.dtype == np.float32 else float(np.finfo(np.float64).eps)
            bound = kernels.SUM_TOLERANCE * max(terms, 1) * unit * magnitude[finite]
            if not np.all(error <= bound):
                worst = float(np.max(error / np.maximum(max(terms, 1) * unit * magnitude[finite], 1e-300)))
                failures.append(f"{case}: {worst:.2f} n eps sum |x|, over {kernels.SUM_TOLERANCE}")
    # Into an out that is not contiguous: numpy's own reduction.
    x = np.ones((5, 3, 7), np.float32)
    out = np.empty((7, 3), np.float32).T
    before = calls()
    primitive.forward_into([x], {"axes": (0,), "keepdims": False}, out)
    if calls() != before or not np.array_equal(out, np.full((3, 7), 5.0, np.float32)):
        failures.append("Sum into a transposed out: not numpy's own reduction")
    return failures


def check_max(registry, calls):
    """The Max primitive's forward against ``np.max``: equal (NaN where numpy has it; the sign of a zero
    maximum may differ), shape and dtype numpy's; ``calls()`` counts the SIMD maxima's calls: C-contiguous
    float32 over the last axis takes them, anything else numpy. The failures, as text."""
    rng = np.random.default_rng(11)
    primitive = registry["Max"]
    special = rng.standard_normal((6, 9)).astype(np.float32)
    special[1, 3], special[2, 8], special[3, :], special[4, 0], special[5, 7] = np.nan, np.inf, -np.inf, -np.inf, np.nan
    special[0, :4] = -0.0
    cases = [
        (f"{shape}", rng.standard_normal(shape).astype(np.float32), (len(shape) - 1,), True)
        for shape in ((16, 4, 16, 16), (16, 16, 40), (5, 3), (7, 1), (1, 7), (3, 13), (4, 1023), (9,), (2, 4), (3, 70))
    ]
    cases += [
        ("NaN, inf, -0", special, (1,), True),
        ("strided", rng.standard_normal((6, 40)).astype(np.float32)[:, ::3], (1,), False),
        ("float64", rng.standard_normal((6, 9)), (1,), False),
        ("the first axis", rng.standard_normal((6, 9)).astype(np.float32), (0,), False),
        ("both axes", rng.standard_normal((6, 9)).astype(np.float32), (0, 1), False),
        ("empty rows", np.zeros((3, 0), np.float32), (1,), False),
        ("no rows", np.zeros((0, 3), np.float32), (1,), False),
    ]
    failures = []
    for label, x, axes, kernel in cases:
        for keepdims in (False, True):
            case = f"Max {label} over {axes}, keepdims {keepdims}"
            want = np.max(x, axis=axes, keepdims=keepdims, initial=-np.inf) if x.size else None
            if want is None:
                want = np.full(
                    tuple(1 if a in axes else n for a, n in enumerate(x.shape))
                    if keepdims
                    else tuple(n for a, n in enumerate(x.shape) if a not in axes),
                    -np.inf,
                    x.dtype,
                )
            before = calls()
            got = primitive.forward([x], {"axes": axes, "keepdims": keepdims})
            took = calls() - before
            if took != (1 if kernel else 0):
                failures.append(f"{case}: {took} kernel calls, wanted {1 if kernel else 0}")
            if got.shape != want.shape or got.dtype != x.dtype:
                failures.append(f"{case}: {got.dtype} {got.shape}, wanted {x.dtype} {want.shape}")
            elif not np.array_equal(got, want, equal_nan=True):
                failures.append(f"{case}: not np.max's values")
    return failures
