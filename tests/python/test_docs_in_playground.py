"""Every docs code block, run the way a docs page's embed runs it (``topos.playground.run``),
prints the output the built docs show (by docs/tools/output_agreement.py's rule) (docs/generated/<page>.json, made by
the docs builder running the block as a script), and does so again on a second run
in the same Python: the embeds of a docs page share one Python, so a block that
registers a primitive or sets numpy's print options must not change the next run.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from topos import Graph, Tape, playground, show

GENERATED = Path(__file__).resolve().parents[2] / "docs" / "generated"
sys.path.insert(0, str(GENERATED.parent / "tools"))

import output_agreement  # noqa: E402

MAIN_GUARD = 'if __name__ == "__main__":'


def live_blocks():
    pages = json.loads((GENERATED / "pages.json").read_text(encoding="utf-8"))["pages"]
    for page in pages:
        parts = json.loads((GENERATED / page["file"]).read_text(encoding="utf-8"))["parts"]
        # A block marked nobrowser needs jax, which neither the browser nor the embeds' Python has.
        yield from (part for part in parts if part["kind"] == "code" and part["live"] and part.get("browser", True))


@pytest.fixture
def restored_afterwards(tmp_path, monkeypatch):
    # Blocks write checkpoints into the working directory: give them a fresh one.
    monkeypatch.chdir(tmp_path)
    yield
    # A block may register a primitive; the next run would drop it, but other tests in this process must not see it.
    playground.PROCESS_STATE.restore()


def run(code):
    return json.loads(playground.run(code))


def test_every_block_prints_what_the_docs_show_twice_in_one_python(restored_afterwards):
    blocks = list(live_blocks())
    assert len(blocks) > 30
    compared = 0
    for block in blocks:
        for attempt in ("first", "second"):
            result = run(block["code"])
            assert result["error"] is None, f"{block['id']} ({attempt} run): {result['error']}"
            # A script's __main__ part runs in the docs build, and not in the playground (by design).
            if MAIN_GUARD in block["code"]:
                continue
            problem = output_agreement.first_disagreement(block["output_text"], result["output_text"])
            assert problem is None, f"{block['id']} ({attempt} run): {problem}"
            compared += 1
    guarded = [block["id"] for block in blocks if MAIN_GUARD in block["code"]]
    assert compared == 2 * (len(blocks) - len(guarded))
    # The gallery's training examples (docs/playground.md, "Training and the readings") and that section's own example.
    examples = Path(__file__).resolve().parents[2] / "docs" / "examples"
    training = [path.name for path in examples.glob("[0-9]*.py") if MAIN_GUARD in path.read_text(encoding="utf-8")]
    assert all(name.startswith(("gallery-", "playground-")) for name in guarded), guarded
    assert len(guarded) <= len(training) + 1, (guarded, training)


REGISTERS_A_PRIMITIVE = """
import numpy as np
from topos import Tape
from topos.compiler import Primitive, register

@register
class Twice(Primitive):
    name = "Twice"
    arity = 1

    def infer(self, metas, attrs):
        return metas[0]

    def forward(self, inputs, attrs):
        return 2 * inputs[0]

    def vjp(self, e, g, operands, out, attrs):
        return [e.mul(g, e.leaf(2.0))]

tape = Tape()
x = tape.input(np.ones(3))
y = tape.apply("Twice", [x])
print(y.shape, tape.describe().splitlines()[-2])
"""


def test_a_script_that_registers_a_primitive_runs_again(restored_afterwards):
    first = run(REGISTERS_A_PRIMITIVE)
    if first["error"] is not None:
        pytest.fail(f"the script itself is wrong: {first['error']}")
    second = run(REGISTERS_A_PRIMITIVE)
    assert second["error"] is None, second["error"]
    assert second["output_text"] == first["output_text"]


def test_print_options_set_by_one_run_do_not_reach_the_next(restored_afterwards):
    values = "import numpy as np\nprint(np.array([1 / 3, 2 / 3]))\n"
    assert run("import numpy as np\nnp.set_printoptions(precision=2)\n" + values)["output_text"] == "[0.33 0.67]\n"
    with np.printoptions(**playground.PROCESS_STATE.print_options):
        expected = str(np.array([1 / 3, 2 / 3])) + "\n"
    assert run(values)["output_text"] == expected


def test_output_text_puts_each_card_on_lines_of_its_own(restored_afterwards):
    tape = Tape()
    w = tape.parameter(2.0)
    (w * w).exp()
    graph_text = str(show.graph(Graph.from_nodes(tape.nodes())))
    code = (
        "from topos import Graph, Tape, show\n"
        "tape = Tape()\nw = tape.parameter(2.0)\n(w * w).exp()\n"
        "print('no newline', end='')\n"
        "show.graph(Graph.from_nodes(tape.nodes()))\n"
        "show.lines(['a', 'b'])\n"
        "print('after')\n"
    )
    assert run(code)["output_text"] == f"no newline\n{graph_text}\na\nb\nafter\n"
