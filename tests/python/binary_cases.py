"""Cases for the float32 binary kernels' routing (topos/pyodide/binary.py): natively with a fake kernel
(tests/python/test_blas.py), in Pyodide with the real ones (tests/pyodide/blas.mjs).

Each case's result must equal numpy's own call bit for bit (NaN where numpy has NaN: its payload
may differ), whichever way it went, and go through the kernel exactly where ``kernel`` says.
"""

import numpy as np

UFUNCS = (np.add, np.subtract, np.multiply, np.divide)


def _specials():
    values = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-45, -3e38, 3e38, 7.25, 1e-38], np.float32)
    x = np.repeat(values, len(values)).reshape(len(values), len(values))
    return x, np.ascontiguousarray(x.T)


def binary_cases():
    """(label, x, y, kernel expected) for the four ufuncs, all float32 of one shape unless said."""
    rng = np.random.default_rng(5)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    x, y = _specials()
    cases = [
        ("both contiguous", r(256, 32), r(256, 32), True),
        ("a bias row", r(256, 32), np.broadcast_to(r(32), (256, 32)), True),
        ("a per-row scalar", r(256, 32), np.broadcast_to(r(256, 1), (256, 32)), True),
        ("the row first", np.broadcast_to(r(32), (256, 32)), r(256, 32), True),
        ("one scalar", r(16, 4, 16, 16), np.broadcast_to(r(), (16, 4, 16, 16)), True),
        ("per-row over 4-D", r(16, 4, 16, 16), np.broadcast_to(r(16, 4, 16, 1), (16, 4, 16, 16)), True),
        ("a mask over 4-D", r(16, 4, 16, 16), np.broadcast_to(r(16, 16), (16, 4, 16, 16)), True),
        ("both broadcast", np.broadcast_to(r(40, 1), (40, 33)), np.broadcast_to(r(33), (40, 33)), True),
        ("NaN, inf, -0, denormals", x, y, True),
        ("one row", r(1, 131), r(1, 131), True),
        ("one column", r(131, 1), np.broadcast_to(r(1, 1), (131, 1)), True),
        ("3 x 13", r(3, 13), np.broadcast_to(r(13), (3, 13)), True),
        ("7 x 5 over 4 axes", r(2, 7, 1, 5), np.broadcast_to(r(7, 1, 1), (2, 7, 1, 5)), True),
        ("1 x 1", r(1, 1), r(1, 1), True),
        ("empty", r(0, 5), r(0, 5), False),
        ("a strided operand", r(64, 64)[:, ::2], r(64, 32), False),
        ("four axes that do not merge", r(4, 5, 6, 7), np.broadcast_to(r(4, 1, 6, 1), (4, 5, 6, 7)), False),
        ("float64", r(64, 64).astype(np.float64), r(64, 64).astype(np.float64), False),
        ("mixed dtypes", r(64, 64), r(64, 64).astype(np.float64), False),
        ("a per-row scalar broadcast in the call", r(256, 32), r(256, 1), True),
        ("the per-row scalar first, in the call", r(256, 1), r(256, 32), True),
        ("a [1, n] row in the call", r(64, 32), r(1, 32), True),
        ("per-row over 4-D in the call", r(16, 4, 16, 16), r(16, 4, 16, 1), True),
        ("a column and a row in the call", r(40, 1), r(1, 33), True),
        ("shapes that broadcast in the call", r(64, 32), r(32), False),  # another rank: numpy's
    ]
    return cases


def where_cases():
    """(label, c, x, y, kernel expected) for Where."""
    rng = np.random.default_rng(6)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    mask = (r(16, 16) > 0).astype(np.float32)
    mask[0, :6] = (np.nan, -0.0, 0.0, np.inf, 1e-45, -1.0)
    x, y = _specials()
    return [
        ("a mask over 4-D, y a scalar", np.broadcast_to(mask, (16, 4, 16, 16)), r(16, 4, 16, 16), np.broadcast_to(r(), (16, 4, 16, 16)), True),
        ("all contiguous", r(37, 19), r(37, 19), r(37, 19), True),
        ("NaN, inf, -0", x, y, np.ascontiguousarray(x.T), True),
        ("a strided condition", r(32, 64)[:, ::2], r(32, 32), r(32, 32), False),
        ("float64", r(32, 32).astype(np.float64), r(32, 32).astype(np.float64), r(32, 32).astype(np.float64), False),
    ]  # fmt: skip


def _same(got, want):
    """Equal bit for bit, NaN where ``want`` has NaN (whatever its payload)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    nan = np.isnan(want)
    bits = np.dtype(f"u{want.itemsize}")
    return np.array_equal(np.isnan(got), nan) and np.array_equal(got[~nan].view(bits), want[~nan].view(bits))


def check_binary(binary, where_forward, calls):
    """``binary.into`` for the four ufuncs and ``where_forward(c, x, y, out)`` (Where's
    forward_into) against numpy; ``calls()`` counts the kernels' calls. Every size takes the kernel
    here (MIN_ELEMENTS 1, restored after). The failures, as text."""
    failures = []
    saved = binary.MIN_ELEMENTS
    binary.MIN_ELEMENTS = 1
    binary._LAYOUTS.clear()
    try:
        for label, x, y, kernel in binary_cases():
            for ufunc in UFUNCS:
                with np.errstate(all="ignore"):
                    want = ufunc(x, y)
                    for in_place in (False, True):
                        if in_place and not (x.flags.c_contiguous and x.shape == want.shape and x.dtype == want.dtype):
                            continue
                        first = x.copy() if in_place else x
                        out = first if in_place else np.empty(want.shape, want.dtype)
                        before = calls()
                        got = binary.into(ufunc, first, y, out)
                        case = f"{ufunc.__name__} {label}{' in place' if in_place else ''}"
                        if got is not out or not _same(got, want):
                            failures.append(f"{case}: not numpy's result")
                        if (calls() - before == 1) != kernel:
                            failures.append(f"{case}: {calls() - before} kernel calls")
        # The interpreter's step: its remembered call again for the same arrays, a new one for others.
        row = np.broadcast_to(np.arange(32, dtype=np.float32), (64, 32))
        values = [np.ones((64, 32), np.float32), row, np.empty((64, 32), np.float32)]
        run = binary.ufunc_step(np.subtract, 0, 1, 2, lambda values: np.subtract(values[0], values[1], out=values[2]))
        # turns: the same arrays; a new x, then a new out (same layouts); a y of another layout; float64
        for turn, replace in enumerate((None, None, 0, 2, None, 1, None, 3)):
            if replace == 1:
                values[1] = np.full((64, 32), 0.5, np.float32)
            elif replace == 3:
                values[:] = [v.astype(np.float64) for v in values]
            elif replace is not None:
                values[replace] = np.full((64, 32), float(turn), np.float32)
            before = calls()
            run(values)
            kernel = values[0].dtype == np.float32
            if not _same(values[2], values[0] - values[1]) or (calls() - before == 1) != kernel:
                failures.append(f"step, turn {turn}: not numpy's result, or {calls() - before} kernel calls")
        # Where's step: twice the same arrays, then a new condition of the same layout, then float64.
        c = (np.arange(64 * 32).reshape(64, 32) % 3 == 0).astype(np.float32)
        values = [c, np.ones((64, 32), np.float32), row, np.empty((64, 32), np.float32)]
        run = binary.where_step(0, 1, 2, 3, lambda values: where_forward(*values))
        for turn in range(4):
            if turn == 2:
                values[0] = np.ascontiguousarray(c[::-1])
            if turn == 3:
                values[:] = [v.astype(np.float64) for v in values]
            before = calls()
            run(values)
            kernel = turn < 3
            want = np.where(values[0] != 0, values[1], values[2])
            if not _same(values[3], want) or (calls() - before == 1) != kernel:
                failures.append(f"Where's step, turn {turn}: not numpy's result, or {calls() - before} kernel calls")
        for label, c, x, y, kernel in where_cases():
            want = np.where(c != 0, x, y)
            out = np.empty(want.shape, want.dtype)
            before = calls()
            where_forward(c, x, y, out)
            if not _same(out, want):
                failures.append(f"Where {label}: not numpy's result")
            if (calls() - before == 1) != kernel:
                failures.append(f"Where {label}: {calls() - before} kernel calls")
    finally:
        binary.MIN_ELEMENTS = saved
        binary._LAYOUTS.clear()
    return failures
