"""A keystroke never waits for training: each gallery example's readings run (as ``__playground__``)
records its model and trains nothing; Run mode (as ``__main__``) trains it.

The convention (docs/playground.md, "Training and the readings"): a script's training goes
under ``if __name__ == "__main__":``. The readings run, made at every keystroke, runs the
file under another name, so it records and stops there; Run, the docs and ``python
example.py`` run the training. tests/bench/playground.mjs measures each example's edit to
readings in the page.
"""

import json
import os
import re

import pytest

from topos import playground, show

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples")
GALLERY = sorted(name for name in os.listdir(EXAMPLES) if name.endswith(".py"))
# The examples that train (test_examples.py's list), and the steps each reports in Run mode.
TRAINING = {
    "02_linear_fit.py": 100,
    "04_mlp.py": 301,
    "05_softmax_regression.py": 201,
    "06_char_transformer.py": 300,
    "07_digits_cnn.py": 200,
    "08_pinn.py": 3001,
    "09_gaussian_process.py": 150,
    "10_spectral_filter.py": 200,
    "12_ranking_loss.py": 200,
    "13_mixture_density.py": 400,
    "14_einsum_attention.py": 150,
    "15_image_blur.py": 200,
    "16_kmeans.py": 10,
    "17_char_sampler.py": 300,
    "18_char_rnn.py": 150,
    "19_heat_equation.py": 80,
    "21_spiral.py": 301,
}


class Steps:
    """A ``show.watch`` watcher that keeps the steps reported."""

    def __init__(self):
        self.steps = []

    def card(self, card):
        pass

    def progress(self, step, total):
        self.steps.append((step, total))


def code_of(name):
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as file:
        return file.read()


@pytest.mark.parametrize("name", GALLERY)
def test_the_readings_run_records_the_model_and_trains_nothing(name):
    watcher = Steps()
    with show.watch(watcher):
        result = json.loads(playground.run(code_of(name)))
    assert result["error"] is None
    assert result["recording"] is not None and result["recording"]["nodes"] > 0
    assert watcher.steps == [], "the readings run reported training steps"
    assert not re.search(r"^step +\d+", result["output_text"], re.M), result["output_text"][:400]
    plots = [item for item in result["output"] if item["kind"] == "plot"]
    assert all(not layer["y"] for plot in plots for layer in plot["layers"]), "a loss curve with points"


@pytest.mark.parametrize("name", sorted(TRAINING))
def test_run_mode_trains_it(name):
    batches = []
    watcher = Steps()
    with show.watch(watcher):
        end = json.loads(playground.run_main(code_of(name), batches.append))
    assert end["error"] is None
    printed = "".join(
        item["text"] for batch in batches for item in json.loads(batch)["append"] if item["kind"] == "print"
    )
    assert re.search(r"^step +0 +(loss|inertia) ", printed, re.M)  # k-means lowers its inertia
    assert len(watcher.steps) == TRAINING[name]
