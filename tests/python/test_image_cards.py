"""Image and heatmap cards (show.image, show.heatmap): their JSON, text, PNG and SVG faces.

The PNG is read back here with zlib alone (the encoder writes every row unfiltered, filter
byte 0), and its pixels are checked against the colours the scale gives each value: what a
notebook shows is the card's data, not just some picture.
"""

import base64
import math
import struct
import xml.etree.ElementTree as ElementTree
import zlib

import numpy as np
import pytest

import topos
from topos import Tape, show
from topos.errors import ArgumentError, ShapeError
from topos.show import MIME_TYPE
from topos.show.pictures import MAX_IMAGES, MAX_SIDE, PALETTES, _block_mean, colours, pixels_of
from topos.show.svg_image import HEATMAP_SIDE, zoom_of


def read_png(data):
    """A PNG's RGB bytes [height, width, 3], for the PNGs svg_image writes (8-bit RGB, rows unfiltered)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks = 8, {}
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        tag = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length : position + 12 + length])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF, f"{tag} chunk's CRC"
        chunks[tag] = chunks.get(tag, b"") + body
        position += 12 + length
    width, height, depth, colour_type, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour_type) == (8, 2)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert np.all(rows[:, 0] == 0)
    return rows[:, 1:].reshape(height, width, 3)


def bundle_png(card):
    return read_png(base64.b64decode(card._repr_mimebundle_()["image/png"]))


def test_a_grayscale_image_puts_each_value_at_its_place_in_the_range():
    values = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    card = show.image(values, title="ramp")
    data = card.to_json()
    assert data["kind"] == "image" and data["scale"] == "gray" and data["range"] == [0.0, 5.0]
    # The value v is byte round(v / 5 * 255): 0, 51, 102, ...
    assert pixels_of(data["images"][0]).tolist() == [[0, 51, 102], [153, 204, 255]]
    assert str(card) == "ramp: 2x3, gray scale (black to white), range [0, 5]"


def test_the_png_in_the_bundle_holds_the_scale_s_colours_enlarged():
    values = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    card = show.image(values)
    zoom = zoom_of(card.data["images"][0])
    png = bundle_png(card)
    assert png.shape == (2 * zoom, 3 * zoom, 3)
    shades = [0, 51, 102, 153, 204, 255]
    for row in range(2):
        for column in range(3):
            block = png[row * zoom : (row + 1) * zoom, column * zoom : (column + 1) * zoom]
            assert np.all(block == shades[3 * row + column]), (row, column)


def test_signed_data_take_the_diverging_scale_with_zero_at_its_centre():
    values = np.array([[-2.0, 0.0, 1.0]])
    card = show.image(values)
    assert card.data["scale"] == "diverging" and card.data["range"] == [-2.0, 2.0]
    levels = pixels_of(card.data["images"][0])
    assert levels.tolist() == [[0, 128, 191]]  # round(127.5) is 128: zero is half a byte from the middle
    png = bundle_png(card)
    blue, white, red = PALETTES["diverging"]
    assert png[0, 0].tolist() == blue
    middle = png[0, zoom_of(card.data["images"][0])].tolist()
    assert all(abs(a - b) <= 2 for a, b in zip(middle, white, strict=True)), middle  # half a byte from white
    # Positive values lean red: less blue and green than white, as much red.
    right = png[0, -1]
    assert right[0] > right[2] and right[1] < white[1]
    assert "diverging scale (blue, white at 0, red), range [-2, 2]" in str(card)


def test_the_palette_runs_from_its_first_colour_through_the_middle_one_to_its_last():
    """(The page blends the same way: tests/browser/image-cards.test.mjs reads its canvas against these.)"""
    blue, white, red = PALETTES["diverging"]
    levels = np.arange(256, dtype=np.uint8)
    drawn = colours(levels, PALETTES["diverging"]).astype(int)
    assert drawn[0].tolist() == blue and drawn[255].tolist() == red
    # Bytes 127 and 128 lie half a byte either side of the middle: within a step of white.
    assert np.all(np.abs(drawn[127:129] - white) <= 2)
    # Each channel moves one way from blue to white, then one way from white to red.
    assert np.all(np.diff(drawn[:128, 0]) >= 0) and np.all(np.diff(drawn[128:, 1]) <= 0)
    assert colours(levels, PALETTES["gray"]).tolist() == [[v, v, v] for v in range(256)]


def test_an_rgb_image_keeps_its_colours():
    values = np.zeros((2, 2, 3), dtype=np.uint8)
    values[0, 0] = [255, 0, 0]
    values[1, 1] = [10, 200, 30]
    card = show.image(values)
    assert card.data["scale"] == "rgb" and card.data["range"] == [0.0, 255.0] and card.data["palette"] is None
    assert pixels_of(card.data["images"][0]).tolist() == values.tolist()
    png = bundle_png(card)
    zoom = zoom_of(card.data["images"][0])
    assert png[0, 0].tolist() == [255, 0, 0] and png[-1, -1].tolist() == [10, 200, 30]
    # Floats are read as [0, 1].
    assert show.image(values / 255.0).data["range"] == [0.0, 1.0]
    assert png.shape == (2 * zoom, 2 * zoom, 3)


def test_a_grid_has_a_caption_an_image_and_tensors_and_run_results_draw():
    network, (x, y) = Tape.record(lambda tape: (x := tape.input(np.ones((3, 4, 4)), name="x"), x * 2.0))
    run = network.forward(network.parameters(), {x: np.arange(48.0).reshape(3, 4, 4)})
    card = show.image(run.of(y), captions=["a", "b", "c"], scale="gray")
    assert [picture["caption"] for picture in card.data["images"]] == ["a", "b", "c"]
    assert card.data["range"] == [0.0, 94.0]
    assert str(card).splitlines() == [
        "image: 3 images of 4x4, gray scale (black to white), range [0, 94]",
        "  1: a",
        "  2: b",
        "  3: c",
    ]
    assert pixels_of(card.data["images"][2])[3, 3] == 255
    assert show.image(topos.Tensor(np.eye(3))).data["images"][0]["width"] == 3
    # The PNG is the grid in one row, white between the images.
    png = bundle_png(card)
    zoom = zoom_of(card.data["images"][0])
    assert png.shape[1] == 3 * 4 * zoom + 2 * 6
    assert np.all(png[:, 4 * zoom : 4 * zoom + 6] == 255)
    svg = card._repr_mimebundle_()["text/html"]
    root = ElementTree.fromstring(svg)
    names = [element.tag.split("}")[-1] for element in root.iter()]
    assert names.count("image") == 3
    assert [element.text for element in root.iter("{http://www.w3.org/2000/svg}text")][:3] == ["a", "b", "c"]


def test_a_grid_of_one_channel_images_and_filters_with_three_columns():
    """A last axis of 1 is a channel; [N, H, 3] with a scale other than rgb is a grid of N images."""
    assert show.image(np.ones((5, 6, 1))).data["shape"] == [5, 6, 1]
    assert show.image(np.ones((5, 6, 1))).data["images"][0]["height"] == 5
    filters = np.random.default_rng(0).normal(size=(16, 3, 3))
    card = show.image(filters, scale="diverging")
    assert len(card.data["images"]) == 16 and card.data["images"][0]["width"] == 3
    assert show.image(np.ones((2, 3, 3, 1))).data["count"] == 2


def test_large_images_are_downsampled_by_block_mean_to_at_most_256_a_side():
    values = np.arange(600 * 300, dtype=np.float64).reshape(600, 300) % 7
    card = show.image(values, range=(0, 6))
    picture = card.data["images"][0]
    factor = 3  # ceil(600 / 256)
    assert card.data["downsampled"] == factor
    assert (picture["height"], picture["width"]) == (200, 100)
    assert max(picture["height"], picture["width"]) <= MAX_SIDE
    means = values.reshape(200, 3, 100, 3).mean(axis=(1, 3))
    # Each byte is its block's mean placed in [0, 6]; the mean is summed in another order than numpy's, so
    # a mean on a rounding point (3.0 is byte 127.5) may round either way: one byte apart at most.
    assert np.abs(pixels_of(picture).astype(int) - np.rint(means / 6 * 255)).max() <= 1
    np.testing.assert_allclose(_block_mean(values, factor), means, rtol=1e-15)
    assert "downsampled 3x by block mean (at most 256x256)" in str(card)
    # A block cut by the edge is the mean of what it holds: 257 rows make two blocks, the second one row.
    edge = np.zeros((257, 2))
    edge[256] = 6.0
    cut = show.image(edge, range=(0, 6)).data["images"][0]
    assert (cut["height"], cut["width"]) == (129, 1)
    assert pixels_of(cut)[128, 0] == 255


def test_a_grid_draws_its_first_images_and_says_so():
    card = show.image(np.zeros((MAX_IMAGES + 6, 2, 2)))
    assert len(card.data["images"]) == MAX_IMAGES and card.data["count"] == MAX_IMAGES + 6
    assert f"the first {MAX_IMAGES} of {MAX_IMAGES + 6} shown" in str(card)


def test_the_largest_floats_draw_without_overflow():
    """A range of [-1.8e308, 1.8e308] has a width no float holds, and a sum of such values overflows:
    both are worked in halves (placing) and in shares of the block (the mean)."""
    huge = np.finfo(np.float64).max
    card = show.image(np.array([[-huge, 0.0, huge]]))
    assert pixels_of(card.data["images"][0]).tolist() == [[0, 128, 255]]
    assert pixels_of(show.image(np.full((300, 2), huge), range=(0, huge)).data["images"][0]).tolist() == [[255]] * 150
    flat = show.image(np.full((2, 2), huge))
    low, high = flat.data["range"]
    assert low < huge <= high < math.inf and len(set(pixels_of(flat.data["images"][0]).flat)) == 1


def test_the_smallest_ranges_draw_where_their_ends_halves_meet():
    """[0, 5e-324] is a range (low < high) whose ends' halves round to one number: placing in halves
    divided by zero there (NaN bytes in the image, ZeroDivisionError for a heatmap's point)."""
    tiny = float(np.nextafter(0.0, 1.0))
    card = show.image(np.array([[0.0, tiny]]), range=(0.0, tiny))
    assert pixels_of(card.data["images"][0]).tolist() == [[0, 255]]
    heatmap = show.heatmap(np.zeros((2, 2)), (0.0, tiny), (0.0, 1.0), points=[[tiny, 0.5]])
    assert "image/png" in heatmap._repr_mimebundle_()
    svg = ElementTree.fromstring(heatmap._repr_mimebundle_()["text/html"])
    (circle,) = svg.iter("{http://www.w3.org/2000/svg}circle")
    assert float(circle.get("cx")) == float(
        heatmap.data["image"]["width"] * zoom_of(heatmap.data["image"], HEATMAP_SIDE)
    )


def test_values_not_finite_are_the_low_end_and_counted():
    card = show.image(np.array([[np.nan, 1.0], [2.0, np.inf]]))
    assert pixels_of(card.data["images"][0]).tolist() == [[0, 0], [255, 0]]
    assert card.data["range"] == [1.0, 2.0]
    assert "2 not finite, drawn as the low end" in str(card)


def test_a_heatmap_puts_row_zero_at_the_bottom_and_its_points_by_class():
    values = np.array([[0.0, 0.25], [0.75, 1.0]])  # row 0 at y = 0 (bottom)
    points = np.array([[0.5, 0.5], [-0.5, 1.5]])
    card = show.heatmap(values, (-1, 1), (0, 2), points=points, classes=[1, 0], scale="diverging", range=(0, 1))
    data = card.to_json()
    assert data["kind"] == "heatmap"
    assert pixels_of(data["image"]).tolist() == [[191, 255], [0, 64]]  # top row first: y goes up
    assert data["points"] == {"x": [0.5, -0.5], "y": [0.5, 1.5], "class": [1, 0]}
    assert str(card).splitlines() == [
        "heatmap: 2x2 values over x [-1, 1] and y [0, 2], diverging scale (blue, white at 0.5, red), range [0, 1]",
        "  2 points (class 0: 1, class 1: 1)",
    ]
    # The PNG: the bottom-left cell is blue (value 0), the top-right red (value 1); the class-1 point at
    # (0.5, 0.5) is a square of class 1's colour in the bottom-right cell.
    png = bundle_png(card)
    side = png.shape[0]
    assert png[-1, 0].tolist() == PALETTES["diverging"][0]
    assert png[0, -1].tolist() == PALETTES["diverging"][2]
    assert png[3 * side // 4, 3 * side // 4].tolist() == data["class_colours"][1]
    svg = ElementTree.fromstring(card._repr_mimebundle_()["text/html"])
    circles = list(svg.iter("{http://www.w3.org/2000/svg}circle"))
    assert len(circles) == 2


def test_update_redraws_with_the_options_kept_but_those_passed():
    seen = []

    class Watcher:
        def card(self, card):
            seen.append(card.to_json())

        def progress(self, step, total):
            pass

    with show.watch(Watcher()):
        card = show.heatmap(np.zeros((2, 2)), (0, 1), (0, 1), points=[[0.5, 0.5]], range=(0, 1), title="step 0")
        card.update(np.ones((2, 2)), title="step 10")
    assert len(seen) == 2
    assert seen[1]["title"] == "step 10" and seen[1]["points"] == seen[0]["points"]
    assert pixels_of(seen[1]["image"]).tolist() == [[255, 255], [255, 255]]
    with pytest.raises(ArgumentError, match="takes the new value alone"):
        show.text("x").update("y", title="z")


def test_bad_shapes_are_refused_naming_the_user_s_line():
    this_file = __file__
    with pytest.raises(ShapeError, match=r"\[H, W\], \[H, W, 3\].*got shape \[4\]") as caught:
        show.image(np.zeros(4))
    assert caught.value.source[0] == this_file
    with pytest.raises(ShapeError, match="3 image\\(s\\) and 2 caption\\(s\\)") as caught:
        show.image(np.zeros((3, 2, 2)), captions=["a", "b"])
    assert caught.value.source[0] == this_file
    with pytest.raises(ShapeError, match=r"\[H, W\] values.*got shape \[2, 2, 2\]") as caught:
        show.heatmap(np.zeros((2, 2, 2)), (0, 1), (0, 1))
    assert caught.value.source[0] == this_file
    with pytest.raises(ShapeError, match=r"points as \[P, 2\]"):
        show.heatmap(np.zeros((2, 2)), (0, 1), (0, 1), points=np.zeros((3, 3)))
    with pytest.raises(ShapeError, match="one class"):
        show.heatmap(np.zeros((2, 2)), (0, 1), (0, 1), points=np.zeros((3, 2)), classes=[0, 1])
    with pytest.raises(ArgumentError, match="low below high"):
        show.heatmap(np.zeros((2, 2)), (1, 0), (0, 1))
    with pytest.raises(ArgumentError, match="scale is one of"):
        show.image(np.zeros((2, 2)), scale="viridis")
    with pytest.raises(ShapeError, match="nothing to draw"):
        show.image(np.zeros((0, 3)))


def test_the_bundle_is_json_and_the_card_json_is_what_the_playground_gets():
    card = show.image(np.eye(2))
    bundle = card._repr_mimebundle_()
    assert bundle[MIME_TYPE] == card.to_json()
    assert set(bundle) == {"text/plain", "text/html", MIME_TYPE, "image/png"}
    ElementTree.fromstring(bundle["text/html"])  # the SVG parses as XML
