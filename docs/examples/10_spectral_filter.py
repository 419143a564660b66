"""A filter learned in the frequency domain: rfft, one gain a frequency, irfft.

Sixteen signals of 128 samples are sums of slow sines (frequencies 1 to 8, random
amplitudes and phases) with white noise on top. The filter is
``irfft(gain * rfft(x))``: ``topos.fft.rfft`` turns each noisy signal into its 65
frequencies (complex values as real/imaginary pairs, a trailing axis of 2), a
parameter scales each frequency, and ``topos.fft.irfft`` turns the result back
into 128 samples. Adam fits the 65 gains so that the filtered signals come close
to the clean ones; the gains it learns form a low-pass filter, near 1 where the
sines are and near 0 above them, where there is only noise. Both transforms are
recorded nodes, so every reading shows them (the plan's cost counts 5 n log2 n
flops a transform, the HLO reading holds ``stablehlo.fft``) and the gradient
flows through them (their derivatives are the adjoint transforms).
"""

import numpy as np

import topos
from topos import Tape, show
from topos.model import optim
from topos.show import Line, Plot

SAMPLES = 128
SIGNALS = 16
STEPS = 200
PASS = 8  # the highest frequency of the clean signals

rng = np.random.default_rng(0)
t = np.arange(SAMPLES) / SAMPLES
frequencies = np.arange(1, PASS + 1)
amplitudes = rng.uniform(0.2, 1.0, (SIGNALS, PASS))
phases = rng.uniform(0.0, 2.0 * np.pi, (SIGNALS, PASS))
clean = np.einsum("sk,skt->st", amplitudes, np.sin(2.0 * np.pi * frequencies[None, :, None] * t + phases[..., None]))
noisy = clean + rng.normal(0.0, 0.8, clean.shape)


def build(tape):
    x = tape.input(noisy, name="noisy")
    target = tape.input(clean, name="clean")
    gain = tape.parameter(np.ones(SAMPLES // 2 + 1), name="gain")
    spectrum = topos.fft.rfft(x)  # [16, 65, 2]: real and imaginary parts
    filtered = topos.fft.irfft(spectrum * gain[:, None], n=SAMPLES)  # one gain a frequency, both parts
    error = filtered - target
    return [topos.mean(error * error), filtered, gain]


def gain_plot(gains):
    return Plot().layer(Line.y(gains).label("learned gain")).title("the filter").x_label("frequency").y_label("gain")


def loss_plot(losses):
    return (
        Plot()
        .layer(Line.y(losses).label("loss"))
        .title("training")
        .x_label("step")
        .y_label("mean squared error")
        .log_y()
    )


network, (loss, filtered, gain) = Tape.record(build)


# The training runs when the file runs as a program (Run in the playground, or python on the
# command line); the playground's readings read the recording above and train nothing.
if __name__ == "__main__":
    parameters = network.parameters()
    optimizer = optim.Adam(lr=0.05)
    state = optimizer.init(parameters)
    before = np.mean((noisy - clean) ** 2)

    losses = []
    # Both cards first (the gains as they start, until the training ends), then the printed lines.
    filter_card = show.plot(gain_plot(parameters.of(gain).numpy()))
    curve = show.plot(loss_plot(losses))
    for step in range(STEPS):
        run = network.forward(parameters, {})
        losses.append(run.of(loss).scalar())
        curve.update(loss_plot(losses))
        show.progress(step + 1, total=STEPS)
        if step % 50 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}")
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)

    gains = parameters.of(gain).numpy()
    print(f"noise before the filter: mean squared error {before:.4f}")
    print(
        f"mean gain at frequencies 1-{PASS}: {gains[1 : PASS + 1].mean():.2f}, above {PASS}: {gains[PASS + 1 :].mean():.2f}"
    )
    filter_card.update(gain_plot(gains))
