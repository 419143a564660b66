"""The engine's modules import in layers, so that no circle of imports can come back.

``py/pyproject.toml`` declares the layers for ``import-linter`` (top to bottom:
the playground, cards, the runtimes (WebGPU, XLA, the page's Pyodide), the compiler, the model, ``Tensor``,
the ops, then ``dtypes``, ``errors`` and ``text``; and the model's own order).
The second test finds circles itself, lazy imports inside functions included,
so that an import hidden in a function body cannot close one either. Both allow
only the imports the layers contract lists under ``ignore_imports``: none, now
that the WebGPU runtime imports the compiler's plain data (``topos.compiler.wgsl``)
and registers its backends with the compiler rather than being imported by it.
"""

import ast
import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "py", "topos")
PYPROJECT = os.path.join(ROOT, "py", "pyproject.toml")


def allowed_imports():
    """The ``(importer, imported)`` pairs the top-level layers contract ignores, for now."""
    with open(PYPROJECT, "rb") as file:
        config = tomllib.load(file)["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["id"] == "topos-layers"]
    return {tuple(part.strip() for part in line.split("->")) for line in contract.get("ignore_imports", [])}


def package_modules():
    """``{module name: path}`` for every module of ``topos`` (a package under its own name)."""
    modules = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, os.path.dirname(PACKAGE))[: -len(".py")].replace(os.sep, ".")
                modules[dotted.removesuffix(".__init__")] = path
    return modules


def imported_modules(module, node, modules):
    """The topos modules one import statement of ``module`` reads (``from . import x`` reads ``x``)."""
    is_package = modules[module].endswith("__init__.py")
    package = module if is_package else module.rsplit(".", 1)[0]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
    else:
        targets = [alias.name for alias in node.names]
    found = set()
    for target in targets:
        while target and target not in modules:
            target = target.rsplit(".", 1)[0] if "." in target else ""
        if target and target != module and target.split(".")[0] == "topos":
            found.add(target)
    return found


def import_graph():
    """``{module: the topos modules it imports}``, every import statement counted, those in functions too.

    A package's ``__init__`` only hands names on, so its imports are left out (as the
    shared circle checker leaves them out).
    """
    modules = package_modules()
    edges = {}
    for module, path in modules.items():
        edges[module] = set()
        if path.endswith("__init__.py"):
            continue
        with open(path, encoding="utf-8") as file:
            tree = ast.parse(file.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges[module] |= imported_modules(module, node, modules)
    return edges


def circles(edges):
    """The strongly connected groups of more than one module (Tarjan's algorithm, as a loop)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            module, pending = work[-1]
            for target in pending:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges[target]))))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == module:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def checkout_environment():
    """The environment with this checkout's engine first on the path: the venv's editable install may be
    another worktree's, and the contract is about the code under test."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "py")] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def test_the_import_layers_contract_holds():
    lint_imports = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    result = subprocess.run(
        [lint_imports, "--config", PYPROJECT, "--no-cache", "--no-logo"],
        cwd=ROOT,
        env=checkout_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_no_circle_of_imports_counting_lazy_ones():
    edges = import_graph()
    allowed = allowed_imports()
    for importer, imported in allowed:
        assert imported in edges[importer], f"{importer} -> {imported} is gone: drop it from ignore_imports"
        edges[importer].discard(imported)
    assert circles(edges) == []


def test_no_import_is_exempt_from_the_layers():
    assert allowed_imports() == set()


def test_the_runtime_registers_its_backends_without_importing_wgpu():
    # Run apart, so that this process's wgpu-py (loaded by the kernel tests) cannot hide an import.
    script = "\n".join(
        [
            "import sys",
            "import numpy as np",
            "import topos",
            "from topos.compiler.backends import backend_names",
            "assert 'wgpu' not in sys.modules, 'import topos imported wgpu-py'",
            "assert {'numpy', 'webgpu', 'auto'} <= set(backend_names()), backend_names()",
            "sys.modules['wgpu'] = None  # from here on, as where wgpu-py is not installed",
            "network, (total,) = topos.Tape.record(lambda tape: [(tape.parameter(np.ones(3)) * 2.0).sum()], dtype='float32')",
            "plan = network.entry([total]).lower()",
            "run = plan.run(network.parameters(), backend='auto')",
            "assert set(run.backends.values()) == {'numpy'} and run.of(total).scalar() == 6.0",
            "try:",
            "    plan.run(network.parameters(), backend='webgpu')",
            "except topos.webgpu.NoAdapterError as error:",
            "    assert 'wgpu-py is not installed' in str(error), error",
            "else:",
            "    raise AssertionError('backend=\"webgpu\" ran without wgpu-py')",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=checkout_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_circle_finder_finds_a_lazy_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
