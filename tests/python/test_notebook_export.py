"""The playground's "download as .ipynb" (topos.playground.notebook): the notebook it makes is valid
nbformat 4 and runs in a real Jupyter kernel (nbclient) as the script runs as a program.

The page saves exactly ``notebook_json(code)``, which its readings worker makes
(tests/browser/files.test.mjs compares the download with this function's text).
"""

import json
import os
import pathlib
import subprocess
import sys

import nbformat
import numpy as np
from nbclient import NotebookClient

from topos import Tape
from topos.playground.notebook import EXPORTED_FROM, notebook_json, split_cells

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "docs" / "examples" / "04_mlp.py"


def execute(text, folder):
    """Run the notebook ``text`` in a python3 kernel in ``folder``; returns it with its outputs."""
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    # One BLAS thread, as the gallery's own test runs the script, so that the two print the same here.
    client.execute(env=dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1"))
    return notebook


def printed(notebook):
    """Everything the code cells printed, in order; fails on an error output."""
    text = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            assert output.output_type != "error", "\n".join(output.traceback)
            if output.output_type == "stream":
                text.append(output.text)
    return "".join(text)


def test_an_exported_gallery_example_runs_in_jupyter_and_prints_what_the_script_prints(tmp_path):
    code = MLP.read_text(encoding="utf-8")
    text = notebook_json(code, title="A multilayer perceptron on three spirals")
    notebook = nbformat.reads(text, as_version=4)
    assert notebook.nbformat == 4 and notebook.metadata.kernelspec.name == "python3"
    first = notebook.cells[0]
    assert first.cell_type == "markdown"
    assert first.source.startswith("# A multilayer perceptron on three spirals\n\nA multilayer perceptron classifies")
    assert first.source.endswith(EXPORTED_FROM)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.outputs == [] and cell.execution_count is None for cell in cells)
    assert len(cells) > 5, "the script's paragraphs are cells"
    assert cells[0].source.startswith("import numpy as np\n\nimport topos\n"), "the imports stay together"
    assert any(
        cell.source.startswith("# The training runs") and 'if __name__ == "__main__":' in cell.source for cell in cells
    )
    # In a kernel __name__ is "__main__": the training runs, as in Run mode and on the command line.
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT / "py"))
    script = subprocess.run([sys.executable, str(MLP)], env=environment, capture_output=True, text=True, check=True)
    assert "held-out points: 60" in script.stdout
    assert printed(execute(text, tmp_path)) == script.stdout


def test_an_exported_script_reads_and_writes_files_in_the_notebooks_folder(tmp_path):
    np.savetxt(tmp_path / "points.csv", np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]), delimiter=",")
    code = (
        "import numpy as np\n"
        "from topos import Tape\n"
        "\n"
        "points = np.loadtxt('points.csv', delimiter=',')\n"
        "\n"
        "\n"
        "def build(tape):\n"
        "    w = tape.parameter(0.0, name='w')\n"
        "    error = w * tape.input(points[:, 0]) - tape.input(points[:, 1])\n"
        "    return [w, (error * error).mean()]\n"
        "\n"
        "\n"
        "network, (w, loss) = Tape.record(build)\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    parameters = network.parameters()\n"
        "    for step in range(200):\n"
        "        gradients = network.forward(parameters, {}).backward(loss).parameters(parameters)\n"
        "        parameters = parameters.step(gradients, lambda w, g: w - 0.05 * g)\n"
        "    parameters.save('model.safetensors')\n"
        "    print(f'w = {parameters.of(w).scalar():.4f}')\n"
    )
    notebook = execute(notebook_json(code), tmp_path)
    assert printed(notebook) == "w = 2.0000\n"
    # The model it wrote beside the notebook reads back.
    network, w = Tape.record(lambda tape: tape.parameter(0.0, name="w"))
    assert abs(network.load_parameters(str(tmp_path / "model.safetensors")).of(w).scalar() - 2.0) < 1e-4


def test_cells_follow_the_scripts_paragraphs():
    code = '"""Doc."""\n\nimport math\nimport sys\n\n# about x\nx = 1\ny = 2\n\n\n@staticmethod\ndef f():\n    a = 1\n\n    return a\n'
    docstring, cells = split_cells(code)
    assert docstring == "Doc."
    assert cells == [
        "import math\nimport sys",
        "# about x\nx = 1\ny = 2",
        "@staticmethod\ndef f():\n    a = 1\n\n    return a",
    ]


def test_percent_markers_cut_the_cells_and_nothing_else_does():
    code = "import math\n\nx = 1\n# %%\ny = 2\n\nz = 3\n# %% another\nprint(x)\n"
    assert split_cells(code) == (None, ["import math\n\nx = 1", "y = 2\n\nz = 3", "print(x)"])


def test_a_script_that_does_not_parse_is_one_cell_as_it_is():
    code = "x = (\n\nprint(x)\n"
    docstring, cells = split_cells(code)
    assert docstring is None and cells == ["x = (\n\nprint(x)"]
    notebook = json.loads(notebook_json(code))
    assert "".join(notebook["cells"][1]["source"]) == "x = (\n\nprint(x)"
    nbformat.validate(nbformat.from_dict(notebook))
