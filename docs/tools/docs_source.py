"""Reading and writing the docs' Markdown: prose, code blocks and their outputs.

A page is Markdown with fenced code blocks. The fence's info string says what a
block is (see docs/tools/README.md):

- ```` ```python ````: a live block, a self-contained program. The builder runs
  it and writes what it printed into the ```` ```output ```` fence right after it.
- ```` ```python example=examples/04_mlp.py ````: a live block whose code is that
  gallery script (path relative to docs/); the builder copies the file in.
- ```` ```python static ````: Python shown but never run (the API reference's
  docstring snippets). Prose pages have none: their Python is all live.
- ```` ```output ````: written by the builder only, and only right after a live
  block (blank lines between are allowed). Anywhere else it is an error: an
  output that no run produced would be a claim typed by hand.
- any other language (``sh``, ``text``): shown as it is.

``parse_page`` splits a page into ``Prose`` and ``Code`` parts, attaching each
output fence to its live block; ``render_page`` writes the parts back, so that a
page parsed and rendered with the same outputs is the same text.
"""

import re
from dataclasses import dataclass, replace

FENCE = re.compile(r"^(`{3,})(.*)$")


class DocsSourceError(ValueError):
    """A page that breaks the rules above; the message names the file and line."""


@dataclass(frozen=True)
class Prose:
    text: str  # Markdown lines, each ending in a newline


@dataclass(frozen=True)
class Code:
    language: str  # the first word of the info string ("" for none)
    attributes: tuple  # the remaining words, as (key, value) pairs; a bare word has value None
    code: str  # the block's lines, without a final newline
    line: int  # 1-based line of the opening fence
    output: str = None  # the text of the output fence after it (None: there is none)

    @property
    def live(self):
        """A block the builder runs: Python, not marked ``static``."""
        return self.language == "python" and not any(name == "static" for name, _ in self.attributes)

    @property
    def browser(self):
        """Whether the block can run in the browser's Python (not marked ``nobrowser``: it needs jax, say)."""
        return not any(name == "nobrowser" for name, _ in self.attributes)

    @property
    def example(self):
        """The gallery script (relative to docs/) this block shows, or None."""
        for name, value in self.attributes:
            if name == "example":
                return value
        return None

    def info(self):
        words = [self.language] + [name if value is None else f"{name}={value}" for name, value in self.attributes]
        return " ".join(word for word in words if word)


def _parse_info(info, where):
    words = info.split()
    if not words:
        return "", ()
    attributes = []
    for word in words[1:]:
        name, equals, value = word.partition("=")
        if not name or (equals and not value):
            raise DocsSourceError(f"{where}: cannot read the fence attribute {word!r}")
        attributes.append((name, value if equals else None))
    language = words[0]
    if language == "python":
        for name, value in attributes:
            if name == "example" and value is None:
                raise DocsSourceError(
                    f"{where}: example= names a gallery script, e.g. example=examples/01_scalar_chain.py"
                )
            if name in ("static", "nobrowser") and value is not None:
                raise DocsSourceError(f"{where}: {name} takes no value")
            if name not in ("example", "static", "nobrowser"):
                raise DocsSourceError(
                    f"{where}: unknown attribute {name!r} on a python block (known: example, static, nobrowser)"
                )
    return language, tuple(attributes)


def parse_page(text, filename="<page>"):
    """Split Markdown into ``Prose`` and ``Code`` parts (output fences folded into their blocks)."""
    lines = text.splitlines(keepends=True)
    parts = []
    prose = []
    number = 0
    while number < len(lines):
        line = lines[number]
        opening = FENCE.match(line.rstrip("\n"))
        if not opening:
            prose.append(line)
            number += 1
            continue
        ticks, info = opening.group(1), opening.group(2).strip()
        opening_line = number + 1
        where = f"{filename}:{opening_line}"
        body = []
        number += 1
        while number < len(lines) and not _closes(lines[number], ticks):
            body.append(lines[number])
            number += 1
        if number == len(lines):
            raise DocsSourceError(f"{where}: this code fence is never closed")
        number += 1  # the closing fence
        code = "".join(body)
        code = code[:-1] if code.endswith("\n") else code
        language, attributes = _parse_info(info, where)
        if language == "output":
            previous = parts[-1] if parts else None
            between = "".join(prose)
            if not (isinstance(previous, Code) and previous.live and previous.output is None and not between.strip()):
                raise DocsSourceError(
                    f"{where}: an output fence must directly follow a python block; "
                    "outputs are written by docs/tools/build_docs.py from running the block, never by hand"
                )
            prose = []
            parts[-1] = replace(previous, output=code)
            continue
        if prose:
            parts.append(Prose("".join(prose)))
            prose = []
        parts.append(Code(language, attributes, code, opening_line))
    if prose:
        parts.append(Prose("".join(prose)))
    return parts


def _closes(line, ticks):
    stripped = line.rstrip("\n").rstrip()
    return stripped.startswith(ticks) and set(stripped) == {"`"}


def _fence(text, info):
    """A fence long enough that no run of backticks inside ``text`` closes it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}\n" if text else f"{ticks}{info}\n{ticks}\n"


def render_code(part):
    text = _fence(part.code, part.info())
    if part.output:
        # One blank line, then the output, as the parser reads it back.
        text += "\n" + _fence(part.output, "output")
    return text


def render_page(parts):
    """The Markdown text of ``parts`` (the inverse of ``parse_page``)."""
    return "".join(part.text if isinstance(part, Prose) else render_code(part) for part in parts)


def fence_text(output_text):
    """How an output's text appears in its fence: without the final newlines (None when empty)."""
    text = output_text.rstrip("\n")
    return text if text else None


def title_of(parts, filename):
    """The page's title: the text of its first ``# `` heading."""
    for part in parts:
        if isinstance(part, Prose):
            for line in part.text.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise DocsSourceError(f"{filename}: a page starts with a '# Title' heading")
