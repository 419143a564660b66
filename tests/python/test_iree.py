"""IREE compiles the same StableHLO text: a second consumer of the emitter, besides XLA.

The gallery's forward+backward plans compile with ``iree-compile
--iree-hal-target-backends=llvm-cpu`` (through ``iree.compiler``, which runs that
tool) for a generic x86-64 CPU, run on IREE's ``local-task`` driver through its
Python runtime, and agree with the numpy interpreter in float32. IREE is handed the
portable text (``plan.emit_stablehlo(portable=True)``): the default text's
``stablehlo.cholesky``, ``stablehlo.triangular_solve`` and XLA CPU's LAPACK custom calls
are XLA's own and IREE refuses them ("failed to legalize"), which the portable form
writes as ``stablehlo.while`` loops of ops IREE has (docs/linalg.md). So the Gaussian
process (Cholesky, triangular solves, LU) and the PCA (Jacobi eigh and SVD) run too.

Float64 is where IREE stops, and the last test says exactly how: by default
``iree-compile`` demotes f64 to f32 in the module's signature, so float64 arguments
are refused at the call; with the demotion off, ``tanh`` in f64 fails to link
(IREE's CPU runtime has no f64 ``tanh``). A float64 plan of plain arithmetic
compiles and agrees without the demotion.
"""

import iree.compiler
import iree.runtime
import numpy as np
import pytest
from test_plan_gallery import EXAMPLES, assert_float32_outputs_agree, example
from test_stablehlo import assert_outputs_agree

import topos
from topos import Tape

# A generic CPU: the same code on any x86-64 machine (and no warning asking to choose one).
FLAGS = ["--iree-llvmcpu-target-cpu=generic"]
KEEP_F64 = ["--iree-input-demote-f64-to-f32=false"]


def compile_for_cpu(text, extra=()):
    return iree.compiler.compile_str(
        text, target_backends=["llvm-cpu"], input_type="stablehlo", extra_args=[*FLAGS, *extra]
    )


def run_on_iree(binary, arguments):
    module = iree.runtime.load_vm_flatbuffer(binary, driver="local-task")
    results = module.main(*arguments)
    results = results if isinstance(results, (list, tuple)) else [results]
    return [np.asarray(result.to_host()) for result in results]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_gallery_forward_backward_plans_agree_with_the_interpreter_in_float32(path):
    network, readables, loss, feeds = example(path, "float32")
    parameters = network.parameters()
    entry = network.entry(readables)
    plan = entry.backward(loss).lower() if loss is not None else entry.lower()
    got = run_on_iree(compile_for_cpu(plan.emit_stablehlo(portable=True)), plan.argument_values(parameters, feeds))
    expected, what = plan.run(parameters, feeds).outputs(), f"{path.stem} {plan.summary()}"
    assert_float32_outputs_agree(plan, parameters, feeds, expected, got, what)


@pytest.mark.parametrize("op", ["cholesky", "triangular_solve", "custom_call"])
def test_the_default_text_keeps_what_iree_refuses_and_the_portable_text_runs(op):
    """The default reading is for XLA on a CPU; IREE refuses its linear-algebra ops by name, and
    takes the same plan's portable text."""

    def build(tape):
        a = tape.input(np.array([[4.0, 1.0], [1.0, 3.0]]), name="a")
        if op == "cholesky":
            return [topos.linalg.cholesky(a)]
        if op == "triangular_solve":
            return [topos.linalg.triangular_solve(a, a)]
        return [topos.linalg.eigvalsh(a)]

    network, outs = Tape.record(build, dtype="float32")
    plan = network.entry(outs).lower()
    with pytest.raises(iree.compiler.CompilerToolError, match=f"failed to legalize operation 'stablehlo.{op}'"):
        compile_for_cpu(plan.emit_stablehlo())
    got = run_on_iree(compile_for_cpu(plan.emit_stablehlo(portable=True)), plan.argument_values(network.parameters()))
    assert_outputs_agree(plan.run(network.parameters()).outputs(), got, "float32", op)


def _plan(function):
    def build(tape):
        x = tape.input(np.linspace(-1.0, 1.0, 4), name="x")
        w = tape.parameter(np.full(4, 0.5), name="w")
        return function(x * w).sum()

    network, total = Tape.record(build, dtype="float64")
    return network, network.entry([total]).backward(total).lower()


def test_float64_is_demoted_by_default_and_has_no_tanh_without_the_demotion():
    network, plan = _plan(topos.tanh)
    text, arguments = plan.emit_stablehlo(), plan.argument_values(network.parameters())
    # By default the module's signature becomes f32: float64 arguments are refused at the call.
    with pytest.raises(ValueError, match=r"input0 element type mismatch; expected f32 .* but have f64"):
        run_on_iree(compile_for_cpu(text), arguments)
    # Without the demotion, f64 tanh is a call to a libm function IREE's CPU executables lack.
    with pytest.raises(iree.compiler.CompilerToolError, match="undefined symbol: tanh"):
        compile_for_cpu(text, KEEP_F64)


def test_float64_arithmetic_without_the_demotion_agrees_with_the_interpreter():
    network, plan = _plan(lambda value: value * value - value)
    arguments = plan.argument_values(network.parameters())
    got = run_on_iree(compile_for_cpu(plan.emit_stablehlo(), KEEP_F64), arguments)
    assert_outputs_agree(plan.run(network.parameters()).outputs(), got, "float64", "x * x - x in float64")
