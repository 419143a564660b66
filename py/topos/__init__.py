"""topos: a tape-based autodiff and tensor compiler.

``topos.model`` records, runs, differentiates, trains and checkpoints;
``topos.compiler`` lowers the same recording into its other readings;
``topos.webgpu`` runs plans on WebGPU; ``topos.show`` renders them as cards.
"""

from . import ops  # noqa: F401  (registers the primitives first)
from . import show
from . import webgpu  # noqa: F401  (registers the "webgpu" and "auto" backends; wgpu-py is imported only when used)
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    AxisError,
    CheckpointError,
    DtypeError,
    FeedError,
    IndexingError,
    LoweringError,
    MissingRuleError,
    RecordingError,
    SealedTapeError,
    ShapeError,
    ToposError,
    UnknownOpcodeError,
)
from .model import Field, Gradients, Network, Parameters, Run, Symbol, Tape, Value, detach
from .compiler import Graph
from .model.functions import (
    abs,
    attention,
    broadcast_to,
    causal_mask,
    concatenate,
    cross_entropy,
    equal,
    exp,
    expand_dims,
    gelu,
    greater,
    greater_equal,
    layer_norm,
    less,
    less_equal,
    log,
    log_softmax,
    logsumexp,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mse,
    not_equal,
    one_hot,
    permute,
    power,
    relu,
    reshape,
    rsqrt,
    sigmoid,
    sign,
    softmax,
    sqrt,
    square,
    squeeze,
    stack,
    stop_gradient,
    sum,
    swapaxes,
    take,
    tanh,
    transpose,
    var,
    where,
)
from .tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "ArgumentError", "ArgumentTypeError", "AxisError", "CheckpointError", "DtypeError", "FeedError", "Field",
    "Gradients", "Graph", "IndexingError", "LoweringError", "MissingRuleError", "Network", "Parameters",
    "RecordingError", "Run", "SealedTapeError", "ShapeError", "Symbol", "Tape", "Tensor", "ToposError",
    "UnknownOpcodeError", "Value", "detach", "show",
    "abs", "attention", "broadcast_to", "causal_mask", "concatenate", "cross_entropy", "equal", "exp",
    "expand_dims", "gelu", "greater", "greater_equal", "layer_norm", "less", "less_equal", "log", "log_softmax",
    "logsumexp", "matmul", "max", "maximum", "mean", "min", "minimum", "mse", "not_equal", "one_hot", "permute",
    "power", "relu", "reshape", "rsqrt", "sigmoid", "sign", "softmax", "sqrt", "square", "squeeze", "stack",
    "stop_gradient", "sum", "swapaxes", "take", "tanh", "transpose", "var", "where",
]
