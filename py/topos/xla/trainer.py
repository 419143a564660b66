"""Training on XLA, a whole step as one program: parameters and moments stay on the device.

``XLATrainer`` compiles the plan's training step (``topos.compiler.training_step``:
forward, backward and the optimizer's update in one StableHLO module) once, and
each ``step`` runs it on the parameters and moments it holds as device arrays.
The module aliases every parameter and moment to its new value and the
executable consumes (donates) the old arrays, so XLA updates them in place; only
the feeds and the step's scalars go up and only the readables (the loss) come
back. ``trainer.parameters()`` reads the parameters back when they are wanted.

```python
plan = network.entry([loss]).backward(loss).lower()
trainer = XLATrainer(plan, network.parameters(), optim.AdamW(lr=1e-3))
for step in range(100):
    run = trainer.step({tokens: inputs, targets: expected})
    print(run.of(loss))
parameters = trainer.parameters()
```

``trainer.state()`` is the optimizer's state as the host's step would hold it
(``state.save(path)`` keeps it), and ``XLATrainer(plan, parameters, optimizer,
state=state)`` goes on from one: saved after 50 steps and resumed, a run takes
the same 50 steps after as the run never stopped, bit for bit.
"""

import numpy as np

from ..compiler.executor import PlanRun
from ..compiler.plan import Plan
from ..compiler.training_step import emit_training_step
from ..errors import ArgumentTypeError
from ..model.nodes import source_value
from ..model.optim_files import trainer_moments, trainer_state
from ..tensor import freeze
from .fusion import fused_nodes
from .runtime import compile_module, to_device, to_host


class XLATrainer:
    """Runs a forward+backward plan and an optimizer step as one XLA program, step after step.

    The shape every trainer shares (``DataParallelTrainer``, ``topos.webgpu.DeviceTrainer``):
    ``step(feeds)`` returns a ``PlanRun`` of the step's readables; ``parameters()`` and
    ``moments()`` read copies back from the device, which later steps never change (nor
    the table the trainer was made from); ``state()`` is the optimizer's state, and
    ``state=`` (an ``OptimizerState``: ``state()``, ``optimizer.load_state``) starts from one.
    """

    name = "xla"

    def __init__(self, plan, parameters, optimizer, optimize=True, state=None):
        if not isinstance(plan, Plan):
            raise ArgumentTypeError(
                f"XLATrainer takes a Plan (network.entry([...]).backward(loss).lower()), got {type(plan).__name__}"
            )
        plan.network.check_parameters(parameters)
        self.plan = plan
        self.optimizer = optimizer
        self.module = emit_training_step(plan, optimizer)
        self.steps, moments = resumed(self.module, parameters, state)
        self.compiled = compile_module(self.module.text, optimize=optimize)
        self._template = parameters
        nodes = plan.nodes
        self._parameters = {
            index: to_device(parameters.slots[index])
            for index in self.module.argument_nodes
            if nodes[index].opcode == "Parameter"
        }
        self._moments = {key: to_device(value) for key, value in moments.items()}

    @property
    def compile_ms(self):
        """How long XLA took to compile the training step, in milliseconds (each step's run says it too)."""
        return self.compiled.compile_ms

    def step(self, feeds=None):
        """One training step; returns a ``PlanRun`` holding the readables (the loss) of this step,
        as the parameters were before its update, and ``compile_ms``."""
        plan, module = self.plan, self.module
        feeds = plan.network.check_feeds(feeds)
        arguments = []
        for index in module.argument_nodes:
            node = plan.nodes[index]
            if node.opcode == "Parameter":
                arguments.append(self._parameters[index])
            else:
                arguments.append(to_device(source_value(node, {}, feeds)))
        moment_keys = [(index, moment) for index in module.updated for moment in module.moments]
        arguments.extend(self._moments[key] for key in moment_keys)
        arguments.extend(to_device(value) for value in module.scalar_values(self.steps))
        results = self.compiled.execute(arguments)
        readables = len(module.readables)
        new_parameters = results[readables : readables + len(module.updated)]
        new_moments = results[readables + len(module.updated) :]
        self._parameters.update(zip(module.updated, new_parameters))
        self._moments.update(zip(moment_keys, new_moments))
        self.steps += 1
        values = {index: freeze(to_host(result)) for index, result in zip(module.readables, results)}
        backends = dict.fromkeys(plan.schedule, self.name)
        run = PlanRun(plan, values, backends, None, None)
        run.compile_ms = self.compiled.compile_ms
        return run

    def parameters(self):
        """The parameters as they are on the device now, as a new ``Parameters`` table."""
        arrays = {index: freeze(np.array(to_host(array))) for index, array in self._parameters.items()}
        return self._template.replace(arrays)

    def moments(self):
        """The optimizer's moments on the device now: {(parameter index, moment name): numpy array}."""
        return {key: np.array(to_host(array)) for key, array in self._moments.items()}

    def state(self):
        """The optimizer's state now, as ``optimizer.step`` would hold it (``state.save(path)`` keeps it)."""
        return trainer_state(self.optimizer, self._template, self.module.updated, self.steps, self.moments())

    def fusions(self):
        """Which nodes XLA fused into one kernel in the training step: ``[(fusion name, (node index, ...)), ...]``
        (the update section's operations belong to no node and are left out)."""
        return fused_nodes(self.compiled.hlo_text(), self.module.rows)


def resumed(module, parameters, state):
    """``(steps, moments)`` a trainer of the training step ``module`` starts from: zeros after no steps,
    or what ``state`` holds ({(parameter index, moment name): numpy array})."""
    if state is not None:
        return trainer_moments(module.optimizer, parameters, module.updated, state)
    nodes = module.plan.nodes
    zeros = {(i, m): np.zeros(nodes[i].shape, nodes[i].dtype) for i in module.updated for m in module.moments}
    return 0, zeros
