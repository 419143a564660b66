"""What every rich display shares: the card MIME type, escaping, row JSON, HTML tables.

Jupyter shows an object through its ``_repr_mimebundle_``: a dict from MIME
type to that object drawn as such. topos gives three: ``text/plain`` (the
reading's text), ``text/html`` (a static fallback: a table, an SVG or a
``<pre>``, for places without the topos JupyterLab extension) and, for readings,
the card JSON under ``MIME_TYPE``, which the extension and the playground draw.

This module sits at the bottom of the package, next to ``topos.text``, so that
the model (a tape, a run), the compiler (a plan) and ``topos.show`` all build
their bundles from it. Everything a user wrote (a label, a name) reaches HTML
through ``escape``, in text and in attribute values alike: it is shown as text,
never read as markup, and the HTML and SVG parse as XML whatever it holds.
"""

import html
import re

import numpy as np

#: The card JSON's MIME type: ``{"kind": ..., **data}``, what ``Card.to_json()`` returns.
MIME_TYPE = "application/vnd.topos.card+json"

#: How many values a table shows of each array, as numpy's summarised print shows a few.
SHOWN_VALUES = 4


#: The characters that XML 1.0 does not allow in a document (the C0 controls but tab, newline
#: and return; lone surrogates; U+FFFE and U+FFFF): an SVG holding one does not parse.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def escape(text):
    """``text`` (anything, made a string) safe inside HTML or SVG, as text or as an attribute's value.

    ``&``, ``<``, ``>`` and both quotes become references; a character no XML document may
    hold (a control character, a lone surrogate) becomes U+FFFD, the replacement character.
    """
    return NOT_XML.sub("\ufffd", html.escape(str(text), quote=True))


def rows_json(rows):
    """``(line, node indices)`` rows as JSON: ``[{"text": line, "nodes": [index, ...]}, ...]``."""
    return [{"text": line, "nodes": list(nodes)} for line, nodes in rows]


def text_reading(rows):
    """A text reading from its ``(line, node indices)`` rows: the text (the rows' lines joined) and the rows as JSON.

    The playground's text readings and the text cards of notebooks are this one form.
    """
    return {"text": "\n".join(line for line, _ in rows), "rows": rows_json(rows)}


def text_card(kind, rows):
    """A text card's JSON from its rows: its kind, the text and the rows (``text_reading``)."""
    return {"kind": kind, **text_reading(rows)}


def pre_html(text, kind, hint=None):
    """Text in a ``<pre>``, as a card without a drawing of its own shows in HTML; then ``hint``, if
    given, in a paragraph of its own (why there is no drawing, how to have one)."""
    pre = f'<pre class="topos-{escape(kind)}" style="font-family: monospace">{escape(text)}</pre>'
    return pre if hint is None else pre + f'<p class="topos-hint">{escape(hint)}</p>'


def table_html(kind, columns, rows, caption=(), marked=()):
    """An HTML table: ``columns`` names the columns, each of ``rows`` holds one cell per column.

    ``caption`` is lines written above the table (a summary); the rows at the positions in
    ``marked`` carry the class ``topos-marked`` and are drawn bold (a plan's peak). The table
    is well-formed XML too (``<br/>``, every element closed), as the SVG drawings are.
    """
    head = "".join(f"<th>{escape(column)}</th>" for column in columns)
    body = []
    for position, cells in enumerate(rows):
        attributes = ' class="topos-marked" style="font-weight: bold"' if position in marked else ""
        body.append(f"<tr{attributes}>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>")
    caption_html = ""
    if caption:
        caption_html = "<caption>" + "<br/>".join(escape(line) for line in caption) + "</caption>"
    return (
        f'<table class="topos-table topos-{escape(kind)}" style="font-family: monospace">'
        f"{caption_html}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def values_text(array, count=SHOWN_VALUES):
    """The first ``count`` values of an array in one line: ``0.5`` for rank 0, ``[1, 2, 3, 4, ...]`` otherwise."""
    array = np.asarray(array)
    flat = array.reshape(-1)
    shown = [_number_text(value) for value in flat[:count].tolist()]
    if array.ndim == 0:
        return shown[0]
    more = ", ..." if flat.size > count else ""
    return "[" + ", ".join(shown) + more + "]"


def _number_text(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def text_table(rows):
    """Rows of cells as aligned text: each column padded to its widest cell, two spaces between."""
    widths = [max((len(str(row[column])) for row in rows), default=0) for column in range(len(rows[0]))] if rows else []
    return ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def bundle(text, html_text, card=None):
    """A mime bundle: the plain text, the HTML, and the card JSON when there is one."""
    faces = {"text/plain": text, "text/html": html_text}
    if card is not None:
        faces[MIME_TYPE] = card
    return faces
