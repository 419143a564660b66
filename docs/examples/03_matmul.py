"""A matrix product and its gradient.

A batch of three inputs with four features goes through one linear layer,
``y = x @ W + b``, and the loss is the sum of squares of ``y``. The tape shows
the ``MatMul`` node and the ``Broadcast`` node that recording inserts so that
the bias ``b`` [2] can be added to ``x @ W`` [3, 2]. The reverse scan's
gradients are set beside the ones written by hand with numpy:

    d loss / d y = 2 y
    d loss / d W = x^T (2 y)
    d loss / d b = the column sums of 2 y
    d loss / d x = (2 y) W^T
"""

import numpy as np

from topos import Tape

rng = np.random.default_rng(3)
x_data = rng.normal(size=(3, 4))
w_data = rng.normal(size=(4, 2))
b_data = rng.normal(size=(2,))


def build(tape):
    x = tape.input(x_data, name="x")
    W = tape.parameter(w_data, name="W")
    b = tape.parameter(b_data, name="b")
    y = x @ W + b
    loss = (y * y).sum()
    return [x, W, b, y, loss]


network, (x, W, b, y, loss) = Tape.record(build)
print(network.describe())
print()

run = network.forward(network.parameters(), {})
field = run.backward(loss)
print(f"loss = {run.of(loss).scalar():.6f}")

# The same derivatives written out by hand, to compare with the reverse scan.
by_hand_y = x_data @ w_data + b_data
by_hand = {
    "W": x_data.T @ (2 * by_hand_y),
    "b": (2 * by_hand_y).sum(axis=0),
    "x": (2 * by_hand_y) @ w_data.T,
}
np.set_printoptions(precision=4, suppress=True)
for name, symbol in (("W", W), ("b", b), ("x", x)):
    gradient = field.of(symbol).numpy()
    difference = np.max(np.abs(gradient - by_hand[name]))
    print(f"d loss / d {name} {list(gradient.shape)}:")
    print(gradient)
    print(f"largest difference from the hand-written gradient: {difference:.1e}")
