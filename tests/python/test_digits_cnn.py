"""The gallery's digits CNN (docs/examples/07_digits_cnn.py): it is the model it says, against PyTorch;
it learns the digits to at least 95% held out; it trains as the playground's Run mode watches it; it
trains on WebGPU as on numpy; and dropout takes a fresh key each step.

The oracles: ``torch.nn.functional`` (conv2d, max_pool2d, dropout's scaling, cross_entropy) for the
model's loss and gradients in float64, and for the held-out accuracy recomputed from the trained
parameters; the numpy run for the WebGPU one (float32, DeviceTrainer on lavapipe here).
"""

import base64
import importlib.util
import io
import math
import re
import subprocess
import sys
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tolerances import assert_close, loss_bound

import topos
from topos import Tape, show

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "07_digits_cnn.py"


def load_example():
    spec = importlib.util.spec_from_file_location("digits_cnn_gallery", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # records the model; main() runs only as a script
    return module


@pytest.fixture(scope="module")
def example():
    return load_example()


class Watcher:
    """What the playground's Run mode is told while a script runs (``show.watch``)."""

    def __init__(self):
        self.cards = []  # (card, the lengths of its lines then)
        self.steps = []

    def card(self, card):
        layers = card.to_json()["layers"] if card.kind == "plot" else []
        self.cards.append((card, [len(layer["y"]) for layer in layers]))

    def progress(self, step, total):
        self.steps.append((step, total))


def watched(run):
    watcher = Watcher()
    buffer = io.StringIO()
    with show.watch(watcher), redirect_stdout(buffer):
        result = run()
    return buffer.getvalue(), result, watcher


def small(example, **changes):
    return replace(example.Config(), **{"steps": 6, "print_every": 2, "evaluate_every": 2, **changes})


def torch_logits(example, weights, images, config):
    """The model in PyTorch, float64, without dropout: the same layers as the docstring says."""
    w = {name: torch.tensor(np.asarray(array, dtype=np.float64), requires_grad=True) for name, array in weights.items()}
    x = torch.tensor(np.asarray(images, dtype=np.float64))
    for block in range(1, len(config.channels) + 1):
        x = F.conv2d(x, w[f"conv{block}.weight"], w[f"conv{block}.bias"], padding=config.kernel // 2)
        x = F.max_pool2d(F.relu(x), 2)
    x = x.reshape(len(images), example.features(config))
    return x @ w["head.weight"] + w["head.bias"], w


# The data and the split ---------------------------------------------------------------------------------


def test_the_split_is_fixed_disjoint_and_covers_every_digit(example):
    train, held_out = example.TRAINING_INDICES, example.HELD_OUT_INDICES
    assert (len(train), len(held_out)) == (1500, 297)
    assert sorted(np.concatenate([train, held_out]).tolist()) == list(range(1797))
    assert np.array_equal(held_out, load_example().HELD_OUT_INDICES), "the same split on every load"
    assert np.bincount(example.LABELS[held_out], minlength=10).min() >= 15
    images, labels = topos.datasets.digits()
    assert np.array_equal(example.IMAGES, images) and np.array_equal(example.LABELS, labels)


# The model against PyTorch -----------------------------------------------------------------------------


def test_the_model_without_dropout_is_pytorchs_in_float64(example):
    config = replace(example.Config(), batch=20, training=False)
    network, (images, labels, key, logits, guesses, accuracy, loss) = Tape.record(
        lambda tape: example.build(tape, config)
    )
    assert key is None
    rng = np.random.default_rng(5)
    chosen = rng.choice(example.TRAINING_INDICES, config.batch, replace=False)
    parameters = network.parameters()
    parameters = parameters.replace(
        {name: tensor.numpy() + rng.normal(0, 0.05, tensor.shape) for name, tensor in parameters.items()}
    )
    feeds = {images: example.IMAGES[chosen], labels: example.LABELS[chosen]}
    run = network.forward(parameters, feeds)
    weights = {name: tensor.numpy() for name, tensor in parameters.items()}
    want_logits, w = torch_logits(example, weights, example.IMAGES[chosen], config)
    want_loss = F.cross_entropy(want_logits, torch.tensor(example.LABELS[chosen], dtype=torch.long))
    want_loss.backward()
    np.testing.assert_allclose(run.of(logits).numpy(), want_logits.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(run.of(loss).scalar(), want_loss.item(), rtol=1e-9)
    assert run.of(guesses).numpy().tolist() == want_logits.argmax(dim=1).tolist()
    want_accuracy = (want_logits.argmax(dim=1) == torch.tensor(example.LABELS[chosen])).double().mean().item()
    assert run.of(accuracy).scalar() == want_accuracy
    gradients = run.backward(loss).parameters(parameters)
    for name, gradient in gradients.items():
        np.testing.assert_allclose(np.asarray(gradient), w[name].grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_dropout_follows_the_key_it_is_fed(example):
    config = replace(example.Config(), batch=8)
    network, (images, labels, key, logits, _, _, loss) = Tape.record(lambda tape: example.build(tape, config))
    plain, (p_images, p_labels, _, plain_logits, _, _, _) = Tape.record(
        lambda tape: example.build(tape, replace(config, training=False))
    )
    chosen = example.TRAINING_INDICES[: config.batch]
    feeds = {images: example.IMAGES[chosen], labels: example.LABELS[chosen]}
    base = topos.random_key(3)
    first = network.forward(network.parameters(), {**feeds, key: topos.fold_in(base, 0)})
    again = network.forward(network.parameters(), {**feeds, key: topos.fold_in(base, 0)})
    second = network.forward(network.parameters(), {**feeds, key: topos.fold_in(base, 1)})
    assert first.of(loss).scalar() == again.of(loss).scalar(), "the same key drops the same features"
    assert first.of(loss).scalar() != second.of(loss).scalar(), "a fresh key each step drops others"
    # The model recorded without dropout (the held-out one) gives other logits from the same parameters.
    no_dropout = plain.forward(plain.adopt(network.parameters()), {p_images: feeds[images], p_labels: feeds[labels]})
    assert not np.allclose(first.of(logits).numpy(), no_dropout.of(plain_logits).numpy())


# Training ----------------------------------------------------------------------------------------------


def test_run_as_a_script_it_reads_at_least_95_percent_of_the_held_out_digits(example):
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "py"), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "\ntraining on numpy, float64\n" in text
    losses = [float(value) for value in re.findall(r"^step +\d+ +loss ([0-9.]+)", text, re.M)]
    assert len(losses) >= 5
    assert abs(losses[0] - math.log(10)) < 0.5, "an untrained model is close to a uniform guess"
    assert losses[-1] < 0.25 * losses[0]
    found = re.search(
        r"^held out: (\d+) of 297 images read right, accuracy ([0-9.]+), cross-entropy ([0-9.]+)$", text, re.M
    )
    assert found, text
    assert float(found.group(2)) >= 0.95
    assert int(found.group(1)) == round(float(found.group(2)) * 297)


def test_the_held_out_score_is_pytorchs_from_the_trained_parameters(example):
    config = small(example, steps=30, evaluate_every=10)
    text, (losses, accuracies, parameters), _ = watched(lambda: example.main(config))
    weights = {name: tensor.numpy() for name, tensor in parameters.items()}
    held_out = example.HELD_OUT_INDICES
    logits, _ = torch_logits(example, weights, example.IMAGES[held_out], config)
    labels = torch.tensor(example.LABELS[held_out], dtype=torch.long)
    accuracy = (logits.argmax(dim=1) == labels).double().mean().item()
    cross_entropy = F.cross_entropy(logits, labels).item()
    assert accuracies[-1] == accuracy
    found = re.search(r"accuracy ([0-9.]+), cross-entropy ([0-9.]+)$", text.strip())
    assert found and found.group(1) == f"{accuracy:.3f}" and found.group(2) == f"{cross_entropy:.4f}"
    assert losses[-1] < losses[0]


def test_it_trains_as_run_mode_watches_it_one_card_growing_a_point_a_step(example):
    config = small(example)
    text, (losses, accuracies, _), watcher = watched(lambda: example.main(config))
    plots = [card for card, _ in watcher.cards if card.kind == "plot"]
    assert plots and all(card is plots[0] for card in plots), "one plot card, made once and then updated"
    # Made before the first step with no points, then updated once a step: both lines grow together.
    lengths = [lengths for card, lengths in watcher.cards if card.kind == "plot"]
    assert lengths == [[n, n] for n in range(config.steps + 1)]
    curve = plots[0].to_json()
    assert curve["x_label"] == "step"
    loss_line, accuracy_line = curve["layers"]
    assert loss_line["label"] == "training loss on numpy" and accuracy_line["label"] == "held-out accuracy"
    assert loss_line["y"] == losses and accuracy_line["y"] == accuracies
    # Scored at steps 0, 2, 4 and the last, and held between.
    assert accuracies[1] == accuracies[0] and accuracies[3] == accuracies[2]
    assert watcher.steps == [(step, config.steps) for step in range(1, config.steps + 1)]
    printed = dict(re.findall(r"^step +(\d+) +loss ([0-9.]+)", text, re.M))
    assert {int(step) for step in printed} == {0, 2, 4, 5}
    for step, value in printed.items():
        assert abs(losses[int(step)] - float(value)) <= 5e-5


def test_once_trained_it_shows_its_first_kernels_and_the_held_out_digits_it_reads_wrong(example):
    """Two image cards after the plot: the 16 first-layer kernels on a diverging scale (the range the
    largest weight either side of zero), then each misread held-out digit captioned with torch's guess."""
    config = small(example, steps=30, evaluate_every=10)
    _, (_, accuracies, parameters), watcher = watched(lambda: example.main(config))
    images = [card for card, _ in watcher.cards if card.kind == "image"]
    assert [card.kind for card, _ in watcher.cards][-len(images) :] == ["image"] * len(images)
    weights = {name: tensor.numpy() for name, tensor in parameters.items()}
    kernels = images[0].to_json()
    assert kernels["shape"] == [16, 3, 3] and kernels["scale"] == "diverging" and len(kernels["images"]) == 16
    largest = np.abs(weights["conv1.weight"]).max()
    assert kernels["range"] == [-largest, largest]
    held_out = example.HELD_OUT_INDICES
    logits, _ = torch_logits(example, weights, example.IMAGES[held_out], config)
    guesses = logits.argmax(dim=1).numpy()
    wrong = np.flatnonzero(guesses != example.LABELS[held_out])
    assert len(wrong) == round((1 - accuracies[-1]) * 297) and len(wrong) > 0  # 30 steps: some are misread
    digits = images[1].to_json()
    assert digits["shape"] == [len(wrong), 8, 8] and digits["range"] == [0.0, 1.0]
    captions = [picture["caption"] for picture in digits["images"]]
    assert captions == [f"read {guesses[i]}, is {example.LABELS[held_out][i]}" for i in wrong][: len(captions)]
    # The first misread digit's pixels are its image's, a byte each: round(value * 255).
    first = np.frombuffer(base64.b64decode(digits["images"][0]["pixels"]), dtype=np.uint8)
    assert np.array_equal(first, np.rint(example.IMAGES[held_out][wrong[0], 0].reshape(-1) * 255))


def test_a_run_is_reproducible_and_the_seed_changes_it(example):
    config = small(example, steps=4)
    _, (first, _, _), _ = watched(lambda: example.main(config))
    _, (again, _, _), _ = watched(lambda: example.main(config))
    _, (other, _, _), _ = watched(lambda: example.main(replace(config, seed=1)))
    assert first == again
    assert first != other


def test_it_trains_on_webgpu_as_on_numpy(example):
    # DeviceTrainer (the parameters stay on the device) against the host's Adam, both float32, same batches and keys.
    config = small(example, steps=4)
    adapter = topos.webgpu.adapter().name
    device_text, (on_device, device_accuracies, _), watcher = watched(lambda: example.main(config, backend="webgpu"))
    host_text, (on_host, host_accuracies, _), _ = watched(
        lambda: example.main(config, dtype="float32", backend="numpy")
    )
    assert f"\ntraining on WebGPU ({adapter}), float32\n" in device_text
    assert "\ntraining on numpy, float32\n" in host_text
    # The widest reductions are the filter gradients: a batch of 64 images of 8 x 8 positions each.
    assert_close(on_device, on_host, loss_bound(on_host, "float32", terms=64 * 8 * 8), "losses on WebGPU and numpy")
    assert np.abs(np.array(device_accuracies) - np.array(host_accuracies)).max() <= 2 / 297
    plot = next(card for card, _ in watcher.cards)
    assert plot.to_json()["layers"][0]["label"] == f"training loss on WebGPU ({adapter})"


@pytest.mark.parametrize("software", [True, False], ids=["software adapter", "hardware adapter"])
def test_auto_takes_webgpu_only_on_a_hardware_adapter(example, monkeypatch, software):
    name = "a software adapter" if software else "a hardware GPU"
    monkeypatch.setattr(topos.webgpu, "available", lambda: True)
    monkeypatch.setattr(topos.webgpu, "adapter", lambda: topos.webgpu.Adapter(name, software, fallback=False))
    text, (losses, _, _), _ = watched(lambda: example.main(small(example, steps=2), backend="auto"))
    expected = "training on numpy, float64" if software else f"training on WebGPU ({name}), float32"
    assert f"\n{expected}\n" in text
    assert len(losses) == 2


def test_auto_trains_on_numpy_without_webgpu(example, monkeypatch):
    monkeypatch.setattr(topos.webgpu, "available", lambda: False)
    text, _, _ = watched(lambda: example.main(small(example, steps=2), backend="auto"))
    assert "\ntraining on numpy, float64\n" in text
