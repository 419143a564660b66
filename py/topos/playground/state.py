"""What a playground run may change in the Python that serves it, and putting it back.

One Python serves every run of the playground, and every embed of a docs page.
A script can change that Python for whoever runs next: replace a topos function
or method (``topos.Tape.seal = ...``, ``topos.model.functions.relu = ...``), set
one of the runner's own limits (``topos.playground.MAX_OUTPUT_CHARACTERS = 5``),
register a primitive or a backend, put a module of its own into ``sys.modules``
under a topos name, or change numpy's print options, its floating-point error
handling or its legacy global random state. ``ProcessState()`` notes all of that
as it stands; ``restore()`` puts it back. ``topos.playground.run`` notes it
before each run and restores it after, so that no run leaves a trace in the
next one's readings or output. (The primitive and backend registries alone go
back when the next run starts, to topos's own: the WebGPU bridge that follows a
run may still need a primitive its script registered.)

What is noted:

- topos itself: the ``topos`` entries of ``sys.modules``; every topos module's
  namespace (a name rebound, added or deleted); the namespace of every class a
  topos module defines; the code, defaults and closure of every topos function
  (a script may assign ``__code__``); the contents of the dicts, lists and sets topos
  modules and classes hold (the primitive and backend registries among them);
  and the attributes of the objects those hold (each registered primitive);
- numpy's print options, error handling (``seterr``, ``seterrcall``) and the
  legacy global ``RandomState``;
- Python's ``random`` state, recursion limit and working directory.

Warning filters are not here: ``run`` keeps them with ``warnings.catch_warnings``.
A script that rewrites this module's own code can still defeat it; the aim is
that no ordinary script, however careless, changes what the next one sees.
"""

import contextlib
import importlib
import os
import pkgutil
import random
import sys
import types

import numpy as np

from ..compiler import backends as backend_registry
from ..ops import registry as primitive_registry

#: The registries a script adds to by registering a primitive or a backend (each module
#: offers ``snapshot()`` and ``restore(saved)``).
REGISTRIES = (primitive_registry, backend_registry)

#: Module globals that topos itself sets once per process, as caches: the WebGPU device
#: (or why there is none) and the shared runner with its compiled pipelines. A run that
#: made them leaves them for the next, which would otherwise request a device again.
PROCESS_CACHES = {
    "topos.webgpu.device": ("_device", "_failure"),
    "topos.webgpu.runner": ("_default",),
}

_CONTAINER_TYPES = (dict, list, set)


def is_topos_name(name):
    return name == "topos" or name.startswith("topos.")


def _is_topos_module(value):
    """Whether ``value`` is one of topos's own modules (a package's binding of its submodule)."""
    return isinstance(value, types.ModuleType) and is_topos_name(value.__name__)


def import_every_topos_module():
    """Import every module of the package, so that no later import adds one that no snapshot knows.

    (A module first imported during a run would be dropped from ``sys.modules`` after
    it, and imported again as a second copy with classes of its own.)
    """
    package = importlib.import_module("topos")
    for module in pkgutil.walk_packages(package.__path__, "topos."):
        importlib.import_module(module.name)


def _defined_in_topos(value):
    return is_topos_name(getattr(value, "__module__", None) or "")


def _function_of(value):
    """The plain function inside a class attribute (a method, static, class or property getter), or None."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    elif isinstance(value, property):
        value = value.fget
    return value if isinstance(value, types.FunctionType) else None


class ToposObjects:
    """The objects whose state is topos's, found by walking every topos module as it is now.

    Classes and functions defined in topos (methods, the functions decorated ones wrap
    and those their closures hold), the dicts, lists and sets topos modules and classes
    hold, and the objects of topos classes those hold (each registered primitive).
    Finding them takes a while; noting their state (``ProcessState``) is quick, so
    ``topos.playground`` finds them once and notes them before every run.
    """

    def __init__(self):
        self.classes = []
        self.functions = []
        self.containers = []
        self.objects = []
        seen = set()
        for name, module in sys.modules.items():
            if is_topos_name(name):
                for key, value in vars(module).items():
                    if key != "__builtins__":
                        self._find(value, seen)

    def _find(self, value, seen):
        if id(value) in seen:
            return
        if isinstance(value, type):
            if _defined_in_topos(value):
                seen.add(id(value))
                self.classes.append(value)
                for member in vars(value).values():
                    function = _function_of(member)
                    self._find(member if function is None else function, seen)
        elif isinstance(value, types.FunctionType):
            if _defined_in_topos(value):
                seen.add(id(value))
                self.functions.append(value)
                self._find(getattr(value, "__wrapped__", None), seen)
                for cell in value.__closure__ or ():
                    self._find(_cell_contents(cell), seen)
        elif type(value) in _CONTAINER_TYPES:
            seen.add(id(value))
            self.containers.append(value)
            for item in value.values() if isinstance(value, dict) else value:
                self._find(item, seen)
        elif _defined_in_topos(type(value)) and isinstance(getattr(value, "__dict__", None), dict):
            seen.add(id(value))
            self.objects.append(value)


class ProcessState:
    """The state described in this module's docstring, as it is now; ``restore()`` puts it back.

    ``objects`` (a ``ToposObjects``) says which topos objects to note; by default
    they are found anew.
    """

    def __init__(self, objects=None):
        self.objects = ToposObjects() if objects is None else objects
        self.modules = {name: module for name, module in sys.modules.items() if is_topos_name(name)}
        self.registries = [(registry, registry.snapshot()) for registry in REGISTRIES]
        self.module_namespaces = []  # (module dict, saved copy, names left as they are)
        for name, module in self.modules.items():
            caches = frozenset(PROCESS_CACHES.get(name, ()))
            namespace = vars(module)
            saved = {key: value for key, value in namespace.items() if key not in caches}
            self.module_namespaces.append((namespace, saved, caches))
        self.class_namespaces = [(cls, dict(vars(cls))) for cls in self.objects.classes]
        self.functions = [
            (
                function,
                function.__code__,
                function.__defaults__,
                function.__kwdefaults__,
                tuple((cell, _cell_contents(cell)) for cell in function.__closure__ or ()),
            )
            for function in self.objects.functions
        ]
        self.containers = [(container, container.copy()) for container in self.objects.containers]
        self.object_namespaces = [(vars(value), dict(vars(value))) for value in self.objects.objects]
        self.print_options = np.get_printoptions()
        self.numpy_errors = np.geterr()
        self.numpy_error_call = np.geterrcall()
        self.numpy_random = np.random.get_state()
        self.python_random = random.getstate()
        self.recursion_limit = sys.getrecursionlimit()
        self.directory = _working_directory()

    def restore(self, registries=True):
        """Put everything back as it was noted; the primitive and backend registries too unless told not to."""
        # Module namespaces first, with nothing but dict operations: from here on, every
        # name this method and its helpers look up is topos's own again.
        for namespace, saved, left in self.module_namespaces:
            # A snapshot is not part of the state it restores (``topos.playground.PROCESS_STATE``
            # is bound after it is taken), and nor is a package's binding of a topos submodule that
            # was still being imported when it was taken (``topos.playground`` itself: the import
            # system sets it on ``topos`` only once the submodule has run).
            for key in [
                key
                for key in namespace
                if key not in saved
                and key not in left
                and not isinstance(namespace[key], type(self))
                and not _is_topos_module(namespace[key])
            ]:
                del namespace[key]
            for key, value in saved.items():
                if key not in namespace or namespace[key] is not value:
                    namespace[key] = value
        self._restore_modules()
        self._restore_topos_objects(keep_registries=not registries)
        self._restore_numpy_and_python()

    def restore_registries(self):
        """Put back only the primitive and backend registries."""
        for registry, saved in self.registries:
            registry.restore(saved)

    def _restore_modules(self):
        for name in [name for name in sys.modules if is_topos_name(name) and name not in self.modules]:
            del sys.modules[name]
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module

    def _restore_topos_objects(self, keep_registries):
        """Classes, functions, objects and containers; the registries' tables are containers too,
        which go back with the rest unless ``keep_registries`` (then they keep what they hold now)."""
        for cls, saved in self.class_namespaces:
            current = vars(cls)
            for key in [key for key in current if key not in saved]:
                delattr(cls, key)
            for key, value in saved.items():
                if key not in current or current[key] is not value:
                    setattr(cls, key, value)
        for function, code, defaults, keyword_defaults, cells in self.functions:
            if function.__code__ is not code:
                function.__code__ = code
            if function.__defaults__ is not defaults:
                function.__defaults__ = defaults
            if function.__kwdefaults__ is not keyword_defaults:
                function.__kwdefaults__ = keyword_defaults
            for cell, contents in cells:
                if contents is not _EMPTY and _cell_contents(cell) is not contents:
                    cell.cell_contents = contents
        for namespace, saved in self.object_namespaces:
            _refill(namespace, saved)
        held = [(registry, registry.snapshot()) for registry in REGISTRIES] if keep_registries else []
        for container, saved in self.containers:
            _refill(container, saved)
        for registry, saved in held:
            registry.restore(saved)

    def _restore_numpy_and_python(self):
        np.set_printoptions(**self.print_options)
        np.seterr(**self.numpy_errors)
        np.seterrcall(self.numpy_error_call)
        np.random.set_state(self.numpy_random)
        random.setstate(self.python_random)
        if sys.getrecursionlimit() != self.recursion_limit:
            sys.setrecursionlimit(self.recursion_limit)
        if self.directory is not None and _working_directory() != self.directory:
            with contextlib.suppress(OSError):  # the directory may have been removed since
                os.chdir(self.directory)


_EMPTY = object()


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return _EMPTY


def _working_directory():
    try:
        return os.getcwd()
    except OSError:  # it was removed
        return None


def _unchanged(container, saved):
    """Whether ``container`` still holds what ``saved`` does: the same objects, not just equal ones."""
    if len(container) != len(saved):
        return False
    if isinstance(container, dict):
        return all(key in container and container[key] is value for key, value in saved.items())
    if isinstance(container, list):
        return all(item is kept for item, kept in zip(container, saved))
    return container == saved  # a set's members are hashable: equal is the same here


def _refill(container, saved):
    """Give ``container`` the contents of ``saved`` again, in place (other modules hold the same object)."""
    if _unchanged(container, saved):
        return
    if isinstance(container, list):
        container[:] = saved
    else:
        container.clear()
        container.update(saved)
