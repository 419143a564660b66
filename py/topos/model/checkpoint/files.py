"""The file handling both checkpoint formats share: atomic writes, reads that name the file, little-endian bytes."""

import os

import numpy as np

from ...errors import ArgumentTypeError, CheckpointError
from ...ops.attributes import is_whole


def write_atomically(path, chunks):
    """Write the byte strings of ``chunks`` to ``path`` so that readers see the old file or the new, never part.

    ``chunks`` may be a generator: the data is produced while it is written. An
    ``OSError`` becomes a ``CheckpointError``; any other exception propagates as
    it is. Either way the temporary file is gone and the old file untouched.
    """
    path = file_path(path, "save()")
    directory = os.path.dirname(os.path.abspath(path))
    temporary, descriptor = _create_temporary(path, directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            for chunk in chunks:
                file.write(chunk)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        _remove_quietly(temporary)
        if isinstance(error, OSError):
            raise CheckpointError(f"cannot write {path}: {error}") from error
        raise
    _sync_directory(directory)


def _create_temporary(path, directory):
    """A new hidden file beside ``path``; created with ``O_EXCL`` so it is ours alone, and with the umask's mode."""
    base = os.path.basename(path)
    for _ in range(100):
        temporary = os.path.join(directory, f".{base}.{os.urandom(6).hex()}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise CheckpointError(f"cannot write {path}: {error}") from error
        return temporary, descriptor
    raise CheckpointError(f"cannot write {path}: no free temporary file name in {directory}")


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _sync_directory(directory):
    """Make the rename durable where the platform allows it (POSIX); elsewhere this is a no-op."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def file_path(path, what):
    """``path`` as ``os.fspath`` gives it; a path of another kind (a number, None) is the caller's argument error."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(f"{what} takes a file path (str or os.PathLike), got {type(path).__name__}")
    return os.fspath(path)


def read_file(path, what):
    path = file_path(path, f"loading a {what}")
    try:
        with open(path, "rb") as file:
            return path, file.read()
    except OSError as error:
        raise CheckpointError(f"cannot read {what} {path}: {error}") from error


def little_endian_bytes(array):
    """The array's elements in C order as little-endian bytes."""
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def is_count(value):
    """A non-negative int that is not a bool."""
    return is_whole(value) and value >= 0
