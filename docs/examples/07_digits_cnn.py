"""A convolutional network reads handwritten digits.

The data ships with topos: ``topos.datasets.digits()`` gives UCI's 1,797 8x8
handwritten digits (E. Alpaydin and C. Kaynak, 1998, CC BY 4.0), one channel
each, NCHW. A fixed shuffle holds 297 of them out; the network trains on the
other 1,500 and never sees those. Two blocks of ``topos.conv2d`` (3x3, padded
to keep the size), ReLU and ``topos.max_pool`` (2x2) take an image from
[1, 8, 8] to [32, 2, 2]; ``topos.dropout`` zeroes a quarter of those 128
features while it trains, and a dense layer gives the ten logits that
``topos.cross_entropy`` scores. Adam trains it on random batches of 64.

Dropout draws its mask from a key, an input of the recording like the images:
each step feeds a fresh one, ``topos.fold_in(key, step)``, so no two steps drop
the same features and a run is reproducible to the bit. The held-out images
are scored by the model recorded again without dropout, at their own batch
size, which adopts the trained parameters by name; ``topos.argmax`` of the
logits is the guess, and the share of guesses ``topos.equal`` to the labels
the accuracy, both in the recording. The loss and the held-out accuracy grow on one plot card,
a point a step (the accuracy is scored every few steps and held between). Once trained, two
image cards show what it learned and where it fails: the sixteen 3x3 kernels of the first
convolution (``show.image`` on a diverging scale: white is zero, red a weight that adds, blue
one that takes away) and every held-out digit it reads wrong, captioned with its guess and
its label.

It trains on numpy, or on WebGPU through ``topos.webgpu.DeviceTrainer``
(``main(backend=...)``); in the playground's Run mode it takes WebGPU where the
adapter is a hardware GPU, and says which ran. ``build(tape, config)`` records
the model and ``Config`` holds its sizes, so tests can rebuild exactly this model.
"""

import sys
from dataclasses import dataclass, replace

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

IMAGES, LABELS = topos.datasets.digits()  # float32 [1797, 1, 8, 8] in [0, 1], int32 [1797]
# A fixed shuffle: the set comes in the order it was written, so the held-out images are drawn across it.
ORDER = np.random.default_rng(0).permutation(len(LABELS))
HELD_OUT = 297
TRAINING_INDICES, HELD_OUT_INDICES = ORDER[:-HELD_OUT], ORDER[-HELD_OUT:]


@dataclass(frozen=True)
class Config:
    channels: tuple = (16, 32)  # feature maps of the two convolution blocks
    kernel: int = 3  # each convolution's window, padded by kernel // 2 so the size stays
    dropout: float = 0.25  # the share of the flattened features dropout zeroes while training
    classes: int = 10
    batch: int = 64  # images per training step
    learning_rate: float = 1e-2
    steps: int = 200
    print_every: int = 25
    evaluate_every: int = 10  # the held-out accuracy is scored every this many steps
    seed: int = 0
    training: bool = True  # with dropout; the held-out model is recorded without it


def features(config):
    """The flattened size after the two blocks: each 2x2 pooling halves an 8x8 image's sides."""
    side = IMAGES.shape[-1] // 2 ** len(config.channels)
    return config.channels[-1] * side * side


def record_parameters(tape, config):
    """The convolution kernels (OIHW), their biases and the dense head; He initialisation for ReLU."""
    rng = np.random.default_rng(config.seed)
    p = {}
    in_channels = IMAGES.shape[1]
    for block, out_channels in enumerate(config.channels, start=1):
        fan_in = in_channels * config.kernel * config.kernel
        kernel = rng.normal(0.0, np.sqrt(2.0 / fan_in), (out_channels, in_channels, config.kernel, config.kernel))
        p[f"conv{block}.weight"] = tape.parameter(kernel, name=f"conv{block}.weight")
        p[f"conv{block}.bias"] = tape.parameter(np.zeros(out_channels), name=f"conv{block}.bias")
        in_channels = out_channels
    width = features(config)
    head = rng.normal(0.0, np.sqrt(1.0 / width), (width, config.classes))
    p["head.weight"] = tape.parameter(head, name="head.weight")
    p["head.bias"] = tape.parameter(np.zeros(config.classes), name="head.bias")
    return p


def build(tape, config):
    """Record the model and its loss; returns ``(images, labels, key, logits, guesses, accuracy, loss)``.

    ``images`` is an input [batch, 1, 8, 8], ``labels`` int32 [batch] and ``key``
    the uint32[2] key dropout draws from (None when ``config.training`` is off:
    the model without dropout takes no key). ``guesses`` is ``argmax`` of the logits
    (int32), ``accuracy`` the share of them equal to the labels.
    """
    first = TRAINING_INDICES[: config.batch]
    images = tape.input(IMAGES[first], name="images")
    labels = tape.input(LABELS[first], name="labels", dtype="int32")
    key = tape.input(topos.random_key(config.seed), name="key", dtype="uint32") if config.training else None
    p = record_parameters(tape, config)

    x = images
    for block in range(1, len(config.channels) + 1):
        x = topos.conv2d(x, p[f"conv{block}.weight"], p[f"conv{block}.bias"], padding=config.kernel // 2)
        x = topos.max_pool(topos.relu(x), 2)
    x = x.reshape(config.batch, features(config))
    if config.training:
        x = topos.dropout(x, config.dropout, key)
    logits = x @ p["head.weight"] + p["head.bias"]
    guesses = topos.argmax(logits, axis=-1)
    accuracy = topos.mean(topos.equal(guesses, labels))
    loss = topos.cross_entropy(logits, labels)
    return images, labels, key, logits, guesses, accuracy, loss


# The recording the playground's panes read: the training step's model, dropout and its key
# included. float32, as models are trained, so that its kernels run on WebGPU.
CONFIG = Config()
network, (images, labels, key, logits, guesses, accuracy, loss) = Tape.record(
    lambda tape: build(tape, CONFIG), dtype="float32"
)


class HeldOut:
    """The held-out images through the model recorded without dropout at their batch size."""

    def __init__(self, config, dtype):
        sized = replace(config, batch=HELD_OUT, training=False)
        self.network, symbols = Tape.record(lambda tape: build(tape, sized), dtype=dtype)
        self.images, self.labels, _, _, self.guesses, self.accuracy, self.loss = symbols

    def score(self, parameters):
        """``(accuracy, cross-entropy)`` of the trained ``parameters`` on the held-out images."""
        feeds = {self.images: IMAGES[HELD_OUT_INDICES], self.labels: LABELS[HELD_OUT_INDICES]}
        run = self.network.forward(self.network.adopt(parameters), feeds)
        return run.of(self.accuracy).scalar(), run.of(self.loss).scalar()

    def read(self, parameters):
        """The digit the trained ``parameters`` read in each held-out image (int32 [297])."""
        feeds = {self.images: IMAGES[HELD_OUT_INDICES], self.labels: LABELS[HELD_OUT_INDICES]}
        return self.network.forward(self.network.adopt(parameters), feeds).of(self.guesses).numpy()


class HostTrainer:
    """Training on the host, shaped like ``topos.webgpu.DeviceTrainer``: ``step(feeds)`` returns the run."""

    def __init__(self, network, loss, parameters, optimizer):
        self.network = network
        self.loss = loss
        self.optimizer = optimizer
        self._parameters = parameters
        self._state = optimizer.init(parameters)

    def step(self, feeds):
        run = self.network.forward(self._parameters, feeds)
        gradients = run.backward(self.loss).parameters(self._parameters)
        self._parameters, self._state = self.optimizer.step(self._parameters, gradients, self._state)
        return run

    def parameters(self):
        return self._parameters


def make_trainer(backend, network, loss, parameters, optimizer):
    """A trainer on ``"numpy"`` (the host) or on ``"webgpu"`` (the parameters stay on the device)."""
    if backend == "webgpu":
        plan = network.entry([loss]).backward(loss).lower()
        return topos.webgpu.DeviceTrainer(plan, parameters, optimizer)
    return HostTrainer(network, loss, parameters, optimizer)


def choose_backend(backend):
    """``(backend, adapter name or None)``: ``"auto"`` is WebGPU on a hardware GPU, numpy elsewhere
    (lavapipe and SwiftShader are CPUs, on which numpy trains faster)."""
    if backend == "auto":
        if topos.webgpu.available() and not topos.webgpu.adapter().software:
            return "webgpu", topos.webgpu.adapter().name
        return "numpy", None
    if backend == "webgpu":
        return "webgpu", topos.webgpu.adapter().name
    if backend == "numpy":
        return "numpy", None
    raise ValueError(f'backend is "numpy", "webgpu" or "auto", got {backend!r}')


def training_plot(losses, accuracies, where):
    return (
        Plot()
        .layer(Line.y(losses).label(f"training loss on {where}"))
        .layer(Line.y(accuracies).label("held-out accuracy"))
        .title("a CNN learns the 8x8 digits")
        .x_label("step")
        .y_label("cross-entropy / accuracy")
    )


def main(config=CONFIG, dtype="float64", backend="numpy"):
    """Train for ``config.steps`` Adam steps; returns ``(losses, held-out accuracies, trained parameters)``,
    a loss and an accuracy a step.

    ``backend``: ``"numpy"`` on the host in ``dtype``, ``"webgpu"`` through
    ``topos.webgpu.DeviceTrainer`` in float32, ``"auto"`` WebGPU on a hardware GPU
    and numpy elsewhere. On numpy it records in float64, so that it prints the same on
    every CPU; ``main(dtype="float32")`` trains as a GPU would.
    """
    backend, adapter = choose_backend(backend)
    if backend == "webgpu":
        dtype = "float32"
    where = f"WebGPU ({adapter})" if backend == "webgpu" else "numpy"
    losses, accuracies = [], []
    curve = show.plot(training_plot(losses, accuracies, where))  # one card, updated at every step
    network, (images, labels, key, _, _, _, loss) = Tape.record(lambda tape: build(tape, config), dtype=dtype)
    held_out = HeldOut(config, dtype)
    parameters = network.parameters()
    count = sum(tensor.size for _, tensor in parameters.items())
    print(f"{len(network)} nodes, {len(parameters)} parameter tensors, {count} numbers")
    print(f"{len(TRAINING_INDICES)} training images, {HELD_OUT} held out; a guess scores 0.1")
    print(f"training on {where}, {dtype}")

    trainer = make_trainer(backend, network, loss, parameters, optim.Adam(lr=config.learning_rate))
    rng = np.random.default_rng(config.seed + 1)
    base_key = topos.random_key(config.seed + 1)
    for step in range(config.steps):
        batch = rng.choice(TRAINING_INDICES, config.batch, replace=False)
        # A fresh dropout key each step: the same base key folded with the step's number.
        feeds = {images: IMAGES[batch], labels: LABELS[batch], key: topos.fold_in(base_key, step)}
        run = trainer.step(feeds)
        losses.append(run.of(loss).scalar())
        last = step == config.steps - 1
        if step % config.evaluate_every == 0 or last:
            accuracy, _ = held_out.score(trainer.parameters())
        accuracies.append(accuracy)  # the last score, held until the next
        curve.update(training_plot(losses, accuracies, where))
        show.progress(step + 1, total=config.steps)
        if step % config.print_every == 0 or last:
            print(f"step {step:3d}  loss {losses[-1]:.4f}  held-out accuracy {accuracy:.3f}")

    accuracy, held_out_loss = held_out.score(trainer.parameters())
    right = round(accuracy * HELD_OUT)
    print(
        f"held out: {right} of {HELD_OUT} images read right, accuracy {accuracy:.3f}, cross-entropy {held_out_loss:.4f}"
    )
    show_what_it_learned(trainer.parameters(), held_out)
    return losses, accuracies, trainer.parameters()


def show_what_it_learned(parameters, held_out):
    """Two image cards: the first convolution's kernels, and the held-out digits read wrong."""
    kernels = dict(parameters.items())["conv1.weight"].numpy()[:, 0]  # [16, 3, 3], one input channel
    show.image(kernels, scale="diverging", title="the first convolution's 3x3 kernels")
    guesses = held_out.read(parameters)
    truth = LABELS[HELD_OUT_INDICES]
    wrong = np.flatnonzero(guesses != truth)
    if len(wrong):
        captions = [f"read {guesses[i]}, is {truth[i]}" for i in wrong]
        digits = IMAGES[HELD_OUT_INDICES][wrong, 0]  # [wrong, 8, 8] in [0, 1]
        show.image(digits, captions=captions, scale="gray", range=(0, 1), title="held-out digits it reads wrong")


if __name__ == "__main__":
    # In the page, on a hardware GPU, the run trains on WebGPU. Run natively, as the docs are
    # built, it trains on numpy, so that it prints the same on every machine.
    main(backend="auto" if sys.platform == "emscripten" else "numpy")
