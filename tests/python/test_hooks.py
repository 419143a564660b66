"""The hooks that let a caller watch tapes and put registries back without patching topos.

``topos.model.tape.observe`` reports the tapes made, sealed and recorded while
it is active (the playground watches a script with it); the primitive and
backend registries hand out ``snapshot()`` and take it back with ``restore()``.
"""

import json

import pytest

from topos import Tape, playground
from topos.compiler import backends
from topos.model.tape import TapeObserver, observe
from topos.ops import Primitive, primitives, register, registry


class Events(TapeObserver):
    def __init__(self):
        self.heard = []

    def made(self, tape):
        self.heard.append(("made", tape))

    def sealed(self, tape, network):
        self.heard.append(("sealed", tape, network))

    def recorded(self, network, symbols):
        self.heard.append(("recorded", network, symbols))


def build(tape):
    w = tape.parameter(0.5)
    return [w, w * w]


def test_an_observer_hears_every_tape_made_sealed_and_recorded_while_active():
    events = Events()
    with observe(events):
        network, symbols = Tape.record(build)
        reopened = network.reopen()
    Tape()  # made after the block: not heard
    kinds = [event[0] for event in events.heard]
    assert kinds == ["made", "sealed", "recorded", "made"]
    made, sealed, recorded, made_again = events.heard
    assert sealed[1] is made[1] and sealed[2] is network
    assert recorded[1] is network and recorded[2] == symbols
    assert made_again[1] is reopened


def test_observers_nest_and_an_error_in_the_block_stops_the_reports():
    outer, inner = Events(), Events()
    with observe(outer):
        with pytest.raises(ZeroDivisionError):
            with observe(inner):
                Tape()
                1 / 0  # noqa: B018  (the error is the point)
        Tape()
    assert [kind for kind, *_ in outer.heard] == ["made", "made"]
    assert [kind for kind, *_ in inner.heard] == ["made"]


def test_a_playground_run_watches_without_replacing_tape_methods():
    code = (
        "import topos\n"
        "print(topos.Tape.__init__.__qualname__, topos.Tape.seal.__qualname__, topos.Tape.record.__qualname__)\n"
        "network, _ = topos.Tape.record(lambda tape: tape.parameter(1.0) * 2.0)\n"
    )
    result = json.loads(playground.run(code))
    assert result["error"] is None
    assert result["output_text"] == "Tape.__init__ Tape.seal Tape.record\n"
    assert result["recording"]["kind"] == "network"


def test_the_primitive_registry_goes_back_to_a_snapshot():
    saved = registry.snapshot()

    class HooksTwice(Primitive):
        name = "TestHooksTwice"
        arity = 1

    register(HooksTwice)
    assert "TestHooksTwice" in primitives() and "TestHooksTwice" not in saved
    exp = primitives()["Exp"]
    registry.restore(saved)
    assert "TestHooksTwice" not in primitives()
    assert primitives()["Exp"] is exp and list(primitives()) == list(saved)


def test_the_backend_registry_goes_back_to_a_snapshot():
    saved = backends.snapshot()
    backends.register_backend("test-hooks", backends.NumpyExecutor)
    assert "test-hooks" in backends.backend_names() and "test-hooks" not in saved
    backends.restore(saved)
    assert backends.backend_names() == sorted(saved)
