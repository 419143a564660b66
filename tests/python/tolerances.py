"""Bounds that follow from the computation, for comparing two computations that round differently.

Two runs of the same arithmetic agree to the last bit only when they perform the same operations in
the same order. Eight devices against one, XLA against numpy, WGSL on lavapipe against numpy, Pyodide
against native numpy and torch against topos all sum in different orders (and a CPU's vectorised
``exp`` or ``matmul`` differs in the last bit between AMD and Intel), so a tolerance between them that
was set to what one machine happened to produce fails on the next. Each function here derives its
bound from what is computed (how many terms a sum has, their magnitude, the dtype's rounding, the
optimizer's step size) and carries a sentence saying why, which ``assert_close`` prints on failure.

The rules (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., chapters 2 and 3):

- ``u`` is the unit roundoff, half the dtype's machine epsilon (2^-24 for float32, 2^-53 for float64).
- A sum of ``n`` terms, in any order, is within ``gamma(n - 1) = (n - 1) u / (1 - (n - 1) u)`` times
  ``sum |terms|`` of the exact sum (Higham 4.4); a dot product of length ``n`` within ``gamma(n)``
  times ``sum |a_i b_i|`` (Higham 3.5). Two orders are each within that of the exact value, so they
  differ from each other by at most twice as much.
- A correctly rounded elementwise op is within half an ulp; libm's and SIMD ``exp``, ``log`` and
  ``tanh`` promise a few ulps, so two of them differ by a few ulps of the result.
- Adam's step moves each parameter by ``lr`` times ``m_hat / (sqrt(v_hat) + eps)``, which is at most
  ``adam_step_ratio(t)`` (about 1 in the first steps) whatever the gradients are. When a gradient is
  rounding noise, its sign can differ between two runs, and so can the direction of the step: two
  runs may then differ by both runs' whole movement, ``2 lr sum_t adam_step_ratio(t)``. A parameter
  whose gradient is resolved moves the same way in both runs, up to the gradient's relative rounding,
  so most parameters agree far more closely than that (``assert_trained_close``).

Where the terms' magnitudes are at hand, ``sum_bound`` (worst case), ``blocked_sum_bound`` (the
kernels' documented ``4 sqrt(n) u sum |terms|``) and ``matmul_bound`` use them; where they are not,
``scaled_bound``, ``library_bound`` and ``training_bound`` judge against the result's largest
magnitude, and ``loss_bound`` against the loss. JavaScript copies of a rule say so and point here.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bound:
    """The largest difference allowed, elementwise (or one number for every element), and why."""

    value: object
    why: str

    def plus(self, other):
        """Both errors at once (a sum's rounding carried through a product, and the product's own)."""
        return Bound(np.add(self.value, other.value), f"{self.why}; plus {other.why}")


def unit_roundoff(dtype):
    """Half the machine epsilon: the largest relative error of one correctly rounded operation."""
    return float(np.finfo(np.dtype(dtype)).eps) / 2.0


def gamma(n, dtype):
    """Higham's ``gamma_n = n u / (1 - n u)``: the relative error bound of ``n`` successive roundings."""
    nu = max(int(n), 0) * unit_roundoff(dtype)
    if nu >= 1.0:
        raise ValueError(f"gamma({n}) is unbounded in {np.dtype(dtype).name}: n u = {nu:.3g} reaches 1")
    return nu / (1.0 - nu)


def sum_bound(magnitude, n, dtype):
    """Two sums of the same ``n`` terms in different orders: each within ``gamma(n - 1) sum |terms|`` of
    the exact sum, so within twice that of each other. ``magnitude`` is ``sum |terms|`` (elementwise)."""
    factor = 2.0 * gamma(max(n - 1, 0), dtype)
    magnitude = np.asarray(magnitude, dtype=np.float64)
    return Bound(factor * magnitude, f"two orders of a sum of {n} terms: 2 gamma_{n - 1} sum|terms| ({factor:.3g})")


def blocked_sum_bound(magnitude, n, dtype, k=4.0):
    """A sum of ``n`` terms in some blocked or vectorised order, against the exact sum: rounding errors
    of independent signs grow like ``sqrt(n) u`` (Higham 2.8) rather than the worst case's ``n u``, so
    ``k sqrt(n) u sum |terms|`` (tests/cases/README.md's rule for the WGSL kernels). Tighter than
    ``sum_bound`` by ``sqrt(n)``, which keeps a dropped or doubled term visible in a long sum."""
    factor = k * np.sqrt(max(n, 1)) * unit_roundoff(dtype)
    value = factor * np.asarray(magnitude, dtype=np.float64)
    return Bound(value, f"a blocked sum of {n} terms: {k:g} sqrt(n) u sum|terms| ({factor:.3g})")


def matmul_bound(a, b, dtype):
    """Two evaluations of ``a @ b`` (blocked, split over devices, on another CPU's kernels): each element is
    a dot product of ``k`` terms, within ``gamma(k) sum |a_ik b_kj|`` of exact, so within twice that."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    k = a.shape[-1]
    factor = 2.0 * gamma(k, dtype)
    return Bound(factor * (np.abs(a) @ np.abs(b)), f"two orders of dot products of {k} terms: 2 gamma_{k} |a||b|")


def elementwise_bound(expected, dtype, ulps=4):
    """Elementwise transcendental ops (exp, log, tanh, erf) through two libraries: each promises a few
    ulps of the result, so they differ by ``ulps`` units in the last place of the expected value."""
    expected = np.abs(np.asarray(expected, dtype=np.float64))
    tiny = float(np.finfo(np.dtype(dtype)).tiny)
    value = ulps * 2.0 * unit_roundoff(dtype) * np.maximum(expected, tiny)
    return Bound(value, f"{ulps} ulps of each {np.dtype(dtype).name} result (two libraries' exp/log/tanh)")


def scaled_bound(expected, dtype, terms, k=4.0):
    """A chain of reductions of up to ``terms`` terms each, judged against the result's largest magnitude:
    rounding errors of independent signs grow like ``sqrt(n) u`` (Higham 2.8), and ``k`` covers the few
    reductions in a row. For results (gradients, a network's outputs) whose terms' magnitudes are not at
    hand; near-zero elements are judged by the scale of the whole result, not their own."""
    scale = float(np.max(np.abs(np.asarray(expected, dtype=np.float64)), initial=0.0))
    factor = k * np.sqrt(max(terms, 1)) * unit_roundoff(dtype)
    return Bound(
        factor * max(scale, float(np.finfo(np.dtype(dtype)).tiny)),
        f"reductions of up to {terms} terms: {k:g} sqrt(n) u of the largest magnitude {scale:.3g}",
    )


#: Two libraries' elementwise functions (torch's against numpy's ``exp``, ``log1p``, ``erf``) are each a
#: few ulps, and a composite or a derivative chains up to ten of them with condition numbers of a few:
#: 1e-5 is 84 float32 epsilons. In float64 the libraries differ by formula more than by rounding (torch
#: switches softplus to ``x`` past its threshold, 2e-9 away at 20), which 1e-10 covers where it is used.
LIBRARY_RTOL = {"float32": 1e-5, "float64": 1e-10}
#: The absolute floor for results near zero computed from inputs of order 1: about 16 float32 (and
#: 9,000 float64) unit roundoffs of such an input.
LIBRARY_FLOOR = {"float32": 1e-6, "float64": 1e-12}


def library_bound(expected, dtype, terms):
    """One op computed by two libraries (torch or a WGSL kernel against topos's numpy), forward or backward: the
    elementwise part relative to each result (``LIBRARY_RTOL``), plus the sums of up to ``terms`` terms
    that each library orders its own way, ``4 sqrt(n) u`` of the largest result (``scaled_bound``),
    never below ``LIBRARY_FLOOR``. A matrix product of large values whose exact element is near zero
    keeps rounding of its terms' size, which a fixed absolute floor cannot know."""
    dtype = np.dtype(dtype).name
    expected = np.asarray(expected, dtype=np.float64)
    summed = scaled_bound(expected, dtype, terms)
    floor = max(float(summed.value), LIBRARY_FLOOR[dtype])
    return Bound(
        LIBRARY_RTOL[dtype] * np.abs(expected) + floor,
        f"two libraries: {LIBRARY_RTOL[dtype]:g} of each result, plus {floor:.3g} ({summed.why})",
    )


def training_bound(expected, dtype, terms, steps, k=8.0):
    """Parameters or optimizer state after ``steps`` updates that are linear in the gradients (SGD, its
    momentum, Adam's moments), in two runs that round differently: each step adds the gradients'
    rounding, ``k sqrt(n) u`` of the largest magnitude (``n`` the widest reduction's terms), so after
    ``steps`` steps up to ``steps`` times that. Not for Adam's parameters: see ``adam_parameter_bound``."""
    bound = scaled_bound(expected, dtype, terms, k=k * steps)
    return Bound(bound.value, f"{steps} steps linear in the gradients: {bound.why}")


def adam_step_ratio(step, betas=(0.9, 0.999)):
    """The most that ``|m_hat / sqrt(v_hat)|`` can be at Adam's ``step`` (counting from 1), whatever the
    gradients: by Cauchy-Schwarz on the two moving averages, ``(1 - b1) / (1 - b1^t) * sqrt((1 - b2^t) /
    (1 - b2)) * sqrt(sum_{k<t} (b1^2 / b2)^k)``. It is 1 at the first step and near 1 for the next few."""
    beta1, beta2 = betas
    ratio = beta1 * beta1 / beta2
    spread = sum(ratio**k for k in range(step))
    return (1 - beta1) / (1 - beta1**step) * np.sqrt((1 - beta2**step) / (1 - beta2) * spread)


def adam_parameter_bound(lr, steps, betas=(0.9, 0.999)):
    """Two Adam runs from the same parameters, with gradients that differ by rounding: a parameter whose
    gradient is rounding noise may step either way, so the runs can differ by both runs' whole movement.
    It holds for Adam's L2 weight decay (part of the gradient) and for AdamW's decoupled decay (which
    shrinks both runs' parameters alike, and so their difference). Adam's ``eps`` only shortens a step:
    a float64 noise gradient of 1e-17 moves its parameter by ``lr * 1e-9``, a float32 one near
    ``eps`` (1e-8) by up to ``lr``, which is where this bound is reached."""
    movement = lr * sum(adam_step_ratio(t, betas) for t in range(1, steps + 1))
    return Bound(2.0 * movement, f"Adam lr {lr:g}, {steps} steps: a noise gradient's step may go either way")


def loss_bound(losses, dtype, terms, k=8.0):
    """A training curve (one loss a step, from the first) of two runs that round differently: the first
    loss differs by the forward's reductions (``k sqrt(n) u`` of the loss, ``n`` the widest reduction's
    terms); each later loss also carries the parameters' rounding from the steps before, so the bound
    grows by as much again each step. An elementwise ``exp`` or ``log`` off by a few ulps (WGSL allows
    ``3 + 2|x|``) moves a mean cross-entropy by about as much absolutely, well inside this.
    tests/browser/webgpu-python.test.mjs holds a JavaScript copy of this rule."""
    expected = np.abs(np.asarray(losses, dtype=np.float64))
    growth = np.arange(1, expected.size + 1, dtype=np.float64).reshape(expected.shape)
    factor = k * np.sqrt(max(terms, 1)) * unit_roundoff(dtype)
    return Bound(factor * growth * expected, f"losses: {k:g} sqrt({terms}) u of the loss, once more each step")


def assert_close(actual, expected, bound, what):
    """Every element of ``actual`` is within ``bound`` (a ``Bound``, elementwise or scalar) of ``expected``;
    otherwise name the worst element (by its excess over its bound), the bound there, and why it is that.
    NaN and infinities must sit at the same places with the same values."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    limit = np.broadcast_to(np.asarray(bound.value, dtype=np.float64), expected.shape)
    finite = np.isfinite(expected)
    same_special = np.array_equal(actual[~finite], expected[~finite], equal_nan=True)
    assert same_special, f"{what}: non-finite values differ ({actual[~finite]} against {expected[~finite]})"
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: judged above, not here
        error = np.where(finite, np.abs(actual - expected), 0.0)
    error = np.where(np.isnan(error), np.inf, error)
    over = error > limit
    if over.any():
        worst = np.unravel_index(int(np.argmax(np.where(over, error - limit, -np.inf))), expected.shape)
        raise AssertionError(
            f"{what}: {int(over.sum())} of {expected.size} elements outside the bound; worst at {tuple(map(int, worst))}:"
            f" {actual[worst]!r} against {expected[worst]!r}, off by {error[worst]:.3g} > bound {limit[worst]:.3g}"
            f" ({bound.why})"
        )


def assert_trained_close(actual, expected, lr, steps, what, betas=(0.9, 0.999), bulk=1e-3):
    """Parameters after ``steps`` Adam steps in two runs that round differently: each within Adam's
    promise (``adam_parameter_bound``), and the median difference within ``bulk`` of one run's whole
    movement. A parameter whose gradient is resolved steps the same way in both runs, up to the
    gradient's relative rounding (``sqrt(n) u``, about 1e-5 for float32 sums of a few hundred terms),
    so a thousandth leaves a wide margin; a wrong gradient or a missing all-reduce moves most
    parameters by a sizeable part of a step. ``actual`` and ``expected`` are arrays, or two networks'
    ``Parameters`` (every slot, in slot order, as one array)."""
    actual, expected = _flat(actual), _flat(expected)
    every = adam_parameter_bound(lr, steps, betas)
    assert_close(actual, expected, every, f"{what}, every parameter")
    typical = float(np.median(np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64))))
    allowed = bulk * every.value / 2.0
    assert typical <= allowed, (
        f"{what}: the median parameter is off by {typical:.3g} > {allowed:.3g}, {bulk:g} of one run's movement"
        " (a resolved gradient steps the same way in both runs)"
    )


def _flat(parameters):
    """A ``Parameters``' slots in slot order as one array; an array as it is."""
    if hasattr(parameters, "slots"):
        return np.concatenate([np.ravel(parameters.slots[index]) for index in sorted(parameters.slots)])
    return parameters
