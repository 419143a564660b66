"""A hundred steps toward y = 2x: the training loop of the getting-started page.

One parameter ``w`` is fitted to three samples of the line y = 2x by plain
gradient descent. Training never touches the network: each step runs it
forward on one sample, projects the gradient onto the parameter slots and
makes a new ``Parameters`` table with ``parameters.step``. A plot card shows
the loss on a log axis, one point a step, growing while it trains. The training
runs only as a program (``if __name__ == "__main__":``), so the playground's
readings, remade at every keystroke, read the recording without training it.
"""

from topos import Tape, show
from topos.show import Line, Plot


def build(tape):
    w = tape.parameter(0.0, name="w")
    x = tape.input(0.0)
    y = tape.input(0.0)
    error = w * x - y
    return [w, x, y, error * error]


def loss_plot(losses):
    return (
        Plot()
        .layer(Line.y(losses).label("loss"))
        .title("a hundred steps toward y = 2x")
        .x_label("step")
        .y_label("squared error")
        .log_y()
    )


network, (w, x, y, loss) = Tape.record(build)


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line). The playground's readings, remade at every keystroke, run the file under
# another name: they read the recording above, and a keystroke never waits for the training.
if __name__ == "__main__":
    parameters = network.parameters()

    samples = [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]
    losses = []
    curve = show.plot(loss_plot(losses))  # one card, updated at every step
    for step in range(100):
        sample_x, sample_y = samples[step % len(samples)]
        run = network.forward(parameters, {x: sample_x, y: sample_y})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=100)
        gradients = run.backward(loss).parameters(parameters)
        parameters = parameters.step(gradients, lambda w, g: w - g * 0.02)
        if step % 10 == 0 or step == 99:
            print(f"step {step:3d}  loss {losses[-1]:.3e}  w {parameters.of(w).scalar():.6f}")

    learned = parameters.of(w).scalar()
    print(f"learned w = {learned:.6f} (the samples lie on y = 2x)")
