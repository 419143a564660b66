"""A whole training step as one StableHLO module: the plan's forward and backward, then the update.

``emit_training_step(plan, optimizer)`` lowers a forward+backward plan as
``emit_stablehlo`` does and writes, after it, an update section: for every
parameter the entry differentiates, the optimizer's update (``SGD``, ``Adam``,
``AdamW``) operation by operation in the order ``topos.model.optim`` evaluates
it, with its hyperparameters as constants of the parameter's dtype. The module
takes the plan's arguments, then each updated parameter's moments, then the
step's scalars (SGD's rate and "momentum has started", Adam's step size and bias
correction, AdamW's decay factor), which change from step to step and are
computed on the host as the optimizer computes them: the learning rate is an
argument, never a constant, so one compiled step runs any rate or schedule. It returns the readables, then the new parameters,
then the new moments; every parameter and moment argument is aliased to its
new value (``tf.aliasing_output``), so a runtime that donates them updates them
in place and nothing but the feeds, the scalars and the readables crosses to
the host.
"""

import math

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError
from ..model import optim
from .stablehlo import lower_plan, module_rows, scalar_literal, tensor_type

SCALAR_NAMES = {
    "neg_lr": "-lr, SGD's step (the rate of this step)",
    "decay": "1 - lr * weight_decay, AdamW's decoupled weight decay",
    "neg_step_size": "-lr / (1 - beta1**step), Adam's step size",
    "sqrt_bias_correction2": "sqrt(1 - beta2**step), Adam's second bias correction",
    "momentum_started": "whether SGD's momentum buffer holds a value (false on the first step)",
}


class TrainingStep:
    """The emitted module of one training step and the order of its arguments and results.

    ``text`` is the module; ``rows`` its lines, each with the nodes it is about
    (the update section's lines are about none); ``argument_nodes`` the plan's
    parameters and inputs in argument order; ``updated`` the parameters the step
    updates; ``moments`` the names of each one's moments (``exp_avg``, ...);
    ``scalars`` the step scalars, ``(name, dtype)``, that follow the moments;
    results are ``readables``, then the new ``updated`` parameters, then their
    moments (parameter by parameter, moment by moment).
    """

    def __init__(self, plan, optimizer, rows, argument_nodes, scalars):
        self.plan = plan
        self.optimizer = optimizer
        self.rows = rows
        self.text = "\n".join(line for line, _ in rows)
        self.argument_nodes = argument_nodes
        self.readables = tuple(plan.readables)
        self.updated = tuple(wrt for wrt, _ in plan.gradients if plan.nodes[wrt].opcode == "Parameter")
        self.moments = optimizer._moments()
        self.scalars = scalars

    def scalar_values(self, steps_taken):
        """The step scalars' values for the step after ``steps_taken`` steps, as 0-d arrays."""
        values = []
        lr = self.optimizer.rate(steps_taken)  # the schedule's rate, a Python float, as optim's step asks it
        for name, dtype in self.scalars:
            dtype = np.dtype(dtype)
            if name == "momentum_started":
                values.append(np.array(steps_taken > 0))
                continue
            if name == "neg_lr":
                values.append(np.array(dtype.type(-lr)))
                continue
            if name == "decay":
                values.append(np.array(dtype.type(1.0 - lr * self.optimizer.weight_decay)))
                continue
            beta1, beta2 = self.optimizer.betas
            step = steps_taken + 1
            # As topos.model.optim: Python floats, cast where they meet the arrays.
            if name == "neg_step_size":
                values.append(np.array(dtype.type(-(lr / (1.0 - beta1**step)))))
            else:
                values.append(np.array(dtype.type(math.sqrt(1.0 - beta2**step))))
        return values


def emit_training_step(plan, optimizer):
    """The ``TrainingStep`` of a forward+backward ``plan`` followed by ``optimizer``'s update."""
    if plan.target is None:
        raise ArgumentError(
            "a training step needs a forward+backward plan: network.entry([...]).backward(loss).lower()"
        )
    if not isinstance(optimizer, (optim.SGD, optim.Adam, optim.AdamW)):
        raise ArgumentTypeError(f"a training step runs SGD, Adam and AdamW; got {type(optimizer).__name__}")
    nodes = plan.nodes
    ctx = lower_plan(plan)
    argument_nodes = list(plan.arguments())
    gradients = dict(plan.gradients)
    updated = [wrt for wrt, _ in plan.gradients if nodes[wrt].opcode == "Parameter"]
    for index in updated:
        if index not in ctx.names:  # a parameter the loss does not read: its gradient is a constant zero
            ctx.names[index] = ctx.argument(nodes[index])
            argument_nodes.append(index)
    writer = _UpdateWriter(ctx)
    moment_names = optimizer._moments()
    moments = {
        (index, moment): writer.argument(nodes[index].shape, nodes[index].dtype)
        for index in updated
        for moment in moment_names
    }
    scalars = _scalars(optimizer, sorted({nodes[index].dtype for index in updated}))
    scalar_arguments = {(name, dtype): writer.argument((), dtype) for name, dtype in scalars}

    new_values = {}
    for index in updated:
        node = nodes[index]
        update = _Update(writer, node.shape, node.dtype, scalar_arguments)
        param, grad = ctx.names[index], ctx.names[gradients[index]]
        state = {moment: moments[(index, moment)] for moment in moment_names}
        if isinstance(optimizer, optim.SGD):
            new_values[index] = _sgd(update, optimizer, param, grad, state)
        else:
            new_values[index] = _adam(update, optimizer, param, grad, state)

    results = [(ctx.names[i], ctx.type(nodes[i])) for i in plan.readables]
    aliased = {}
    for index in updated:
        aliased[ctx.names[index]] = len(results)
        results.append((new_values[index][0], ctx.type(nodes[index])))
    for index in updated:
        for moment in moment_names:
            aliased[moments[(index, moment)]] = len(results)
            results.append((new_values[index][1][moment], ctx.type(nodes[index])))
    attributes = {name: f"{{tf.aliasing_output = {position} : i32}}" for name, position in aliased.items()}
    rows = module_rows(ctx, results, attributes)
    return TrainingStep(plan, optimizer, rows, tuple(argument_nodes), tuple(scalars))


def _scalars(optimizer, dtypes):
    if isinstance(optimizer, optim.SGD):
        started = [("momentum_started", "bool")] if optimizer.momentum != 0.0 else []
        return started + [("neg_lr", dtype) for dtype in dtypes]
    names = ("neg_step_size", "sqrt_bias_correction2")
    if optimizer.decoupled and optimizer.weight_decay != 0.0:
        names += ("decay",)
    return [(name, dtype) for dtype in dtypes for name in names]


class _UpdateWriter:
    """Writes the update section's lines into a ``Lowering`` (about no node) and adds its arguments."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.count = 0

    def emit(self, text):
        self.count += 1
        name = f"%update{self.count}"
        self.ctx.lines.append([name, text, None])
        return name

    def argument(self, shape, dtype):
        name = f"%arg{len(self.ctx.arguments)}"
        self.ctx.arguments.append((name, tensor_type(shape, dtype)))
        return name


class _Update:
    """Elementwise operations on values of one parameter's shape and dtype."""

    def __init__(self, writer, shape, dtype, scalar_arguments):
        self.writer = writer
        self.shape = shape
        self.dtype = dtype
        self.type = tensor_type(shape, dtype)
        self.scalar_arguments = scalar_arguments

    def op(self, name, *operands):
        return self.writer.emit(f"stablehlo.{name} {', '.join(operands)} : {self.type}")

    def constant(self, value):
        """A hyperparameter as the optimizer casts it: a scalar of the parameter's dtype, everywhere."""
        literal = scalar_literal(np.dtype(self.dtype).type(value), self.dtype)
        return self.writer.emit(f"stablehlo.constant dense<{literal}> : {self.type}")

    def step_scalar(self, name, dtype=None):
        """The step scalar ``name`` spread over the parameter's shape."""
        dtype = dtype or self.dtype
        argument = self.scalar_arguments[(name, dtype)]
        return self.writer.emit(
            f"stablehlo.broadcast_in_dim {argument}, dims = [] : "
            f"({tensor_type((), dtype)}) -> {tensor_type(self.shape, dtype)}"
        )

    def select(self, predicate, on_true, on_false):
        return self.writer.emit(
            f"stablehlo.select {predicate}, {on_true}, {on_false} : {tensor_type(self.shape, 'bool')}, {self.type}"
        )


def _sgd(u, optimizer, param, grad, state):
    """``SGD._update`` in StableHLO; returns (new parameter, {moment: new value})."""
    new_state = {}
    if optimizer.weight_decay != 0.0:
        grad = u.op("add", grad, u.op("multiply", u.constant(optimizer.weight_decay), param))
    if optimizer.momentum != 0.0:
        buffer = state["momentum_buffer"]
        steady = u.op(
            "add",
            u.op("multiply", buffer, u.constant(optimizer.momentum)),
            u.op("multiply", u.constant(1.0 - optimizer.dampening), grad),
        )
        # The first step starts the buffer at the gradient itself.
        buffer = u.select(u.step_scalar("momentum_started", "bool"), steady, grad)
        new_state["momentum_buffer"] = buffer
        if optimizer.nesterov:
            grad = u.op("add", grad, u.op("multiply", u.constant(optimizer.momentum), buffer))
        else:
            grad = buffer
    new_param = u.op("add", param, u.op("multiply", u.step_scalar("neg_lr"), grad))
    return new_param, new_state


def _adam(u, optimizer, param, grad, state):
    """``_AdamBase._update`` in StableHLO; returns (new parameter, {moment: new value})."""
    beta1, beta2 = optimizer.betas
    if optimizer.weight_decay != 0.0:
        if optimizer.decoupled:
            param = u.op("multiply", param, u.step_scalar("decay"))
        else:
            grad = u.op("add", grad, u.op("multiply", u.constant(optimizer.weight_decay), param))
    # exp_avg.lerp_(grad, 1 - beta1), as PyTorch's lerp evaluates it.
    weight = np.dtype(u.dtype).type(1.0 - beta1)
    difference = u.op("subtract", grad, state["exp_avg"])
    if abs(weight) < 0.5:
        exp_avg = u.op("add", state["exp_avg"], u.op("multiply", u.constant(weight), difference))
    else:
        exp_avg = u.op("subtract", grad, u.op("multiply", difference, u.constant(weight.dtype.type(1.0) - weight)))
    squared = u.op("multiply", u.op("multiply", u.constant(1.0 - beta2), grad), grad)
    exp_avg_sq = u.op("add", u.op("multiply", state["exp_avg_sq"], u.constant(beta2)), squared)
    denominator = u.op("divide", u.op("sqrt", exp_avg_sq), u.step_scalar("sqrt_bias_correction2"))
    denominator = u.op("add", denominator, u.constant(optimizer.eps))
    update = u.op("divide", u.op("multiply", u.step_scalar("neg_step_size"), exp_avg), denominator)
    new_param = u.op("add", param, update)
    return new_param, {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
