"""topos.fft against numpy.fft (values), torch.fft (gradients and second derivatives) and XLA.

Complex values are real/imaginary pairs (a trailing axis of 2, ``topos.ops.fft``); each case
converts them to numpy's and torch's complex arrays at the boundary.
"""

import numpy as np
import pytest
import torch
from tolerances import assert_close, library_bound

import topos
from topos import Tape


def pairs_to_complex(values):
    values = np.asarray(values)
    return values[..., 0] + 1j * values[..., 1]


def numpy_result(value):
    return np.stack([value.real, value.imag], -1) if np.iscomplexobj(value) else value


def torch_result(value):
    return torch.view_as_real(value) if value.is_complex() else value


# (name, input shape, whether the input is pairs, topos spelling, numpy spelling, torch spelling)
CASES = [
    ("fft", (3, 6, 2), True, lambda z: topos.fft.fft(z), np.fft.fft, torch.fft.fft),
    (
        "fft_odd_axis0",
        (5, 4, 2),
        True,
        lambda z: topos.fft.fft(z, axis=0),
        lambda z: np.fft.fft(z, axis=0),
        lambda z: torch.fft.fft(z, dim=0),
    ),
    (
        "fft_padded_ortho",
        (2, 5, 2),
        True,
        lambda z: topos.fft.fft(z, n=8, norm="ortho"),
        lambda z: np.fft.fft(z, n=8, norm="ortho"),
        lambda z: torch.fft.fft(z, n=8, norm="ortho"),
    ),
    (
        "ifft_cut",
        (2, 7, 2),
        True,
        lambda z: topos.fft.ifft(z, n=4),
        lambda z: np.fft.ifft(z, n=4),
        lambda z: torch.fft.ifft(z, n=4),
    ),
    (
        "ifft_forward",
        (6, 2),
        True,
        lambda z: topos.fft.ifft(z, norm="forward"),
        lambda z: np.fft.ifft(z, norm="forward"),
        lambda z: torch.fft.ifft(z, norm="forward"),
    ),
    ("rfft_even", (3, 8), False, lambda x: topos.fft.rfft(x), np.fft.rfft, torch.fft.rfft),
    (
        "rfft_odd_axis0",
        (7, 3),
        False,
        lambda x: topos.fft.rfft(x, axis=0),
        lambda x: np.fft.rfft(x, axis=0),
        lambda x: torch.fft.rfft(x, dim=0),
    ),
    ("irfft_even", (3, 5, 2), True, lambda z: topos.fft.irfft(z), np.fft.irfft, torch.fft.irfft),
    (
        "irfft_odd",
        (2, 4, 2),
        True,
        lambda z: topos.fft.irfft(z, n=7),
        lambda z: np.fft.irfft(z, n=7),
        lambda z: torch.fft.irfft(z, n=7),
    ),
    (
        "irfft_axis0_ortho",
        (4, 3, 2),
        True,
        lambda z: topos.fft.irfft(z, n=6, axis=0, norm="ortho"),
        lambda z: np.fft.irfft(z, n=6, axis=0, norm="ortho"),
        lambda z: torch.fft.irfft(z, n=6, dim=0, norm="ortho"),
    ),
    (
        "irfft_one",
        (1, 2),
        True,
        lambda z: topos.fft.irfft(z, n=1),
        lambda z: np.fft.irfft(z, n=1),
        lambda z: torch.fft.irfft(z, n=1),
    ),
    ("fft2", (2, 3, 4, 2), True, lambda z: topos.fft.fft2(z), np.fft.fft2, torch.fft.fft2),
    (
        "ifft2_axes",
        (3, 2, 5, 2),
        True,
        lambda z: topos.fft.ifft2(z, axes=(0, 2)),
        lambda z: np.fft.ifft2(z, axes=(0, 2)),
        lambda z: torch.fft.ifft2(z, dim=(0, 2)),
    ),
]
IDS = [case[0] for case in CASES]


def draw(case, seed=0):
    return np.random.default_rng(seed).normal(size=case[1])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_agree_with_numpy_fft(case, dtype):
    name, _, is_pairs, function, numpy_function, _ = case
    data = draw(case)

    def build(tape):
        return [function(tape.parameter(data))]

    network, (out,) = Tape.record(build, dtype=dtype)
    got = np.asarray(network.forward(network.parameters()).of(out))
    expected = numpy_result(numpy_function(pairs_to_complex(data) if is_pairs else data))
    assert got.dtype == np.dtype(dtype)
    assert_close(got, expected, library_bound(expected, dtype, data.size), name)


def loss_of(out, weights):
    # A smooth, nonlinear loss, so that the transforms' second derivatives are not all zero.
    return (out.tanh() * weights).sum() if hasattr(out, "tanh") else (torch.tanh(out) * weights).sum()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_and_second_derivative_agree_with_torch_fft(case):
    name, shape, is_pairs, function, _, torch_function = case
    data = draw(case)
    vector = draw(case, seed=1)
    out_shape = numpy_result(case[4](pairs_to_complex(data) if is_pairs else data)).shape
    weights = np.random.default_rng(2).uniform(-1.0, 1.0, out_shape)

    def build(tape):
        x = tape.parameter(data)
        loss = (topos.tanh(function(x)) * tape.leaf(weights)).sum()
        return [topos.grad(loss, x), topos.hvp(loss, x, tape.leaf(vector))]

    network, (gradient, second) = Tape.record(build)
    run = network.forward(network.parameters())

    x = torch.tensor(data, requires_grad=True)
    operand = torch.view_as_complex(x) if is_pairs else x
    loss = (torch.tanh(torch_result(torch_function(operand))) * torch.tensor(weights)).sum()
    (expected,) = torch.autograd.grad(loss, x, create_graph=True)
    (expected_second,) = torch.autograd.grad((expected * torch.tensor(vector)).sum(), x)
    for got, want, what in ((gradient, expected, "gradient"), (second, expected_second, "second derivative")):
        want = want.detach().numpy()
        assert np.allclose(np.asarray(run.of(got)), want, rtol=1e-8, atol=1e-12), f"{name}: {what}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_xla_runs_the_forward_and_backward_equal_to_the_interpreter(case, dtype):
    name, _, _, function, _, _ = case
    data = draw(case)

    def build(tape):
        x = tape.parameter(data)
        out = function(x)
        loss = (topos.tanh(out) * 0.5).sum()
        # A second derivative recorded on the tape: its transforms' adjoints' adjoints lower too.
        second = topos.hvp(loss, x, tape.leaf(np.ones_like(data)))
        return [x, out, loss, second]

    network, (x, out, loss, second) = Tape.record(build, dtype=dtype)
    plan = network.entry([out, loss, second]).backward(loss, [x]).lower()
    assert "stablehlo.fft" in plan.emit_stablehlo()
    numpy_run = plan.run(network.parameters())
    xla_run = plan.run(network.parameters(), backend="xla")
    for got, expected in zip(xla_run.outputs(), numpy_run.outputs()):
        assert_close(got, expected, library_bound(expected, dtype, data.size), f"{name} output")
    expected = numpy_run.gradient(x)
    assert_close(xla_run.gradient(x), expected, library_bound(expected, dtype, data.size), f"{name} gradient")


def test_irfft_ignores_the_imaginary_parts_numpy_ignores_and_its_gradient_there_is_zero():
    spectrum = np.random.default_rng(3).normal(size=(5, 2))

    def build(tape):
        z = tape.parameter(spectrum)
        return [z, topos.fft.irfft(z).sum()]

    network, (z, total) = Tape.record(build)
    run = network.forward(network.parameters())
    # n = 8: the imaginary parts of entries 0 and 4 do not reach the result.
    gradient = np.asarray(run.backward(total).of(z))
    assert gradient[0, 1] == 0.0 and gradient[4, 1] == 0.0
    shifted = spectrum.copy()
    shifted[[0, 4], 1] += 5.0
    assert np.allclose(np.fft.irfft(pairs_to_complex(shifted)), np.fft.irfft(pairs_to_complex(spectrum)))


def test_plan_cost_counts_five_n_log_n_a_transform_and_webgpu_runs_it_in_the_fft_kernel():
    def build(tape):
        z = tape.parameter(np.zeros((3, 16, 2)))
        return [topos.fft.fft(z)]

    network, (out,) = Tape.record(build, dtype="float32")
    plan = network.entry([out]).lower()
    assert "[960 flops" in plan.describe(costs=True)  # 3 transforms of 5 * 16 * log2(16) = 320
    # A power of two takes the Stockham entry (tests/python/test_kernels_fft.py holds its values).
    kernels = plan.kernels()
    assert [(launch.kernel, launch.entry) for launch in kernels.launches] == [("fft", "fft")]
    assert not kernels.declined


def test_pairs_helpers_read_and_make_complex_values():
    re, im = np.array([3.0, 0.0, -1.0]), np.array([4.0, 2.0, 0.0])

    def build(tape):
        z = topos.fft.complex(tape.parameter(re), tape.parameter(im))
        return [z, topos.fft.real(z), topos.fft.imag(z), topos.fft.abs(z)]

    network, values = Tape.record(build)
    run = network.forward(network.parameters())
    z, real, imag, magnitude = (np.asarray(run.of(v)) for v in values)
    assert np.array_equal(z, np.stack([re, im], -1))
    assert np.array_equal(real, re) and np.array_equal(imag, im)
    assert np.allclose(magnitude, np.abs(re + 1j * im))


def test_pairs_are_required_where_a_transform_takes_complex_values():
    tape = Tape()
    with pytest.raises(ValueError, match="real/imaginary pairs"):
        topos.fft.fft(tape.parameter(np.zeros((4, 3))))
    with pytest.raises(ValueError, match="norm"):
        topos.fft.rfft(tape.parameter(np.zeros(4)), norm="unitary")


def test_the_gallery_filter_learns_a_low_pass_filter_through_rfft_and_irfft():
    import runpy
    from pathlib import Path

    from topos import show

    class Quiet:
        def card(self, card):
            pass

        def progress(self, step, total):
            pass

    script = Path(__file__).parents[2] / "docs" / "examples" / "10_spectral_filter.py"
    with show.watch(Quiet()):
        namespace = runpy.run_path(str(script), run_name="__main__")
    gains, passband = namespace["gains"], namespace["PASS"]
    # The clean signals hold frequencies 1..PASS only: the fitted gains pass those and stop the noise above.
    assert np.all(gains[1 : passband + 1] > 0.8)
    assert np.all(np.abs(gains[passband + 1 :]) < 0.2)
    assert namespace["losses"][-1] < 0.2 * namespace["before"]


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_nan_spreads_over_its_transformed_axis_as_numpy_fft_spreads_it(backend):
    data = np.random.default_rng(4).normal(size=(2, 8))
    data[0, 3] = np.nan

    def build(tape):
        return [topos.fft.rfft(tape.parameter(data))]

    network, (out,) = Tape.record(build)
    got = np.asarray(network.entry([out]).lower().run(network.parameters(), backend=backend).outputs()[0])
    expected = np.fft.rfft(data)
    # Every frequency of the signal with the NaN is NaN (in one part at least), the other signal finite.
    assert np.array_equal(np.isnan(got[0]).any(-1), np.isnan(expected[0]))
    assert np.isnan(expected[0]).all() and np.isfinite(got[1]).all()
