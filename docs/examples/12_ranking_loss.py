"""Learning to rank with ListMLE: a loss written with argsort, a score with sort.

Each query has ten documents of six features and a graded relevance from 0 to 4
(a hidden nonlinear function of the features). A small network scores every
document; ListMLE is the negative log-probability of the true ranking under the
Plackett-Luce model of those scores: the documents, put in order of relevance by
``topos.argsort`` and ``topos.take_along_axis``, are drawn one at a time, each
with probability ``exp(s_i) / sum_{j >= i} exp(s_j)``, the sum over those not yet
drawn being one reversed ``topos.logcumsumexp``. The gradient reaches the scores
back through the permutation. The same recording scores held-out queries by
NDCG@5: ``argsort`` of the predicted scores gives the order in which the gains
are read, and ``topos.sort`` of the gains the best order possible, so every
reading shows the sorts. A random order's expected NDCG is printed beside it.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

DOCUMENTS = 10
FEATURES = 6
HIDDEN = 16
TOP = 5  # NDCG@5: the first five places count
STEPS = 200

rng = np.random.default_rng(0)
hidden_a, hidden_b = rng.normal(size=(2, FEATURES))


def queries(count):
    """Features [count, 10, 6] and graded relevance 0-4 from a hidden nonlinear score."""
    x = rng.normal(size=(count, DOCUMENTS, FEATURES))
    score = x @ hidden_a + 0.5 * (x @ hidden_b) ** 2 + rng.normal(0.0, 0.3, (count, DOCUMENTS))
    return x, np.digitize(score, np.quantile(score, [0.4, 0.65, 0.85, 0.95])).astype(float)


train_x, train_relevance = queries(64)
test_x, test_relevance = queries(32)
discount = 1.0 / np.log2(np.arange(2, TOP + 2))  # place i counts 1 / log2(i + 2)
gains = 2.0**test_relevance - 1.0


def build(tape):
    init = np.random.default_rng(1)  # the same starting weights in every recording
    w1 = tape.parameter(init.normal(0.0, 0.5, (FEATURES, HIDDEN)), name="hidden.weight")
    b1 = tape.parameter(np.zeros(HIDDEN), name="hidden.bias")
    w2 = tape.parameter(init.normal(0.0, 0.5, HIDDEN), name="output.weight")

    def scores(x):
        return topos.matmul(topos.tanh(topos.matmul(x, w1) + b1), w2)  # [queries, documents]

    relevance = tape.input(train_relevance, name="relevance")
    ideal = topos.argsort(relevance, axis=-1, descending=True)  # ties keep their order: argsort is stable
    ranked = topos.take_along_axis(scores(tape.input(train_x, name="x")), ideal, axis=-1)
    listmle = topos.mean(topos.sum(topos.logcumsumexp(ranked, axis=-1, reverse=True) - ranked, axis=-1))
    held_out = tape.input(gains, name="held-out gains")
    order = topos.argsort(scores(tape.input(test_x, name="held-out x")), axis=-1, descending=True)
    dcg = topos.sum(topos.take_along_axis(held_out, order, axis=-1)[:, :TOP] * discount, axis=-1)
    best = topos.sum(topos.sort(held_out, axis=-1, descending=True)[:, :TOP] * discount, axis=-1)
    return [topos.mean(dcg / best), listmle]


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("ListMLE")).title("training").x_label("step").y_label("loss")


# The panes' recording: float32, so that the kernels reading shows the WGSL kernel of each node
# (the sorts among them); the training records again in float64, which every CPU rounds alike.
network, (ndcg, loss) = Tape.record(build, dtype="float32")


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line); the playground's readings read the recording above and train nothing.
if __name__ == "__main__":
    network, (ndcg, loss) = Tape.record(build)
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.02)
    state = optimizer.init(parameters)
    losses = []
    curve = show.plot(loss_plot(losses))  # the card first, then the printed lines
    # A random order puts each document in each place equally often: its DCG is the mean gain times the discounts.
    best = np.sort(gains, axis=-1)[:, ::-1][:, :TOP] @ discount
    print(f"held-out NDCG@{TOP} of a random order: {np.mean(gains.mean(axis=-1) * discount.sum() / best):.3f}")
    for step in range(STEPS):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 50 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}  held-out NDCG@{TOP} {run.of(ndcg).scalar():.3f}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)
