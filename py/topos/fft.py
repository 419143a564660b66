"""``topos.fft``: the Fourier transforms under numpy.fft's names (``topos.model.fft`` records them).

Complex values are real/imaginary pairs, a trailing axis of 2: ``topos.fft.complex``,
``real``, ``imag`` and ``abs`` make and read them.
"""

from .model.fft import abs, complex, fft, fft2, ifft, ifft2, imag, irfft, real, rfft  # noqa: A004

__all__ = ["abs", "complex", "fft", "fft2", "ifft", "ifft2", "imag", "irfft", "real", "rfft"]
