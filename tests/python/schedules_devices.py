"""DataParallelTrainer under a schedule and resumed from a saved state, on 8 host devices: for
test_schedules.py and test_optimizer_state_files.py.

Run as ``python schedules_devices.py OUT.json [STATE_DIR]`` in a process of its own: it sets ``XLA_FLAGS``
to make 8 host devices before jax is imported, which the rest of the suite must not see. Writes, for
each optimizer of test_schedules.OPTIMIZERS, the parameters and moments after test_schedules.STEPS
steps of its schedule; given STATE_DIR, also whether a run saved after HALF steps (``state().save``,
``parameters.save``), loaded and taken HALF steps further ends bit for bit where the run never stopped ends.
"""

import json
import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
# The engine of this checkout, as conftest.py gives the tests (not another one installed editable).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py"))

import numpy as np  # noqa: E402
from test_optimizer_state_files import HALF, RESUME_SCHEDULE  # noqa: E402
from test_schedules import OPTIMIZERS, SCHEDULE, STEPS  # noqa: E402
from test_trainers_api import tiny_network  # noqa: E402

from topos.xla.spmd import DataParallelTrainer  # noqa: E402

network, (x, w, b, loss) = tiny_network()
plan = network.entry([loss]).backward(loss).lower()
result = {}
for kind, make in OPTIMIZERS.items():
    optimizer = make(SCHEDULE)
    trainer = DataParallelTrainer(plan, network.parameters(), optimizer, {x: 0}, devices=8)
    for _ in range(STEPS):
        trainer.step()
    result[kind] = {
        "parameters": {str(index): value.tolist() for index, value in trainer.parameters().slots.items()},
        "moments": [[index, moment, value.tolist()] for (index, moment), value in trainer.moments().items()],
    }
    # Saved after HALF steps, loaded from the files and resumed, against the same trainer never stopped.
    if len(sys.argv) > 2:
        folder, optimizer = Path(sys.argv[2]), make(RESUME_SCHEDULE)
        straight = DataParallelTrainer(plan, network.parameters(), optimizer, {x: 0}, devices=8)
        for _ in range(HALF):
            straight.step()
        straight.state().save(folder / f"{kind}.state.safetensors")
        straight.parameters().save(folder / f"{kind}.safetensors")
        for _ in range(HALF):
            straight.step()
        parameters = network.load_parameters(folder / f"{kind}.safetensors")
        state = optimizer.load_state(folder / f"{kind}.state.safetensors", parameters)
        resumed = DataParallelTrainer(plan, parameters, optimizer, {x: 0}, devices=8, state=state)
        for _ in range(HALF):
            resumed.step()
        ends, again = straight.parameters(), resumed.parameters()
        result[kind]["resumed_equal"] = all(
            np.array_equal(ends.slots[index], again.slots[index]) for index in ends.slots
        ) and all(np.array_equal(value, resumed.moments()[key]) for key, value in straight.moments().items())
Path(sys.argv[1]).write_text(json.dumps(result))
