"""The WGSL kernel files and their specialisation.

The canonical files live in the repository's ``kernels/`` folder, which the
playground serves as they are. The Python package reaches them as
``topos/kernels/``: in a checkout that is a symbolic link to ``../../kernels``
(so ``pip install -e py`` reads the canonical files), and a built wheel holds
copies (setuptools follows the link when it gathers the ``kernels/*.wgsl``
package data). Where a checkout has no symbolic links, the loader falls back to
the repository folder itself.

A kernel file is specialised by replacing each ``{{NAME}}`` token with text
(an elementwise expression, a fold); the browser does the same replacement.
``{{COMMON}}`` is always replaced by ``common.wgsl``, the helpers every file
shares (WGSL has no includes); that file is not a kernel family of its own.
"""

import functools
import os
import re

from ..errors import ArgumentError, ToposError

_PACKAGE_KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")
_REPOSITORY_KERNELS = os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_KERNELS)), "kernels")
_TOKEN = re.compile(r"\{\{([A-Z_]+)\}\}")
COMMON = "common"  # kernels/common.wgsl: shared helpers, put where a file writes {{COMMON}}


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


def tokens(text):
    """The specialisation tokens a kernel text holds."""
    return sorted(set(_TOKEN.findall(text)))


def specialise(kernel, substitutions=()):
    """The kernel's text with every ``{{NAME}}`` replaced; a token left without text raises."""
    substitutions = dict(substitutions)
    substitutions.setdefault("COMMON", kernel_text(COMMON))
    text = kernel_text(kernel)

    def replace(match):
        name = match.group(1)
        if name not in substitutions:
            raise ArgumentError(f"kernel {kernel!r} needs a substitution for {{{{{name}}}}}")
        return substitutions[name]

    return _TOKEN.sub(replace, text)
