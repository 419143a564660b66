"""Learning a blur: the 3x3 kernel that reproduces a Gaussian blur of the digits, borders reflected.

Two hundred of the bundled 8x8 digits (``topos.datasets.digits()``) are blurred
by a 3x3 Gaussian kernel in numpy: each image is padded by one pixel, mirrored
at its edges (``numpy.pad``'s ``reflect``), and every output pixel is the
kernel's weighted sum of the nine around it. The model does the same in topos
with a kernel it has to learn: ``topos.pad(images, ..., mode="reflect")``
records the mirrored border (slices of the image joined to it, so every reading
shows where each border pixel comes from, and its gradient goes back to the
pixel it copies), then ``topos.conv2d`` slides the nine weights over it. Adam
fits the weights, starting from zero, to make the blurred images; the learned
kernel comes out as the Gaussian, which the script prints beside it. The same
recording sharpens too: ``2 x - blur(x)`` (an unsharp mask) adds back what the
blur takes away, and the spread of the pixel values shows both.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

IMAGES = 200
STEPS = 200
SIGMA = 0.8  # the Gaussian's width in pixels

images = topos.datasets.digits()[0][:IMAGES].astype(np.float64)  # [200, 1, 8, 8] in [0, 1]
offsets = np.arange(-1, 2)
gaussian = np.exp(-(offsets[:, None] ** 2 + offsets[None, :] ** 2) / (2 * SIGMA**2))
true_kernel = gaussian / gaussian.sum()
# The target in numpy: reflect-pad by one, then the weighted sum of the nine shifted images.
mirrored = np.pad(images, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")
blurred_target = sum(true_kernel[i, j] * mirrored[:, :, i : i + 8, j : j + 8] for i in range(3) for j in range(3))


def build(tape):
    x = tape.input(images, name="images")
    target = tape.input(blurred_target, name="blurred")
    kernel = tape.parameter(np.zeros((1, 1, 3, 3)), name="kernel")  # [out, in, height, width]
    padded = topos.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")  # [200, 1, 10, 10]
    blurred = topos.conv2d(padded, kernel)  # no padding of its own: [200, 1, 8, 8]
    sharpened = 2.0 * x - blurred
    loss = topos.mean(topos.square(blurred - target))
    return [kernel, blurred, sharpened, loss]


network, (kernel, blurred, sharpened, loss) = Tape.record(build)


def loss_plot(losses):
    return (
        Plot()
        .layer(Line.y(losses).label("loss"))
        .title("learning the blur")
        .x_label("step")
        .y_label("mean squared error")
        .log_y()
    )


if __name__ == "__main__":
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.05)
    state = optimizer.init(parameters)
    losses = []
    curve = show.plot(loss_plot(losses))  # one card, a point a step
    for step in range(STEPS):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 25 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.3e}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    learned = parameters.of(kernel).numpy()[0, 0]
    print("learned kernel          true Gaussian kernel")
    for row in range(3):
        print("  ".join(f"{w:6.4f}" for w in learned[row]), "   ", "  ".join(f"{w:6.4f}" for w in true_kernel[row]))
    run = network.forward(parameters, {})
    spread = [images.std(), run.of(blurred).numpy().std(), run.of(sharpened).numpy().std()]
    print("pixel spread (standard deviation): original {:.3f}, blurred {:.3f}, sharpened {:.3f}".format(*spread))
