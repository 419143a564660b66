"""A character RNN whose recurrence is one ``topos.scan``, trained, then made to write.

The text is Christina Rossetti's "Who Has Seen the Wind?" (1872), cut into eight
pieces of 26 characters read side by side. At each character the state becomes
``h = tanh(x Wx + h Wh + b)`` (``x`` the character's embedding) and a read-out of
``h`` guesses the next character. ``topos.scan`` records that step once, as the body
of one ``Scan`` node, so the spec and the graph show it once and the recording does
not grow with the sequence length (26 characters or 26,000: the same nodes); its
gradient is the step's derivative scanned in reverse. Adam trains it well below
what any model that sees only the current character can score (the entropy of the
next character given it): the state carries what came before. The same step,
recorded once more outside the loop, then writes a character a run.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

TEXT = (
    "Who has seen the wind?\nNeither I nor you:\nBut when the leaves hang trembling,\n"
    "The wind is passing through.\n\nWho has seen the wind?\nNeither you nor I:\n"
    "But when the trees bow down their heads,\nThe wind is passing by.\n"
)
ALPHABET = sorted(set(TEXT))
CODES = np.array([ALPHABET.index(character) for character in TEXT], dtype=np.int32)
PIECES, LENGTH, EMBED, HIDDEN = 8, 26, 8, 48  # LENGTH: characters a piece, the scan's trip count
STEPS, WRITTEN = 150, 160  # Adam's steps; the characters written after training


def pieces(codes):
    """Time-major [LENGTH, PIECES] characters of the text, and the characters that follow them."""
    at = np.arange(PIECES)[None, :] * LENGTH + np.arange(LENGTH)[:, None]
    return codes[at], codes[at + 1]


def build(tape):
    rng, size = np.random.default_rng(0), len(ALPHABET)
    table = tape.parameter(rng.normal(0.0, 1.0, (size, EMBED)), name="embedding")
    wx = tape.parameter(rng.normal(0.0, EMBED**-0.5, (EMBED, HIDDEN)), name="wx")
    wh = tape.parameter(rng.normal(0.0, 0.5 * HIDDEN**-0.5, (HIDDEN, HIDDEN)), name="wh")
    b = tape.parameter(np.zeros(HIDDEN), name="b")
    wo = tape.parameter(rng.normal(0.0, HIDDEN**-0.5, (HIDDEN, size)), name="wo")
    bo = tape.parameter(np.zeros(size), name="bo")

    def step(h, x):  # one character's embedding in; the new state out as the carry and as this step's y
        h = topos.tanh(x @ wx + h @ wh + b)
        return h, h

    now, after = pieces(CODES)
    xs = topos.take(table, tape.input(now, name="characters", dtype="int32"), axis=0)  # [LENGTH, PIECES, EMBED]
    _, states = topos.scan(step, tape.leaf(np.zeros((PIECES, HIDDEN))), xs)  # one Scan node
    logits = (states @ wo + bo).reshape(LENGTH * PIECES, size)
    loss = topos.cross_entropy(logits, tape.input(after.reshape(-1), name="next", dtype="int32"))
    # Writing: the same step once more, from a state and a character fed each run.
    hidden = tape.input(np.zeros((1, HIDDEN)), name="hidden")
    character = tape.input(CODES[:1], name="character", dtype="int32")
    key = tape.input(topos.random_key(0), name="key")
    new_hidden, _ = step(hidden, topos.take(table, character, axis=0))
    drawn = topos.categorical(key, new_hidden @ wo + bo)  # int32 [1]
    return [loss, hidden, character, key, new_hidden, drawn]


network, (loss, hidden, character, key, new_hidden, drawn) = Tape.record(build)


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("cross-entropy")).title("the character RNN").x_label("step")


def write(parameters, seed):
    """The text's first character, then ``WRITTEN`` drawn ones, a run each, the state fed back."""
    writer = network.entry([new_hidden, drawn]).lower()  # only the nodes of the step outside the loop
    codes, h = [int(CODES[0])], np.zeros((1, HIDDEN))
    for i in range(WRITTEN):
        last = np.array(codes[-1:], dtype=np.int32)
        run = writer.run(parameters, {hidden: h, character: last, key: topos.fold_in(topos.random_key(seed), i)})
        h = run.of(new_hidden).numpy()
        codes.append(int(run.of(drawn).numpy()[0]))
    return "".join(ALPHABET[code] for code in codes)


if __name__ == "__main__":
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.01)
    state = optimizer.init(parameters)
    losses = []
    curve = show.plot(loss_plot(losses))  # one card, a point a step
    for step in range(STEPS):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 30 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    print(f"a uniform guess scores {np.log(len(ALPHABET)):.4f}")
    print(f"the recording: {len(network)} nodes, the step recorded once for its {LENGTH} repeats")
    print(f"\nwritten, a character a run:\n{write(parameters, seed=1)}")
