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
"""

import numpy as np

from ..compiler.executor import PlanRun
from ..compiler.plan import Plan
from ..compiler.training_step import emit_training_step
from ..errors import ArgumentTypeError
from ..model.nodes import source_value
from ..tensor import freeze
from .fusion import fused_nodes
from .runtime import compile_module, to_device, to_host


class XLATrainer:
    """Runs a forward+backward plan and an optimizer step as one XLA program, step after step.

    The shape every trainer shares (``DataParallelTrainer``, ``topos.webgpu.DeviceTrainer``):
    ``step(feeds)`` returns a ``PlanRun`` of the step's readables; ``parameters()`` and
    ``moments()`` read copies back from the device, which later steps never change (nor
    the table the trainer was made from).
    """

    name = "xla"

    def __init__(self, plan, parameters, optimizer, optimize=True):
        if not isinstance(plan, Plan):
            raise ArgumentTypeError(
                f"XLATrainer takes a Plan (network.entry([...]).backward(loss).lower()), got {type(plan).__name__}"
            )
        plan.network.check_parameters(parameters)
        self.plan = plan
        self.optimizer = optimizer
        self.steps = 0
        self.module = emit_training_step(plan, optimizer)
        self.compiled = compile_module(self.module.text, optimize=optimize)
        self._template = parameters
        nodes = plan.nodes
        self._parameters = {
            index: to_device(parameters.slots[index])
            for index in self.module.argument_nodes
            if nodes[index].opcode == "Parameter"
        }
        self._moments = {
            (index, moment): to_device(np.zeros(nodes[index].shape, nodes[index].dtype))
            for index in self.module.updated
            for moment in self.module.moments
        }

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

    def fusions(self):
        """Which nodes XLA fused into one kernel in the training step: ``[(fusion name, (node index, ...)), ...]``
        (the update section's operations belong to no node and are left out)."""
        return fused_nodes(self.compiled.hlo_text(), self.module.rows)
