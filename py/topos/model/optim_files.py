"""An optimizer's state as a safetensors file, and as the moments a trainer holds on its device.

``state.save(path)`` writes one tensor a parameter and moment, named
``"<parameter name>.<moment>"`` (``"w.exp_avg"``), with the metadata that makes
the state whole again: the optimizer's kind and its hyperparameters other than
the rate, the number of steps taken (a schedule's position: the next step's
rate is ``lr(steps)``), and each parameter's slot key (Adam's step count,
whether SGD's momentum has started). The write is atomic, as a parameters
file's is (``checkpoint.write_safetensors``): a failure leaves the old file.

``optimizer.load_state(path, parameters)`` checks everything before it makes
the state: the file's structure (``checkpoint.read_safetensors``), that it is
a state of this optimizer's kind with the same hyperparameters (the rate
aside: a state goes on under a new rate or schedule, as a step does), that
it has a slot for exactly the table's parameters, a tensor of the parameter's
shape and dtype for each moment, and keys that fit the step count. Every
problem is named in one ``CheckpointError``; nothing is made until all pass.

The rate is not saved: a schedule is code, and a resumed run names its own
``lr``. The same schedule and the saved step count give the same rates.

``trainer_moments`` and ``trainer_state`` carry a state to and from a trainer
(``XLATrainer``, ``DataParallelTrainer``, ``DeviceTrainer``), which keeps the
moments of the parameters it updates as device arrays and one step count.
"""

import dataclasses
import json
import os

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, CheckpointError
from ..text import format_shape
from .checkpoint import read_safetensors, write_safetensors
from .network import related_networks
from .optim_state import AdamSlot, OptimizerState, SGDSlot

STATE_FORMAT = "topos.optimizer_state"
STATE_VERSION = "1"


def hyperparameters(optimizer):
    """The optimizer's hyperparameters other than ``lr``, as JSON-ready values: its identity."""
    fields = {f.name: getattr(optimizer, f.name) for f in dataclasses.fields(optimizer) if f.name != "lr"}
    return {name: list(value) if isinstance(value, tuple) else value for name, value in fields.items()}


def _moment(state, index, slot, name):
    """A slot's moment as an array (SGD's buffer before it starts: zeros of the parameter's shape)."""
    value = getattr(slot, name)
    if value is None:
        node = state.network.nodes()[index]
        return np.zeros(node.shape, node.dtype)
    return value


def write_state(state, path):
    """``state.save(path)``: the state's moments and metadata as a safetensors file, atomically."""
    optimizer = state.optimizer
    nodes = state.network.nodes()
    tensors, keys = {}, {}
    for index, slot in state.slots.items():
        name = nodes[index].name
        keys[name] = optimizer._slot_key(slot)
        for moment in optimizer._moments():
            tensors[f"{name}.{moment}"] = _moment(state, index, slot, moment)
    metadata = {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "optimizer": type(optimizer).__name__,
        "hyperparameters": json.dumps(hyperparameters(optimizer)),
        "steps": str(state.steps),
        "slots": json.dumps(keys),
    }
    write_safetensors(path, tensors, metadata)


def read_state(optimizer, path, parameters):
    """``optimizer.load_state(path, parameters)``: a new ``OptimizerState`` read from ``path``, every
    part checked first; raises ``CheckpointError`` naming the file and each problem."""
    tensors, metadata = read_safetensors(path)
    where = f"cannot load optimizer state {os.fspath(path)}"
    kind = type(optimizer).__name__
    if metadata.get("format") != STATE_FORMAT:
        raise CheckpointError(f"{where}: it is not an optimizer state (format {metadata.get('format')!r})")
    if metadata.get("optimizer") != kind:  # every other check would only repeat this one
        raise CheckpointError(f"{where}: it is the state of {metadata.get('optimizer')}, not of {kind}")
    problems = []
    saved, keys, steps = _parsed(metadata, problems)
    if saved is not None:
        for name, value in hyperparameters(optimizer).items():
            if saved.get(name) != value:
                problems.append(f"it was saved with {name}={saved.get(name)!r}, this {kind} has {name}={value!r}")
    names = dict(zip(parameters.names(), parameters.slots))
    if keys is not None:
        for name in sorted(set(names) - set(keys)):
            problems.append(f"parameter {name!r} has no slot in the file")
        for name in sorted(set(keys) - set(names)):
            problems.append(f"the slot {name!r} matches no parameter of the table")
        for name, key in keys.items():
            if name in names and steps is not None and not _key_fits(optimizer, key, steps):
                problems.append(f"the slot {name!r} says {key!r}, which does not fit {steps} steps of {kind}")
    expected = {f"{name}.{moment}": index for name, index in names.items() for moment in optimizer._moments()}
    for tensor_name, index in expected.items():
        problems += _tensor_problems(tensor_name, tensors.get(tensor_name), parameters.slots[index])
    for tensor_name in sorted(set(tensors) - set(expected)):
        problems.append(f"tensor {tensor_name!r} is no moment of this table's parameters under {kind}")
    if problems:
        raise CheckpointError(f"{where}: " + "; ".join(problems))
    slots = {}
    for name, index in names.items():
        moments = {moment: tensors[f"{name}.{moment}"] for moment in optimizer._moments()}
        slots[index] = _slot(optimizer, keys[name], moments)
    return OptimizerState(optimizer, parameters.network, steps, slots=slots)


def _parsed(metadata, problems):
    """The saved hyperparameters, slot keys and step count, each None where the metadata is broken."""
    parsed = []
    for field in ("hyperparameters", "slots"):
        try:
            value = json.loads(metadata.get(field, ""))
        except json.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            problems.append(f"its metadata {field!r} is not a JSON object")
            value = None
        parsed.append(value)
    steps = metadata.get("steps", "")
    if not steps.isdigit():
        problems.append(f"its step count {steps!r} is not a whole number")
        steps = None
    return (*parsed, None if steps is None else int(steps))


def _key_fits(optimizer, key, steps):
    if optimizer._initial_key() is False:  # SGD: whether the momentum buffer has started
        return isinstance(key, bool) and (not key or steps > 0)
    return isinstance(key, int) and not isinstance(key, bool) and 0 <= key <= steps


def _tensor_problems(name, tensor, parameter):
    if tensor is None:
        return [f"tensor {name!r} is missing from the file"]
    dtype, shape = (tensor[0], tensor[1]) if isinstance(tensor, tuple) else (tensor.dtype.name, tensor.shape)
    problems = []
    if dtype != parameter.dtype.name:
        problems.append(f"tensor {name!r} is {dtype}, the parameter is {parameter.dtype.name}")
    if tuple(shape) != parameter.shape:
        problems.append(
            f"tensor {name!r} has shape {format_shape(shape)}, the parameter has {format_shape(parameter.shape)}"
        )
    return problems


def _slot(optimizer, key, moments):
    if optimizer._initial_key() is False:
        return SGDSlot(moments["momentum_buffer"] if key else None)
    return AdamSlot(key, moments["exp_avg"], moments["exp_avg_sq"])


# Trainers -------------------------------------------------------------------------------


def trainer_moments(optimizer, parameters, updated, state):
    """``(steps, {(parameter index, moment): array})`` for a trainer to start from ``state``.

    A trainer steps every parameter it updates together, with one step count: the state
    must be this optimizer's (the rate aside), for this table, and each updated slot's key
    must be the one ``state.steps`` such steps give (Adam's count; SGD's buffer started).
    """
    if not isinstance(state, OptimizerState):
        raise ArgumentTypeError(f"a trainer starts from an OptimizerState, got {type(state).__name__}")
    if type(state.optimizer) is not type(optimizer) or hyperparameters(state.optimizer) != hyperparameters(optimizer):
        raise ArgumentError(f"this state was made by {state.optimizer!r}, not by {optimizer!r} (the rate aside)")
    if not related_networks(state.network, parameters.network) or set(state.slots) != set(parameters.slots):
        raise ArgumentError("this optimizer state was made for another parameters table")
    steps = state.steps
    wanted = _trainer_key(optimizer, steps)
    nodes = parameters.network.nodes()
    moments = {}
    for index in updated:
        slot = state.slots[index]
        if optimizer._slot_key(slot) != wanted:
            raise ArgumentError(
                f"a trainer steps every parameter together: the slot of parameter {index} '{nodes[index].name}' "
                f"has taken other steps than the state's {steps}"
            )
        for moment in optimizer._moments():
            moments[(index, moment)] = np.array(_moment(state, index, slot, moment))
    return steps, moments


def _trainer_key(optimizer, steps):
    if optimizer._initial_key() is False:
        return steps > 0 and optimizer.momentum != 0.0
    return steps


def trainer_state(optimizer, parameters, updated, steps, moments):
    """The ``OptimizerState`` of a trainer after ``steps`` steps of the parameters ``updated``, whose
    moments it holds (``{(index, moment): array}``); a parameter it does not update keeps its first slot."""
    slots = {}
    for index, array in parameters.slots.items():
        held = {}
        for moment in optimizer._moments():
            value = np.array(moments[(index, moment)]) if index in updated else np.zeros(array.shape, array.dtype)
            value.flags.writeable = False
            held[moment] = value
        key = _trainer_key(optimizer, steps) if index in updated else optimizer._initial_key()
        slots[index] = _slot(optimizer, key, held)
    return OptimizerState(optimizer, parameters.network, steps, slots=slots)
