"""The Fourier transforms of ``topos.fft``, spelled as numpy.fft's: ``fft``, ``ifft``, ``rfft``,
``irfft``, ``fft2``, ``ifft2``, and the pairs' helpers ``complex``, ``real``, ``imag``, ``abs``.

A complex array is a real array with a trailing axis of 2, its real and imaginary parts
(``topos.ops.fft`` says why); ``axis`` counts the complex array's own axes, so the pair
axis is never one of them. Each function moves the transformed axis next to the pairs
(a ``Transpose``), pads or cuts it to ``n`` (``Pad``/``Slice``, as numpy's ``n``), records
one ``Fft``, ``Rfft`` or ``Irfft``, scales for ``norm`` and moves the axis back.
"""

from ..errors import ArgumentError, ShapeError
from ..ops.registry import axis_index
from . import arguments
from . import functions as F
from . import shape_functions as S

NORMS = (None, "backward", "ortho", "forward")


def _check_norm(norm):
    if norm not in NORMS:
        raise ArgumentError(f"norm must be one of 'backward', 'ortho', 'forward', got {norm!r}")


def _scale(value, n, norm, inverse):
    """numpy's ``norm``: the unscaled forward and 1/n inverse ("backward") rescaled to the asked one."""
    _check_norm(norm)
    if norm == "ortho":
        factor = n**0.5 if inverse else n**-0.5
    elif norm == "forward":
        factor = float(n) if inverse else 1.0 / n
    else:
        return value
    return value * factor


def _pairs(z, what, least_rank=1):
    """``z`` if it is a recorded complex array (real/imaginary pairs, a trailing axis of 2);
    ``ShapeError`` otherwise (``all_or_nothing`` gives it the user's line)."""
    z = arguments.recorded(z, what)
    if z.ndim < least_rank or z.shape[-1] != 2:
        raise ShapeError(
            f"{what} takes complex values as real/imaginary pairs [..., 2], got shape {list(z.shape)}",
            opcode=what,
            shapes=[z.shape],
        )
    return z


def _complex_axis(z, axis, what):
    """The axis of the complex array ``z`` (pairs) that ``axis`` names, and the rank without pairs."""
    z = _pairs(z, what, least_rank=2)
    rank = z.ndim - 1
    return axis_index(axis, z.shape[:-1], what), rank


def _to_end(value, axis, last):
    """``value`` with ``axis`` moved to position ``last`` (and the permutation to undo it)."""
    order = [a for a in range(value.ndim) if a != axis]
    order.insert(last, axis)
    if order == list(range(value.ndim)):
        return value, None
    undo = [order.index(a) for a in range(value.ndim)]
    return S.transpose(value, tuple(order)), tuple(undo)


def _back(value, undo):
    return value if undo is None else S.transpose(value, undo)


def _fit(value, axis, n):
    """``value`` cut or padded with zeros along ``axis`` to ``n`` elements (numpy's ``n``)."""
    have = value.shape[axis]
    if n is None or n == have:
        return value
    if n < 1:
        raise ArgumentError(f"n must be at least 1, got {n}")
    if n < have:
        index = (slice(None),) * axis + (slice(0, n),)
        return F.getitem(value, index)
    high = [0] * value.ndim
    high[axis] = n - have
    zeros = (0,) * value.ndim
    return value.tape.apply("Pad", [value], low=zeros, high=tuple(high), interior=zeros)


def _complex_transform(z, n, axis, norm, inverse, what):
    axis, rank = _complex_axis(z, axis, what)
    moved, undo = _to_end(z, axis, rank - 1)
    moved = _fit(moved, rank - 1, n)
    out = moved.tape.apply("Fft", [moved], inverse=inverse)
    return _back(_scale(out, out.shape[-2], norm, inverse), undo)


def fft(z, n=None, axis=-1, norm=None):
    """The discrete Fourier transform of complex pairs ``z`` along ``axis`` (records ``Fft``).

    As ``numpy.fft.fft``: ``y[k] = sum_j z[j] exp(-2 pi i j k / n)``, ``n`` pads with zeros
    or cuts the axis first, ``norm`` is "backward" (default), "ortho" or "forward". ``z`` is
    pairs ``[..., 2]`` (``topos.fft.complex(re, im)`` makes them from two real values), and
    so is the result. Its derivative is the adjoint transform.
    """
    return _complex_transform(z, n, axis, norm, False, "fft")


def ifft(z, n=None, axis=-1, norm=None):
    """The inverse of ``fft`` (records ``Fft`` with ``inverse``): as ``numpy.fft.ifft``, over n."""
    return _complex_transform(z, n, axis, norm, True, "ifft")


def rfft(x, n=None, axis=-1, norm=None):
    """The transform of real values along ``axis``: pairs of its n // 2 + 1 first entries (records ``Rfft``).

    As ``numpy.fft.rfft``; the result's ``axis`` has n // 2 + 1 entries and a trailing pair axis.
    """
    x = arguments.recorded(x, "rfft")
    axis = axis_index(axis, x.shape, "rfft")
    moved, undo = _to_end(x, axis, x.ndim - 1)
    moved = _fit(moved, x.ndim - 1, n)
    out = moved.tape.apply("Rfft", [moved])
    if undo is not None:
        # The pairs stay last: the permutation of the real axes, then the pair axis.
        undo = undo + (x.ndim,)
    return _back(_scale(out, moved.shape[-1], norm, False), undo)


def irfft(z, n=None, axis=-1, norm=None):
    """Real values whose ``rfft`` is ``z`` (records ``Irfft``): as ``numpy.fft.irfft``.

    ``n`` defaults to 2 (m - 1) for m entries; the entries are cut or padded to n // 2 + 1
    first. The imaginary parts of entry 0 and, for even n, of entry n / 2 do not count.
    """
    axis, rank = _complex_axis(z, axis, "irfft")
    moved, undo = _to_end(z, axis, rank - 1)
    n = 2 * (moved.shape[-2] - 1) if n is None else n
    if n < 1:
        raise ArgumentError(f"irfft needs n >= 1, got {n}")
    moved = _fit(moved, rank - 1, n // 2 + 1)
    out = moved.tape.apply("Irfft", [moved], n=n)
    if undo is not None:
        undo = undo[:-1]
    return _back(_scale(out, n, norm, True), undo)


def _two_axes(axes, s):
    if len(axes) != 2:
        raise ArgumentError(f"fft2 takes two axes, got {axes}")
    sizes = (None, None) if s is None else tuple(s)
    return axes, sizes


def fft2(z, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional ``fft`` over ``axes`` (two ``Fft`` nodes): as ``numpy.fft.fft2``."""
    axes, sizes = _two_axes(axes, s)
    return fft(fft(z, sizes[1], axes[1], norm), sizes[0], axes[0], norm)


def ifft2(z, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional ``ifft`` over ``axes`` (two ``Fft`` nodes): as ``numpy.fft.ifft2``."""
    axes, sizes = _two_axes(axes, s)
    return ifft(ifft(z, sizes[1], axes[1], norm), sizes[0], axes[0], norm)


def complex(re, im=None):  # noqa: A001  (numpy's name)
    """Pairs ``[..., 2]`` from a real part and an imaginary part (0 where ``im`` is None)."""
    re = arguments.recorded(re, "complex")
    im = re * 0.0 if im is None else im
    return S.concatenate([S.expand_dims(re, -1), S.expand_dims(im, -1)], axis=-1)


def real(z):
    """The real parts of pairs ``[..., 2]``."""
    return F.getitem(_pairs(z, "real"), (Ellipsis, 0))


def imag(z):
    """The imaginary parts of pairs ``[..., 2]``."""
    return F.getitem(_pairs(z, "imag"), (Ellipsis, 1))


def abs(z):  # noqa: A001  (numpy's name)
    """The magnitudes of pairs ``[..., 2]``: ``sqrt(re^2 + im^2)`` (its derivative is NaN at 0, as sqrt's)."""
    return F.sqrt(F.sum(F.square(_pairs(z, "abs")), axis=-1))


# Each public function records atomically: an error leaves the tape as it was, and names the user's line.
for _name in ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "complex", "real", "imag", "abs"):
    globals()[_name] = arguments.all_or_nothing(globals()[_name])
del _name
