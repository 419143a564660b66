"""The gallery's spiral (docs/examples/21_spiral.py): one heatmap card, redrawn every 20 steps, whose
pixels are the trained network's probability of class 1 over the grid, worked out here with numpy.

The oracle: the same two tanh layers written in numpy from the trained parameters. numpy's and
topos's sums may round differently in the last bit, so a probability may land on the other side of
a byte's rounding point: a byte may differ by one, never more.
"""

import base64
import io
import os
import runpy
from contextlib import redirect_stdout

import numpy as np
import pytest

from topos import show

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples", "21_spiral.py")


class Cards:
    def __init__(self):
        self.events = []  # (card, its JSON then)

    def card(self, card):
        self.events.append((card, card.to_json()))

    def progress(self, step, total):
        pass


@pytest.fixture(scope="module")
def ran():
    watcher = Cards()
    buffer = io.StringIO()
    with show.watch(watcher), redirect_stdout(buffer):
        namespace = runpy.run_path(EXAMPLE, run_name="__main__")
    return buffer.getvalue(), namespace, watcher


def bytes_of(picture):
    flat = np.frombuffer(base64.b64decode(picture["pixels"]), dtype=np.uint8)
    return flat.reshape(picture["height"], picture["width"])


def test_the_boundary_is_one_card_redrawn_every_20_steps(ran):
    _, namespace, watcher = ran
    heatmaps = [(card, data) for card, data in watcher.events if card.kind == "heatmap"]
    assert len({id(card) for card, _ in heatmaps}) == 1
    steps = namespace["STEPS"]
    titles = [data["title"] for _, data in heatmaps]
    assert titles == [f"decision boundary after step {step}" for step in range(0, steps + 1, 20)]
    # The points and the scale stay as made; the first drawing (untrained) differs from the last.
    assert all(data["points"] == heatmaps[0][1]["points"] for _, data in heatmaps)
    assert heatmaps[-1][1]["scale"] == "diverging" and heatmaps[-1][1]["range"] == [0.0, 1.0]
    assert not np.array_equal(bytes_of(heatmaps[0][1]["image"]), bytes_of(heatmaps[-1][1]["image"]))
    np.testing.assert_allclose(heatmaps[0][1]["points"]["x"], namespace["features"][:, 0], rtol=1e-3)
    assert heatmaps[0][1]["points"]["class"] == namespace["labels"].tolist()


def class_one(namespace, points):
    """The trained network's probability of class 1 at ``points`` [P, 2], in numpy."""
    weights = {name: tensor.numpy() for name, tensor in namespace["parameters"].items()}
    hidden = np.tanh(points @ weights["hidden1.weight"] + weights["hidden1.bias"])
    hidden = np.tanh(hidden @ weights["hidden2.weight"] + weights["hidden2.bias"])
    logits = hidden @ weights["output.weight"] + weights["output.bias"]
    return np.exp(logits[:, 1]) / np.exp(logits).sum(axis=1)


def test_its_pixels_are_the_network_s_probability_worked_out_in_numpy(ran):
    _, namespace, watcher = ran
    last = [data for card, data in watcher.events if card.kind == "heatmap"][-1]
    probability = class_one(namespace, namespace["grid_points"])
    grid = namespace["GRID"]
    expected = np.rint(probability.reshape(grid, grid) * 255)[::-1]  # the card's top row is the largest y
    drawn = bytes_of(last["image"]).astype(int)
    assert drawn.shape == (grid, grid)
    assert np.abs(drawn - expected).max() <= 1


def test_the_trained_boundary_puts_the_points_on_their_side(ran):
    text, namespace, watcher = ran
    last = [data for card, data in watcher.events if card.kind == "heatmap"][-1]
    drawn = bytes_of(last["image"])[::-1]  # row i at the i-th y again
    low, high = namespace["EXTENT"]
    grid = namespace["GRID"]
    cells = np.clip(((namespace["features"] - low) / (high - low) * grid).astype(int), 0, grid - 1)
    sides = drawn[cells[:, 1], cells[:, 0]] > 127
    # A point's cell is up to half a cell from the point: nearly all, not all, share its side.
    assert np.mean(sides == (namespace["labels"] == 1)) >= 0.95
    # What it prints is the share numpy finds on their side (the network's guesses at the points).
    right = np.mean((class_one(namespace, namespace["features"]) > 0.5) == (namespace["labels"] == 1))
    assert f"trained: {right:.3f} of the 200 points on their side of the boundary" in text
    assert right >= 0.95, "the network learns the spirals"
    # Both classes hold a fair share of the square: a boundary, not one colour.
    assert 0.3 < np.mean(drawn > 127) < 0.7
