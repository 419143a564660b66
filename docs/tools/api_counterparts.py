"""Each public name's numpy and JAX counterparts: the one table the API page's summaries are drawn from.

    python docs/tools/api_counterparts.py       # print the tables, as docs/api.md shows them

Kept here, in one table, rather than as a line in each docstring: the pairing is a claim about
numpy and JAX, which ``py/topos`` never imports, and a test checks it as a whole
(tests/python/test_api_counterparts.py: every public name has a row, every counterpart resolves in
the installed numpy, scipy and jax, the elementwise and reduction rows compute numpy's values). One
table also reads as the porting guide it is: a reader looks a jax name up here, not in 240
docstrings, and a docstring keeps saying what topos does.

``COUNTERPARTS[module][name]`` is ``(numpy, jax, note)`` or ``(numpy, jax, note, check)``: dotted
paths ("numpy.log1p", "jax.nn.silu", "scipy.special.erf" where numpy itself has none), "" where
there is no counterpart, a short note where topos differs, and ``check``, how the test calls an
elementwise or reduction row against its numpy (or scipy) function, or its JAX one where numpy has
none (``jax.nn.silu``, in float64):

- ``"unary"``: ``f(x)``; ``"binary"``: ``f(a, b)`` (results as floats: topos's comparisons and
  logical operators give 1.0 and 0.0 where numpy gives booleans);
- ``"axis"``: ``f(x, axis=-1)``, a reduction, scan or sort along the last axis.
"""

import sys

NONE = "—"

# Recorded draws: the same distributions as numpy's Generator methods, jax.random's numbers.
JAX_NUMBERS = "jax's numbers for the same key; numpy's generator draws others"
FLOATS = "1.0 or 0.0 in the operands' float dtype, not booleans"
LAST_AXIS = "along the last axis by default (numpy: the flattened value)"
TAPE_FIRST = "takes the tape first: a leaf of the recording"

COUNTERPARTS = {
    "topos": {
        # classes and errors
        "ArgumentError": ("", "", "a ValueError"),
        "ArgumentTypeError": ("", "", "a TypeError"),
        "AxisError": ("numpy.exceptions.AxisError", "", "also an IndexError and a ShapeError"),
        "CheckpointError": ("", "", ""),
        "DtypeError": ("", "", "a ValueError"),
        "FeedError": ("", "", "a ValueError"),
        "Field": ("", "", "what jax.grad's reverse pass computes, read node by node"),
        "Gradients": ("", "", "the parameters' gradients, as a pytree of jax.grad"),
        "Graph": ("", "", "the graph reading"),
        "IndexingError": ("", "", "an IndexError"),
        "LoweringError": ("", "", ""),
        "MissingRuleError": ("", "", ""),
        "Network": ("", "", "a sealed tape, as a jaxpr is a traced function"),
        "Parameters": ("", "", "the trainable values, as a params pytree"),
        "RecordingError": ("", "", ""),
        "Run": ("", "", ""),
        "SealedTapeError": ("", "", ""),
        "ShapeError": ("", "", "a ValueError"),
        "Symbol": ("", "", ""),
        "Tape": ("", "jax.make_jaxpr", "records explicitly instead of tracing a function"),
        "Tensor": ("numpy.ndarray", "jax.Array", "a read-only numpy array"),
        "ToposError": ("", "", ""),
        "UnknownOpcodeError": ("", "", ""),
        "Value": ("numpy.ndarray", "jax.core.Tracer", "a recorded node with ndarray's methods; == is not overloaded"),
        "detach": ("", "", "values to symbols, read after a run"),
        # the recording functions
        "abs": ("numpy.abs", "jax.numpy.abs", "", "unary"),
        "atan2": ("numpy.arctan2", "jax.numpy.arctan2", "", "binary"),
        "attention": ("", "jax.nn.dot_product_attention", "q, k, v [..., length, dim]; jax's takes a heads axis"),
        "broadcast_to": ("numpy.broadcast_to", "jax.numpy.broadcast_to", ""),
        "causal_mask": ("", "", "numpy.tril(numpy.ones((n, n))); " + TAPE_FIRST),
        "concatenate": ("numpy.concatenate", "jax.numpy.concatenate", ""),
        "conv": ("", "jax.lax.conv_general_dilated", "torch's layout [N, C, *spatial], a cross-correlation"),
        "conv1d": ("", "jax.lax.conv_general_dilated", "torch.nn.functional.conv1d's layout"),
        "conv2d": ("", "jax.lax.conv_general_dilated", "torch.nn.functional.conv2d's layout"),
        "cos": ("numpy.cos", "jax.numpy.cos", "", "unary"),
        "cross_entropy": ("", "", "optax.softmax_cross_entropy_with_integer_labels, averaged"),
        "equal": ("numpy.equal", "jax.numpy.equal", FLOATS, "binary"),
        "exp": ("numpy.exp", "jax.numpy.exp", "", "unary"),
        "expand_dims": ("numpy.expand_dims", "jax.numpy.expand_dims", ""),
        "gelu": ("", "jax.nn.gelu", "the tanh form (jax's default approximate=True)", "unary"),
        "grad": ("", "jax.grad", "of a recorded value with respect to values, not of a function"),
        "hessian": ("", "jax.hessian", "of a recorded rank-0 value"),
        "hvp": ("", "", "jax.jvp of jax.grad: H v without forming H"),
        "jvp": ("", "jax.jvp", "built from the reverse rules (double vjp)"),
        "jacobian": ("", "jax.jacrev", "of a recorded value with respect to a value; also topos.jacrev"),
        "jacfwd": ("", "jax.jacfwd", "of a recorded value with respect to a value"),
        "vmap": ("", "jax.vmap", ""),
        "scan": ("", "jax.lax.scan", ""),
        "fori_loop": ("", "jax.lax.fori_loop", "the trip count is fixed when recording"),
        "while_loop": (
            "",
            "jax.lax.while_loop",
            "differentiable (recomputing each trip's carry), where JAX's reverse mode refuses",
        ),
        "cond": (
            "",
            "jax.lax.cond",
            "pred a rank-0 float (nonzero is true); a Python bool picks the branch when recording",
        ),
        "checkpoint": ("", "jax.checkpoint", ""),
        "custom_vjp": ("", "jax.custom_vjp", ""),
        "greater": ("numpy.greater", "jax.numpy.greater", FLOATS, "binary"),
        "greater_equal": ("numpy.greater_equal", "jax.numpy.greater_equal", FLOATS, "binary"),
        "layer_norm": ("", "", "flax.linen.LayerNorm's function"),
        "less": ("numpy.less", "jax.numpy.less", FLOATS, "binary"),
        "less_equal": ("numpy.less_equal", "jax.numpy.less_equal", FLOATS, "binary"),
        "log": ("numpy.log", "jax.numpy.log", "", "unary"),
        "log_softmax": (
            "scipy.special.log_softmax",
            "jax.nn.log_softmax",
            "a row holding +inf is NaN throughout, as jax's (scipy: -inf beside the NaN)",
            "axis",
        ),
        "logsumexp": ("scipy.special.logsumexp", "jax.scipy.special.logsumexp", LAST_AXIS, "axis"),
        "matmul": ("numpy.matmul", "jax.numpy.matmul", ""),
        "max": ("numpy.max", "jax.numpy.max", "", "axis"),
        "maximum": ("numpy.maximum", "jax.numpy.maximum", "", "binary"),
        "mean": ("numpy.mean", "jax.numpy.mean", "", "axis"),
        "min": ("numpy.min", "jax.numpy.min", "", "axis"),
        "minimum": ("numpy.minimum", "jax.numpy.minimum", "", "binary"),
        "mse": ("", "", "optax.l2_loss is half of it, elementwise"),
        "not_equal": ("numpy.not_equal", "jax.numpy.not_equal", FLOATS, "binary"),
        "one_hot": ("", "jax.nn.one_hot", ""),
        "permute": ("numpy.permute_dims", "jax.numpy.permute_dims", "torch's name for transpose"),
        "power": ("numpy.power", "jax.numpy.power", "", "binary"),
        "relu": ("", "jax.nn.relu", "its derivative at 0 is 0", "unary"),
        "reshape": ("numpy.reshape", "jax.numpy.reshape", ""),
        "rsqrt": ("", "jax.lax.rsqrt", "", "unary"),
        "sigmoid": ("scipy.special.expit", "jax.nn.sigmoid", "", "unary"),
        "sign": ("numpy.sign", "jax.numpy.sign", "", "unary"),
        "sin": ("numpy.sin", "jax.numpy.sin", "", "unary"),
        "softmax": ("scipy.special.softmax", "jax.nn.softmax", "last axis by default", "axis"),
        "softplus": ("", "jax.nn.softplus", "numpy.logaddexp(0, x)", "unary"),
        "sqrt": ("numpy.sqrt", "jax.numpy.sqrt", "", "unary"),
        "square": ("numpy.square", "jax.numpy.square", "", "unary"),
        "squeeze": ("numpy.squeeze", "jax.numpy.squeeze", ""),
        "stack": ("numpy.stack", "jax.numpy.stack", ""),
        "stop_gradient": ("", "jax.lax.stop_gradient", ""),
        "sum": ("numpy.sum", "jax.numpy.sum", "", "axis"),
        "swapaxes": ("numpy.swapaxes", "jax.numpy.swapaxes", ""),
        "take": ("numpy.take", "jax.numpy.take", "int32 indices, in range"),
        "tanh": ("numpy.tanh", "jax.numpy.tanh", "", "unary"),
        "transpose": ("numpy.transpose", "jax.numpy.transpose", ""),
        "var": ("numpy.var", "jax.numpy.var", "biased (ddof=0) only", "axis"),
        "where": (
            "numpy.where",
            "jax.numpy.where",
            "three arguments only: one-argument where's shape depends on the data",
        ),
        "argmax": ("numpy.argmax", "jax.numpy.argmax", LAST_AXIS + "; int32", "axis"),
        "argmin": ("numpy.argmin", "jax.numpy.argmin", LAST_AXIS + "; int32", "axis"),
        "cumsum": ("numpy.cumsum", "jax.numpy.cumsum", LAST_AXIS + "; reverse=True runs backwards", "axis"),
        "top_k": ("", "jax.lax.top_k", ""),
        # reductions and running folds
        "prod": ("numpy.prod", "jax.numpy.prod", "", "axis"),
        "any": ("numpy.any", "jax.numpy.any", FLOATS, "axis"),
        "all": ("numpy.all", "jax.numpy.all", FLOATS, "axis"),
        "cumprod": ("numpy.cumprod", "jax.numpy.cumprod", LAST_AXIS, "axis"),
        "cummax": ("numpy.maximum.accumulate", "jax.lax.cummax", "", "axis"),
        "cummin": ("numpy.minimum.accumulate", "jax.lax.cummin", "", "axis"),
        "logcumsumexp": ("numpy.logaddexp.accumulate", "jax.lax.cumlogsumexp", "", "axis"),
        # special functions
        "erf": ("scipy.special.erf", "jax.scipy.special.erf", "", "unary"),
        "erfc": ("scipy.special.erfc", "jax.scipy.special.erfc", "", "unary"),
        "erfinv": ("scipy.special.erfinv", "jax.scipy.special.erfinv", "", "unary"),
        "lgamma": (
            "scipy.special.gammaln",
            "jax.scipy.special.gammaln",
            "lgamma(-inf) is +inf, as C's and jax's (scipy: -inf); also topos.gammaln",
            "unary",
        ),
        "digamma": ("scipy.special.digamma", "jax.scipy.special.digamma", "", "unary"),
        "polygamma": ("scipy.special.polygamma", "jax.scipy.special.polygamma", ""),
        # sorting, searching, scattering
        "sort": ("numpy.sort", "jax.numpy.sort", "always stable; descending=True", "axis"),
        "argsort": ("numpy.argsort", "jax.numpy.argsort", "always stable (numpy's kind='stable'); int32", "axis"),
        "searchsorted": ("numpy.searchsorted", "jax.numpy.searchsorted", "int32"),
        "take_along_axis": ("numpy.take_along_axis", "jax.numpy.take_along_axis", ""),
        "put_along_axis": (
            "numpy.put_along_axis",
            "jax.numpy.put_along_axis",
            "returns a new value (jax's inplace=False)",
        ),
        "scatter_add": (
            "numpy.add.at",
            "jax.Array.at",
            "x.at[i].add(u); on a copy, where numpy's add.at writes in place",
        ),
        "scatter": ("", "jax.Array.at", "x.at[i].set(u); an index given twice takes the mean of its updates"),
        # randomness: jax.random's numbers for the same key
        "bernoulli": ("", "jax.random.bernoulli", ""),
        "dropout": ("", "", "inverted dropout, as flax.linen.Dropout"),
        "fold_in": ("", "jax.random.fold_in", ""),
        "normal": ("numpy.random.Generator.normal", "jax.random.normal", JAX_NUMBERS),
        "random_bits": ("", "jax.random.bits", ""),
        "random_key": ("numpy.random.default_rng", "jax.random.PRNGKey", "a uint32 [2] array: jax's key data"),
        "split_key": ("", "jax.random.split", ""),
        "uniform": ("numpy.random.Generator.uniform", "jax.random.uniform", JAX_NUMBERS),
        "categorical": ("", "jax.random.categorical", ""),
        "choice": ("numpy.random.Generator.choice", "jax.random.choice", JAX_NUMBERS),
        "exponential": ("numpy.random.Generator.exponential", "jax.random.exponential", JAX_NUMBERS),
        "gumbel": ("numpy.random.Generator.gumbel", "jax.random.gumbel", JAX_NUMBERS),
        "permutation": ("numpy.random.Generator.permutation", "jax.random.permutation", JAX_NUMBERS),
        "randint": ("numpy.random.Generator.integers", "jax.random.randint", JAX_NUMBERS),
        "shuffle": (
            "numpy.random.Generator.shuffle",
            "jax.random.permutation",
            "permutation(key, x, axis, independent=False); returns a new value",
        ),
        "truncated_normal": ("", "jax.random.truncated_normal", ""),
        "avg_pool": ("", "jax.lax.reduce_window", "flax.linen.avg_pool's windows, torch's layout [N, C, *spatial]"),
        "max_pool": ("", "jax.lax.reduce_window", "flax.linen.max_pool's windows, torch's layout [N, C, *spatial]"),
        # elementwise functions with their own accuracy
        "log1p": ("numpy.log1p", "jax.numpy.log1p", "", "unary"),
        "expm1": ("numpy.expm1", "jax.numpy.expm1", "", "unary"),
        "floor": ("numpy.floor", "jax.numpy.floor", "", "unary"),
        "ceil": ("numpy.ceil", "jax.numpy.ceil", "", "unary"),
        "round": ("numpy.round", "jax.numpy.round", "halves to even", "unary"),
        "trunc": ("numpy.trunc", "jax.numpy.trunc", "", "unary"),
        "tan": ("numpy.tan", "jax.numpy.tan", "", "unary"),
        "arctan": ("numpy.arctan", "jax.numpy.arctan", "", "unary"),
        "arcsin": ("numpy.arcsin", "jax.numpy.arcsin", "", "unary"),
        "arccos": ("numpy.arccos", "jax.numpy.arccos", "", "unary"),
        "sinh": ("numpy.sinh", "jax.numpy.sinh", "", "unary"),
        "cosh": ("numpy.cosh", "jax.numpy.cosh", "", "unary"),
        "arcsinh": ("numpy.arcsinh", "jax.numpy.arcsinh", "", "unary"),
        # array building and shaping
        "einsum": ("numpy.einsum", "jax.numpy.einsum", "recorded as the transposes, reshapes and products it means"),
        "arange": ("numpy.arange", "jax.numpy.arange", TAPE_FIRST),
        "diag": ("numpy.diag", "jax.numpy.diag", ""),
        "diagonal": ("numpy.diagonal", "jax.numpy.diagonal", ""),
        "eye": ("numpy.eye", "jax.numpy.eye", TAPE_FIRST),
        "flip": ("numpy.flip", "jax.numpy.flip", ""),
        "kron": ("numpy.kron", "jax.numpy.kron", ""),
        "linspace": ("numpy.linspace", "jax.numpy.linspace", TAPE_FIRST),
        "outer": ("numpy.outer", "jax.numpy.outer", ""),
        "pad": ("numpy.pad", "jax.numpy.pad", "modes constant, reflect, symmetric, edge and wrap"),
        "repeat": ("numpy.repeat", "jax.numpy.repeat", ""),
        "roll": ("numpy.roll", "jax.numpy.roll", ""),
        "tile": ("numpy.tile", "jax.numpy.tile", ""),
        "trace": ("numpy.trace", "jax.numpy.trace", ""),
        "tril": ("numpy.tril", "jax.numpy.tril", ""),
        "triu": ("numpy.triu", "jax.numpy.triu", ""),
        # composite activations and elementwise functions
        "clip": ("numpy.clip", "jax.numpy.clip", "where min > max, max (as numpy)"),
        "elu": ("", "jax.nn.elu", "", "unary"),
        "fmod": ("numpy.fmod", "jax.numpy.fmod", "", "binary"),
        "mod": ("numpy.mod", "jax.numpy.mod", "also topos.remainder and value % b", "binary"),
        "hard_tanh": ("", "jax.nn.hard_tanh", "", "unary"),
        "leaky_relu": ("", "jax.nn.leaky_relu", "", "unary"),
        "logaddexp": ("numpy.logaddexp", "jax.numpy.logaddexp", "", "binary"),
        "selu": ("", "jax.nn.selu", "", "unary"),
        "silu": ("", "jax.nn.silu", "", "unary"),
        "softsign": ("", "jax.nn.soft_sign", "", "unary"),
        "logical_and": ("numpy.logical_and", "jax.numpy.logical_and", FLOATS, "binary"),
        "logical_not": ("numpy.logical_not", "jax.numpy.logical_not", FLOATS, "unary"),
        "logical_or": ("numpy.logical_or", "jax.numpy.logical_or", FLOATS, "binary"),
        "logical_xor": ("numpy.logical_xor", "jax.numpy.logical_xor", FLOATS, "binary"),
    },
    "topos.model": {
        "Node": ("", "jax.extend.core.JaxprEqn", "one recorded operation"),
    },
    "topos.model.optim": {
        "SGD": ("", "", "torch.optim.SGD's update; optax.sgd in JAX's ecosystem"),
        "Adam": ("", "", "torch.optim.Adam's update; optax.adam in JAX's ecosystem"),
        "AdamW": ("", "", "torch.optim.AdamW's update; optax.adamw in JAX's ecosystem"),
        "Optimizer": ("", "", ""),
        "OptimizerState": ("", "", ""),
        "SGDSlot": ("", "", ""),
        "AdamSlot": ("", "", ""),
        "clip_by_global_norm": ("", "", "optax.clip_by_global_norm"),
    },
    "topos.model.schedules": {
        "Schedule": ("", "", "optax.Schedule: a function of the step count"),
        "constant_schedule": ("", "", "optax.constant_schedule"),
        "linear_schedule": ("", "", "optax.linear_schedule; torch's LinearLR"),
        "cosine_decay_schedule": ("", "", "optax.cosine_decay_schedule; torch's CosineAnnealingLR up to T_max"),
        "warmup_cosine_decay_schedule": ("", "", "optax.warmup_cosine_decay_schedule"),
        "exponential_decay": ("", "", "optax.exponential_decay; torch's ExponentialLR, StepLR (staircase)"),
        "piecewise_constant_schedule": ("", "", "optax.piecewise_constant_schedule; torch's MultiStepLR"),
        "join_schedules": ("", "", "optax.join_schedules; torch's SequentialLR"),
    },
    "topos.compiler": {
        "Costs": ("", "", ""),
        "Entry": ("", "", ""),
        "Executor": ("", "", ""),
        "Lowering": ("", "", ""),
        "Meta": ("", "jax.ShapeDtypeStruct", ""),
        "Plan": ("", "", "a lowered entry, as jax.jit(f).lower(...) is"),
        "PlanRun": ("", "", ""),
        "Primitive": ("", "jax.extend.core.Primitive", "one class holds every reading of the op"),
        "lookup": ("", "", ""),
        "missing_rules": ("", "", ""),
        "primitives": ("", "", ""),
        "register": ("", "", ""),
        "register_backend": ("", "", ""),
        "register_executor": ("", "", ""),
        "unregister": ("", "", ""),
        "unregister_backend": ("", "", ""),
    },
    "topos.show": {
        "Card": ("", "", ""),
        "Line": ("", "", ""),
        "Plot": ("", "", ""),
        "capture": ("", "", ""),
        "graph": ("", "", ""),
        "heatmap": ("", "", "matplotlib's imshow over an extent, with a scatter of points"),
        "hlo": ("", "", "jax.jit(f).lower(...).as_text()"),
        "image": ("", "", "matplotlib's imshow; jax-js's displayImage"),
        "lines": ("", "", ""),
        "plot": ("", "", ""),
        "progress": ("", "", ""),
        "spec": ("", "jax.make_jaxpr", "the spec reading"),
        "text": ("", "", ""),
        "watch": ("", "", ""),
    },
    "topos.xla": {
        "Compiled": ("", "", ""),
        "DataParallel": ("", "", ""),
        "DataParallelTrainer": ("", "", ""),
        "XLAExecutor": ("", "", ""),
        "XLATrainer": ("", "", ""),
        "XLAUnavailableError": ("", "", ""),
        "compile_module": ("", "", ""),
        "fusions": ("", "", ""),
        "run_plan": ("", "", ""),
        "to_device": ("", "jax.device_put", ""),
        "to_host": ("", "jax.device_get", ""),
    },
    "topos.datasets": {
        "DIGITS_ATTRIBUTION": ("", "", ""),
        "digits": ("", "", "sklearn.datasets.load_digits's 8x8 images"),
    },
    "topos.fft": {
        "abs": ("numpy.abs", "jax.numpy.abs", "of pairs [..., 2]: complex values as real and imaginary parts"),
        "complex": ("", "jax.lax.complex", "pairs [..., 2] from real and imaginary parts"),
        "fft": ("numpy.fft.fft", "jax.numpy.fft.fft", "complex values as pairs [..., 2]"),
        "fft2": ("numpy.fft.fft2", "jax.numpy.fft.fft2", "complex values as pairs [..., 2]"),
        "ifft": ("numpy.fft.ifft", "jax.numpy.fft.ifft", "complex values as pairs [..., 2]"),
        "ifft2": ("numpy.fft.ifft2", "jax.numpy.fft.ifft2", "complex values as pairs [..., 2]"),
        "imag": ("numpy.imag", "jax.numpy.imag", "of pairs [..., 2]"),
        "irfft": ("numpy.fft.irfft", "jax.numpy.fft.irfft", "complex values as pairs [..., 2]"),
        "real": ("numpy.real", "jax.numpy.real", "of pairs [..., 2]"),
        "rfft": ("numpy.fft.rfft", "jax.numpy.fft.rfft", "complex values as pairs [..., 2]"),
    },
    "topos.linalg": {
        "cholesky": ("numpy.linalg.cholesky", "jax.numpy.linalg.cholesky", ""),
        "cho_solve": ("scipy.linalg.cho_solve", "jax.scipy.linalg.cho_solve", "takes the lower factor itself"),
        "triangular_solve": ("scipy.linalg.solve_triangular", "jax.lax.linalg.triangular_solve", ""),
        "lu": ("scipy.linalg.lu", "jax.scipy.linalg.lu", ""),
        "solve": ("numpy.linalg.solve", "jax.numpy.linalg.solve", ""),
        "inv": ("numpy.linalg.inv", "jax.numpy.linalg.inv", ""),
        "det": ("numpy.linalg.det", "jax.numpy.linalg.det", ""),
        "slogdet": ("numpy.linalg.slogdet", "jax.numpy.linalg.slogdet", ""),
        "eigh": ("numpy.linalg.eigh", "jax.numpy.linalg.eigh", ""),
        "eigvalsh": ("numpy.linalg.eigvalsh", "jax.numpy.linalg.eigvalsh", ""),
        "qr": ("numpy.linalg.qr", "jax.numpy.linalg.qr", "the reduced factorisation"),
        "lstsq": ("numpy.linalg.lstsq", "jax.numpy.linalg.lstsq", "x alone, for a full column rank a"),
        "svd": ("numpy.linalg.svd", "jax.numpy.linalg.svd", "reduced by default (full_matrices=False)"),
        "svdvals": ("numpy.linalg.svdvals", "jax.numpy.linalg.svdvals", ""),
    },
}


def row(module_name, name):
    """``(numpy, jax, note, check)`` of ``module_name.name`` ("" where absent, check None), or None without a row."""
    entry = COUNTERPARTS.get(module_name, {}).get(name)
    if entry is None:
        return None
    numpy_name, jax_name, note, *check = entry
    return numpy_name, jax_name, note, check[0] if check else None


def table(module_name, names, anchor):
    """The Markdown table of ``names`` (documented in ``module_name``'s section), each linked by ``anchor(name)``."""
    lines = ["| topos | numpy | JAX | where topos differs |", "| --- | --- | --- | --- |"]
    for name in names:
        numpy_name, jax_name, note, _ = row(module_name, name) or ("", "", "", None)
        cells = [f"[`{name}`](#{anchor(name)})"]
        cells += [f"`{path}`" if path else NONE for path in (numpy_name, jax_name)]
        cells.append(note.replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    for module_name, rows in COUNTERPARTS.items():
        sys.stdout.write(f"## {module_name}\n" + "\n".join(table(module_name, list(rows), str)) + "\n\n")
