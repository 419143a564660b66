"""A scalar chain and its gradient: the first example of the getting-started page.

Three scalar sources (a parameter ``w`` and two inputs ``x`` and ``y``) feed a
short chain, ``loss = (w x - y)^2``. The tape prints one line a node; the
reverse scan then gives the derivative of the loss with respect to every
source, which the printout sets beside the formulas worked out by hand.
"""

from topos import Tape


def build(tape):
    w = tape.parameter(0.5)
    x = tape.input(2.0)
    y = tape.input(4.0)
    error = w * x - y
    return [w, x, y, error * error]


# The spec reading: record the chain on an open tape and print it.
tape = Tape()
w, x, y, loss = build(tape)
print(tape.describe())
print()

# The same recording, sealed into a network, run forward and then backward.
network, (w, x, y, loss) = Tape.record(build)
run = network.forward(network.parameters(), {})
gradients = run.backward(loss)
print(f"loss = (w x - y)^2           = {run.of(loss)}")
print(f"d loss / d w = 2 (w x - y) x = {gradients.of(w)}")
print(f"d loss / d x = 2 (w x - y) w = {gradients.of(x)}")
print(f"d loss / d y = -2 (w x - y)  = {gradients.of(y)}")
