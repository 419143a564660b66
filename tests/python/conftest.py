import os
import sys

# Tests import the engine from the checkout (also installed editable in .venv).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "py"))
