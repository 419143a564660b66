"""The gallery (docs/examples/*.py): every example runs, quickly, the same way
each time, using only the public API, and prints what it promises.

Each example runs as a script in a fresh interpreter with one BLAS thread, as
on the one core it is written for (several BLAS threads on a busy two-core
machine slow matrix products down tenfold). Where a test also reads an
example's globals, the (small) example runs again in this process through
``runpy``. Printed values are checked against numbers worked out here.

Every example that trains draws its loss on one ``show.plot`` card that it
updates at every step and reports its steps with ``show.progress``, which is
what the playground's Run mode shows while the script runs; the tests watch
those events (``show.watch``). The transformer also trains on WebGPU
(``topos.webgpu.DeviceTrainer``, wgpu-py on lavapipe here), as the same run.
"""

import ast
import importlib.util
import io
import math
import os
import re
import runpy
import subprocess
import sys
import time
from contextlib import redirect_stdout

import numpy as np
import pytest
from seed_texts import SEED_DESCRIBE
from tolerances import assert_close, gamma, library_bound, loss_bound, sum_bound

import topos
from topos import show

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "docs", "examples")
# Every example in the folder is run and checked for the basics; these six also have checks of their own.
GALLERY = sorted(name for name in os.listdir(EXAMPLES) if name.endswith(".py"))
REQUIRED = [
    "01_scalar_chain.py",
    "02_linear_fit.py",
    "03_matmul.py",
    "04_mlp.py",
    "05_softmax_regression.py",
    "06_char_transformer.py",
]
# Each example takes well under 3 s on one core; this leaves room for a busy, shared machine.
# What an example may import: the public API, numpy and a few pure-Python standard modules (they also run in Pyodide).
ALLOWED_IMPORTS = {"topos", "topos.model", "topos.model.optim", "topos.show", "numpy", "math", "dataclasses", "sys"}
# The examples that train, and the loss each prints ("step N  loss X") and plots.
TRAINING = [
    "02_linear_fit.py",
    "04_mlp.py",
    "05_softmax_regression.py",
    "06_char_transformer.py",
    "12_ranking_loss.py",
    "13_mixture_density.py",
    "14_einsum_attention.py",
    "15_image_blur.py",
    "17_char_sampler.py",
    "18_char_rnn.py",
    "21_spiral.py",
]


_script_outputs = {}


def run_script(name):
    """Run one example as a script on one BLAS thread; returns (printed text, seconds)."""
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "py"), os.environ.get("PYTHONPATH")]))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, name)], env=environment, capture_output=True, text=True, timeout=120
    )
    seconds = time.perf_counter() - started
    assert done.returncode == 0, f"{name} failed:\n{done.stderr}"
    _script_outputs.setdefault(name, done.stdout)
    return done.stdout, seconds


def script_output(name):
    """What the script prints (run once per test process)."""
    if name not in _script_outputs:
        run_script(name)
    return _script_outputs[name]


def run_example(name):
    """Run one example in this process as ``__main__``; returns (printed text, its globals)."""
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        namespace = runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    return buffer.getvalue(), namespace


def printed_losses(text):
    return [float(value) for value in re.findall(r"\bloss ([-+0-9.e]+)", text)]


def printed_steps(text):
    """{step: (printed loss, one unit in its last printed digit)} from the "step N  loss X" lines."""
    steps = {}
    for step, value in re.findall(r"^step +(\d+) +loss ([-+0-9.e]+)", text, re.M):
        mantissa, _, exponent = value.partition("e")
        steps[int(step)] = float(value), 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))
    return steps


def load_transformer():
    """The gallery transformer as a module (its training runs only as a script)."""
    spec = importlib.util.spec_from_file_location("char_transformer_gallery", os.path.join(EXAMPLES, REQUIRED[5]))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # defines the model; main() runs only as a script
    return module


class Watcher:
    """What the playground's Run mode is told while a script runs (``show.watch``)."""

    def __init__(self):
        self.cards = []  # (card, number of points on its first line then): one entry when made, one per update
        self.steps = []  # (step, total)

    def card(self, card):
        layers = card.to_json().get("layers") if card.kind == "plot" else None
        self.cards.append((card, len(layers[0]["y"]) if layers else None))

    def progress(self, step, total):
        self.steps.append((step, total))


def watched(run):
    """Call ``run()`` (which prints) inside ``show.watch``; returns (printed text, its result, the watcher)."""
    watcher = Watcher()
    buffer = io.StringIO()
    with show.watch(watcher), redirect_stdout(buffer):
        result = run()
    return buffer.getvalue(), result, watcher


def small_transformer_config(module, steps=6):
    return module.Config(batch=4, context=8, embed=16, heads=2, layers=1, steps=steps, print_every=2)


def test_the_gallery_is_numbered_in_order():
    assert GALLERY[: len(REQUIRED)] == REQUIRED
    numbers = [int(re.match(r"(\d\d)_[a-z0-9_]+\.py$", name).group(1)) for name in GALLERY]
    assert numbers == list(range(1, len(GALLERY) + 1))


@pytest.mark.parametrize("name", GALLERY)
def test_example_is_documented_and_uses_the_public_api_only(name):
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as file:
        tree = ast.parse(file.read())
    docstring = ast.get_docstring(tree)
    assert docstring and len(docstring.split()) >= 20, "the top docstring says what the example shows"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module]
        else:
            if isinstance(node, ast.Name):
                assert node.id not in ("open", "exec", "eval"), f"{name} uses {node.id}()"
            continue
        for module in modules:
            assert module in ALLOWED_IMPORTS, f"{name} imports {module}"


@pytest.mark.parametrize("name", GALLERY)
def test_example_runs_deterministically(name):
    # How long each takes is a benchmark's question (tests/bench/gallery.py), not a test's: this machine is shared.
    text, _ = run_script(name)
    assert text.strip()
    again, _ = run_script(name)
    assert again == text, "a seeded example prints the same every time"


def test_scalar_chain_prints_the_seed_tape_and_gradients():
    text = script_output("01_scalar_chain.py")
    # The tape reading and the four values as the getting-started page gives them.
    seed_tape = SEED_DESCRIBE
    assert seed_tape in text
    w, x, y = 0.5, 2.0, 4.0
    error = w * x - y
    assert f"loss = (w x - y)^2           = {error * error}" in text
    assert f"d loss / d w = 2 (w x - y) x = {2 * error * x}" in text
    assert f"d loss / d x = 2 (w x - y) w = {2 * error * w}" in text
    assert f"d loss / d y = -2 (w x - y)  = {-2 * error}" in text


def test_linear_fit_learns_the_slope():
    text, namespace = run_example("02_linear_fit.py")
    losses = printed_losses(text)
    assert len(losses) >= 5 and losses[0] > 1.0 > 1e-9 > losses[-1]
    assert abs(namespace["learned"] - 2.0) < 1e-6
    assert "learned w = 2.000000" in text


def test_matmul_gradients_match_numpy():
    text, namespace = run_example("03_matmul.py")
    x, w, b = namespace["x_data"], namespace["w_data"], namespace["b_data"]
    y = x @ w + b
    assert "MatMul         0, 1" in text and "Broadcast" in text
    assert f"loss = {np.sum(y * y):.6f}" in text
    field = namespace["field"]
    expected = {"W": x.T @ (2 * y), "b": 2 * y.sum(axis=0), "x": 2 * y @ w.T}
    for name, gradient in expected.items():
        np.testing.assert_allclose(field.of(namespace[name]).numpy(), gradient, rtol=1e-12, atol=1e-12)


def test_mlp_loss_falls_and_it_classifies():
    text, namespace = run_example("04_mlp.py")
    losses = printed_losses(text)
    assert len(losses) >= 5
    assert losses[0] > math.log(3) - 0.5 and losses[-1] < 0.25 * losses[0]
    accuracies = [float(a) for a in re.findall(r"accuracy ([0-9.]+)", text)]
    assert accuracies[-1] >= 0.9 > accuracies[0]
    # The optimizer is the library's, with momentum, as the docstring says.
    assert type(namespace["optimizer"]).__module__ == "topos.model.optim"
    # The held-out points, scored by a second recording that adopted the trained parameters: recomputed with numpy.
    weights = {name: tensor.numpy() for name, tensor in namespace["parameters"].items()}
    hidden = np.maximum(namespace["held_out_features"] @ weights["hidden1.weight"] + weights["hidden1.bias"], 0.0)
    hidden = np.maximum(hidden @ weights["hidden2.weight"] + weights["hidden2.bias"], 0.0)
    logits = hidden @ weights["output.weight"] + weights["output.bias"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    held_out_labels = namespace["held_out_labels"]
    expected = -np.mean(log_probabilities[np.arange(len(logits)), held_out_labels])
    assert len(held_out_labels) != len(namespace["labels"]), "a batch of another size"
    found = re.search(r"^held-out points: (\d+), cross-entropy ([0-9.]+), classified right ([0-9.]+)$", text, re.M)
    assert found and int(found.group(1)) == len(held_out_labels)
    assert abs(float(found.group(2)) - expected) < 1e-4
    assert float(found.group(3)) >= 0.9


def test_softmax_regression_loss_falls_and_matches_cross_entropy():
    text, namespace = run_example("05_softmax_regression.py")
    losses = printed_losses(text)
    classes = namespace["CLASSES"]
    assert abs(losses[0] - math.log(classes)) < 1e-4, "zero weights give every class the same probability"
    assert losses[-1] < 0.5 * losses[0]
    assert all(later <= earlier for earlier, later in zip(losses, losses[1:]))
    # The last printed loss, recomputed with numpy from the parameters of the run that printed it.
    network, run = namespace["network"], namespace["run"]
    weights = {network.node(symbol).name: run.parameters.of(symbol).numpy() for symbol in run.parameters.symbols()}
    logits = namespace["features"] @ weights["W"] + weights["b"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    expected = -np.mean(log_probabilities[np.arange(len(logits)), namespace["labels"]])
    assert abs(losses[-1] - expected) < 1e-4
    assert f"the same loss through topos.cross_entropy: {expected:.4f}" in text


def test_char_transformer_loss_falls_within_seconds():
    text = script_output("06_char_transformer.py")
    module = load_transformer()
    # Run as a script natively, as the docs are built, it trains on numpy whatever the machine's GPU.
    assert "\ntraining on numpy, float64\n" in text
    losses = printed_losses(text)
    config = module.Config()
    assert len(losses) >= 5
    assert abs(losses[0] - math.log(config.vocab_size)) < 0.3, "an untrained model is close to a uniform guess"
    assert losses[-1] < losses[0] - 1.0
    lines = text.splitlines()
    continuation = lines[lines.index("the model continues its first line:") + 1 :]
    assert "\n".join(continuation).startswith(module.TEXT[: config.context])
    held_out = re.search(r"^held out, the closing couplet: (\d+) windows, cross-entropy ([0-9.]+)$", text, re.M)
    assert held_out and int(held_out.group(1)) == 5 != config.batch


def test_char_transformer_scores_the_held_out_couplet_with_the_parameters_it_is_given():
    module = load_transformer()
    config = small_transformer_config(module)
    network, _ = topos.Tape.record(lambda tape: module.build(tape, config))
    initial = network.parameters()
    changed = initial.replace({name: tensor.numpy() * 1.5 for name, tensor in initial.items()})
    windows, loss = module.held_out_loss(changed, config, "float64")
    assert windows == (len(module.HELD_OUT_TOKENS) - 1) // config.context != config.batch
    # The same windows through a recording of their batch size, its parameters replaced by name.
    sized = module.replace(config, batch=windows)
    held_out, (tokens, targets, _, held_out_loss) = topos.Tape.record(lambda tape: module.build(tape, sized))
    inputs, expected = module.held_out_windows(config)
    parameters = held_out.parameters().replace({name: tensor.numpy() for name, tensor in changed.items()})
    run = held_out.forward(parameters, {tokens: inputs, targets: expected})
    np.testing.assert_allclose(loss, run.of(held_out_loss).scalar(), rtol=1e-12)
    assert abs(loss - module.held_out_loss(initial, config, "float64")[1]) > 1e-3, "the parameters given are used"


# Training, watched as the playground's Run mode watches it ------------------------------------


def run_training(name):
    """Run a training example under ``show.watch``; returns (printed text, the losses it kept, the watcher)."""
    if name == "06_char_transformer.py":
        module = load_transformer()
        return watched(lambda: module.main(small_transformer_config(module, steps=8)))
    watcher = Watcher()
    with show.watch(watcher):
        text, namespace = run_example(name)
    return text, namespace["losses"], watcher


@pytest.mark.parametrize("name", TRAINING)
def test_a_training_example_plots_its_loss_as_it_trains(name):
    text, losses, watcher = run_training(name)
    plots = [card for card, _ in watcher.cards if card.kind == "plot"]
    assert plots and all(card is plots[0] for card in plots), "one plot card, made once and then updated"
    # Made before the first step, then updated once a step with the losses so far: a curve that grows.
    points = [count for card, count in watcher.cards if card.kind == "plot"]
    assert points == list(range(len(losses) + 1))
    curve = plots[0].to_json()
    assert curve["x_label"] == "step" and len(curve["layers"]) == 1
    plotted = curve["layers"][0]["y"]
    if curve["log_y"]:  # a log axis leaves out what it cannot place
        losses = [loss if loss > 0 else None for loss in losses]
    assert plotted == losses
    # Each printed loss is the plotted point of its step, rounded to the printed digits.
    printed = printed_steps(text)
    assert len(printed) >= 4
    for step, (value, unit) in printed.items():
        assert abs(plotted[step] - value) <= unit, f"step {step}"
    # Every step reported, with how many there are.
    assert watcher.steps == [(step, len(losses)) for step in range(1, len(losses) + 1)]


def test_char_transformer_trains_on_webgpu_as_on_numpy():
    # DeviceTrainer (the parameters stay on the device) against the host's Adam, both float32,
    # on the same batches: the kernels' documented tolerance for a few steps of training.
    module = load_transformer()
    config = small_transformer_config(module)
    adapter = topos.webgpu.adapter().name
    device_text, on_device, device_watcher = watched(lambda: module.main(config, backend="webgpu"))
    host_text, on_host, _ = watched(lambda: module.main(config, dtype="float32", backend="numpy"))
    assert f"\ntraining on WebGPU ({adapter}), float32\n" in device_text
    assert "\ntraining on numpy, float32\n" in host_text
    # The widest reduction of the small transformer is its MLP's 64 hidden units.
    assert_close(on_device, on_host, loss_bound(on_host, "float32", terms=64), "WebGPU's losses")
    assert on_device[-1] < on_device[0]
    plot = next(card for card, _ in device_watcher.cards if card.kind == "plot")
    assert plot.to_json()["layers"][0]["label"] == f"loss on WebGPU ({adapter})"


@pytest.mark.parametrize("software", [True, False], ids=["software adapter", "hardware adapter"])
def test_char_transformer_auto_takes_webgpu_only_on_a_hardware_adapter(monkeypatch, software):
    # lavapipe and SwiftShader are CPUs, where numpy trains faster: "auto" leaves them to numpy.
    module = load_transformer()
    name = "a software adapter" if software else "a hardware GPU"
    monkeypatch.setattr(topos.webgpu, "available", lambda: True)
    monkeypatch.setattr(topos.webgpu, "adapter", lambda: topos.webgpu.Adapter(name, software, fallback=False))
    text, losses, _ = watched(lambda: module.main(small_transformer_config(module, steps=2), backend="auto"))
    expected = "training on numpy, float64" if software else f"training on WebGPU ({name}), float32"
    assert f"\n{expected}\n" in text
    assert len(losses) == 2


def test_char_transformer_auto_trains_on_numpy_without_webgpu(monkeypatch):
    module = load_transformer()
    monkeypatch.setattr(topos.webgpu, "available", lambda: False)
    text, _, _ = watched(lambda: module.main(small_transformer_config(module, steps=2), backend="auto"))
    assert "\ntraining on numpy, float64\n" in text


# 12-14: a ranking loss through argsort and sort, a Student-t mixture through logsumexp and lgamma,
# self-attention through einsum -----------------------------------------------------------------------


def trained_weights(namespace):
    """The parameters of the example's last run (the one that printed last), by name."""
    network, run = namespace["network"], namespace["run"]
    return {network.node(symbol).name: run.parameters.of(symbol).numpy() for symbol in run.parameters.symbols()}


def test_ranking_loss_is_listmle_and_learns_to_rank():
    text, namespace = run_example("12_ranking_loss.py")
    run, top, gains, discount = namespace["run"], namespace["TOP"], namespace["gains"], namespace["discount"]
    weights = trained_weights(namespace)

    def scores(x):
        return np.tanh(x @ weights["hidden.weight"] + weights["hidden.bias"]) @ weights["output.weight"]

    # ListMLE by numpy: the true order by a stable argsort of -relevance (ties keep their order, as in
    # topos.argsort's descending order), then -log of each place's softmax over the places not yet drawn.
    relevance = namespace["train_relevance"]
    ranked = np.take_along_axis(scores(namespace["train_x"]), np.argsort(-relevance, kind="stable"), -1)
    tails = np.log(np.cumsum(np.exp(ranked[:, ::-1]), axis=-1))[:, ::-1]
    expected = np.mean(np.sum(tails - ranked, axis=-1))
    assert_close(
        run.of(namespace["loss"]).numpy(), expected, library_bound(expected, "float64", ranked.size), "ListMLE"
    )
    # NDCG@5 of the held-out queries by numpy from the same scores (no ties among them), as printed last.
    best = np.sort(gains, axis=-1)[:, ::-1][:, :top] @ discount
    read = np.take_along_axis(gains, np.argsort(-scores(namespace["test_x"]), axis=-1), -1)
    ndcg = np.mean(read[:, :top] @ discount / best)
    assert_close(run.of(namespace["ndcg"]).numpy(), ndcg, library_bound(ndcg, "float64", gains.size), "NDCG@5")
    printed = [float(value) for value in re.findall(r"held-out NDCG@5 ([0-9.]+)$", text, re.M)]
    assert abs(printed[-1] - ndcg) <= 5e-4
    # The random order's NDCG, printed first, against 2,000 random orders of each held-out query: one
    # order's NDCG lies in [0, 1], so the mean of 64,000 has a standard error below 0.5 / 253; five of them.
    shuffled = np.argsort(np.random.default_rng(5).random((2000, *gains.shape)), axis=-1)
    sampled = np.mean(
        np.take_along_axis(np.broadcast_to(gains, shuffled.shape), shuffled, -1)[..., :top] @ discount / best
    )
    random_order = float(re.search(r"random order: ([0-9.]+)$", text, re.M).group(1))
    assert abs(random_order - sampled) <= 5 * 0.5 / np.sqrt(shuffled[..., 0].size) + 5e-4
    # It learns to rank: to nearly the best order of the top five, which the untrained network was far from.
    assert printed[0] < 0.9 <= printed[-1]
    assert namespace["losses"][-1] < 0.5 * namespace["losses"][0]


def student_t_mixture_nll(weights, x, y):
    """The mixture density network's loss by numpy and scipy (scipy's Student-t density is normalised)."""
    from scipy.special import logsumexp
    from scipy.stats import t as student_t

    out = np.tanh(x @ weights["hidden.weight"] + weights["hidden.bias"]) @ weights["output.weight"]
    out = out + weights["output.bias"]
    log_weight = out[:, :3] - logsumexp(out[:, :3], axis=-1, keepdims=True)
    nu = np.exp(weights["log_nu"])
    return -np.mean(logsumexp(log_weight + student_t.logpdf(y, nu, loc=out[:, 3:6], scale=np.exp(out[:, 6:])), axis=-1))


def test_mixture_density_network_is_a_student_t_mixture_and_finds_the_branches():
    from scipy.optimize import brentq

    text, namespace = run_example("13_mixture_density.py")
    network, run, probe = namespace["network"], namespace["run"], namespace["PROBE"]
    # The recorded loss (lgamma's normalising constant included) is scipy's normalised density's.
    weights = trained_weights(namespace)
    for loss, x, y in (("loss", "train_x", "train_y"), ("held_out", "test_x", "test_y")):
        expected = student_t_mixture_nll(weights, namespace[x], namespace[y])
        bound = library_bound(expected, "float64", 3 * len(namespace[x]))
        assert_close(run.of(namespace[loss]).numpy(), expected, bound, loss)
    # The gradient that trains nu, where lgamma's derivative enters, against a central difference of scipy's
    # loss at the starting parameters: its error is h^2 / 6 |f'''| (1e-8 for |f'''| up to 6) plus rounding.
    parameters = network.parameters()
    start = {name: tensor.numpy() for name, tensor in parameters.items()}
    gradients = network.forward(parameters, {}).backward(namespace["loss"]).parameters(parameters)
    slope = next(gradients.of(s).numpy() for s in parameters.symbols() if network.node(s).name == "log_nu")
    h = 1e-4
    ends = [
        student_t_mixture_nll(dict(start, log_nu=start["log_nu"] + d), namespace["train_x"], namespace["train_y"])
        for d in (h, -h)
    ]
    assert abs(slope - (ends[0] - ends[1]) / (2 * h)) <= 1e-8 + 1e-15 / h

    # The true branches at x = 0.5, as printed: the three roots of y + 0.3 sin(2 pi y) = 0.5.
    def gap(y):
        return y + 0.3 * np.sin(2 * np.pi * y) - probe

    roots = [brentq(gap, a, b) for a, b in ((0.0, 0.4), (0.4, 0.6), (0.6, 1.0))]
    assert f"true branches y = {', '.join(f'{r:.3f}' for r in roots)}" in text
    # It learns the three branches: each centre within 0.05 of its branch (a sixth of the 0.29 between
    # neighbours), each with a weight of at least 0.1, and nu closer to the noise's 3 than to its start, 1.
    centres = np.sort(run.of(namespace["centre"]).numpy())
    assert np.all(np.abs(centres - roots) < 0.05)
    assert np.all(run.of(namespace["weight"]).numpy() >= 0.1)
    assert 2.0 < run.of(namespace["nu"]).scalar() < 6.0
    losses = namespace["losses"]
    assert losses[-1] < losses[0] - 1.5


def test_einsum_attention_is_attention_and_learns_to_sort():
    text, namespace = run_example("14_einsum_attention.py")
    run, heads, vocab = namespace["run"], namespace["HEADS"], namespace["VOCAB"]
    w = trained_weights(namespace)
    # The same attention by numpy's einsum, on the last batch: the recorded loss.
    batch = namespace["batch"]
    h = np.eye(vocab)[batch] @ w["embed"] + w["position"]
    q, k, v = (np.einsum("ble,ehd->bhld", h, w[name]) for name in ("query", "key", "value"))
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(namespace["HEAD"])
    attention = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attention /= attention.sum(axis=-1, keepdims=True)
    logits = (h + np.einsum("bhqd,hde->bqe", np.einsum("bhqk,bhkd->bhqd", attention, v), w["output"])) @ w["read-out"]
    logits -= logits.max(axis=-1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    expected = -np.mean(np.take_along_axis(log_p, np.sort(batch, axis=-1)[..., None], -1))
    assert_close(run.of(namespace["loss"]).numpy(), expected, library_bound(expected, "float64", logits.size), "loss")
    assert heads * namespace["HEAD"] == namespace["EMBED"]
    # Attention is needed to sort: the best table from a place and its own token to the token sorted into
    # that place (fitted on the held-out set itself, so an upper bound for a model that does not attend)
    # gets far fewer held-out tokens right than the trained model's 95%.
    tokens = namespace["test_tokens"]
    target = np.sort(tokens, axis=-1)
    table = np.zeros((tokens.shape[1], vocab, vocab))
    np.add.at(table, (np.arange(tokens.shape[1]), tokens, target), 1)
    without_attention = table.max(axis=-1).sum() / tokens.size
    accuracies = [float(value) for value in re.findall(r"token accuracy ([0-9.]+)$", text, re.M)]
    assert accuracies[-1] == float(f"{np.mean(run.of(namespace['predicted']).numpy() == target):.3f}")
    assert accuracies[0] < 0.3 and without_attention < 0.5 and accuracies[-1] >= 0.95


# 15-17: a blur learned through pad, k-means through argmin and scatter_add, a sampled character model ------


def test_image_blur_pads_by_reflection_and_learns_the_gaussian_kernel():
    text, namespace = run_example("15_image_blur.py")
    true_kernel, mirrored, target = namespace["true_kernel"], namespace["mirrored"], namespace["blurred_target"]
    network, kernel, blurred = namespace["network"], namespace["kernel"], namespace["blurred"]
    # topos.pad(mode="reflect") then conv2d, with the true kernel, is numpy's reflect-padded blur: nine
    # positive products a pixel, summed in another order.
    exact = network.forward(network.parameters().replace({"kernel": true_kernel[None, None]}), {})
    assert_close(exact.of(blurred).numpy(), target, sum_bound(target, 9, "float64"), "the recorded blur")
    # From a zero kernel the first loss is the mean square of the target.
    steps = printed_steps(text)
    value, unit = steps[0]
    assert abs(value - np.mean(target**2)) <= unit
    # The loss is (k - k*)^T G (k - k*), G the Gram matrix of the 3x3 reflect-padded patches, so the
    # learned kernel is within sqrt(loss / smallest eigenvalue of G) of the true one: a loss that small
    # means the kernel, not merely its effect on these images, was learned.
    learned = namespace["parameters"].of(kernel).numpy()[0, 0]
    patches = np.stack([mirrored[:, 0, i : i + 8, j : j + 8].ravel() for i in range(3) for j in range(3)], axis=1)
    final_loss = np.mean((patches @ (learned - true_kernel).ravel()) ** 2)
    smallest = np.linalg.eigvalsh(patches.T @ patches / len(patches))[0]
    distance = np.sqrt(final_loss / smallest)
    assert np.linalg.norm(learned - true_kernel) <= distance * (1 + 1e-6) + 1e-12
    assert distance < 1e-3, "learned to three decimals"
    for row in range(3):
        assert f"{'  '.join(f'{w:6.4f}' for w in true_kernel[row])}" in text.splitlines()[-4 + row]
    # The blur narrows the spread of the pixel values, the unsharp mask widens it.
    spread = re.search(r"original ([0-9.]+), blurred ([0-9.]+), sharpened ([0-9.]+)$", text, re.M)
    images = namespace["images"]
    mine = sum(learned[i, j] * mirrored[:, :, i : i + 8, j : j + 8] for i in range(3) for j in range(3))
    expected = [images.std(), mine.std(), (2 * images - mine).std()]
    assert all(abs(float(found) - value) <= 1e-3 for found, value in zip(spread.groups(), expected))
    assert expected[1] < expected[0] < expected[2]


def lloyd(points, centroids, steps):
    """Lloyd's algorithm in numpy: the inertia before each step, and the centroids after the last."""
    inertias = []
    for _ in range(steps):
        distances = np.sum((points[:, None, :] - centroids[None]) ** 2, axis=-1)
        nearest = np.argmin(distances, axis=1)
        inertias.append(np.sum(np.min(distances, axis=1)))
        centroids = np.array([points[nearest == k].mean(axis=0) for k in range(len(centroids))])
    return inertias, centroids


def test_kmeans_is_lloyds_algorithm_and_finds_the_blobs():
    watcher = Watcher()
    with show.watch(watcher):
        text, namespace = run_example("16_kmeans.py")
    points, start, steps = namespace["points"], namespace["start"], namespace["STEPS"]
    inertias = namespace["inertias"]
    # Lloyd's step never raises the inertia (up to the rounding of its sum of 300 terms).
    assert all(
        later <= earlier * (1 + 2 * gamma(len(points), "float64")) for earlier, later in zip(inertias, inertias[1:])
    )
    assert inertias[-1] < 0.25 * inertias[0]
    # The same steps in numpy: the same inertias (as printed) and the same centroids.
    expected_inertias, expected = lloyd(points, start, steps)
    printed = [float(value) for value in re.findall(r"^step +\d+  inertia +([0-9.]+)", text, re.M)]
    assert len(printed) == steps and all(abs(a - b) <= 1e-4 for a, b in zip(printed, expected_inertias))
    found = namespace["parameters"].of(namespace["centroids"]).numpy()
    assert_close(found, expected, sum_bound(np.abs(points).max(), len(points), "float64"), "the centroids")
    # Each blob's 75 points, of spread 0.6, put its mean within 5 standard errors (5 x 0.6 / sqrt(75)) of its centre.
    centres = namespace["true_centres"]
    pairs = [np.argmin(np.sum((found - centre) ** 2, axis=1)) for centre in centres]
    assert sorted(pairs) == list(range(len(centres))), "one centroid a blob"
    tolerance = 5 * namespace["SPREAD"] / np.sqrt(namespace["PER_CLUSTER"])
    assert np.all(np.abs(found[pairs] - centres) < tolerance)
    assert "d inertia / d centroids at the centroids found is zero (below 1e-9): True" in text
    # The gradient reading's d inertia / d c is 2 (count c - sum of its points), here at the start.
    network, parameters = namespace["network"], namespace["network"].parameters()
    slope = network.forward(parameters, {}).backward(namespace["inertia"]).parameters(parameters)
    nearest = np.argmin(np.sum((points[:, None, :] - start[None]) ** 2, axis=-1), axis=1)
    by_hand = np.array([2 * (np.sum(nearest == k) * start[k] - points[nearest == k].sum(axis=0)) for k in range(4)])
    assert_close(
        slope.of(namespace["centroids"]).numpy(),
        by_hand,
        sum_bound(4 * np.abs(points).sum(), 300, "float64"),
        "d inertia",
    )
    # One card for the inertia, a point a step, and every step reported.
    assert [count for _, count in watcher.cards] == list(range(steps + 1))
    assert watcher.steps == [(step, steps) for step in range(1, steps + 1)]


def test_char_sampler_learns_the_text_and_samples_it():
    text, namespace = run_example("17_char_sampler.py")
    codes, windows, context_size = namespace["CODES"], namespace["WINDOWS"], namespace["CONTEXT"]
    alphabet = namespace["ALPHABET"]
    losses = namespace["losses"]
    # Untrained, the logits are within a standard deviation of 1 of zero: close to a uniform guess.
    assert abs(losses[0] - math.log(len(alphabet))) < 0.5
    assert f"a uniform guess scores {math.log(len(alphabet)):.4f}" in text
    # No model scores the text below the entropy of the next character given the window (Gibbs); the
    # trained one comes within 0.05 nats of it, from 3.5.
    following = {}
    for window, after in zip(map(tuple, windows), codes[context_size:]):
        following.setdefault(window, []).append(after)
    floor = -sum(
        count * math.log(count / len(afters))
        for afters in following.values()
        for count in np.unique(afters, return_counts=True)[1]
    ) / len(windows)
    assert floor - 1e-9 <= losses[-1] < floor + 0.05
    # The samples: the text's first five characters, then 120 drawn; at temperature 0.5 nearly every
    # word is one of the text's, at 2.0 fewer (the last word may be cut short, so it is left out).
    samples = dict(re.findall(r"^sampled at temperature ([0-9.]+):\n(.*?)(?=\n\nsampled|\n?\Z)", text, re.M | re.S))
    assert sorted(samples) == ["0.5", "1.0", "2.0"]
    words = set(re.findall(r"[A-Za-z]+", namespace["TEXT"]))
    shares = {}
    for heat, sample in samples.items():
        assert sample.startswith(namespace["TEXT"][:context_size]) and len(sample) == context_size + namespace["LENGTH"]
        drawn = re.findall(r"[A-Za-z]+", sample)[:-1]
        shares[heat] = sum(word in words for word in drawn) / len(drawn)
    assert shares["0.5"] >= 0.8 > shares["2.0"]
    # The drawn characters are categorical's on XLA too: the same sampling plan gives the same first draws.
    network, parameters = namespace["network"], namespace["parameters"]
    context, key, temperature, drawn = (namespace[name] for name in ("context", "key", "temperature", "drawn"))
    sampler = network.entry([drawn]).lower()
    sample = samples["1.0"]
    for i in range(10):
        window = np.array([[alphabet.index(c) for c in sample[i : i + context_size]]], dtype=np.int32)
        feeds = {context: window, temperature: 1.0, key: topos.fold_in(topos.random_key(1), i)}
        assert (
            alphabet[int(sampler.run(parameters, feeds, backend="xla").of(drawn).numpy()[0])]
            == sample[i + context_size]
        )


# 18-19: loops recorded once: a character RNN through scan, heat on a ring through fori_loop --------------


def load_module(name):
    """An example as a module under another name: it records its network and trains nothing."""
    spec = importlib.util.spec_from_file_location(f"gallery_{name[:-3]}", os.path.join(EXAMPLES, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scan_row(network):
    """The spec's row of the network's one Scan node (its body printed once under it)."""
    (row,) = [line for line in network.describe().splitlines() if re.match(r" *\d+  Scan ", line)]
    return row


def test_char_rnn_is_one_scan_and_its_state_carries_the_context():
    text, namespace = run_example("18_char_rnn.py")
    alphabet, losses, length = namespace["ALPHABET"], namespace["losses"], namespace["LENGTH"]
    # The recorded loss is an RNN's: numpy's loop over the same pieces, with the weights of the last run.
    w = trained_weights(namespace)
    now, after = namespace["pieces"](namespace["CODES"])
    h, log_p = np.zeros((namespace["PIECES"], namespace["HIDDEN"])), []
    for t in range(length):
        h = np.tanh(w["embedding"][now[t]] @ w["wx"] + h @ w["wh"] + w["b"])
        logits = h @ w["wo"] + w["bo"]
        shifted = logits - logits.max(axis=-1, keepdims=True)
        log_p.append(shifted[np.arange(len(h)), after[t]] - np.log(np.exp(shifted).sum(axis=-1)))
    expected = -np.mean(log_p)
    run = namespace["run"]
    assert_close(run.of(namespace["loss"]).numpy(), expected, library_bound(expected, "float64", now.size), "loss")
    # Untrained, the logits are within a standard deviation of 1 of zero: close to a uniform guess.
    assert abs(losses[0] - math.log(len(alphabet))) < 0.5
    # A model that sees only the current character scores no better than the entropy of the next character
    # given it (Gibbs); the RNN goes below a quarter of that, so its state carries what came before.
    following = {}
    for character, next_character in zip(now.ravel(), after.ravel()):
        following.setdefault(character, []).append(next_character)
    floor = (
        -sum(
            count * math.log(count / len(afters))
            for afters in following.values()
            for count in np.unique(afters, return_counts=True)[1]
        )
        / now.size
    )
    assert floor > 1.0 and losses[-1] < 0.25 * floor
    # The recording does not grow with the sequence length: the step is one Scan's body, printed once.
    network = namespace["network"]
    assert f"body=<10 nodes> length={length} carries=1" in scan_row(network)
    module = load_module("18_char_rnn.py")
    module.CODES = np.tile(module.CODES, 100)  # long enough for eight pieces of 2,600
    for characters in (5, 2600):
        module.LENGTH = characters
        longer, _ = topos.Tape.record(module.build)
        assert len(longer) == len(network) and f"length={characters} " in scan_row(longer)
    assert f"the recording: {len(network)} nodes, the step recorded once for its {length} repeats" in text
    # It writes from the text's first character: WRITTEN more, most of their words the poem's.
    written = text.split("written, a character a run:\n", 1)[1].rstrip("\n")
    assert written.startswith(namespace["TEXT"][0]) and len(written) == 1 + namespace["WRITTEN"]
    words = re.findall(r"[A-Za-z]+", written)[:-1]  # the last may be cut short
    assert sum(word in set(re.findall(r"[A-Za-z]+", namespace["TEXT"])) for word in words) >= 0.8 * len(words)


def test_heat_equation_is_the_numpy_loop_and_learns_both_coefficients():
    import torch

    watcher = Watcher()
    with show.watch(watcher):
        text, namespace = run_example("19_heat_equation.py")
    network, final, loss = namespace["network"], namespace["final"], namespace["loss"]
    start, observed, steps = namespace["start"], namespace["observed"], namespace["TIME_STEPS"]
    # The recorded loop is numpy's: at the learned coefficients, the final field of the same 60 steps. Each
    # step is a non-negative combination of the cells (weights d, 1 - 2d - k, d) that cannot grow the largest
    # |u|, each side rounds its 6 operations within gamma_6 (1 + 4d + k) max|u|, and a step cannot amplify
    # the rounding that came before: 2 n gamma_6 (1 + 4d + k) max|u_0| after n steps.
    run = namespace["run"]
    d, k = run.of(namespace["d"]).scalar(), run.of(namespace["k"]).scalar()
    assert 0.0 < 2.0 * d + k <= 1.0
    by_numpy = namespace["simulate_numpy"](start, d, k, steps)
    bound = 2 * steps * gamma(6, "float64") * (1 + 4 * d + k) * np.abs(start).max()
    assert np.abs(run.of(final).numpy() - by_numpy).max() <= bound
    # The gradient through the loop, at the start, is torch's through the same loop unrolled (a sum over
    # 60 steps of 64 cells).
    parameters = network.parameters()
    gradients = network.forward(parameters, {}).backward(loss).parameters(parameters)
    by_name = {network.node(symbol).name: gradients.of(symbol).numpy() for symbol in parameters.symbols()}
    found = [by_name["log_d"], by_name["log_k"]]
    log_d, log_k = (torch.tensor(np.log(value), dtype=torch.float64, requires_grad=True) for value in (0.1, 0.05))
    u = torch.tensor(start)
    for _ in range(steps):
        u = u + log_d.exp() * (torch.roll(u, 1) - 2.0 * u + torch.roll(u, -1)) - log_k.exp() * u
    torch.mean((u - torch.tensor(observed)) ** 2).backward()
    for value, expected in zip(found, (log_d.grad.item(), log_k.grad.item())):
        assert_close(value, expected, library_bound(expected, "float64", steps * len(start)), "the gradient")
    # Learned from a noise-free observation, whose only zero-loss point is the truth: near it the loss is
    # (1/N) |J e|^2 (J the final field's Jacobian in log D and log k, e the error in them), so |e| is within
    # sqrt(loss / smallest eigenvalue of J^T J / N), with room (2x) for the loss's curvature beyond J.
    truth = np.log([namespace["TRUE_D"], namespace["TRUE_K"]])
    learned = np.log([d, k])

    def field(log_parameters):
        return namespace["simulate_numpy"](start, *np.exp(log_parameters), steps)

    h = 1e-6
    jacobian = np.stack([(field(truth + h * e) - field(truth - h * e)) / (2 * h) for e in np.eye(2)], axis=1)
    smallest = np.linalg.eigvalsh(jacobian.T @ jacobian / len(start))[0]
    distance = np.sqrt(np.mean((field(learned) - observed) ** 2) / smallest)
    assert np.linalg.norm(learned - truth) <= 2 * distance + 1e-12
    assert distance < 1e-5, "learned to five digits"
    assert f"learned D = {d:.4f} (true 0.3), k = {k:.4f} (true 0.01)" in text
    losses = namespace["losses"]
    assert losses[-1] < 1e-6 * losses[0]
    # The recording does not grow with the number of steps: 10 or 10,000, one Scan holding the step.
    module = load_module("19_heat_equation.py")
    for count in (10, 10_000):
        module.TIME_STEPS = count
        longer, _ = topos.Tape.record(module.build)
        assert len(longer) == len(network) and f"length={count} " in scan_row(longer)
    # Two cards, made before the first step: the field (observed and simulated, a point a cell), redrawn at
    # every step and once trained, and the loss, a point a step; every step reported.
    field_card, curve = watcher.cards[0][0], watcher.cards[1][0]
    assert [card for card, _ in watcher.cards].count(field_card) == len(losses) + 2
    assert [count for card, count in watcher.cards if card is curve] == list(range(len(losses) + 1))
    layers = field_card.to_json()["layers"]
    assert [layer["label"] for layer in layers] == ["observed", "simulated"]
    np.testing.assert_array_equal(layers[1]["y"], run.of(final).numpy())
    assert curve.to_json()["layers"][0]["y"] == losses
    assert watcher.steps == [(step, len(losses)) for step in range(1, len(losses) + 1)]
    printed = printed_steps(text)
    assert len(printed) >= 4 and all(abs(losses[step] - value) <= unit for step, (value, unit) in printed.items())


def test_mandelbrot_is_numpys_escape_loop_and_the_data_decide_the_trip_count():
    watcher = Watcher()
    with show.watch(watcher):
        text, namespace = run_example("20_mandelbrot.py")
    network, limit = namespace["network"], namespace["LIMIT"]
    assert re.search(r"^ +\d+  While .* cond_body=<\d+ nodes> body=<\d+ nodes>", network.describe(), re.M)
    cards = [card for card, _ in watcher.cards]
    assert [card.kind for card in cards] == ["heatmap", "heatmap"]
    taken = {}
    for (x_range, y_range), title, card in zip(
        (namespace["WHOLE"], namespace["BESIDE"]), ("the whole set", "beside it"), cards
    ):
        times, taken[title] = namespace["draw"](x_range, y_range, title)
        # numpy's loop of the same operations: only correctly rounded +, -, * and comparisons, no library
        # function and no sum but the count of points inside (exact), so IEEE 754 fixes every bit.
        c_re, c_im = namespace["view"](x_range, y_range)
        z_re, z_im, expected, steps = np.zeros_like(c_re), np.zeros_like(c_re), np.zeros_like(c_re), 0
        while steps < limit and np.sum(z_re * z_re + z_im * z_im <= 4.0) > 0:
            inside = z_re * z_re + z_im * z_im <= 4.0
            z_re, z_im = (
                np.where(inside, z_re * z_re - z_im * z_im + c_re, z_re),
                np.where(inside, 2.0 * z_re * z_im + c_im, z_im),
            )
            expected, steps = expected + inside, steps + 1
        np.testing.assert_array_equal(times, expected)
        assert taken[title] == steps
        kept = int(np.sum(expected >= limit))
        assert (
            f"{title}, x {x_range} y {y_range}: the loop ran {steps} steps; {kept} points of {times.size} kept in"
            in text
        )
        # One heatmap a view, over the view, titled with the steps the loop took.
        data = card.to_json()
        assert data["title"] == f"{title}: {steps} steps" and data["shape"] == list(expected.shape)
        assert (data["x_range"], data["y_range"]) == (list(x_range), list(y_range))
    # The trip count is the data's, in one recording: the whole set holds points that never escape, so the
    # loop runs to its limit; beside the set every point escapes, and the loop stops with the last.
    assert taken["the whole set"] == limit > taken["beside it"]
    # The recording does not grow with the limit: the condition and the step are the While's bodies.
    module = load_module("20_mandelbrot.py")
    for count in (10, 10_000):
        module.LIMIT = count
        longer, _ = topos.Tape.record(module.build)
        assert len(longer) == len(network)
