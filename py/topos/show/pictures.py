"""Image and heatmap cards: arrays drawn as pictures, in the page, in notebooks and in the docs.

``show.image`` draws a grayscale ``[H, W]``, an RGB ``[H, W, 3]`` or a grid of
either (``[N, H, W]``, ``[N, H, W, 3]``) with a caption under each;
``show.heatmap`` draws 2-D values over an x and a y range, with points over them
coloured by class (a classifier's decision boundary and its data).

What the card holds is what the page draws, made small: each image's pixels as
one byte a channel (the value's place in the stated range, 0 to 255), base64,
and the palette that turns a byte into a colour. A card of a 64x64 heatmap is
about 5 kB of JSON, so a run can redraw it every few steps. The same bytes make
the PNG and SVG of notebooks and the docs (``svg_image``), so every face of a
card shows one picture.

Scales. ``gray``: the range's low end black, its high end white. ``diverging``,
for signed data (weights, errors): zero white at the centre, negative blue,
positive red, the range symmetric about zero. ``rgb``: three channels, floats in
[0, 1] or integers in [0, 255] unless a range is given. The scale is
``diverging`` where the data hold both signs and ``gray`` elsewhere, unless
asked; the range is the data's (largest magnitude either side of zero, for
``diverging``) unless given. A value out of the range takes the nearer end;
one not finite is drawn as the low end and counted in the card's text.

Downsampling rule: an image larger than ``MAX_SIDE`` either way is shrunk by
the whole factor ``f = ceil(larger side / MAX_SIDE)``, each output pixel the
mean of its ``f x f`` block (a block cut by the edge is the mean of what it
holds), so at most ``MAX_SIDE`` x ``MAX_SIDE`` pixels an image. A grid draws at
most ``MAX_IMAGES`` images, the first ones. The card's text states both.
"""

import base64
import math

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..frames import user_line

#: The most pixels an image has either way once drawn (the downsampling rule above).
MAX_SIDE = 256
#: The most images a grid draws: the first ones.
MAX_IMAGES = 64
#: Each scale's colours, evenly spaced from byte 0 to byte 255; a byte between two is the linear
#: blend, rounded (web/src/cards/draw-image.ts blends the same way). ``rgb`` has none: bytes are colours.
PALETTES = {
    "gray": [[0, 0, 0], [255, 255, 255]],
    "diverging": [[33, 102, 172], [247, 247, 247], [178, 24, 43]],
}
SCALES = ("gray", "diverging", "rgb")
#: The points' colours, by class (class k takes colour k modulo the list): darker than the diverging
#: scale's ends, so that a point of class 0 still shows on the blue its class is drawn in (with a white rim).
CLASS_COLOURS = [[8, 48, 107], [103, 0, 13], [0, 109, 44], [166, 54, 3], [84, 39, 143], [0, 0, 0]]


def image_faces(values, captions=None, scale=None, range=None, title=""):  # noqa: A002 (range: as matplotlib names it)
    """The image card's JSON and text from what ``show.image`` was given."""
    array = _array(values, "show.image()")
    grid, rgb = _as_grid(array, scale)
    count = grid.shape[0]
    scale = _scale(scale, grid, rgb)
    if captions is not None:
        captions = [str(caption) for caption in captions]
        if len(captions) != count:
            raise ShapeError(
                f"show.image() has {count} image(s) and {len(captions)} caption(s): one caption an image",
                shapes=[grid.shape, (len(captions),)],
                source=user_line(),
            )
    low, high = _range(range, grid, scale)
    shown = grid[:MAX_IMAGES]
    factor = _factor(shown.shape[1:3])
    images = []
    for number, one in enumerate(shown):
        levels = _levels(_block_mean(one, factor), low, high)
        caption = captions[number] if captions is not None else ""
        images.append(_picture(levels) | {"caption": caption})
    data = {
        "title": str(title),
        "shape": list(array.shape),
        "scale": scale,
        "palette": PALETTES.get(scale),
        "range": [low, high],
        "downsampled": factor,
        "count": count,
        "images": images,
    }
    side = f"{grid.shape[1]}x{grid.shape[2]}"
    what = f"{count} images of {side}" if _is_grid(array, rgb) else side
    lines = [f"{title or 'image'}: {what}, {_scale_text(scale, low, high)}{_notes(grid, factor, count)}"]
    if captions is not None:
        lines.extend(f"  {number + 1}: {caption}" for number, caption in enumerate(captions[:MAX_IMAGES]))
    return data, "\n".join(lines)


def heatmap_faces(values, x_range, y_range, points=None, classes=None, scale=None, range=None, title=""):  # noqa: A002
    """The heatmap card's JSON and text from what ``show.heatmap`` was given.

    ``values[i, j]`` fills cell ``j`` of ``W`` across ``x_range`` and cell ``i`` of ``H`` up
    ``y_range``: row 0 is at the bottom, as on a plot's axes.
    """
    array = _array(values, "show.heatmap()")
    if array.ndim != 2:
        raise ShapeError(
            f"show.heatmap() takes [H, W] values (row i at the i-th y, column j at the j-th x), "
            f"got shape {list(array.shape)}",
            shapes=[array.shape],
            source=user_line(),
        )
    x_range, y_range = _span(x_range, "x_range"), _span(y_range, "y_range")
    scale = _scale(scale, array, rgb=False)
    low, high = _range(range, array, scale)
    factor = _factor(array.shape)
    # Stored top row first, as every image is: the y axis goes up.
    picture = _picture(_levels(_block_mean(array, factor), low, high)[::-1])
    data = {
        "title": str(title),
        "shape": list(array.shape),
        "scale": scale,
        "palette": PALETTES[scale],
        "range": [low, high],
        "downsampled": factor,
        "x_range": x_range,
        "y_range": y_range,
        "image": picture,
        "points": _points(points, classes),
        "class_colours": CLASS_COLOURS,
    }
    head = f"{title or 'heatmap'}: {array.shape[0]}x{array.shape[1]} values over x {_interval(x_range)}"
    text = f"{head} and y {_interval(y_range)}, {_scale_text(scale, low, high)}{_notes(array, factor, 1)}"
    if data["points"] is not None:
        text += "\n  " + _points_text(data["points"])
    return data, text


def colours(levels, palette):
    """Bytes (uint8, any shape) as RGB bytes [..., 3] through ``palette`` (``PALETTES``): the linear blend, rounded."""
    stops = np.asarray(palette, dtype=np.float64)
    where = levels.astype(np.float64) * (len(stops) - 1) / 255
    below = np.minimum(np.floor(where).astype(np.int64), len(stops) - 2)
    part = (where - below)[..., None]
    return np.floor(stops[below] * (1 - part) + stops[below + 1] * part + 0.5).astype(np.uint8)


def pixels_of(picture):
    """A card picture's bytes as an array [height, width] (or [height, width, 3])."""
    flat = np.frombuffer(base64.b64decode(picture["pixels"]), dtype=np.uint8)
    shape = (picture["height"], picture["width"]) + ((3,) if picture["channels"] == 3 else ())
    return flat.reshape(shape)


def rgb_of(picture, palette):
    """A card picture as RGB bytes [height, width, 3]: through its palette, or as it is for an RGB one."""
    levels = pixels_of(picture)
    return levels if picture["channels"] == 3 else colours(levels, palette)


# What the user passed ----------------------------------------------------------------------


def _array(values, what):
    from ..model.value import Value
    from ..tensor import numeric_array

    if isinstance(values, Value):
        raise ArgumentTypeError(f"{what} takes numbers; a recorded value has none until it runs (use run.of(value))")
    array = numeric_array(values, what, ArgumentError)
    if array.size == 0:
        raise ShapeError(
            f"{what} has nothing to draw: shape {list(array.shape)}", shapes=[array.shape], source=user_line()
        )
    return array


def _is_grid(array, rgb):
    return array.ndim == 4 or (array.ndim == 3 and not rgb and array.shape[-1] != 1)


def _as_grid(array, scale):
    """``(images [N, H, W] or [N, H, W, 3], whether RGB)``; see ``show.image`` for how a shape reads."""
    last = array.shape[-1] if array.ndim else None
    rgb = (array.ndim == 3 and last == 3 and scale in (None, "rgb")) or (array.ndim == 4 and last == 3)
    if array.ndim not in (2, 3, 4) or (array.ndim == 4 and last not in (1, 3)):
        raise ShapeError(
            f"show.image() takes [H, W], [H, W, 3], [N, H, W] or [N, H, W, 3] values (a last axis of 1 is one "
            f"channel), got shape {list(array.shape)}",
            shapes=[array.shape],
            source=user_line(),
        )
    if array.ndim >= 3 and last == 1 and not (array.ndim == 3 and scale == "rgb"):
        array = array[..., 0]
        return (array if array.ndim == 3 else array[None]), False
    return (array if array.ndim == 4 or (array.ndim == 3 and not rgb) else array[None]), rgb


def _scale(scale, array, rgb):
    if scale is None:
        return "rgb" if rgb else ("diverging" if _has_both_signs(array) else "gray")
    if scale not in SCALES:
        raise ArgumentError(f"scale is one of {', '.join(SCALES)}, got {scale!r}")
    if (scale == "rgb") != rgb:
        raise ShapeError(
            f"the rgb scale takes values whose last axis is 3 channels, got shape {list(array.shape)} for {scale!r}",
            shapes=[array.shape],
            source=user_line(),
        )
    return scale


def _has_both_signs(array):
    finite = array[np.isfinite(array)] if array.dtype.kind == "f" else array
    return finite.size > 0 and finite.min() < 0 < finite.max()


def _range(given, array, scale):
    """``[low, high]`` as floats, ``low < high``: the one given, else the data's (see the module's docstring)."""
    if given is not None:
        low, high = _span(given, "range")
        return [low, high]
    if scale == "rgb":
        return [0.0, 255.0] if array.dtype.kind in "biu" else [0.0, 1.0]
    finite = array[np.isfinite(array)].astype(np.float64)
    if finite.size == 0:
        return [0.0, 1.0]
    low, high = float(finite.min()), float(finite.max())
    if scale == "diverging":
        most = max(abs(low), abs(high)) or 1.0
        return [-most, most]
    if low == high:
        # Half a unit either side, or a thousandth of the value where that is more (beside 1e308 half a unit is nothing).
        pad = max(0.5, abs(low) / 1000)
        if not math.isfinite(high + pad):  # beside the largest float the range reaches only below (or above) it
            return [low - 2 * pad, high]
        if not math.isfinite(low - pad):
            return [low, high + 2 * pad]
        return [low - pad, high + pad]
    return [low, high]


def _span(value, name):
    try:
        low, high = (float(end) for end in value)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{name} is two numbers (low, high), got {value!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ArgumentError(f"{name} is two finite numbers, low below high, got ({low}, {high})")
    return [low, high]


def _points(points, classes):
    if points is None:
        if classes is not None:
            raise ArgumentError("show.heatmap() has classes but no points to colour")
        return None
    xy = _array(points, "show.heatmap() points").astype(np.float64)
    if xy.ndim == 2 and not np.all(np.isfinite(xy)):
        raise ArgumentError("show.heatmap() takes finite points: a NaN or infinite point has no place")
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ShapeError(
            f"show.heatmap() takes points as [P, 2] (x, y), got shape {list(xy.shape)}",
            shapes=[xy.shape],
            source=user_line(),
        )
    labels = np.zeros(len(xy), dtype=np.int64) if classes is None else _array(classes, "show.heatmap() classes")
    if labels.shape != (len(xy),) or labels.dtype.kind not in "biu" or labels.min() < 0:
        raise ShapeError(
            f"show.heatmap() takes one class (a whole number, 0 or more) a point: {len(xy)} points, "
            f"classes of shape {list(labels.shape)} and dtype {labels.dtype}",
            shapes=[xy.shape, labels.shape],
            source=user_line(),
        )
    # Four digits place a point to a ten-thousandth of its value: finer than any screen.
    return {
        "x": [float(f"{v:.4g}") for v in xy[:, 0]],
        "y": [float(f"{v:.4g}") for v in xy[:, 1]],
        "class": labels.tolist(),  # whole numbers (checked above), as Python ints
    }


# Making the picture ----------------------------------------------------------------------------


def _factor(shape):
    return max(1, -(-max(shape[0], shape[1]) // MAX_SIDE))  # the side over MAX_SIDE, rounded up, in whole numbers


def _block_mean(image, factor):
    """``image`` [H, W(, 3)] as floats, shrunk by ``factor`` by block mean; a value not finite takes no part."""
    image = image.astype(np.float64)
    if factor == 1:
        return image
    height, width = image.shape[:2]
    rows, columns = -(-height // factor), -(-width // factor)
    padded = np.full((rows * factor, columns * factor) + image.shape[2:], np.nan)
    padded[:height, :width] = image
    blocks = padded.reshape(rows, factor, columns, factor, *image.shape[2:])
    finite = np.isfinite(blocks)
    counts = finite.sum(axis=(1, 3), keepdims=True)
    # Each value divided by its block's count before the sum, so that a sum of the largest floats cannot overflow.
    shares = np.divide(np.where(finite, blocks, 0.0), counts, out=np.zeros(blocks.shape), where=counts > 0)
    means = shares.sum(axis=(1, 3))
    return np.where(counts[:, 0, :, 0] > 0, means, np.nan)


def _levels(image, low, high):
    """Each value's place in ``[low, high]`` as a byte, 0 to 255; a value not finite is 0."""
    finite = np.isfinite(image)
    place = fraction_of(np.where(finite, image, low), low, high)
    placed = np.clip(np.rint(place * 255), 0, 255)
    return np.where(finite, placed, 0).astype(np.uint8)


def fraction_of(values, low, high):
    """Where ``values`` lie in ``[low, high]`` (finite, ``low < high``): 0 at ``low``, 1 at ``high``, as floats.

    In halves: the difference of two finite floats' halves cannot overflow, as [-1e308, 1e308]'s would. Where
    the ends are so small that their halves round to one number ([0, 5e-324]), the difference itself is exact
    and small. A value far outside a narrow range places at an infinity: outside, which is what it is.
    """
    values, span = np.asarray(values, dtype=np.float64), high / 2 - low / 2
    with np.errstate(over="ignore"):
        return (values / 2 - low / 2) / span if span > 0 else (values - low) / (high - low)


def _picture(levels):
    return {
        "width": levels.shape[1],  # numpy's shape holds Python ints
        "height": levels.shape[0],
        "channels": 3 if levels.ndim == 3 else 1,
        "pixels": base64.b64encode(np.ascontiguousarray(levels).tobytes()).decode("ascii"),
    }


# Text --------------------------------------------------------------------------------------------


def _interval(span):
    return f"[{span[0]:.4g}, {span[1]:.4g}]"


def _scale_text(scale, low, high):
    if scale == "diverging":
        middle = (low + high) / 2
        return f"diverging scale (blue, white at {middle:.4g}, red), range {_interval([low, high])}"
    if scale == "rgb":
        return f"RGB, range {_interval([low, high])} a channel"
    return f"gray scale (black to white), range {_interval([low, high])}"


def _notes(array, factor, count):
    notes = ""
    if factor > 1:
        notes += f"; downsampled {factor}x by block mean (at most {MAX_SIDE}x{MAX_SIDE})"
    if count > MAX_IMAGES:
        notes += f"; the first {MAX_IMAGES} of {count} shown"
    if array.dtype.kind == "f":
        undrawn = np.size(array) - np.count_nonzero(np.isfinite(array))  # both Python ints
        if undrawn:
            notes += f"; {undrawn} not finite, drawn as the low end"
    return notes


def _points_text(points):
    counts = {}
    for label in points["class"]:
        counts[label] = counts.get(label, 0) + 1
    by_class = ", ".join(f"class {label}: {count}" for label, count in sorted(counts.items()))
    return f"{len(points['class'])} points ({by_class})"
