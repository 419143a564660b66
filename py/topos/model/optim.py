"""Optimizers as pure transforms of ``(parameters, gradients, state)``.

```python
opt = optim.Adam(lr=1e-3)
state = opt.init(parameters)
parameters, state = opt.step(parameters, gradients, state)
```

An optimizer is a frozen description of its hyperparameters; its state is an immutable ``OptimizerState``
value; ``step`` returns a new parameters table and a new state and leaves the old ones untouched, so a
training loop can keep, compare or roll back any earlier step.

The update rules follow PyTorch's ``torch.optim`` (``SGD``, ``Adam``, ``AdamW``) operation by operation, so
that the same gradients give the same parameters to rounding. Every array operation stays in the parameter's
dtype: Python hyperparameters are turned into scalars of that dtype where they meet an array, as PyTorch does.
A parameter that has no slot in the gradients is skipped (its value and its state stay as they are), as
PyTorch skips a parameter whose ``.grad`` is ``None``.

All parameters of one dtype are updated at once: the state lays them end to end in one flat array, and each
moment in another, so a step is a dozen vector passes over every parameter together, as PyTorch's ``foreach``
implementations do, rather than a dozen numpy calls per parameter. The operations are elementwise and the same
as per parameter, so the results are the same to the last bit. The tables a step returns view those flat
arrays.

``step(parameters, gradients, state, donate=True)`` says that the caller gives up the state it passes, as
JAX's donated arguments do: the step may write the new values into memory the state owns instead of new
arrays, and the donated state refuses another step or a read (``ArgumentError``). Nothing anyone can still
read changes: the step writes into an array only when nothing but the state refers to it (no table, run,
tensor or slot state views it; every numpy view refers to the array that owns its memory), and into a new one
otherwise. The table passed in is still the caller's during the step, so the new parameters go to the memory
of the table before it, once that one is gone; the moments are updated where they lie. A loop that keeps only
the latest table and state (and runs) allocates nothing per step, and gets the same bits as without donation.

Without donation the step writes into the memory of the state before the one it is given (the new state keeps
those arrays, ``take_unheld``), once nothing refers to it any more: a loop that keeps only the latest table
and state takes no new memory either. The gradients of a prepared backward lie end to end in the layout's
order, and a step over large parameters reads them there.

``lr`` is a number or a schedule (``topos.model.schedules``): a step runs at ``optimizer.rate(state.steps)``,
and the rate is no part of a state's identity. ``state.save(path)`` and
``optimizer.load_state(path, parameters)`` keep a state in a safetensors file (``topos.model.optim_files``):
a run resumes bit for bit.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, DtypeError, FeedError, ShapeError
from ..text import format_shape
from . import optim_files
from .clipping import clip_by_global_norm
from .network import Gradients, Parameters, related_networks
from .nodes import describe_node
from .optim_state import (
    DONATED_STATE,
    AdamSlot,
    Flat,
    Layout,
    OptimizerState,
    SGDSlot,
    by_dtype,
    only_the_state_holds,
    take_unheld,
)
from .schedules import as_rate, rate_at

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

#: The bytes of one run of the flat update (``Optimizer._step_dtype``): the dozen passes over a run
#: find its arrays (the parameters and their new values, two moments, the gradient, a scratch run: six)
#: in the processor's second-level cache. Measured on the d 256 transformer (1.6 M parameters) on a 2 MB-L2
#: Xeon, when a run touched eight arrays: shorter runs cost more in calls, longer ones (512 KB: four
#: megabytes of arrays) in cache misses. On a Zen 5 EPYC (1 MB L2) 256 KB runs were a tenth faster then,
#: 64 KB ones a tenth slower; on a Zen 4 EPYC (1 MB L2), with six arrays, 128, 256 and 512 KB runs are
#: within the noise of each other (interleaved with PyTorch's step). Left at the Xeon's choice.
CHUNK_BYTES = 128 * 1024

#: The gradients are read where they lie (``Layout.lying_end_to_end``) when the parameters hold this many
#: elements each on average: the check costs about 3 us a parameter, the copy it spares 0.5 ns an element.
IN_PLACE_ELEMENTS = 8192

#: The step's own small arrays: the gathered gradient of a run and two scratch runs.
SCRATCH = ("grad", "scratch", "work")


def _scalar(value, dtype):
    """A Python hyperparameter as a scalar of the arrays' dtype (PyTorch casts it the same way)."""
    return dtype.type(value)


class Optimizer:
    """Base class: checks the tables, lays the parameters out flat and runs ``_update`` over them.

    A subclass names the flat arrays its slots hold (``_moments``), keys each slot
    (``_slot_key``: Adam's step count, whether SGD's momentum has started: slots
    of one key are updated together), and defines ``_update``, its rule over flat
    arrays, and ``_slot_states``, the slot states that view them.
    """

    def _moments(self):
        """The names of the flat arrays a slot state views (its moments)."""
        return ()

    def init(self, parameters):
        """The state before the first step, for this parameters table."""
        if not isinstance(parameters, Parameters):
            raise ArgumentTypeError(f"init() takes a Parameters table, got {type(parameters).__name__}")
        nodes = parameters.network.nodes()
        for index, array in parameters.slots.items():
            if array.dtype.kind != "f":
                raise DtypeError(
                    f"cannot optimize {describe_node(nodes[index])}: its dtype {array.dtype} is not floating"
                )
        flats = {}
        for dtype, indices in by_dtype(parameters).items():
            layout = Layout(dtype, indices, [parameters.slots[i].shape for i in indices])
            flats[layout.dtype] = Flat(layout, {name: np.zeros(layout.size, dtype) for name in self._moments()})
        keys = {index: self._initial_key() for index in parameters.slots}
        return OptimizerState(self, parameters.network, 0, keys=keys, flats=flats)

    def rate(self, count):
        """The learning rate of the step after ``count`` steps: ``lr``, or ``lr(count)`` for a schedule."""
        return rate_at(type(self).__name__, self.lr, count)

    def load_state(self, path, parameters):
        """The ``OptimizerState`` that ``state.save(path)`` wrote, for ``parameters`` (a table of the same
        names, shapes and dtypes); raises ``CheckpointError`` naming each problem of the file."""
        if not isinstance(parameters, Parameters):
            raise ArgumentTypeError(f"load_state() takes a Parameters table, got {type(parameters).__name__}")
        return optim_files.read_state(self, path, parameters)

    def _write_state(self, state, path):
        optim_files.write_state(state, path)

    def step(self, parameters, gradients, state, donate=False):
        """One update: returns ``(new_parameters, new_state)``.

        The arguments are never changed. With ``donate=True`` the caller gives up
        ``state``: the step reuses its memory where nothing else refers to it
        (the old table keeps its values), and the donated state refuses another
        step or a read.
        """
        self._check(parameters, gradients, state)
        nodes = parameters.network.nodes()
        for index, grad in gradients.slots.items():
            param = parameters.slots[index]
            if tuple(grad.shape) != tuple(param.shape):
                raise ShapeError(
                    f"the gradient of {describe_node(nodes[index])} has shape {format_shape(grad.shape)}, "
                    f"the parameter has shape {format_shape(param.shape)}"
                )
        # A parameter without a gradient is not updated (key None): its value and state stay as they are.
        keys = {index: key if index in gradients.slots else None for index, key in state._keys.items()}
        lr = self.rate(state.steps)
        if donate:
            state._drop_views()  # so that only views someone else holds keep the state's memory from reuse
        table = {}
        flats = {}
        with np.errstate(all="ignore"):
            for dtype, indices in by_dtype(parameters).items():
                flat = self._step_dtype(dtype, indices, keys, parameters, gradients, state, donate, lr)
                flats[flat.layout.dtype] = flat
                table.update(flat.views("param"))
        # Not donated, the state passed in stays the caller's; the new one keeps its arrays, for the step
        # after next to write into once the caller has let go of that state and its table.
        recycle = {} if donate else {dtype: dict(flat.arrays) for dtype, flat in state._flats.items()}
        if donate:
            state._give_up()
        new_parameters = Parameters._made_here(parameters.network, {index: table[index] for index in parameters.slots})
        new_keys = {index: state._keys[index] if key is None else self._next_key(key) for index, key in keys.items()}
        return new_parameters, OptimizerState(
            self, state.network, state.steps + 1, keys=new_keys, flats=flats, table=new_parameters, recycle=recycle
        )

    def _step_dtype(self, dtype, indices, keys, parameters, gradients, state, donate, lr):
        """The update of the parameters of one dtype: a ``Flat`` of their new values and moments.

        The flat arrays come from the state where it has them for exactly these
        parameters (the parameters themselves only if the table is the one the last
        step returned), else they are gathered. The step writes into arrays it
        gathered itself; when donated, into the state's own where only the state
        refers to them (the moments, and the ``"spare"`` parameters of the table
        before last); into new ones otherwise.
        """
        previous = state._flats.get(np.dtype(dtype))
        if previous is not None and previous.layout.indices == tuple(indices):
            layout, kept = previous.layout, previous.arrays
        else:
            layout, kept = Layout(dtype, indices, [parameters.slots[i].shape for i in indices]), {}
        # Before anything else refers to them here: which of the state's arrays nobody else refers to.
        candidates = (*self._moments(), "spare") if donate else ()
        reusable = {name for name in candidates if name in kept and only_the_state_holds(kept, name)}
        # Not donated: the memory of the state before this one, where its holder has let go of it.
        pool = {} if donate else state._recycle.get(layout.dtype, {})
        inputs, outputs = {}, {}
        for name in self._moments():
            if name in kept:
                inputs[name] = kept[name]
                outputs[name] = kept[name] if name in reusable else take_unheld(pool, name, kept[name])
            else:
                slots = state.slots
                inputs[name] = layout.gather({index: getattr(slots[index], name) for index in layout.indices})
                outputs[name] = inputs[name]  # gathered here: the step's own to write
        spare = None
        if "param" in kept and parameters is state._table:
            # The caller still holds this table while the step runs, so its memory is never written:
            # the new values go to the memory of the table before it, once nothing refers to that.
            inputs["param"] = kept["param"]
            outputs["param"] = kept["spare"] if "spare" in reusable else take_unheld(pool, "param", kept["param"])
            spare = kept["param"] if donate else None
        else:
            inputs["param"] = outputs["param"] = layout.gather(parameters.slots)
        for index, offset, size in zip(layout.indices, layout.offsets, layout.sizes):
            if keys[index] is None:  # not updated: its values go to the new arrays as they are
                for name, array in outputs.items():
                    if array is not inputs[name]:
                        array[offset : offset + size] = inputs[name][offset : offset + size]
        # The update runs a run of elements at a time, each small enough that its dozen passes stay in
        # the processor's cache. The gradients are read where they lie when they lie end to end in
        # this layout's order (a prepared backward writes them so), else gathered run by run.
        length = min(max(CHUNK_BYTES // layout.dtype.itemsize, 1), layout.size)
        own = kept if donate else pool
        grad, scratch, work = (take_unheld(own, name, np.empty(length, layout.dtype)) for name in SCRATCH)
        # Finding out costs a few microseconds a parameter: worth it where copying them costs more.
        whole = (
            layout.lying_end_to_end(gradients.slots) if layout.size >= IN_PLACE_ELEMENTS * len(layout.sizes) else None
        )
        if whole is None:
            flattened = {
                index: gradients.slots[index].reshape(-1) for index in layout.indices if keys[index] is not None
            }
        offsets = dict(zip(layout.indices, layout.offsets))
        moments = [name for name in inputs if name != "param"]
        coefficients = {}  # key -> the rule's scalars, worked out once a step
        for start, stop, key, pieces in layout.runs(keys, length):
            count = stop - start
            if whole is not None:
                run_grad = whole[start:stop]
            else:
                for index, low, high in pieces:
                    at = offsets[index] + low - start
                    grad[at : at + high - low] = flattened[index][low:high]
                run_grad = grad[:count]
            if key not in coefficients:
                coefficients[key] = self._coefficients(key, layout.dtype, lr)
            self._update(
                inputs["param"][start:stop],
                run_grad,
                {name: inputs[name][start:stop] for name in moments},
                coefficients[key],
                {name: array[start:stop] for name, array in outputs.items()},
                scratch[:count],
                work[:count],
            )
        arrays = dict(outputs, grad=grad, scratch=scratch, work=work)
        if spare is not None:
            arrays["spare"] = spare  # for the step after next, if the table that views it is gone by then
        return Flat(layout, arrays)

    def _check(self, parameters, gradients, state):
        if not isinstance(parameters, Parameters):
            raise ArgumentTypeError(f"step() takes a Parameters table first, got {type(parameters).__name__}")
        if not isinstance(gradients, Gradients):
            raise ArgumentTypeError(f"step() takes a Gradients table second, got {type(gradients).__name__}")
        if not isinstance(state, OptimizerState):
            raise ArgumentTypeError(f"step() takes the state from init() or step() third, got {type(state).__name__}")
        if state._donated:
            raise ArgumentError(DONATED_STATE)
        made_by = state.optimizer
        if type(made_by) is not type(self) or optim_files.hyperparameters(made_by) != optim_files.hyperparameters(self):
            raise ArgumentError(f"this state was made by {made_by!r}, not by {self!r} (the rate aside)")
        if not related_networks(gradients.network, parameters.network):
            raise FeedError("these gradients belong to another network than the parameters")
        if not related_networks(state.network, parameters.network) or set(state._keys) != set(parameters.slots):
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
        object.__setattr__(self, "lr", as_rate(type(self).__name__, self.lr))
        for name in ("momentum", "dampening", "weight_decay"):
            object.__setattr__(self, name, _as_float(self, name, getattr(self, name)))
        object.__setattr__(self, "nesterov", bool(self.nesterov))
        _check_non_negative(self, momentum=self.momentum, weight_decay=self.weight_decay)
        if self.nesterov and (self.momentum <= 0.0 or self.dampening != 0.0):
            raise ArgumentError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")

    def _moments(self):
        return ("momentum_buffer",) if self.momentum != 0.0 else ()

    def _initial_key(self):
        return False

    def _slot_key(self, slot):
        # Whether the slot's momentum buffer has started (the first step with momentum starts it).
        return slot.momentum_buffer is not None

    def _next_key(self, key):
        return self.momentum != 0.0

    def _slot_states(self, flat, keys):
        if "momentum_buffer" not in flat.arrays:
            return {index: SGDSlot(None) for index in flat.layout.indices}
        views = flat.views("momentum_buffer")
        return {index: SGDSlot(views[index] if keys[index] else None) for index in flat.layout.indices}

    def _coefficients(self, key, dtype, lr):
        """Whether the momentum buffer has started (``key``), then the update's scalars in the arrays'
        dtype: ``weight_decay``, ``momentum``, ``1 - dampening``, ``-lr`` (this step's rate)."""
        scalars = (self.weight_decay, self.momentum, 1.0 - self.dampening, -lr)
        return (key, *(_scalar(value, dtype) for value in scalars))

    def _update(self, param, grad, moments, coefficients, outputs, scratch, work):
        """One SGD step over flat arrays, with ``coefficients`` from ``_coefficients``. ``grad`` is read
        only; ``scratch`` and ``work`` are the step's own to overwrite; ``outputs`` may be ``param`` and
        ``moments`` themselves (a donated step)."""
        started, weight_decay, momentum, undamped, negative_lr = coefficients
        if self.weight_decay != 0.0:
            np.multiply(weight_decay, param, out=scratch)
            grad = np.add(grad, scratch, out=work)  # grad = grad + weight_decay * param
        if self.momentum != 0.0:
            buffer = outputs["momentum_buffer"]
            if not started:
                np.copyto(buffer, grad)  # the first step: buffer = grad
            else:
                np.multiply(moments["momentum_buffer"], momentum, out=buffer)
                if self.dampening != 0.0:
                    grad_term = np.multiply(undamped, grad, out=scratch)
                else:
                    grad_term = grad  # 1 * grad is grad, bit for bit: one pass fewer
                np.add(buffer, grad_term, out=buffer)  # buffer = buffer * momentum + (1 - dampening) * grad
            if self.nesterov:
                np.multiply(momentum, buffer, out=scratch)
                grad = np.add(grad, scratch, out=work)  # grad = grad + momentum * buffer
            else:
                grad = buffer
        np.multiply(negative_lr, grad, out=scratch)
        np.add(param, scratch, out=outputs["param"])  # param + (-lr) * grad


# Adam and AdamW ---------------------------------------------------------------------------


def _lerp(start, end, weight, out, scratch):
    """``start + weight * (end - start)`` evaluated as PyTorch's ``lerp`` does (stable near both ends),
    written into ``out`` (which may be ``start``); ``scratch`` is overwritten."""
    np.subtract(end, start, out=scratch)
    if abs(weight) < 0.5:
        np.multiply(weight, scratch, out=scratch)
        return np.add(start, scratch, out=out)
    np.multiply(scratch, weight.dtype.type(1.0) - weight, out=scratch)
    return np.subtract(end, scratch, out=out)


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
        object.__setattr__(self, "lr", as_rate(type(self).__name__, self.lr))
        for name in ("eps", "weight_decay"):
            object.__setattr__(self, name, _as_float(self, name, getattr(self, name)))
        try:
            beta1, beta2 = (float(beta) for beta in self.betas)
        except (TypeError, ValueError):
            raise ArgumentError(f"{type(self).__name__}: betas is a pair of numbers, got {self.betas!r}") from None
        object.__setattr__(self, "betas", (beta1, beta2))
        _check_non_negative(self, eps=self.eps, weight_decay=self.weight_decay)
        for position, beta in enumerate(self.betas):
            if not 0.0 <= beta < 1.0:
                raise ArgumentError(f"{type(self).__name__}: betas[{position}] must be in [0, 1), got {beta}")

    def _moments(self):
        return ("exp_avg", "exp_avg_sq")

    def _initial_key(self):
        return 0

    def _slot_key(self, slot):
        # The step count: its bias corrections are one pair of numbers for a whole flat update.
        return slot.step

    def _next_key(self, key):
        return key + 1

    def _slot_states(self, flat, keys):
        averages, squares = flat.views("exp_avg"), flat.views("exp_avg_sq")
        return {index: AdamSlot(keys[index], averages[index], squares[index]) for index in flat.layout.indices}

    def _coefficients(self, key, dtype, lr):
        """The scalars of the update of slots that have taken ``key`` steps at this step's rate ``lr``.

        The bias corrections are Python floats, as in PyTorch, and meet the arrays as scalars. PyTorch's
        ``param - step_size * exp_avg / (sqrt(exp_avg_sq) / sqrt(bias_correction2) + eps)`` has
        ``sqrt(bias_correction2)`` (``root``) moved onto the scalars (one pass fewer; the same to rounding):
        ``param + (-step_size * root) * (exp_avg / (sqrt(exp_avg_sq) + eps * root))``.
        """
        beta1, beta2 = self.betas
        step = key + 1
        step_size = lr / (1.0 - beta1**step)
        root = math.sqrt(1.0 - beta2**step)
        decay = 1.0 - lr * self.weight_decay if self.decoupled else self.weight_decay
        scalars = (decay, 1.0 - beta1, beta2, 1.0 - beta2, self.eps * root, -step_size * root)
        return tuple(_scalar(value, dtype) for value in scalars)

    def _update(self, param, grad, moments, coefficients, outputs, scratch, work):
        """One Adam step over flat arrays, with ``coefficients`` from ``_coefficients``. ``grad`` is read
        only; ``scratch`` and ``work`` are the step's own to overwrite; ``outputs`` may be ``param`` and
        ``moments`` themselves (a donated step). Each line is one expression of PyTorch's update, in its
        order. Every pass writes an output or ``scratch`` (``work`` holds only the gradient with L2 weight
        decay), so a run's passes touch six arrays: parameters and their new values, moments, gradient, scratch."""
        decay, weight1, beta2, weight2, eps, scale = coefficients
        if self.weight_decay != 0.0:
            if self.decoupled:
                param = np.multiply(param, decay, out=outputs["param"])  # param * (1 - lr * weight_decay)
            else:
                np.multiply(decay, param, out=scratch)
                grad = np.add(grad, scratch, out=work)  # grad = grad + weight_decay * param
        exp_avg = _lerp(moments["exp_avg"], grad, weight1, outputs["exp_avg"], scratch)
        # exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * grad * grad
        exp_avg_sq = np.multiply(moments["exp_avg_sq"], beta2, out=outputs["exp_avg_sq"])
        np.multiply(weight2, grad, out=scratch)
        np.multiply(scratch, grad, out=scratch)
        np.add(exp_avg_sq, scratch, out=exp_avg_sq)
        # param + (-step_size * root) * (exp_avg / (sqrt(exp_avg_sq) + eps * root)); grad is no longer read.
        denominator = np.sqrt(exp_avg_sq, out=scratch)
        np.add(denominator, eps, out=denominator)
        update = np.divide(exp_avg, denominator, out=scratch)
        np.multiply(update, scale, out=update)
        np.add(param, update, out=outputs["param"])


@dataclass(frozen=True)
class Adam(_AdamBase):
    """Adam with bias correction and optional L2 weight decay (added to the gradient), as ``torch.optim.Adam``."""


@dataclass(frozen=True)
class AdamW(_AdamBase):
    """Adam with decoupled weight decay (``w *= 1 - lr * weight_decay`` each step), as ``torch.optim.AdamW``."""

    weight_decay: float = 1e-2
    decoupled = True
