"""Multi-head self-attention written with einsum, trained to sort a sequence.

Each sample is eight tokens drawn from ten; the target is the same tokens in
order, smallest first, and each step trains on a fresh batch of 128. The model
is one layer of self-attention with four heads, every product in it one
``topos.einsum``: the token embedding (``'blv,ve->ble'`` of a one-hot), the
query, key and value projections of all heads at once (``'ble,ehd->bhld'``), the
scores (``'bhqd,bhkd->bhqk'``), the softmax-weighted sum of the values
(``'bhqk,bhkd->bhqd'``), the heads' output projection (``'bhqd,hde->bqe'``) and
the read-out (``'ble,ev->blv'``). einsum records the transposes, reshapes and
matrix products its subscripts mean, so the graph and plan readings show the
real work. A place knows only where it is (a learned position embedding) and
must find the token of its rank by attending to all eight; the script prints
how many held-out tokens come out in their sorted place as it trains.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

LENGTH = 8
VOCAB = 10
EMBED = 32
HEADS = 4
HEAD = EMBED // HEADS
STEPS = 150
BATCH = 128

rng = np.random.default_rng(0)
test_tokens = rng.integers(0, VOCAB, (256, LENGTH))


def build(tape):
    init = np.random.default_rng(1)  # the same starting weights in every recording

    def weight(shape, name):
        return tape.parameter(init.normal(0.0, 1.0 / np.sqrt(shape[0]), shape), name=name)

    embed, position = weight((VOCAB, EMBED), "embed"), weight((LENGTH, EMBED), "position")
    wq, wk, wv = (weight((EMBED, HEADS, HEAD), name) for name in ("query", "key", "value"))
    wo, read_out = weight((HEADS, HEAD, EMBED), "output"), weight((EMBED, VOCAB), "read-out")

    def logits(tokens):
        h = topos.einsum("blv,ve->ble", topos.one_hot(tokens, VOCAB), embed) + position
        q, k, v = (topos.einsum("ble,ehd->bhld", h, w) for w in (wq, wk, wv))
        attention = topos.softmax(topos.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(HEAD), axis=-1)
        mixed = topos.einsum("bhqk,bhkd->bhqd", attention, v)
        return topos.einsum("ble,ev->blv", h + topos.einsum("bhqd,hde->bqe", mixed, wo), read_out)

    tokens = tape.input(np.zeros((BATCH, LENGTH)), name="tokens", dtype="int32")  # fed a fresh batch each step
    targets = tape.input(np.zeros((BATCH, LENGTH)), name="sorted", dtype="int32")
    predicted = topos.argmax(logits(tape.input(test_tokens, name="held-out tokens", dtype="int32")), axis=-1)
    return [tokens, targets, predicted, topos.cross_entropy(logits(tokens), targets)]


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("cross-entropy")).title("training").x_label("step").y_label("loss")


# The panes' recording: float32, so that the kernels reading shows the WGSL kernel of each node
# (einsum's matrix products among them); the training records again in float64, which every CPU rounds alike.
network, (tokens, targets, predicted, loss) = Tape.record(build, dtype="float32")


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line); the playground's readings read the recording above and train nothing.
if __name__ == "__main__":
    network, (tokens, targets, predicted, loss) = Tape.record(build)
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.01)
    state = optimizer.init(parameters)
    losses = []
    curve = show.plot(loss_plot(losses))
    for step in range(STEPS):
        batch = rng.integers(0, VOCAB, (BATCH, LENGTH))
        run = network.forward(parameters, {tokens: batch, targets: np.sort(batch, axis=-1)})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 30 == 0 or step == STEPS - 1:
            accuracy = np.mean(run.of(predicted).numpy() == np.sort(test_tokens, axis=-1))
            print(f"step {step:3d}  loss {losses[-1]:.4f}  held-out token accuracy {accuracy:.3f}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)
    print("a held-out sequence:", test_tokens[0], "sorted by the model:", run.of(predicted).numpy()[0])
