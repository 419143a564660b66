"""The Mandelbrot set by ``topos.while_loop``: a loop whose trip count the data decide.

Each point c of a 96x64 grid iterates ``z = z^2 + c`` from 0 (real and imaginary parts
as two arrays) and counts the steps before ``|z|`` passes 2, after which the point
escapes and its z stops changing (``topos.where``). ``topos.while_loop`` records the
step once, and the condition once, as one ``While`` node: the loop goes on while any
point of the grid is still inside and fewer than 60 steps have run, a test made each
time the network runs, so the same recording runs 60 times over a view that holds
part of the set (whose points never escape) and stops early over one that does not.
The grid's points are inputs: the script runs the recording over the whole set, then
over a view beside it, and draws each as a heatmap of escape times. Every reading
shows the loop: the spec prints the condition and the step once, under their node,
and the StableHLO reading holds a ``stablehlo.while`` with both as its regions.
"""

import numpy as np

import topos
from topos import Tape, show

WIDTH, HEIGHT, LIMIT = 96, 64, 60  # the grid; the most steps the loop may take


def view(x_range, y_range):
    """The grid's points c, real and imaginary parts [HEIGHT, WIDTH], row 0 at the bottom."""
    xs, ys = np.linspace(*x_range, WIDTH), np.linspace(*y_range, HEIGHT)
    return np.broadcast_to(xs, (HEIGHT, WIDTH)), np.broadcast_to(ys[:, None], (HEIGHT, WIDTH))


WHOLE = (-2.2, 0.8), (-1.0, 1.0)
BESIDE = (0.4, 1.0), (0.4, 0.8)  # outside the set: every point escapes, the last after 25 steps


def build(tape):
    real, imaginary = view(*WHOLE)
    c_re, c_im = tape.input(real, name="c_re"), tape.input(imaginary, name="c_im")

    def going_on(carry):  # rank-0: fewer than LIMIT steps so far, and a point still inside
        z_re, z_im, _, steps = carry
        inside = topos.less_equal(z_re * z_re + z_im * z_im, 4.0)
        return topos.logical_and(topos.less(steps, LIMIT), topos.greater(inside.sum(), 0.0))

    def step(carry):  # one step of z^2 + c for the points still inside; the others keep their z
        z_re, z_im, time, steps = carry
        inside = topos.less_equal(z_re * z_re + z_im * z_im, 4.0)
        new_re = topos.where(inside, z_re * z_re - z_im * z_im + c_re, z_re)
        new_im = topos.where(inside, 2.0 * z_re * z_im + c_im, z_im)
        return new_re, new_im, time + inside, steps + 1.0

    zero = tape.leaf(np.zeros((HEIGHT, WIDTH)))
    _, _, time, steps = topos.while_loop(going_on, step, (zero, zero, zero, tape.leaf(0.0)))
    return [c_re, c_im, time, steps.reshape(1)]  # the grid fed; the escape times and the steps the loop took


network, (c_re, c_im, time, steps) = Tape.record(build)


def draw(x_range, y_range, title):
    """Run the recording over one view: a heatmap of its escape times; returns them and the steps taken."""
    real, imaginary = view(x_range, y_range)
    run = network.forward(network.parameters(), {c_re: real, c_im: imaginary})
    times, taken = run.of(time).numpy(), int(run.of(steps).numpy()[0])
    show.heatmap(times, x_range, y_range, scale="gray", range=(0, LIMIT), title=f"{title}: {taken} steps")
    return times, taken


if __name__ == "__main__":
    views = [(*WHOLE, "the whole set"), (*BESIDE, "beside it")]
    drawn = [draw(*view) for view in views]  # both cards first, then the printed lines (as the docs show them)
    for (x_range, y_range, title), (times, taken) in zip(views, drawn):
        kept = int(np.sum(times >= LIMIT))
        print(f"{title}, x {x_range} y {y_range}: the loop ran {taken} steps; {kept} points of {times.size} kept in")
