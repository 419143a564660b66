"""The shared test vectors (tests/cases/primitives.json) replayed on numpy and on WebGPU (lavapipe here).

Every case must agree with its expected outputs on both backends, within the
case's stored tolerance (tests/cases/README.md). These tests need a WebGPU
adapter and fail, rather than skip, without one (CI installs mesa-vulkan-drivers).
"""

import pytest
from kernel_cases import disagreement, load_cases, replay

from topos.ops import lookup

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_case_on_numpy(case):
    outputs, _, _ = replay(case, "numpy")
    assert disagreement(case, outputs) is None, disagreement(case, outputs)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_case_on_webgpu(case):
    outputs, run, plan = replay(case, "webgpu")
    problem = disagreement(case, outputs)
    assert problem is None, f"{problem}\n{plan.kernels().describe()}"
    # Every node with a kernel ran on the device; only the declined ones on numpy.
    for index, backend in run.backends.items():
        node = plan.nodes[index]
        if node.opcode in ("Parameter", "Input", "Leaf"):
            continue
        primitive = lookup(node.opcode)
        expected = "webgpu" if primitive.kernel is not None and node.dtype in primitive.device_dtypes else "numpy"
        assert backend == expected, f"node {index} {node.opcode} ran on {backend}"


def test_every_float32_primitive_has_a_case():
    """The vectors cover every primitive that computes float32 values."""
    covered = {node["opcode"] for case in CASES for node in case["nodes"]}
    wanted = {name for name, primitive in __import__("topos").ops.primitives().items() if not primitive.is_source}
    # Scan, Cond, While and CustomVjp hold bodies, recordings of their own, which the vectors' flat node
    # lists and the browser's replayer do not hold; WebGPU declines them, and test_loops and
    # test_custom_vjp hold them to numpy and XLA.
    wanted -= {"Scan", "CustomVjp", "Cond", "While"}
    assert wanted <= covered, f"primitives without a case: {sorted(wanted - covered)}"
