"""Bodies (topos.model.bodies): a function recorded once on a tape of its own, what it closed over
lifted in, and its nodes walked through an emitter (topos.ops.bodies)."""

import numpy as np
import pytest

import topos
from topos.model.autodiff import EagerEmitter
from topos.model.bodies import BodyTape, local, trace
from topos.ops.bodies import evaluate, inline
from topos.ops.registry import Meta


def _sources(body, arguments, captured):
    sources = dict(zip(body.arguments, arguments))
    sources.update(zip(body.captured_inputs, captured))
    return sources


def test_a_body_lifts_what_it_closes_over_and_hoists_what_reads_only_outer_values():
    tape = topos.Tape()
    w = tape.parameter(np.arange(6.0).reshape(3, 2) / 7)
    before = len(tape)

    def f(row):
        return topos.tanh(row @ w).sum(), topos.exp(w).sum()

    body = trace(f, [Meta((3,), "float64")], tape)
    # exp(w).sum() reads only w: recorded once on the calling tape, then lifted as one value.
    assert [n.opcode for n in tape.nodes()[before:]] == ["Exp", "Sum"]
    assert [(v.tape, v.index) for v in body.captured] == [(tape, w.index), (tape, before + 1)]
    assert [body.nodes[i].opcode for i in body.arguments + body.captured_inputs] == ["Input"] * 3
    assert body.structure is not None and body.rebuild(["a", "b"]) == ("a", "b")
    row = np.array([0.5, -1.0, 2.0])
    w0 = np.arange(6.0).reshape(3, 2) / 7
    got = evaluate(body.nodes, _sources(body, [row], [w0, np.exp(w0).sum()]), body.outputs)
    assert got[0] == np.tanh(row @ w0).sum() and got[1] == np.exp(w0).sum()


def test_inline_through_the_eager_emitter_computes_what_evaluate_does():
    tape = topos.Tape()
    scale = tape.parameter(1.5)

    def f(x, y):
        return topos.where(topos.less(x, y), x * scale, y - 2.0)

    body = trace(f, [Meta((4,), "float64"), Meta((4,), "float64")], tape)
    x, y = np.array([1.0, 5.0, -2.0, 0.0]), np.array([2.0, 1.0, -3.0, 0.0])
    sources = _sources(body, [x, y], [np.array(1.5)])
    handles = inline(EagerEmitter(), body.nodes, sources)
    (expected,) = evaluate(body.nodes, sources, body.outputs)
    np.testing.assert_array_equal(handles[body.outputs[0]], expected)
    np.testing.assert_array_equal(expected, np.where(x < y, x * 1.5, y - 2.0))


def test_a_body_inside_a_body_lifts_a_value_of_the_outermost_tape_through_each():
    tape = topos.Tape()
    w = tape.parameter(2.0)
    inner_bodies = []

    def outer_fn(x):
        def inner_fn(z):
            return z * w + x

        inner = trace(inner_fn, [Meta((), "float64")], x.tape)
        inner_bodies.append(inner)
        # The middle body records a node over the inner body's captured values: lifted into it.
        return sum((local(x.tape, v) for v in inner.captured), x)

    body = trace(outer_fn, [Meta((), "float64")], tape)
    (inner,) = inner_bodies
    assert (inner.captured[0].tape, inner.captured[0].index) == (tape, w.index)
    assert isinstance(inner.captured[1].tape, BodyTape) and inner.captured[1].tape.outer is tape
    assert [v.index for v in body.captured] == [w.index]


def test_a_value_of_an_unrelated_tape_is_refused_naming_the_line():
    other = topos.Tape().parameter(1.0)
    tape = topos.Tape()
    with pytest.raises(topos.RecordingError, match="different tapes"):
        trace(lambda x: x + other, [Meta((), "float64")], tape)
    with pytest.raises(topos.RecordingError, match="different tapes"):
        tape.parameter(1.0) + other


def test_a_body_returns_numbers_and_nested_structures():
    tape = topos.Tape()
    body = trace(lambda x: [x, (2.0, x * x)], [Meta((2,), "float64")], tape)
    assert len(body.outputs) == 3 and body.nodes[body.outputs[1]].opcode == "Leaf"
    assert body.rebuild([1, 2, 3]) == [1, (2, 3)]
