"""One interpreter: the model's forward and backward and the compiler's numpy backend run the same code.

``Network.forward`` and ``Run.backward`` reach the interpreter by imports the layers show
(``topos.model.interpreter``, ``topos.model.lowering``), not through the entry class the
compiler registers with the model; the compiler's ``Plan`` is the interpreter's ``Schedule``.
"""

import numpy as np

import topos
from topos import Tape
from topos.compiler.interpreter import NumpyExecutor
from topos.model import network as network_module
from topos.model.interpreter import PreparedPlan, Schedule


def record():
    def build(tape):
        w = tape.parameter(np.linspace(-1.0, 1.0, 6).reshape(2, 3), name="w")
        x = tape.input(np.arange(6.0).reshape(3, 2) / 5.0, name="x")
        return [w, x, topos.sum(topos.tanh(w @ x))]

    return Tape.record(build)


def test_forward_and_backward_run_and_prepare_without_the_compilers_entry_class(monkeypatch):
    network, (w, x, loss) = record()
    parameters = network.parameters()
    first = network.forward(parameters)
    want_loss, want_gradient = first.of(loss).numpy(), first.backward(loss).of(w).numpy()
    # Without the class the compiler registers, network.entry cannot work; forward and backward still do.
    monkeypatch.setattr(network_module, "_entry_class", None)
    for _ in range(3):  # the second and third go through the prepared plans
        run = network.forward(parameters)
        assert np.array_equal(run.of(loss).numpy(), want_loss)
        assert np.array_equal(run.backward(loss).of(w).numpy(), want_gradient)
    assert isinstance(network._prepared["forward"], PreparedPlan)
    assert isinstance(network._prepared[network.index_of(loss)], PreparedPlan)


def test_a_plan_is_the_interpreters_schedule_and_its_second_run_is_prepared():
    network, (w, x, loss) = record()
    plan = network.entry([loss]).backward(loss).lower()
    assert isinstance(plan, Schedule)
    runs = [NumpyExecutor(plan).run_plan(network.parameters(), {}) for _ in range(2)]
    assert runs[0].arena_bytes is None and runs[1].arena_bytes is not None  # plain once, then prepared
    assert plan.runs["outputs"] is plan.prepared()
    assert np.array_equal(runs[0].gradient(w).numpy(), runs[1].gradient(w).numpy())
