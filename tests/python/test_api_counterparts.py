"""The API page's numpy and JAX counterparts (docs/tools/api_counterparts.py) hold: every public name
has a row, every counterpart is a real numpy, scipy or jax name, and the elementwise and reduction
rows compute what their numpy (or scipy) function computes, or their jax.nn function where numpy
has none, NaN and infinities included.

A counterpart that resolves but means something else is the mistake a table of names invites
(``numpy.round`` for a round that breaks ties away from zero, ``scipy.special.logsumexp`` for one
over another axis), so each row marked ``unary``, ``binary`` or ``axis`` runs topos on numpy's
backend in float64 against the named function on the same values. Values are compared where both
are finite to ``tolerances.library_bound`` (two libraries' float64 functions, 1e-10 of each result
plus a floor for results near zero); NaN must be NaN and an infinity the same infinity. XLA and
WebGPU are held to numpy by the op_specs suites, so numpy's backend stands for all three here.
"""

import importlib
import re
import sys
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest
from tolerances import library_bound

import topos
from topos import Tape, detach

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "tools"))

import api_counterparts  # noqa: E402
import api_reference  # noqa: E402

SECTIONS = api_reference.documented_names()
ROWS = [
    (module_name, name, *api_counterparts.row(module_name, name))
    for module_name, rows in api_counterparts.COUNTERPARTS.items()
    for name in rows
]
# Each checked row against its numpy (or scipy) function, or its JAX one where numpy has none.
CHECKED = [(name, numpy_name or jax_name, check) for module, name, numpy_name, jax_name, _, check in ROWS if check]

# Every kind of float an elementwise function meets: the infinities, NaN, both zeros, halves (round's
# ties), tiny values (log1p, expm1, erf keep their digits), -1 and 1 (erfinv's poles, arcsin's edges).
SPECIAL = [-np.inf, -np.nan, -30.0, -3.5, -2.5, -1.0, -0.5, -1e-8, -0.0, 0.0, 1e-8, 0.3, 0.5, 1.0, 1.5, 2.5, 4.0]
SPECIAL += [30.0, np.inf]
UNARY = np.array(SPECIAL)
PAIRED = [-np.inf, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, np.nan]
LEFT, RIGHT = (np.array(side, dtype=np.float64).ravel() for side in np.meshgrid(PAIRED, PAIRED))
# Rows along the last axis: ordinary values, ties, a NaN, both infinities, a row of -inf, zeros.
ROWS_ALONG = np.array(
    [
        [1.5, -2.0, 3.0, 0.5, 0.25],
        [2.0, 1.0, 2.0, -1.0, 1.0],
        [np.nan, 1.0, 2.0, 3.0, -1.0],
        [np.inf, 1.0, -np.inf, 2.0, 0.0],
        [-np.inf, -np.inf, -np.inf, -np.inf, -np.inf],
        [0.0, -0.0, 0.0, 0.0, 0.0],
    ]
)


# Where the row's note says topos follows C and jax rather than scipy: the expected values there, and why.
FOLLOWS_JAX = {
    # |Gamma(x)| grows without bound as x -> -inf between its poles: C99's lgamma, math.lgamma, torch and
    # jax.scipy.special.gammaln give +inf; scipy's gammaln gives -inf.
    "lgamma": lambda x, want: np.where(x == -np.inf, np.inf, want),
    # A row holding +inf: jax.nn.log_softmax and torch give NaN throughout (inf - inf in the shift);
    # scipy gives -inf beside the NaN.
    "log_softmax": lambda x, want: np.where(np.isposinf(x).any(axis=-1, keepdims=True), np.nan, want),
}


def resolve(path):
    """The object a dotted path names: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            value = getattr(value, part)
        return value
    raise ImportError(f"no module in {path!r}")


def test_every_documented_name_has_a_row_and_every_row_a_name():
    missing = [
        f"{module}.{name}"
        for module, names in SECTIONS.items()
        for name in names
        if api_counterparts.row(module, name) is None
    ]
    assert not missing, f"add these to COUNTERPARTS in docs/tools/api_counterparts.py: {missing}"
    stale = [f"{module}.{name}" for module, name, *_ in ROWS if name not in SECTIONS.get(module, ())]
    assert not stale, f"rows for names their module's section does not document: {stale}"


def test_a_new_function_without_a_row_is_named():
    sections = {"topos": ["log1p", "a_new_function"]}
    missing = [name for name in sections["topos"] if api_counterparts.row("topos", name) is None]
    assert missing == ["a_new_function"]


@pytest.mark.parametrize(("module", "name", "numpy_name", "jax_name"), [row[:4] for row in ROWS])
def test_every_counterpart_resolves(module, name, numpy_name, jax_name):
    for path, roots in ((numpy_name, ("numpy.", "scipy.")), (jax_name, ("jax.",))):
        if path:
            assert path.startswith(roots), f"{module}.{name}: {path} is not under {roots}"
            assert resolve(path) is not None, f"{module}.{name}: {path}"
    with pytest.raises(AttributeError):
        resolve("numpy.no_such_function")  # the resolver itself can say no


def run(build, *arrays):
    """``build(*inputs)`` recorded in float64 and run on numpy's backend, as a float64 array (ints kept)."""
    tape = Tape("float64")
    inputs = [tape.input(array) for array in arrays]
    out = detach(build(*inputs))
    network = tape.seal()
    result = network.forward(network.parameters(), dict(zip(detach(inputs), arrays))).of(out)
    return np.asarray(result)


def assert_matches(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, numpy's {want.shape}"
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=what)
        return
    got, want = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN at {np.isnan(got)}, numpy's at {nan}"
    infinite = np.isinf(want)
    assert np.array_equal(got[infinite], want[infinite]), f"{what}: {got[infinite]} for numpy's {want[infinite]}"
    finite = np.isfinite(want)
    bound = library_bound(want[finite], "float64", terms=ROWS_ALONG.shape[-1])
    error = np.abs(got[finite] - want[finite])
    assert np.all(error <= bound.value), f"{what}: {got[finite]} against numpy's {want[finite]} ({bound.why})"


@pytest.mark.parametrize(("name", "numpy_name", "check"), CHECKED, ids=[row[0] for row in CHECKED])
def test_the_function_computes_its_numpy_counterpart(name, numpy_name, check):
    function, reference = getattr(topos, name), resolve(numpy_name)
    if numpy_name.startswith("jax."):
        jax_function = reference

        def reference(*arrays, **options):
            with jax.enable_x64(True):  # jax's float64, as topos's; its default is float32
                return np.asarray(jax_function(*arrays, **options))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's NaN, overflow and division warnings
        if check == "unary":
            got, want = run(function, UNARY), reference(UNARY)
        elif check == "binary":
            got, want = run(function, LEFT, RIGHT), reference(LEFT, RIGHT)
        else:
            assert check == "axis", check
            got = run(lambda x: function(x, axis=-1), ROWS_ALONG)
            want = reference(ROWS_ALONG, axis=-1, **({"kind": "stable"} if name == "argsort" else {}))
    if name in FOLLOWS_JAX:
        followed = FOLLOWS_JAX[name](UNARY if check == "unary" else ROWS_ALONG, want)
        assert not np.array_equal(followed, want, equal_nan=True), f"{name} agrees with {numpy_name} now"
        want = followed
    assert_matches(got, want, f"topos.{name} against {numpy_name}")


def test_the_check_can_fail():
    # A pairing that resolves but is wrong (ceil for floor) is caught by the comparison.
    with pytest.raises(AssertionError, match="against numpy"):
        assert_matches(run(topos.ceil, UNARY), np.floor(UNARY), "topos.ceil against numpy.floor")
    with pytest.raises(AssertionError, match="NaN"):
        assert_matches(np.zeros(2), np.array([np.nan, 0.0]), "zeros")


def test_the_page_shows_each_section_s_table_with_links_to_its_entries():
    text = api_reference.render()
    assert (ROOT / "docs" / "api.md").read_text(encoding="utf-8") == text, "run python docs/tools/build_docs.py api"
    anchors = {api_reference.slug(heading) for heading in re.findall(r"(?m)^#{2,4} (.+)$", text)}
    for module, names in SECTIONS.items():
        section = text.split(f"## `{module}`\n", 1)[1].split("\n## ", 1)[0]
        linked = re.findall(r"(?m)^\| \[`([\w.]+)`\]\(#([\w-]+)\) \|", section)
        assert [name for name, _ in linked] == names, module
        assert all(anchor in anchors for _, anchor in linked), [a for _, a in linked if a not in anchors]
    assert "| [`log1p`](#topos-log1p-v) | `numpy.log1p` | `jax.numpy.log1p` |" in text
    assert "| [`silu`](#topos-silu-x) | — | `jax.nn.silu` |" in text
