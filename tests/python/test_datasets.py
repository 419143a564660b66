"""topos.datasets: the digits that ship with topos, read without a network.

The oracle for the content is the source itself: the file scikit-learn bundles
(sklearn/datasets/data/digits.csv.gz, UCI's optdigits test set) was hashed when the
data was packed, and writing the shipped arrays back as that CSV must give the
same bytes. The wheel (the one the playground's Pyodide installs and the PWA
precaches) must carry the file and read it from there.
"""

import hashlib
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from test_distribution import ROOT, build_wheel

import topos
from topos import datasets

# SHA-256 of scikit-learn's digits.csv.gz, uncompressed (1,797 lines "p0,...,p63,label\n").
SOURCE_CSV_SHA256 = "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8"
# The class counts the set's description gives (scikit-learn's DESCR of load_digits, UCI's page).
SOURCE_CLASS_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


@pytest.fixture
def no_network(monkeypatch):
    """Any socket opened while reading the data fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("topos.datasets opened a socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def as_source_csv(images, labels):
    """The shipped arrays written back in the source file's format."""
    pixels = np.rint(images.reshape(len(images), 64) * 16).astype(np.int64)
    rows = np.concatenate([pixels, labels[:, None].astype(np.int64)], axis=1)
    return "".join(",".join(str(int(value)) for value in row) + "\n" for row in rows).encode()


def test_digits_are_1797_float32_images_in_nchw_scaled_to_0_1_with_int32_labels(no_network):
    images, labels = topos.datasets.digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype == np.float32
    assert labels.shape == (1797,) and labels.dtype == np.int32
    assert images.min() == 0.0 and images.max() == 1.0
    # Every pixel is a count of 0..16 divided by 16, exactly (a power of two).
    counts = images * 16
    assert np.array_equal(counts, np.rint(counts))
    assert set(np.unique(labels).tolist()) == set(range(10))


def test_every_class_holds_174_to_183_images_as_the_source_says():
    _, labels = datasets.digits()
    counts = np.bincount(labels, minlength=10)
    assert counts.tolist() == SOURCE_CLASS_COUNTS
    assert counts.min() >= 174 and counts.max() <= 183


def test_the_shipped_arrays_are_the_source_files_bytes():
    images, labels = datasets.digits()
    assert hashlib.sha256(as_source_csv(images, labels)).hexdigest() == SOURCE_CSV_SHA256


def test_a_changed_pixel_changes_the_checksum():
    # The checksum test can fail: one pixel off by one count is caught.
    images, labels = datasets.digits()
    images[100, 0, 3, 4] += 1 / 16
    assert hashlib.sha256(as_source_csv(images, labels)).hexdigest() != SOURCE_CSV_SHA256


def test_each_call_returns_new_arrays_the_caller_may_change():
    images, labels = datasets.digits()
    images[:] = 0
    labels[:] = 0
    again, again_labels = datasets.digits()
    assert again.max() == 1.0 and np.bincount(again_labels).tolist() == SOURCE_CLASS_COUNTS


def test_the_digit_images_look_like_their_digits():
    # A weak but independent look at the content: the centre of the mean "0" is its hole, empty,
    # while the strokes of "1" and the crossing of "8" pass through the centre; the labels go with the images.
    images, labels = datasets.digits()
    centre = {digit: images[labels == digit, 0, 3:5, 3:5].mean() for digit in range(10)}
    assert centre[0] < 0.1
    assert centre[1] > 0.7 and centre[8] > 0.7


def test_the_attribution_names_the_creators_the_doi_and_the_licence():
    readme = (Path(datasets.__file__).parent / "README.md").read_text()
    for text in (datasets.DIGITS_ATTRIBUTION, readme, datasets.digits.__doc__, datasets.__doc__):
        assert "Alpaydin" in text and "Kaynak" in text
        assert "10.24432/C50P49" in text
        assert "CC BY 4.0" in text


def test_the_wheel_carries_the_digits_and_its_readme_and_reads_them_from_there(tmp_path):
    _, wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "topos/datasets/__init__.py" in names
        assert archive.read("topos/datasets/digits.npz") == (ROOT / "py/topos/datasets/digits.npz").read_bytes()
        assert b"CC BY 4.0" in archive.read("topos/datasets/README.md")
        archive.extractall(tmp_path / "installed")
    # Imported from the unpacked wheel alone (as Pyodide installs it), not from the checkout.
    probe = (
        "import hashlib, sys; sys.path.insert(0, sys.argv[1]); import topos\n"
        "assert topos.__file__.startswith(sys.argv[1]), topos.__file__\n"
        "images, labels = topos.datasets.digits()\n"
        "print(images.shape, labels.shape, hashlib.sha256(images.tobytes() + labels.tobytes()).hexdigest())\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(tmp_path / "installed")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    images, labels = datasets.digits()
    expected = hashlib.sha256(images.tobytes() + labels.tobytes()).hexdigest()
    assert result.stdout.split() == ["(1797,", "1,", "8,", "8)", "(1797,)", expected]


def test_the_page_rebuilds_its_wheel_when_the_data_changes():
    # web/scripts/setup.sh hashes the files that go into the page's wheel to decide whether to rebuild it.
    setup = (ROOT / "web/scripts/setup.sh").read_text()
    hashed = next(line for line in setup.splitlines() if line.startswith("want_wheel="))
    assert "-name '*.npz'" in hashed and "-name '*.md'" in hashed
