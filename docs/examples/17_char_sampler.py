"""A character model written small, trained, then sampled with ``topos.categorical``.

The text is Jane Taylor's "The Star" (1806), twelve short lines. The model reads
five characters and guesses the sixth: each character's embedding (a row of a
table, picked by ``topos.take``), the five side by side, one tanh layer and a
logit for every character of the alphabet. ``topos.cross_entropy`` scores it at
every position of the text and Adam trains it. The same recording uses the same
parameters once more: one window, its logits over a temperature, and
``topos.categorical`` drawing the next character from their softmax with a key
fed each run, so every reading shows the sampling beside the training. Sampling
runs a plan lowered for the drawn character alone, a character a run, sliding
the window: a low temperature keeps to the likeliest characters and recites, a
high one spreads the draws and invents words.
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

TEXT = (
    "Twinkle, twinkle, little star,\nHow I wonder what you are!\n"
    "Up above the world so high,\nLike a diamond in the sky.\n"
    "When the blazing sun is gone,\nWhen he nothing shines upon,\n"
    "Then you show your little light,\nTwinkle, twinkle, all the night.\n"
    "Then the traveller in the dark,\nThanks you for your tiny spark,\n"
    "He could not see which way to go,\nIf you did not twinkle so.\n"
)
ALPHABET = sorted(set(TEXT))
CODES = np.array([ALPHABET.index(character) for character in TEXT], dtype=np.int32)
CONTEXT, EMBED, HIDDEN = 5, 8, 64
STEPS, LENGTH = 300, 120  # Adam's steps; the characters sampled at each temperature
WINDOWS = np.stack([CODES[i : i + CONTEXT] for i in range(len(CODES) - CONTEXT)])  # each followed by CODES[i + 5]


def build(tape):
    rng, size = np.random.default_rng(0), len(ALPHABET)
    table = tape.parameter(rng.normal(0.0, 1.0, (size, EMBED)), name="embedding")
    hidden_weight = tape.parameter(rng.normal(0.0, (CONTEXT * EMBED) ** -0.5, (CONTEXT * EMBED, HIDDEN)), name="hidden")
    hidden_bias = tape.parameter(np.zeros(HIDDEN), name="hidden_bias")
    out_weight = tape.parameter(rng.normal(0.0, HIDDEN**-0.5, (HIDDEN, size)), name="out")
    out_bias = tape.parameter(np.zeros(size), name="out_bias")

    def logits_of(windows):  # int32 [n, 5] -> [n, alphabet]
        embedded = topos.take(table, windows, axis=0).reshape(windows.shape[0], CONTEXT * EMBED)
        return topos.tanh(embedded @ hidden_weight + hidden_bias) @ out_weight + out_bias

    windows = tape.input(WINDOWS, name="windows", dtype="int32")
    loss = topos.cross_entropy(logits_of(windows), tape.input(CODES[CONTEXT:], name="next", dtype="int32"))
    # Sampling: one window, a key and a temperature in; the character drawn out.
    context = tape.input(CODES[None, :CONTEXT], name="context", dtype="int32")
    key = tape.input(topos.random_key(0), name="key")
    temperature = tape.input(1.0, name="temperature")
    drawn = topos.categorical(key, logits_of(context) / temperature)  # int32 [1]
    return [loss, context, key, temperature, drawn]


network, (loss, context, key, temperature, drawn) = Tape.record(build)


def loss_plot(losses):
    return Plot().layer(Line.y(losses).label("cross-entropy")).title("the character model").x_label("step")


def sample(parameters, heat, seed):
    """``LENGTH`` characters after the text's first five, one draw a run, each with a key of its own."""
    sampler = network.entry([drawn]).lower()  # only the nodes the drawn character needs
    codes = list(CODES[:CONTEXT])
    for i in range(LENGTH):
        window = np.array([codes[-CONTEXT:]], dtype=np.int32)
        feeds = {context: window, temperature: heat, key: topos.fold_in(topos.random_key(seed), i)}
        codes.append(int(sampler.run(parameters, feeds).of(drawn).numpy()[0]))
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
        if step % 50 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    print(f"a uniform guess scores {np.log(len(ALPHABET)):.4f}")
    for heat in (0.5, 1.0, 2.0):
        print(f"\nsampled at temperature {heat}:")
        print(sample(parameters, heat, seed=1))
