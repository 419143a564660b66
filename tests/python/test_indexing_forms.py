"""Every index numpy takes either records (issue 29) or raises ``IndexingError`` naming the form and the line.

Each recorded form is held to numpy's result on the same array, runs through
every reading (the spec, the graph, the plan with its gradient, StableHLO
executed by XLA, the kernels reading), and its gradient is held to
``torch.autograd.grad`` of the same indexing: topos differentiates
``sum(x[index] * u)`` for a random cotangent ``u``, torch the same expression.
Torch refuses negative slice steps and reads an int among index arrays as basic
(numpy counts it as advanced), so those rows spell the same selection for torch
themselves. Each refused form is held to its class, words naming the form, and
the line of this file that indexed. Drawn indices that mix every form are held
to numpy's result, or to numpy's refusal.
"""

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from tolerances import assert_close, sum_bound

import topos
from topos import Graph, Tape, detach

SHAPE = (4, 3, 5)


@dataclass
class Recorded:
    """An index fed as an int32 recorded value (``tape.input(positions, dtype="int32")``)."""

    positions: np.ndarray


@dataclass
class Form:
    """``x[index]`` on an array of ``shape``; ``torch_index`` where torch spells the selection otherwise."""

    label: str
    index: object
    shape: tuple = SHAPE
    torch_index: object = None


FORMS = [
    # Basic: ints, slices, None, ... (a negative step reverses the axis first).
    Form("an int", 2),
    Form("a negative int", -1),
    Form("ints and slices", (1, slice(0, 3, 2), -2)),
    Form("None", (None, 1, None)),
    Form("np.newaxis between slices", (slice(None), np.newaxis, slice(1, 3))),
    Form("an ellipsis", (Ellipsis, 1)),
    Form("an ellipsis and None", (0, Ellipsis, None)),
    Form("a negative step", (slice(None, None, -1),), torch_index=lambda t: t.flip(0)),
    Form(
        "negative steps on two axes",
        (slice(3, 0, -2), 1, slice(None, None, -3)),
        torch_index=lambda t: t.flip(0)[0:3:2, 1].flip(-1)[..., ::3],
    ),
    Form("a negative step that takes nothing", (slice(0, 3, -1),), torch_index=lambda t: t[0:0]),
    Form("a step that takes nothing", (slice(0, 0, 2), slice(None, None, 2))),
    Form("a negative step of an empty value", (slice(None), slice(None, None, -1)), (0, 3), lambda t: t.flip(1)),
    # Integer arrays of every integer dtype and of rank 0, 1 and 2.
    *(Form(f"a {dtype} array", np.array([3, 0, -1, 3], dtype)) for dtype in ("int8", "int16", "int32", "int64")),
    *(Form(f"a {dtype} array", np.array([3, 0, 2, 3], dtype)) for dtype in ("uint8", "uint16", "uint32", "uint64")),
    Form("a 0-d int array", np.array(2)),
    Form("a 2-d int array", np.array([[0, 1], [3, 3], [-4, 2]])),
    Form("a list of ints", [1, 1, 0]),
    Form("an empty list", []),
    Form("an array on the second axis", (slice(None), np.array([2, 0, 2]))),
    Form("a tuple of ints in a tuple", ((2, 0),)),
    # Several arrays broadcast together; adjacent ones stay in place, separated ones go to the front.
    Form("two adjacent arrays", (slice(None), [0, 2, 1], [4, -1, 0])),
    Form("two arrays that broadcast", (np.array([[0], [3]]), np.array([1, 2, 0]))),
    Form("two separated arrays", ([0, 3], slice(None), [1, 4])),
    Form("an int and a separated array", (0, slice(None), [1, 4]), torch_index=lambda t: t[[0, 0], :, [1, 4]]),
    Form("arrays separated by None", ([0, 3], None, [2, 0])),
    Form("arrays separated by an ellipsis", ([1, 2], Ellipsis, [0, 4])),
    Form(
        "arrays, a slice and a negative step",
        ([2, 2], slice(None, None, -1), slice(1, 4)),
        torch_index=lambda t: t[[2, 2]].flip(1)[..., 1:4],
    ),
    # Boolean masks of static shape: their True positions, known when recording.
    Form("a boolean mask of the first axis", np.array([True, False, True, True])),
    Form("a list of bools", [False, True, False, True]),
    Form("a 2-d boolean mask", np.arange(12).reshape(4, 3) % 5 < 2),
    Form("a boolean mask of the last axes", (Ellipsis, np.arange(15).reshape(3, 5) % 4 == 1)),
    Form("a mask and an array", (np.array([True, False, False, True]), slice(None), [4, 0])),
    Form("a mask that keeps nothing", np.zeros(4, dtype=bool)),
    Form("a scalar True", (slice(None), True)),
    Form("a scalar False", False),
    # int32 recorded values as indices.
    Form("an int32 value", Recorded(np.array([3, 0, 3]))),
    Form("a 2-d int32 value on the last axis", (Ellipsis, Recorded(np.array([[4, 0], [1, 1]])))),
    Form("a 0-d int32 value", (slice(1, 3), Recorded(np.array(2)))),
    Form(
        "an int32 value and a separated int",
        (Recorded(np.array([1, 2])), slice(None), 3),
        torch_index=lambda t: t[[1, 2], :, [3, 3]],
    ),
]


def spelled(index, recorded):
    """The index with each ``Recorded`` replaced by ``recorded(positions)``."""
    if isinstance(index, Recorded):
        return recorded(index)
    if isinstance(index, tuple):
        return tuple(spelled(item, recorded) for item in index)
    return index


def torch_spelled(item):
    """numpy's index as torch takes it: arrays become tensors (int64 or bool), the rest stays."""
    if isinstance(item, tuple):
        return tuple(torch_spelled(i) for i in item)
    if isinstance(item, np.ndarray):
        return torch.as_tensor(item.astype(np.int64) if item.dtype != bool else item)
    return item


def record(form, rng):
    """The form recorded on a float64 parameter, weighed by a random cotangent; the arrays both sides use."""
    data = rng.standard_normal(form.shape)
    expected = data[spelled(form.index, lambda r: r.positions)]
    cotangent = rng.standard_normal(expected.shape)

    def build(tape):
        x = tape.parameter(data, name="x")
        picked = x[spelled(form.index, lambda r: tape.input(r.positions.astype(np.int32), dtype="int32"))]
        return [x, picked, topos.sum(picked * cotangent)]

    network, symbols = Tape.record(build, dtype="float64")
    return network, symbols, data, expected, cotangent


def torch_gradient(form, data, cotangent):
    x = torch.tensor(data, requires_grad=True)
    if form.torch_index is not None:
        picked = form.torch_index(x)
    else:
        picked = x[torch_spelled(spelled(form.index, lambda r: r.positions))]
    (gradient,) = torch.autograd.grad((picked * torch.tensor(cotangent)).sum(), x)
    return picked.detach().numpy(), gradient.numpy()


def scatter_bound(form, data, cotangent):
    """The gradient adds ``u`` at every position an element was picked from: two orders of those sums."""
    magnitude = torch_gradient(form, np.zeros_like(data), np.abs(cotangent))[1]
    counts = torch_gradient(form, np.zeros_like(data), np.ones_like(cotangent))[1]
    return sum_bound(magnitude, int(np.max(counts, initial=1)), "float64")


@pytest.mark.parametrize("form", FORMS, ids=lambda form: form.label)
def test_each_form_records_numpys_result_and_torchs_gradient_on_every_reading(form):
    rng = np.random.default_rng(29)
    network, (x, picked, loss), data, expected, cotangent = record(form, rng)
    run = network.forward(network.parameters(), {})
    np.testing.assert_array_equal(run.of(picked).numpy(), expected)
    torch_picked, torch_grad = torch_gradient(form, data, cotangent)
    np.testing.assert_array_equal(torch_picked, expected)  # the torch spelling selects what numpy does
    bound = scatter_bound(form, data, cotangent)
    assert_close(run.backward(loss).of(x).numpy(), torch_grad, bound, f"{form.label}: the gradient")

    assert "Parameter" in network.describe()
    assert Graph.from_nodes(network.nodes()).to_json()
    plan = network.entry([picked]).backward(loss).lower()
    assert plan.describe() and plan.graph()
    assert "stablehlo" in plan.emit_stablehlo()
    outputs = plan.run(network.parameters(), backend="xla").outputs()
    np.testing.assert_array_equal(outputs[0], expected)
    assert_close(outputs[1], torch_grad, bound, f"{form.label}: the gradient on XLA")
    assert plan.kernels().describe()


def test_a_list_records_one_take_and_a_negative_step_a_reverse():
    # What the docs promise of the recording: no needless Slice, Reshape or gather.
    tape = Tape()
    x = tape.parameter(np.ones((3, 4)), name="x")
    x[[2, 0, 2]]
    x[::-1, 1:]
    opcodes = [row.split()[1] for row in tape.describe().splitlines()[1:-1]]
    assert opcodes == ["Leaf", "Take", "Reverse", "Slice"]


def refusal_cases():
    """(form, how it is indexed, words the message must hold): ``x`` [4, 3, 5], ``ids`` int32, ``mask`` float, ``bits`` uint32."""
    return [
        ("a float array", lambda x, ids, mask, bits: x[np.array([0.0, 1.0])], "an index array of dtype float64"),
        ("a list of floats", lambda x, ids, mask, bits: x[[0.5]], "an index array of dtype float64"),
        ("a float", lambda x, ids, mask, bits: x[1.0], "unsupported index 1.0"),
        ("a string", lambda x, ids, mask, bits: x["a"], "unsupported index 'a'"),
        ("a ragged list", lambda x, ids, mask, bits: x[[0, [1, 2]]], "a ragged list as an index"),
        ("a recorded mask", lambda x, ids, mask, bits: x[mask], "a recorded float64 value as an index (a mask)"),
        ("a recorded uint32 value", lambda x, ids, mask, bits: x[bits], "recorded indices are int32"),
        (
            "a recorded index and an array",
            lambda x, ids, mask, bits: x[ids, [0, 1]],
            "a recorded index with other index arrays",
        ),
        ("a recorded value in a list", lambda x, ids, mask, bits: x[[ids]], "a list holding recorded values"),
        ("two recorded indices", lambda x, ids, mask, bits: x[ids, ids], "a recorded index with other index arrays"),
        (
            "an array index out of range",
            lambda x, ids, mask, bits: x[:, [0, 3]],
            "an index array's index 3 is out of range for axis 1 with extent 3",
        ),
        (
            "a negative array index out of range",
            lambda x, ids, mask, bits: x[[-5]],
            "an index array's index -5 is out of range for axis 0",
        ),
        ("an int out of range", lambda x, ids, mask, bits: x[4], "index 4 is out of range for axis 0 with extent 4"),
        (
            "a mask of the wrong shape",
            lambda x, ids, mask, bits: x[[True, False]],
            "a boolean mask of shape [2] for axes 0..0 of extents [4]",
        ),
        (
            "arrays that do not broadcast",
            lambda x, ids, mask, bits: x[[0, 1], [0, 1, 2]],
            "index arrays of shapes [2] [3] do not broadcast",
        ),
        ("too many indices", lambda x, ids, mask, bits: x[0, 0, 0, 0], "too many indices: 4 for 3 axes"),
        (
            "a mask with too many axes",
            lambda x, ids, mask, bits: x[np.ones((4, 3, 5, 1), bool)],
            "too many indices: 4 for 3 axes",
        ),
        ("two ellipses", lambda x, ids, mask, bits: x[..., 0, ...], "a single ellipsis"),
        ("a slice of text", lambda x, ids, mask, bits: x["a":], "slice"),
        ("a zero step", lambda x, ids, mask, bits: x[::0], "slice step cannot be zero"),
    ]


@pytest.mark.parametrize("label, call, words", refusal_cases(), ids=[case[0] for case in refusal_cases()])
def test_each_refused_form_raises_an_indexing_error_naming_it_and_the_line(label, call, words):
    tape = Tape()
    x = tape.parameter(np.zeros(SHAPE), name="x")
    ids = tape.input(np.array([0, 1]), dtype="int32", name="ids")
    mask = tape.input(np.ones(4), name="mask")
    bits = tape.leaf(np.array([1], np.uint32))
    before = tape.describe()
    with pytest.raises(topos.IndexingError) as caught:
        call(x, ids, mask, bits)
    line = call.__code__.co_firstlineno
    assert words in str(caught.value)
    assert caught.value.source == (__file__, line)
    assert str(caught.value).endswith(f"(recorded at {__file__}:{line})")
    assert tape.describe() == before  # nothing recorded


def test_item_assignment_is_refused_at_its_line_with_the_functional_form():
    tape = Tape()
    x = tape.parameter(np.zeros(3), name="x")
    with pytest.raises(topos.IndexingError) as caught:
        x[0] = 1.0
    line = test_item_assignment_is_refused_at_its_line_with_the_functional_form.__code__.co_firstlineno + 4
    assert "item assignment" in str(caught.value) and "topos.where" in str(caught.value)
    assert caught.value.source == (__file__, line)


def test_a_recorded_index_is_checked_when_it_runs_and_never_wrapped():
    def build(tape):
        x = tape.parameter(np.arange(4.0), name="x")
        ids = tape.input(np.array([0, 1]), dtype="int32", name="ids")
        return [ids, x[ids]]

    network, (ids, picked) = Tape.record(build)
    np.testing.assert_array_equal(network.forward(network.parameters(), {ids: [3, 2]}).of(picked).numpy(), [3.0, 2.0])
    with pytest.raises(topos.IndexingError, match=r"Take: index -1 at \[1\] is out of range for axis 0 of \[4\]"):
        network.forward(network.parameters(), {ids: [0, -1]})


# Drawn indices: whatever numpy does, topos does ---------------------------------------------------


@st.composite
def array_and_any_index(draw):
    """An array and an index mixing ints, slices of any step, None, ..., integer arrays of a few
    shapes (which may not broadcast), boolean masks and scalar booleans, in any order."""
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    items = []
    for extent in shape[: draw(st.integers(0, len(shape)))]:
        kind = draw(st.sampled_from(["int", "slice", "array", "mask", "None", "bool"]))
        if kind == "int" and extent:
            items.append(draw(st.integers(-extent, extent - 1)))
            continue
        if kind == "array":
            positions = st.integers(-extent, extent - 1) if extent else st.nothing()
            index_shape = draw(st.sampled_from([(), (1,), (2,), (3,), (2, 1)])) if extent else (0,)
            flat = draw(st.lists(positions, min_size=math.prod(index_shape), max_size=math.prod(index_shape)))
            items.append(np.array(flat, dtype=np.int64).reshape(index_shape))
            continue
        if kind == "mask":
            items.append(np.array(draw(st.lists(st.booleans(), min_size=extent, max_size=extent)), dtype=bool))
            continue
        if kind in ("None", "bool"):
            items.append(None if kind == "None" else draw(st.booleans()))
        items.append(
            slice(
                draw(st.integers(-5, 5) | st.none()),
                draw(st.integers(-5, 5) | st.none()),
                draw(st.sampled_from([None, 1, 2, -1, -2, -3])),
            )
        )
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    array = np.arange(math.prod(shape), dtype=float).reshape(shape)
    return array, tuple(items)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(array_and_any_index())
def test_any_drawn_index_gives_numpys_result_or_numpys_refusal(drawn):
    array, index = drawn
    tape = Tape()
    x = tape.input(array, name="x")
    try:
        expected = array[index]
    except IndexError:
        # numpy refuses it (arrays that do not broadcast, say): topos refuses it too, in its own words.
        with pytest.raises(topos.IndexingError):
            x[index]
        return
    picked = x[index]
    network = tape.seal()
    got = network.forward(network.parameters(), {}).of(detach(picked)).numpy()
    np.testing.assert_array_equal(got, expected)
