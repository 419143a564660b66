"""Where ``DeviceTrainer`` keeps what it trains: end to end in a few device buffers, as windows.

The host's optimizer state lays a dtype's parameters end to end in one flat array
(``topos.model.optim_state.Layout``) so that a step is one update over it. On the
device the same layout makes a step one optimizer launch: every trained parameter,
its gradient and its moments get a *slot* in a *bank*, one device buffer a role
("weights", "gradients", and each moment), and the program's buffers that held them
become windows of those banks (``Buffer.base``). The forward and backward launches
are bound to the windows, unchanged; the optimizer launch is bound to the banks.

A bank holds at most one storage binding's worth (``MAX_ELEMENTS``, 128 MiB, WebGPU's
default ``maxStorageBufferBindingSize``) and each slot starts at a multiple of
``WINDOW_ALIGNMENT`` (256 bytes, the default ``minStorageBufferOffsetAlignment``): a
model larger than a bank takes one more launch a bank. The gaps between slots hold
zeros in every role, which each update keeps zero.
"""

from dataclasses import dataclass, replace

from ..compiler.kernels import MAX_ELEMENTS
from ..compiler.wgsl.program import WINDOW_ALIGNMENT, Buffer


@dataclass(frozen=True)
class Slot:
    """Elements ``start`` to ``start + elements`` of bank ``bank``."""

    bank: int
    start: int
    elements: int


def pack_slots(sizes, capacity=MAX_ELEMENTS, alignment=WINDOW_ALIGNMENT):
    """Slots for values of ``sizes`` elements, in order, end to end with aligned starts, a new bank
    whenever the next would pass ``capacity``. Returns ``(slots, bank lengths)``."""
    slots, lengths = [], []
    for size in sizes:
        start = -(-lengths[-1] // alignment) * alignment if lengths else 0
        if not lengths or start + size > capacity:
            lengths.append(0)
            start = 0
        slots.append(Slot(len(lengths) - 1, start, int(size)))
        lengths[-1] = start + int(size)
    return slots, lengths


class Banks:
    """The banks of one program, made as they are first named; ``buffers`` is the program's list of
    buffers (ids are positions), which gains the banks and any new windows."""

    def __init__(self, buffers, lengths):
        self.buffers = buffers
        self.lengths = tuple(lengths)
        self._bases = {}  # (role, bank) -> buffer id

    def base(self, role, bank):
        """The buffer id of bank ``bank`` of ``role``."""
        key = (role, bank)
        if key not in self._bases:
            self._bases[key] = len(self.buffers)
            self.buffers.append(Buffer(len(self.buffers), self.lengths[bank]))
        return self._bases[key]

    def window(self, role, slot, buffer=None):
        """Make buffer ``buffer`` (an id; a new buffer when None) the window of ``slot`` in ``role``'s bank;
        returns its id."""
        base = self.base(role, slot.bank)
        if buffer is None:
            buffer = len(self.buffers)
            self.buffers.append(Buffer(buffer, slot.elements))
        self.buffers[buffer] = replace(self.buffers[buffer], base=base, start=slot.start)
        return buffer
