"""A mixture density network on Bishop's inverse problem, its likelihood a mixture of Student-t.

Bishop's classic: y is uniform on [0, 1] and x = y + 0.3 sin(2 pi y) plus noise
(here a Student-t of 3 degrees of freedom, heavier-tailed than Bishop's uniform).
Given x, y has up to three answers: a regression to one value would draw their
mean, through none of them. The network (one hidden layer of ``tanh``) gives at
each x three components' weights, centres and scales, each component a Student-t
of ``nu`` degrees of freedom, one parameter fitted with them from 1 (a Cauchy).
The loss is the mixture's negative log-likelihood,
``-logsumexp(log_softmax(logits) + log t(y))``, ``topos.logsumexp`` adding the
components without overflow. ``topos.lgamma`` is there because the Student-t's
normalising constant, ``Gamma((nu + 1) / 2) / (Gamma(nu / 2) sqrt(nu pi) sigma)``,
depends on ``nu``: without it the loss could fall by moving ``nu`` alone, and its
derivative (digamma) is half of the gradient that brings ``nu`` near the noise's 3.
At x = 0.5 the script prints the three centres beside the three true branches.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

COMPONENTS = 3
HIDDEN = 16
STEPS = 400
PROBE = 0.5  # an x with three branches

rng = np.random.default_rng(0)


def samples(count):
    y = rng.uniform(0.0, 1.0, (count, 1))
    return y + 0.3 * np.sin(2.0 * np.pi * y) + 0.04 * rng.standard_t(3.0, (count, 1)), y


train_x, train_y = samples(500)
test_x, test_y = samples(500)


def build(tape):
    init = np.random.default_rng(1)  # the same starting weights in every recording
    w1 = tape.parameter(init.normal(0.0, 1.0, (1, HIDDEN)), name="hidden.weight")
    b1 = tape.parameter(init.normal(0.0, 1.0, HIDDEN), name="hidden.bias")
    w2 = tape.parameter(init.normal(0.0, 0.3, (HIDDEN, 3 * COMPONENTS)), name="output.weight")
    b2 = tape.parameter(np.repeat([0.0, 0.5, -2.0], COMPONENTS), name="output.bias")
    nu = topos.exp(tape.parameter(np.array(np.log(1.0)), name="log_nu"))  # positive, from 1: a Cauchy

    def mixture(x):
        """Log-weights, centres and log-scales of the three components at each x, [n, 3] each."""
        out = topos.matmul(topos.tanh(topos.matmul(x, w1) + b1), w2) + b2
        return topos.log_softmax(out[:, :COMPONENTS], axis=-1), out[:, COMPONENTS:-COMPONENTS], out[:, -COMPONENTS:]

    def nll(x, y):
        log_weight, centre, log_scale = mixture(x)
        z = (y - centre) * topos.exp(-log_scale)
        normaliser = topos.lgamma((nu + 1.0) / 2.0) - topos.lgamma(nu / 2.0) - topos.log(nu * np.pi) / 2.0
        log_t = normaliser - log_scale - (nu + 1.0) / 2.0 * topos.log1p(z * z / nu)
        return -topos.mean(topos.logsumexp(log_weight + log_t, axis=-1))

    log_weight, centre, _ = mixture(tape.input(np.array([[PROBE]]), name="probe"))
    held_out = nll(tape.input(test_x, name="held-out x"), tape.input(test_y, name="held-out y"))
    loss = nll(tape.input(train_x, name="x"), tape.input(train_y, name="y"))
    return [topos.exp(log_weight)[0], centre[0], nu, held_out, loss]


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("loss")).title("training").x_label("step").y_label("-log likelihood")


# The panes' recording: float32, so that the kernels reading shows the WGSL kernel of each node
# (lgamma's among them); the training records again in float64, which every CPU rounds alike.
network, (weight, centre, nu, held_out, loss) = Tape.record(build, dtype="float32")


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line); the playground's readings read the recording above and train nothing.
if __name__ == "__main__":
    network, (weight, centre, nu, held_out, loss) = Tape.record(build)
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.005)
    state = optimizer.init(parameters)
    losses = []
    curve = show.plot(loss_plot(losses))
    for step in range(STEPS):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 100 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}  held out {run.of(held_out).scalar():.4f}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    print(f"degrees of freedom nu = {run.of(nu).scalar():.2f}")
    grid = np.linspace(0.0, 1.0, 100001)  # the true branches: where y + 0.3 sin(2 pi y) crosses x = 0.5
    below = grid + 0.3 * np.sin(2.0 * np.pi * grid) < PROBE
    print(f"at x = {PROBE}: true branches y =", ", ".join(f"{y:.3f}" for y in grid[:-1][below[:-1] != below[1:]]))
    order = np.argsort(run.of(centre).numpy())
    print("  learned centres y =", ", ".join(f"{c:.3f}" for c in run.of(centre).numpy()[order]), end="")
    print("  weights", ", ".join(f"{w:.2f}" for w in run.of(weight).numpy()[order]))
