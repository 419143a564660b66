"""A character-level transformer, GPT-style, learns a sonnet.

The model reads ``context`` characters and predicts each next one. Token and
position embeddings are looked up with ``topos.take``; each block is pre-norm
(``topos.layer_norm``) with multi-head causal self-attention, written with
reshapes and transposes over one query-key-value matrix product, and a GELU
MLP, each added back to the residual stream; a final layer norm and a matrix
product give the logits, and ``topos.cross_entropy`` the loss. Adam
(``topos.model.optim``) trains it on random windows of the sonnet's first twelve
lines, and the loss, printed every few steps and plotted at every one, falls
within seconds. The closing couplet is held out: cut into five windows, a batch
of another size than training's, it is scored by the model recorded again at
that size, which adopts the trained parameters by name (``network.adopt``).
Fourteen lines are too few to learn English from: on the couplet the model
scores worse than on the lines it has read.

It trains on numpy, or on WebGPU through ``topos.webgpu.DeviceTrainer``, whose
parameters stay on the device (``main(backend=...)``); in the playground's Run
mode it takes WebGPU where the adapter is a hardware GPU, and says which ran.

The file is a module as well as a script: ``build(tape, config)`` records the
model and ``Config`` holds its sizes, so tests can rebuild exactly this model.
"""

import math
import sys
from dataclasses import dataclass, replace

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

TEXT = (
    "Shall I compare thee to a summer's day?\n"
    "Thou art more lovely and more temperate:\n"
    "Rough winds do shake the darling buds of May,\n"
    "And summer's lease hath all too short a date;\n"
    "Sometime too hot the eye of heaven shines,\n"
    "And often is his gold complexion dimm'd;\n"
    "And every fair from fair sometime declines,\n"
    "By chance or nature's changing course untrimm'd;\n"
    "But thy eternal summer shall not fade,\n"
    "Nor lose possession of that fair thou ow'st;\n"
    "Nor shall death brag thou wander'st in his shade,\n"
    "When in eternal lines to time thou grow'st:\n"
    "So long as men can breathe or eyes can see,\n"
    "So long lives this, and this gives life to thee.\n"
)
VOCABULARY = sorted(set(TEXT))
ENCODED = np.array([VOCABULARY.index(character) for character in TEXT])
# The model trains on the first twelve lines; the closing couplet is held out to score it.
HELD_OUT_FROM = TEXT.index("So long as men")
TRAINING_TOKENS, HELD_OUT_TOKENS = ENCODED[:HELD_OUT_FROM], ENCODED[HELD_OUT_FROM:]


@dataclass(frozen=True)
class Config:
    vocab_size: int = len(VOCABULARY)
    context: int = 16  # characters the model reads at once
    embed: int = 32  # width of the residual stream
    heads: int = 4  # attention heads; each has embed // heads dimensions
    layers: int = 2  # transformer blocks
    mlp: int = 4  # the MLP's hidden width is mlp * embed
    batch: int = 16  # windows per training step
    layer_norm_eps: float = 1e-5
    learning_rate: float = 1e-2
    steps: int = 300
    print_every: int = 25
    seed: int = 0


def record_parameters(tape, config):
    """Every trainable tensor, named as a checkpoint would name it, GPT-2's initialisation."""
    rng = np.random.default_rng(config.seed)
    width, hidden = config.embed, config.mlp * config.embed

    def normal(*shape, std=0.02):
        return rng.normal(0.0, std, shape)

    # The projections back into the residual stream start smaller, one factor per block that adds to it.
    residual_std = 0.02 / math.sqrt(2 * config.layers)
    p = {
        "token_embedding": tape.parameter(normal(config.vocab_size, width), name="token_embedding"),
        "position_embedding": tape.parameter(normal(config.context, width), name="position_embedding"),
    }
    for layer in range(config.layers):
        prefix = f"blocks.{layer}."
        shapes = {
            "ln1.weight": np.ones(width),
            "ln1.bias": np.zeros(width),
            "attention.qkv.weight": normal(width, 3 * width),
            "attention.qkv.bias": np.zeros(3 * width),
            "attention.out.weight": normal(width, width, std=residual_std),
            "attention.out.bias": np.zeros(width),
            "ln2.weight": np.ones(width),
            "ln2.bias": np.zeros(width),
            "mlp.in.weight": normal(width, hidden),
            "mlp.in.bias": np.zeros(hidden),
            "mlp.out.weight": normal(hidden, width, std=residual_std),
            "mlp.out.bias": np.zeros(width),
        }
        for name, initial in shapes.items():
            p[prefix + name] = tape.parameter(initial, name=prefix + name)
    p["ln_final.weight"] = tape.parameter(np.ones(width), name="ln_final.weight")
    p["ln_final.bias"] = tape.parameter(np.zeros(width), name="ln_final.bias")
    p["head.weight"] = tape.parameter(normal(width, config.vocab_size), name="head.weight")
    return p


def causal_self_attention(x, p, prefix, mask, config):
    """Multi-head attention over rows of ``x`` [batch * context, embed], each position seeing itself and the past."""
    b, t, c, h = config.batch, config.context, config.embed, config.heads
    d = c // h
    qkv = x @ p[prefix + "attention.qkv.weight"] + p[prefix + "attention.qkv.bias"]

    def split_heads(part):
        # [batch * context, embed] -> [batch, heads, context, head width]
        return part.reshape(b, t, h, d).transpose(0, 2, 1, 3)

    q = split_heads(qkv[:, 0:c])
    k = split_heads(qkv[:, c : 2 * c])
    v = split_heads(qkv[:, 2 * c : 3 * c])
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(d))
    scores = topos.where(mask, scores, -1e9)  # a future position gets no weight after the softmax
    attended = topos.softmax(scores, axis=-1) @ v
    merged = attended.transpose(0, 2, 1, 3).reshape(b * t, c)
    return merged @ p[prefix + "attention.out.weight"] + p[prefix + "attention.out.bias"]


def mlp(x, p, prefix):
    hidden = topos.gelu(x @ p[prefix + "mlp.in.weight"] + p[prefix + "mlp.in.bias"])
    return hidden @ p[prefix + "mlp.out.weight"] + p[prefix + "mlp.out.bias"]


def build(tape, config):
    """Record the model and its loss; returns ``(tokens, targets, logits, loss)``.

    ``tokens`` and ``targets`` are int32 inputs [batch, context]: the characters
    read and, one position later, the characters to predict.
    """
    b, t, c = config.batch, config.context, config.embed
    tokens = tape.input(np.zeros((b, t)), name="tokens", dtype="int32")
    targets = tape.input(np.zeros((b, t)), name="targets", dtype="int32")
    p = record_parameters(tape, config)
    eps = config.layer_norm_eps

    positions = np.arange(t)
    x = topos.take(p["token_embedding"], tokens, axis=0) + topos.take(p["position_embedding"], positions, axis=0)
    x = x.reshape(b * t, c)
    mask = topos.causal_mask(tape, t)
    for layer in range(config.layers):
        prefix = f"blocks.{layer}."
        normed = topos.layer_norm(x, p[prefix + "ln1.weight"], p[prefix + "ln1.bias"], eps=eps)
        x = x + causal_self_attention(normed, p, prefix, mask, config)
        normed = topos.layer_norm(x, p[prefix + "ln2.weight"], p[prefix + "ln2.bias"], eps=eps)
        x = x + mlp(normed, p, prefix)
    x = topos.layer_norm(x, p["ln_final.weight"], p["ln_final.bias"], eps=eps)
    logits = (x @ p["head.weight"]).reshape(b, t, config.vocab_size)
    loss = topos.cross_entropy(logits, targets)
    return tokens, targets, logits, loss


def sample_windows(rng, config):
    """``batch`` random windows of the training lines, and the same windows one character on."""
    starts = rng.integers(0, len(TRAINING_TOKENS) - config.context, size=config.batch)
    windows = np.stack([TRAINING_TOKENS[s : s + config.context + 1] for s in starts])
    return windows[:, :-1], windows[:, 1:]


def held_out_windows(config):
    """The held-out couplet cut into windows end to end (as many as fit), and the same windows one character on."""
    count = (len(HELD_OUT_TOKENS) - 1) // config.context
    windows = np.stack([HELD_OUT_TOKENS[i * config.context : (i + 1) * config.context + 1] for i in range(count)])
    return windows[:, :-1], windows[:, 1:]


def held_out_loss(parameters, config, dtype):
    """``(windows, loss)`` of the trained ``parameters`` on the held-out couplet.

    A recording's shapes are fixed, so the model is recorded again with a batch
    of as many windows as the couplet holds, and that network adopts the trained
    parameters (matched by name).
    """
    inputs, expected = held_out_windows(config)
    sized = replace(config, batch=len(inputs))
    network, (tokens, targets, _, loss) = Tape.record(lambda tape: build(tape, sized), dtype=dtype)
    run = network.forward(network.adopt(parameters), {tokens: inputs, targets: expected})
    return len(inputs), run.of(loss).scalar()


def continue_text(network, parameters, tokens, logits, prompt, length, config):
    """Extend ``prompt`` by ``length`` characters, each time the most likely next one.

    The network reads fixed-size batches, so every row holds the same window and
    row 0's prediction at the last position is the one read.
    """
    text = prompt
    for _ in range(length):
        window = [VOCABULARY.index(character) for character in text[-config.context :]]
        batch = np.tile(window, (config.batch, 1))
        run = network.forward(parameters, {tokens: batch})
        text += VOCABULARY[int(np.argmax(run.of(logits).numpy()[0, -1]))]
    return text


# The recording the playground's panes read. float32, as models are trained, so that its
# kernels run on WebGPU; the PyTorch oracle test records the same build in float64.
CONFIG = Config()
network, (tokens, targets, logits, loss) = Tape.record(lambda tape: build(tape, CONFIG), dtype="float32")


class HostTrainer:
    """Training on the host, shaped like ``topos.webgpu.DeviceTrainer``: ``step(feeds)`` returns the run.

    Each step runs the network forward, reads every gradient and lets the optimizer
    make a new parameters table; ``parameters()`` is the table after the last step.
    The trainer keeps only the latest optimizer state, so it donates the one before
    to each step (``donate=True``): the moments are updated where they lie, with the
    same bits as without donation.
    """

    def __init__(self, network, loss, parameters, optimizer):
        self.network = network
        self.loss = loss
        self.optimizer = optimizer
        self._parameters = parameters
        self._state = optimizer.init(parameters)

    def step(self, feeds):
        run = self.network.forward(self._parameters, feeds)
        gradients = run.backward(self.loss).parameters(self._parameters)
        self._parameters, self._state = self.optimizer.step(self._parameters, gradients, self._state, donate=True)
        return run

    def parameters(self):
        return self._parameters


def make_trainer(backend, network, loss, parameters, optimizer):
    """A trainer on ``"numpy"`` (the host) or on ``"webgpu"`` (the parameters stay on the device)."""
    if backend == "webgpu":
        plan = network.entry([loss]).backward(loss).lower()
        return topos.webgpu.DeviceTrainer(plan, parameters, optimizer)
    return HostTrainer(network, loss, parameters, optimizer)


def hardware_adapter():
    """The WebGPU adapter's name when it is a hardware GPU; None without one, or on a software
    adapter (lavapipe, SwiftShader), on which numpy trains faster."""
    if not topos.webgpu.available():
        return None
    adapter = topos.webgpu.adapter()
    return None if adapter.software else adapter.name


def choose_backend(backend):
    """``(backend, adapter name or None)``: ``"auto"`` becomes WebGPU on a hardware GPU, numpy elsewhere."""
    if backend == "auto":
        name = hardware_adapter()
        return ("webgpu", name) if name else ("numpy", None)
    if backend == "webgpu":
        return "webgpu", topos.webgpu.adapter().name
    if backend == "numpy":
        return "numpy", None
    raise ValueError(f'backend is "numpy", "webgpu" or "auto", got {backend!r}')


def loss_plot(losses, where):
    return (
        Plot()
        .layer(Line.y(losses).label(f"loss on {where}"))
        .title("the transformer learns a sonnet")
        .x_label("step")
        .y_label("cross-entropy")
    )


def main(config=CONFIG, dtype="float64", backend="numpy"):
    """Train for ``config.steps`` Adam steps, printing and plotting the loss; returns the list of losses.

    ``backend`` says where: ``"numpy"`` on the host, in ``dtype``; ``"webgpu"`` through
    ``topos.webgpu.DeviceTrainer`` (the parameters stay on the device), always in float32,
    the one precision of the WGSL kernels; ``"auto"`` is WebGPU on a hardware GPU and numpy
    elsewhere. The line after the sizes says which ran.

    On numpy the run records in float64 so that it prints the same on every CPU: in float32,
    numpy's last-bit differences between CPUs grow over three hundred Adam steps into
    visibly different losses and text. ``main(dtype="float32")`` trains as a GPU would.
    """
    backend, adapter = choose_backend(backend)
    if backend == "webgpu":
        dtype = "float32"
    where = f"WebGPU ({adapter})" if backend == "webgpu" else "numpy"
    losses = []
    curve = show.plot(loss_plot(losses, where))  # one card, above the printed lines, updated at every step
    network, (tokens, targets, logits, loss) = Tape.record(lambda tape: build(tape, config), dtype=dtype)
    parameters = network.parameters()
    count = sum(tensor.size for _, tensor in parameters.items())
    print(f"{len(network)} nodes, {len(parameters)} parameter tensors, {count} numbers")
    print(
        f"vocabulary: {config.vocab_size} characters; a guess scores ln {config.vocab_size} = "
        f"{math.log(config.vocab_size):.3f}"
    )
    print(f"training on {where}, {dtype}")

    trainer = make_trainer(backend, network, loss, parameters, optim.Adam(lr=config.learning_rate))
    rng = np.random.default_rng(config.seed + 1)
    for step in range(config.steps):
        inputs, expected = sample_windows(rng, config)
        run = trainer.step({tokens: inputs, targets: expected})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses, where))
        show.progress(step + 1, total=config.steps)
        if step % config.print_every == 0 or step == config.steps - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}")

    windows, unseen_loss = held_out_loss(trainer.parameters(), config, dtype)
    print(f"held out, the closing couplet: {windows} windows, cross-entropy {unseen_loss:.4f}")

    prompt = TEXT[: config.context]
    print("the model continues its first line:")
    print(continue_text(network, trainer.parameters(), tokens, logits, prompt, 48, config))
    return losses


if __name__ == "__main__":
    # In the page, on a hardware GPU, the run trains on WebGPU. Run natively, as the docs are
    # built, it trains on numpy, so that it prints the same on every machine;
    # main(backend="auto") trains on a hardware GPU that wgpu-py finds.
    main(backend="auto" if sys.platform == "emscripten" else "numpy")
