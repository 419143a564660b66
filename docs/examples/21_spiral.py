"""A small network learns two interleaved spirals, its decision boundary redrawn as it trains.

TensorFlow Playground's hardest data set: 200 points in the plane on two spiral
arms, one class an arm, seeded, with a little noise. A multilayer perceptron
(two tanh layers of 16) gives each point two logits, which
``topos.cross_entropy`` scores against the labels; Adam trains it full-batch.

Every ``REDRAW_EVERY`` steps the model is run over a 48x48 grid of the square
the spirals lie in (the same model recorded again over the grid's points,
adopting the trained parameters by name), and ``show.heatmap`` draws the
probability of class 1 there, the training points over it coloured by class:
one card, updated in place (``boundary.update(...)``), so that in the
playground's Run mode the boundary bends round the arms while the loss falls
on the plot card above it. The scale is diverging over [0, 1]: blue where the
network says class 0, red where it says class 1, white on the boundary.

It records in float64 (the default), so that it prints, and draws, the same on
every CPU. The training runs only as a program (``if __name__ ==
"__main__":``): the playground's readings read the recording without training.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

POINTS_PER_CLASS = 100
HIDDEN = 16
STEPS = 300
REDRAW_EVERY = 20
GRID = 48  # the heatmap's cells a side
EXTENT = (-1.2, 1.2)  # the square drawn, either axis

rng = np.random.default_rng(0)


def spirals(rng, per_class):
    """``per_class`` points on each of two arms (the second the first turned half a turn), labelled by arm."""
    radius = np.linspace(0.1, 1.0, per_class)
    angle = np.linspace(0.0, 3.0 * np.pi, per_class)
    features, labels = [], []
    for arm in range(2):
        turned = angle + arm * np.pi
        points = np.stack([radius * np.cos(turned), radius * np.sin(turned)], axis=1)
        features.append(points + rng.normal(0.0, 0.03, points.shape))
        labels.append(np.full(per_class, arm))
    return np.concatenate(features), np.concatenate(labels)


features, labels = spirals(rng, POINTS_PER_CLASS)
# The grid's cell centres, row i at the i-th y (bottom to top), column j at the j-th x: what show.heatmap reads.
edges = np.linspace(*EXTENT, GRID + 1)
centres = (edges[:-1] + edges[1:]) / 2
grid_points = np.stack(np.meshgrid(centres, centres), axis=-1).reshape(-1, 2)  # [GRID * GRID, 2], x fastest


def layer(tape, fan_in, fan_out, name):
    """A weight matrix (Glorot's scale, for tanh) and a zero bias."""
    weight = tape.parameter(rng.normal(0.0, np.sqrt(1.0 / fan_in), (fan_in, fan_out)), name=f"{name}.weight")
    bias = tape.parameter(np.zeros(fan_out), name=f"{name}.bias")
    return weight, bias


def model(tape, points, classes):
    """Record the network over ``points`` and its loss against ``classes``; returns ``[logits, loss]``."""
    x = tape.input(points, name="points")
    y = tape.input(classes, name="labels", dtype="int32")
    w1, b1 = layer(tape, 2, HIDDEN, "hidden1")
    w2, b2 = layer(tape, HIDDEN, HIDDEN, "hidden2")
    w3, b3 = layer(tape, HIDDEN, 2, "output")
    hidden = topos.tanh(x @ w1 + b1)
    hidden = topos.tanh(hidden @ w2 + b2)
    logits = hidden @ w3 + b3
    return [logits, topos.cross_entropy(logits, y)]


def build(tape):
    """The network over the training points."""
    return model(tape, features, labels)


network, (logits, loss) = Tape.record(build)


def loss_plot(losses):
    return (
        Plot().layer(Line.y(losses).label("cross-entropy")).title("two spirals, Adam").x_label("step").y_label("loss")
    )


def accuracy_of(run):
    return np.mean(np.argmax(run.of(logits).numpy(), axis=1) == labels)


def class_one_probability(grid, grid_logits, parameters):
    """The softmax probability of class 1 at each grid cell, as [GRID, GRID] (row i at the i-th y)."""
    values = grid.forward(grid.adopt(parameters), {}).of(grid_logits).numpy()
    # softmax's second column of two logits: 1 / (1 + exp(l0 - l1)).
    return (1.0 / (1.0 + np.exp(values[:, 0] - values[:, 1]))).reshape(GRID, GRID)


def draw(boundary, grid, grid_logits, parameters, step):
    options = {"title": f"decision boundary after step {step}"}
    probabilities = class_one_probability(grid, grid_logits, parameters)
    if boundary is None:
        options |= {"points": features, "classes": labels, "scale": "diverging", "range": (0, 1)}
        return show.heatmap(probabilities, EXTENT, EXTENT, **options)
    return boundary.update(probabilities, **options)


if __name__ == "__main__":
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.03)
    state = optimizer.init(parameters)
    # The same network over the grid's points (their labels unused): it adopts the parameters by name.
    grid, (grid_logits, _) = Tape.record(lambda tape: model(tape, grid_points, np.zeros(len(grid_points))))

    losses = []
    curve = show.plot(loss_plot(losses))  # one card, updated at every step
    boundary = draw(None, grid, grid_logits, parameters, 0)  # one card, redrawn every REDRAW_EVERY steps
    for step in range(STEPS + 1):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS + 1)
        if step % REDRAW_EVERY == 0 and step:
            draw(boundary, grid, grid_logits, parameters, step)
        if step % 50 == 0:
            print(f"step {step:3d}  loss {losses[-1]:.4f}  accuracy {accuracy_of(run):.3f}")
        if step == STEPS:
            break
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    probabilities = class_one_probability(grid, grid_logits, parameters)
    share = np.mean(probabilities > 0.5)
    print(f"trained: {accuracy_of(run):.3f} of the {len(labels)} points on their side of the boundary")
    print(f"the boundary gives class 1 {share:.3f} of the square")
