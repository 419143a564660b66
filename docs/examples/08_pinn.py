"""A physics-informed network learns sin t from u'' = -u and two starting values.

No sample of the solution is given. A small network ``u(t)`` (one hidden
layer of ``tanh``) is scored by how far it is from obeying the equation
u'' + u = 0 at 32 collocation points spread over [0, 2 pi], and by the two
starting values u(0) = 0 and u'(0) = 1; the one function that does both is
sin t. Both derivatives are values of the recording: ``topos.grad`` of the
network's summed output with respect to its input ``t`` is du/dt at every
point (each output reads its own point only), and ``topos.grad`` of that, a
gradient of a gradient, is d2u/dt2. The loss holds them, so training it
differentiates through them once more, a third order, and Adam steps the
parameters as for any model.

The collocation points are an input of the recording, so the model is
recorded again over 100 points to draw the learned solution; that network
adopts the trained parameters by name. One plot card shows the learned and
the exact solution, another the loss, both redrawn every 100 steps.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

HIDDEN = 16
POINTS = 32
STEPS = 3000
DRAW_EVERY = 100
END = 2.0 * np.pi

rng = np.random.default_rng(0)
collocation = np.linspace(0.0, END, POINTS)[:, None]
drawn = np.linspace(0.0, END, 100)[:, None]  # where the plot reads the network


def model(tape, times):
    """Record u(t) over ``times`` [n, 1] and its residual loss; returns ``[loss, u, residual]``."""
    t = tape.input(times, name="t")
    w1 = tape.parameter(rng.standard_normal((1, HIDDEN)), name="hidden.weight")
    b1 = tape.parameter(rng.standard_normal(HIDDEN), name="hidden.bias")
    w2 = tape.parameter(rng.standard_normal((HIDDEN, 1)) * 0.3, name="output.weight")
    b2 = tape.parameter(np.zeros(1), name="output.bias")
    u = topos.tanh(t @ w1 + b1) @ w2 + b2
    du = topos.grad(topos.sum(u), t)  # each u[i] reads t[i] alone: du/dt at each point
    d2u = topos.grad(topos.sum(du), t)  # the gradient of a gradient: d2u/dt2
    residual = d2u + u  # zero where u obeys u'' = -u
    start = u[0, 0] ** 2 + (du[0, 0] - 1.0) ** 2  # u(0) = 0, u'(0) = 1
    return [topos.mean(residual * residual) + start, u, residual]


def build(tape):
    """The model over the collocation points."""
    return model(tape, collocation)


def solution_plot(learned):
    plot = Plot().layer(Line.xy(drawn, np.sin(drawn)).label("exact: sin t"))
    if learned is not None:
        plot = plot.layer(Line.xy(drawn, learned).label("learned u(t)"))
    return plot.title("u'' = -u, u(0) = 0, u'(0) = 1").x_label("t").y_label("u")


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("residual loss")).title("training").x_label("step").y_label("loss").log_y()


network, (loss, u, residual) = Tape.record(build)


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line). The playground's readings, remade at every keystroke, run the file under
# another name: they read the recording above, and a keystroke never waits for the training.
if __name__ == "__main__":
    picture, (_, drawn_u, _) = Tape.record(lambda tape: model(tape, drawn))
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.01)
    state = optimizer.init(parameters)

    losses = []
    solution = show.plot(solution_plot(None))
    curve = show.plot(loss_plot(losses))
    for step in range(STEPS + 1):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        show.progress(step + 1, total=STEPS + 1)
        if step % DRAW_EVERY == 0 or step == STEPS:
            learned = picture.forward(picture.adopt(parameters), {}).of(drawn_u).numpy()
            solution.update(solution_plot(learned))
            curve.update(loss_plot(losses))
        if step % 500 == 0:
            print(f"step {step:4d}  loss {losses[-1]:.2e}")
        if step == STEPS:
            break
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    error = np.max(np.abs(learned - np.sin(drawn)))
    largest_residual = np.max(np.abs(run.of(residual).numpy()))
    print(f"largest error against sin t on 100 points: {error:.3f}")
    print(f"largest residual u'' + u at the collocation points: {largest_residual:.3f}")
