"""The WGSL kernel files and their specialisation.

The canonical files live in the repository's ``kernels/`` folder, which the
playground serves as they are. The Python package reaches them as
``topos/kernels/``: in a checkout that is a symbolic link to ``../../kernels``
(so ``pip install -e py`` reads the canonical files), and a built wheel holds
copies (setuptools follows the link when it gathers the ``kernels/*.wgsl``
package data). Where a checkout has no symbolic links, the loader falls back to
the repository folder itself.

A kernel file is specialised by replacing each ``{{NAME}}`` token with text
(an elementwise expression, a fold); the page runs this same module in Pyodide.
``{{COMMON}}`` is always replaced by the parameter block (binding 0, the
``params`` that ``word`` reads) and ``common.wgsl``, the helpers every file
shares (WGSL has no includes); that file is not a kernel family of its own.

An entry point's prologue is written here once, as onnxruntime-web's
``mainStart`` writes it: a line ``{{ENTRY name}}`` in a kernel file becomes the
``@compute`` signature of entry ``name`` (64 invocations a workgroup, with the
builtins ``group``, ``groups`` and ``lane``) and its opening brace; the kernel
writes the body and the closing brace. ``{{ELEMENT_ENTRY name}}`` goes on to bind
``i``, the invocation's element (``element`` of ``common.wgsl``), and returns
past the element count (word 0); ``{{ROW_ENTRY name}}`` binds ``row``, the
workgroup's row (``workgroup_index``), returns past the row count (word 0), the
whole workgroup at once, and binds the row kernels' layout: ``length`` (word 1),
``stride`` (word 4) and ``start`` (``row_start(row)``). Every specialisation
expands them.
"""

import functools
import os
import re

from ..errors import ArgumentError, ToposError

_PACKAGE_KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")
_REPOSITORY_KERNELS = os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_KERNELS)), "kernels")
_TOKEN = re.compile(r"\{\{([A-Z_]+)\}\}")
COMMON = "common"  # kernels/common.wgsl: shared helpers, put where a file writes {{COMMON}}
_ENTRY = re.compile(r"(?m)^\{\{(ENTRY|ELEMENT_ENTRY|ROW_ENTRY) (\w+)\}\}$")
_SIGNATURE = """@compute @workgroup_size(64)
fn {name}(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {{"""
# The parameter block every kernel reads through common.wgsl's word(); declared with that file's text.
_PARAMS = "@group(0) @binding(0) var<uniform> params: array<vec4<u32>, 16>;"
# What each entry form binds, and the bound past which its invocation (or, for a row, its workgroup) returns.
_BOUNDS = {
    "ENTRY": "",
    "ELEMENT_ENTRY": """
    let i = element(group, groups, lane);
    if (i >= word(0u)) {
        return;
    }""",
    "ROW_ENTRY": """
    let row = workgroup_index(group, groups);
    if (row >= word(0u)) {
        return;
    }
    let length = word(1u);
    let stride = word(4u);
    let start = row_start(row);""",
}


class MissingKernelsError(ToposError, FileNotFoundError):
    """The WGSL kernel files are not where the package looks (an installation without them)."""


def kernel_directory():
    """The folder the kernel files are read from."""
    for directory in (_PACKAGE_KERNELS, _REPOSITORY_KERNELS):
        if os.path.isfile(os.path.join(directory, "elementwise.wgsl")):
            return directory
    raise MissingKernelsError(
        f"the WGSL kernels are missing: neither {_PACKAGE_KERNELS} nor {_REPOSITORY_KERNELS} holds elementwise.wgsl"
    )


def kernel_names():
    """The kernel families, one per file (``elementwise``, ``matmul``, ...)."""
    names = (name[: -len(".wgsl")] for name in os.listdir(kernel_directory()) if name.endswith(".wgsl"))
    return sorted(name for name in names if name != COMMON)


@functools.cache
def kernel_text(kernel):
    """The text of ``kernels/<kernel>.wgsl``."""
    path = os.path.join(kernel_directory(), f"{kernel}.wgsl")
    if kernel not in kernel_names() + [COMMON]:
        raise ArgumentError(f"no kernel file {kernel!r}; the kernels are {', '.join(kernel_names())}")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def entry_points(kernel):
    """The names of the entry points ``kernels/<kernel>.wgsl`` declares through an entry line."""
    return [match.group(2) for match in _ENTRY.finditer(kernel_text(kernel))]


def expand_entries(text):
    """``text`` with each entry line (``{{ENTRY name}}`` and its forms) written out as WGSL."""
    return _ENTRY.sub(lambda match: _SIGNATURE.format(name=match.group(2)) + _BOUNDS[match.group(1)], text)


def tokens(text):
    """The specialisation tokens a kernel text holds."""
    return sorted(set(_TOKEN.findall(text)))


def specialise(kernel, substitutions=()):
    """The kernel's text with every ``{{NAME}}`` replaced; a token left without text raises."""
    substitutions = dict(substitutions)
    substitutions.setdefault("COMMON", f"{_PARAMS}\n\n{kernel_text(COMMON)}")
    text = kernel_text(kernel)

    def replace(match):
        name = match.group(1)
        if name not in substitutions:
            raise ArgumentError(f"kernel {kernel!r} needs a substitution for {{{{{name}}}}}")
        return substitutions[name]

    return _TOKEN.sub(replace, expand_entries(text))
