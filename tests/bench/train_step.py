"""Benchmark: one training step of the gallery's transformer, topos against PyTorch eager on CPU.

The model is ``docs/examples/06_char_transformer.py`` at its own sizes (d 32)
and again with a residual stream of 256 (``--embeds``, and the other sizes on
the command line), float32 in both frameworks. A step is a forward run, the
backward pass and an Adam update, on a fresh batch of windows of the example's
text. The two frameworks run in one process, step for step interleaved so
that whatever else the machine does falls on both alike; the medians and
their ratio are printed for each size. Both run on one thread (BLAS and
torch), since the examples target one core (Pyodide has no threads).

After the timings, a few topos steps run under cProfile and the step's time
is split into BLAS (the matrix products), the other numpy compute (each op's
numpy call), the optimizer, and the rest: Python overhead (the interpreter's
loop, tables, numpy's Python wrappers). cProfile slows Python calls more than
numpy's loops, so the overhead's share is an upper bound.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/train_step.py            # d 32 and d 256
    .venv/bin/python tests/bench/train_step.py --embeds 64 --context 32     # other sizes
    .venv/bin/python tests/bench/train_step.py --profile 50 --detail        # and cProfile's tables
    .venv/bin/python tests/bench/train_step.py --keep-freed-memory
    .venv/bin/python tests/bench/train_step.py --no-donate                  # the step that keeps its state
    .venv/bin/python tests/bench/train_step.py --xla                        # and the one-program step on XLA
                                                                            # and JAX jit of the same model

With ``--xla`` two more contenders join the interleaved steps: the whole
topos step (forward, backward, Adam) as one XLA program (``topos.xla``), and
the same model written in plain JAX (``jax_transformer.py``), its whole step
(Adam written in ``jnp``) under ``jax.jit`` with donated arguments, from the
same initial weights (by name) and with the same Adam. Both run on XLA's CPU
runtime on one thread. Before any step is timed the bench asserts that JAX's
loss and gradients on the first batch equal topos's (within float32 rounding).

topos's Adam step is given the state before it (``donate=True``), as the
example's ``HostTrainer`` does: the loop keeps only the latest state, as a
PyTorch loop keeps only its optimizer's, whose step updates the moments in place.
``--no-donate`` measures the step that leaves the state it is given as it was (it
writes into the memory of the state before last once nothing holds that).

A network prepares its forward and backward plans on their second run
(``topos.model.interpreter``): values go into an arena allocated once and
reused, so a step allocates little but the gradients and the optimizer's new
tables. ``--keep-freed-memory`` asks glibc to keep freed memory (``mallopt``)
rather than hand it back to the kernel, to show what the remaining page
faults cost.

The first line says which BLAS each side multiplies with: numpy's library and,
for OpenBLAS, the kernels it chose for this processor (its core name), and
torch's. Most of a step at d 256 is matrix products, so that choice weighs on
the ratio more than anything topos does: the scipy-openblas 0.3.31 of numpy
2.4's wheel takes an AMD EPYC of the Zen 5 family (cpu family 26) for a
Haswell, and its AVX2 kernels multiply at about half the speed of its AVX-512
(SkylakeX) ones, which ``OPENBLAS_CORETYPE=SkylakeX`` (set before numpy loads)
selects; torch's MKL takes AVX-512 there either way. (OpenBLAS's run-time
detection missed family 26: OpenMathLib/OpenBLAS issue 6029, mended by pull
request 6033 after 0.3.31; numpy 2.4.6, the newest wheel, still carries 0.3.31.)
The first line says so when it sees it. Measured on that EPYC
(2 cores, shared with other work, so each ratio moves by a few hundredths from
run to run; 60 to 150 steps; ratio topos / torch):

    default (OpenBLAS's Haswell kernels)   d 32 0.73-0.74, d 64 0.80-0.84, d 256 0.85-0.87, d 64 context 32 0.86-0.88
    OPENBLAS_CORETYPE=SkylakeX             d 32 0.66,      d 64 0.69,      d 256 0.59,      d 64 context 32 0.71

At d 256 the products are three quarters of topos's step (cProfile), and
numpy's at about 110 GFLOP/s on one core there; the rest (the optimizer's 2.5-3
ms, GELU and its gradient, the layer norms) is under a quarter.

Not part of the default test run.
"""

import os

# One BLAS thread for numpy, set before numpy is imported.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
# XLA's CPU runtime on one thread too, for topos.xla and JAX jit alike (read when jax is first imported, by --xla).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import dataclasses  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "py"))

from topos import Tape  # noqa: E402
from topos.model import optim  # noqa: E402


def load_example():
    path = os.path.join(ROOT, "docs", "examples", "06_char_transformer.py")
    spec = importlib.util.spec_from_file_location("char_transformer_example", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = load_example()


class ToposTrainer:
    """The example's training loop (its ``HostTrainer``): forward, backward and an Adam step that is
    given the previous state (``donate=True``, as the loop keeps only the latest; ``--no-donate``
    measures the step that keeps it)."""

    donate = True

    def __init__(self, config, learning_rate):
        self.network, (self.tokens, self.targets, _, self.loss) = Tape.record(
            lambda tape: example.build(tape, config), dtype="float32"
        )
        self.parameters = self.network.parameters()
        self.optimizer = optim.Adam(lr=learning_rate)
        self.state = self.optimizer.init(self.parameters)

    def initial_weights(self):
        return {name: np.array(tensor) for name, tensor in self.parameters.items()}

    def step(self, tokens, targets):
        run = self.network.forward(self.parameters, {self.tokens: tokens, self.targets: targets})
        gradients = run.backward(self.loss).parameters(self.parameters)
        self.parameters, self.state = self.optimizer.step(self.parameters, gradients, self.state, donate=self.donate)
        return run.of(self.loss).scalar()


class XLAStepTrainer:
    """The same recording's whole training step (forward, backward, Adam) as one XLA program (``topos.xla``)."""

    def __init__(self, topos_trainer, learning_rate):
        from topos.xla import XLATrainer

        network, loss = topos_trainer.network, topos_trainer.loss
        plan = network.entry([loss]).backward(loss).lower()
        self.tokens, self.targets, self.loss = topos_trainer.tokens, topos_trainer.targets, loss
        self.trainer = XLATrainer(plan, network.parameters(), optim.Adam(lr=learning_rate))

    def step(self, tokens, targets):
        return self.trainer.step({self.tokens: tokens, self.targets: targets}).of(self.loss).scalar()


class TorchTrainer:
    """The same model in plain eager PyTorch, as a PyTorch user would write it."""

    def __init__(self, config, weights, learning_rate):
        self.config = config
        self.weights = {name: torch.tensor(array, requires_grad=True) for name, array in weights.items()}
        self.optimizer = torch.optim.Adam(list(self.weights.values()), lr=learning_rate)

    def loss(self, tokens, targets):
        c = self.config
        w = self.weights
        b, t, e, h = c.batch, c.context, c.embed, c.heads
        x = w["token_embedding"][tokens] + w["position_embedding"][torch.arange(t)]
        for layer in range(c.layers):
            p = f"blocks.{layer}."
            normed = F.layer_norm(x, (e,), w[p + "ln1.weight"], w[p + "ln1.bias"], c.layer_norm_eps)
            q, k, v = (normed @ w[p + "attention.qkv.weight"] + w[p + "attention.qkv.bias"]).split(e, dim=-1)
            q, k, v = (part.view(b, t, h, e // h).transpose(1, 2) for part in (q, k, v))
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            merged = attended.transpose(1, 2).reshape(b, t, e)
            x = x + merged @ w[p + "attention.out.weight"] + w[p + "attention.out.bias"]
            normed = F.layer_norm(x, (e,), w[p + "ln2.weight"], w[p + "ln2.bias"], c.layer_norm_eps)
            hidden = F.gelu(normed @ w[p + "mlp.in.weight"] + w[p + "mlp.in.bias"], approximate="tanh")
            x = x + hidden @ w[p + "mlp.out.weight"] + w[p + "mlp.out.bias"]
        x = F.layer_norm(x, (e,), w["ln_final.weight"], w["ln_final.bias"], c.layer_norm_eps)
        logits = x @ w["head.weight"]
        return F.cross_entropy(logits.view(b * t, c.vocab_size), targets.view(b * t))

    def step(self, tokens, targets):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(torch.from_numpy(tokens), torch.from_numpy(targets))
        loss.backward()
        self.optimizer.step()
        return loss.item()


def keep_freed_memory():
    """Ask glibc not to return freed memory to the kernel (no trimming, no mmap for big blocks)."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name or not hasattr(ctypes.CDLL(libc_name), "mallopt"):
        raise SystemExit("--keep-freed-memory needs glibc's mallopt")
    libc = ctypes.CDLL(libc_name)
    m_trim_threshold, m_mmap_threshold = -1, -3
    if not (libc.mallopt(m_trim_threshold, 1 << 30) and libc.mallopt(m_mmap_threshold, 1 << 25)):
        raise SystemExit("mallopt refused the thresholds")


def timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


def jax_trainer(topos_trainer, config, learning_rate):
    """The same model in plain JAX under ``jax.jit`` (``jax_transformer.py``), from topos's initial weights."""
    from jax_transformer import JaxTrainer

    optimizer = topos_trainer.optimizer
    return JaxTrainer(config, topos_trainer.initial_weights(), learning_rate, optimizer.betas, optimizer.eps)


def check_same_model(topos_trainer, jax_jit_trainer, tokens, targets):
    """JAX's model must be topos's: the same loss and gradients on one batch, within float32 rounding.

    At initialisation the loss is close to ln(vocabulary) for any small weights
    (a GELU of another form moves it by less than 1e-6), so the gradients are
    compared too: each parameter's within 1e-5 of its largest magnitude (they
    agree to about 1e-6; the erf GELU for the tanh one differs by 2e-5 at d 32).
    """
    run = topos_trainer.network.forward(
        topos_trainer.parameters, {topos_trainer.tokens: tokens, topos_trainer.targets: targets}
    )
    topos_loss = run.of(topos_trainer.loss).scalar()
    topos_gradients = run.backward(topos_trainer.loss).parameters(topos_trainer.parameters)
    jax_loss, jax_gradients = jax_jit_trainer.loss_and_gradients(tokens, targets)
    if not abs(jax_loss - topos_loss) <= 1e-5:
        raise AssertionError(
            f"JAX's model is not topos's: on the first batch its loss is {jax_loss!r}, topos's {topos_loss!r}"
        )
    for name, gradient in topos_gradients.items():
        gradient = np.asarray(gradient)
        difference = np.max(np.abs(jax_gradients[name] - gradient))
        if not difference <= 1e-5 * np.max(np.abs(gradient)):
            raise AssertionError(
                f"JAX's model is not topos's: on the first batch the gradients of {name} differ by {difference:.3g} "
                f"(largest {np.max(np.abs(gradient)):.3g})"
            )


def measure(config, arguments):
    """Interleaved steps of every framework at one size: prints the medians and ratios, returns the topos trainer."""
    learning_rate = config.learning_rate
    topos_trainer = ToposTrainer(config, learning_rate)
    torch_trainer = TorchTrainer(config, topos_trainer.initial_weights(), learning_rate)
    xla_trainer = XLAStepTrainer(topos_trainer, learning_rate) if arguments.xla else None
    jax_jit_trainer = jax_trainer(topos_trainer, config, learning_rate) if arguments.xla else None
    if jax_jit_trainer is not None:
        first_batch = example.sample_windows(np.random.default_rng(0), config)  # the loop's first batch
        check_same_model(topos_trainer, jax_jit_trainer, *(a.astype(np.int64) for a in first_batch))
    rng = np.random.default_rng(0)
    topos_times, torch_times, xla_times, jax_times = [], [], [], []
    losses, jax_losses = [], []
    for repetition in range(arguments.warmup + arguments.repetitions):
        tokens, targets = (a.astype(np.int64) for a in example.sample_windows(rng, config))
        topos_seconds, topos_loss = timed(topos_trainer.step, tokens, targets)
        torch_seconds, torch_loss = timed(torch_trainer.step, tokens, targets)
        if xla_trainer is not None:
            xla_seconds, xla_loss = timed(xla_trainer.step, tokens, targets)
            jax_seconds, jax_loss = timed(jax_jit_trainer.step, tokens, targets)
            jax_losses.append(jax_loss)
        if repetition >= arguments.warmup:
            topos_times.append(topos_seconds)
            torch_times.append(torch_seconds)
            if xla_trainer is not None:
                xla_times.append(xla_seconds)
                jax_times.append(jax_seconds)
        losses.append((topos_loss, torch_loss))

    topos_median = statistics.median(topos_times)
    torch_median = statistics.median(torch_times)
    sizes = {f: getattr(config, f) for f in SIZES}
    print(
        f"model d {config.embed}: {sizes}, vocabulary {config.vocab_size}, float32, "
        f"{len(topos_trainer.network)} topos nodes"
        + (", glibc keeps freed memory" if arguments.keep_freed_memory else "")
    )
    print(
        f"  losses, first step: topos {losses[0][0]:.5f}, torch {losses[0][1]:.5f}; "
        f"last: topos {losses[-1][0]:.5f}, torch {losses[-1][1]:.5f}"
    )
    print(f"  topos  median step {topos_median * 1e3:8.3f} ms  ({arguments.repetitions} steps)")
    print(f"  torch  median step {torch_median * 1e3:8.3f} ms  ({arguments.repetitions} steps)")
    print(f"  ratio topos / torch: {topos_median / torch_median:.2f}")
    if xla_trainer is not None:
        xla_median = statistics.median(xla_times)
        print(
            f"  xla    median step {xla_median * 1e3:8.3f} ms  ({arguments.repetitions} steps; one program, "
            f"compiled in {xla_trainer.trainer.compile_ms:.0f} ms; last loss {xla_loss:.5f})"
        )
        print(f"  ratio xla / torch: {xla_median / torch_median:.2f}")
        jax_median = statistics.median(jax_times)
        print(
            f"  jax    median step {jax_median * 1e3:8.3f} ms  ({arguments.repetitions} steps; jax.jit, donated; "
            f"losses, first step {jax_losses[0]:.5f}, last {jax_losses[-1]:.5f})"
        )
        print(f"  ratio xla / jax jit: {xla_median / jax_median:.2f}")
    return topos_trainer, rng


#: How the profile's time is split: the first part of the path that names a function's file.
SHARES = (
    ("BLAS (matrix products)", ("topos/ops/linalg.py", "topos/ops/hooks.py", "topos/pyodide/blas.py")),
    ("other numpy compute", ("topos/ops/", "method 'reduce' of", "method 'at' of", "method 'accumulate' of")),
    ("optimizer", ("topos/model/optim.py", "topos/model/optim_state.py")),
)


def profile_summary(trainer, rng, config, steps, detail):
    """Profile ``steps`` topos steps and print how their time splits (see the module's notes)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        tokens, targets = example.sample_windows(rng, config)
        trainer.step(tokens, targets)
    profiler.disable()
    stats = pstats.Stats(profiler)
    shares = dict.fromkeys([name for name, _ in SHARES] + ["Python overhead (the rest)"], 0.0)
    total = 0.0
    for (filename, _, function), (_, _, own_time, _, _) in stats.stats.items():
        where = filename if filename != "~" else function
        total += own_time
        name = next((name for name, marks in SHARES if any(mark in where for mark in marks)), None)
        shares[name or "Python overhead (the rest)"] += own_time
    parts = ", ".join(f"{name} {100 * seconds / total:.0f}%" for name, seconds in shares.items())
    print(f"  where a topos step goes (cProfile, {steps} steps, {1e3 * total / steps:.2f} ms a step profiled): {parts}")
    if detail:
        for order in ("tottime", "cumulative"):
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(25)
            print(f"\ntopos, d {config.embed}, {steps} steps, by {order}:")
            print(text.getvalue())


SIZES = ("batch", "context", "embed", "heads", "layers")

#: Where an OpenBLAS says which kernels it chose (its core name): scipy-openblas's names, then OpenBLAS's own.
CORENAME_SYMBOLS = (
    "scipy_openblas_get_corename64_",
    "scipy_openblas_get_corename",
    "openblas_get_corename64_",
    "openblas_get_corename",
)


def openblas_core():
    """The core name of the OpenBLAS numpy has loaded (its kernels: "Haswell", "SkylakeX", ...), or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)  # already loaded: the same handle
        except OSError:
            continue
        for symbol in CORENAME_SYMBOLS:
            function = getattr(library, symbol, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode()
    return None


def avx512_unused(core):
    """Whether OpenBLAS chose AVX2 (Haswell or Zen) kernels on a processor that has AVX-512 (see the module's notes)."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return False
    return core is not None and core.lower() in ("haswell", "zen") and {"avx512f", "avx512bw", "avx512vl"} <= set(flags)


def blas_line():
    """Which BLAS numpy and torch multiply with (see the module's notes)."""
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    numpy_blas = f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    core = openblas_core()
    torch_blas = "MKL" if torch.backends.mkl.is_available() else "no MKL"
    kernels = f", {core} kernels" if core else ""
    if avx512_unused(core):
        kernels += " (AVX2) on a processor with AVX-512, which OPENBLAS_CORETYPE=SkylakeX would use"
    return (
        f"numpy's BLAS: {numpy_blas}" + kernels + f"; torch's: {torch_blas}, {torch.backends.cpu.get_cpu_capability()}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=60, help="timed steps for each framework and size")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--embeds", default="32,256", help="residual stream widths to run, comma-separated")
    parser.add_argument("--profile", type=int, default=20, metavar="STEPS", help="topos steps to profile (0: none)")
    parser.add_argument("--detail", action="store_true", help="print cProfile's tables too")
    parser.add_argument("--xla", action="store_true", help="also the one-program step on XLA (topos-autodiff[xla])")
    parser.add_argument("--keep-freed-memory", action="store_true", help="glibc keeps freed memory (see above)")
    parser.add_argument("--no-donate", action="store_true", help="topos's Adam step keeps the state it is given")
    for field in ("batch", "context", "heads", "layers"):
        parser.add_argument(f"--{field}", type=int, default=getattr(example.Config(), field))
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    ToposTrainer.donate = not arguments.no_donate
    if arguments.keep_freed_memory:
        keep_freed_memory()

    print(blas_line())
    for embed in (int(width) for width in arguments.embeds.split(",")):
        sizes = {f: getattr(arguments, f) for f in SIZES if f != "embed"}
        config = dataclasses.replace(example.Config(), embed=embed, **sizes)
        trainer, rng = measure(config, arguments)
        if arguments.profile:
            profile_summary(trainer, rng, config, arguments.profile, arguments.detail)


if __name__ == "__main__":
    main()
