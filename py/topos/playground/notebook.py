"""A script as a Jupyter notebook (nbformat 4): the playground's "download as .ipynb".

The page asks its readings worker for ``notebook_json(code)`` and saves the text it
gets; the notebook tests execute the same function's output in a real kernel. The
notebook runs the script as a program does: in a kernel, ``__name__`` is
``"__main__"``, so the block under ``if __name__ == "__main__":`` (the training) runs,
as it does in Run mode.

The cells follow the script's paragraphs:

- a module docstring becomes the first cell, as Markdown (and leaves the code);
- a script with ``# %%`` lines (the percent format of Jupytext, VS Code and Spyder) is
  cut at those lines, and nowhere else;
- otherwise it is cut before each top-level statement that follows a blank line (its
  comment lines go with it), so a function, a class or a loop is never split, and the
  imports at the top stay in one cell;
- a script that does not parse is one cell, as it is: running it shows the error.

Every cell is stored without outputs, for the ``python3`` kernel.
"""

import ast
import json

#: The Markdown cell that opens every exported notebook, after the script's own docstring.
EXPORTED_FROM = (
    "Exported from the topos playground. It runs in Jupyter with topos installed "
    "(`pip install topos-autodiff`); the files the script reads must be in the notebook's folder."
)


def notebook_json(code, title=None):
    """The notebook of ``code`` as nbformat 4 JSON text (``title``, when given, heads the first cell)."""
    docstring, cells = split_cells(code)
    heading = [f"# {title}"] if title else []
    introduction = "\n\n".join([*heading, *([docstring] if docstring else []), EXPORTED_FROM])
    notebook = {
        "cells": [_markdown(introduction, 0), *(_code(cell, number) for number, cell in enumerate(cells, 1))],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def split_cells(code):
    """``(the module docstring or None, the code cells' sources)``, as this module's doc describes."""
    lines = code.splitlines()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None, [_strip("\n".join(lines))] if code.strip() else []
    docstring = ast.get_docstring(tree, clean=True)
    statements = tree.body
    if docstring is not None:
        # The docstring's lines leave the code; what else shares them (a ``;``) is not expected of a script.
        lines = [""] * statements[0].end_lineno + lines[statements[0].end_lineno :]
        statements = statements[1:]
    if any(line.startswith("# %%") for line in lines):
        cuts = [number for number, line in enumerate(lines) if line.startswith("# %%")]
        cells = [lines[start + 1 : end] for start, end in zip(cuts, [*cuts[1:], len(lines)])]
        cells.insert(0, lines[: cuts[0]])
    else:
        floors = [0, *(statement.end_lineno for statement in statements[:-1])]
        cuts = [_paragraph_start(lines, statement, floor) for statement, floor in zip(statements, floors)]
        cuts = [
            cut
            for number, cut in enumerate(cuts)
            if number == 0 or (_blank(lines[cut - 1]) and not _both_imports(statements[number - 1 : number + 1]))
        ]
        bounds = [0, *cuts[1:], len(lines)] if cuts else [0, len(lines)]
        cells = [lines[start:end] for start, end in zip(bounds, bounds[1:])]
    sources = [_strip("\n".join(cell)) for cell in cells]
    return docstring, [source for source in sources if source]


def _paragraph_start(lines, statement, floor):
    """The 0-based line where ``statement`` starts, with its decorators and the comment lines just above it
    (at the left margin, below line ``floor``, where the statement before it ends)."""
    decorators = [decorator.lineno for decorator in getattr(statement, "decorator_list", [])]
    first = min(decorators, default=statement.lineno) - 1
    while first > floor and lines[first - 1].startswith("#"):
        first -= 1
    return first


def _both_imports(statements):
    """Whether both statements import: the blocks of imports of a script (standard library, others) stay together."""
    return all(isinstance(statement, (ast.Import, ast.ImportFrom)) for statement in statements)


def _blank(line):
    return not line.strip()


def _strip(source):
    """Without the blank lines around it (a cell's source ends with no newline, as Jupyter stores it)."""
    kept = source.split("\n")
    while kept and _blank(kept[0]):
        kept.pop(0)
    while kept and _blank(kept[-1]):
        kept.pop()
    return "\n".join(kept)


def _source(text):
    """nbformat's ``source``: the text as a list of lines, each but the last with its newline."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + [pieces[-1]]


def _markdown(text, number):
    return {"cell_type": "markdown", "id": f"cell-{number}", "metadata": {}, "source": _source(text)}


def _code(text, number):
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"cell-{number}",
        "metadata": {},
        "outputs": [],
        "source": _source(text),
    }
