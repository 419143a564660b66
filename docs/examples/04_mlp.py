"""A multilayer perceptron classifies three interleaved spirals.

The data set is synthetic and seeded: 240 points in the plane on three spiral
arms, one class an arm, with a little noise. A network of two hidden ReLU
layers maps each point to three logits; ``topos.cross_entropy`` scores them
against the int32 labels. ``optim.SGD`` with momentum trains it full-batch,
as a pure transform of ``(parameters, gradients, state)``. The loss falls, on
a plot card that grows while it trains, and the training accuracy climbs well
above the one in three of a guess.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

CLASSES = 3
POINTS_PER_CLASS = 80
HIDDEN = 32
STEPS = 300

rng = np.random.default_rng(0)


def spirals():
    """Points on ``CLASSES`` spiral arms, labelled by arm."""
    features, labels = [], []
    for arm in range(CLASSES):
        radius = np.linspace(0.05, 1.0, POINTS_PER_CLASS)
        angle = np.linspace(arm * 4.0, arm * 4.0 + 4.0, POINTS_PER_CLASS) + rng.normal(0.0, 0.2, POINTS_PER_CLASS)
        features.append(np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1))
        labels.append(np.full(POINTS_PER_CLASS, arm))
    return np.concatenate(features), np.concatenate(labels)


features, labels = spirals()


def layer(tape, fan_in, fan_out, name):
    """A weight matrix (He initialisation, for ReLU) and a zero bias."""
    weight = tape.parameter(rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)), name=f"{name}.weight")
    bias = tape.parameter(np.zeros(fan_out), name=f"{name}.bias")
    return weight, bias


def build(tape):
    x = tape.input(features, name="points")
    y = tape.input(labels, name="labels", dtype="int32")
    w1, b1 = layer(tape, 2, HIDDEN, "hidden1")
    w2, b2 = layer(tape, HIDDEN, HIDDEN, "hidden2")
    w3, b3 = layer(tape, HIDDEN, CLASSES, "output")
    hidden = topos.relu(x @ w1 + b1)
    hidden = topos.relu(hidden @ w2 + b2)
    logits = hidden @ w3 + b3
    return [logits, topos.cross_entropy(logits, y)]


def loss_plot(losses):
    return (
        Plot()
        .layer(Line.y(losses).label("cross-entropy"))
        .title("three spirals, full-batch SGD with momentum")
        .x_label("step")
        .y_label("loss")
        .log_y()
    )


network, (logits, loss) = Tape.record(build)
parameters = network.parameters()
optimizer = optim.SGD(lr=0.1, momentum=0.9)
state = optimizer.init(parameters)

losses = []
curve = show.plot(loss_plot(losses))  # one card, updated at every step
for step in range(STEPS + 1):
    run = network.forward(parameters, {})
    losses.append(run.of(loss).scalar())
    curve.update(loss_plot(losses))
    show.progress(step + 1, total=STEPS + 1)
    if step % 50 == 0:
        accuracy = np.mean(np.argmax(run.of(logits).numpy(), axis=1) == labels)
        print(f"step {step:3d}  loss {losses[-1]:.4f}  accuracy {accuracy:.3f}")
    if step == STEPS:
        break
    gradients = run.backward(loss).parameters(parameters)
    parameters, state = optimizer.step(parameters, gradients, state)
