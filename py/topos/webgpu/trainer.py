"""Training on the device: parameters stay in device buffers between steps.

``plan.run(..., backend="webgpu")`` uploads the parameters it is given (once per
array: the same array objects are not written again, since an array a table holds
never changes; a donated optimizer step writes only into memory nobody refers to) and reads every gradient
back. A training loop whose optimizer runs on the host therefore moves every
parameter and gradient across each step. ``DeviceTrainer`` moves neither: it lays
the trained parameters, their gradients and the optimizer's moments end to end in
one device buffer each (``topos.webgpu.flat``; the forward and backward launches
read and write windows of them), and each step runs the forward+backward plan's
launches and then one optimizer launch (``kernels/optimizer.wgsl``) that updates
every parameter in place; only the feeds go up and only the readables (the loss)
come back. (A model past one storage binding, 128 MiB of parameters, takes one
launch more for each further 128 MiB.)
``trainer.parameters()`` reads the parameters back when they are wanted.

```python
plan = network.entry([loss]).backward(loss).lower()
trainer = DeviceTrainer(plan, network.parameters(), optim.Adam(lr=1e-2))
for step in range(100):
    run = trainer.step({tokens: inputs, targets: expected})
    print(run.of(loss))
parameters = trainer.parameters()
```

The updates follow ``topos.model.optim`` (SGD with momentum, Nesterov and weight
decay; Adam; AdamW) operation by operation in float32, so a device run tracks a
host run to rounding. The rate is a parameter word of the update launch, written
each step from ``optimizer.rate(steps)``, so a schedule costs nothing on the device;
``state()`` reads the optimizer's state back and ``state=`` resumes from one.
"""

import math

import numpy as np

from ..compiler.executor import PlanRun
from ..compiler.kernels import Selector
from ..compiler.plan import Plan
from ..compiler.wgsl import launch as build
from ..compiler.wgsl.launch import Binding, Launch, grid, pack
from ..compiler.wgsl.program import Buffer, HostStep, Program, Readback, Upload, run_counts
from ..compiler.wgsl.views import View
from ..errors import ArgumentError, ArgumentTypeError
from ..model import optim
from ..model.network import Parameters
from ..model.nodes import describe_node
from ..model.optim_files import trainer_moments, trainer_state
from ..tensor import freeze
from ..text import plural
from . import flat
from .backend import WebGPUExecutor


class DeviceTrainer:
    """Runs a forward+backward plan and an optimizer step on the device, step after step.

    The shape every trainer shares (``topos.xla.XLATrainer``, ``DataParallelTrainer``):
    ``step(feeds)`` returns a ``PlanRun`` of the step's readables (``compile_ms`` None:
    nothing is compiled by XLA here); ``parameters()``, ``moments()`` and ``state()`` read
    copies back; ``state=`` (an ``OptimizerState``) starts from the moments and step count it holds.
    """

    #: The most elements of one bank (one optimizer launch): one storage binding's worth.
    BANK_ELEMENTS = flat.MAX_ELEMENTS

    def __init__(self, plan, parameters, optimizer, runner=None, state=None):
        if not isinstance(plan, Plan):
            raise ArgumentTypeError(
                f"DeviceTrainer takes a Plan (network.entry([...]).backward(loss).lower()), got {type(plan).__name__}"
            )
        if plan.target is None:
            raise ArgumentError(
                "DeviceTrainer needs a forward+backward plan: network.entry([...]).backward(loss).lower()"
            )
        if not isinstance(optimizer, (optim.SGD, optim.Adam, optim.AdamW)):
            raise ArgumentTypeError(f"DeviceTrainer runs SGD, Adam and AdamW; got {type(optimizer).__name__}")
        plan.network.check_parameters(parameters)
        self.plan = plan
        self.optimizer = optimizer
        self._trained = tuple(p for p, _ in plan.gradients if p in parameters.slots)
        self.steps, moments = 0, None
        if state is not None:
            self.steps, moments = trainer_moments(optimizer, parameters, self._trained, state)
        self._counts = None
        self._initial = dict(parameters.slots)
        self._template = parameters
        # The gradients' buffers live the whole step and hold nothing else: each can be its gradient's window.
        reading = Selector(plan).read(keep=[gradient for _, gradient in plan.gradients])
        self._reading = reading
        self._moment_buffers = {}  # (parameter index, moment name) -> the buffer the update launch keeps it in
        self._program, self._updates = self._build(plan, reading)
        if runner is None:
            from .runner import default_runner

            runner = default_runner()
        self.runner = runner
        for (index, moment), value in (moments or {}).items():  # else the banks start at zero, as init() does
            view = View.of_buffer(self._moment_buffers[(index, moment)], plan.nodes[index].shape)
            runner.write_view(self._program, view, value)
        self._executor = WebGPUExecutor(plan, runner)
        self._executor_backends = dict(reading.backends)

    def _build(self, plan, reading):
        """The plan's program without its gradient readbacks, its trained parameters, gradients and moments
        laid end to end (``flat``), then one update launch a bank."""
        program = reading.program
        gradient_nodes = {gradient for _, gradient in plan.gradients} - set(plan.readables)
        steps = [s for s in program.steps if not (isinstance(s, Readback) and s.key in gradient_nodes)]
        buffers = list(program.buffers)
        uploads = {s.key: s.buffer for s in program.steps if isinstance(s, Upload)}
        readbacks = {s.key: s.view for s in program.steps if isinstance(s, Readback)}

        def new_buffer(elements):
            buffer = Buffer(len(buffers), elements)
            buffers.append(buffer)
            return buffer.id

        # The readables are read after the updates, so that a step is one submission and one wait. Those the
        # reading reads at its end (the loss) are read there instead; a parameter read as a readable is its value
        # before this step's update (its buffer holds the new values after the first step, and the host only
        # the first step's), so it, and any readable in a buffer an update writes, is first copied on the device.
        written = {uploads[p] for p, _ in plan.gradients if p in self._initial and p in uploads}
        tail = len(steps)
        while tail and isinstance(steps[tail - 1], Readback):
            tail -= 1
        reads = steps[tail:]
        del steps[tail:]
        for index in plan.readables:
            if index in self._initial and index in uploads:
                reads.append(Readback(index, View.of_buffer(uploads[index], plan.nodes[index].shape)))
        late = []
        for read in reads:
            if read.view.is_constant or read.view.buffer not in written:
                late.append(read)
                continue
            kept = View.of_buffer(new_buffer(read.view.size), read.view.shape)
            steps.append(build.copy(read.view, kept).covering((read.key,), "readable"))
            late.append(Readback(read.key, kept, read.dtype))
        trained = [(p, g) for p, g in plan.gradients if p in self._initial]
        for parameter, _ in trained:
            if parameter not in uploads:
                raise ArgumentError(
                    f"DeviceTrainer cannot train {describe_node(plan.nodes[parameter])} on the device: no launch "
                    "reads it (the host runs every node that does; plan.kernels().describe() shows why)"
                )
        gradients = {g: readbacks[g] if g in readbacks else uploads.get(g) for _, g in trained}
        gradients = {
            g: View.of_buffer(v, plan.nodes[g].shape) if isinstance(v, int) else v for g, v in gradients.items()
        }
        in_place = self._gradients_in_place(buffers, steps, gradients, set(uploads.values()))
        slots, lengths = flat.pack_slots([plan.nodes[p].size for p, _ in trained], self.BANK_ELEMENTS)
        banks = flat.Banks(buffers, lengths)
        for (parameter, gradient), slot in zip(trained, slots):
            banks.window("weights", slot, uploads[parameter])
            view = gradients[gradient]
            if gradient in in_place:
                banks.window("gradients", slot, view.buffer)
            elif view is None:
                # Computed on the host (a node the device declines) and read by no launch: uploaded after its host step.
                position = next(i for i, s in enumerate(steps) if isinstance(s, HostStep) and s.key == gradient)
                steps.insert(position + 1, Upload(gradient, banks.window("gradients", slot)))
            else:
                dense = View.of_buffer(banks.window("gradients", slot), view.shape)
                filling = build.fill(dense, view.constant) if view.is_constant else build.copy(view, dense)
                steps.append(filling.covering((gradient,), "gradient"))
            # The moments, in the order optim names them (momentum_buffer; exp_avg, exp_avg_sq).
            for moment in self.optimizer._moments():
                self._moment_buffers[(parameter, moment)] = banks.window(moment, slot)
        updates = []
        for bank, count in enumerate(lengths):
            bindings = [
                Binding(1, banks.base("weights", bank), "read_write"),
                Binding(2, banks.base("gradients", bank), "read"),
            ] + [Binding(3 + i, banks.base(m, bank), "read_write") for i, m in enumerate(self.optimizer._moments())]
            covers = tuple(p for (p, _), slot in zip(trained, slots) if slot.bank == bank)
            name = type(self.optimizer).__name__
            launch = Launch(
                "optimizer", self._entry(), (), grid(-(-count // 64)), tuple(bindings), pack([count]), covers, name
            )
            steps.append(launch)
            updates.append((count, launch))
        steps.extend(late)
        return Program(tuple(buffers), tuple(steps)), updates

    @staticmethod
    def _gradients_in_place(buffers, steps, gradients, uploaded):
        """The gradients whose own buffer becomes their window: dense float32 buffers of exactly the gradient
        (the reading keeps them whole), no upload's, no other gradient's, that no launch reads. A dispatch may
        not bind one device buffer both read-only and writable, so a bank's window is never read beside
        another's being written."""
        owners = {}
        for gradient, view in gradients.items():
            if view is not None and not view.is_constant:
                owners.setdefault(view.buffer, set()).add(gradient)
        read = {b.buffer for s in steps if isinstance(s, Launch) for b in s.bindings if b.access != "read_write"}
        chosen = set()
        for gradient, view in gradients.items():
            if view is None or view.is_constant:
                continue
            buffer = buffers[view.buffer]
            whole = view.is_dense and view.size == buffer.elements and buffer.dtype == "float32"
            if whole and len(owners[view.buffer]) == 1 and view.buffer not in uploaded and view.buffer not in read:
                chosen.add(gradient)
        return chosen

    def _entry(self):
        if isinstance(self.optimizer, optim.SGD):
            return "sgd_momentum" if self.optimizer.momentum != 0.0 else "sgd"
        return "adam"

    def _words(self, count):
        """This step's parameter words for an update launch over ``count`` elements."""
        o = self.optimizer
        f32 = np.float32
        lr = o.rate(self.steps)  # this step's rate: the schedule's, as the host's step asks it
        if isinstance(o, optim.SGD):
            flags = (2 if self.steps == 0 else 0) | (4 if o.nesterov else 0)
            return [count, flags, f32(lr), f32(o.momentum), f32(1.0 - o.dampening), f32(o.weight_decay)]
        beta1, beta2 = o.betas
        step = self.steps + 1
        correction1 = 1.0 - beta1**step
        correction2 = 1.0 - beta2**step
        return [
            count,
            1 if o.decoupled else 0,
            f32(lr),
            f32(beta1),
            f32(beta2),
            f32(o.weight_decay),
            f32(o.eps),
            f32(lr / correction1),
            f32(math.sqrt(correction2)),
            f32(1.0 - beta1),
            f32(1.0 - beta2),
            f32(1.0 - lr * o.weight_decay),
        ]

    def step(self, feeds=None):
        """One training step; returns a ``PlanRun`` holding the readables (the loss) of this step."""
        plan = self.plan
        feeds = plan.network.check_feeds(feeds)
        for count, launch in self._updates:
            words = [float(w) if isinstance(w, np.floating) else w for w in self._words(count)]
            self.runner.write_params(self._program, launch, pack(words))
        executor = self._executor
        # The very arrays of the first step: resident uploads skip them after it.
        values = executor.source_values(self._initial, feeds)
        before = self.runner.counts()
        self.runner.run(self._program, values, executor.host_step)
        after = self.runner.counts()
        self._counts = {name: after[name] - before[name] for name in after}
        self.steps += 1
        results = {index: freeze(values[index]) for index in plan.readables}  # read back by this step alone
        return PlanRun(plan, results, dict(self._executor_backends), self._program.device_bytes // 4, None)

    def counts(self):
        """What the last step asked of the device, as the runner counted it: ``{"dispatches", "submits",
        "readbacks", "uploads", "uploaded_bytes", "read_bytes"}`` (None before the first step). A step
        is one submission and one read-back (the loss) when the device runs every node."""
        return dict(self._counts) if self._counts is not None else None

    def program_counts(self):
        """What every step asks of the device, read from the step's program (``run_counts``):
        ``{"dispatches", "submits", "readbacks"}``."""
        return run_counts(self._program)

    def describe(self):
        """The kernel reading of a step: the plan's launches (as ``plan.kernels().describe()`` shows them),
        then the optimizer's (one a bank of parameters), then what a step asks of the device."""
        counts = self.program_counts()
        updates = [
            f"{'update':<8}{'optimizer:' + launch.entry:<26}{plural(len(launch.nodes), 'parameter')}, {count} elements"
            for count, launch in self._updates
        ]
        return "\n".join(
            [self._reading.describe()]
            + updates
            + [
                f"a training step: {counts['dispatches']} dispatches ({len(self._updates)} updates), "
                f"{counts['submits']} submit(s), {counts['readbacks']} read-back(s)"
            ]
        )

    def parameters(self):
        """The parameters as they are on the device now, as a new ``Parameters`` table."""
        weights = {s.key: s.buffer for s in self._program.steps if isinstance(s, Upload)}
        arrays = {}
        for index in self._initial:
            node = self.plan.nodes[index]
            if index in weights:
                arrays[index] = self.runner.read_view(self._program, View.of_buffer(weights[index], node.shape))
        return self._template.replace(arrays) if arrays else Parameters(self.plan.network, dict(self._initial))

    def moments(self):
        """The optimizer's moments on the device now: {(parameter index, moment name): numpy array}
        (zeros before the first step, as ``optim``'s state starts)."""
        nodes = self.plan.nodes
        return {
            (index, moment): self.runner.read_view(self._program, View.of_buffer(buffer, nodes[index].shape))
            for (index, moment), buffer in self._moment_buffers.items()
        }

    def state(self):
        """The optimizer's state now, as ``optimizer.step`` would hold it (``state.save(path)`` keeps it)."""
        return trainer_state(self.optimizer, self._template, self._trained, self.steps, self.moments())
