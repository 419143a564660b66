"""Playground runs are isolated: one Python serves every run (and every embed of a
page), and a run leaves no trace in what a later run sees.

Each case is a script A that changes one kind of process-wide state (a topos
function, class, table, registry or module entry; the runner's own output limit;
numpy's print options, error handling or legacy random state; Python's random
state, recursion limit, working directory or warning filters) and a script B that
reads it. B run after A must give exactly what B gives without A.

And output cut at the limit says so, where it was cut, with the count.
"""

import json

import pytest

from topos import playground
from topos.compiler.backends import backend_names
from topos.ops import lookup, primitives


@pytest.fixture(autouse=True)
def fresh_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def run(code):
    result = json.loads(playground.run(code))
    result.pop("timings")
    return result


RECORDS = """
import numpy as np
import topos
from topos import Tape

def build(tape):
    w = tape.parameter([[-1.0, 0.5], [2.0, -3.0]], name="w")
    return [w, topos.softmax(topos.relu(w) + topos.gelu(w.exp()), -1).sum()]

network, (w, total) = Tape.record(build)
print(network.describe())
print(network.forward(network.parameters(), {}).of(total))
"""

# name: (script A, script B)
CASES = {
    "a topos function rebound": (
        "import topos, topos.model.functions as f\nf.relu = lambda v: v\ntopos.relu = lambda v: v * 0.0\n",
        RECORDS,
    ),
    "a method replaced on a topos class": (
        "import topos\ntopos.Network.describe = lambda self: 'nothing to see'\n",
        RECORDS,
    ),
    "an attribute added to and one deleted from a topos class": (
        "import topos\ntopos.Tape.extra = 1\ndel topos.model.tape.Node.describe_row\n",
        "import topos\nprint(hasattr(topos.Tape, 'extra'), hasattr(topos.model.tape.Node, 'describe_row'))\n",
    ),
    "a topos function's code and defaults": (
        "import topos\n"
        "topos.text.format_shape.__code__ = (lambda shape: '?').__code__\n"
        "topos.text.plural.__defaults__ = ('things',)\n",
        RECORDS,
    ),
    "a registered primitive's attribute": (
        "from topos.ops import lookup\nlookup('Exp').forward = lambda inputs, attrs: inputs[0] * 0\n",
        RECORDS,
    ),
    "a table a topos module holds": (
        "import topos.compiler.stablehlo as s\ns.ELEMENT_TYPES['float64'] = 'f16'\n",
        RECORDS + "print(network.entry([total]).lower().emit_stablehlo())\n",
    ),
    "a name deleted from and one added to a topos module": (
        "import topos.show\ndel topos.show.lines\ntopos.show.extra = 1\n",
        "from topos import show\nshow.lines(['a', 'b'])\nprint(hasattr(show, 'extra'))\n",
    ),
    "a primitive and a backend registered": (
        "from topos.ops import registry\nfrom topos.compiler.backends import register_backend, NumpyExecutor\n"
        "class Twice(registry.Primitive):\n    name = 'TestIsolationTwice'\n    arity = 1\n"
        "registry.register(Twice)\nregister_backend('test-isolation', NumpyExecutor)\n",
        "from topos.ops import primitives\nfrom topos.compiler.backends import backend_names\n"
        "print('TestIsolationTwice' in primitives(), backend_names())\n",
    ),
    "sys.modules entries for topos": (
        "import sys, types\n"
        "sys.modules['topos.model.functions'] = types.ModuleType('impostor')\n"
        "sys.modules['topos.extra'] = types.ModuleType('topos.extra')\n",
        "import sys\nimport topos.model.functions as f\n"
        "print(f.__name__, hasattr(f, 'relu'), 'topos.extra' in sys.modules)\n" + RECORDS,
    ),
    "the runner's output limit": (
        "import topos.playground\ntopos.playground.MAX_OUTPUT_CHARACTERS = 5\n",
        "print('x' * 40)\n",
    ),
    "numpy's print options": (
        "import numpy as np\nnp.set_printoptions(precision=2, sign='+')\n",
        "import numpy as np\nprint(np.array([1 / 3, -2 / 3]))\n" + RECORDS,
    ),
    "numpy's error handling": (
        "import numpy as np\nnp.seterr(all='raise')\nnp.seterrcall(print)\n",
        "import numpy as np\nprint(np.geterr(), np.geterrcall())\nprint(np.array([1.0, 0.0]) / 0.0)\n",
    ),
    "numpy's legacy global random state": (
        "import numpy as np\nnp.random.seed(1)\nnp.random.rand(5)\n",
        "import numpy as np\nprint(np.random.rand(3), np.random.randint(1000))\n",
    ),
    "Python's random state": (
        "import random\nrandom.seed(3)\n",
        "import random\nprint(random.random())\n",
    ),
    "the recursion limit": (
        "import sys\nsys.setrecursionlimit(sys.getrecursionlimit() + 1234)\n",
        "import sys\nprint(sys.getrecursionlimit())\n",
    ),
    "the working directory": (
        "import os\nos.mkdir('elsewhere')\nos.chdir('elsewhere')\n",
        "import os\nprint(os.path.basename(os.getcwd()))\n",
    ),
    "the warning filters": (
        "import warnings\nwarnings.simplefilter('error')\n",
        "import warnings\nwarnings.warn('careful')\nprint('went on')\n",
    ),
}


# The probes divide by zero and warn on purpose; pytest need not report it.
@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value", "ignore:careful")
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_leaves_no_trace_in_the_next(case):
    script_a, script_b = CASES[case]
    alone = run(script_b)
    assert alone["error"] is None, alone["error"]
    changed = run(script_a)
    assert changed["error"] is None, changed["error"]
    assert run(script_b) == alone


def test_what_a_run_changed_holds_during_that_run():
    # The isolation is between runs: within one, the script's own changes stand.
    result = run(CASES["numpy's print options"][0] + "print(np.array([1 / 3]))\n")
    assert result["output_text"] == "[+0.33]\n"


def test_the_limit_a_run_uses_is_the_one_it_started_with():
    result = run("import topos.playground\ntopos.playground.MAX_OUTPUT_CHARACTERS = 5\nprint('x' * 40)\n")
    assert result["output_text"] == "x" * 40 + "\n"
    assert playground.MAX_OUTPUT_CHARACTERS == 200_000


def test_the_webgpu_report_after_a_run_still_has_the_primitives_it_registered():
    script = (
        "import numpy as np\nfrom topos import Tape\nfrom topos.ops import Primitive, Meta, register\n"
        "@register\nclass Twice(Primitive):\n    name = 'TestIsolationBridge'\n    arity = 1\n"
        "    def infer(self, metas, attrs):\n        return Meta(metas[0].shape, metas[0].dtype)\n"
        "    def forward(self, inputs, attrs):\n        return inputs[0] * 2\n"
        "    def vjp(self, e, g, operands, out, attrs):\n        return [e.mul(g, e.like(g, 2.0))]\n"
        "tape = Tape()\nw = tape.parameter([1.0, 2.0])\ntwice = tape.apply('TestIsolationBridge', [w])\n"
        "loss = twice.sum()\n"
    )
    result = run(script)
    assert result["error"] is None, result["error"]
    # float64: the program is host steps alone, and its host computes the script's own primitive.
    report = json.loads(playground.webgpu_report_json())
    assert report["ran"] is True, report
    assert report["outputs"] == [{"node": 2, "maxAbsDiff": 0.0}]
    assert "TestIsolationBridge" in primitives()
    run("print('next')\n")
    assert "TestIsolationBridge" not in primitives()


def test_changes_made_outside_runs_stand():
    # The host's own changes (a test's monkeypatch, say) are not the script's to undo.
    exp = lookup("Exp")
    try:
        exp.marker = "host"
        run("from topos.ops import lookup\nlookup('Exp').marker = 'script'\n")
        assert exp.marker == "host"
    finally:
        del exp.marker
    assert "test-isolation" not in backend_names()


# Output cut at the limit --------------------------------------------------------------------


def test_output_cut_at_the_limit_says_so_where_it_was_cut_with_the_count(monkeypatch):
    monkeypatch.setattr(playground, "MAX_OUTPUT_CHARACTERS", 50)
    code = (
        "from topos import show\n"
        "print('a' * 30)\n"  # 31 characters with the newline
        "print('b' * 30)\n"  # 19 kept, 12 cut
        "show.lines(['a card after the cut'])\n"
        "print('c' * 999)\n"  # 1,000 cut
    )
    result = run(code)
    cut = "… output cut here: 1,012 more characters not shown (the limit is 50)"
    assert result["output"] == [
        {"kind": "print", "text": "a" * 30 + "\n" + "b" * 19},
        {"kind": "print", "text": cut + "\n"},
        {"kind": "lines", "lines": ["a card after the cut"]},
    ]
    assert result["output_text"] == "a" * 30 + "\n" + "b" * 19 + "\n" + cut + "\na card after the cut\n"


def test_output_at_the_limit_is_not_cut(monkeypatch):
    monkeypatch.setattr(playground, "MAX_OUTPUT_CHARACTERS", 6)
    assert run("print('x' * 5)\n")["output_text"] == "xxxxx\n"
    assert run("print('x' * 6)\n")["output_text"] == (
        "xxxxxx\n… output cut here: 1 more character not shown (the limit is 6)\n"
    )


def test_putting_back_the_start_state_keeps_the_packages_bindings_of_their_submodules():
    # The start state is noted while topos.playground is still being imported, before the
    # import system binds it on the topos package: putting that state back must not unbind it.
    import topos as package

    playground.PROCESS_STATE.restore()
    assert package.playground is playground
    assert package.playground.state is playground.state
