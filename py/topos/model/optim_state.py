"""An optimizer's state: one slot state a parameter, kept as flat arrays, and the rules of donation.

``OptimizerState`` is what ``optimizer.init`` and ``optimizer.step``
(``topos.model.optim``) return: an immutable value. Its parameters of one dtype
lie end to end in one flat array (a ``Layout`` says where each is), each moment
in another (a ``Flat`` holds them); the slot states (``SGDSlot``,
``AdamSlot``) and the tables a step returns view those arrays.
``only_the_state_holds`` is the rule a donated step (``donate=True``) writes by:
into an array that nothing but the state refers to, never into one that
someone can still read.
"""

import math
import sys
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..errors import ArgumentError, FeedError
from ..text import plural
from .nodes import describe_node

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


def by_dtype(parameters):
    """dtype -> the indices of the parameters of that dtype, in node order."""
    groups = {}
    for index, array in parameters.slots.items():
        groups.setdefault(array.dtype, []).append(index)
    return groups


class Layout:
    """Where the parameters of one dtype lie in a flat array: ``indices`` (parameter nodes, in
    order), each one's ``offsets``, ``sizes`` and ``shapes``, and ``size`` elements in all."""

    def __init__(self, dtype, indices, shapes):
        self.dtype = np.dtype(dtype)
        self.indices = tuple(indices)
        self.shapes = tuple(tuple(shape) for shape in shapes)
        self.sizes = tuple(math.prod(shape) for shape in self.shapes)
        self.offsets = tuple(sum(self.sizes[:position]) for position in range(len(self.sizes)))
        self.size = sum(self.sizes)
        self._runs = {}

    def gather(self, arrays):
        """A new flat array of this dtype holding ``arrays`` (parameter index -> an array of its
        shape, or None for zeros) end to end."""
        flat = np.empty(self.size, self.dtype)
        for index, offset, size in zip(self.indices, self.offsets, self.sizes):
            array = arrays[index]
            flat[offset : offset + size] = 0.0 if array is None else np.ravel(array)
        return flat

    def runs(self, keys, length):
        """The stretches of the flat arrays that one update each covers: ``(start, stop, key, pieces)``.

        Neighbouring parameters whose ``keys`` (index -> key, None for one that is
        not updated) are equal join one stretch, cut into runs of at most ``length``
        elements; a piece ``(index, low, high)`` says that elements low..high of that
        parameter (flattened) lie in the run.
        """
        values = [keys[index] for index in self.indices]
        # Which parameters share a key, not the keys themselves (Adam's step counts change every step):
        # each parameter's group is the position of the first parameter with its key.
        first = {}
        pattern = tuple(None if key is None else first.setdefault(key, position) for position, key in enumerate(values))
        cache_key = (pattern, length)
        runs = self._runs.get(cache_key)
        if runs is None:
            runs = self._runs[cache_key] = self._cut(pattern, length)
        return [(start, stop, values[group], pieces) for start, stop, group, pieces in runs]

    def _cut(self, pattern, length):
        """``runs`` for parameters grouped by ``pattern``, with each run's group in place of its key."""
        stretches = []  # [group, start, stop, [(index, offset, size)]]
        for index, offset, size, group in zip(self.indices, self.offsets, self.sizes, pattern):
            if group is None or size == 0:
                continue
            if stretches and stretches[-1][0] == group and stretches[-1][2] == offset:
                stretches[-1][2] = offset + size
                stretches[-1][3].append((index, offset, size))
            else:
                stretches.append([group, offset, offset + size, [(index, offset, size)]])
        runs = []
        for group, first, last, members in stretches:
            for start in range(first, last, length):
                stop = min(start + length, last)
                pieces = [
                    (index, max(start, offset) - offset, min(stop, offset + size) - offset)
                    for index, offset, size in members
                    if offset < stop and start < offset + size
                ]
                runs.append((start, stop, group, pieces))
        return runs

    def lying_end_to_end(self, arrays):
        """A read-only flat array of this layout viewing ``arrays`` (parameter index -> array) where they
        already lie end to end in one block of memory in this layout's order, as the gradients of a
        prepared backward do; None where they do not (then ``gather`` copies them)."""
        owner = start = None
        itemsize = self.dtype.itemsize
        for index, offset in zip(self.indices, self.offsets):
            array = arrays.get(index)
            if array is None or array.dtype != self.dtype or not array.flags.c_contiguous:
                return None
            root = array if array.base is None else array.base  # numpy's base is the array that owns the memory
            if not isinstance(root, np.ndarray) or not root.flags.c_contiguous:
                return None
            address = array.__array_interface__["data"][0] - offset * itemsize
            if owner is None:
                owner, start = root, address
            elif root is not owner or address != start:
                return None
        if owner is None:
            return None
        flat = np.ndarray((self.size,), self.dtype, owner, start - owner.__array_interface__["data"][0])
        flat.flags.writeable = False
        return flat

    def views(self, flat):
        """Parameter index -> a read-only view of its part of ``flat``, in its shape."""
        readable = flat
        if flat.flags.writeable:  # one read-only view, whose slices are read-only too
            readable = flat.view()
            readable.flags.writeable = False
        return {
            index: readable[offset : offset + size].reshape(shape)
            for index, offset, size, shape in zip(self.indices, self.offsets, self.sizes, self.shapes)
        }


class Flat:
    """A state's flat arrays for one ``layout``: ``arrays`` by name (each moment's; ``"param"``, the
    parameters of the table the step returned; after a donated step, ``"spare"``, those of the table
    before it, for a later donated step to reuse; the step's small ``"grad"`` and ``"scratch"``)."""

    def __init__(self, layout, arrays):
        self.layout = layout
        self.arrays = arrays
        self._views = {}

    def views(self, name):
        """Parameter index -> a read-only view of its part of array ``name`` (made once)."""
        views = self._views.get(name)
        if views is None:
            views = self._views[name] = self.layout.views(self.arrays[name])
        return views


class OptimizerState:
    """An optimizer's state: one slot state per parameter, and the number of steps taken.

    Immutable: ``slots`` is a read-only mapping (node index -> slot state) of
    frozen dataclasses holding read-only arrays (views of the state's flat arrays).
    """

    __slots__ = ("optimizer", "network", "steps", "_slots", "_keys", "_flats", "_table", "_donated", "_recycle")

    def __init__(self, optimizer, network, steps, slots=None, keys=None, flats=None, table=None, recycle=None):
        object.__setattr__(self, "optimizer", optimizer)
        object.__setattr__(self, "network", network)
        object.__setattr__(self, "steps", steps)
        # The slot states, or None: then they are made from the flat arrays and the keys when first read.
        object.__setattr__(self, "_slots", None if slots is None else MappingProxyType(dict(slots)))
        # Each parameter's key (Adam's step count; whether SGD's momentum buffer has started).
        if keys is None:
            keys = {index: optimizer._slot_key(slot) for index, slot in self._slots.items()}
        object.__setattr__(self, "_keys", keys)
        object.__setattr__(self, "_flats", flats or {})  # dtype -> Flat
        # The parameters table the step that made this state returned: its slots view the flats' "param".
        object.__setattr__(self, "_table", table)
        object.__setattr__(self, "_donated", False)
        # dtype -> the flat arrays of the state before this one (a step that was not donated keeps
        # them): the next step writes into those its holder has let go of (``take_unheld``).
        object.__setattr__(self, "_recycle", recycle or {})

    @property
    def slots(self):
        """Node index -> the slot state of that parameter (a read-only mapping).

        Raises ``ArgumentError`` for a state given up to a donated step.
        """
        if self._donated:
            raise ArgumentError(DONATED_STATE)
        if self._slots is None:
            slots = {}
            for flat in self._flats.values():
                slots.update(self.optimizer._slot_states(flat, self._keys))
            object.__setattr__(self, "_slots", MappingProxyType({index: slots[index] for index in self._keys}))
        return self._slots

    def __setattr__(self, name, value):
        raise AttributeError("an optimizer state is immutable: step() returns a new one")

    def _drop_views(self):
        """Forget the slot states and views made from the flat arrays (a donated step reads them no more)."""
        object.__setattr__(self, "_slots", None)
        for flat in self._flats.values():
            flat._views.clear()

    def _give_up(self):
        """After a donated step: let go of every array, so that the state refuses to step or be read."""
        self._drop_views()
        object.__setattr__(self, "_flats", {})
        object.__setattr__(self, "_recycle", {})
        object.__setattr__(self, "_table", None)
        object.__setattr__(self, "_donated", True)

    def save(self, path):
        """Write this state (moments, step count, slot keys) as a safetensors file, atomically; read it
        back with ``optimizer.load_state(path, parameters)`` (the format: ``topos.model.optim_files``)."""
        self.optimizer._write_state(self, path)

    def of(self, symbol):
        """The slot state of one parameter (an ``SGDSlot`` or an ``AdamSlot``)."""
        index = self.network.index_of(symbol)
        if index not in self.slots:
            raise FeedError(f"{describe_node(self.network.nodes()[index])} has no slot in this optimizer state")
        return self.slots[index]

    def __repr__(self):
        slots = len(self._keys)
        return (
            f"<OptimizerState of {type(self.optimizer).__name__}: "
            f"{plural(slots, 'slot')}, {plural(self.steps, 'step')}>"
        )


# The shared step ---------------------------------------------------------------------

#: What a donated state says when it is stepped or read again.
DONATED_STATE = "this optimizer state was donated to a step (donate=True): continue from the state that step returned"


def _references(arrays, name):
    """How many references ``arrays[name]`` has, counted as ``only_the_state_holds`` counts them."""
    return sys.getrefcount(arrays[name])


#: The count for an array that only its flat table refers to (measured once: it differs between Pythons).
_SOLE_REFERENCE = _references({"probe": np.empty(1)}, "probe")


def only_the_state_holds(arrays, name):
    """Whether nothing but the state's table ``arrays`` refers to the flat array ``name``.

    Every numpy view refers to the array that owns its memory, so a parameters
    table, a run, a tensor or a slot state that still views it (or anything made
    from one of those without a copy) counts: a donated step writes only into
    memory that nobody can read any more.
    """
    return _references(arrays, name) <= _SOLE_REFERENCE


def _local_references():
    array = np.empty(1)
    return sys.getrefcount(array)


#: The count for an array that only one local variable refers to.
_SOLE_LOCAL = _local_references()


def take_unheld(pool, name, like):
    """An array like ``like`` for a step to write: ``pool[name]`` (taken out of the pool) where nothing
    else refers to it any more (an earlier state's memory that its holder has let go of: no table,
    state, run or view of it is left), else a new one. So a loop that keeps only the latest table
    and state writes into the same memory step after step, donated or not, and takes no new pages."""
    array = pool.pop(name, None)
    if array is not None and array.shape == like.shape and array.dtype == like.dtype:
        if sys.getrefcount(array) <= _SOLE_LOCAL:
            return array
    return np.empty_like(like)
