"""The Fourier transforms' WGSL kernels (kernels/fft.wgsl) on lavapipe against numpy.fft in float64.

Every transform runs as a whole plan on WebGPU, float32, every node in a kernel, and is held to
numpy.fft in float64 of the same float32 inputs, within a bound derived from the algorithm, not
measured (u = 2^-24):

- twiddles: the kernel reduces t / n exactly to a quarter turn and an angle |a| <= pi / 4, then
  evaluates Taylor polynomials by Horner's rule. a carries the roundings of pi / 2 and of the product
  (u / 2 each) and of the division (WGSL allows 2.5 ulp, 5 u): within 6 u |a| <= 4.8 u, and so are cos
  and sin; Horner's rule on |a| <= pi / 4 is within gamma_11 cosh(pi / 4) < 15 u of each polynomial
  (Higham 5.3), its coefficients' rounding within cosh(pi / 4) u / 2, the truncation under 0.04 u.
  Each part is within 21 u, the complex twiddle within sqrt(2) 21 u < MU = 32 u
  (test_the_twiddles_are_within_their_bound reads them back through the direct sum of an impulse);
- a power of two n (Stockham, radix 2): ||y^ - y||_2 <= log2(n) eta / (1 - log2(n) eta) ||y||_2 with
  eta = MU + gamma_4 (sqrt(2) + MU) (Higham, Theorem 24.2: the FFT's error grows as log2(n) u ||x||),
  ||y||_2 from Parseval; the inverse's scale 1 / n is exact;
- any other n (the direct sum): |y^_k - y_k| <= s (MU + 2 gamma_(n+3)) sum_j |z_j| for every k: each
  product within sqrt(2) gamma_2 (Higham 3.5), a sum of n terms within gamma_(n-1) a part (Higham
  4.4), and the scale s = 1 / n of an inverse rounded twice (float64 to float32, then the product).

Non-finite values: an entry 0's value meets only the twiddle 1 on its way to every output, in
numpy's pocketfft and in these kernels alike (their products by 1, -1, i and -i only move parts),
so a NaN or an infinity there lands in the same part of every output in both; a NaN pair anywhere
makes every output NaN; Irfft drops the imaginary parts of entries 0 and n / 2, NaN or not.
"""

import math

import numpy as np
import pytest

import topos
from topos import Tape
from topos.compiler.wgsl.fft import LARGEST

UNIT = 2.0**-24
#: The bound of a computed twiddle's error (the module's docstring derives it).
MU = 32 * UNIT


def gamma(k):
    return k * UNIT / (1 - k * UNIT)


def complex_of(pairs):
    # Not re + 1j * im: numpy makes 1j * inf a complex product, whose real part 0 * inf is NaN.
    values = np.empty(pairs.shape[:-1], np.complex128)
    values.real, values.imag = pairs[..., 0], pairs[..., 1]
    return values


def pairs_of(values):
    return np.stack([values.real, values.imag], -1)


def hermitian(half, n):
    """The whole spectrum Irfft transforms: entries past n / 2 the conjugates of those before, the
    imaginary parts of entry 0 and (even n) of entry n / 2 dropped, as numpy's irfft."""
    k = np.arange(n)
    mirrored = 2 * k > n
    full = complex_of(half)[..., np.where(mirrored, n - k, k)]
    full = np.where(mirrored, np.conj(full), full)
    return np.where((k == 0) | (2 * k == n), full.real + 0j, full)


#: name: (record, operand shape for rows and n, numpy in float64, the n points transformed, inverse)
TRANSFORMS = {
    "fft": (
        lambda v, n: topos.fft.fft(v),
        lambda rows, n: rows + (n, 2),
        lambda a, n: pairs_of(np.fft.fft(complex_of(a))),
        lambda a, n: complex_of(a),
        False,
    ),
    "ifft": (
        lambda v, n: topos.fft.ifft(v),
        lambda rows, n: rows + (n, 2),
        lambda a, n: pairs_of(np.fft.ifft(complex_of(a))),
        lambda a, n: complex_of(a),
        True,
    ),
    "rfft": (
        lambda v, n: topos.fft.rfft(v),
        lambda rows, n: rows + (n,),
        lambda a, n: pairs_of(np.fft.rfft(a.astype(np.float64))),
        lambda a, n: a.astype(np.complex128),
        False,
    ),
    "irfft": (
        lambda v, n: topos.fft.irfft(v, n),
        lambda rows, n: rows + (n // 2 + 1, 2),
        lambda a, n: np.fft.irfft(complex_of(a), n),
        lambda a, n: hermitian(a, n),
        True,
    ),
}


def on_webgpu(record, array):
    """``record`` of a float32 parameter holding ``array``, run on WebGPU: (result, plan, run)."""
    tape = Tape("float32")
    out = record(tape.parameter(array))
    network = tape.seal()
    plan = network.entry([out]).lower()
    run = plan.run(network.parameters(), {}, backend="webgpu")
    return np.asarray(run.of(out), np.float64), plan, run


def assert_on_device(plan, run):
    computed = [i for i in plan.schedule if not plan.nodes[i].is_source]
    on_host = {i: plan.nodes[i].opcode for i in computed if run.backends[i] != "webgpu"}
    assert not on_host, f"nodes ran on the host, not in a kernel: {on_host}"


def errors_and_bounds(name, got, want, points, n):
    """Per transform (rows of the last axis or pair axes): the error and its bound, and how measured."""
    inverse = TRANSFORMS[name][4]
    diff = got - want if name == "irfft" else complex_of(got) - complex_of(want)
    diff = np.abs(diff).reshape(-1, diff.shape[-1])
    points = points.reshape(-1, n)
    scale = 1.0 / n if inverse else 1.0
    if n & (n - 1) == 0:
        steps = math.log2(n)
        eta = MU + gamma(4) * (math.sqrt(2) + MU)
        norm = scale * math.sqrt(n) * np.sqrt(np.sum(np.abs(points) ** 2, axis=-1))  # Parseval
        return (
            np.sqrt(np.sum(diff**2, axis=-1)),
            steps * eta / (1 - steps * eta) * norm,
            "2-norm",
        )
    return (
        diff.max(axis=-1),
        scale * (MU + 2 * gamma(n + 3)) * np.abs(points).sum(axis=-1),
        "largest",
    )


def check(name, n, rows, seed=0):
    record, shape, exact, points, _ = TRANSFORMS[name]
    array = np.random.default_rng(seed).standard_normal(shape(rows, n)).astype(np.float32)
    got, plan, run = on_webgpu(lambda v: record(v, n), array)
    assert_on_device(plan, run)
    want = exact(array, n)
    assert got.shape == want.shape
    error, bound, how = errors_and_bounds(name, got, want, points(array, n), n)
    assert (error <= bound).all(), f"{name} n={n}: {how} error {error.max():.3g} over the bound {bound.min():.3g}"
    return plan


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize(
    ("n", "rows"),
    [(1, (3,)), (2, (2, 3)), (64, (2, 3)), (LARGEST, (2,)), (12, (2, 3)), (1000, (2,))],
)
def test_every_transform_agrees_with_numpy_within_its_derived_bound(name, n, rows):
    check(name, n, rows)


def test_odd_lengths_of_irfft_and_rfft_agree_with_numpy():
    # An odd n has no entry n / 2: Irfft reads (n + 1) / 2 entries, every imaginary part but entry 0's.
    for n in (7, 63):
        check("irfft", n, (2,))
        check("rfft", n, (2,))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
def test_a_transform_along_a_leading_axis_reads_through_the_transposed_view(name):
    rng = np.random.default_rng(1)
    n = 16
    record = {
        "fft": (
            lambda v: topos.fft.fft(v, axis=0),
            lambda a: pairs_of(np.fft.fft(complex_of(a), axis=0)),
        ),
        "ifft": (
            lambda v: topos.fft.ifft(v, axis=0),
            lambda a: pairs_of(np.fft.ifft(complex_of(a), axis=0)),
        ),
        "rfft": (
            lambda v: topos.fft.rfft(v, axis=0),
            lambda a: pairs_of(np.fft.rfft(a.astype(np.float64), axis=0)),
        ),
        "irfft": (
            lambda v: topos.fft.irfft(v, n, axis=0),
            lambda a: np.fft.irfft(complex_of(a), n, axis=0),
        ),
    }[name]
    shape = {"rfft": (n, 3), "irfft": (n // 2 + 1, 3, 2)}.get(name, (n, 3, 2))
    array = rng.standard_normal(shape).astype(np.float32)
    got, plan, run = on_webgpu(record[0], array)
    assert_on_device(plan, run)
    want = record[1](array)
    # The same transforms along the last axis, where the bound above is written.
    moved = np.moveaxis(array, 0, -2 if name in ("fft", "ifft", "irfft") else -1)
    moved_got = np.moveaxis(got, 0, -2 if name != "irfft" else -1)
    moved_want = np.moveaxis(want, 0, -2 if name != "irfft" else -1)
    error, bound, how = errors_and_bounds(name, moved_got, moved_want, TRANSFORMS[name][3](moved, n), n)
    assert (error <= bound).all(), f"{name} along axis 0: {how} error {error.max():.3g} over {bound.min():.3g}"
    entry = {"ifft": "fft"}.get(name, name)
    assert {launch.entry for launch in plan.kernels().launches if launch.kernel == "fft"} == {entry}


@pytest.mark.parametrize("n", [12, 1000, 1023])
def test_the_twiddles_are_within_their_bound(n):
    # The direct sum of an impulse at entry 1 is z[1] times each twiddle exp(-2 pi i k / n): a product
    # by (1, 0) and sums with exact zeros, so the kernel's twiddles themselves come back.
    impulse = np.zeros((1, n, 2), np.float32)
    impulse[0, 1, 0] = 1.0
    got, plan, run = on_webgpu(topos.fft.fft, impulse)
    assert [launch.entry for launch in plan.kernels().launches] == ["dft"]
    exact = np.exp(-2j * np.pi * np.arange(n) / n)
    error = np.abs(complex_of(got[0]) - exact)
    assert error.max() <= MU, f"a twiddle is {error.max() / UNIT:.1f} u away, over the bound of 32 u"
    # Exactly 1, -1, i and -i where they should be, so that a product by them only moves parts.
    for k in (0, n // 2, n // 4, 3 * n // 4):
        if 4 * k % n == 0:
            assert (complex_of(got[0, k]) == np.round(exact[k])).all()


def classes(array):
    """0 for NaN, 1 for +inf, -1 for -inf, 2 for a finite value."""
    return np.select([np.isnan(array), array == np.inf, array == -np.inf], [0, 1, -1], 2)


def special_rows(name, n):
    """Rows of normal values, each but the first holding special values where the docstring says
    numpy and the kernels agree on where they go."""
    rng = np.random.default_rng(n)
    nan, inf = np.nan, np.inf
    if name == "rfft":
        rows = rng.standard_normal((4, n))
        rows[1, 0], rows[2, 0], rows[3, 0] = nan, inf, -inf
        return rows.astype(np.float32)
    rows = rng.standard_normal((6, n // 2 + 1 if name == "irfft" else n, 2))
    if name == "irfft":
        rows[1, 0, 1] = nan  # dropped
        rows[2, -1, 1] = nan  # dropped for even n
        rows[3, 0, 0] = inf
        rows[4, 0, 0] = nan
        rows[5, 0] = -inf, nan
    else:
        rows[1, 3] = nan, nan
        rows[2, 0, 0] = inf
        rows[3, 0, 1] = -inf
        rows[4, 0, 0] = nan
        rows[5, 0] = -inf, inf
    return rows.astype(np.float32)


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("n", [8, 12])
def test_nan_and_infinities_land_where_numpys_do(name, n):
    record, _, exact, points, _ = TRANSFORMS[name]
    rows = special_rows(name, n)
    got, plan, run = on_webgpu(lambda v: record(v, n), rows)
    assert_on_device(plan, run)
    with np.errstate(all="ignore"):
        want = exact(rows, n)
    assert (classes(got) == classes(want)).all(), f"{name} n={n}: NaN or infinities differ from numpy's"
    # The finite parts are the transform of the rest, the special entry as zero.
    rest = np.where(np.isfinite(rows), rows, np.float32(0))
    got_rest = np.where(np.isfinite(got), got, 0.0)
    want_rest = np.where(np.isfinite(want), exact(rest, n), 0.0)
    error, bound, how = errors_and_bounds(name, got_rest, want_rest, points(rest, n), n)
    assert (error <= bound).all(), f"{name} n={n}: finite parts off by {error.max():.3g} ({how})"


def test_the_kernels_reading_names_the_fft_kernel_and_declines_past_its_largest_size():
    def reading(n):
        tape = Tape("float32")
        out = topos.fft.fft(tape.input(np.zeros((2, n, 2)), name="z"))
        plan = tape.seal().entry([out]).lower()
        return plan, plan.kernels()

    for n, entry in ((16, "fft"), (12, "dft"), (LARGEST, "fft")):
        plan, kernels = reading(n)
        assert [(launch.kernel, launch.entry) for launch in kernels.launches] == [("fft", entry)]
        assert f"fft:{entry}" in kernels.describe()
    for n in (LARGEST + 1, 2 * LARGEST):
        plan, kernels = reading(n)
        (reason,) = kernels.declined.values()
        assert reason == (
            f"a transform of {n} points is longer than the FFT kernel's {LARGEST}: one workgroup holds a "
            "transform, two arrays of n complex float32 values in WebGPU's 16 KiB of workgroup memory"
        )
        assert reason in kernels.describe()
    # Rfft's length is its operand's, Irfft's its n.
    tape = Tape("float32")
    x = tape.input(np.zeros((LARGEST + 1,)), name="x")
    spectrum = topos.fft.rfft(x)
    back = topos.fft.irfft(tape.input(np.zeros((LARGEST // 2 + 1, 2)), name="z"), LARGEST)
    plan = tape.seal().entry([spectrum, back]).lower()
    declined = {plan.nodes[i].opcode: why for i, why in plan.kernels().declined.items()}
    assert set(declined) == {"Rfft"} and f"{LARGEST + 1} points" in declined["Rfft"]


def test_a_declined_transform_still_runs_on_the_host_and_agrees():
    n = LARGEST + 1
    rng = np.random.default_rng(3)
    array = rng.standard_normal((1, n, 2)).astype(np.float32)
    got, plan, run = on_webgpu(topos.fft.fft, array)
    assert [run.backends[i] for i in plan.schedule if plan.nodes[i].opcode == "Fft"] == ["numpy"]
    # The host step is the interpreter's own forward: the same numbers.
    tape = Tape("float32")
    out = topos.fft.fft(tape.parameter(array))
    network = tape.seal()
    interpreted = network.entry([out]).lower().run(network.parameters()).of(out)
    assert (got == np.asarray(interpreted, np.float64)).all()
