"""A multilayer perceptron classifies three interleaved spirals.

The data set is synthetic and seeded: 240 points in the plane on three spiral
arms, one class an arm, with a little noise. A network of two hidden ReLU
layers maps each point to three logits; ``topos.cross_entropy`` scores them
against the int32 labels. ``optim.SGD`` with momentum trains it full-batch,
as a pure transform of ``(parameters, gradients, state)``. The loss falls, on
a plot card that grows while it trains, and the training accuracy climbs well
above the one in three of a guess. The training runs only as a program
(``if __name__ == "__main__":``), so the playground's readings, remade at
every keystroke, read the recording without training it.

A recording has fixed shapes, so to score 60 held-out points (a batch of
another size) the model is recorded again over them, and that network adopts
the trained parameters by name (``held_out.adopt(parameters)``).
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

CLASSES = 3
POINTS_PER_CLASS = 80
HELD_OUT_PER_CLASS = 20
HIDDEN = 32
STEPS = 300

rng = np.random.default_rng(0)


def spirals(rng, per_class):
    """``per_class`` points on each of ``CLASSES`` spiral arms, labelled by arm."""
    features, labels = [], []
    for arm in range(CLASSES):
        radius = np.linspace(0.05, 1.0, per_class)
        angle = np.linspace(arm * 4.0, arm * 4.0 + 4.0, per_class) + rng.normal(0.0, 0.2, per_class)
        features.append(np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1))
        labels.append(np.full(per_class, arm))
    return np.concatenate(features), np.concatenate(labels)


features, labels = spirals(rng, POINTS_PER_CLASS)
# Points the model never trains on, drawn with a generator of their own.
held_out_features, held_out_labels = spirals(np.random.default_rng(1), HELD_OUT_PER_CLASS)


def layer(tape, fan_in, fan_out, name):
    """A weight matrix (He initialisation, for ReLU) and a zero bias."""
    weight = tape.parameter(rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)), name=f"{name}.weight")
    bias = tape.parameter(np.zeros(fan_out), name=f"{name}.bias")
    return weight, bias


def model(tape, points, classes):
    """Record the model and its loss over ``points`` and their ``classes``; returns ``[logits, loss]``."""
    x = tape.input(points, name="points")
    y = tape.input(classes, name="labels", dtype="int32")
    w1, b1 = layer(tape, 2, HIDDEN, "hidden1")
    w2, b2 = layer(tape, HIDDEN, HIDDEN, "hidden2")
    w3, b3 = layer(tape, HIDDEN, CLASSES, "output")
    hidden = topos.relu(x @ w1 + b1)
    hidden = topos.relu(hidden @ w2 + b2)
    logits = hidden @ w3 + b3
    return [logits, topos.cross_entropy(logits, y)]


def build(tape):
    """The model over the training points."""
    return model(tape, features, labels)


def loss_plot(losses):
    return (
        Plot()
        .layer(Line.y(losses).label("cross-entropy"))
        .title("three spirals, full-batch SGD with momentum")
        .x_label("step")
        .y_label("loss")
        .log_y()
    )


def accuracy_of(run, logits, classes):
    return np.mean(np.argmax(run.of(logits).numpy(), axis=1) == classes)


network, (logits, loss) = Tape.record(build)


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line). The playground's readings, remade at every keystroke, run the file under
# another name: they read the recording above, and a keystroke never waits for the training.
if __name__ == "__main__":
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
            print(f"step {step:3d}  loss {losses[-1]:.4f}  accuracy {accuracy_of(run, logits, labels):.3f}")
        if step == STEPS:
            break
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    # The held-out points: the same model recorded over them, with the trained parameters.
    held_out, (held_out_logits, held_out_loss) = Tape.record(
        lambda tape: model(tape, held_out_features, held_out_labels)
    )
    held_out_run = held_out.forward(held_out.adopt(parameters), {})
    held_out_accuracy = accuracy_of(held_out_run, held_out_logits, held_out_labels)
    print(
        f"held-out points: {len(held_out_labels)}, cross-entropy {held_out_run.of(held_out_loss).scalar():.4f}, "
        f"classified right {held_out_accuracy:.3f}"
    )
