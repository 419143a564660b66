"""The HLO reading's training step: the gradient reading's plan and an Adam update, as one module.

The HLO reading's own text stays the forward plan's module (test_playground_rows.py
holds it to ``emit_stablehlo``); its ``step`` is ``emit_training_step`` of the
gradient reading's plan with ``STEP_OPTIMIZER``, as rows that name their nodes,
and XLA compiles it.
"""

import json
import re
from pathlib import Path

import pytest

from topos import playground
from topos.compiler.training_step import emit_training_step
from topos.model import optim
from topos.playground.readings import STEP_OPTIMIZER
from topos.xla import compile_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "docs" / "examples" / name for name in ("01_scalar_chain.py", "04_mlp.py")]

NO_GRADIENT = """\
import numpy as np
from topos import Tape

def build(tape):
    x = tape.input(np.ones((2, 3)), name="x")
    return (x * 2.0,)

network, (y,) = Tape.record(build)
"""


@pytest.fixture(scope="module", params=EXAMPLES, ids=[path.name for path in EXAMPLES])
def example(request):
    """``(the HLO reading, the readings it was made from)`` for one gallery example."""
    result = json.loads(playground.run(request.param.read_text(encoding="utf-8")))
    assert result["error"] is None, result["error"]
    return result["readings"]["hlo"], playground.latest_readings


def test_the_step_is_the_training_step_of_the_gradient_plan_with_adam(example):
    hlo, readings = example
    step = hlo["step"]
    assert "error" not in step, step.get("error")
    assert "\n".join(row["text"] for row in step["rows"]) == step["text"]
    assert isinstance(STEP_OPTIMIZER, optim.Adam) and STEP_OPTIMIZER.lr == 1e-3
    expected = emit_training_step(readings.gradient_plan(), optim.Adam(lr=1e-3))
    assert step["text"] == expected.text
    assert hlo["text"] == readings.plan().emit_stablehlo()  # the forward module, unchanged


def test_the_step_holds_the_update_and_its_plan_rows_name_their_nodes(example):
    hlo, readings = example
    rows = hlo["step"]["rows"]
    assert "tf.aliasing_output" in rows[1]["text"]  # parameters and moments updated in place
    updates = [row for row in rows if re.match(r"\s*%update\d+ = ", row["text"])]
    assert updates and all(row["nodes"] == [] for row in updates)
    plan = readings.gradient_plan()
    named = set()
    for row in rows:
        defined = re.match(r"\s*%v(\d+)(?:_\w+)? = ", row["text"])
        if defined:
            [node] = row["nodes"]
            assert int(defined.group(1)) == node, row
            named.add(node)
    arguments = set(plan.arguments())
    assert named == {index for index in plan.schedule if index not in arguments}


def test_xla_compiles_the_step(example):
    hlo, _ = example
    compiled = compile_module(hlo["step"]["text"], optimize=False)
    assert "ENTRY" in compiled.hlo_text()


def test_without_a_gradient_the_step_says_why_and_the_module_still_shows():
    result = json.loads(playground.run(NO_GRADIENT))
    assert result["error"] is None, result["error"]
    hlo = result["readings"]["hlo"]
    assert hlo["text"].startswith("module @topos {")
    assert hlo["step"]["error"] == result["readings"]["gradient"]["error"]  # the gradient reading's reason
    assert hlo["step"]["error"].startswith("ArgumentError: the gradient reading differentiates")
