"""Every bad argument names the user's line (issue 29, part 2).

A call that topos refuses for its arguments raises an error whose message ends
with ``(recorded at file:line)`` and whose ``source`` is ``(file, line)``: the
user's call, however deep inside topos the check sits (an optimizer's
``__post_init__``, a trainer, a card, a dataclass's generated ``__init__``).

``CASES`` is one table over the public API: (the public name it exercises, a call
with a bad argument, the error class, a fragment of the message). The test runs
each call and finds the line in the traceback where this file made it; the error
must name that line. ``test_every_public_callable_is_in_the_table`` walks the
public namespaces, so that a new function cannot slip past: each callable is in
the table or in ``NOT_IN_THE_TABLE`` with its reason.
"""

import pickle
import traceback

import numpy as np
import pytest

import topos
from topos import (
    ArgumentError,
    ArgumentTypeError,
    AxisError,
    DtypeError,
    FeedError,
    IndexingError,
    RecordingError,
    ShapeError,
    show,
)
from topos.model import optim, schedules
from topos.webgpu import DeviceTrainer
from topos.xla import DataParallelTrainer, XLATrainer

THIS_FILE = __file__


def _matrix():
    """A recorded [2, 3] input on a fresh tape."""
    return topos.Tape().input(np.ones((2, 3)))


def _vector():
    """A recorded [4] input on a fresh tape."""
    return topos.Tape().input(np.ones(4))


def _two(first=(2, 3), second=(2, 3)):
    """Two recorded inputs of one tape."""
    tape = topos.Tape()
    return tape.input(np.ones(first)), tape.input(np.ones(second))


def _images(spatial=2):
    """Images [1, 2, 6, ...] and a kernel [2, 2, 3, ...] on one tape."""
    tape = topos.Tape()
    return tape.input(np.ones((1, 2) + (6,) * spatial)), tape.parameter(np.ones((2, 2) + (3,) * spatial))


def _pool_input():
    return topos.Tape().input(np.ones((1, 2, 6, 6)))


def _key():
    return topos.random_key(0)


def _recorded_key():
    return topos.Tape().input(topos.random_key(0))


def _dropout_arguments():
    """``x`` (a recorded [2, 3] input) and ``key`` (a recorded key) on one tape."""
    tape = topos.Tape()
    return {"x": tape.input(np.ones((2, 3))), "key": tape.input(topos.random_key(0))}


def _network():
    """A sealed network with one parameter ``w`` and one input ``x``, its loss last."""

    def build(tape):
        w = tape.parameter(np.ones(3), name="w")
        x = tape.input(np.ones(3), name="x")
        return [w, x, ((w * x) ** 2).sum()]

    network, symbols = topos.Tape.record(build)
    return network, symbols


NETWORK, (W, X, LOSS) = _network()


def _gradients():
    network, (w, x, loss) = _network()
    parameters = network.parameters()
    return parameters, network.forward(parameters).backward(loss).parameters(parameters)


def _plan():
    network, (w, x, loss) = _network()
    return network, network.entry([loss]).backward(loss).lower()


# (public name, call, error class, fragment of the message)
CASES = [
    # Convolution: the issue's own examples, each spatial form.
    ("conv2d", lambda: topos.conv2d(*_images(), stride=-1), ArgumentError, "stride (-1, -1) must be positive"),
    ("conv2d", lambda: topos.conv2d(*_images(), stride=0), ArgumentError, "stride (0, 0) must be positive"),
    ("conv2d", lambda: topos.conv2d(*_images(), dilation=0), ArgumentError, "dilation (0, 0) must be positive"),
    ("conv2d", lambda: topos.conv2d(*_images(), groups=0), ArgumentError, "groups must be a positive int"),
    ("conv2d", lambda: topos.conv2d(*_images(), stride=(1, 1, 1)), ArgumentError, "one entry per spatial axis"),
    ("conv2d", lambda: topos.conv2d(*_images(), padding="full"), ArgumentError, "padding 'full' is not"),
    ("conv2d", lambda: topos.conv2d(*_images(), stride=1.5), ArgumentTypeError, "must be an int or a tuple"),
    ("conv1d", lambda: topos.conv1d(*_images(1), stride=-1), ArgumentError, "stride (-1,) must be positive"),
    ("conv1d", lambda: topos.conv1d(*_images(1), padding=(1, 2, 3)), ArgumentError, "padding (1, 2, 3) needs"),
    ("conv", lambda: topos.conv(*_images(3), dilation=(1, 0, 1)), ArgumentError, "dilation (1, 0, 1) must be"),
    ("conv", lambda: topos.conv(*_images(), padding=((1, 1), "x")), ArgumentError, "padding entry 'x'"),
    # Pooling, the same arguments.
    ("max_pool", lambda: topos.max_pool(_pool_input(), 2, stride=-1), ShapeError, "stride (-1, -1) must be at least 1"),
    ("max_pool", lambda: topos.max_pool(_pool_input(), 2, stride=0), ShapeError, "stride (0, 0) must be at least 1"),
    ("max_pool", lambda: topos.max_pool(_pool_input(), 0), ShapeError, "window (0, 0) must be at least 1"),
    ("max_pool", lambda: topos.max_pool(_pool_input(), 2, stride=(1, 1, 1)), ShapeError, "needs one entry for each"),
    ("max_pool", lambda: topos.max_pool(_pool_input(), 2, padding="full"), ShapeError, "padding must be an int"),
    ("avg_pool", lambda: topos.avg_pool(_pool_input(), 2, stride=-1), ShapeError, "stride (-1, -1) must be at least"),
    ("avg_pool", lambda: topos.avg_pool(_pool_input(), (2, 2, 2)), ShapeError, "window (2, 2, 2) needs one entry"),
    ("avg_pool", lambda: topos.avg_pool(_pool_input(), 2, padding="full"), ShapeError, "padding must be an int"),
    # Recording functions.
    ("abs", lambda: topos.abs("text"), ArgumentTypeError, "must be a recorded value"),
    ("attention", lambda: topos.attention(*_two(), "v"), ArgumentTypeError, ""),
    ("broadcast_to", lambda: topos.broadcast_to(_matrix(), (5, 3)), ShapeError, ""),
    ("causal_mask", lambda: topos.causal_mask(topos.Tape(), -1), ArgumentError, ""),
    ("concatenate", lambda: topos.concatenate("text"), ArgumentTypeError, "takes a list of values"),
    ("cos", lambda: topos.cos("text"), ArgumentTypeError, "Cos takes a recorded value"),
    ("cross_entropy", lambda: topos.cross_entropy(*_two()), ShapeError, ""),
    ("equal", lambda: topos.equal(*_two((2, 3), (4,))), ShapeError, ""),
    ("exp", lambda: topos.exp("text"), ArgumentTypeError, "Exp takes a recorded value"),
    ("expand_dims", lambda: topos.expand_dims(_matrix(), 7), AxisError, ""),
    ("gelu", lambda: topos.gelu(None), ArgumentTypeError, "Gelu takes a recorded value"),
    ("grad", lambda: topos.grad(_matrix(), []), ArgumentTypeError, "non-empty list"),
    ("hessian", lambda: topos.hessian(_matrix(), "x"), ArgumentTypeError, "one recorded value"),
    ("hvp", lambda: topos.hvp(_matrix(), [], []), ArgumentTypeError, "non-empty list"),
    ("jvp", lambda: topos.jvp(_matrix(), [], []), ArgumentTypeError, "non-empty list"),
    ("checkpoint", lambda: topos.checkpoint(lambda a: a)(2.0), ArgumentTypeError, "no recorded value"),
    ("custom_vjp", lambda: topos.custom_vjp(3), ArgumentTypeError, "takes a function"),
    ("vmap", lambda: topos.vmap(topos.maximum)(*_two((2, 3), (4, 3))), ShapeError, "has 4 examples along axis 0"),
    ("vmap", lambda: topos.vmap(topos.exp, in_axes=2)(_matrix()), AxisError, "in_axes[0] is 2, out of range"),
    ("scan", lambda: topos.scan(lambda c, x: (x, c), *_two((4,), (2, 3))), ShapeError, "carry 0 as [3] float64"),
    ("scan", lambda: topos.scan(lambda c, x: (c, c), 2.0, None, length=3), ArgumentTypeError, "needs a recorded"),
    ("fori_loop", lambda: topos.fori_loop(0, 2.5, lambda i, v: v, _vector()), ArgumentTypeError, "integer bounds"),
    ("cond", lambda: topos.cond(_vector(), topos.exp, topos.exp, _vector()), ShapeError, "pred must be a rank-0"),
    ("while_loop", lambda: topos.while_loop(lambda v: v, lambda v: v, _vector()), ShapeError, "rank-0 float value"),
    ("jacobian", lambda: topos.jacobian(_matrix(), "x"), ArgumentTypeError, "takes recorded values"),
    ("jacrev", lambda: topos.jacrev("y", _matrix()), ArgumentTypeError, "takes recorded values"),
    ("jacfwd", lambda: topos.jacfwd(*_two()[:1], _vector()), RecordingError, "another tape"),
    ("greater", lambda: topos.greater("a", "b"), ArgumentTypeError, ""),
    ("greater_equal", lambda: topos.greater_equal("a", "b"), ArgumentTypeError, ""),
    ("layer_norm", lambda: topos.layer_norm(_matrix(), axis=5), AxisError, ""),
    ("less", lambda: topos.less("a", "b"), ArgumentTypeError, ""),
    ("less_equal", lambda: topos.less_equal("a", "b"), ArgumentTypeError, ""),
    ("log", lambda: topos.log("text"), ArgumentTypeError, "Log takes a recorded value"),
    ("log_softmax", lambda: topos.log_softmax(_matrix(), axis=4), AxisError, ""),
    ("logsumexp", lambda: topos.logsumexp(_matrix(), axis=4), AxisError, ""),
    ("matmul", lambda: topos.matmul(*_two()), ShapeError, ""),
    ("max", lambda: topos.max(_matrix(), axis=4), AxisError, ""),
    ("maximum", lambda: topos.maximum("a", "b"), ArgumentTypeError, ""),
    ("mean", lambda: topos.mean(_matrix(), axis="rows"), AxisError, "axis 'rows' is not an integer"),
    ("min", lambda: topos.min(_matrix(), axis=4), AxisError, ""),
    ("minimum", lambda: topos.minimum("a", "b"), ArgumentTypeError, ""),
    ("mse", lambda: topos.mse(*_two((2, 3), (4,))), ShapeError, ""),
    ("not_equal", lambda: topos.not_equal("a", "b"), ArgumentTypeError, ""),
    ("one_hot", lambda: topos.one_hot(_matrix(), 3), ShapeError, "indices must be int32"),
    ("permute", lambda: topos.permute(_matrix(), (0, 0)), ShapeError, "not a permutation"),
    ("power", lambda: topos.power("a", "b"), ArgumentTypeError, ""),
    ("relu", lambda: topos.relu("text"), ArgumentTypeError, "Relu takes a recorded value"),
    ("reshape", lambda: topos.reshape(_matrix(), (5,)), ShapeError, ""),
    ("rsqrt", lambda: topos.rsqrt("text"), ArgumentTypeError, "Rsqrt takes a recorded value"),
    ("sigmoid", lambda: topos.sigmoid("text"), ArgumentTypeError, "Sigmoid takes a recorded value"),
    ("sign", lambda: topos.sign("text"), ArgumentTypeError, "must be a recorded value"),
    ("sin", lambda: topos.sin("text"), ArgumentTypeError, "Sin takes a recorded value"),
    ("softmax", lambda: topos.softmax(_matrix(), axis=-3), AxisError, ""),
    ("softplus", lambda: topos.softplus("text"), ArgumentTypeError, "Softplus takes a recorded value"),
    ("sqrt", lambda: topos.sqrt("text"), ArgumentTypeError, "Sqrt takes a recorded value"),
    ("square", lambda: topos.square("text"), ArgumentTypeError, ""),
    ("squeeze", lambda: topos.squeeze(_matrix(), axis=0), ShapeError, ""),
    ("stack", lambda: topos.stack("text"), ArgumentTypeError, "takes a list of values"),
    ("stop_gradient", lambda: topos.stop_gradient("text"), ArgumentTypeError, "StopGradient takes a recorded value"),
    ("sum", lambda: topos.sum(_matrix(), axis=2), AxisError, ""),
    ("swapaxes", lambda: topos.swapaxes(_matrix(), 0, 5), AxisError, ""),
    ("take", lambda: topos.take(_matrix(), "rows"), RecordingError, "expected numbers"),
    ("tanh", lambda: topos.tanh("text"), ArgumentTypeError, "Tanh takes a recorded value"),
    ("transpose", lambda: topos.transpose(_matrix(), (1,)), ShapeError, "not a permutation"),
    ("var", lambda: topos.var(_matrix(), axis=3), AxisError, ""),
    ("where", lambda: topos.where("c", "a", "b"), ArgumentTypeError, ""),
    ("argmax", lambda: topos.argmax(_matrix(), axis=5), AxisError, ""),
    ("argmin", lambda: topos.argmin("text"), ArgumentTypeError, "argmin takes a recorded value"),
    ("cumsum", lambda: topos.cumsum(_matrix(), axis=5), AxisError, ""),
    ("top_k", lambda: topos.top_k(_matrix(), 9), ShapeError, "k = 9 is outside 0..3"),
    # The product, the truth reductions and the running folds.
    ("prod", lambda: topos.prod(_matrix(), axis=2), AxisError, ""),
    ("any", lambda: topos.any("text"), ArgumentTypeError, "any takes a recorded value"),
    ("all", lambda: topos.all(_matrix(), axis=(1, 1)), ShapeError, "repeated axis"),
    ("cumprod", lambda: topos.cumprod(_matrix(), axis=5), AxisError, ""),
    ("cummax", lambda: topos.cummax("text"), ArgumentTypeError, "cummax takes a recorded value"),
    ("cummin", lambda: topos.cummin(_matrix(), axis=-3), AxisError, ""),
    ("logcumsumexp", lambda: topos.logcumsumexp(_matrix(), axis=2), AxisError, ""),
    # Sorting, searching and scattering.
    ("sort", lambda: topos.sort(_matrix(), axis=2), AxisError, ""),
    ("sort", lambda: topos.sort(_matrix(), descending="yes"), ShapeError, "descending must be True or False"),
    ("argsort", lambda: topos.argsort("text"), ArgumentTypeError, "argsort takes a recorded value"),
    ("searchsorted", lambda: topos.searchsorted(_matrix(), 1.0), ShapeError, "searches a vector"),
    ("searchsorted", lambda: topos.searchsorted(_vector(), 1.0, side="middle"), ArgumentError, "side must be"),
    ("take_along_axis", lambda: topos.take_along_axis(_matrix(), np.zeros(2, np.int32), 1), ArgumentError, "ranks"),
    ("put_along_axis", lambda: topos.put_along_axis(_matrix(), np.zeros((2, 1), np.int32), 1.0, 3), AxisError, ""),
    ("scatter_add", lambda: topos.scatter_add(_matrix(), np.zeros(2, np.int32), np.ones((3, 3))), ShapeError, ""),
    ("scatter", lambda: topos.scatter(_matrix(), np.zeros(2, np.int32), 1.0, axis=4), AxisError, ""),
    ("detach", lambda: topos.detach("text"), ArgumentTypeError, "detach() takes recorded values"),
    # Randomness.
    ("bernoulli", lambda: topos.bernoulli(_key(), 0.5, (2,)), ArgumentTypeError, "its key is a recorded value"),
    ("bernoulli", lambda: topos.bernoulli(_recorded_key(), 1.5, (2,)), ArgumentError, ""),
    ("dropout", lambda: topos.dropout(**_dropout_arguments(), rate=1.5), ArgumentError, ""),
    ("fold_in", lambda: topos.fold_in(_key(), "text"), ArgumentError, ""),
    ("normal", lambda: topos.normal(_recorded_key(), (-1,)), ShapeError, "shape [-1] has a negative extent"),
    ("random_bits", lambda: topos.random_bits("key", (2,)), ArgumentTypeError, "its key is a recorded value"),
    ("random_key", lambda: topos.random_key("seed"), ArgumentError, "the seed must be a whole number"),
    ("split_key", lambda: topos.split_key(_key(), 0), ArgumentError, ""),
    ("uniform", lambda: topos.uniform(_recorded_key(), (2,), low=1.0, high=0.0), ArgumentError, ""),
    ("randint", lambda: topos.randint(_recorded_key(), (2,), 0, 2**31), ArgumentError, "int32's range"),
    ("gumbel", lambda: topos.gumbel(_key(), (2,)), ArgumentTypeError, "its key is a recorded value"),
    ("exponential", lambda: topos.exponential(_recorded_key(), (-1,)), ShapeError, "negative extent"),
    ("categorical", lambda: topos.categorical(_recorded_key(), "logits"), ArgumentTypeError, "recorded value"),
    ("choice", lambda: topos.choice(_recorded_key(), 0, (2,)), ArgumentError, "cannot draw 2 samples from 0"),
    ("permutation", lambda: topos.permutation(_recorded_key(), 2**24), ArgumentError, "exact below 2^24"),
    ("shuffle", lambda: topos.shuffle(_recorded_key(), 2**24), ArgumentError, "shuffle of 16777216 elements"),
    ("truncated_normal", lambda: topos.truncated_normal(_recorded_key(), 1.0, 0.0), ArgumentError, "lower < upper"),
    # The tape, the network and its tables.
    ("Tape", lambda: topos.Tape(dtype="float16"), DtypeError, "unsupported dtype 'float16'"),
    ("Tape", lambda: topos.Tape().parameter("text"), RecordingError, ""),
    ("Tape", lambda: topos.Tape().input(_matrix()), ArgumentTypeError, "takes a payload"),
    ("Tape", lambda: topos.Tape.record("not a function"), ArgumentTypeError, ""),
    ("Tensor", lambda: topos.Tensor("text"), ArgumentError, "Tensor() takes numbers"),
    ("Tensor", lambda: topos.Tensor([1.0, 2.0])[5], IndexingError, "index 5 is out of bounds"),
    ("Tensor", lambda: topos.Tensor([1.0, 2.0]).scalar(), ShapeError, "scalar() needs a tensor of one element"),
    ("Tensor", lambda: topos.Tensor([1.0, 2.0]).reshape(3), ShapeError, "cannot reshape [2] into [3]"),
    ("Tensor", lambda: len(topos.Tensor(1.0)), ArgumentTypeError, "len() of a rank-0 tensor"),
    ("Value", lambda: _matrix().reshape(7), ShapeError, ""),
    ("Value", lambda: bool(_matrix()), ArgumentTypeError, "truth value"),
    ("Value", lambda: _matrix().sum(axis=9), AxisError, ""),
    ("Value", lambda: _matrix() @ "text", ArgumentTypeError, "cannot record an operand of type str"),
    ("Value", lambda: _matrix() ** "text", ArgumentTypeError, "cannot record an operand of type str"),
    ("Value", lambda: _matrix().mean(axis=7), AxisError, "axis 7 is out of range"),
    ("Value", lambda: len(topos.Tape().input(1.0)), ArgumentTypeError, "len() of a rank-0 value"),
    ("Network", lambda: _network()[0].forward("parameters"), ArgumentTypeError, "expected a Parameters table"),
    ("Network", lambda: NETWORK.forward(NETWORK.parameters(), "feeds"), FeedError, "feeds are a mapping"),
    ("Network", lambda: _network()[0].forward(_network()[0].parameters()), FeedError, "belong to another network"),
    ("Network", lambda: _network()[0].symbol("w"), ArgumentTypeError, "symbol() takes a node index"),
    ("Network", lambda: _network()[0].symbol(99), IndexingError, "node 99 is out of range"),
    ("Network", lambda: _network()[0].adopt("parameters"), ArgumentTypeError, "adopt() takes a Parameters table"),
    ("Network", lambda: _network()[0].entry("loss"), FeedError, "expected a Symbol"),
    ("Parameters", lambda: topos.Parameters("network", {}), ArgumentTypeError, "takes a Network first"),
    ("Parameters", lambda: _network()[0].parameters().replace("arrays"), ArgumentTypeError, "replace() takes"),
    ("Parameters", lambda: _network()[0].parameters().of("w"), FeedError, "expected a Symbol"),
    ("Gradients", lambda: topos.Gradients(_network()[0], "slots"), ArgumentTypeError, "takes a mapping of slots"),
    ("Run", lambda: NETWORK.forward(NETWORK.parameters()).of("w"), FeedError, "expected a Symbol"),
    ("Field", lambda: NETWORK.forward(NETWORK.parameters()).backward("loss"), FeedError, "expected a Symbol"),
    ("Field", lambda: NETWORK.forward(NETWORK.parameters()).backward(W), ShapeError, "needs a rank-0 target"),
    ("Graph", lambda: topos.Graph.from_nodes(["node"]), ArgumentTypeError, "takes recorded nodes"),
    # Optimizers, clipping and trainers.
    ("optim.SGD", lambda: optim.SGD(lr=-1.0), ArgumentError, "lr must be non-negative"),
    ("optim.SGD", lambda: optim.SGD(lr="fast"), ArgumentError, "lr must be a number"),
    ("optim.SGD", lambda: optim.SGD(lr=0.1, nesterov=True), ArgumentError, "Nesterov momentum needs"),
    ("optim.Adam", lambda: optim.Adam(betas=(1.5, 0.9)), ArgumentError, "betas[0] must be in [0, 1)"),
    ("optim.AdamW", lambda: optim.AdamW(weight_decay=-1.0), ArgumentError, "weight_decay must be non-negative"),
    ("optim.Optimizer", lambda: optim.Adam().init("parameters"), ArgumentTypeError, "init() takes a Parameters"),
    ("optim.Optimizer", lambda: optim.SGD().step("p", "g", "s"), ArgumentTypeError, "step() takes a Parameters"),
    ("optim.clip_by_global_norm", lambda: optim.clip_by_global_norm("g", 1.0), ArgumentTypeError, "takes a Gradients"),
    ("optim.clip_by_global_norm", lambda: optim.clip_by_global_norm(_gradients()[1], -1.0), ArgumentError, "positive"),
    ("optim.Optimizer", lambda: optim.Adam().load_state("s.safetensors", "p"), ArgumentTypeError, "takes a Parameters"),
    ("schedules.constant_schedule", lambda: schedules.constant_schedule("x"), ArgumentError, "must be a number"),
    ("schedules.linear_schedule", lambda: schedules.linear_schedule(1.0, 0.0, 2.5), ArgumentError, "whole number"),
    ("schedules.cosine_decay_schedule", lambda: schedules.cosine_decay_schedule(1.0, 0), ArgumentError, ">= 1"),
    ("schedules.exponential_decay", lambda: schedules.exponential_decay(1.0, 5, -0.5), ArgumentError, "positive"),
    (
        "schedules.piecewise_constant_schedule",
        lambda: schedules.piecewise_constant_schedule(1.0, {3: -1}),
        ArgumentError,
        ">= 0",
    ),
    ("schedules.join_schedules", lambda: schedules.join_schedules([abs], [1]), ArgumentError, "take 0 boundaries"),
    (
        "schedules.warmup_cosine_decay_schedule",
        lambda: schedules.warmup_cosine_decay_schedule(0, 1, 5, 3),
        ArgumentError,
        "past",
    ),
    ("XLATrainer", lambda: XLATrainer("plan", None, optim.Adam()), ArgumentTypeError, "XLATrainer takes a Plan"),
    # Checked deeper down, by the network the trainer asks: still the line that made the trainer.
    ("XLATrainer", lambda: XLATrainer(_plan()[1], "parameters", optim.Adam()), ArgumentTypeError, "a Parameters table"),
    ("DeviceTrainer", lambda: DeviceTrainer("plan", None, optim.Adam()), ArgumentTypeError, "DeviceTrainer takes a"),
    (
        "DataParallelTrainer",
        lambda: DataParallelTrainer("plan", None, optim.Adam(), {}, []),
        ArgumentTypeError,
        "takes a Plan",
    ),
    # Checkpoints.
    ("Network", lambda: _network()[0].save(3.5), ArgumentTypeError, "save() takes a file path"),
    ("Network", lambda: topos.Network.load(None), ArgumentTypeError, "loading a network takes a file path"),
    ("Parameters", lambda: _network()[0].parameters().save(3.5), ArgumentTypeError, "save() takes a file path"),
    ("Network", lambda: _network()[0].load_parameters(3.5), ArgumentTypeError, "loading a checkpoint takes"),
    # Cards.
    ("show.Card", lambda: show.Card(3, {}, "text"), ArgumentTypeError, ""),
    ("show.Card", lambda: show.Card("custom", {}, "text").update("more"), ArgumentError, "cannot be updated"),
    ("show.Line", lambda: show.Line.xy([1, 2], [1]), ShapeError, "as many x as y values"),
    ("show.Line", lambda: show.Line.y("text"), ArgumentError, "Line.y: expected numbers"),
    ("show.Plot", lambda: show.Plot().layer("line"), ArgumentTypeError, "Plot.layer() takes a Line"),
    ("show.plot", lambda: show.plot("plot"), ArgumentTypeError, "show.plot() takes a Plot"),
    ("show.lines", lambda: show.lines("one line"), ArgumentTypeError, "show.lines() takes a list of strings"),
    ("show.spec", lambda: show.spec(3), ArgumentTypeError, ""),
    ("show.hlo", lambda: show.hlo(3), ArgumentTypeError, ""),
    ("show.graph", lambda: show.graph(3), ArgumentTypeError, ""),
    ("show.image", lambda: show.image(np.zeros(4)), ShapeError, "show.image() takes [H, W], [H, W, 3]"),
    ("show.image", lambda: show.image(np.zeros((2, 2)), scale="viridis"), ArgumentError, "scale is one of"),
    ("show.heatmap", lambda: show.heatmap(np.zeros(3), (0, 1), (0, 1)), ShapeError, "show.heatmap() takes [H, W]"),
    ("show.heatmap", lambda: show.heatmap(np.zeros((2, 2)), (1, 0), (0, 1)), ArgumentError, "low below high"),
    ("show.progress", lambda: show.progress(-1), ArgumentError, "show.progress() takes a step of 0 or more"),
    ("show.progress", lambda: show.progress("one"), ArgumentTypeError, "takes a whole number as step"),
    ("atan2", lambda: topos.atan2("a", "b"), ArgumentTypeError, ""),
    # topos.model.elementwise_more: a value that is no recorded value, and round's decimals.
    ("log1p", lambda: topos.log1p("text"), ArgumentTypeError, "Log1p takes a recorded value"),
    ("expm1", lambda: topos.expm1("text"), ArgumentTypeError, "Expm1 takes a recorded value"),
    ("floor", lambda: topos.floor("text"), ArgumentTypeError, "Floor takes a recorded value"),
    ("ceil", lambda: topos.ceil("text"), ArgumentTypeError, "Ceil takes a recorded value"),
    ("trunc", lambda: topos.trunc("text"), ArgumentTypeError, "Trunc takes a recorded value"),
    ("tan", lambda: topos.tan("text"), ArgumentTypeError, "Tan takes a recorded value"),
    ("arctan", lambda: topos.arctan("text"), ArgumentTypeError, "Atan takes a recorded value"),
    ("sinh", lambda: topos.sinh("text"), ArgumentTypeError, "Sinh takes a recorded value"),
    ("cosh", lambda: topos.cosh("text"), ArgumentTypeError, "Cosh takes a recorded value"),
    ("arcsinh", lambda: topos.arcsinh("text"), ArgumentTypeError, "Asinh takes a recorded value"),
    ("arcsin", lambda: topos.arcsin([0.5]), ArgumentTypeError, "arcsin takes a recorded value"),
    ("arccos", lambda: topos.arccos(0.5), ArgumentTypeError, "arccos takes a recorded value"),
    ("round", lambda: topos.round(_matrix(), 1.5), ArgumentTypeError, "round takes a whole number of decimals"),
    ("round", lambda: topos.round("text"), ArgumentTypeError, "round takes a recorded value"),
    ("clip", lambda: topos.clip(_matrix(), "low"), ArgumentTypeError, "type str"),
    ("fmod", lambda: topos.fmod(*_two((2, 3), (4,))), ShapeError, "Rem: cannot broadcast"),
    ("mod", lambda: topos.mod(_matrix(), "b"), ArgumentTypeError, "type str"),
    ("remainder", lambda: topos.remainder("a", "b"), ArgumentTypeError, "must be a recorded value"),
    ("logaddexp", lambda: topos.logaddexp(*_two((2, 3), (4,))), ShapeError, "cannot broadcast"),
    ("silu", lambda: topos.silu("a"), ArgumentTypeError, "silu takes a recorded value"),
    ("leaky_relu", lambda: topos.leaky_relu(_matrix(), "slope"), ArgumentTypeError, "type str"),
    ("elu", lambda: topos.elu(_matrix(), alpha="one"), ArgumentTypeError, "type str"),
    ("selu", lambda: topos.selu("a"), ArgumentTypeError, "selu takes a recorded value"),
    ("softsign", lambda: topos.softsign("a"), ArgumentTypeError, "softsign takes a recorded value"),
    ("hard_tanh", lambda: topos.hard_tanh("a"), ArgumentTypeError, "hard_tanh takes a recorded value"),
    ("logical_and", lambda: topos.logical_and(1.0, 0.0), ArgumentTypeError, "must be a recorded value"),
    ("logical_or", lambda: topos.logical_or(*_two((2, 3), (4,))), ShapeError, "cannot broadcast"),
    ("logical_xor", lambda: topos.logical_xor(_matrix(), "b"), ArgumentTypeError, "type str"),
    ("logical_not", lambda: topos.logical_not("a"), ArgumentTypeError, "logical_not takes a recorded value"),
    ("where", lambda: topos.where(_matrix()), ArgumentError, "numpy's nonzero"),
    ("erfinv", lambda: topos.erfinv("a"), ArgumentTypeError, "ErfInv takes a recorded value"),
    ("erf", lambda: topos.erf("a"), ArgumentTypeError, "Erf takes a recorded value"),
    ("erfc", lambda: topos.erfc("a"), ArgumentTypeError, "Erfc takes a recorded value"),
    ("lgamma", lambda: topos.lgamma("a"), ArgumentTypeError, "Lgamma takes a recorded value"),
    ("gammaln", lambda: topos.gammaln("a"), ArgumentTypeError, "Lgamma takes a recorded value"),
    ("digamma", lambda: topos.digamma("a"), ArgumentTypeError, "Digamma takes a recorded value"),
    ("polygamma", lambda: topos.polygamma(1.5, _vector()), ArgumentError, "polygamma takes a whole number n >= 0"),
    ("linalg.cholesky", lambda: topos.linalg.cholesky(_matrix()), ShapeError, "needs square matrices"),
    ("linalg.cho_solve", lambda: topos.linalg.cho_solve(_matrix(), "b"), ArgumentTypeError, "type str"),
    ("linalg.triangular_solve", lambda: topos.linalg.triangular_solve(_matrix(), "b"), ArgumentTypeError, "type str"),
    ("linalg.lu", lambda: topos.linalg.lu(_matrix()), ShapeError, "needs square matrices"),
    ("linalg.solve", lambda: topos.linalg.solve(*_two((2, 3), (2,))), ShapeError, "needs square matrices"),
    ("linalg.inv", lambda: topos.linalg.inv(_matrix()), ShapeError, "needs square matrices"),
    ("linalg.det", lambda: topos.linalg.det(_matrix()), ShapeError, "needs square matrices"),
    ("linalg.slogdet", lambda: topos.linalg.slogdet(_matrix()), ShapeError, "needs square matrices"),
    ("linalg.eigh", lambda: topos.linalg.eigh(_matrix()), ShapeError, "needs square matrices"),
    ("linalg.eigvalsh", lambda: topos.linalg.eigvalsh(_matrix()), ShapeError, "needs square matrices"),
    ("linalg.qr", lambda: topos.linalg.qr(_two((3,), (3,))[0]), ShapeError, "needs matrices"),
    ("linalg.svd", lambda: topos.linalg.svd(_matrix(), full_matrices=True), ArgumentError, "full_matrices=True"),
    ("linalg.svdvals", lambda: topos.linalg.svdvals(_two((3,), (3,))[0]), ShapeError, "needs matrices"),
    ("linalg.lstsq", lambda: topos.linalg.lstsq(_matrix(), "b"), ArgumentTypeError, "type str"),
    ("fft.fft", lambda: topos.fft.fft(_matrix()), ShapeError, "real/imaginary pairs [..., 2]"),
    ("fft.ifft", lambda: topos.fft.ifft(_matrix()), ShapeError, "real/imaginary pairs [..., 2]"),
    ("fft.rfft", lambda: topos.fft.rfft(_matrix(), n=0), ArgumentError, "n must be at least 1"),
    ("fft.rfft", lambda: topos.fft.rfft(_matrix(), axis=5), AxisError, "axis 5 is out of range"),
    ("fft.irfft", lambda: topos.fft.irfft(_two((4, 2), (4, 2))[0], n=0), ArgumentError, "irfft needs n >= 1"),
    ("fft.fft2", lambda: topos.fft.fft2(_two((4, 2), (4, 2))[0], axes=(0,)), ArgumentError, "takes two axes"),
    ("fft.ifft2", lambda: topos.fft.ifft2(_two((4, 2), (4, 2))[0], norm="x"), ArgumentError, "norm must be one of"),
    ("fft.complex", lambda: topos.fft.complex("a"), ArgumentTypeError, "complex takes a recorded value"),
    ("fft.real", lambda: topos.fft.real(_matrix()), ShapeError, "real/imaginary pairs [..., 2]"),
    ("fft.imag", lambda: topos.fft.imag(_matrix()), ShapeError, "real/imaginary pairs [..., 2]"),
    ("fft.abs", lambda: topos.fft.abs(_matrix()), ShapeError, "real/imaginary pairs [..., 2]"),
    # Array building and shaping (topos.model.building, topos.model.einsum).
    ("einsum", lambda: topos.einsum("ij,jk->ik", *_two()), ShapeError, "subscript 'j' has lengths 3 and 2"),
    ("einsum", lambda: topos.einsum("ij->k", _matrix()), ShapeError, "output subscript 'k' names no operand"),
    ("einsum", lambda: topos.einsum("ij", np.ones((2, 3))), ArgumentTypeError, "must be a recorded value"),
    ("einsum", lambda: topos.einsum("ij", _matrix(), optimize="dp"), ArgumentError, "optimize must be False"),
    ("pad", lambda: topos.pad(_matrix(), ((1, 2), (3, 4), (5, 6))), ShapeError, "does not give (before, after)"),
    ("pad", lambda: topos.pad(_matrix(), -1), ArgumentError, "must not be negative"),
    ("pad", lambda: topos.pad(_matrix(), 1, mode="mean"), ArgumentError, "mode must be one of"),
    ("tril", lambda: topos.tril(_matrix(), k=0.5), ArgumentError, "tril: k must be an integer"),
    ("triu", lambda: topos.triu("a"), ArgumentTypeError, "triu takes a recorded value"),
    ("eye", lambda: topos.eye(topos.Tape(), -1), ArgumentError, "eye: N must be at least 0"),
    ("eye", lambda: topos.eye(3, 3), ArgumentTypeError, "eye takes the tape first"),
    ("arange", lambda: topos.arange(topos.Tape(), 0, 5, 0), ArgumentError, "step must not be 0"),
    ("linspace", lambda: topos.linspace(topos.Tape(), 0, 1, num=-2), ArgumentError, "num must be at least 0"),
    ("tile", lambda: topos.tile(_matrix(), (2, -1)), ArgumentError, "tile: reps must be at least 0"),
    ("repeat", lambda: topos.repeat(_matrix(), [1, 2], axis=1), ShapeError, "2 repeats for 3 elements"),
    ("roll", lambda: topos.roll(_matrix(), 1, axis=2), AxisError, "axis 2 is out of range"),
    ("flip", lambda: topos.flip(_matrix(), (0, 0)), ShapeError, "repeated axis"),
    ("diag", lambda: topos.diag(_two((2, 2, 2), (2,))[0]), ShapeError, "takes a 1-D value"),
    ("diagonal", lambda: topos.diagonal(_matrix(), 0, 1, 1), ShapeError, "name the same axis"),
    ("trace", lambda: topos.trace(_two((3,), (3,))[0]), ShapeError, "needs at least two axes"),
    ("outer", lambda: topos.outer("a", "b"), ArgumentTypeError, "at least one operand must be a recorded value"),
    ("kron", lambda: topos.kron(_matrix(), "b"), ArgumentTypeError, "type str"),
]


def _line_in_this_file(error, call):
    """The line of this file where ``call`` made the call that failed (the traceback says)."""
    lines = [line for frame, line in traceback.walk_tb(error.__traceback__) if frame.f_code is call.__code__]
    assert lines, f"the traceback of {error!r} does not pass through the table's call"
    return lines[-1]


@pytest.mark.parametrize(
    ("name", "call", "error_class", "fragment"), CASES, ids=[f"{case[0]}-{n}" for n, case in enumerate(CASES)]
)
def test_a_bad_argument_names_the_line_of_the_call(name, call, error_class, fragment):
    with pytest.raises(topos.ToposError) as caught:
        call()
    error = caught.value
    assert type(error) is error_class, f"{name}: {type(error).__name__}: {error}"
    assert fragment in str(error)
    line = _line_in_this_file(error, call)
    assert error.source == (THIS_FILE, line), f"{name}: {error} has source {error.source}"
    assert str(error).endswith(f"(recorded at {THIS_FILE}:{line})"), f"{name}: {error}"


#: Public callables with no argument to refuse, or that users never call themselves: why each is not in the table.
#: (Exception classes are not walked: their one argument is the message.)
NOT_IN_THE_TABLE = {
    "Symbol": "a (lineage, index) pair that networks hand out; it is checked where it is used (Network.index_of)",
    "optim.OptimizerState": "made by init() and step(), never by the user (step() checks the state it is given)",
    "optim.SGDSlot": "a read-only record of one parameter's SGD state, handed out by OptimizerState.of",
    "optim.AdamSlot": "a read-only record of one parameter's Adam moments, handed out by OptimizerState.of",
    "schedules.Schedule": "the base class of the schedules: it takes no arguments",
    "show.capture": "appends the cards to any list it is given, or to a new one: no argument is bad",
    "show.watch": "calls back whatever watcher it is given; it checks nothing itself",
    "show.text": "shows str() of any value: no argument is bad",
    "datasets.digits": "takes no arguments",
}


def _public_callables():
    """Every public callable of the namespaces a user imports, named as the table names them."""
    import topos.datasets
    import topos.webgpu
    import topos.xla

    namespaces = [
        ("", topos),
        ("optim.", optim),
        ("schedules.", schedules),
        ("show.", show),
        ("datasets.", topos.datasets),
        ("linalg.", topos.linalg),
        ("fft.", topos.fft),
    ]
    names = set()
    for prefix, module in namespaces:
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                continue
            if callable(value) and not isinstance(value, type(topos)):
                names.add(prefix + name)
    for module in (topos.xla, topos.webgpu):
        names.update(name for name in module.__all__ if name.endswith("Trainer"))
    return names


def test_every_public_callable_is_in_the_table():
    public = _public_callables()
    tabled = {case[0] for case in CASES}
    missing = sorted(public - tabled - set(NOT_IN_THE_TABLE))
    assert not missing, f"public callables with no bad-argument case (add one to CASES, or a reason): {missing}"
    # The table and the exceptions name only what exists, and nothing is in both.
    assert tabled <= public, sorted(tabled - public)
    assert set(NOT_IN_THE_TABLE) <= public, sorted(set(NOT_IN_THE_TABLE) - public)
    assert not tabled & set(NOT_IN_THE_TABLE), sorted(tabled & set(NOT_IN_THE_TABLE))


def test_an_argument_error_names_its_line_once_after_a_pickle_round_trip():
    with pytest.raises(ArgumentError) as caught:
        optim.SGD(lr=-1.0)
    again = pickle.loads(pickle.dumps(caught.value))
    assert (type(again), str(again), again.source) == (ArgumentError, str(caught.value), caught.value.source)
