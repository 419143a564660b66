"""A few Adam steps of the gallery transformer on one XLA device and on N, for test_xla_spmd.py.

Run as ``python spmd_training.py DEVICES STEPS OUT.npz`` in a process of its own:
it sets ``XLA_FLAGS`` to make ``DEVICES`` host devices before jax is imported, which
the rest of the test suite must not see. Both runs start from the same parameters
and read the same batches of windows, split along the batch axis over the N devices;
the optimizer's update runs on the host after each step, on the gradients XLA has
all-reduced. A third run does the whole step, update included, as one program on the
N devices (``DataParallelTrainer``).
Writes the losses and final parameters of the three runs, the partitioned module's HLO
text and the type of one device's slice of the batch to ``OUT.npz``.
"""

import os
import sys
from pathlib import Path

DEVICES, STEPS, OUT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
# The engine of this checkout, as conftest.py gives the tests (not another one installed editable).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py"))

import numpy as np  # noqa: E402
from test_plan_gallery import EXAMPLES, example, load_example  # noqa: E402

from topos.model import optim  # noqa: E402
from topos.model.network import Gradients  # noqa: E402
from topos.xla import run_plan  # noqa: E402
from topos.xla.spmd import DataParallel, DataParallelTrainer  # noqa: E402

path = next(p for p in EXAMPLES if p.stem == "06_char_transformer")
network, readables, loss, feeds = example(path, "float32")
plan = network.entry([loss]).backward(loss).lower()
batch_inputs = list(feeds)  # the windows and the same windows one character on
namespace = load_example(path)
config = namespace["Config"]()
rng = np.random.default_rng(11)
batches = [dict(zip(batch_inputs, namespace["sample_windows"](rng, config))) for _ in range(STEPS)]
optimizer = optim.Adam(lr=1e-2)

parallel = DataParallel(plan, dict.fromkeys(batch_inputs, 0), DEVICES)


def train(step_outputs):
    parameters = network.parameters()
    state = optimizer.init(parameters)
    losses = []
    for batch in batches:
        outputs = step_outputs(parameters, batch)
        losses.append(float(outputs[0]))
        slots = {wrt: array for (wrt, _), array in zip(plan.gradients, outputs[1:]) if wrt in parameters.slots}
        parameters, state = optimizer.step(parameters, Gradients(network, slots), state)
    return np.array(losses), parameters


one_losses, one = train(lambda parameters, batch: run_plan(plan, parameters, batch).outputs())
many_losses, many = train(parallel.outputs)
# The whole step as one program on N devices: the update runs on every device, nothing returns but the loss.
trainer = DataParallelTrainer(plan, network.parameters(), optimizer, dict.fromkeys(batch_inputs, 0), DEVICES)
program_losses = np.array([trainer.step(batch).of(loss).scalar() for batch in batches])
program = trainer.parameters()
partitioned = parallel.partitioned_text()
first = plan.nodes[getattr(batch_inputs[0], "index", batch_inputs[0])]
extents = [first.shape[0] // DEVICES, *first.shape[1:]]
slice_type = {"float32": "f32", "int32": "s32"}[first.dtype] + "[" + ",".join(map(str, extents)) + "]"
np.savez(
    OUT,
    one_losses=one_losses,
    many_losses=many_losses,
    one_parameters=np.concatenate([a.ravel() for a in one.slots.values()]),
    many_parameters=np.concatenate([a.ravel() for a in many.slots.values()]),
    program_losses=program_losses,
    program_parameters=np.concatenate([a.ravel() for a in program.slots.values()]),
    program_partitioned="\n".join(m.to_string() for m in trainer._executable.hlo_modules()),
    partitioned=partitioned,
    # What one device's slice of the first split input looks like in the partitioned HLO: f32[30,2].
    device_slice=slice_type,
)
print(Path(OUT).name, "written")
