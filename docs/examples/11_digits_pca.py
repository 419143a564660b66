"""Principal component analysis of the bundled digits: a covariance and its eigendecomposition.

The 1797 handwritten digits of ``topos.datasets.digits()`` are 8x8 images, 64
pixel values each. The recording centres them, forms their 64x64 covariance and
takes its eigendecomposition with ``topos.linalg.eigh``: the eigenvectors of the
largest eigenvalues are the principal components, the directions along which the
images vary most, and each eigenvalue is the variance along its direction. The
images projected on the first two components are a 2-D map on which the classes
already fall apart: the script prints where three of them sit. The same components come out of ``topos.linalg.svd`` of the
centred images, whose singular values squared over n - 1 are the eigenvalues:
the recording computes both, and the script checks that they agree. The
eigendecomposition is one ``Eigh`` node, so every reading shows it (its flops in
the plan, LAPACK's syevd custom call in the HLO, the host step with its reason in
the kernels reading), and it is differentiable like any other node.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.show import Line, Plot

COMPONENTS = 2
SHOWN = 30  # the largest variances drawn: the rest fall to rounding noise (some pixels never vary)

images, labels = topos.datasets.digits()
pixels = images.reshape(len(images), -1)  # [1797, 64]


def build(tape):
    x = tape.input(pixels, name="pixels")
    centred = x - topos.mean(x, axis=0, keepdims=True)
    covariance = topos.matmul(topos.swapaxes(centred, 0, 1), centred) / (len(pixels) - 1)
    variances, directions = topos.linalg.eigh(covariance)  # ascending: the largest last
    top = directions[:, -COMPONENTS:]
    projected = topos.matmul(centred, top)  # [1797, 2]
    singular = topos.linalg.svdvals(centred)  # descending
    return [variances, projected, singular]


network, (variances, projected, singular) = Tape.record(build)


def spectrum_plot(values):
    return (
        Plot()
        .layer(Line.y(values).label("variance"))
        .title("the covariance's eigenvalues, largest first")
        .x_label("component")
        .y_label("variance")
        .log_y()
    )


if __name__ == "__main__":
    run = network.forward(network.parameters(), {})
    largest_first = run.of(variances).numpy()[::-1]
    show.plot(spectrum_plot(largest_first[:SHOWN]))
    points = run.of(projected).numpy()[:, ::-1]  # component 1, then component 2
    explained = largest_first[:COMPONENTS].sum() / largest_first.sum()
    print(f"variance along the first {COMPONENTS} components: {explained:.1%} of the total")
    from_svd = run.of(singular).numpy() ** 2 / (len(pixels) - 1)
    print("eigh and svd give the same variances:", bool(np.allclose(from_svd, largest_first, rtol=1e-6, atol=1e-6)))
    for digit in (0, 1, 6):
        centre = points[labels == digit].mean(axis=0)
        print(f"digit {digit}: mean position on components 1 and 2: ({centre[0]:6.2f}, {centre[1]:6.2f})")
