"""The image and heatmap cards as PNG and SVG, for notebooks and the static docs.

The PNG is written here, with ``zlib`` from the standard library (RGB, 8 bits a
channel, every row unfiltered): topos runs on numpy alone, so no imaging
library. The card's pixels are made larger by a whole factor (each pixel a
square of ``zoom`` x ``zoom``), so that an 8x8 digit is not a speck; the
notebook's ``image/png`` is the whole card in one picture (the images of a grid
side by side, a heatmap with its points as small squares). The SVG (the
``text/html`` face) holds each image as a PNG of its own, with its caption, the
title and the scale in words, and a heatmap's points as circles.
"""

import base64
import struct
import zlib

import numpy as np

from ..display import escape
from .pictures import fraction_of, rgb_of

#: The size a drawn image reaches at least on its larger side, where a whole zoom gets it there; a
#: heatmap, one picture with points over it, is drawn larger.
DRAWN_SIDE, HEATMAP_SIDE = 96, 288
#: The most a pixel is made larger: a 1x1 image stays a 32x32 square.
MAX_ZOOM = 32
#: Images a row of a grid, and the room between and under them (a caption's line).
COLUMNS, GAP, CAPTION = 8, 6, 16
#: A heatmap's points: the side of a point's square in the PNG, the radius of its circle in the SVG.
POINT_SIDE, POINT_RADIUS = 5, 3


def png_bytes(rgb):
    """RGB bytes [height, width, 3] (uint8) as a PNG file's bytes."""
    height, width, _ = rgb.shape
    rows = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))  # filter 0 (none) a row

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, colour type 2 (RGB)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def zoom_of(picture, side=DRAWN_SIDE):
    return max(1, min(MAX_ZOOM, side // max(picture["width"], picture["height"])))


def enlarged(rgb, zoom):
    return np.repeat(np.repeat(rgb, zoom, axis=0), zoom, axis=1)


def card_png(kind, data):
    """The card as one PNG's bytes: a grid's images side by side (white between), or the heatmap and its points."""
    if kind == "heatmap":
        return png_bytes(_heatmap_rgb(data))
    pictures = data["images"]
    zoom = zoom_of(pictures[0])
    tiles = [enlarged(rgb_of(picture, data["palette"]), zoom) for picture in pictures]
    height, width = tiles[0].shape[:2]
    columns = min(COLUMNS, len(tiles))
    rows = -(-len(tiles) // columns)
    sheet = np.full((rows * (height + GAP) - GAP, columns * (width + GAP) - GAP, 3), 255, dtype=np.uint8)
    for number, tile in enumerate(tiles):
        top, left = (number // columns) * (height + GAP), (number % columns) * (width + GAP)
        sheet[top : top + height, left : left + width] = tile
    return png_bytes(sheet)


def _heatmap_rgb(data):
    zoom = zoom_of(data["image"], HEATMAP_SIDE)
    rgb = enlarged(rgb_of(data["image"], data["palette"]), zoom).copy()
    points = data["points"]
    if points is not None:
        height, width = rgb.shape[:2]
        for x, y, label in zip(points["x"], points["y"], points["class"], strict=True):
            left, top = _place(data, x, y, width, height)
            if 0 <= left < width and 0 <= top < height:
                row, column = int(top), int(left)
                # A white square one pixel wider each way, then the class's colour: a rim that shows on any colour.
                for half, colour in ((POINT_SIDE // 2 + 1, [255, 255, 255]), (POINT_SIDE // 2, None)):
                    square = (
                        slice(max(0, row - half), row + half + 1),
                        slice(max(0, column - half), column + half + 1),
                    )
                    rgb[square] = colour or data["class_colours"][label % len(data["class_colours"])]
    return rgb


def _place(data, x, y, width, height):
    """Where (x, y) lies on a heatmap drawn ``width`` x ``height``: from the left, and from the top."""
    (x0, x1), (y0, y1) = data["x_range"], data["y_range"]
    # As pictures.py places values: no overflow for the largest floats, no zero span for the smallest.
    return float(fraction_of(x, x0, x1)) * width, (1.0 - float(fraction_of(y, y0, y1))) * height


def _image_element(picture, palette, x, y, zoom):
    encoded = base64.b64encode(png_bytes(rgb_of(picture, palette))).decode("ascii")
    return (
        f'<image x="{x}" y="{y}" width="{picture["width"] * zoom}" height="{picture["height"] * zoom}" '
        f'preserveAspectRatio="none" style="image-rendering: pixelated" href="data:image/png;base64,{encoded}"/>'
    )


def card_svg(kind, data, text):
    """The card as SVG: its images (a PNG each), their captions, points as circles; the first line of ``text`` under it."""
    zoom = zoom_of(data["image"], HEATMAP_SIDE) if kind == "heatmap" else zoom_of(data["images"][0])
    parts = []
    top = 22 if data.get("title") else 4
    if kind == "heatmap":
        picture = data["image"]
        width, height = picture["width"] * zoom, picture["height"] * zoom
        parts.append(_image_element(picture, data["palette"], 0, top, zoom))
        points = data["points"] or {"x": [], "y": [], "class": []}
        for x, y, label in zip(points["x"], points["y"], points["class"], strict=True):
            left, down = _place(data, x, y, width, height)
            red, green, blue = data["class_colours"][label % len(data["class_colours"])]
            parts.append(
                f'<circle class="topos-point" cx="{left:.1f}" cy="{top + down:.1f}" r="{POINT_RADIUS}" '
                f'fill="rgb({red},{green},{blue})" stroke="white" stroke-width="0.8"/>'
            )
        right, bottom = width, top + height
    else:
        pictures = data["images"]
        width, height = pictures[0]["width"] * zoom, pictures[0]["height"] * zoom
        columns = min(COLUMNS, len(pictures))
        captioned = any(picture["caption"] for picture in pictures)
        step_down = height + GAP + (CAPTION if captioned else 0)
        for number, picture in enumerate(pictures):
            x, y = (number % columns) * (width + GAP), top + (number // columns) * step_down
            parts.append(_image_element(picture, data["palette"], x, y, zoom))
            if picture["caption"]:
                parts.append(
                    f'<text class="topos-caption" x="{x + width / 2}" y="{y + height + 12}" '
                    f'text-anchor="middle">{escape(picture["caption"])}</text>'
                )
        right = columns * (width + GAP) - GAP
        bottom = top + -(-len(pictures) // columns) * step_down
    scale_line = text.split("\n")[0].split(": ", 1)[-1]
    full_width = max(right, 320)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="topos-{kind}" width="{full_width}" height="{bottom + 20}" '
        f'viewBox="0 0 {full_width} {bottom + 20}" font-family="sans-serif" font-size="11">'
    )
    title = (
        f'<text class="topos-title" x="0" y="14" font-size="13">{escape(data["title"])}</text>' if data["title"] else ""
    )
    scale = f'<text class="topos-scale" x="0" y="{bottom + 14}">{escape(scale_line)}</text>'
    return head + title + "".join(parts) + scale + "</svg>"
