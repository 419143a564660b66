"""Gaussian-process regression whose kernel Adam fits by its log marginal likelihood, beside ridge regression.

Twenty-four noisy samples of sin(x) on [-3, 3]. The Gaussian process's kernel is
``s^2 exp(-(x - x')^2 / (2 l^2)) + sigma^2 I`` with three parameters, the logs of
the length ``l``, the scale ``s`` and the noise ``sigma``. Its negative log
marginal likelihood, ``y^T K^-1 y / 2 + log det K / 2 + n log(2 pi) / 2``, is
recorded with ``topos.linalg.cholesky`` and ``cho_solve`` (the data fit) and
``topos.linalg.slogdet`` (the volume), so the factorisations are nodes of every
reading and Adam's gradient flows through their derivatives. The posterior
mean on a grid is the kernel between the grid and the samples times
``K^-1 y``. As a baseline, ridge regression of a cubic is one
``topos.linalg.solve`` of its normal equations in the same recording.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

POINTS = 24
STEPS = 150
RIDGE = 0.1

rng = np.random.default_rng(0)
x_data = np.sort(rng.uniform(-3.0, 3.0, POINTS))
y_data = np.sin(x_data) + rng.normal(0.0, 0.1, POINTS)
grid = np.linspace(-3.0, 3.0, 61)


def kernel(a, b, log_length, log_scale):
    """The squared-exponential kernel between the points of a and of b."""
    distance = (a[:, None] - b[None, :]) ** 2
    return topos.exp(2.0 * log_scale - distance * topos.exp(-2.0 * log_length) / 2.0)


def build(tape):
    x = tape.input(x_data, name="x")
    y = tape.input(y_data, name="y")
    points = tape.input(grid, name="grid")
    log_length = tape.parameter(np.array(0.0), name="log_length")
    log_scale = tape.parameter(np.array(0.0), name="log_scale")
    log_noise = tape.parameter(np.array(-1.0), name="log_noise")
    k = kernel(x, x, log_length, log_scale) + topos.exp(2.0 * log_noise) * np.eye(POINTS)
    alpha = topos.linalg.cho_solve(topos.linalg.cholesky(k), y)  # K^-1 y
    _, logdet = topos.linalg.slogdet(k)
    nll = topos.sum(y * alpha) / 2.0 + logdet / 2.0 + POINTS * np.log(2.0 * np.pi) / 2.0
    mean = topos.matmul(kernel(points, x, log_length, log_scale), alpha)
    # Ridge regression of a cubic: (X^T X + lambda I) w = X^T y, one solve.
    features = topos.stack([x**0, x, x**2, x**3], axis=1)
    gram = topos.matmul(features.T, features) + RIDGE * np.eye(4)
    weights = topos.linalg.solve(gram, topos.matmul(features.T, y))
    ridge = topos.matmul(topos.stack([points**0, points, points**2, points**3], axis=1), weights)
    return [mean, ridge, log_length, log_scale, log_noise, nll]


def fit_plot(mean, ridge):
    plot = Plot().layer(Line.xy(x_data, y_data).label("samples"))
    if mean is not None:  # the fits, once trained
        plot = plot.layer(Line.xy(grid, mean).label("GP mean")).layer(Line.xy(grid, ridge).label("ridge cubic"))
    return plot.title("the fit").x_label("x").y_label("y")


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("loss")).title("training").x_label("step").y_label("-log likelihood")


network, (mean, ridge, log_length, log_scale, log_noise, nll) = Tape.record(build)


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line); the playground's readings read the recording above and train nothing.
if __name__ == "__main__":
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.05)
    state = optimizer.init(parameters)
    losses = []
    # Both cards first (the fit shows the samples until the training ends), then the printed lines.
    fit = show.plot(fit_plot(None, None))
    curve = show.plot(loss_plot(losses))
    for step in range(STEPS):
        run = network.forward(parameters, {})
        losses.append(run.of(nll).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 50 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}  (-log likelihood)")
        gradients = run.backward(nll).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    run = network.forward(parameters, {})
    length, scale, noise = (float(np.exp(parameters.of(p).numpy())) for p in (log_length, log_scale, log_noise))
    print(f"length {length:.3f}  scale {scale:.3f}  noise {noise:.3f}")
    inside = (grid >= x_data[0]) & (grid <= x_data[-1])  # where there are samples

    def error(values):
        return np.abs(values - np.sin(grid))[inside].max()

    print(f"largest error against sin x between the samples: GP mean {error(run.of(mean).numpy()):.3f}", end="")
    print(f", ridge cubic {error(run.of(ridge).numpy()):.3f}")
    fit.update(fit_plot(run.of(mean).numpy(), run.of(ridge).numpy()))
