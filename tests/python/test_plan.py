"""The plan reading: scheduling, fates, live volume, the interpreter, and the gradient reading.

Golden text is copied by hand from API.md ("Lowering and the readings"); other
expectations are worked out from API.md's definitions, independently of the
code under test.
"""

import numpy as np
import pytest
from seed_texts import SEED_PLAN, record_seed

from topos import FeedError, Tape
from topos.compiler import Plan, register_backend, unregister_backend


@pytest.fixture
def seed(seed_model):
    network, (w, x, y, loss) = seed_model
    return network, w, x, y, loss


def test_seed_plan_describes_exactly_as_api_md(seed):
    network, w, x, y, loss = seed
    plan = network.entry([loss]).lower()
    assert isinstance(plan, Plan)
    assert plan.describe() == SEED_PLAN


def test_unneeded_nodes_are_not_evaluated_nor_listed():
    def build(tape):
        a = tape.parameter([1.0, 2.0, 3.0])
        unused = tape.parameter(5.0)
        b = a.exp()
        (unused * 2.0).log()  # recorded, never read
        return [b.sum(), unused]

    network, (total, _) = Tape.record(build)
    plan = network.entry([total]).lower()
    text = plan.describe().splitlines()
    # Nodes 0 (a), 2 (exp), 5 (sum) are evaluated; 1, 3 (leaf), 4 (mul) and the log are not.
    assert [int(row.split()[0]) for row in text[:-2]] == [0, 2, 6]
    assert text[-2] == "plan: forward; 3 of 7 nodes evaluated, 1 readable"
    # live: node 0: 3; node 2: 3 + 3 = 6 (a is freed after 2); node 6: 3 + 1 = 4.
    assert text[-1] == "live volume: peak 6 elements at node 2, retain-all 7"
    assert "  axes=(0,) keepdims=False" in text[2]


def test_singular_counts_and_first_peak_on_ties():
    network, (w,) = Tape.record(lambda tape: [tape.parameter(1.0)])
    plan = network.entry([w]).lower()
    assert plan.describe().splitlines()[-2:] == [
        "plan: forward; 1 of 1 node evaluated, 1 readable",
        "live volume: peak 1 element at node 0, retain-all 1",
    ]

    def chain(tape):
        a = tape.parameter(1.0)
        b = a.exp()
        c = b.exp()
        return [c]

    network, (c,) = Tape.record(chain)
    # live at 0: 1; at 1: 2 (a freed after 1); at 2: 2 -> the first node with 2 wins.
    assert network.entry([c]).lower().describe().splitlines()[-1] == (
        "live volume: peak 2 elements at node 1, retain-all 3"
    )


def test_several_readables_are_kept_and_counted_without_plural(seed):
    network, w, x, y, loss = seed
    plan = network.entry([loss, w]).lower()
    rows = plan.describe().splitlines()
    assert rows[0].endswith("kept")
    assert rows[-2] == "plan: forward; 6 of 6 nodes evaluated, 2 readable"


def test_plan_rows_put_attributes_after_the_fate():
    def build(tape):
        m = tape.parameter(np.ones((2, 3)))
        return [m.sum(axis=1)]

    network, (s,) = Tape.record(build)
    rows = network.entry([s]).lower().describe().splitlines()
    assert rows[1] == f"{1:>4}  {'Sum':<15}{'0':<19}{'[2]':<13}kept  axes=(1,) keepdims=False"


def test_interpreter_reads_values_and_frees_as_planned(seed):
    network, w, x, y, loss = seed
    plan = network.entry([loss]).lower()
    run = plan.run(network.parameters(), {x: 3.0})
    assert run.of(loss).scalar() == (0.5 * 3.0 - 4.0) ** 2
    assert run.peak_elements == plan.peak == 4
    assert run.peak_node == plan.peak_node == 3
    assert run.backends == dict.fromkeys(range(6), "numpy")
    with pytest.raises(FeedError, match="not a readable"):
        run.of(w)
    with pytest.raises(FeedError, match="no gradient"):
        run.gradient(w)
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        plan.run(network.parameters(), {}, backend="tpu")


def test_measured_peak_follows_each_value_to_its_last_reader():
    def build(tape):
        a = tape.parameter(np.arange(6.0).reshape(2, 3))
        b = tape.parameter(np.ones((3, 4)))
        h = (a @ b).tanh()
        wide = h.reshape(1, 8).broadcast_to((5, 8))
        return [wide.sum(), (a * a).sum(axis=0)]

    network, (total, column) = Tape.record(build)
    plan = network.entry([total, column]).lower()
    run = plan.run(network.parameters())
    assert run.peak_elements == plan.peak
    assert run.peak_node == plan.peak_node
    expected = network.forward(network.parameters())
    assert run.of(total).scalar() == expected.of(total).scalar()


# The gradient reading --------------------------------------------------------------------------


def test_seed_backward_plan_summary_and_bit_equal_gradients(seed):
    network, w, x, y, loss = seed
    plan = network.entry([loss]).backward(loss, [w, x, y]).lower()
    rows = plan.describe().splitlines()
    evaluated = len(rows) - 2
    assert (
        rows[-2] == f"plan: forward+backward; {evaluated} of {len(plan.nodes)} nodes evaluated, 1 readable, 3 gradients"
    )
    assert [int(row.split()[0]) for row in rows[:6]] == list(range(6))
    assert all(int(row.split()[0]) >= 6 for row in rows[6:-2])  # backward nodes come after the forward ones

    parameters = network.parameters()
    feeds = {x: 1.5, y: -0.25}
    result = plan.run(parameters, feeds)
    eager = network.forward(parameters, feeds)
    field = eager.backward(loss)
    for symbol in (w, x, y):
        assert np.asarray(result.gradient(symbol)).tobytes() == np.asarray(field.of(symbol)).tobytes()
    assert result.of(loss).scalar() == eager.of(loss).scalar()
    assert result.peak_elements == plan.peak
    # The API.md example: d loss / d w = -12, d x = -3, d y = 6 at the defaults.
    defaults = plan.run(parameters)
    assert [defaults.gradient(s).scalar() for s in (w, x, y)] == [-12.0, -3.0, 6.0]


def test_one_gradient_is_singular_and_defaults_to_every_parameter(seed):
    network, w, x, y, loss = seed
    plan = network.entry([loss]).backward(loss).lower()
    assert plan.summary().endswith("1 readable, 1 gradient")
    assert plan.gradients[0][0] == 0


def test_sums_and_unbroadcasts_appear_as_nodes():
    def build(tape):
        v = tape.parameter([1.0, 2.0, 3.0])
        m = tape.parameter(np.ones((2, 3)))
        y = m * v + v.exp()  # v is broadcast, and read twice
        return [y.sum()]

    network, (loss,) = Tape.record(build)
    v = network.parameter_symbols()[0]
    plan = network.entry([loss]).backward(loss, [v]).lower()
    backward = [plan.nodes[i].opcode for i in plan.schedule if i >= plan.forward_count]
    assert "Add" in backward  # two readers' contributions summed
    assert "Sum" in backward  # the broadcast undone
    result = plan.run(network.parameters())
    expected = network.forward(network.parameters()).backward(loss).of(v)
    assert np.array_equal(np.asarray(result.gradient(v)), np.asarray(expected))


def test_gradient_nodes_carry_the_source_line_of_the_node_they_differentiate():
    def build(tape):
        w = tape.parameter([1.0, 2.0])
        h = w.tanh()
        return [(h * h).sum()]

    network, (loss,) = Tape.record(build)
    plan = network.entry([loss]).backward(loss).lower()
    tanh_line = next(n.source for n in network.nodes() if n.opcode == "Tanh")
    forward_lines = {n.source for n in network.nodes() if not n.is_source}
    backward = [plan.nodes[i] for i in plan.schedule if i >= plan.forward_count]
    assert all(node.source in forward_lines for node in backward)
    # Tanh's rule writes 1 - out * out: a Sub among the nodes carrying the tanh's line.
    assert any(node.opcode == "Sub" and node.source == tanh_line for node in backward)


def test_an_unreachable_wrt_gets_a_zero_gradient(seed):
    network, w, x, y, loss = seed

    def extend(tape):
        return tape.parameter([1.0, 2.0])

    tape = network.reopen()
    lonely = extend(tape)
    bigger = tape.seal()
    plan = bigger.entry([loss]).backward(loss, [lonely, w]).lower()
    result = plan.run(bigger.parameters())
    assert np.array_equal(np.asarray(result.gradient(lonely)), np.zeros(2))
    assert result.gradient(w).scalar() == -12.0


def test_backward_checks_its_target_and_wrt():
    def build(tape):
        v = tape.parameter([1.0, 2.0])
        i = tape.input([0, 1], dtype="int32")
        doubled = v * 2.0
        return [doubled, doubled.sum(), i]

    network, (doubled, total, indices) = Tape.record(build)
    with pytest.raises(ValueError, match="rank-0 target"):
        network.entry([doubled]).backward(doubled)
    with pytest.raises(ValueError, match="int32"):
        network.entry([]).backward(total, [indices])
    with pytest.raises(ValueError, match="already has a backward target"):
        network.entry([]).backward(total).backward(total)
    with pytest.raises(FeedError, match="another network"):
        other, (w, *_) = Tape.record(record_seed)
        network.entry([]).backward(total, [w])


# Backends ---------------------------------------------------------------------------------------


class TanhOnlyExecutor:
    """A stand-in accelerator: runs Tanh nodes (numpy underneath), declines the rest."""

    name = "tanh-only"
    closed = False

    def __init__(self, plan):
        self.plan = plan

    def run(self, node, inputs):
        if node.opcode != "Tanh":
            return None
        return np.tanh(inputs[0])

    def close(self):
        TanhOnlyExecutor.closed = True


def test_plan_run_dispatches_to_a_registered_backend_and_falls_back_to_numpy():
    def build(tape):
        w = tape.parameter([0.5, -1.0])
        return [w.tanh().exp().sum()]

    network, (loss,) = Tape.record(build)
    plan = network.entry([loss]).lower()
    register_backend("tanh-only", TanhOnlyExecutor)
    try:
        result = plan.run(network.parameters(), backend="tanh-only")
    finally:
        unregister_backend("tanh-only")
    opcodes = {plan.nodes[i].opcode: result.backends[i] for i in plan.schedule}
    assert opcodes == {"Parameter": "numpy", "Tanh": "tanh-only", "Exp": "numpy", "Sum": "numpy"}
    assert TanhOnlyExecutor.closed
    assert result.of(loss).scalar() == pytest.approx(np.exp(np.tanh([0.5, -1.0])).sum(), rel=1e-15)


class DeviceValue:
    """A value an executor keeps "on its device": numpy underneath, but not an ndarray."""

    def __init__(self, array):
        self.array = array
        self.size = array.size


class ResidentExecutor:
    """Keeps its results as DeviceValues, runs elementwise Exp and Tanh, declines the rest."""

    name = "resident"
    fetched = 0

    def __init__(self, plan):
        self.plan = plan

    def run(self, node, inputs):
        if node.opcode not in ("Exp", "Tanh"):
            return None
        arrays = [v.array if isinstance(v, DeviceValue) else v for v in inputs]
        return DeviceValue(np.exp(arrays[0]) if node.opcode == "Exp" else np.tanh(arrays[0]))

    def to_numpy(self, value):
        ResidentExecutor.fetched += 1
        return value.array


def test_a_backend_may_keep_values_on_its_device_and_fetch_them_when_numpy_reads():
    def build(tape):
        w = tape.parameter([0.5, -1.0, 2.0])
        h = w.tanh().exp()
        return [h, (h * w).sum()]

    network, (h, total) = Tape.record(build)
    plan = network.entry([h, total]).backward(total).lower()
    register_backend("resident", ResidentExecutor)
    try:
        result = plan.run(network.parameters(), backend="resident")
    finally:
        unregister_backend("resident")
    reference = plan.run(network.parameters())
    assert np.array_equal(result.of(h).numpy(), reference.of(h).numpy())
    assert result.of(total).scalar() == reference.of(total).scalar()
    w = network.parameter_symbols()[0]
    assert np.array_equal(result.gradient(w).numpy(), reference.gradient(w).numpy())
    assert ResidentExecutor.fetched > 0
    assert result.peak_elements == plan.peak
    assert {result.backends[i] for i in plan.schedule if plan.nodes[i].opcode in ("Exp", "Tanh")} == {"resident"}


# Costs ------------------------------------------------------------------------------------------


def test_costs_count_flops_and_bytes_per_node_and_in_total():
    def build(tape):
        a = tape.parameter(np.ones((2, 3)))
        b = tape.parameter(np.ones((3, 4)))
        return [(a @ b).exp().sum()]

    network, (total,) = Tape.record(build)
    plan = network.entry([total]).lower()
    costs = plan.costs()
    # matmul: 2*2*4*3 = 48 flops, reads 6 + 12, writes 8 float64 -> 26 * 8 bytes
    matmul = next(i for i in plan.schedule if plan.nodes[i].opcode == "MatMul")
    assert costs.per_node[matmul] == (48, 26 * 8)
    # exp: 8 flops, reads 8 and writes 8; sum: 7 adds, reads 8 and writes 1
    assert costs.flops == 48 + 8 + 7
    assert costs.bytes == (26 + 16 + 9) * 8
    text = plan.describe(costs=True).splitlines()
    assert text[-1] == f"cost: 63 flops, {51 * 8} bytes moved"
    assert text[2].endswith("  [48 flops, 208 bytes]")
    assert "flop" not in plan.describe()
