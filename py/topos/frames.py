"""Where the user's code is on the call stack: the line that a recorded node or an error names.

At the bottom of the package with the text helpers, so that the exception classes
(``topos.errors``) can find the user's line themselves, as the tape does for each node.
"""

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__)) + os.sep
_INSIDE_PACKAGE = {}  # code filename -> whether it is a file of this package (a cache)


def inside_package(filename):
    """Whether ``filename`` (a code object's) is a file of the topos package."""
    # Code filenames are spelled as the module was found on sys.path, which may hold
    # "..", a symlink or a relative path; compare real paths, once per filename.
    inside = _INSIDE_PACKAGE.get(filename)
    if inside is None:
        inside = os.path.realpath(filename).startswith(_PACKAGE_DIR)
        _INSIDE_PACKAGE[filename] = inside
    return inside


def _is_topos_frame(frame):
    filename = frame.f_code.co_filename
    if inside_package(filename):
        return True
    # Code that a topos module made at run time has no file: a dataclass's generated __init__
    # ("<string>") runs an optimizer's __post_init__ checks. Its globals are that module's.
    return filename.startswith("<") and frame.f_globals.get("__name__", "").partition(".")[0] == "topos"


def user_line():
    """(filename, line) of the innermost caller outside the topos package, or None where there is none."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_topos_frame(frame):
            return (frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return None


def user_source():
    """(filename, line) of the innermost caller outside the topos package (``("<unknown>", 0)`` if none)."""
    return user_line() or ("<unknown>", 0)
