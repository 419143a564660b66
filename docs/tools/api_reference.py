"""Generate docs/api.md, the API reference, from the docstrings of the public names.

    python docs/tools/api_reference.py          # print the reference
    python docs/tools/build_docs.py api         # write docs/api.md and its built JSON

The public names are ``__all__`` of ``topos``, ``topos.model``, ``topos.compiler``,
``topos.show``, ``topos.xla``, ``topos.datasets``, ``topos.fft`` and ``topos.linalg``, and every public class and function defined in
``topos.model.optim``. A name exported by several
modules is documented once, under the first module in ``MODULES`` that exports
it, and listed by the others. A class lists its public methods and properties,
its own and those it inherits from other topos classes. Each section opens with a table of the
names it documents beside their numpy and JAX counterparts, drawn from ``api_counterparts.py``.

Docstrings are written for Python's ``help()`` (reStructuredText-flavoured); the
conversion to Markdown is kept small: ````x```` becomes ```x```, a paragraph
ending in ``::`` ends in ``:`` (the indented block after it is already Markdown
code), and a ```` ```python ```` fence becomes ```` ```python static ```` (shown,
never run: docstring snippets are fragments, not programs).
"""

import importlib
import inspect
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "py"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import api_counterparts  # noqa: E402  (the numpy and JAX counterparts, one table for every section)

MODULES = [
    "topos",
    "topos.model",
    "topos.model.optim",
    "topos.model.schedules",
    "topos.compiler",
    "topos.show",
    "topos.xla",
    "topos.datasets",
    "topos.fft",
    "topos.linalg",
]
NO_DOCSTRING = "*No docstring yet.*"


def public_names(module):
    """The names a module offers: its ``__all__``, else what it defines without a leading underscore."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and getattr(value, "__module__", None) == module.__name__
        and (inspect.isclass(value) or inspect.isfunction(value))
    )


def markdown_of(docstring):
    """A docstring as Markdown (see the module docstring for the few rules)."""
    if not docstring:
        return NO_DOCSTRING
    text = re.sub(r"(?m)^```python\s*$", "```python static", docstring)
    text = re.sub(r"(?<!`)``([^`]+?)``(?!`)", r"`\1`", text)
    text = re.sub(r"(?m)::$", ":", text)
    return text.strip()


def signature_of(value, drop_first=False):
    """``(a, b=1)`` for a callable, without private parameters and return annotations; "" if unknown."""
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return "(...)"
    parameters = [p for p in signature.parameters.values() if not p.name.startswith("_")]
    if drop_first and parameters:
        parameters = parameters[1:]
    return str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))


def class_members(cls):
    """(name, kind, value) of the public methods and properties of ``cls`` and its topos bases."""
    seen, members = set(), []
    for base in cls.__mro__:
        if not base.__module__.startswith("topos"):
            continue
        for name, value in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            if isinstance(value, property):
                kind = "property"
            elif isinstance(value, classmethod):
                kind = "classmethod"
            elif isinstance(value, staticmethod):
                kind = "staticmethod"
            elif inspect.isfunction(value):
                kind = "method"
            else:
                continue
            seen.add(name)
            members.append((name, kind, getattr(cls, name) if kind != "property" else value))
    return members


def class_line(cls):
    """``class Name(signature)``, and the bases a reader may need (an error's ``ValueError``, say)."""
    own_init = any(base.__module__.startswith("topos") and "__init__" in vars(base) for base in cls.__mro__)
    is_dataclass = hasattr(cls, "__dataclass_fields__")
    line = f"`class {cls.__name__}{signature_of(cls) if own_init or is_dataclass else ''}`"
    bases = [base for base in cls.__bases__ if base is not object]
    if bases:
        line += " (a subclass of " + ", ".join(f"`{base.__name__}`" for base in bases) + ")"
    return line


def render_class(qualified, cls):
    lines = [f"### `{qualified}`", "", class_line(cls), "", markdown_of(inspect.getdoc(cls)), ""]
    for name, kind, value in class_members(cls):
        if kind == "property":
            lines += [f"#### `{cls.__name__}.{name}` (property)", "", markdown_of(inspect.getdoc(value)), ""]
            continue
        drop_first = kind == "method"
        function = value.__func__ if kind == "method" and hasattr(value, "__func__") else value
        prefix = f"{kind} " if kind != "method" else ""
        lines += [
            f"#### `{cls.__name__}.{name}{signature_of(function, drop_first)}`",
            "",
            (f"*{prefix.strip()}.* " if prefix else "") + markdown_of(inspect.getdoc(value)),
            "",
        ]
    return lines


def render_function(qualified, function):
    return [f"### `{qualified}{signature_of(function)}`", "", markdown_of(inspect.getdoc(function)), ""]


def slug(heading):
    """A heading's id as the docs site makes it (web/docs-site/render-pages.ts ``slug``): lower case,
    every run of characters other than letters and digits one hyphen, none at either end."""
    return re.sub(r"[\W_]+", "-", heading.lower()).strip("-")


def documented_names():
    """{module name: the public names its own section documents, in order}: a name exported by an
    earlier module in ``MODULES`` is documented there, and a submodule has its own section."""
    seen, sections = set(), {}
    for module_name in MODULES:
        module, names = importlib.import_module(module_name), []
        for name in public_names(module):
            value = getattr(module, name)
            if not inspect.ismodule(value) and id(value) not in seen:
                seen.add(id(value))
                names.append(name)
        sections[module_name] = names
    return sections


def render():
    """The whole reference, as Markdown text."""
    documented = {}  # id of an object -> where it is documented
    sections = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        lines = [f"## `{module_name}`", "", markdown_of(inspect.getdoc(module)), ""]
        elsewhere, headings = [], {}
        for name in public_names(module):
            value = getattr(module, name)
            if inspect.ismodule(value):
                continue  # a submodule has its own section
            if id(value) in documented:
                elsewhere.append(f"`{name}` ({documented[id(value)]})")
                continue
            qualified = f"{module_name}.{name}"
            documented[id(value)] = qualified
            headings[name] = len(lines)
            if inspect.isclass(value):
                lines += render_class(qualified, value)
            elif callable(value):
                lines += render_function(qualified, value)
            else:
                lines += [f"### `{qualified}`", "", f"A constant: `{value!r}`.", ""]
        headings = {name: slug(lines[at][len("### ") :]) for name, at in headings.items()}
        summary = ["Each name beside its numpy and JAX counterparts (docs/tools/api_counterparts.py):", ""]
        summary += api_counterparts.table(module_name, list(headings), headings.get) + [""]
        if elsewhere:
            summary[:0] = ["Also exported here, documented where first listed: " + ", ".join(elsewhere) + ".", ""]
        lines[4:4] = summary
        sections.append(lines)
    head = [
        "# API reference",
        "",
        "<!-- Generated by docs/tools/api_reference.py from the docstrings; edit the docstrings, then run "
        "python docs/tools/build_docs.py api -->",
        "",
        "Every public name of " + ", ".join(f"`{m}`" for m in MODULES) + ", with its signature and docstring, "
        "module by module. The guide pages explain how the names fit together; this page is for looking one up.",
        "",
    ]
    body = [line for lines in sections for line in lines]
    return "\n".join(head + body).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
