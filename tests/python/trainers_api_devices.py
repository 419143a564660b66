"""The trainers' common shape, for DataParallelTrainer on 8 host devices: for test_trainers_api.py.

Run as ``python trainers_api_devices.py OUT.json`` in a process of its own: it sets
``XLA_FLAGS`` to make 8 host devices before jax is imported, which the rest of the
suite must not see. Writes what ``test_trainers_api.py`` checks in-process for the
other trainers: what ``step`` returns, the keys and values of ``moments()``, the
host optimizer's moments after the same steps, and whether what the trainer handed
out survived its later steps.
"""

import json
import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
# The engine of this checkout, as conftest.py gives the tests (not another one installed editable).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py"))

import numpy as np  # noqa: E402
from test_trainers_api import STEPS, host_training, tiny_network  # noqa: E402
from tolerances import assert_close, assert_trained_close, training_bound  # noqa: E402

from topos import FeedError  # noqa: E402
from topos.model import optim  # noqa: E402
from topos.xla.spmd import DataParallelTrainer  # noqa: E402


def within(check):
    """True when tolerances.py's ``check`` passes, else its message (the test prints it)."""
    try:
        check()
    except AssertionError as error:
        return str(error)
    return True


def gradient_refused(run, symbol):
    """Whether the step's run says that it holds no gradient (the gradients stay on the devices)."""
    try:
        run.gradient(symbol)
    except FeedError as error:
        return "back from its device" in str(error)
    return False


network, (x, w, b, loss) = tiny_network()
plan = network.entry([loss, w]).backward(loss).lower()
given = network.parameters()
given_before = np.array(given.of(w))
trainer = DataParallelTrainer(plan, given, optim.Adam(lr=0.1), {x: 0}, devices=8)
runs = [trainer.step() for _ in range(STEPS)]
host_parameters, host_state = host_training(network, STEPS)
parameters, moments = trainer.parameters(), trainer.moments()
result = {
    "step_returns": type(runs[0]).__name__,
    "backends": sorted(set(runs[0].backends.values())),
    "compile_ms_positive": runs[0].compile_ms > 0,
    "losses": [run.of(loss).scalar() for run in runs],
    "gradients_stay_on_the_devices": gradient_refused(runs[-1], w),
    "moment_keys": sorted([index, name] for index, name in moments),
    "moments_close_to_host": within(
        lambda: [
            assert_close(value, want, training_bound(want, "float32", 16, STEPS), f"{name} of {index}")
            for (index, name), value in moments.items()
            for want in [getattr(host_state.slots[index], name)]
        ]
    ),
    "parameters_close_to_host": within(
        lambda: assert_trained_close(parameters, host_parameters, 0.1, STEPS, "8 devices' parameters")
    ),
}
held = [runs[-1].of(loss), runs[-1].of(w), *(tensor for _, tensor in parameters.items()), *moments.values()]
held_before = [np.array(value) for value in held]
trainer.step()
result["held_unchanged"] = all(np.array_equal(a, np.array(b)) for a, b in zip(held_before, held))
result["given_unchanged"] = bool(np.array_equal(given_before, np.array(given.of(w))))
Path(sys.argv[1]).write_text(json.dumps(result))
