"""Data sets that ship inside topos, read without a network: in the playground (offline, from
the installed wheel), in the docs and in tests.

``digits()`` is the only one: the 8x8 handwritten digits of UCI's "Optical Recognition of
Handwritten Digits", as scikit-learn bundles them (the set's 1,797 test images). Its creators
are E. Alpaydin and C. Kaynak (1998); UCI licenses it under Creative Commons Attribution 4.0
International (CC BY 4.0), DOI 10.24432/C50P49. ``README.md`` beside this module is the
attribution that travels with the file.
"""

from functools import cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DIGITS_FILE = HERE / "digits.npz"

# The attribution CC BY 4.0 asks for, as a user can print it beside a result.
DIGITS_ATTRIBUTION = (
    'E. Alpaydin and C. Kaynak, "Optical Recognition of Handwritten Digits", UCI Machine Learning '
    "Repository, 1998, https://doi.org/10.24432/C50P49, licensed under CC BY 4.0 "
    "(https://creativecommons.org/licenses/by/4.0/); the 8x8 test set as scikit-learn bundles it."
)


@cache
def _digits_file():
    # allow_pickle=False: the file holds two plain uint8 arrays, and a data file is never code.
    with np.load(DIGITS_FILE, allow_pickle=False) as archive:
        pixels, labels = archive["pixels"], archive["labels"]
    pixels.flags.writeable = False
    labels.flags.writeable = False
    return pixels, labels


def digits():
    """The 1,797 handwritten digits: ``(images, labels)``.

    ``images`` is float32 ``[1797, 1, 8, 8]`` (NCHW: one channel, as a convolution reads
    them), each pixel scaled from the set's 0..16 (how many of 16 pixels of a 4x4 block of the
    original 32x32 bitmap were ink) to 0..1; ``labels`` is int32 ``[1797]``, the digit 0..9
    each image shows. Every class holds 174 to 183 images, in the set's own order (not
    sorted by class: split it as it comes, or shuffle with a fixed seed).

    Source: E. Alpaydin and C. Kaynak, "Optical Recognition of Handwritten Digits", UCI
    Machine Learning Repository (1998), DOI 10.24432/C50P49, licensed CC BY 4.0; the copy is
    scikit-learn's ``load_digits`` data, read from ``topos/datasets/digits.npz`` (about 45 KB)
    without a network. Each call returns new arrays, which the caller may change.
    """
    pixels, labels = _digits_file()
    images = (pixels.astype(np.float32) / np.float32(16.0)).reshape(-1, 1, 8, 8)
    return images, labels.astype(np.int32)


__all__ = ["DIGITS_ATTRIBUTION", "digits"]
