"""Negative padding crops, in convolution and in pooling alike (issue 29, part 2).

``lax.conv_general_dilated`` and ``lax.reduce_window`` read a negative padding side as
that many elements cropped from the edge; ``topos.conv`` has always done so. Pooling
reads it the same way: ``max_pool`` and ``avg_pool`` are checked here against
``lax.reduce_window`` on the same (partly negative) padding, their gradients against
JAX's on the cropped input (JAX itself does not differentiate a negative window
padding), and a 1x1 convolution against a 1x1 pooling, so that the two agree on which
elements a padding crops and which it adds.
"""

import jax
import numpy as np
import pytest
from jax import lax
from tolerances import sum_bound, unit_roundoff

import topos
from topos import ShapeError, Tape

jax.config.update("jax_enable_x64", True)

# (window, stride, padding as (low, high) pairs per spatial axis): each crops on some side.
CASES = [
    ((2, 2), (2, 2), ((-1, 1), (0, -2))),
    ((3, 2), (1, 2), ((-2, 0), (1, -1))),
    ((2, 3), (1, 1), ((-1, -1), (-2, 2))),
]


def _image():
    return np.random.default_rng(29).normal(size=(2, 3, 7, 8))


def _lax_pool(x, window, stride, padding, init, reduce):
    return np.asarray(lax.reduce_window(x, init, reduce, (1, 1) + window, (1, 1) + stride, ((0, 0), (0, 0)) + padding))


def _recorded(function, image, window, stride, padding):
    network, (x, out) = Tape.record(lambda tape: [(x := tape.input(image)), function(x, window, stride, padding)])
    return network, x, out


@pytest.mark.parametrize(("window", "stride", "padding"), CASES)
def test_max_pool_crops_as_lax_reduce_window_does(window, stride, padding):
    image = _image()
    network, _, out = _recorded(topos.max_pool, image, window, stride, padding)
    got = network.forward(network.parameters()).of(out).numpy()
    # A maximum is one of its operands, whatever the order: exact.
    np.testing.assert_array_equal(got, _lax_pool(image, window, stride, padding, -np.inf, lax.max))


@pytest.mark.parametrize(("window", "stride", "padding"), CASES)
def test_avg_pool_crops_as_lax_reduce_window_does(window, stride, padding):
    image = _image()
    size = window[0] * window[1]
    network, _, out = _recorded(topos.avg_pool, image, window, stride, padding)
    got = network.forward(network.parameters()).of(out).numpy()
    expected = _lax_pool(image, window, stride, padding, 0.0, lax.add) / size
    # Two orders of the same window sum, then one division each.
    magnitude = _lax_pool(np.abs(image), window, stride, padding, 0.0, lax.add) / size
    bound = sum_bound(magnitude, size, "float64").value + 2 * unit_roundoff("float64") * np.abs(expected)
    assert np.all(np.abs(got - expected) <= bound)


@pytest.mark.parametrize(("window", "stride", "padding"), CASES)
def test_the_gradient_of_a_cropping_max_pool_is_jaxs_on_the_cropped_input(window, stride, padding):
    image = _image()
    network, (x, out, total) = Tape.record(
        lambda tape: [(x := tape.input(image)), (y := topos.max_pool(x, window, stride, padding)), (y * y).sum()]
    )
    got = network.forward(network.parameters()).backward(total).of(x).numpy()
    crop = tuple(slice(max(-low, 0), n - max(-high, 0)) for n, (low, high) in zip(image.shape[2:], padding))
    kept = tuple((max(low, 0), max(high, 0)) for low, high in padding)

    def loss(cropped):
        pooled = lax.reduce_window(cropped, -np.inf, lax.max, (1, 1) + window, (1, 1) + stride, ((0, 0), (0, 0)) + kept)
        return (pooled * pooled).sum()

    expected = np.zeros_like(image)
    expected[(slice(None), slice(None)) + crop] = jax.grad(loss)(image[(slice(None), slice(None)) + crop])
    # Each element's gradient is 2 y summed over the windows that select it (at most
    # ceil(window / stride) per axis, 4 here): the same few products in another order.
    terms = int(np.prod([-(-w // s) for w, s in zip(window, stride)]))
    bound = sum_bound(np.abs(expected), terms, "float64").value
    assert np.all(np.abs(got - expected) <= bound)
    outside = np.ones(image.shape, bool)
    outside[(slice(None), slice(None)) + crop] = False
    assert np.all(got[outside] == 0.0)  # the cropped elements have no gradient


@pytest.mark.parametrize("padding", [((-1, 1), (0, -2)), ((1, -3), (-1, 1)), -1])
def test_convolution_and_pooling_crop_and_pad_the_same_elements(padding):
    image = _image()
    channels = image.shape[1]

    def build(tape):
        x = tape.input(image)
        quarter = tape.input(np.full((channels, 1, 2, 2), 0.25))  # each channel's own 2x2 mean
        return [
            topos.conv2d(x, quarter, padding=padding, groups=channels),
            topos.avg_pool(x, 2, stride=1, padding=padding),
        ]

    network, (convolved, pooled) = Tape.record(build)
    run = network.forward(network.parameters())
    pairs = ((padding, padding),) * 2 if isinstance(padding, int) else padding
    assert run.of(pooled).shape[2:] == tuple(n + low + high - 1 for n, (low, high) in zip(image.shape[2:], pairs))
    # The same four elements (or padding zeros) in each window: a sum of four quarters
    # against a quarter of a sum of four, within two orders of four terms and a rounding.
    magnitude = _lax_pool(np.abs(image), (2, 2), (1, 1), pairs, 0.0, lax.add) / 4
    bound = sum_bound(magnitude, 4, "float64").value + 2 * unit_roundoff("float64") * magnitude
    assert np.all(np.abs(run.of(convolved).numpy() - run.of(pooled).numpy()) <= bound)


def test_a_crop_longer_than_the_axis_is_refused_at_the_users_line():
    x = Tape().input(_image())
    with pytest.raises(ShapeError, match="crops more than the 7 elements") as caught:
        topos.max_pool(x, 2, padding=((-4, -4), (0, 0)))
    assert caught.value.source == (__file__, caught.tb.tb_lineno)
