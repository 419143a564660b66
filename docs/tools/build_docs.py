"""Build the docs: run every live block, write its output, and write the built pages as JSON.

    python docs/tools/build_docs.py                 # rebuild every page (and docs/api.md)
    python docs/tools/build_docs.py readings        # rebuild one page
    python docs/tools/build_docs.py --check         # change nothing; exit 1 if anything is stale

For each page in ``PAGES`` (docs/<name>.md) the builder

1. regenerates docs/api.md from the docstrings (``api_reference.py``) when it builds ``api``;
2. copies each gallery script into its ``example=`` block;
3. runs every live block on its own (``run_block.py``): a fresh ``__main__``
   module, a fresh working directory (a ``nobrowser`` block, which needs a
   runtime the browser lacks, such as jax: a fresh process); a block that
   raises stops the build;
4. writes the output into the ```` ```output ```` fence after the block (the
   Markdown stays readable on its own, outputs included);
5. writes docs/generated/<name>.json (the format is in docs/tools/README.md)
   and docs/generated/pages.json, the pages in reading order.

``--check`` does steps 1-3 and compares the results with the files on disk:
a changed output, an edited block that was not rebuilt, or a gallery script
that changed all fail it. The docs test (tests/python/test_docs.py) runs it.

Outputs are reproducible on any CPU, not bit for bit
-----------------------------------------------------

The docs are built on one machine and checked on others: CI on another CPU
model, x86-64 or arm64, with any numpy the project allows, and a reader's
browser, whose Pyodide numpy has no BLAS. numpy's vectorised exp/log and the
BLAS round differently in the last bit on different CPUs. So:

1. **A rerun agrees with the built output by ``output_agreement``'s rule**, not
   character for character: the text around the numbers exactly (spaces aside),
   integers exactly, decimals within ``RELATIVE`` (1e-6) of the larger, or
   ``ABSOLUTE`` (1e-12), or one unit in the last printed digit. Card numbers (plots,
   graphs) within the same tolerances. A build that agrees with the files on disk
   keeps them as they are, so docs do not churn from machine to machine.
2. **Print only what is stable.** Print floats rounded to a few digits, never
   paths, times or addresses. A number at the level of rounding noise (a gradient
   error of 1e-17, a loss of 4e-19 after convergence) is not a result: print it in
   scientific notation, where it agrees with any other number below ``ABSOLUTE``.
3. **Long training runs print in float64.** Last-bit differences grow through
   training: three hundred float32 Adam steps of the gallery transformer end at
   loss 0.84 on one CPU and 0.90 on another, with different sampled text. In
   float64 the same run differs by about 1e-9 of the loss. A run of more than a
   few steps whose printed losses or generated text the docs show records in
   float64; float32 stays for short runs and for what only runs on a GPU.
4. **Checked on a second CPU.** The docs test reruns every page a second time
   under ``OTHER_CPU_ENVIRONMENT``: numpy's SIMD dispatch capped below what this
   CPU has (``NPY_DISABLE_CPU_FEATURES``), OpenBLAS forced to an older kernel
   (``OPENBLAS_CORETYPE``), which changes the last bits as
   another CPU would. A page that passes only on the machine that built it fails.
"""

import argparse
import base64
import difflib
import json
import os
import sys

# One BLAS thread: how a multi-threaded BLAS splits a matrix product depends on the machine's
# core count, and with it the last bits of a sum. The outputs should depend on the code alone.
# (This has to happen before numpy is first imported.)
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

TOOLS = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.dirname(TOOLS)
ROOT = os.path.dirname(DOCS)
GENERATED = os.path.join(DOCS, "generated")
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(ROOT, "py"))

import api_reference  # noqa: E402
import output_agreement  # noqa: E402
from docs_source import Code, DocsSourceError, Prose, fence_text, parse_page, render_page, title_of  # noqa: E402
from run_block import run_block, run_block_in_fresh_process  # noqa: E402

# The reading order of the site. Pages that other engineers write (extending, kernels,
# playground) are built the same way once they exist; until then they are skipped.
PAGES = [
    "index",
    "getting-started",
    "readings",
    "recording",
    "training",
    "extending",
    "kernels",
    "convolutions",
    "derivatives",
    "transformations",
    "linalg",
    "gallery",
    "playground",
    "embedding",
    "deploy",
    "scaling",
    "notebooks",
    "api",
]
FORMAT_VERSION = 1


class BuildError(Exception):
    """A page that cannot be built: a block raised, a gallery script is missing, a fence is misplaced."""


def other_cpu_environment():
    """Environment variables under which numpy and OpenBLAS round as another CPU would.

    numpy dispatches its loops (exp, log, tanh, ...) to the widest SIMD this CPU has;
    ``NPY_DISABLE_CPU_FEATURES`` caps it at the build's baseline. OpenBLAS picks its
    matrix kernels by CPU; ``OPENBLAS_CORETYPE`` forces another one (x86-64 only: the
    arm64 builds read it too, but have one generic kernel to fall back to).
    """
    import platform

    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath
    found = [name for name in umath.__cpu_dispatch__ if umath.__cpu_features__.get(name)]
    environment = {"NPY_DISABLE_CPU_FEATURES": " ".join(found)}
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        current = os.environ.get("OPENBLAS_CORETYPE", "").lower()
        environment["OPENBLAS_CORETYPE"] = "Prescott" if current == "sandybridge" else "Sandybridge"
    elif machine in ("aarch64", "arm64"):
        environment["OPENBLAS_CORETYPE"] = "ARMV8"
    return environment


def page_path(name):
    return os.path.join(DOCS, f"{name}.md")


def existing_pages():
    return [name for name in PAGES if os.path.exists(page_path(name))]


def read_text(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def _with_example_code(part, filename):
    path = os.path.normpath(os.path.join(DOCS, part.example))
    if not os.path.exists(path):
        raise BuildError(f"{filename}:{part.line}: the gallery script {part.example} does not exist")
    code = read_text(path).rstrip("\n")
    return Code(part.language, part.attributes, code, part.line, part.output)


def build_page(name, markdown=None):
    """Run a page's blocks. Returns ``(markdown text, page JSON)``; writes nothing.

    ``markdown`` is the page's source (default: docs/<name>.md as it is on disk).
    """
    filename = f"docs/{name}.md"
    if markdown is None:
        markdown = api_reference.render() if name == "api" else read_text(page_path(name))
    try:
        parts = parse_page(markdown, filename)
        title = title_of(parts, filename)
    except DocsSourceError as error:
        raise BuildError(str(error)) from None
    built_parts, json_parts = [], []
    block_number = 0
    for part in parts:
        if isinstance(part, Prose):
            built_parts.append(part)
            json_parts.append({"kind": "markdown", "text": part.text})
            continue
        if not part.live:
            built_parts.append(part)
            json_parts.append({"kind": "code", "language": part.language, "live": False, "code": part.code})
            continue
        if part.example:
            part = _with_example_code(part, filename)
        block_number += 1
        result = run_block(part.code) if part.browser else run_block_in_fresh_process(part.code)
        if result.error:
            raise BuildError(f"{filename}:{part.line}: block {block_number} raised:\n{result.error}")
        part = Code(part.language, part.attributes, part.code, part.line, fence_text(result.text))
        built_parts.append(part)
        json_part = {
            "kind": "code",
            "language": "python",
            "live": True,
            "id": f"{name}-{block_number}",
            "example": part.example,
            "code": part.code,
            "output": result.items,
            "output_text": result.text,
        }
        if not part.browser:
            json_part["browser"] = False  # the site shows its built output, without an embed
        json_parts.append(json_part)
    page = {
        "format": "topos.docs.page",
        "version": FORMAT_VERSION,
        "name": name,
        "title": title,
        "source": filename,
        "parts": json_parts,
    }
    return render_page(built_parts), page


def pages_json(pages):
    return {
        "format": "topos.docs.pages",
        "version": FORMAT_VERSION,
        "pages": [
            {"name": name, "title": title, "file": f"{name}.json", "source": f"docs/{name}.md"} for name, title in pages
        ],
    }


def dump_json(value):
    return json.dumps(value, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


# Checking ----------------------------------------------------------------------------------


def same_json(built, rerun, in_output=False):
    """Equal JSON values by ``output_agreement``'s rule.

    Card numbers agree within its tolerances, printed text (``output_text`` and the
    ``text`` of a print item) by its rule for text; every other string exactly.
    """
    if isinstance(built, bool) or isinstance(rerun, bool):
        return built == rerun
    if isinstance(built, (int, float)) and isinstance(rerun, (int, float)):
        if isinstance(built, int) and isinstance(rerun, int):
            return built == rerun
        allowed = max(output_agreement.RELATIVE * max(abs(built), abs(rerun)), output_agreement.ABSOLUTE)
        return abs(built - rerun) <= allowed
    if isinstance(built, dict) and isinstance(rerun, dict):
        if built.keys() != rerun.keys():
            return False
        for key in built:
            if key in ("output_text", "text") and (key == "output_text" or in_output):
                if not (
                    isinstance(built[key], str)
                    and isinstance(rerun[key], str)
                    and output_agreement.outputs_agree(built[key], rerun[key])
                ):
                    return False
            elif key == "pixels" and in_output:
                if not same_pixels(built[key], rerun[key]):
                    return False
            elif not same_json(built[key], rerun[key], in_output or key == "output"):
                return False
        return True
    if isinstance(built, list) and isinstance(rerun, list):
        return len(built) == len(rerun) and all(same_json(a, b, in_output) for a, b in zip(built, rerun))
    return built == rerun


def same_pixels(built, rerun):
    """An image card's pixels (base64 bytes, py/topos/show/pictures.py) equal but for one level a byte.

    A byte is a value's place in the card's range, rounded: values within ``RELATIVE`` of
    each other (another CPU's last bits, grown through training) round to bytes one apart
    where they straddle a rounding point, never further.
    """
    if not (isinstance(built, str) and isinstance(rerun, str)):
        return built == rerun
    first, second = base64.b64decode(built), base64.b64decode(rerun)
    return len(first) == len(second) and all(abs(a - b) <= 1 for a, b in zip(first, second))


def markdown_disagreement(on_disk, rebuilt, filename):
    """``None`` when two versions of a page agree: prose and code exactly, outputs by the agreement rule."""
    try:
        disk_parts = parse_page(on_disk, filename)
    except DocsSourceError as error:
        return str(error)
    rebuilt_parts = parse_page(rebuilt, filename)
    if len(disk_parts) != len(rebuilt_parts):
        return "the page has a different number of parts"
    for disk, fresh in zip(disk_parts, rebuilt_parts):
        if isinstance(disk, Code) and isinstance(fresh, Code):
            if (disk.language, disk.attributes, disk.code) != (fresh.language, fresh.attributes, fresh.code):
                return f"the code block at line {fresh.line} changed"
            if (disk.output is None) != (fresh.output is None):
                return f"the block at line {fresh.line} prints {'nothing' if fresh.output is None else 'now'}"
            if disk.output is not None:
                problem = output_agreement.first_disagreement(disk.output, fresh.output)
                if problem:
                    return f"the output of the block at line {fresh.line} differs, {problem}"
        elif disk != fresh:
            return "the prose changed"
    return None


def _diff(expected, actual, label):
    lines = difflib.unified_diff(
        expected.splitlines(True), actual.splitlines(True), f"{label} (on disk)", f"{label} (rebuilt now)"
    )
    return "".join(lines)


def check_page(name):
    """Rebuild a page in memory and compare it with the files on disk; returns a list of problems."""
    problems = []
    markdown, page = build_page(name)
    on_disk = read_text(page_path(name))
    problem = markdown_disagreement(on_disk, markdown, f"docs/{name}.md")
    if problem:
        problems.append(
            f"docs/{name}.md is stale (rebuild it with python docs/tools/build_docs.py {name}): "
            f"{problem}\n" + _diff(on_disk, markdown, f"docs/{name}.md")
        )
    generated = os.path.join(GENERATED, f"{name}.json")
    if not os.path.exists(generated):
        problems.append(f"docs/generated/{name}.json is missing: run python docs/tools/build_docs.py {name}")
    else:
        with open(generated, encoding="utf-8") as file:
            built = json.load(file)
        if not same_json(built, page):
            problems.append(
                f"docs/generated/{name}.json differs from a fresh build of docs/{name}.md:\n"
                + _diff(dump_json(built), dump_json(page), f"docs/generated/{name}.json")
            )
    return problems


def check_as_json(names):
    """``--check --json``: check every page, even after one that fails, and print the problems by page.

    The docs test checks all pages in one process per environment this way, rather than one
    process per page: the imports happen once (tests/python/test_docs.py).
    """
    problems = {}
    for name in names:
        try:
            problems[name] = check_page(name)
        except BuildError as error:
            problems[name] = [f"error: {error}"]
    print(json.dumps(problems))
    return 1 if any(problems.values()) else 0


def check_pages_list():
    pages = []
    for name in existing_pages():
        parts = parse_page(read_text(page_path(name)), f"docs/{name}.md")
        pages.append((name, title_of(parts, f"docs/{name}.md")))
    path = os.path.join(GENERATED, "pages.json")
    expected = dump_json(pages_json(pages))
    if not os.path.exists(path) or read_text(path) != expected:
        return ["docs/generated/pages.json is stale: run python docs/tools/build_docs.py"]
    return []


# Building ------------------------------------------------------------------------------------


def write_if_changed(path, text):
    if os.path.exists(path) and read_text(path) == text:
        return False
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    return True


def build(names):
    os.makedirs(GENERATED, exist_ok=True)
    for name in names:
        markdown, page = build_page(name)
        markdown_path, json_path = page_path(name), os.path.join(GENERATED, f"{name}.json")
        # Outputs that agree with what is on disk (say, built on another CPU) stay as they are.
        if (
            os.path.exists(json_path)
            and markdown_disagreement(read_text(markdown_path), markdown, f"docs/{name}.md") is None
        ):
            with open(json_path, encoding="utf-8") as file:
                on_disk = json.load(file)
            if same_json(on_disk, page):
                print(f"current  docs/{name}.md")
                continue
        changed = write_if_changed(markdown_path, markdown)
        changed |= write_if_changed(json_path, dump_json(page))
        print(f"{'rebuilt' if changed else 'current'}  docs/{name}.md")
    titles = [(name, title_of(parse_page(read_text(page_path(name))), name)) for name in existing_pages()]
    write_if_changed(os.path.join(GENERATED, "pages.json"), dump_json(pages_json(titles)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="page names (docs/<name>.md); default: every page")
    parser.add_argument("--check", action="store_true", help="compare with the files on disk; write nothing")
    parser.add_argument(
        "--json", action="store_true", help="with --check: print {page: [problems]} as JSON, every page checked"
    )
    arguments = parser.parse_args(argv)
    unknown = [name for name in arguments.pages if name not in PAGES]
    if unknown:
        parser.error(f"unknown page(s) {', '.join(unknown)}; pages: {', '.join(PAGES)}")
    names = arguments.pages or existing_pages()
    if arguments.check and arguments.json:
        return check_as_json(names)
    try:
        if not arguments.check:
            build(names)
            return 0
        problems = [problem for name in names for problem in check_page(name)]
        if not arguments.pages:
            problems += check_pages_list()
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
