"""The docs: every code block runs, and prints what the built docs show.

The heavy check reruns every live block of a page in a subprocess
(``build_docs.py --check <page>``) and compares its output, and the whole
rebuilt page, with docs/<page>.md and docs/generated/<page>.json as committed.
The other tests hold the builder to its own rules on small pages made here:
an output typed by hand is refused, a changed output is caught, a block cannot
see or disturb another.
"""

import fcntl
import functools
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = os.path.join(ROOT, "docs")
TOOLS = os.path.join(DOCS, "tools")
sys.path.insert(0, TOOLS)

import build_docs  # noqa: E402
import output_agreement  # noqa: E402
from docs_source import Code, DocsSourceError, parse_page, render_page  # noqa: E402
from run_block import run_block  # noqa: E402

PAGES = build_docs.existing_pages()
# The gallery's transformer trains for a few seconds; the rest take well under one.
CHECK_TIMEOUT_SECONDS = 120


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def page_parts(name):
    return parse_page(read(build_docs.page_path(name)), f"docs/{name}.md")


# The committed docs are what running them gives now --------------------------------------


# Each environment's check is one process over the selected pages (``build_docs.py --check
# --json``), not one process a page: the imports happen once. The two environments' processes
# start together, when the first page test asks, and run side by side; under xdist
# (tests/run-python.sh) only in the worker that asks first, so that each page is checked once
# in each environment.
CHECK_ENVIRONMENTS = {"this CPU": {}, "another CPU": build_docs.other_cpu_environment()}
CHECK_TESTS = {
    "this CPU": "test_page_outputs_are_what_its_blocks_print_now",
    "another CPU": "test_page_outputs_hold_on_another_cpu",
}


@functools.cache
def started_checks(selection):
    """``{label: process}`` checking the pages ``selection`` (``((label, pages), ...)``) names."""
    return {
        label: subprocess.Popen(
            [sys.executable, os.path.join(TOOLS, "build_docs.py"), "--check", "--json", *pages],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, **CHECK_ENVIRONMENTS[label]),
        )
        for label, pages in selection
        if pages
    }


@functools.cache
def finished_check(process):
    """``[problems by page or None, output]`` of one environment's check."""
    stdout, stderr = process.communicate(timeout=CHECK_TIMEOUT_SECONDS * len(PAGES))
    try:
        return [json.loads(stdout.strip().splitlines()[-1]), stderr]
    except (IndexError, ValueError):
        return [None, stdout + stderr]


def check_once_per_run(request, label, selection):
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return finished_check(started_checks(selection)[label])
    # The first worker to ask runs both environments' checks side by side, one a core, while the
    # other worker waits on the lock; then both read the results. The workers' temporary folders
    # share a parent, pytest's folder for this run (xdist's own recipe for a once-a-run step).
    shared = request.getfixturevalue("tmp_path_factory").getbasetemp().parent
    path = os.path.join(shared, "docs-check.json")
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(path):
            results = {other: finished_check(process) for other, process in started_checks(selection).items()}
            with open(path, "w", encoding="utf-8") as file:
                json.dump(results, file)
        with open(path, encoding="utf-8") as file:
            return json.load(file)[label]


def page_problems(request, label, name):
    # The pages whose tests this session runs (after -k and the like), for each environment.
    selection = tuple(
        (other, tuple(item.callspec.params["name"] for item in request.session.items if item.originalname == test))
        for other, test in CHECK_TESTS.items()
    )
    problems, output = check_once_per_run(request, label, selection)
    assert problems is not None, f"build_docs.py --check --json did not finish ({label}):\n{output}"
    return problems[name]


@pytest.mark.parametrize("name", PAGES)
def test_page_outputs_are_what_its_blocks_print_now(request, name):
    problems = page_problems(request, "this CPU", name)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("name", PAGES)
def test_page_outputs_hold_on_another_cpu(request, name):
    # The docs are checked on CPUs other than the one that built them (build_docs.py's docstring):
    # rerun every block with numpy's SIMD loops and OpenBLAS's kernels of another CPU.
    problems = page_problems(request, "another CPU", name)
    assert problems == [], "\n".join(problems)


def test_the_other_cpu_environment_changes_the_last_bits():
    # Without this, the test above would compare this CPU with itself.
    program = (
        "import hashlib, numpy as np\n"
        "x = np.linspace(-3, 3, 4001, dtype=np.float32)\n"
        "a = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)\n"
        "print(hashlib.sha256(np.exp(x).tobytes() + np.tanh(x).tobytes() + (a @ a.T).tobytes()).hexdigest())\n"
    )

    def digest(environment):
        return subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ, OPENBLAS_NUM_THREADS="1", **environment),
        ).stdout

    assert digest(build_docs.other_cpu_environment()) != digest({})


def test_a_long_float32_training_run_would_fail_on_another_cpu():
    # What the rule is for: the gallery transformer's 300 Adam steps in float32 print other
    # losses on another CPU, in float64 (as the gallery prints them) the same.
    program = "import runpy, sys\nmodule = runpy.run_path(sys.argv[1])\nmodule['main'](dtype=sys.argv[2])\n"
    script = os.path.join(DOCS, "examples", "06_char_transformer.py")

    def start(dtype, environment):
        return subprocess.Popen(
            [sys.executable, "-c", program, script, dtype],
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, OPENBLAS_NUM_THREADS="1", **environment),
        )

    def output(process):
        stdout, _ = process.communicate(timeout=CHECK_TIMEOUT_SECONDS)
        assert process.returncode == 0
        return stdout

    # The four runs are independent, so they run side by side.
    other = build_docs.other_cpu_environment()
    cpus = {"this": {}, "other": other}
    started = {(dtype, cpu): start(dtype, cpus[cpu]) for dtype in ("float32", "float64") for cpu in cpus}
    outputs = {key: output(process) for key, process in started.items()}
    assert output_agreement.first_disagreement(outputs["float32", "this"], outputs["float32", "other"]) is not None
    assert output_agreement.first_disagreement(outputs["float64", "this"], outputs["float64", "other"]) is None


def test_every_page_is_in_the_reading_order_and_the_index():
    on_disk = sorted(name[:-3] for name in os.listdir(DOCS) if name.endswith(".md"))
    assert set(on_disk) <= set(build_docs.PAGES), "list a new page in PAGES in docs/tools/build_docs.py"
    assert build_docs.check_pages_list() == []
    for name in ("index", "getting-started", "readings", "recording", "training", "gallery", "api"):
        assert name in PAGES


@pytest.mark.parametrize("name", PAGES)
def test_built_json_has_the_documented_shape(name):
    page = json.loads(read(os.path.join(build_docs.GENERATED, f"{name}.json")))
    assert (page["format"], page["version"], page["name"]) == ("topos.docs.page", 1, name)
    live = [part for part in page["parts"] if part["kind"] == "code" and part["live"]]
    assert [part["id"] for part in live] == [f"{name}-{n}" for n in range(1, len(live) + 1)]
    for part in page["parts"]:
        assert part["kind"] in ("markdown", "code")
        if part["kind"] == "code" and part["live"]:
            assert part["language"] == "python"
            assert all(isinstance(item.get("kind"), str) for item in part["output"])
            printed = "".join(item["text"] for item in part["output"] if item["kind"] == "print")
            assert printed == "" or printed.strip() in part["output_text"]


@pytest.mark.parametrize("name", [name for name in PAGES if name != "api"])
def test_every_python_block_of_the_guide_is_live(name):
    # The guide's Python is all embeds; only the generated API reference shows snippets it cannot run.
    static = [
        part.line for part in page_parts(name) if isinstance(part, Code) and part.language == "python" and not part.live
    ]
    assert static == [], f"docs/{name}.md has python blocks marked static at lines {static}"


def test_every_gallery_script_is_shown_with_its_output():
    shown = [part.example for part in page_parts("gallery") if isinstance(part, Code) and part.example]
    scripts = sorted(name for name in os.listdir(os.path.join(DOCS, "examples")) if name.endswith(".py"))
    assert sorted(os.path.basename(path) for path in shown) == scripts
    assert all(part.output for part in page_parts("gallery") if isinstance(part, Code) and part.example)


def test_links_between_pages_resolve():
    broken = []
    for name in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", read(build_docs.page_path(name))):
            if not target.startswith(("http:", "https:")) and not os.path.exists(os.path.join(DOCS, target)):
                broken.append(f"docs/{name}.md -> {target}")
    assert broken == []


# The guide's heading for each reading; the order is the product's (topos.playground.READINGS).
READING_HEADINGS = {
    "spec": "The spec",
    "graph": "The graph",
    "plan": "The plan",
    "gradient": "The gradient",
    "hlo": "StableHLO",
    "kernels": "The kernels",
}


def test_the_guide_covers_the_six_readings_in_order():
    text = read(build_docs.page_path("readings"))
    headings = re.findall(r"(?m)^## \d\. (.+)$", text)
    from topos.playground import READINGS

    assert headings == [READING_HEADINGS[name] for name in READINGS]


def test_the_api_reference_lists_every_public_name():
    import importlib

    import api_reference

    text = api_reference.render()
    for module_name in api_reference.MODULES:
        module = importlib.import_module(module_name)
        for name in api_reference.public_names(module):
            if getattr(module, name).__class__.__name__ == "module":
                assert f"## `{module.__name__}.{name}`" in text or f"## `{getattr(module, name).__name__}`" in text
                continue
            documented = re.search(rf"### `[\w.]+\.{re.escape(name)}[`(]", text)
            assert documented or f"`{name}` (" in text, f"{module_name}.{name} is missing from the API reference"
    assert "```python static" in text  # a docstring's snippet is shown, never run


# The builder's rules -------------------------------------------------------------------------


def test_an_output_fence_not_after_a_live_block_is_refused():
    after_prose = "# T\n\nSome text.\n\n```output\n42\n```\n"
    after_static = "# T\n\n```python static\nx = 1\n```\n\n```output\n42\n```\n"
    prose_between = "# T\n\n```python\nprint(42)\n```\n\nIt prints:\n\n```output\n42\n```\n"
    twice = "# T\n\n```python\nprint(42)\n```\n\n```output\n42\n```\n\n```output\n42\n```\n"
    for text in (after_prose, after_static, prose_between, twice):
        with pytest.raises(DocsSourceError, match="output fence must directly follow a python block"):
            parse_page(text, "page.md")


def test_a_changed_output_is_rewritten_and_the_check_catches_it():
    typed_by_hand = "# T\n\n```python\nprint(6 * 7)\n```\n\n```output\n41\n```\n\nAfter.\n"
    rebuilt, page = build_docs.build_page("scratch", typed_by_hand)
    assert rebuilt == typed_by_hand.replace("41", "42")
    [code] = [part for part in page["parts"] if part["kind"] == "code"]
    assert code["output_text"] == "42\n" and code["output"] == [{"kind": "print", "text": "42\n"}]
    # What --check compares: the on-disk page against the rebuilt one, the built JSON to a tolerance.
    assert rebuilt != typed_by_hand
    assert build_docs.same_json(page, json.loads(build_docs.dump_json(page)))
    altered = json.loads(build_docs.dump_json(page))
    altered["parts"][1]["output_text"] = "41\n"
    assert not build_docs.same_json(altered, page)


def test_a_block_without_output_gets_no_fence_and_a_missing_one_is_written():
    text = "# T\n\n```python\nx = 1\n```\n\n```python\nprint('hi')\n```\n"
    rebuilt, _ = build_docs.build_page("scratch", text)
    assert rebuilt == text + "\n```output\nhi\n```\n"
    assert build_docs.build_page("scratch", rebuilt)[0] == rebuilt


def test_a_block_that_raises_stops_the_build_naming_its_line():
    text = "# T\n\nText.\n\n```python\nimport topos\nraise topos.ShapeError('no')\n```\n"
    with pytest.raises(build_docs.BuildError, match=r"docs/scratch\.md:5: block 1 raised:(.|\n)*ShapeError: no"):
        build_docs.build_page("scratch", text)


def test_card_numbers_compare_to_a_tolerance_and_text_exactly():
    assert build_docs.same_json({"y": [1.0, 2.0]}, {"y": [1.0 + 1e-12, 2.0]})
    assert not build_docs.same_json({"y": [1.0]}, {"y": [1.0 + 1e-5]})
    assert build_docs.same_json(
        {"output": [{"kind": "print", "text": "loss 2.0091\n"}]},
        {"output": [{"kind": "print", "text": "loss 2.0092\n"}]},
    )
    assert not build_docs.same_json({"text": "1.0"}, {"text": "1.00"})
    assert not build_docs.same_json({"y": [1.0, None]}, {"y": [1.0, 0.0]})


@pytest.mark.parametrize("name", PAGES)
def test_parsing_then_rendering_gives_the_page_back(name):
    text = read(build_docs.page_path(name))
    assert render_page(parse_page(text)) == text


def test_fences_grow_around_outputs_that_hold_backticks():
    text = "# T\n\n```python\nprint('```')\n```\n"
    rebuilt, _ = build_docs.build_page("scratch", text)
    assert "````output\n```\n````" in rebuilt
    assert parse_page(rebuilt)[1].output == "```"


# Running a block -------------------------------------------------------------------------------


def test_blocks_share_nothing_and_put_process_state_back():
    directory = os.getcwd()
    options = np.get_printoptions()
    first = run_block(
        "import numpy as np\nnp.set_printoptions(precision=2)\nsecret = 1\n"
        "open('left-behind.txt', 'w').write('x')\nprint(__name__, __file__)"
    )
    assert first.error is None and first.text == "__main__ main.py\n"
    second = run_block("import os\nprint('secret' in globals(), os.listdir('.'))")
    assert second.text == "False []\n"
    assert os.getcwd() == directory and np.get_printoptions() == options


def test_a_primitive_registered_by_a_block_is_gone_after_it():
    define = (
        "import numpy as np\nfrom topos.compiler import Primitive, register\n\n"
        "@register\nclass Twice(Primitive):\n    name = 'DocsTestTwice'\n    arity = 1\n"
        "    def infer(self, metas, attrs):\n        return metas[0]\n"
        "    def forward(self, inputs, attrs):\n        return inputs[0] * 2\n"
        "    def vjp(self, e, g, operands, out, attrs):\n        return [e.mul(g, e.like(g, 2.0))]\n"
    )
    use = "from topos.compiler import primitives\nprint('DocsTestTwice' in primitives())\n"
    assert run_block(define + use).text == "True\n"
    assert run_block(define + use).error is None, "the same block runs again: its registration was undone"
    assert run_block(use).text == "False\n", "a later block does not see an earlier block's primitive"


def test_prints_and_cards_keep_their_order():
    code = "from topos import show\nprint('before')\nshow.lines(['a', 'b'])\nprint('after', end='')\nshow.spec('S')"
    result = run_block(code)
    assert result.items == [
        {"kind": "print", "text": "before\n"},
        {"kind": "lines", "lines": ["a", "b"]},
        {"kind": "print", "text": "after"},
        {"kind": "spec", "text": "S"},
    ]
    assert result.text == "before\na\nb\nafter\nS\n"


def test_an_error_points_at_the_blocks_own_line():
    result = run_block("from topos import Tape\n\ntape = Tape()\na = tape.input([1.0, 2.0])\nb = a @ 2.0\n")
    assert result.error is not None
    assert 'File "main.py", line 5' in result.error and "ShapeError" in result.error
