"""Data-parallel runs on XLA's SPMD partitioner: one module, the batch split over N devices.

``DataParallel(plan, batch_axes, devices)`` annotates the plan's StableHLO text
(``topos.compiler.sharding.shard_batch``), compiles it once for ``devices``
devices with the Shardy partitioner, and runs it on whole arrays: each argument
named in ``batch_axes`` is split along its axis, one slice a device; the other
arguments are copied to every device. XLA partitions the program and inserts
the all-reduces, so every device ends with the same readables and gradients,
which equal the single-device ones up to float rounding::

    parallel = DataParallel(plan, {points: 0, labels: 0}, devices=8)
    readables, gradients = parallel.run(parameters, feeds)
    parameters, state = optimizer.step(parameters, gradients, state)

There the optimizer's update runs on the host (numpy), once, on the all-reduced
gradients. ``DataParallelTrainer(plan, parameters, optimizer, batch_axes, devices)``
runs the whole step as one partitioned program instead (the training step of
``topos.compiler.training_step``): the parameters and moments stay on the devices,
a copy on each, and every device applies the same update to the all-reduced
gradients. topos does not start processes or talk to other hosts: a multi-host
run is jax's (``jax.distributed.initialize()``, one process a host) with the
same annotated module.

On a CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` set before jax
is imported makes eight host devices to try it on.
"""

import numpy as np

from ..compiler.executor import PlanRun
from ..compiler.plan import Plan
from ..compiler.sharding import MESH_AXIS, annotate, shard_batch, split_positions
from ..compiler.training_step import emit_training_step
from ..errors import ArgumentError, ArgumentTypeError
from ..model.network import Gradients
from ..model.nodes import source_value
from ..model.optim_files import trainer_state
from ..tensor import freeze
from .runtime import client, compile_module
from .trainer import resumed


def compile_partitioned(text, devices):
    """``(executable, compile_ms, mesh)``: annotated ``text`` compiled for the first ``devices``
    devices with XLA's SPMD partitioner (Shardy), and the one-axis mesh of those devices."""
    jax, backend = client()  # XLAUnavailableError, naming the extra, without jax
    from jax._src.lib import xla_client

    available = backend.devices()
    if len(available) < devices:
        raise ArgumentError(
            f"XLA offers {len(available)} device(s) and this run asks for {devices}; on a CPU, set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={devices} before jax is imported"
        )
    chosen = available[:devices]
    options = xla_client.CompileOptions()
    options.num_partitions = devices
    build = options.executable_build_options
    build.num_partitions = devices
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True  # the module's sdy.sharding attributes are Shardy's
    build.device_assignment = xla_client.DeviceAssignment.create(np.arange(devices).reshape(1, -1))
    compiled = compile_module(text, chosen, options)
    return compiled.executable, compiled.compile_ms, jax.sharding.Mesh(np.array(chosen), (MESH_AXIS,))


def placed(mesh, value, axis=None):
    """``value`` on the mesh's devices: split along ``axis``, or (None) a copy on each."""
    jax = client()[0]
    value = np.asarray(value)
    spec = [MESH_AXIS if a == axis else None for a in range(value.ndim)]
    return jax.device_put(value, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec)))


class DataParallel:
    """A plan compiled for ``devices`` devices with the arguments in ``batch_axes`` split along their axes.

    Attributes: ``plan``; ``devices`` (how many); ``text`` (the annotated module);
    ``compile_ms`` (how long XLA took to compile it; None until the first run compiles it).
    """

    def __init__(self, plan, batch_axes, devices):
        self.plan = plan
        self.devices = devices
        self.text = shard_batch(plan, batch_axes, devices)
        self.batch_axes = {
            getattr(source, "index", source): axis % len(plan.nodes[getattr(source, "index", source)].shape)
            for source, axis in batch_axes.items()
        }
        self.compile_ms = None
        self._executable = None
        self._mesh = None

    def _compile(self):
        self._executable, self.compile_ms, self._mesh = compile_partitioned(self.text, self.devices)

    def partitioned_text(self):
        """The module XLA compiled, after partitioning (HLO text: per-device shapes, its all-reduces)."""
        if self._executable is None:
            self._compile()
        return "\n".join(module.to_string() for module in self._executable.hlo_modules())

    def outputs(self, parameters, feeds=None):
        """The plan's results as numpy arrays: the readables, then the gradients (as ``emit_stablehlo``)."""
        if self._executable is None:
            self._compile()
        arrays = [
            placed(self._mesh, value, self.batch_axes.get(index))
            for index, value in zip(self.plan.arguments(), self.plan.argument_values(parameters, feeds))
        ]
        results = self._executable.execute_sharded(arrays).disassemble_into_single_device_arrays()
        # Every result is replicated: the first device's copy is the whole value.
        return [np.asarray(copies[0]) for copies in results]

    def run(self, parameters, feeds=None):
        """``(readables, gradients)``: the readables' arrays, and the gradients as a ``Gradients`` table."""
        outputs = self.outputs(parameters, feeds)
        readables = outputs[: len(self.plan.readables)]
        gradients = outputs[len(self.plan.readables) :]
        slots = {wrt: array for (wrt, _), array in zip(self.plan.gradients, gradients) if wrt in parameters.slots}
        return readables, Gradients(self.plan.network, slots)


class DataParallelTrainer:
    """A whole training step (``topos.compiler.training_step``: forward, backward, the optimizer's
    update) as one program partitioned over ``devices`` devices, the batch split by ``batch_axes``.

    The parameters and the optimizer's moments stay on the devices, a copy on each, between steps;
    each step XLA all-reduces the gradients and every device applies the same update. Only the
    feeds (split) and the step's scalars go up, and only the readables come back. It answers as
    every trainer does (``XLATrainer``): ``step`` a ``PlanRun``, ``parameters()``, ``moments()``,
    ``state()``, and ``state=`` to go on from an optimizer's state.
    """

    def __init__(self, plan, parameters, optimizer, batch_axes, devices, state=None):
        if not isinstance(plan, Plan):
            raise ArgumentTypeError(
                "DataParallelTrainer takes a Plan (network.entry([...]).backward(loss).lower()), "
                f"got {type(plan).__name__}"
            )
        plan.network.check_parameters(parameters)
        self.plan = plan
        self.optimizer = optimizer
        self.devices = devices
        self.module = module = emit_training_step(plan, optimizer)
        self.steps, moments = resumed(module, parameters, state)
        nodes = plan.nodes
        split = split_positions(plan, batch_axes, devices, module.argument_nodes)
        moment_shapes = [nodes[index].shape for index in module.updated for _ in module.moments]
        ranks = [len(nodes[i].shape) for i in module.argument_nodes] + [len(s) for s in moment_shapes]
        ranks += [0] * len(module.scalars)
        result_ranks = [len(nodes[i].shape) for i in module.readables]
        result_ranks += [len(nodes[i].shape) for i in module.updated] + [len(s) for s in moment_shapes]
        self.text = annotate(module.text, devices, split, ranks, result_ranks)
        self.batch_axes = {module.argument_nodes[position]: axis for position, axis in split.items()}
        self._executable, self.compile_ms, self._mesh = compile_partitioned(self.text, devices)
        self._template = parameters
        self._parameters = {
            index: placed(self._mesh, parameters.slots[index])
            for index in module.argument_nodes
            if nodes[index].opcode == "Parameter"
        }
        self._moment_keys = [(index, moment) for index in module.updated for moment in module.moments]
        self._moments = {key: placed(self._mesh, moments[key]) for key in self._moment_keys}

    def step(self, feeds=None):
        """One training step on every device; returns a ``PlanRun`` holding the readables (the loss) of this step."""
        jax = client()[0]
        plan, module = self.plan, self.module
        feeds = plan.network.check_feeds(feeds)
        arguments = [
            self._parameters[index]
            if plan.nodes[index].opcode == "Parameter"
            else placed(self._mesh, source_value(plan.nodes[index], {}, feeds), self.batch_axes.get(index))
            for index in module.argument_nodes
        ]
        arguments += [self._moments[key] for key in self._moment_keys]
        arguments += [placed(self._mesh, value) for value in module.scalar_values(self.steps)]
        results = self._executable.execute_sharded(arguments).disassemble_into_single_device_arrays()
        replicated = jax.sharding.NamedSharding(self._mesh, jax.sharding.PartitionSpec())

        def whole(copies):
            return jax.make_array_from_single_device_arrays(copies[0].shape, replicated, copies)

        readables = len(module.readables)
        updated = len(module.updated)
        self._parameters.update(zip(module.updated, map(whole, results[readables : readables + updated])))
        self._moments.update(zip(self._moment_keys, map(whole, results[readables + updated :])))
        self.steps += 1
        # Every readable is replicated: the first device's copy is the whole value (copied: the run's own).
        values = {index: freeze(np.array(copies[0])) for index, copies in zip(module.readables, results)}
        run = PlanRun(plan, values, dict.fromkeys(plan.schedule, "xla"), None, None)
        run.compile_ms = self.compile_ms
        return run

    def parameters(self):
        """The parameters as they are on the devices now, as a new ``Parameters`` table."""
        return self._template.replace({index: np.array(array) for index, array in self._parameters.items()})

    def moments(self):
        """The optimizer's moments on the devices now: {(parameter index, moment name): numpy array}."""
        return {key: np.array(array) for key, array in self._moments.items()}

    def state(self):
        """The optimizer's state now, as ``optimizer.step`` would hold it (``state.save(path)`` keeps it)."""
        return trainer_state(self.optimizer, self._template, self.module.updated, self.steps, self.moments())
