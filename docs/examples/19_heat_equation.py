"""Heat on a ring, stepped by ``topos.fori_loop``, its two coefficients learned through the loop.

A ring of metal, 64 cells around, starts with two warm patches and cools while
the heat spreads: each time step is the explicit finite-difference update of
``u_t = D u_xx - k u``, the Laplacian read from the neighbours ``topos.roll``
brings in (a ring has no ends). ``topos.fori_loop`` records the step once, as the
body of one ``Scan`` node, and runs it 60 times: the spec shows the step once and
the recording does not grow with the number of steps. The observed field is the
ring after 60 steps with D = 0.3 and k = 0.01, computed with numpy. From D = 0.1
and k = 0.05, Adam fits log D and log k so that the simulated final field meets
the observed one, the gradient flowing back through the 60 steps (the loop's
derivative is a second loop, over the step's derivative). Two smooth parameters
need no momentum, which here only makes them circle the answer: betas=(0, 0.999).
One card draws the field, observed against simulated, as it trains; one the loss.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

CELLS, TIME_STEPS, STEPS = 64, 60, 80  # the ring's cells; the loop's trip count; Adam's steps
TRUE_D, TRUE_K = 0.3, 0.01  # diffusion (cells^2 a step; stable below 0.5) and cooling (a step)
position = np.arange(CELLS)
start = np.exp(-0.5 * ((position - 16) / 3.0) ** 2) + 0.6 * np.exp(-0.5 * ((position - 40) / 5.0) ** 2)


def heat_step(u, d, k):
    """One explicit step: what the neighbours give by diffusion, less what the cell loses by cooling."""
    return u + d * (topos.roll(u, 1) - 2.0 * u + topos.roll(u, -1)) - k * u


def simulate_numpy(u, d, k, steps):  # the same updates with numpy's roll: the observation
    for _ in range(steps):
        u = u + d * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1)) - k * u
    return u


observed = simulate_numpy(start, TRUE_D, TRUE_K, TIME_STEPS)


def build(tape):
    log_d = tape.parameter(np.log(0.1), name="log_d")
    log_k = tape.parameter(np.log(0.05), name="log_k")
    d, k = topos.exp(log_d), topos.exp(log_k)
    u0 = tape.input(start, name="start")
    final = topos.fori_loop(0, TIME_STEPS, lambda i, u: heat_step(u, d, k), u0)  # one Scan node
    error = final - tape.input(observed, name="observed")
    loss = topos.mean(error * error)
    return [final, d, k, loss]  # the loss last: the gradient reading's target is the last scalar


network, (final, d, k, loss) = Tape.record(build)


def field_plot(simulated):
    return (
        Plot()
        .layer(Line.xy(position, observed).label("observed"))
        .layer(Line.xy(position, simulated).label("simulated"))
        .title(f"the ring after {TIME_STEPS} steps")
        .x_label("cell")
        .y_label("temperature")
    )


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("loss")).title("training").x_label("step").y_label("mean square").log_y()


if __name__ == "__main__":
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.1, betas=(0.0, 0.999))  # no momentum: see the docstring
    state = optimizer.init(parameters)
    losses = []
    field = show.plot(field_plot(network.forward(parameters, {}).of(final).numpy()))
    curve = show.plot(loss_plot(losses))
    for step in range(STEPS):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        field.update(field_plot(run.of(final).numpy()))
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 20 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.3e}  D {run.of(d).scalar():.4f}  k {run.of(k).scalar():.4f}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    run = network.forward(parameters, {})
    field.update(field_plot(run.of(final).numpy()))
    print(f"learned D = {run.of(d).scalar():.4f} (true {TRUE_D}), k = {run.of(k).scalar():.4f} (true {TRUE_K})")
    print(f"the recording: {len(network)} nodes, the step's {TIME_STEPS} repeats inside one Scan")
