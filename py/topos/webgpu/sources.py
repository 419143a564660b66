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

Last, ``prune`` drops each function that no entry point reaches: every
pipeline would otherwise compile all of ``common.wgsl`` and, for an elementwise
expression, every special function of ``elementwise.wgsl`` (a few hundred lines
it never calls), and each fused expression is a pipeline of its own. Both
devices compile what ``specialise`` returns (the runner calls it), so the page
and wgpu-py see the same pruned text.
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

    return prune(_TOKEN.sub(replace, expand_entries(text)))


# Comments start with // (to the line's end) or /* (to its matching */: block comments nest).
_LINE_COMMENT = re.compile(r"//[^\n]*")
_COMMENT_START = re.compile(r"//|/\*")
_BLOCK_MARK = re.compile(r"/\*|\*/")
_NOT_NEWLINE = re.compile(r"[^\n]")
# A top-level declaration ends at its first ; or, where a { comes first, at the } that closes it.
_DECLARATION_MARK = re.compile(r"[{;]")
_BRACE = re.compile(r"[{}]")
_NOT_SPACE = re.compile(r"\S")
_FUNCTION_HEAD = re.compile(r"(?:@\w+(?:\s*\([^)]*\))?\s*)*fn\s+(\w+)")
_STAGE_ATTRIBUTE = re.compile(r"@(?:compute|vertex|fragment)\b")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def without_comments(text):
    """``text`` with each comment's characters (its newlines aside) made spaces: the code alone, every
    character at its offset in ``text``. WGSL has no string literals, so nothing else hides a comment mark."""
    if "/*" not in text:  # the kernels write line comments only: one pass (a pipeline's text is made once)
        return _LINE_COMMENT.sub(lambda comment: " " * len(comment.group()), text)
    pieces, position = [], 0
    while (opening := _COMMENT_START.search(text, position)) is not None:
        if opening.group() == "//":
            end = text.find("\n", opening.end())
            end = len(text) if end < 0 else end
        else:
            depth, end = 1, opening.end()
            while depth and (mark := _BLOCK_MARK.search(text, end)) is not None:
                depth += 1 if mark.group() == "/*" else -1
                end = mark.end()
            end = end if depth == 0 else len(text)  # unclosed: the compiler will say so
        pieces += [text[position : opening.start()], _NOT_NEWLINE.sub(" ", text[opening.start() : end])]
        position = end
    return "".join(pieces) + text[position:]


def declarations(code):
    """``(start, end)`` of each top-level declaration of ``code`` (comments already removed), in order."""
    spans, position = [], 0
    while (mark := _DECLARATION_MARK.search(code, position)) is not None:
        depth, end = (1 if mark.group() == "{" else 0), mark.end()
        while depth and (brace := _BRACE.search(code, end)) is not None:
            depth += 1 if brace.group() == "{" else -1
            end = brace.end()
        end = end if depth == 0 else len(code)  # unclosed: the compiler will say so
        spans.append((_NOT_SPACE.search(code, position).start(), end))
        position = end
    return spans


def prune(text):
    """``text`` without the functions no entry point reaches. The roots are the entry points (``@compute``)
    and every declaration that is not a function (bindings, consts, private and workgroup variables,
    structs: all kept); a function is kept when a kept declaration calls it (its name, then ``(``, in the
    code outside comments). The rest of the text stays as it was, in its order; a removed function takes
    with it the ``//`` lines just above it (its documentation) and one blank line after it."""
    code = without_comments(text)
    functions, pending = {}, []
    for start, end in declarations(code):
        head = _FUNCTION_HEAD.match(code, start)
        if head is None or _STAGE_ATTRIBUTE.search(code, start, head.start(1)):
            pending.append(code[start:end])
        else:
            functions[head.group(1)] = (start, end)
    kept = set()
    while pending:
        for name in _CALLED.findall(pending.pop()):
            if name in functions and name not in kept:
                kept.add(name)
                pending.append(code[slice(*functions[name])])
    pieces, position = [], 0
    for start, end in sorted(span for name, span in functions.items() if name not in kept):
        start, end = _with_its_lines(text, code, start, end)
        pieces.append(text[position:start])
        position = end
    return "".join(pieces) + text[position:]


def _with_its_lines(text, code, start, end):
    """A removed function's span widened to whole lines: its documentation's ``//`` lines just above it,
    the rest of its last line where only a comment follows, and one blank line after it."""
    line_start = text.rfind("\n", 0, start) + 1
    if code[line_start:start].strip():
        return start, end  # another declaration shares the line: remove the function alone
    while line_start > 0:
        above = text.rfind("\n", 0, line_start - 1) + 1
        if not text[above:line_start].lstrip().startswith("//"):
            break
        line_start = above
    line_end = text.find("\n", end)
    if line_end < 0 or code[end:line_end].strip():
        return line_start, end
    end = line_end + 1
    blank_end = text.find("\n", end)
    if blank_end >= 0 and not text[end:blank_end].strip():
        end = blank_end + 1
    return line_start, end
