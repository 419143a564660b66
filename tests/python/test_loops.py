"""Loops that stay loops (topos.scan, topos.fori_loop): one Scan node, its step held once as a body.

Each loop is held to the same loop unrolled in a recording (the same numpy ops in the same order:
bit-identical values and gradients where the summation order is the same too, else tolerances.py's
bounds), to torch (a small RNN, forward and backward), and to XLA running the emitted
stablehlo.while; the node count does not depend on the trip count, a network with a loop saves
and loads, and a body that fails or changes a carry is refused naming the user's line.
"""

import os

import numpy as np
import pytest
import torch
from tolerances import assert_close, scaled_bound

import topos
from topos import ShapeError, Tape, detach

W = np.array([[0.5, -0.2, 0.3], [0.1, 0.3, -0.4], [0.2, 0.0, 0.6]])
XS = np.sin(np.arange(21.0)).reshape(7, 3)
H0 = np.array([0.1, -0.3, 0.2])


def _rnn(tape, loop, reverse=False, dtype="float64", extra_read=False):
    """A tanh RNN over XS: the loss reads the final state and every step's output."""
    w = tape.parameter(W.astype(dtype), name="w")
    h0 = tape.parameter(H0.astype(dtype), name="h0")
    xs = tape.parameter(XS.astype(dtype), name="xs")

    def step(h, x):
        h = topos.tanh(h @ w + x)
        return h, (h * h).sum()

    if loop:
        h, ys = topos.scan(step, h0, xs, reverse=reverse)
    else:
        h, outputs = h0, [None] * len(XS)
        for t in reversed(range(len(XS))) if reverse else range(len(XS)):
            h, outputs[t] = step(h, xs[t])
        ys = topos.stack(outputs)
    loss = (h * h).sum() + (ys * ys).sum()
    if extra_read:  # w read outside the loop too: its gradient's two parts are added in another order
        loss = loss + w.sum()
    return [loss, w, h0, xs]


def _values_and_gradients(loop, **options):
    network, (loss, *wrt) = Tape.record(lambda tape: _rnn(tape, loop, **options), dtype=options.get("dtype", "float64"))
    plan = network.entry([loss]).backward(loss, wrt).lower()
    return plan.run(network.parameters()).outputs(), network, plan


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_is_bit_identical_to_the_loop_unrolled_in_a_recording(reverse):
    looped, _, _ = _values_and_gradients(True, reverse=reverse)
    unrolled, _, _ = _values_and_gradients(False, reverse=reverse)
    for got, want in zip(looped, unrolled):
        np.testing.assert_array_equal(got, want)


def test_a_value_read_inside_and_outside_the_loop_sums_its_gradient_in_another_order():
    looped, _, _ = _values_and_gradients(True, extra_read=True)
    unrolled, _, _ = _values_and_gradients(False, extra_read=True)
    np.testing.assert_array_equal(looped[0], unrolled[0])  # the forward is the same ops in the same order
    for got, want in zip(looped[1:], unrolled[1:]):
        # Eight contributions to w's gradient (seven steps and the loss's sum), added in two orders.
        assert_close(got, want, scaled_bound(want, "float64", terms=8), "gradient")


def test_eager_backward_and_the_gradient_reading_agree():
    network, (loss, *wrt) = Tape.record(lambda tape: _rnn(tape, True))
    field = network.forward(network.parameters(), {}).backward(loss)
    looped, _, _ = _values_and_gradients(True)
    for symbol, planned in zip(wrt, looped[1:]):
        np.testing.assert_array_equal(np.asarray(field.of(symbol)), planned)


def test_scan_and_its_gradient_equal_torch_on_a_small_rnn():
    looped, _, _ = _values_and_gradients(True)
    w, h, xs = (torch.tensor(a, requires_grad=True) for a in (W, H0, XS))
    state, ys = h, []
    for x in xs:
        state = torch.tanh(state @ w + x)
        ys.append((state * state).sum())
    loss = (state * state).sum() + (torch.stack(ys) ** 2).sum()
    loss.backward()
    expected = [loss.detach().numpy(), w.grad.numpy(), h.grad.numpy(), xs.grad.numpy()]
    for got, want in zip(looped, expected):
        # Seven steps of three-term products and their backward: a chain of short sums, judged at the scale.
        assert_close(got, want, scaled_bound(want, "float64", terms=3 * len(XS), k=16.0), "against torch")


def test_fori_loop_equals_the_unrolled_loop_and_passes_the_index():
    def record(loop):
        def build(tape):
            x = tape.parameter(np.array([0.3, -0.7]), name="x")

            def body(i, value):
                return topos.sin(value) * 0.9 + i * 0.01

            if loop:
                final = topos.fori_loop(2, 9, body, x)
            else:
                final = x
                for i in range(2, 9):
                    final = body(tape.leaf(float(i)), final)
            loss = (final * final).sum()
            return [loss, topos.grad(loss, x)]

        network, symbols = Tape.record(build)
        run = network.forward(network.parameters(), {})
        return [np.asarray(run.of(s)) for s in symbols]

    for got, want in zip(record(True), record(False)):
        np.testing.assert_array_equal(got, want)


def test_the_recording_does_not_grow_with_the_trip_count():
    counts = {}
    for steps in (10, 10_000):
        tape = Tape()
        x = tape.parameter(np.array([0.5, 0.25]), name="x")
        final = topos.fori_loop(0, steps, lambda i, v: v * 0.999 + 0.001, x)
        gradient = topos.grad(final.sum(), x)
        counts[steps] = len(tape)
        # One Scan forward; the gradient's Scan that keeps the carries and its backward Scan.
        assert [node.opcode for node in tape.nodes()].count("Scan") == 3
        network = tape.seal()
        run = network.forward(network.parameters(), {})
        expected = np.array([0.5, 0.25]) * 0.999**steps + (1 - 0.999**steps)
        assert_close(run.of(detach(final)), expected, scaled_bound(expected, "float64", terms=steps), "fori_loop")
        slope = np.full(2, 0.999**steps)  # d final / d x: the product of the steps' 0.999
        assert_close(run.of(detach(gradient)), slope, scaled_bound(slope, "float64", terms=steps), "gradient")
    assert counts[10] == counts[10_000]


def test_jvp_and_second_order_go_through_the_loop():
    def record(loop):
        def build(tape):
            loss, w, h0, xs = _rnn(tape, loop)
            g = topos.grad(loss, w)
            second = topos.grad((g * g).sum(), [w, xs])
            tangent = topos.jvp(loss, w, tape.leaf(np.ones_like(W)))
            return second + [tangent]

        network, symbols = Tape.record(build)
        run = network.forward(network.parameters(), {})
        return [np.asarray(run.of(s)) for s in symbols]

    for got, want in zip(record(True), record(False)):
        assert_close(got, want, scaled_bound(want, "float64", terms=3 * len(XS), k=16.0), "second order")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_xla_runs_the_emitted_while_loop_equal_to_the_interpreter(dtype):
    looped, network, plan = _values_and_gradients(True, reverse=True, dtype=dtype)
    text = plan.emit_stablehlo()
    assert text.count("stablehlo.while") == 3  # the forward, the carries kept for the backward, the backward
    from_xla = plan.run(network.parameters(), backend="xla").outputs()
    for got, want in zip(from_xla, looped):
        # XLA fuses and reorders the step's three-term products: rounding of a short chain of sums.
        assert_close(got, want, scaled_bound(want, dtype, terms=3 * len(XS), k=16.0), f"XLA {dtype}")


def test_a_network_with_a_loop_saves_and_loads(tmp_path):
    network, (loss, *wrt) = Tape.record(lambda tape: _rnn(tape, True))
    path = os.path.join(tmp_path, "rnn.json")
    network.save(path)
    loaded = topos.Network.load(path)
    assert loaded.describe() == network.describe()
    assert "body of 3: arguments" in loaded.describe()
    before = network.entry([loss]).backward(loss, wrt).lower().run(network.parameters()).outputs()
    symbols = [loaded.symbol(s.index) for s in [loss] + wrt]
    after = loaded.entry([symbols[0]]).backward(symbols[0], symbols[1:]).lower().run(loaded.parameters()).outputs()
    for got, want in zip(after, before):
        np.testing.assert_array_equal(got, want)


def test_a_damaged_body_is_refused_on_load(tmp_path):
    import json

    network, _ = Tape.record(lambda tape: _rnn(tape, True))
    path = os.path.join(tmp_path, "rnn.json")
    network.save(path)
    document = json.loads(open(path).read())
    scan = next(entry for entry in document["nodes"] if entry["opcode"] == "Scan")
    scan["attrs"]["body"]["body"]["outputs"] = [999]
    open(path, "w").write(json.dumps(document))
    with pytest.raises(topos.CheckpointError, match="body"):
        topos.Network.load(path)


def test_the_spec_shows_the_body_once_under_its_node():
    tape = Tape()
    _rnn(tape, True)
    text = tape.describe()
    assert "Scan" in text and "body=<" in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "  Scan  " in line)
    assert lines[at + 1].startswith("      body of ") and lines[at + 2].startswith("         0  Input")
    assert text.count("body of ") == 1


def test_a_body_that_fails_names_the_users_line():
    tape = Tape()
    h0 = tape.input(np.zeros(3))
    xs = tape.input(np.zeros((4, 2)))
    with pytest.raises(ShapeError) as caught:
        topos.scan(lambda h, x: (h + x, h), h0, xs)  # [3] + [2]: the line of this lambda
    assert caught.value.source is not None and caught.value.source[0] == __file__


def test_a_carry_the_body_changes_is_refused():
    tape = Tape()
    h0 = tape.input(np.zeros(3))
    xs = tape.input(np.zeros((4, 3)))
    with pytest.raises(ShapeError, match="carry 0 as \\[\\] float64, where it came in as \\[3\\]"):
        topos.scan(lambda h, x: ((h * x).sum(), h), h0, xs)
    with pytest.raises(ShapeError, match="carry 0 as \\[3\\] int32"):
        topos.scan(lambda h, x: (topos.argmax(topos.stack([h, x]), axis=0), h), h0, xs)
    with pytest.raises(ShapeError, match="one length"):
        topos.scan(lambda h, x: (h, h), h0, None)


def test_the_graph_carries_the_body_and_the_cost_is_the_bodys_times_the_trip_count():
    tape = Tape()
    loss, *_ = _rnn(tape, True)
    scan = next(node for node in tape.nodes() if node.opcode == "Scan")
    entry = topos.Graph.from_nodes(tape.nodes()).to_json()["nodes"][scan.index]
    region = scan.attrs["body"]
    assert entry["attrs"]["body"] == repr(region) and len(entry["body"]["nodes"]) == len(region.nodes)
    assert entry["body"]["edges"] == [[j, n.index] for n in region.nodes for j in n.operands]
    primitive = topos.ops.lookup("Scan")
    once = [
        topos.ops.lookup(n.opcode).cost([region.nodes[j].meta for j in n.operands], n.meta, n.attrs)
        for n in region.nodes
        if n.operands
    ]
    operands = [tape.nodes()[j].meta for j in scan.operands]
    flops, moved = primitive.cost(operands, scan.meta, scan.attrs)
    assert (flops, moved) == (sum(f for f, _ in once) * len(XS), sum(b for _, b in once) * len(XS))


def test_the_plan_shows_each_step_once_with_its_schedule_and_memory():
    network, (loss, w, *_) = Tape.record(lambda tape: _rnn(tape, True))
    plan = network.entry([loss]).backward(loss, [w]).lower()
    rows = plan.describe().splitlines()
    scans = [i for i, row in enumerate(rows) if "  Scan  " in row]
    assert len(scans) == 3  # the forward, the carries kept for the backward, the backward
    for at in scans:
        header = rows[at + 1]
        assert header.startswith(f"      body of {rows[at].split()[0]}, run {len(XS)} times: ")
        assert "live volume a step: peak " in header
        # The step's rows follow, indented, each with its fate inside the step; its outputs are kept.
        step = [row for row in rows[at + 2 :] if row.startswith("        ")]
        fates = [" kept" in row or " freed after " in row for row in step if "body of" not in row]
        assert fates and all(fates)
        assert any(" kept" in row for row in step)


def _branching(tape, flag, use_cond):
    x = tape.parameter(np.array([0.3, -0.7, 1.2]), name="x")
    w = tape.parameter(np.array([0.5, 2.0, -1.0]), name="w")
    p = tape.input(flag, name="p")

    def high(a):
        return topos.sin(a * w), (a * a).sum()

    def low(a):
        return topos.exp(a) - w, a.sum() * 3.0

    u, s = topos.cond(topos.greater(p, 0.5), high, low, x) if use_cond else (high if flag > 0.5 else low)(x)
    loss = (u * u).sum() + s * s
    return [loss, *topos.grad(loss, [x, w])]


@pytest.mark.parametrize("flag", [1.0, 0.0])
def test_cond_is_the_chosen_branch_recorded_plainly_values_and_gradients(flag):
    results = []
    for use_cond in (True, False):
        network, symbols = Tape.record(lambda tape, use_cond=use_cond: _branching(tape, flag, use_cond))
        run = network.forward(network.parameters(), {})
        results.append([np.asarray(run.of(s)) for s in symbols])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


def test_cond_runs_either_branch_from_a_fed_predicate_and_on_xla():
    network, (loss, gx, gw) = Tape.record(lambda tape: _branching(tape, 1.0, True))
    assert [node.opcode for node in network.nodes()].count("Cond") == 2  # the forward and its derivative
    p = next(network.symbol(n.index) for n in network.nodes() if n.name == "p")
    plan = network.entry([loss, gx, gw]).lower()
    assert plan.emit_stablehlo().count('"stablehlo.if"') == 2
    for flag in (1.0, 0.0):
        expected = [np.asarray(plan.run(network.parameters(), {p: flag}).of(s)) for s in (loss, gx, gw)]
        network_other, symbols = Tape.record(lambda tape, flag=flag: _branching(tape, flag, False))
        run = network_other.forward(network_other.parameters(), {})
        for got, want in zip(expected, (run.of(s) for s in symbols)):
            np.testing.assert_array_equal(got, np.asarray(want))
        from_xla = plan.run(network.parameters(), {p: flag}, backend="xla").outputs()
        for got, want in zip(from_xla, expected):
            assert_close(got, want, scaled_bound(want, "float64", terms=3, k=16.0), "XLA cond")


def test_branches_that_return_different_shapes_are_refused():
    tape = Tape()
    x = tape.input(np.ones(3))
    with pytest.raises(ShapeError, match="the branches return different values"):
        topos.cond(topos.greater(x.sum(), 0.0), lambda a: a, lambda a: a.sum(), x)


def test_iree_runs_the_loop_and_the_branch_as_the_interpreter():
    """The portable text (the default's too: a Scan and a Cond write no LAPACK call) compiles with
    iree-compile and runs equal to the interpreter in float32."""
    from test_iree import compile_for_cpu, run_on_iree

    looped, network, plan = _values_and_gradients(True, reverse=True, dtype="float32")
    branching, symbols = Tape.record(lambda tape: _branching(tape, 0.0, True), dtype="float32")
    branch_plan = branching.entry(symbols).lower()
    cases = [(network, plan, looped), (branching, branch_plan, branch_plan.run(branching.parameters()).outputs())]
    for net, planned, expected in cases:
        binary = compile_for_cpu(planned.emit_stablehlo(portable=True))
        got = run_on_iree(binary, planned.argument_values(net.parameters()))
        for value, want in zip(got, expected):
            assert_close(value, want, scaled_bound(want, "float32", terms=3 * len(XS), k=16.0), "IREE")


def _halving(tape, loop, limit=5.0):
    x = tape.parameter(np.array([0.3, -0.7]), name="x")
    w = tape.parameter(np.array(1.3), name="w")
    bound = tape.input(limit, name="limit")
    if loop:
        more = lambda c: topos.less(c[1], bound)  # noqa: E731
        x_final, _ = topos.while_loop(more, lambda c: (topos.sin(c[0] * w) + c[0], c[1] + 1.0), (x, 0.0))
    else:
        x_final = x
        for _ in range(int(limit)):
            x_final = topos.sin(x_final * w) + x_final
    loss = (x_final * x_final).sum()
    gradients = topos.grad(loss, [x, w])
    return [loss, *gradients, *topos.grad((gradients[0] * gradients[0]).sum(), [x, w])]


def test_while_loop_values_and_gradients_equal_the_unrolled_loop():
    results = []
    for loop in (True, False):
        network, symbols = Tape.record(lambda tape, loop=loop: _halving(tape, loop))
        run = network.forward(network.parameters(), {})
        results.append([np.asarray(run.of(s)) for s in symbols])
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for got, want in zip(results[0][1:], results[1][1:]):
        # The gradients' contributions are summed in another order (running sums in the backward loop),
        # and the second order's through chains of five steps' products, of either sign: a short chain
        # of reductions, as the RNN's second order above.
        assert_close(got, want, scaled_bound(want, "float64", terms=10, k=16.0), "while_loop gradient")


def test_while_loop_of_one_carry_differentiates():
    # One carry: the predicate returns as many values as the body, which the derivative's trip
    # counter once mistook for a body (a regression test). Three halvings take [3, 5] to a sum of 1.
    tape = Tape()
    x = tape.parameter(np.array([3.0, 5.0]))
    y = topos.while_loop(lambda c: topos.greater(topos.sum(c), 1.0), lambda c: c * 0.5, x)
    g = topos.grad(topos.sum(y * y), x)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    np.testing.assert_array_equal(np.asarray(run.of(y)), [0.375, 0.625])
    np.testing.assert_array_equal(np.asarray(run.of(g)), 2 * np.array([0.375, 0.625]) * 0.125)


def test_while_loop_runs_a_trip_count_fed_at_run_time_and_on_xla():
    network, symbols = Tape.record(lambda tape: _halving(tape, True))
    limit = next(network.symbol(n.index) for n in network.nodes() if n.name == "limit")
    plan = network.entry(symbols).lower()
    for trips in (2.0, 7.0):
        other, expected_symbols = Tape.record(lambda tape, trips=trips: _halving(tape, False, trips))
        run = other.forward(other.parameters(), {})
        expected = [np.asarray(run.of(s)) for s in expected_symbols]
        got = plan.run(network.parameters(), {limit: trips}).outputs()
        from_xla = plan.run(network.parameters(), {limit: trips}, backend="xla").outputs()
        for value, xla, want in zip(got, from_xla, expected):
            assert_close(value, want, scaled_bound(want, "float64", terms=10), "while_loop")
            assert_close(xla, want, scaled_bound(want, "float64", terms=10, k=16.0), "XLA while_loop")
