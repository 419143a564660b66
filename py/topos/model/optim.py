"""Optimizers as pure transforms of ``(parameters, gradients, state)``.

```python
opt = optim.Adam(lr=1e-3)
state = opt.init(parameters)
parameters, state = opt.step(parameters, gradients, state)
```

An optimizer is a frozen description of its hyperparameters; its state is an
immutable ``OptimizerState`` value; ``step`` returns a new parameters table and
a new state and leaves the old ones untouched, so a training loop can keep,
compare or roll back any earlier step.

The update rules follow PyTorch's ``torch.optim`` (``SGD``, ``Adam``, ``AdamW``)
operation by operation, so that the same gradients give the same parameters to
rounding. Every array operation stays in the parameter's dtype: Python
hyperparameters are turned into scalars of that dtype where they meet an array,
as PyTorch does. A parameter that has no slot in the gradients is skipped
(its value and its state stay as they are), as PyTorch skips a parameter whose
``.grad`` is ``None``.
"""

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, DtypeError, FeedError, ShapeError
from ..tensor import freeze, frozen
from ..text import format_shape, plural
from .network import Gradients, Parameters, convert_payload, related_networks
from .nodes import describe_node

__all__ = [
    "SGD",
    "Adam",
    "AdamW",
    "Optimizer",
    "OptimizerState",
    "SGDSlot",
    "AdamSlot",
    "clip_by_global_norm",
]

# State ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SGDSlot:
    """One parameter's SGD state: its momentum buffer (``None`` until the first step)."""

    momentum_buffer: np.ndarray = None


@dataclass(frozen=True)
class AdamSlot:
    """One parameter's Adam state: its step count and both moment estimates."""

    step: int
    exp_avg: np.ndarray
    exp_avg_sq: np.ndarray


class OptimizerState:
    """An optimizer's state: one slot state per parameter, and the number of steps taken.

    Immutable: ``slots`` is a read-only mapping (node index -> slot state) of
    frozen dataclasses holding read-only arrays.
    """

    __slots__ = ("optimizer", "network", "steps", "slots")

    def __init__(self, optimizer, network, steps, slots):
        object.__setattr__(self, "optimizer", optimizer)
        object.__setattr__(self, "network", network)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "slots", MappingProxyType(dict(slots)))

    def __setattr__(self, name, value):
        raise AttributeError("an optimizer state is immutable: step() returns a new one")

    def of(self, symbol):
        """The slot state of one parameter (an ``SGDSlot`` or an ``AdamSlot``)."""
        index = self.network.index_of(symbol)
        if index not in self.slots:
            raise FeedError(f"{describe_node(self.network.nodes()[index])} has no slot in this optimizer state")
        return self.slots[index]

    def __repr__(self):
        slots = len(self.slots)
        return (
            f"<OptimizerState of {type(self.optimizer).__name__}: "
            f"{plural(slots, 'slot')}, {plural(self.steps, 'step')}>"
        )


# The shared step ---------------------------------------------------------------------


def _scalar(value, dtype):
    """A Python hyperparameter as a scalar of the arrays' dtype (PyTorch casts it the same way)."""
    return dtype.type(value)


class Optimizer:
    """Base class: checks the tables and runs ``_update`` slot by slot."""

    def init(self, parameters):
        """The state before the first step, for this parameters table."""
        if not isinstance(parameters, Parameters):
            raise ArgumentTypeError(f"init() takes a Parameters table, got {type(parameters).__name__}")
        nodes = parameters.network.nodes()
        slots = {}
        for index, array in parameters.slots.items():
            if array.dtype.kind != "f":
                raise DtypeError(
                    f"cannot optimize {describe_node(nodes[index])}: its dtype {array.dtype} is not floating"
                )
            slots[index] = self._initial_slot(array)
        return OptimizerState(self, parameters.network, 0, slots)

    def step(self, parameters, gradients, state):
        """One update: returns ``(new_parameters, new_state)``; the arguments are untouched."""
        self._check(parameters, gradients, state)
        nodes = parameters.network.nodes()
        new_slots = dict(parameters.slots)
        slots = dict(state.slots)
        with np.errstate(all="ignore"):
            for index, param in parameters.slots.items():
                grad = gradients.slots.get(index)
                if grad is None:
                    continue
                if tuple(grad.shape) != tuple(param.shape):
                    raise ShapeError(
                        f"the gradient of {describe_node(nodes[index])} has shape {format_shape(grad.shape)}, "
                        f"the parameter has shape {format_shape(param.shape)}"
                    )
                grad = np.asarray(grad, dtype=param.dtype)
                new_param, slot = self._update(param, grad, state.slots[index])
                if new_param.dtype != param.dtype or new_param.shape != param.shape:
                    # Not expected of the update rules here; a checked conversion keeps the table sound.
                    new_param = convert_payload(new_param, nodes[index], FeedError, "new value of")
                # The new array was made by this step and nothing else holds it: the table takes it
                # read-only as it is, with no copy and no second check.
                new_slots[index] = freeze(new_param)
                slots[index] = slot
        new_parameters = Parameters._made_here(parameters.network, new_slots)
        return new_parameters, OptimizerState(self, state.network, state.steps + 1, slots)

    def _check(self, parameters, gradients, state):
        if not isinstance(parameters, Parameters):
            raise ArgumentTypeError(f"step() takes a Parameters table first, got {type(parameters).__name__}")
        if not isinstance(gradients, Gradients):
            raise ArgumentTypeError(f"step() takes a Gradients table second, got {type(gradients).__name__}")
        if not isinstance(state, OptimizerState):
            raise ArgumentTypeError(f"step() takes the state from init() or step() third, got {type(state).__name__}")
        if state.optimizer != self:
            raise ArgumentError(f"this state was made by {state.optimizer!r}, not by {self!r}")
        if not related_networks(gradients.network, parameters.network):
            raise FeedError("these gradients belong to another network than the parameters")
        if not related_networks(state.network, parameters.network) or set(state.slots) != set(parameters.slots):
            raise ArgumentError("this optimizer state was made for another parameters table: call init() for this one")
        nodes = parameters.network.nodes()
        for index in gradients.slots:
            if index not in parameters.slots:
                raise FeedError(
                    f"the gradients have a slot for {describe_node(nodes[index])}, which is no parameter here"
                )


def _as_float(optimizer, name, value):
    """A hyperparameter as a Python float; raises ``ArgumentError`` naming it otherwise."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{type(optimizer).__name__}: {name} must be a number, got {value!r}") from None


def _check_non_negative(optimizer, **values):
    for name, value in values.items():
        if not value >= 0.0:  # also refuses NaN
            raise ArgumentError(f"{type(optimizer).__name__}: {name} must be non-negative, got {value}")


# SGD ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay.

    As ``torch.optim.SGD``: ``g = grad + weight_decay * w``; with momentum,
    ``buf = g`` on the first step and ``buf = momentum * buf + (1 - dampening) * g``
    after; ``g = g + momentum * buf`` (Nesterov) or ``g = buf``; ``w = w - lr * g``.
    """

    lr: float = 1e-3
    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False

    def __post_init__(self):
        for name in ("lr", "momentum", "dampening", "weight_decay"):
            object.__setattr__(self, name, _as_float(self, name, getattr(self, name)))
        object.__setattr__(self, "nesterov", bool(self.nesterov))
        _check_non_negative(self, lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        if self.nesterov and (self.momentum <= 0.0 or self.dampening != 0.0):
            raise ArgumentError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")

    def _initial_slot(self, array):
        return SGDSlot(None)

    def _update(self, param, grad, slot):
        dtype = param.dtype
        if self.weight_decay != 0.0:
            grad = grad + _scalar(self.weight_decay, dtype) * param
        buffer = slot.momentum_buffer
        if self.momentum != 0.0:
            momentum = _scalar(self.momentum, dtype)
            if buffer is None:
                buffer = frozen(np.array(grad, copy=True))
            else:
                buffer = frozen(buffer * momentum + _scalar(1.0 - self.dampening, dtype) * grad)
            grad = grad + momentum * buffer if self.nesterov else buffer
        return param + _scalar(-self.lr, dtype) * grad, SGDSlot(buffer)


# Adam and AdamW ---------------------------------------------------------------------------


def _lerp(start, end, weight):
    """``start + weight * (end - start)`` evaluated as PyTorch's ``lerp`` does (stable near both ends).

    The result is a new array (rank 0 included, where numpy would hand back a
    scalar); the steps write into it (``out=``), which gives the same bits as
    the plain expression without a temporary per step.
    """
    result = np.subtract(end, start, out=np.empty(start.shape, start.dtype))
    if abs(weight) < 0.5:
        np.multiply(weight, result, out=result)
        return np.add(start, result, out=result)
    np.multiply(result, weight.dtype.type(1.0) - weight, out=result)
    return np.subtract(end, result, out=result)


@dataclass(frozen=True)
class _AdamBase(Optimizer):
    lr: float = 1e-3
    betas: tuple = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    #: AdamW decays the weights directly; Adam adds ``weight_decay * w`` to the gradient.
    #: (A plain class attribute, not a dataclass field: it is fixed by the class.)
    decoupled = False

    def __post_init__(self):
        for name in ("lr", "eps", "weight_decay"):
            object.__setattr__(self, name, _as_float(self, name, getattr(self, name)))
        try:
            beta1, beta2 = (float(beta) for beta in self.betas)
        except (TypeError, ValueError):
            raise ArgumentError(f"{type(self).__name__}: betas is a pair of numbers, got {self.betas!r}") from None
        object.__setattr__(self, "betas", (beta1, beta2))
        _check_non_negative(self, lr=self.lr, eps=self.eps, weight_decay=self.weight_decay)
        for position, beta in enumerate(self.betas):
            if not 0.0 <= beta < 1.0:
                raise ArgumentError(f"{type(self).__name__}: betas[{position}] must be in [0, 1), got {beta}")

    def _initial_slot(self, array):
        zeros = frozen(np.zeros_like(array))
        return AdamSlot(0, zeros, zeros)

    def _update(self, param, grad, slot):
        dtype = param.dtype
        beta1, beta2 = self.betas
        step = slot.step + 1
        if self.weight_decay != 0.0:
            if self.decoupled:
                param = param * _scalar(1.0 - self.lr * self.weight_decay, dtype)
            else:
                grad = grad + _scalar(self.weight_decay, dtype) * param
        # Each line is one expression of PyTorch's update, evaluated step by step into arrays made
        # here (``out=``): the same operations in the same order, so the same bits, with four
        # allocations per parameter instead of thirteen.
        exp_avg = _lerp(slot.exp_avg, grad, _scalar(1.0 - beta1, dtype))
        # exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * grad * grad
        exp_avg_sq = np.multiply(slot.exp_avg_sq, _scalar(beta2, dtype), out=np.empty_like(param))
        scratch = np.multiply(_scalar(1.0 - beta2, dtype), grad, out=np.empty_like(param))
        np.multiply(scratch, grad, out=scratch)
        np.add(exp_avg_sq, scratch, out=exp_avg_sq)
        # The bias corrections are Python floats, as in PyTorch, and meet the arrays as scalars.
        bias_correction1 = 1.0 - beta1**step
        bias_correction2 = 1.0 - beta2**step
        step_size = self.lr / bias_correction1
        # denominator = sqrt(exp_avg_sq) / sqrt(bias_correction2) + eps
        denominator = np.sqrt(exp_avg_sq, out=scratch)
        np.divide(denominator, _scalar(math.sqrt(bias_correction2), dtype), out=denominator)
        np.add(denominator, _scalar(self.eps, dtype), out=denominator)
        # new_param = param + (-step_size) * exp_avg / denominator
        new_param = np.multiply(_scalar(-step_size, dtype), exp_avg, out=np.empty_like(param))
        np.divide(new_param, denominator, out=new_param)
        np.add(param, new_param, out=new_param)
        return new_param, AdamSlot(step, frozen(exp_avg), frozen(exp_avg_sq))


@dataclass(frozen=True)
class Adam(_AdamBase):
    """Adam with bias correction and optional L2 weight decay (added to the gradient), as ``torch.optim.Adam``."""


@dataclass(frozen=True)
class AdamW(_AdamBase):
    """Adam with decoupled weight decay (``w *= 1 - lr * weight_decay`` each step), as ``torch.optim.AdamW``."""

    weight_decay: float = 1e-2
    decoupled = True


# Clipping ---------------------------------------------------------------------------------


def clip_by_global_norm(gradients, max_norm):
    """Scale all gradients together so that their joint L2 norm is at most ``max_norm``.

    Returns ``(clipped Gradients, norm)`` where ``norm`` is the joint norm before
    clipping, as a Python float. As ``torch.nn.utils.clip_grad_norm_``: each
    slot's norm is taken in its dtype, the joint norm is the norm of those, and
    every gradient is multiplied by ``min(max_norm / (norm + 1e-6), 1)``.
    """
    if not isinstance(gradients, Gradients):
        raise ArgumentTypeError(f"clip_by_global_norm() takes a Gradients table, got {type(gradients).__name__}")
    try:
        max_norm = float(max_norm)
    except (TypeError, ValueError):
        raise ArgumentError(f"clip_by_global_norm: max_norm must be a number, got {max_norm!r}") from None
    if not max_norm > 0.0:
        raise ArgumentError(f"clip_by_global_norm: max_norm must be positive, got {max_norm}")
    if not gradients.slots:
        return gradients, 0.0
    with np.errstate(all="ignore"):
        slot_norms = [np.sqrt(np.sum(np.square(array), dtype=array.dtype)) for array in gradients.slots.values()]
        joint_dtype = np.result_type(*slot_norms)
        joint = np.asarray(slot_norms, dtype=joint_dtype)
        total = np.sqrt(np.sum(np.square(joint), dtype=joint_dtype))
        coefficient = np.minimum(_scalar(max_norm, joint_dtype) / (total + _scalar(1e-6, joint_dtype)), 1.0)
        clipped = {index: freeze(array * array.dtype.type(coefficient)) for index, array in gradients.slots.items()}
    return Gradients._made_here(gradients.network, clipped), float(total)
