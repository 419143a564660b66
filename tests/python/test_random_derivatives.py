"""Random programs of depth 2, held to XLA: the gradient of a function of a gradient.

Each program of ``test_random_programs`` (1 to 40 primitives, either dtype; 60 of them) is
reopened; ``topos.grad`` records the gradient of its loss with respect to every
parameter on the tape, and a second loss reads those gradients
(``sum(tanh(g) * g)``). The plan of the second loss and its backward (so a third
order of rules in all) is compiled and run by XLA and agrees with the numpy
interpreter as the random-program suite holds it, and its graph gradients equal
``Run.backward``'s bit for bit.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from test_random_programs import assert_xla_agrees, execute_plan, programs

import topos
from topos import detach


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs())
def test_the_gradient_of_a_function_of_a_gradient_agrees_with_xla_and_eager_gradients(program):
    network, _, loss = program
    tape = network.reopen()
    wrt = [tape.value(symbol) for symbol in network.parameter_symbols()]
    gradients = topos.grad(tape.value(loss), wrt)
    second = None
    for g in gradients:
        term = topos.sum(topos.tanh(g) * g)
        second = term if second is None else second + term
    deeper = tape.seal()
    second, gradients = detach(second), detach(gradients)
    parameters = deeper.parameters()
    plan = deeper.entry([second, *gradients]).backward(second).lower()
    result = plan.run(parameters)
    xla = execute_plan(plan, parameters, optimize=False)
    assert_xla_agrees(plan, parameters, result.outputs(), xla, deeper.dtype, deeper.describe())
    field = deeper.forward(parameters).backward(second)
    for index, _ in plan.gradients:
        symbol = deeper.symbol(index)
        assert np.asarray(result.gradient(symbol)).tobytes() == np.asarray(field.of(symbol)).tobytes()
