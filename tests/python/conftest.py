import os
import sys

import pytest

# Tests import the engine from the checkout (also installed editable in .venv).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "py"))


@pytest.fixture
def seed_model():
    """The seed's model, sealed: ``(network, (w, x, y, loss))`` (seed_texts.record_seed)."""
    from seed_texts import record_seed

    from topos import Tape

    return Tape.record(record_seed)
