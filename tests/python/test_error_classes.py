"""Every error topos raises on purpose is a ``ToposError`` (issue 9), and the class stays closed.

The guard reads every module of ``py/topos`` with ``ast``: a built-in exception
class (``ValueError``, ``TypeError``, ``RuntimeError``, ...) may appear only
where an error is caught (``except``, ``contextlib.suppress``), tested
(``isinstance``) or inherited from (a ``ToposError`` class keeps its built-in
base). Raising one, or binding one to a name that is raised later (an
``error_class`` argument, say), fails the guard, except for the few uses in
``ALLOWED``, each with its reason. A class that a module raises by name must be
a ``ToposError``.

A second guard reads the display surfaces (``display.py``, ``text.py``, ``show/``,
``playground/`` and every ``_repr_mimebundle_`` or ``*_bundle`` function elsewhere)
for arithmetic that raises a built-in exception for some number (``math.floor`` of
an infinity, a quotient by zero, ``min`` of nothing): a card or a notebook face
draws any data, or says in words why not (issue 18).

The table tests then make hostile calls into ``topos.show``, the WebGPU launch
builders, the kernel sources and ``DeviceTrainer``: each raises a ``ToposError``
whose message names the cause.
"""

import ast
import builtins
import importlib
import inspect
from pathlib import Path

import numpy as np
import pytest

import topos
from topos import Tape, show
from topos.compiler import Meta, Primitive, register, unregister
from topos.compiler.wgsl import launch as build
from topos.compiler.wgsl.views import View
from topos.model import optim
from topos.show import Line, Plot
from topos.webgpu.sources import kernel_text, specialise
from topos.webgpu.trainer import DeviceTrainer

PACKAGE = Path(topos.__file__).resolve().parent

BUILTIN_EXCEPTIONS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
}

#: (module path under topos/, enclosing function, built-in class): why the built-in stays.
ALLOWED = {
    (
        "ops/emitter.py",
        "Emitter.apply",
        "NotImplementedError",
    ): "an abstract method of the emitter base: only topos's own emitters subclass it, and each defines it",
    (
        "ops/emitter.py",
        "Emitter.shape",
        "NotImplementedError",
    ): "an abstract method of the emitter base: only topos's own emitters subclass it, and each defines it",
    (
        "ops/emitter.py",
        "Emitter.like",
        "NotImplementedError",
    ): "an abstract method of the emitter base: only topos's own emitters subclass it, and each defines it",
    (
        "model/optim_state.py",
        "OptimizerState.__setattr__",
        "AttributeError",
    ): "Python's attribute protocol: setting an attribute of an immutable object raises AttributeError, as a "
    "frozen dataclass's FrozenInstanceError does (copy, pickle and hasattr rely on that class)",
}


def _modules(package=PACKAGE):
    return sorted(package.rglob("*.py"))


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _tolerated(tree):
    """The ids of the name nodes where a built-in exception class may appear: caught, tested, inherited."""
    tolerated = set()

    def tolerate(expression):
        tolerated.update(id(node) for node in ast.walk(expression))

    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            tolerate(node.type)
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                tolerate(base)
        elif isinstance(node, ast.Call):
            function = node.func
            name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
            if name in ("isinstance", "issubclass"):
                for argument in node.args[1:]:
                    tolerate(argument)
            elif name == "suppress":
                for argument in node.args:
                    tolerate(argument)
    return tolerated


def _enclosing_functions(tree):
    """id(node) -> the qualified name of the function or class it sits in (``Class.method``)."""
    owners = {}

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
                owners[id(child)] = scope
                visit(child, inner)
            else:
                owners[id(child)] = scope
                visit(child, scope)

    visit(tree, "")
    return owners


def built_in_exception_uses(package=PACKAGE):
    """Every use of a built-in exception class outside an except, isinstance or base: (path, scope, name, line)."""
    uses = []
    for path in _modules(package):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        tolerated = _tolerated(tree)
        owners = _enclosing_functions(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in BUILTIN_EXCEPTIONS and id(node) not in tolerated:
                relative = path.relative_to(package).as_posix()
                uses.append((relative, owners.get(id(node), ""), node.id, node.lineno))
    return uses


def test_no_module_raises_a_built_in_exception_class_outside_the_allow_list():
    offending = [
        f"topos/{path}:{line} ({scope or 'module'}): {name}"
        for path, scope, name, line in built_in_exception_uses()
        if (path, scope, name) not in ALLOWED
    ]
    assert not offending, "raise a ToposError class (topos.errors) instead of:\n" + "\n".join(offending)


def test_every_allow_list_entry_is_still_needed():
    found = {(path, scope, name) for path, scope, name, _ in built_in_exception_uses()}
    assert set(ALLOWED) <= found, f"allowed but gone (drop them): {sorted(set(ALLOWED) - found)}"


def test_every_class_a_module_raises_by_name_is_a_topos_error():
    offending = []
    for path in _modules():
        module = importlib.import_module(_module_name(path))
        namespaces = [vars(module), vars(topos.errors)]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if not isinstance(raised, ast.Name) or raised.id in BUILTIN_EXCEPTIONS:
                continue  # a variable (an error caught and raised again), a helper's result, or the guard above
            value = next((space[raised.id] for space in namespaces if raised.id in space), None)
            if inspect.isclass(value) and not issubclass(value, topos.ToposError):
                offending.append(f"topos/{path.relative_to(PACKAGE).as_posix()}:{node.lineno}: {raised.id}")
    assert not offending, "not a ToposError:\n" + "\n".join(offending)


def test_the_guard_sees_a_built_in_raise_and_a_built_in_bound_to_a_name(tmp_path):
    (tmp_path / "sample.py").write_text(
        "def check(value, error_class=ValueError):\n"
        "    if value < 0:\n"
        "        raise error_class('negative')\n"
        "    try:\n"
        "        return int(value)\n"
        "    except (TypeError, OverflowError):\n"
        "        raise RuntimeError('not a number') from None\n"
        "class Refusal(topos.ToposError, IndexError):\n"
        "    pass\n"
    )
    uses = {(path, scope, name) for path, scope, name, _ in built_in_exception_uses(tmp_path)}
    assert uses == {("sample.py", "check", "ValueError"), ("sample.py", "check", "RuntimeError")}


# The display surfaces: no built-in exception from a number ----------------------------------------------
#
# The guard above sees a raise that names a built-in class; it cannot see ``math.floor(math.log10(x))``
# raising OverflowError for x = inf, which is how ``show.plot(Line.y([1.0, 1.7e308]))`` failed. The
# surfaces that draw and report (the cards, the notebook faces of every object, the playground) are
# therefore read for the arithmetic that raises a built-in exception for some number: the math
# functions with a restricted domain, int() and one-argument round() (inf and NaN), divmod and
# quotients by something other than a constant (zero), powers of a variable (overflow), min()/max()
# of an iterable without a default and next() without one (an empty sequence). Such arithmetic
# lives in ``show/axes.py`` (exact decimals, every divisor positive by construction, swept by
# hypothesis in test_display_hardening.py) or where ARITHMETIC_ALLOWED says why it cannot raise.

#: The modules that are display surfaces from end to end, under topos/ (a folder ends in "/").
DISPLAY_MODULES = ("display.py", "text.py", "show/", "playground/")
#: Where a display surface's arithmetic is allowed: the module, or (module, function) with the reason.
ARITHMETIC_ALLOWED = {
    "show/axes.py": "the axes' arithmetic: exact decimals for the ends, the step and the ticks, floats only for "
    "values already placed between them, every divisor positive by construction",
    ("show/__init__.py", "plot_text"): "min() and max() of a line's finite values, after the line without any "
    "is written as 'none finite'",
    ("show/svg_graph.py", "graph_svg"): "min() and max() over the vertices of one connected part of a graph, "
    "which has at least one",
    ("playground/gpu.py", "KernelsRun.trace"): "max() of the nodes a launch covers, and a launch covers one or more",
    ("playground/readings.py", "ReadingsCache.put"): "next() of the oldest entry while the cache holds more "
    "entries than its size",
    ("playground/program.py", "OutputStream._set_timer"): "math.ceil of the time until the next batch is due, "
    "two readings of the clock (finite)",
    ("show/pictures.py", "_block_mean"): "the sides rounded up over the factor, _factor's whole number, 1 or more",
    ("show/pictures.py", "fraction_of"): "by the span in halves where it is positive, else by high - low, positive "
    "as every range is finite with low < high (_span, _range) and a difference of two floats never underflows to 0",
    ("show/svg_image.py", "zoom_of"): "by a picture's larger side, 1 or more: an empty image raises before a card",
    ("show/svg_image.py", "card_png"): "by the columns, min(COLUMNS, images), and a grid has one image or more",
    ("show/svg_image.py", "card_svg"): "by the columns (one image or more) and by the six CLASS_COLOURS",
    ("show/svg_image.py", "_heatmap_rgb"): "by the six CLASS_COLOURS; int() of a point's place only once "
    "0 <= place < side holds, which a NaN or an infinity fails",
}
#: math functions that raise for some float: ValueError (log10(0), sqrt(-1), floor(nan)), OverflowError
#: (floor(inf), exp(1000), pow(10.0, 400)).
RAISING_MATH = {
    "acos",
    "acosh",
    "asin",
    "atanh",
    "ceil",
    "comb",
    "cosh",
    "exp",
    "exp2",
    "expm1",
    "factorial",
    "floor",
    "fmod",
    "gamma",
    "isqrt",
    "ldexp",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "perm",
    "pow",
    "sinh",
    "sqrt",
    "trunc",
}
#: numpy reductions that raise ValueError for an empty array (without ``initial=``).
EMPTY_RAISING_NUMPY = {"amax", "amin", "argmax", "argmin", "max", "min", "nanargmax", "nanargmin"}


def _is_display_module(relative):
    return any(relative == module or relative.startswith(module) for module in DISPLAY_MODULES)


def _is_bundle_function(node):
    """A function that builds a notebook face, wherever it lives: ``_repr_mimebundle_`` and the ``*_bundle`` helpers."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
        node.name == "_repr_mimebundle_" or node.name.endswith("_bundle")
    )


def _is_constant(expression):
    """A number that is not zero, an UPPER_CASE module constant, ``len`` of one, or arithmetic of those."""
    if isinstance(expression, ast.Constant):
        return isinstance(expression.value, (int, float)) and expression.value != 0
    if isinstance(expression, ast.Name):
        return expression.id.isupper()
    if isinstance(expression, ast.UnaryOp):
        return _is_constant(expression.operand)
    if isinstance(expression, ast.BinOp):
        return _is_constant(expression.left) and _is_constant(expression.right)
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name) and expression.func.id == "len":
        return len(expression.args) == 1 and _is_constant(expression.args[0])
    return False


def _raising_arithmetic(node):
    """What in ``node`` may raise a built-in exception for some number, in words; None when nothing may."""
    if isinstance(node, ast.Call):
        function, keywords = node.func, {keyword.arg for keyword in node.keywords}
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            module, name = function.value.id, function.attr
            if module == "math" and name in RAISING_MATH:
                return f"math.{name}()"
            if module in ("np", "numpy") and name in EMPTY_RAISING_NUMPY and "initial" not in keywords:
                return f"{module}.{name}() without initial="
        if isinstance(function, ast.Name):
            name, count = function.id, len(node.args)
            if name in ("int", "divmod") or (name == "round" and count == 1 and not keywords):
                return f"{name}()"
            if name in ("min", "max") and count == 1 and "default" not in keywords:
                return f"{name}() of an iterable without default="
            if name == "next" and count == 1:
                return "next() without a default"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
        if isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr)):
            return None  # text formatting, not arithmetic
        if not _is_constant(node.right):
            return f"a quotient by {ast.unparse(node.right)}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        if not (_is_constant(node.left) and _is_constant(node.right)):
            return f"a power {ast.unparse(node)}"
    return None


def raising_arithmetic_in_display_surfaces(package=PACKAGE):
    """``(module, function, what, line)`` for each use in a display surface of arithmetic that may raise."""
    uses = []
    for path in _modules(package):
        relative = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        owners = _enclosing_functions(tree)
        if _is_display_module(relative):
            roots = [tree]
        else:
            roots = [node for node in ast.walk(tree) if _is_bundle_function(node)]
        for root in roots:
            for node in ast.walk(root):
                what = _raising_arithmetic(node)
                if what is not None:
                    scope = owners.get(id(node), "")
                    uses.append((relative, scope, what, node.lineno))
    return uses


def _allowed_arithmetic(relative, scope):
    return relative in ARITHMETIC_ALLOWED or (relative, scope) in ARITHMETIC_ALLOWED


def test_no_display_surface_computes_what_raises_a_built_in_exception_for_some_number():
    offending = [
        f"topos/{relative}:{line} ({scope or 'module'}): {what}"
        for relative, scope, what, line in raising_arithmetic_in_display_surfaces()
        if not _allowed_arithmetic(relative, scope)
    ]
    assert not offending, "a display surface must draw any number; this may raise instead:\n" + "\n".join(offending)


def test_every_allowed_arithmetic_entry_is_still_needed():
    found = {(relative, scope) for relative, scope, _, _ in raising_arithmetic_in_display_surfaces()}
    needed = {relative for relative, _ in found} | found
    assert set(ARITHMETIC_ALLOWED) <= needed, (
        f"allowed but gone (drop them): {sorted(set(ARITHMETIC_ALLOWED) - needed)}"
    )


def test_the_guards_read_every_display_surface_and_every_notebook_face():
    walked = {path.relative_to(PACKAGE).as_posix() for path in _modules()}
    for module in DISPLAY_MODULES:
        assert any(relative == module or relative.startswith(module) for relative in walked), module
    faces = {
        path.relative_to(PACKAGE).as_posix()
        for path in _modules()
        if any(_is_bundle_function(node) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    }
    # Tape and Network (model/tape.py, model/network.py), Parameters, Run, Field, Plan and the cards.
    assert {"model/tape.py", "model/network.py", "compiler/plan.py", "show/__init__.py"} <= faces


def test_the_display_guard_sees_each_kind_of_raising_arithmetic(tmp_path):
    (tmp_path / "show").mkdir()
    (tmp_path / "show" / "sample.py").write_text(
        "import math\n"
        "import numpy as np\n"
        "WIDTH = 640\n"
        "def axis(values, low, high, power):\n"
        "    step = 10 ** math.floor(math.log10(high - low))\n"
        "    first = int(low / step)\n"
        "    last = round(high)\n"
        "    least = min(values)\n"
        "    safe = min(values, default=0.0) + max(1, 2) + round(high, 3) + WIDTH / 2 + 10 ** 6\n"
        "    text = '%d' % first\n"
        "    return np.max(values), np.max(values, initial=0.0), 10.0 ** power, next(iter(values)), first % WIDTH\n"
    )
    (tmp_path / "model.py").write_text(
        "class Table:\n"
        "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return {'text/html': str(self.total / self.count)}\n"
        "    def total_of(self):\n"
        "        return self.total / self.count\n"
    )
    found = sorted(
        (relative, scope, what) for relative, scope, what, _ in raising_arithmetic_in_display_surfaces(tmp_path)
    )
    assert found == sorted(
        [
            ("show/sample.py", "axis", "math.floor()"),
            ("show/sample.py", "axis", "math.log10()"),
            ("show/sample.py", "axis", "a power 10 ** math.floor(math.log10(high - low))"),
            ("show/sample.py", "axis", "int()"),
            ("show/sample.py", "axis", "a quotient by step"),
            ("show/sample.py", "axis", "round()"),
            ("show/sample.py", "axis", "min() of an iterable without default="),
            ("show/sample.py", "axis", "np.max() without initial="),
            ("show/sample.py", "axis", "a power 10.0 ** power"),
            ("show/sample.py", "axis", "next() without a default"),
            ("model.py", "Table._repr_mimebundle_", "a quotient by self.count"),
        ]
    )


# Hostile calls -------------------------------------------------------------------------------------------


class Describes:
    def describe(self):
        return 3


def _recorded_value():
    tape = Tape()
    return tape.input([1.0, 2.0])


def _strided(shape):
    """A view whose strides run against its shape, so that no two axes merge."""
    strides = tuple(2**axis for axis in range(len(shape)))
    return View(1, 0, tuple(shape), strides)


SHOW_CASES = [
    ("show.lines of one string", lambda: show.lines("loss"), topos.ArgumentTypeError, "list of strings"),
    ("show.lines of a number", lambda: show.lines(5), topos.ArgumentTypeError, "got int"),
    ("show.spec of a number", lambda: show.spec(42), topos.ArgumentTypeError, "describe"),
    (
        "show.hlo of a describe() that is not text",
        lambda: show.hlo(Describes()),
        topos.ArgumentTypeError,
        "returned int, not text",
    ),
    ("show.graph of a number", lambda: show.graph(42), topos.ArgumentTypeError, "show.graph.. takes a Graph"),
    ("show.graph of numbers", lambda: show.graph([1, 2]), topos.ArgumentTypeError, "recorded nodes"),
    ("Line.y of text", lambda: Line.y(["a", "b"]), topos.ArgumentError, "Line.y: expected numbers"),
    (
        "Line.y of a ragged list",
        lambda: Line.y([[1.0, 2.0], [3.0]]),
        topos.ArgumentError,
        "Line.y: not an array of numbers",
    ),
    (
        "Line.y of a recorded value",
        lambda: Line.y(_recorded_value()),
        topos.ArgumentTypeError,
        "a recorded value has none until it runs",
    ),
    (
        "Line.xy of unequal lengths",
        lambda: Line.xy([1, 2], [1]),
        topos.ShapeError,
        "as many x as y values, got 2 and 1",
    ),
    ("Plot.layer of a list", lambda: Plot().layer([1.0]), topos.ArgumentTypeError, "takes a Line, got list"),
    ("show.plot of a number", lambda: show.plot(3), topos.ArgumentTypeError, "takes a Plot, got int"),
]

LAUNCH_CASES = [
    ("a grid too large", lambda: build.grid(65535 * 65535 + 1), topos.ShapeError, "do not fit a WebGPU grid"),
    ("too many parameter words", lambda: build.pack([0] * 65), topos.ArgumentError, "65 parameter words"),
    (
        "elementwise over 7 unmerged axes",
        lambda: build.elementwise("x", 0, (2,) * 7, [_strided((2,) * 7)]),
        topos.ShapeError,
        "keeps 7 axes after merging, more than 6",
    ),
    (
        "a copy over 7 unmerged axes",
        lambda: build.copy(_strided((2,) * 7), View.of_buffer(2, (2,) * 7)),
        topos.ShapeError,
        "keeps 7 axes after merging",
    ),
    (
        "a reduction with no fold",
        lambda: build.reduce("Mean", View.of_buffer(1, (4,)), (0,), 2),
        topos.ArgumentError,
        "no fold for 'Mean'",
    ),
    (
        "an unknown reduction strategy",
        lambda: build.reduce("Sum", View.of_buffer(1, (4,)), (0,), 2, strategy="fast"),
        topos.ArgumentError,
        "unknown reduction strategy 'fast'",
    ),
    (
        "a serial reduction past the loop limit",
        lambda: build.reduce("Sum", View.of_buffer(1, (40000,)), (0,), 2, strategy="serial"),
        topos.ShapeError,
        "40000 iterations of one loop exceed the limit of 32767",
    ),
    (
        "an unknown matmul strategy",
        lambda: build.matmul(View.of_buffer(1, (2, 3)), View.of_buffer(2, (3, 4)), 3, strategy="huge"),
        topos.ArgumentError,
        "unknown matmul strategy 'huge'",
    ),
    (
        "a tiled matmul over too many batches",
        lambda: build.matmul(View.of_buffer(1, (70000, 2, 3)), View.of_buffer(2, (70000, 3, 4)), 3, strategy="tiled"),
        topos.ShapeError,
        "70000 batches exceed a grid dimension",
    ),
    (
        "a matmul over 5 unmerged batch axes",
        lambda: build.matmul(_strided((2,) * 5 + (2, 3)), _strided((2,) * 5 + (3, 4)), 3),
        topos.ShapeError,
        "keep 5 after merging, more than 4",
    ),
    (
        "a softmax over 7 unmerged axes",
        lambda: build.softmax(_strided((2,) * 8), 2),
        topos.ShapeError,
        "keeps more than 6 axes",
    ),
    ("a kernel that is not there", lambda: kernel_text("nope"), topos.ArgumentError, "no kernel file 'nope'"),
    (
        "a kernel without its substitution",
        lambda: specialise("elementwise"),
        topos.ArgumentError,
        r"needs a substitution for \{\{",
    ),
]


@pytest.mark.parametrize(
    "call, error_class, message",
    [case[1:] for case in SHOW_CASES + LAUNCH_CASES],
    ids=[case[0] for case in SHOW_CASES + LAUNCH_CASES],
)
def test_a_hostile_call_raises_a_topos_error_naming_the_cause(call, error_class, message):
    with pytest.raises(error_class, match=message) as caught:
        call()
    assert isinstance(caught.value, topos.ToposError)


def _regression(dtype="float32"):
    def build_tape(tape):
        w = tape.parameter(np.ones((3,)), name="w")
        x = tape.input(np.ones((3,)), name="x")
        return [w, x, ((w * x) ** 2.0).sum()]

    return Tape.record(build_tape, dtype=dtype)


def _trainer_cases():
    network, (w, x, loss) = _regression()
    backward = network.entry([loss]).backward(loss).lower()
    other, _ = _regression()
    wide, (_, _, wide_loss) = _regression("float64")
    wide_plan = wide.entry([wide_loss]).backward(wide_loss).lower()
    return [
        (
            "a plan that is text",
            lambda: DeviceTrainer("plan", network.parameters(), optim.SGD()),
            topos.ArgumentTypeError,
            "takes a Plan .* got str",
        ),
        (
            "a forward-only plan",
            lambda: DeviceTrainer(network.entry([loss]).lower(), network.parameters(), optim.SGD()),
            topos.ArgumentError,
            "needs a forward\\+backward plan",
        ),
        (
            "an optimizer that is text",
            lambda: DeviceTrainer(backward, network.parameters(), "adam"),
            topos.ArgumentTypeError,
            "runs SGD, Adam and AdamW; got str",
        ),
        (
            "parameters that are a dict",
            lambda: DeviceTrainer(backward, {w: [1.0, 1.0, 1.0]}, optim.SGD()),
            topos.ArgumentTypeError,
            "expected a Parameters table, got dict",
        ),
        (
            "parameters of another network",
            lambda: DeviceTrainer(backward, other.parameters(), optim.SGD()),
            topos.FeedError,
            "belong to another network",
        ),
        (
            "a float64 plan, which runs on the host",
            lambda: DeviceTrainer(wide_plan, wide.parameters(), optim.SGD()),
            topos.ArgumentError,
            "cannot train parameter 0 'w' .* no launch reads it",
        ),
    ]


def test_a_device_trainer_refuses_bad_arguments_with_a_topos_error():
    # None of these needs a device: the trainer checks its arguments before it asks for one.
    for name, call, error_class, message in _trainer_cases():
        with pytest.raises(error_class, match=message) as caught:
            call()
        assert isinstance(caught.value, topos.ToposError), name


def test_the_webgpu_runner_and_report_refuse_with_topos_errors():
    from topos import playground
    from topos.webgpu import Program
    from topos.webgpu.runner import default_runner

    with pytest.raises(topos.ArgumentTypeError, match="a program's steps are .* got str"):
        default_runner().run(Program((), ("launch everything",)), {})
    saved = playground.latest_readings
    playground.latest_readings = None
    try:
        with pytest.raises(topos.ToposError, match="no readings yet") as caught:
            playground.webgpu_report_json()
        assert isinstance(caught.value, RuntimeError)
    finally:
        playground.latest_readings = saved


def test_a_registered_primitive_naming_a_family_without_its_rule_runs_on_the_host():
    @register
    class Triple(Primitive):
        name = "TripleForErrorClasses"
        arity = 1
        kernel = "reduce"  # a family whose launches know Sum and Max alone

        def infer(self, metas, attrs):
            return Meta(metas[0].shape, metas[0].dtype)

        def forward(self, inputs, attrs):
            return inputs[0] * 3

    try:
        tape = Tape(dtype="float32")
        x = tape.input(np.ones((2,)), name="x")
        y = tape.apply("TripleForErrorClasses", [x])
        network = tape.seal()
        reading = network.entry([y]).lower().kernels()
        assert reading.declined[y.index] == "no reduce kernel rule for TripleForErrorClasses"
    finally:
        unregister("TripleForErrorClasses")
