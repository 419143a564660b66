"""Take and ScatterAdd give numpy's answer on each of their paths.

``ScatterAdd`` sums through ``np.add.at`` (a few rows), a product with a one-hot
matrix (small, finite), or a sort (the rest); indices that count up through
every slot once (a position embedding's ``0, 1, ..., extent - 1``) are a copy,
for ``Take`` and ``ScatterAdd`` alike. Each path is held to ``np.take`` and to
``np.add.at`` into zeros.
"""

import numpy as np
import pytest

from topos.ops import lookup
from topos.ops.index import counts_up


def scatter_add(updates, indices, axis, extent):
    primitive = lookup("ScatterAdd")
    shape = updates.shape[:axis] + (extent,) + updates.shape[axis + indices.ndim :]
    out = np.full(shape, np.nan, updates.dtype)  # every element must be written
    return primitive.forward_into([updates, indices], {"axis": axis, "extent": extent}, out)


def expected_scatter_add(updates, indices, axis, extent):
    shape = updates.shape[:axis] + (extent,) + updates.shape[axis + indices.ndim :]
    expected = np.zeros(shape, updates.dtype)
    flat = updates.reshape(updates.shape[:axis] + (-1,) + updates.shape[axis + indices.ndim :])
    np.add.at(np.moveaxis(expected, axis, 0), indices.reshape(-1), np.moveaxis(flat, axis, 0))
    return expected


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1])
def test_indices_that_count_up_scatter_and_take_as_numpy_does(dtype, axis):
    rng = np.random.default_rng(0)
    extent = 16
    indices = np.arange(extent, dtype=dtype)
    assert counts_up(indices, extent)
    updates = rng.standard_normal((extent, 5) if axis == 0 else (3, extent, 5)).astype(np.float32)
    np.testing.assert_array_equal(
        scatter_add(updates, indices, axis, extent), expected_scatter_add(updates, indices, axis, extent)
    )
    values = rng.standard_normal(updates.shape).astype(np.float32)
    out = np.full(values.shape, np.nan, np.float32)
    taken = lookup("Take").forward_into([values, indices], {"axis": axis}, out)
    np.testing.assert_array_equal(taken, np.take(values, indices, axis=axis))


@pytest.mark.parametrize(
    "indices",
    [
        np.arange(16)[::-1].copy(),  # every slot once, out of order
        np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14]),  # one slot twice, one never
        np.arange(16).reshape(4, 4),  # counts up, but not one vector
        np.random.default_rng(1).integers(0, 16, size=40),  # more rows than SHORT_SCATTER: the one-hot product
        np.random.default_rng(2).integers(0, 16, size=(300, 300)),  # too many for the one-hot matrix: the sort
    ],
)
def test_other_indices_take_the_summing_paths_and_agree_with_numpy(indices):
    extent = 16
    assert not counts_up(indices, extent)
    rng = np.random.default_rng(0)
    updates = rng.standard_normal(indices.shape + (3,)).astype(np.float32)
    # Against the sums in float64: each path adds in an order of its own (up to 5,600 terms a slot here).
    expected = expected_scatter_add(updates.astype(np.float64), indices, 0, extent)
    np.testing.assert_allclose(scatter_add(updates, indices, 0, extent), expected, rtol=1e-5, atol=1e-6 * indices.size)


def test_counting_up_needs_every_slot_of_the_extent():
    assert not counts_up(np.arange(15), 16)
    assert not counts_up(np.arange(16), 15)
    assert not counts_up(np.zeros(0, np.int64), 0)
    assert not counts_up(np.arange(16, dtype=np.float32), 16)
