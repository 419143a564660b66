"""Softmax regression: a linear classifier with a probability for each class.

Four seeded Gaussian clouds in five dimensions, one class each. The model is
one matrix and one bias, ``logits = x @ W + b``; ``topos.softmax`` turns the
logits into probabilities and the loss is their mean negative log at the true
class, written out from primitives (``one_hot``, ``log``, ``sum``, ``mean``).
Plain gradient descent through ``parameters.step`` fits it, its loss drawn on
a plot card that grows while it trains; at the end the loss is checked against
``topos.cross_entropy`` on the same logits, which computes it the stable way,
through ``log_softmax``. The training runs only as a program
(``if __name__ == "__main__":``), so the playground's readings, remade at
every keystroke, read the recording without training it.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.show import Line, Plot

CLASSES = 4
FEATURES = 5
SAMPLES_PER_CLASS = 50
STEPS = 200
LEARNING_RATE = 0.5

rng = np.random.default_rng(1)
centres = rng.normal(0.0, 2.0, (CLASSES, FEATURES))
features = np.concatenate([centre + rng.normal(0.0, 1.0, (SAMPLES_PER_CLASS, FEATURES)) for centre in centres])
labels = np.repeat(np.arange(CLASSES), SAMPLES_PER_CLASS)


def build(tape):
    x = tape.input(features, name="x")
    y = tape.input(labels, name="labels", dtype="int32")
    W = tape.parameter(np.zeros((FEATURES, CLASSES)), name="W")
    b = tape.parameter(np.zeros(CLASSES), name="b")
    logits = x @ W + b
    probabilities = topos.softmax(logits, axis=-1)
    picked = (topos.one_hot(y, CLASSES) * probabilities).sum(axis=-1)
    loss = -topos.log(picked).mean()
    return [probabilities, loss, topos.cross_entropy(logits, y)]


def loss_plot(losses):
    return (
        Plot()
        .layer(Line.y(losses).label("mean -log p(true class)"))
        .title("softmax regression, plain gradient descent")
        .x_label("step")
        .y_label("loss")
    )


network, (probabilities, loss, reference_loss) = Tape.record(build)


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line). The playground's readings, remade at every keystroke, run the file under
# another name: they read the recording above, and a keystroke never waits for the training.
if __name__ == "__main__":
    parameters = network.parameters()

    losses = []
    curve = show.plot(loss_plot(losses))  # one card, updated at every step
    for step in range(STEPS + 1):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS + 1)
        if step % 25 == 0:
            accuracy = np.mean(np.argmax(run.of(probabilities).numpy(), axis=1) == labels)
            print(f"step {step:3d}  loss {losses[-1]:.4f}  accuracy {accuracy:.3f}")
        if step == STEPS:
            break
        gradients = run.backward(loss).parameters(parameters)
        parameters = parameters.step(gradients, lambda w, g: w - g * LEARNING_RATE)

    print(f"the same loss through topos.cross_entropy: {run.of(reference_loss).scalar():.4f}")
    print(f"the first sample's class probabilities: {np.round(run.of(probabilities).numpy()[0], 3)}")
