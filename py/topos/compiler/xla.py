"""Running emitted StableHLO on XLA's CPU backend through jax/jaxlib (optional): a test helper.

topos needs only numpy; this module imports jax when it is first used. The
runtime a user runs plans with is ``topos.xla`` (``plan.run(..., backend="xla")``,
``XLATrainer``), above the compiler; this helper, inside it, stays for tests that
run text on XLA without the backend::

    from topos.compiler.xla import execute_plan
    readables_then_gradients = execute_plan(plan, network.parameters(), feeds)

``jax_enable_x64`` is switched on when a module has float64 values (XLA
silently computes in float32 otherwise). Every compile takes ``compile_options``,
so that a maximum or minimum with a NaN operand is NaN (docs/kernels.md,
"NaN and infinities").
"""

import functools

import numpy as np


@functools.lru_cache(maxsize=1)
def _backend():
    import jax
    from jax.extend.backend import get_backend

    return jax, get_backend("cpu")


#: XLA's fast min/max compares without checking for NaN: ``maximum(inf, nan)`` is inf, and a
#: max-reduction over ``[nan, 1.0]`` is 1.0. jaxlib's ``compile_and_load`` without options has it
#: on for the CPU (jax.jit passes options where it is off); topos switches it off, by name, on
#: every compile, whatever ``XLA_FLAGS`` says.
NAN_PROPAGATING_OVERRIDES = (("xla_cpu_enable_fast_min_max", False), ("xla_gpu_enable_fast_min_max", False))


def compile_options(optimize=True, options=None):
    """``options`` (a new ``xla_client.CompileOptions`` by default, else changed in place) with
    NaN-propagating min/max.

    ``optimize=False`` compiles about four times faster, for checking numbers
    rather than speed: XLA's older CPU emitters instead of its fusion emitters,
    and LLVM at -O0 without its expensive passes. The operations are the same.
    """
    from jax._src.lib import xla_client

    options = xla_client.CompileOptions() if options is None else options
    overrides = dict(options.env_option_overrides)
    overrides.update(NAN_PROPAGATING_OVERRIDES)
    if not optimize:
        debug = options.executable_build_options.debug_options
        debug.xla_backend_optimization_level = 0
        debug.xla_llvm_disable_expensive_passes = True
        overrides["xla_cpu_use_fusion_emitters"] = False
    options.env_option_overrides = list(overrides.items())
    return options


@functools.lru_cache(maxsize=256)
def compile_stablehlo(text, optimize=True):
    """Compile MLIR text for the first CPU device (cached by text), with ``compile_options(optimize)``."""
    jax, backend = _backend()
    if "f64" in text and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    return backend.compile_and_load(text, backend.devices()[:1], compile_options(optimize))


def execute_stablehlo(text, arguments, optimize=True):
    """Compile (or reuse) ``text`` and run it on ``arguments`` (numpy arrays); returns numpy arrays."""
    jax, backend = _backend()
    executable = compile_stablehlo(text, optimize)
    device = backend.devices()[0]
    buffers = [jax.device_put(np.asarray(a), device) for a in arguments]
    return [np.asarray(result) for result in executable.execute(buffers)]


def execute_plan(plan, parameters, feeds=None, optimize=True):
    """The plan's results computed by XLA: the readables, then the gradients."""
    return execute_stablehlo(plan.emit_stablehlo(), plan.argument_values(parameters, feeds), optimize)
