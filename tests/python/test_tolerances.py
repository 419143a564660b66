"""The shared bounds of tolerances.py hold for the computations they describe, and are not vacuous.

Each bound is checked two ways: real computations that round differently (a float32 sum in two
orders, a blocked matrix product against numpy's, torch's Adam on chosen gradients) stay inside it,
and a difference beyond it is caught, with a message that names the worst element and the reason.
"""

import numpy as np
import pytest
import torch
from tolerances import (
    adam_parameter_bound,
    adam_step_ratio,
    assert_close,
    assert_trained_close,
    blocked_sum_bound,
    elementwise_bound,
    gamma,
    library_bound,
    loss_bound,
    matmul_bound,
    scaled_bound,
    sum_bound,
    training_bound,
)


def test_gamma_grows_with_the_terms_and_with_the_dtypes_rounding():
    assert gamma(0, "float32") == 0.0
    assert gamma(10, "float32") < gamma(100, "float32") < gamma(1000, "float32")
    assert gamma(1000, "float64") < gamma(1000, "float32")
    assert gamma(1, "float32") == pytest.approx(2.0**-24, rel=1e-6)
    with pytest.raises(ValueError, match="unbounded"):
        gamma(2**24, "float32")


@pytest.mark.parametrize("n", [7, 1000, 100_000])
def test_two_orders_of_a_float32_sum_stay_within_the_sum_bound(n):
    rng = np.random.default_rng(n)
    # Terms of mixed signs and magnitudes, so that the sum cancels and its rounding is not relative to it.
    terms = (rng.standard_normal(n) * np.exp(rng.uniform(-4, 4, n))).astype(np.float32)
    pairwise = np.sum(terms, dtype=np.float32)
    sequential = np.cumsum(terms, dtype=np.float32)[-1]
    bound = sum_bound(np.sum(np.abs(terms.astype(np.float64))), n, "float32")
    assert_close(sequential, pairwise, bound, f"a sum of {n} terms in two orders")
    assert_close(sequential, np.sum(terms, dtype=np.float64), bound, "against the exact sum")


def test_a_blocked_float32_product_stays_within_the_matmul_bound_and_a_wrong_one_does_not():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((17, 640)).astype(np.float32)
    b = rng.standard_normal((640, 9)).astype(np.float32)
    # Eight devices' partial products, summed afterwards: another order than one product.
    blocked = sum(a[:, k : k + 80] @ b[k : k + 80] for k in range(0, 640, 80))
    bound = matmul_bound(a, b, "float32")
    assert_close(blocked, a @ b, bound, "a product split in eight")
    wrong = (a @ b).copy()
    wrong[4, 2] += 3 * float(bound.value[4, 2])
    with pytest.raises(AssertionError, match=r"1 of 153 elements outside the bound; worst at \(4, 2\)"):
        assert_close(wrong, a @ b, bound, "a product off by three bounds")


def test_elementwise_bound_is_a_few_ulps_of_the_result():
    x = np.linspace(-5, 5, 101).astype(np.float32)
    exact = np.exp(x.astype(np.float64))
    float32 = np.exp(x)
    assert_close(float32, exact, elementwise_bound(exact, "float32"), "float32 exp against float64")
    with pytest.raises(AssertionError, match="ulps"):
        assert_close(float32 * (1 + 2.0**-20), exact, elementwise_bound(exact, "float32"), "exp off by 16 ulps")


def test_scaled_bound_judges_near_zero_elements_by_the_results_scale():
    expected = np.array([1e3, 1e-9, -2.0])
    bound = scaled_bound(expected, "float32", terms=256)
    assert_close(expected + np.array([0.0, 1e-5, 1e-5]), expected, bound, "noise of 1e-5 at scale 1e3")
    with pytest.raises(AssertionError, match="of the largest magnitude 1e"):
        assert_close(expected + np.array([0.0, 1e-2, 0.0]), expected, bound, "off by 1e-2 at scale 1e3")


def torch_adam_path(gradients, lr, betas):
    """Where torch's Adam takes one parameter, from zero, after each step, fed these gradients."""
    parameter = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.Adam([parameter], lr=lr, betas=betas, eps=1e-300)
    path = []
    for gradient in gradients:
        parameter.grad = torch.tensor([gradient], dtype=torch.float64)
        optimizer.step()
        path.append(float(parameter.detach()[0]))
    return np.array(path)


def torch_adam_steps(gradients, lr, betas):
    """How far torch's Adam moves one parameter at each step."""
    return np.abs(np.diff(torch_adam_path(gradients, lr, betas), prepend=0.0))


@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.8, 0.99), (0.5, 0.9)])
def test_adams_step_never_passes_the_step_ratio_and_reaches_it(betas):
    lr, steps = 1e-2, 12
    beta1, beta2 = betas
    rng = np.random.default_rng(0)
    ratios = np.array([adam_step_ratio(t, betas) for t in range(1, steps + 1)])
    assert ratios[0] == pytest.approx(1.0) and np.all(np.diff(ratios) > 0)
    for _ in range(50):
        gradients = rng.standard_normal(steps) * np.exp(rng.uniform(-20, 20, steps))
        assert np.all(torch_adam_steps(gradients, lr, betas) <= lr * ratios * (1 + 1e-12))
    # Cauchy-Schwarz is tight when the gradients grow as (b2 / b1)^i: the last step moves by the ratio.
    for t in range(1, steps + 1):
        growing = [(beta2 / beta1) ** i for i in range(t)]
        assert torch_adam_steps(growing, lr, betas)[-1] == pytest.approx(lr * ratios[t - 1], rel=1e-9)


def test_two_adam_runs_whose_noise_gradients_flip_differ_by_up_to_the_parameter_bound():
    # A gradient that is rounding noise: the same size in two runs, its sign flipped by another order.
    lr, steps, noise = 1e-2, 3, [1e-9, 3e-10, 2e-9]
    one = torch_adam_path(noise, lr, (0.9, 0.999))[-1]
    other = torch_adam_path([-g for g in noise], lr, (0.9, 0.999))[-1]
    bound = adam_parameter_bound(lr, steps).value
    assert 0.9 * bound < abs(one - other) <= bound


def test_trained_parameters_pass_the_issues_amd_failure_and_catch_a_shift_of_most_parameters():
    rng = np.random.default_rng(1)
    one = rng.standard_normal(28544).astype(np.float32) * 0.1
    many = one + rng.standard_normal(one.size).astype(np.float32) * 2e-9
    # Issue 29: one weight of the transformer, after 3 Adam steps at lr 1e-2, on AMD EPYC.
    one[12504], many[12504] = 0.0211311, 0.0211837
    assert_trained_close(many, one, 1e-2, 3, "the issue's eight devices")
    with pytest.raises(AssertionError, match="every parameter.*Adam lr 0.01, 3 steps"):
        assert_trained_close(many + np.where(np.arange(one.size) == 7, 0.07, 0.0), one, 1e-2, 3, "one far off")
    with pytest.raises(AssertionError, match="the median parameter is off"):
        assert_trained_close(one + 1e-4, one, 1e-2, 3, "every weight a hundredth of a step off")


def test_loss_bound_grows_with_the_step_and_catches_a_wrong_loss():
    losses = np.array([3.7, 3.6, 3.4])
    bound = loss_bound(losses, "float32", terms=256)
    assert bound.value[0] < bound.value[2] and bound.value[2] < 1e-4 * losses[2]
    assert_close(losses * (1 + 1e-7), losses, bound, "losses a rounding apart")
    with pytest.raises(AssertionError, match=r"worst at \(1,\)"):
        assert_close(losses + np.array([0.0, 1e-3, 0.0]), losses, bound, "one loss off by 1e-3")


def test_assert_close_holds_non_finite_values_in_place():
    bound = sum_bound(1.0, 4, "float32")
    assert_close([np.inf, np.nan, 1.0], [np.inf, np.nan, 1.0], bound, "the same specials")
    with pytest.raises(AssertionError, match="non-finite values differ"):
        assert_close([np.inf, 1.0, 1.0], [np.inf, np.nan, 1.0], bound, "a NaN lost")
    with pytest.raises(AssertionError, match="outside the bound"):
        assert_close([1.0, np.nan], [1.0, 2.0], bound, "a NaN where a number is")


def test_library_bound_grows_with_the_terms_and_the_scale_and_keeps_its_floor():
    small = library_bound(np.array([0.0, 1.0]), "float32", terms=4)
    assert small.value[0] == pytest.approx(1e-6)  # the floor, for results near zero from inputs of order 1
    large = library_bound(np.array([0.0, 1e4]), "float32", terms=10_000)
    assert large.value[0] > 100 * small.value[0]  # a near-zero element beside a large one: the scale's rounding
    assert library_bound(np.array([0.0, 1.0]), "float64", terms=4).value[1] < small.value[1]
    # A product of large values whose exact element is near zero: its rounding is caught by the scale.
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((6, 300)) * 100, rng.standard_normal((300, 6)) * 100
    b[:, 0] -= a[0] @ b[:, 0] / (a[0] @ a[0]) * a[0]  # element (0, 0) is zero in exact arithmetic
    exact = a @ b
    rounded = a.astype(np.float32) @ b.astype(np.float32)
    assert_close(rounded, exact, matmul_bound(a, b, "float32"), "float32 product against float64")
    assert_close(rounded, exact, library_bound(exact, "float32", 300), "the same, by library_bound")


def test_training_bound_grows_with_the_steps():
    want = np.array([0.5, -2.0])
    assert training_bound(want, "float32", 16, 4).value == pytest.approx(
        4 * training_bound(want, "float32", 16, 1).value
    )
    with pytest.raises(AssertionError, match="4 steps linear in the gradients"):
        assert_close(want + 1e-4, want, training_bound(want, "float32", 16, 4), "moments a step apart")


def test_bounds_add_and_trained_parameters_may_be_given_as_parameters():
    both = sum_bound(10.0, 8, "float32").plus(elementwise_bound(1.0, "float32", 1))
    assert both.value == pytest.approx(sum_bound(10.0, 8, "float32").value + 2.0**-23)
    assert "plus 1 ulps" in both.why

    class Parameters:  # what topos.model.network.Parameters offers: slots by index
        def __init__(self, slots):
            self.slots = slots

    one = Parameters({3: np.zeros((3, 3)), 1: np.ones(5)})
    other = Parameters({1: np.ones(5), 3: np.zeros((3, 3)) + 0.05})
    with pytest.raises(AssertionError, match="the median parameter"):
        assert_trained_close(other, one, 1e-2, 3, "nine of fourteen elements shifted")
    far = np.zeros((3, 3))
    far[0, 0] = 1.0
    with pytest.raises(AssertionError, match=r"worst at \(5,\)"):  # slot 3 starts after slot 1's 5 elements
        assert_trained_close(Parameters({1: np.ones(5), 3: far}), one, 1e-2, 3, "one element far off")


def test_a_blocked_sum_stays_within_its_bound_and_a_dropped_term_does_not():
    rng = np.random.default_rng(9)
    terms = rng.standard_normal(4096).astype(np.float32)
    exact = np.sum(terms.astype(np.float64))
    bound = blocked_sum_bound(np.sum(np.abs(terms.astype(np.float64))), terms.size, "float32")
    assert bound.value < sum_bound(np.sum(np.abs(terms.astype(np.float64))), terms.size, "float32").value
    assert_close(np.sum(terms), exact, bound, "numpy's float32 sum")
    assert_close(np.cumsum(terms)[-1], exact, bound, "a running float32 sum")
    assert bound.value < 0.1  # so a dropped term of a tenth of a typical one's size shows
    small = np.argmin(np.abs(np.abs(terms) - 0.1))
    with pytest.raises(AssertionError, match="a blocked sum of 4096 terms"):
        assert_close(np.sum(np.delete(terms, small)), exact, bound, "a sum that dropped a term")
