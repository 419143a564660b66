"""Compiling and running StableHLO text on XLA through jaxlib's PJRT client.

The pieces every XLA run uses, for the ``"xla"`` backend, the training step
and any caller with a module of its own (a sharded one, say):

- ``client()``: jax and the PJRT client of the platform jaxlib offers (a GPU
  where jaxlib has one, else the CPU); importing jax happens here, on first use;
- ``compile_module(text, devices=None, options=None, optimize=True)``: a
  ``Compiled`` executable and how long XLA took, cached by text for the default
  devices and options;
- ``compile_options(optimize, options)``: the options every compile takes, with
  NaN-propagating min/max (docs/kernels.md, "NaN and infinities");
- ``to_device(array)`` and ``to_host(array)``: buffers in and out.

jax is the optional extra ``topos-autodiff[xla]``; without it every entry
raises ``XLAUnavailableError`` naming the extra. ``jax_enable_x64`` is switched
on for a module with float64 values (XLA silently computes in float32 otherwise).
"""

import functools
import time

import numpy as np

from ..errors import ToposError


class XLAUnavailableError(ToposError, ImportError):
    """jax/jaxlib are not installed: the ``"xla"`` backend needs the ``topos-autodiff[xla]`` extra."""


@functools.lru_cache(maxsize=1)
def client():
    """``(jax, backend)``: the jax module and the PJRT client of jax's default platform."""
    try:
        import jax
        from jax.extend.backend import get_backend
    except ImportError as error:
        raise XLAUnavailableError(
            f"the xla backend needs jax and jaxlib, which are not installed ({error}): "
            "pip install 'topos-autodiff[xla]'"
        ) from None
    return jax, get_backend()


def default_device():
    """The device a plan runs on: the client's first."""
    return client()[1].devices()[0]


class Compiled:
    """A loaded XLA executable, the milliseconds XLA took to compile it, and its optimized HLO text."""

    def __init__(self, executable, compile_ms):
        self.executable = executable
        self.compile_ms = compile_ms

    def execute(self, arguments):
        """Run on device arrays (``to_device``); returns device arrays. Donated arguments are consumed."""
        return self.executable.execute(arguments)

    def hlo_text(self):
        """The module as XLA compiled it (after fusion), as HLO text."""
        return self.executable.hlo_modules()[0].to_string()


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


def compile_module(text, devices=None, options=None, optimize=True):
    """Compile MLIR ``text`` for ``devices`` (default: the first device) with ``options``
    (an ``xla_client.CompileOptions``); returns a ``Compiled``.

    With neither ``devices`` nor ``options`` the result is cached by text.
    ``optimize=False`` compiles about four times faster, for checking numbers
    rather than speed: XLA's older CPU emitters instead of its fusion emitters,
    and LLVM at -O0 without its expensive passes. The operations are the same.
    Every compile, with the caller's ``options`` too, goes through
    ``compile_options``: a maximum or minimum with a NaN operand is NaN.
    """
    if devices is None and options is None:
        return _compile_cached(text, optimize)
    return _compile(text, devices, options, optimize)


@functools.lru_cache(maxsize=256)
def _compile_cached(text, optimize):
    return _compile(text, None, None, optimize)


def _compile(text, devices, options, optimize):
    jax, backend = client()
    if "f64" in text and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    from jax._src.lib import xla_client

    if "@lapack_" in text:
        # The LAPACK custom calls (topos.ops.linalg_spectral's) find their routines through
        # pointers jaxlib fills on first use; JAX fills them when it lowers such a call, and a
        # plan's module, which JAX never lowered, must ask first or the call jumps to null.
        from jaxlib import lapack

        lapack._lapack.initialize()
    devices = list(devices) if devices is not None else backend.devices()[:1]
    options = compile_options(optimize, options)
    start = time.perf_counter()
    executable = backend.compile_and_load(text, xla_client.DeviceList(tuple(devices)), options)
    return Compiled(executable, (time.perf_counter() - start) * 1e3)


def to_device(array, device=None):
    """A numpy array (or scalar) as a device array on ``device`` (default: the first)."""
    jax, _ = client()
    array = np.asarray(array)
    if array.dtype == np.float64 and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    return jax.device_put(array, device or default_device())


def to_host(array):
    """A device array as a numpy array."""
    return np.asarray(array)
