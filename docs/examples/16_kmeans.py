"""k-means in topos: Lloyd's step recorded once, then run until the centroids settle.

Three hundred points in the plane fall in four seeded Gaussian blobs. One
recording is one step of Lloyd's algorithm: the squared distance from every
point to every centroid (a [300, 4] table, by broadcasting), ``topos.argmin``
along the centroids to assign each point to its nearest, then the new
centroids as means: ``topos.scatter_add`` adds each point into its centroid's
row, a second ``scatter_add`` adds a one there (the counts), and the sums over
the counts are the means. The centroids are the recording's parameter,
replaced each run by the last run's new ones, so the one recording is the whole
algorithm. The step also reads out the inertia, the sum of each point's squared
distance to its nearest centroid, which Lloyd's step never raises: the script
prints it falling and draws it, then sets the centroids it finds beside the
centres the blobs were drawn around. No gradient moves the centroids, but the
gradient reading has one: d inertia / d centroids is 2 (count c - sum) for each
centroid, zero exactly at the mean, which is why the mean is the step. Every
reading shows the step (``ArgMin`` and ``ScatterAdd`` in the spec and the graph,
the scatters as ``stablehlo.scatter`` in the HLO reading).
"""

import numpy as np

import topos
from topos import Tape, show
from topos.show import Line, Plot

CLUSTERS = 4
PER_CLUSTER = 75
STEPS = 10
SPREAD = 0.6  # each blob's standard deviation along each axis

rng = np.random.default_rng(3)
true_centres = np.array([[-2.0, -1.5], [2.5, -1.0], [0.5, 2.5], [-3.0, 2.0]])
points = np.concatenate([centre + rng.normal(0.0, SPREAD, (PER_CLUSTER, 2)) for centre in true_centres])
rng.shuffle(points)
start = points[:CLUSTERS]  # the first four points (after the shuffle) are the first centroids


def build(tape):
    x = tape.input(points, name="points")
    centroids = tape.parameter(start, name="centroids")
    distances = topos.sum(topos.square(x[:, None, :] - centroids[None, :, :]), axis=-1)  # [300, 4]
    nearest = topos.argmin(distances, axis=1)  # int32 [300]: each point's centroid
    inertia = topos.sum(topos.min(distances, axis=1))
    sums = topos.scatter_add(tape.leaf(np.zeros((CLUSTERS, 2))), nearest, x)  # [4, 2]
    counts = topos.scatter_add(tape.leaf(np.zeros(CLUSTERS)), nearest, tape.leaf(np.ones(len(points))))
    # A centroid no point chose keeps its place rather than dividing by zero.
    moved = topos.where(topos.greater(counts, 0.0)[:, None], sums / topos.maximum(counts, 1.0)[:, None], centroids)
    return [centroids, inertia, moved, counts]


network, (centroids, inertia, moved, counts) = Tape.record(build)


def inertia_plot(values):
    return Plot().layer(Line.y(values).label("inertia")).title("Lloyd's steps").x_label("step").y_label("inertia")


if __name__ == "__main__":
    parameters = network.parameters()  # the centroids, as they start
    inertias = []
    curve = show.plot(inertia_plot(inertias))  # one card, a point a step
    for step in range(STEPS):
        run = network.forward(parameters, {})
        inertias.append(run.of(inertia).scalar())
        curve.update(inertia_plot(inertias))
        show.progress(step + 1, total=STEPS)
        print(f"step {step:2d}  inertia {inertias[-1]:9.4f}  points per centroid {run.of(counts).numpy().astype(int)}")
        parameters = parameters.replace({"centroids": run.of(moved).numpy()})

    # Settled: the gradient at the centroids found is zero, to rounding, and each blob's centre has its centroid.
    slope = network.forward(parameters, {}).backward(inertia).parameters(parameters).of(centroids).numpy()
    print(f"d inertia / d centroids at the centroids found is zero (below 1e-9): {bool(np.abs(slope).max() < 1e-9)}")
    found = parameters.of(centroids).numpy()
    print("true centre      found centroid")
    for centre in true_centres:
        nearest = found[np.argmin(np.sum((found - centre) ** 2, axis=1))]
        print(f"({centre[0]:5.2f}, {centre[1]:5.2f})   ({nearest[0]:5.2f}, {nearest[1]:5.2f})")
