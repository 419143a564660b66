"""topos.pyodide: the page's runtime, the routing of matrix products to a BLAS where numpy has none.

Natively numpy has a BLAS and nothing is installed: MatMul is np.matmul, bit for bit. The routing
into topos.ops.hooks (topos/pyodide/routing.py) is installed here by the ``routed`` fixture.
The routing itself is tested here with scipy's ``_fblas`` (the same f2py wrappers the
playground loads in Pyodide, here over the native OpenBLAS that jax's scipy brings) and with
a recording fake; and in Pyodide 0.27.7 under Node with the files the site serves
(tests/pyodide/blas.mjs), every case of tests/python/blas_cases.py against np.matmul.
"""

import ctypes
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import _fblas

import topos
from topos.ops import hooks
from topos.pyodide import blas, routing
from topos.pyodide import kernels as simd

sys.path.insert(0, str(Path(__file__).parent))
import binary_cases  # noqa: E402
import blas_cases  # noqa: E402
import rows_cases  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def routed():
    """The runtime's routing filled into topos.ops.hooks as in Pyodide (its kernels fakes or none), undone after."""
    routing.install()
    try:
        yield
    finally:
        hooks.restore()


@pytest.fixture
def installed():
    blas.install(_fblas)
    try:
        yield
    finally:
        blas.uninstall()


class Recording:
    """scipy's _fblas, recording each call's operand layouts (to see that no copy was made)."""

    def __init__(self):
        self.calls = []

    def _wrap(self, routine):
        def call(alpha, a, b, **options):
            self.calls.append(
                (a.flags.f_contiguous, b.flags.f_contiguous, options.get("trans_a"), options.get("trans_b"))
            )
            return routine(alpha, a, b, **options)

        return call

    @property
    def sgemm(self):
        return self._wrap(_fblas.sgemm)

    @property
    def dgemm(self):
        return self._wrap(_fblas.dgemm)


def test_every_routing_decision_matches_numpy(installed):
    assert blas_cases.check(blas) == []


def _view(address, shape, strides, dtype):
    """The array at ``address`` with these byte strides (natively: a process address)."""
    low = sum(min(0, (extent - 1) * stride) for extent, stride in zip(shape, strides))
    high = sum(max(0, (extent - 1) * stride) for extent, stride in zip(shape, strides)) + np.dtype(dtype).itemsize
    buffer = (ctypes.c_char * (high - low)).from_address(address + low)
    return np.ndarray(shape, dtype, buffer=buffer, offset=-low, strides=strides)


class FakeKernels:
    """topos/pyodide/wasm_gemm.py's kernels' contract, natively: addresses and byte strides, whole tiles only."""

    def __init__(self):
        self.calls = []

    def _gemm(self, dtype):
        from topos.pyodide import wasm_gemm

        size = np.dtype(dtype).itemsize

        def gemm(arguments):
            values = [int(v) for v in _view(arguments, (len(wasm_gemm.ARGUMENTS),), (8,), np.intp)]
            a, b, c, m, n, k, a_row, a_col, b_row, c_row = values[:10]
            outer, a_outer, b_outer, c_outer, inner, a_inner, b_inner, c_inner = values[10:]
            assert m % wasm_gemm.M_BLOCK == 0 and n % wasm_gemm.N_BLOCK[np.dtype(dtype).name] == 0 and m and n
            self.calls.append((outer, inner, m, n, k))
            for x0 in range(outer):
                for x1 in range(inner):
                    shift = (x0 * a_outer + x1 * a_inner, x0 * b_outer + x1 * b_inner, x0 * c_outer + x1 * c_inner)
                    left = _view(a + shift[0], (m, k), (a_row, a_col), dtype)
                    right = _view(b + shift[1], (k, n), (b_row, size), dtype)
                    _view(c + shift[2], (m, n), (c_row, size), dtype)[...] = left @ right

        return gemm

    @property
    def sgemm(self):
        return self._gemm(np.float32)

    @property
    def dgemm(self):
        return self._gemm(np.float64)


def test_every_routing_decision_through_the_simd_kernels_contract():
    fake = FakeKernels()
    blas.install_kernels({"sgemm": fake.sgemm, "dgemm": fake.dgemm})
    try:
        assert blas.installed() == "simd"
        assert blas_cases.check(blas) == []
        assert fake.calls  # odd shapes send only their whole tiles: the rest is numpy's
    finally:
        blas.uninstall()


def _same_layout(out):
    """A new array laid out as ``out`` is (its strides within a buffer of its base's size)."""
    base = out if out.base is None else out.base
    assert out.__array_interface__["data"][0] == base.__array_interface__["data"][0]
    return np.lib.stride_tricks.as_strided(np.empty_like(base), out.shape, out.strides)


def test_not_installed_is_numpy_bit_for_bit():
    assert not blas.installed()
    for name, a, b, out, _ in blas_cases.cases():
        # numpy into an out of the same layout: BLAS may round a Fortran-ordered out differently from
        # a fresh C-ordered one (OpenBLAS on AMD EPYC does), and "bit for bit" means the same call.
        expected = np.matmul(a, b) if out is None else np.matmul(a, b, out=_same_layout(out))
        result = blas.matmul_into(a, b, None if out is None else out)
        assert result.dtype == expected.dtype, name
        np.testing.assert_array_equal(result, expected, err_msg=name)


def test_transposed_operands_are_passed_without_a_copy():
    fake = Recording()
    blas.install(fake)
    try:
        a = np.ones((40, 256), np.float32).T  # Fortran-ordered 256 x 40
        b = np.ones((40, 64), np.float32)
        blas.matmul_into(a, b)
        # b goes first (out^T = b^T a^T): C-ordered b is passed as its Fortran-ordered transpose;
        # the Fortran-ordered a is passed as it is, with the routine told to transpose it.
        assert fake.calls == [(True, True, 0, 1)]
        counts = blas.counts()
        assert counts["blas"] >= 1
    finally:
        blas.uninstall()


def test_out_is_written_in_place(installed):
    a = np.arange(64 * 32, dtype=np.float64).reshape(64, 32) / 100
    b = np.arange(32 * 48, dtype=np.float64).reshape(32, 48) / 100
    out = np.full((64, 48), np.nan)
    address = out.__array_interface__["data"][0]
    result = blas.matmul_into(a, b, out)
    assert result is out and out.__array_interface__["data"][0] == address
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)


def test_training_through_the_blas_matches_numpy(routed, installed):
    # The interpreter's MatMul forward goes through the runtime's product hook (ops/hooks.py): gradients of a product chain.
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(shape) for shape in ((4, 16, 64), (64, 80), (80, 8))]

    def build(tape):
        x, w1, w2 = tape.input(values[0]), tape.parameter(values[1]), tape.parameter(values[2])
        return [w1, w2, topos.sum(topos.tanh(x @ w1) @ w2)]

    network, (w1, w2, loss) = topos.Tape.record(build)

    def gradients():
        run = network.forward(network.parameters(), {})
        found = run.backward(loss)
        return [found.of(w1), found.of(w2)]

    before = blas.counts()["blas"]
    got = gradients()
    assert blas.counts()["blas"] > before
    blas.uninstall()
    for routed, plain in zip(got, gradients()):
        np.testing.assert_allclose(routed, plain, rtol=1e-9, atol=1e-12)


def test_in_pyodide_with_the_served_openblas():
    # The real thing: Pyodide 0.27.7 (npm) with public/pyodide/'s verified openblas and _fblas.
    env = dict(os.environ)
    completed = subprocess.run(
        ["node", "tests/pyodide/blas.mjs"], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report["failures"] == []
    assert report["installed"] == "simd+openblas" and report["counts"]["blas"] > 0
    # float32 GELU, exp, tanh, sums and maxima; the Sum and Max rows take theirs in Pyodide (check_sum, check_max)
    kernels = ["add", "colsum", "div", "exp", "gelu", "gelu_grad", "mul", "rowmax", "rowsum", "sub", "tanh", "where"]
    assert report["gelu_kernels"] == kernels
    assert report["binary_kernels"] == ["add", "div", "mul", "sub", "where"]  # bit for bit numpy's (check_binary)
    assert report["sum_kernels"] == ["colsum", "rowmax", "rowsum"]
    assert report["rows_pyodide"]  # the row derivatives' forwards through topos/pyodide/row_derivatives.py (check_rows)
    assert report["exp_row"]  # the Exp and Tanh rows' forwards in Pyodide are topos.pyodide.kernels.exp and .tanh
    assert set(report["routes"]) == {case[-1] for case in blas_cases.cases()}
    # kernel arguments' data addresses read from the arrays' structs, as __array_interface__ gives them
    assert report["heap_read"] and report["heap_mismatches"] == []
    assert report["call_layouts"] == ["general", "kernel", "numpy"]  # call_layouts.py's three kinds, each made


def reference_gelu(x):
    from topos.ops.registry import _REGISTRY

    return _REGISTRY["Gelu"].forward([x], {})


def reference_gelu_grad(g, x):
    from topos.ops.registry import _REGISTRY

    return _REGISTRY["GeluGrad"].forward([g, x], {})


def test_pyodide_gelu_through_exp_matches_the_tanh_form():
    # The Pyodide-only forms (natively the ops keep the tanh form: no rule of theirs is overridden).
    assert not hooks.HOOKS.overridden
    failures = blas_cases.check_gelu(
        lambda x: simd.gelu_into(x, np.empty_like(x)),
        lambda g, x: simd.gelu_grad_into(g, x, np.empty_like(x)),
        reference_gelu,
        reference_gelu_grad,
        simd.GELU_TOLERANCE,
    )
    assert failures == []


def test_gelu_kernels_contract_takes_whole_quads_and_numpy_the_tail():
    # topos/pyodide/wasm_gelu.py's contract natively: four pointer-sized arguments (x, g, out, count), a
    # count that is a multiple of 4, contiguous float32; the fake applies the numpy forms.
    counts = []

    def fake(name):
        def kernel(arguments):
            x, g, out, count = (int(v) for v in _view(arguments, (4,), (8,), np.intp))
            assert count % 4 == 0
            counts.append(count)
            xs, gs, outs = (_view(address, (count,), (4,), np.float32) for address in (x, g, out))
            if name == "gelu":
                simd._gelu_numpy(xs, outs)
            else:
                simd._gelu_grad_numpy(gs, xs, outs)

        return kernel

    simd.install({"gelu": fake("gelu"), "gelu_grad": fake("gelu_grad")})
    try:
        failures = blas_cases.check_gelu(
            lambda x: simd.gelu_into(x, np.empty_like(x)),
            lambda g, x: simd.gelu_grad_into(g, x, np.empty_like(x)),
            reference_gelu,
            reference_gelu_grad,
            simd.GELU_TOLERANCE,
        )
        assert failures == []
        size = blas_cases.gelu_inputs(np.float32)[0].size
        assert size % 4 and counts == [size - size % 4] * 2  # float32 only; float64 stays in numpy
    finally:
        simd.uninstall()


@pytest.mark.parametrize("name", ["exp", "tanh"])
def test_exp_and_tanh_kernels_contract_takes_whole_quads_and_numpy_the_tail(name):
    # topos/pyodide/wasm_exp.py's contract natively: the four arguments of the GELU kernels (x, unused, out,
    # count), whole quads of contiguous float32; a fake applying the ufunc stands in for the kernel.
    from topos.ops import elementwise

    ufunc = getattr(np, name)
    row = elementwise.Exp if name == "exp" else elementwise.Tanh
    assert row.numpy_function is ufunc  # natively the row is the ufunc itself
    counts = []

    def fake(arguments):
        x, _, out, count = (int(v) for v in _view(arguments, (4,), (8,), np.intp))
        assert count % 4 == 0
        counts.append(count)
        ufunc(_view(x, (count,), (4,), np.float32), out=_view(out, (count,), (4,), np.float32))

    simd.install({name: fake})
    try:
        check = blas_cases.check_exp if name == "exp" else blas_cases.check_tanh
        tolerance = simd.EXP_TOLERANCE if name == "exp" else simd.TANH_TOLERANCE
        assert check(getattr(simd, name), tolerance) == []
        # Contiguous float32 of at least KERNEL_MIN elements only: the sizes from 1020 up take their whole quads.
        inputs = blas_cases.exp_inputs() if name == "exp" else blas_cases.tanh_inputs()
        sizes = [inputs.size, *range(10), *range(1020, 1034), 4099]
        quads = [n - n % 4 for n in sizes if n >= simd.KERNEL_MIN[name]]
        assert counts[: len(quads)] == quads
    finally:
        simd.uninstall()


def test_kernel_addresses_are_each_arrays_own_and_bounded():
    # blas._address remembers addresses by id with a weak reference: an array that took a dead
    # one's id is not taken for it, views get their own, the table stays within _ADDRESSES_KEPT,
    # and it keeps nothing alive (a kept block or donated state is reused only when nothing holds it).
    def true_address(array):
        return array.__array_interface__["data"][0]

    from topos.pyodide import wasm_heap

    assert wasm_heap.address(np.zeros(4)) is None  # natively: the struct is not read (Pyodide: tests/pyodide/blas.mjs)
    arrays = [np.zeros(4, np.float32) for _ in range(simd._ADDRESSES_KEPT + 10)]
    for x in arrays * 2:
        assert blas._address(x) == true_address(x)
        assert len(simd._ADDRESSES) <= simd._ADDRESSES_KEPT
    assert blas._address(arrays[-1][1:]) == true_address(arrays[-1]) + 4
    for _ in range(200):  # fresh arrays, freed at once: ids come back, addresses must not
        y = np.empty(int(np.random.default_rng().integers(1, 64)), np.float32)
        assert blas._address(y) == true_address(y)
        assert blas._address(y, keep=False) == true_address(y)
        before = sys.getrefcount(y)
        blas._address(y)
        assert sys.getrefcount(y) == before
        del y


def test_sum_kernels_contract_and_the_sum_rows_routing(routed):
    # topos/pyodide/wasm_sum.py's contract natively: four pointer-sized arguments (x, out, rows, cols), x a
    # C-contiguous float32 [rows, cols], out contiguous; a fake summing in numpy stands in for the
    # kernels, the Sum row routed as in Pyodide (routing.sum_into; natively the ones product or np.add.reduce).
    from topos.ops.registry import _REGISTRY

    assert "forward_into" in vars(_REGISTRY["Sum"])  # routed (the fixture); natively the class's own
    calls = []

    def fake(name):
        def kernel(arguments):
            x, out, rows, cols = (int(v) for v in _view(arguments, (4,), (8,), np.intp))
            assert rows >= 1 and cols >= 1
            calls.append(name)
            matrix = _view(x, (rows, cols), (4 * cols, 4), np.float32)
            np.add.reduce(
                matrix,
                axis=1 if name == "rowsum" else 0,
                out=_view(out, (rows if name == "rowsum" else cols,), (4,), np.float32),
            )

        return kernel

    simd.install({"colsum": fake("colsum"), "rowsum": fake("rowsum")})
    try:
        assert blas_cases.check_sum(_REGISTRY, lambda: len(calls)) == []
        assert {"colsum", "rowsum"} <= set(calls)
        with blas.suspended(("simd",)):  # no kernels: the ones product, no call
            count = len(calls)
            assert [f for f in blas_cases.check_sum(_REGISTRY, lambda: len(calls)) if "kernel calls" not in f] == []
            assert len(calls) == count
    finally:
        simd.uninstall()


def test_max_kernel_contract_and_the_max_rows_routing(routed):
    # rowmax_f32's contract natively (topos/pyodide/wasm_sum.py: x, out, rows, cols; x C-contiguous float32):
    # a fake taking np.maximum.reduce stands in for it, the Max row routed as in Pyodide.
    from topos.ops.registry import _REGISTRY

    calls = []

    def fake(arguments):
        x, out, rows, cols = (int(v) for v in _view(arguments, (4,), (8,), np.intp))
        assert rows >= 1 and cols >= 1
        calls.append((rows, cols))
        matrix = _view(x, (rows, cols), (4 * cols, 4), np.float32)
        np.maximum.reduce(matrix, axis=1, out=_view(out, (rows,), (4,), np.float32))

    simd.install({"rowmax": fake})
    try:
        assert blas_cases.check_max(_REGISTRY, lambda: len(calls)) == []
        assert (16 * 4 * 16, 16) in calls
    finally:
        simd.uninstall()


def _fake_binary(calls, name, count):
    """A fake of wasm_binary.py's kernel ``name`` (count arrays: out, then the operands): reads the
    arguments (outer, rows, cols, then address and outer, row, col byte strides for each array)
    and does the op in numpy."""

    def kernel(arguments):
        values = [int(v) for v in _view(arguments, (3 + 4 * count,), (8,), np.intp)]
        shape = tuple(values[:3])
        calls.append(name)
        if 0 in shape:
            return
        views = [
            _view(values[3 + 4 * k], shape, tuple(values[4 + 4 * k : 7 + 4 * k]), np.float32) for k in range(count)
        ]
        assert views[0].strides[2] == 4 or shape[2] == 1
        if name == "where":
            np.copyto(views[0], np.where(views[3] != 0, views[1], views[2]))
        else:
            with np.errstate(all="ignore"):
                getattr(np, name)(views[1], views[2], out=views[0])

    return kernel


def test_the_prepared_interpreter_takes_the_runtimes_steps_by_what_they_call(routed):
    # The interpreter asks topos.ops.hooks for a node's step by what the step calls (np.add, Where's
    # forward_into), never by opcode: routed, its Add and Where nodes call the (fake) kernels.
    calls = []
    simd.install({"add": _fake_binary(calls, "add", 3), "where": _fake_binary(calls, "where", 4)})
    try:
        rng = np.random.default_rng(1)
        x, y = (rng.standard_normal((64, 32)).astype(np.float32) for _ in range(2))

        def build(tape):
            a, b = tape.input(x), tape.input(y)
            return [topos.where(a, a + b, b)]

        network, (out,) = topos.Tape.record(build, dtype="float32")
        for _ in range(3):  # prepared from the second run on
            got = network.forward(network.parameters(), {}).of(out)
        assert calls.count("add") >= 2 and calls.count("where") >= 2
        np.testing.assert_array_equal(got, np.where(x != 0, x + y, y))
    finally:
        simd.uninstall()


def test_binary_kernels_contract_and_routing():
    # topos/pyodide/wasm_binary.py's contract natively: a fake reading the arguments (outer, rows, cols, then
    # address and outer, row, col byte strides for out and each operand) does the op in numpy.
    from topos.ops.registry import _REGISTRY
    from topos.pyodide import binary

    assert not hooks.HOOKS.steps and "forward_into" not in vars(_REGISTRY["Where"])  # natively: numpy's own
    calls = []
    fake = functools.partial(_fake_binary, calls)

    names = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}
    simd.install({short: fake(name, 3) for short, name in names.items()} | {"where": fake("where", 4)})

    def where_forward(c, x, y, out):
        if not binary.where_into(c, x, y, out):
            _REGISTRY["Where"].forward_into([c, x, y], {}, out)

    try:
        assert binary_cases.check_binary(binary, where_forward, lambda: len(calls)) == []
        assert set(calls) == {"add", "subtract", "multiply", "divide", "where"}
        # The row derivatives' forwards in Pyodide (topos/pyodide/row_derivatives.py): without the row sums'
        # kernel the general route, its binary ops through the fakes; with the fakes of both
        # (wasm_sum's rowsum contract: x, out, rows, cols) the direct route.
        from topos.pyodide import row_derivatives

        count = len(calls)
        assert rows_cases.check_rows(row_derivatives, lambda: len(calls)) == []
        assert len(calls) > count

        def rowsum(arguments):
            x, out, rows, cols = (int(v) for v in _view(arguments, (4,), (8,), np.intp))
            calls.append("rowsum")
            matrix = _view(x, (rows, cols), (4 * cols, 4), np.float32)
            np.add.reduce(matrix, axis=1, out=_view(out, (rows,), (4,), np.float32))

        simd.install({"rowsum": rowsum})
        assert rows_cases.check_rows(row_derivatives, lambda: len(calls)) == []
        assert "rowsum" in calls
    finally:
        simd.uninstall()


def test_rows_forwards_natively_unchanged():
    # Natively topos.ops.rows's forwards are numpy's (no rule overridden); topos/pyodide/row_derivatives.py
    # without kernels is numpy's too, within rows_cases' bound of the formulas in float64.
    from topos.ops.registry import _REGISTRY
    from topos.pyodide import row_derivatives

    assert "forward_into" not in vars(_REGISTRY["SoftmaxGrad"])
    assert rows_cases.check_rows(row_derivatives, lambda: 0, kernels=False) == []
