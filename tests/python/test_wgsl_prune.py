"""Each pipeline compiles only the WGSL functions its entry points reach (``topos.webgpu.sources.prune``).

``specialise`` pastes ``common.wgsl`` into every kernel file, and ``elementwise.wgsl`` holds the
special functions' helpers (log1p, erf, erfinv, lgamma, digamma, ...); every fused expression is a
pipeline of its own, so each one compiled all of them. The pruned text of every kernel family and
of every elementwise expression must still compile (wgpu-py's ``create_shader_module``, which
validates with naga, then a compute pipeline for each entry point, compiled by the driver:
lavapipe here), hold no function that nothing calls, and keep each function a kept one calls. A
small fixture pins the rules: a chain a -> b -> c is kept, an unused d goes with its comment lines,
and a call written inside a comment keeps nothing.

These tests need a WebGPU adapter (lavapipe here and in CI) and fail without one.
"""

import re

import numpy as np
import pytest

import topos
from topos import Tape
from topos.compiler.wgsl import launch as build
from topos.ops import primitives
from topos.webgpu.sources import (
    entry_points,
    kernel_names,
    kernel_text,
    prune,
    specialise,
    without_comments,
)

# a -> b -> c is called from the entry; d is called only from e and from comments, e from nothing.
FIXTURE = """// A fixture in the kernels' layout.
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
const SCALE: f32 = 2.0;
var<private> offset: f32 = 0.5;

struct Pair {
    first: f32,
    second: f32,
}

// c's documentation.
fn c(x: f32) -> f32 {
    return x * SCALE + offset;
}

/* A block comment, /* nested */, that names d(x) and stays. */
fn b(x: f32) -> f32 {
    // d(x) here is a comment, not a call.
    return c(x) + 1.0;
}

// d's documentation,
// two lines of it.
fn d(x: f32) -> f32 {
    return x;
}

fn e(x: f32) -> f32 { return d(x) + d (x); }  // a trailing comment

fn a(x: f32) -> f32 { return b(x) * Pair(x, x).second; }

@compute @workgroup_size(8, 8)
fn tiled(@builtin(local_invocation_index) lane: u32) {
    out[lane] = a(f32(lane));
}
"""

REMOVED = """// d's documentation,
// two lines of it.
fn d(x: f32) -> f32 {
    return x;
}

fn e(x: f32) -> f32 { return d(x) + d (x); }  // a trailing comment

"""


def defined(text):
    """The functions ``text`` defines (the kernels and the fixture start each at a line's start)."""
    return re.findall(r"(?m)^fn (\w+)\(", without_comments(text))


def called(text):
    """Every name ``text``'s code (comments aside) calls, each with how often."""
    names = re.findall(r"\b([A-Za-z_]\w*)\s*\(", without_comments(text))
    return {name: names.count(name) for name in set(names)}


def entries(text):
    return re.findall(r"@compute @workgroup_size\([^)]*\)\s*fn (\w+)\(", without_comments(text))


def elementwise_text(expression, body="", loads=("x_buffer[word(8u) + i]", "y_buffer[strided(i, 15u)]")):
    """``elementwise.wgsl`` for one expression, its operands read as ``launch.elementwise`` writes them."""
    substitutions = {f"LOAD_{name.upper()}": "0.0" for name in build.OPERAND_NAMES}
    substitutions.update({"LOAD_X": loads[0], "LOAD_Y": loads[1], "LOAD_Z": "bitcast<f32>(word(22u))"})
    return specialise("elementwise", {**substitutions, "EXPRESSION": expression, "BODY": body})


def fused_chains():
    """The launches the compiler makes of two elementwise chains (one with a second output)."""
    x, y = np.ones(65, np.float32), np.ones(65, np.float32)

    def chain(tape):
        a, b = tape.input(x), tape.input(y)
        return topos.tanh(topos.erf(a) * b + topos.exp(-a)) / topos.log1p(b * b)

    def two_outputs(tape):
        inner = topos.lgamma(tape.input(x)) * 2.0 + 1.0
        return [topos.digamma(inner), inner]

    launches = []
    for body in (chain, two_outputs):
        network, out = Tape.record(body, dtype="float32")
        plan = network.entry(out if isinstance(out, list) else [out]).lower()
        launches += [launch for launch in plan.kernels().launches if launch.kernel == "elementwise"]
    return [dict(launch.specialisation) for launch in launches]


def specialisations():
    """``(label, text)``: every kernel family with the substitutions its launches make, each elementwise
    primitive's expression, and the compiler's fused chains."""
    cases = []
    folds = {name: p.fold for name, p in primitives().items() if getattr(p, "fold", None)}
    for name in kernel_names():
        if name == "reduce":
            for opcode, fold in folds.items():
                text = specialise(name, {"COMBINE": fold.combine, "IDENTITY": fold.identity})
                cases.append((f"reduce {opcode}", text))
        elif name != "elementwise":
            cases.append((name, specialise(name)))
    for name, primitive in sorted(primitives().items()):
        if primitive.wgsl is not None:
            cases.append(
                (
                    f"elementwise {name}",
                    elementwise_text(primitive.wgsl.replace("ORDER", "2")),
                )
            )
    for number, substitutions in enumerate(fused_chains()):
        cases.append((f"fused chain {number}", specialise("elementwise", substitutions)))
    return cases


CASES = specialisations()
EVERY_FUNCTION = {name for kernel in kernel_names() + ["common"] for name in defined(kernel_text(kernel))}


@pytest.fixture(scope="module")
def device():
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    assert adapter is not None, "no WebGPU adapter: apt-get install mesa-vulkan-drivers gives lavapipe"
    return adapter.request_device_sync()


def compile_all(device, text):
    """The module (naga parses and validates it) and a pipeline for each entry point (the driver compiles it)."""
    module = device.create_shader_module(code=text)
    for entry in entries(text):
        device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": entry})


def test_the_fixture_keeps_the_chain_and_drops_the_unused_function_with_its_comment_lines():
    pruned = prune(FIXTURE)
    assert defined(pruned) == ["c", "b", "a", "tiled"]
    # Only d and e went, with d's comment lines, e's trailing comment and one blank line: the rest stays in order.
    assert REMOVED in FIXTURE and pruned == FIXTURE.replace(REMOVED, "")
    assert "/* A block comment, /* nested */, that names d(x) and stays. */" in pruned
    assert prune(pruned) == pruned


def test_the_fixture_compiles_before_and_after_pruning(device):
    compile_all(device, FIXTURE)
    compile_all(device, prune(FIXTURE))


def test_the_compile_check_fails_where_a_called_function_is_missing(device):
    # The check has teeth: the pruned text without b, which a calls, is rejected.
    broken = re.sub(r"(?s)fn b\(.*?\n}\n", "", prune(FIXTURE))
    assert "fn b(" not in broken
    with pytest.raises(Exception, match="unknown identifier"):
        device.create_shader_module(code=broken)


def test_comments_become_spaces_at_the_same_offsets():
    text = "a /* b /* c */ d */ e // f\ng\n/* h\ni */ j"
    code = without_comments(text)
    assert len(code) == len(text) and [m.start() for m in re.finditer("\n", code)] == [
        26,
        28,
        33,
    ]
    assert code.split() == ["a", "e", "g", "j"]


@pytest.mark.parametrize("label,text", CASES, ids=[label for label, _ in CASES])
def test_every_pruned_pipeline_text_compiles_and_holds_only_what_its_entries_reach(device, label, text):
    compile_all(device, text)
    functions = [name for name in defined(text) if name not in entries(text)]
    calls = called(text)  # a function's own signature counts once
    # Each function is called from somewhere other than its own signature; WGSL forbids recursion, so a
    # caller of each, and a caller of that, ... ends at an entry point: everything left is reached.
    unreferenced = [name for name in functions if calls.get(name, 0) < 2]
    assert not unreferenced, f"{label}: nothing calls {unreferenced}"
    # Every function of the files that the kept text calls is still there (compiling checks it too).
    missing = {name for name in calls if name in EVERY_FUNCTION} - set(defined(text))
    assert not missing, f"{label}: {sorted(missing)} called but pruned"


def test_each_entry_point_of_every_family_is_kept():
    for name in kernel_names():
        cases = [text for label, text in CASES if label.split()[0] == name]
        assert cases, name
        for text in cases:
            assert set(entry_points(name)) <= set(entries(text)), name


def test_an_elementwise_pipeline_holds_only_the_special_functions_its_expression_calls():
    plain = elementwise_text("x + y")
    erf = elementwise_text("error_function(x)")
    assert "fn error_function(" not in plain and "fn log_gamma(" not in plain and "fn precise_log(" not in plain
    assert "fn error_function(" in erf and "fn log_gamma(" not in erf
    # The shared helpers the entry's prologue reads stay (element, word), the row kernels' layout goes.
    assert {"word", "element", "workgroup_index"} <= set(defined(plain)) and "row_start" not in defined(plain)
