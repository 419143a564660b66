"""The script's working directory in the page: the user's files in, the files a run writes out.

The page keeps the user's files (dropped on it or picked) in the browser, and hands
each Python worker the whole set. Every run, the readings' at each keystroke and
Run mode's, starts in a working directory that holds exactly those files as they
were stored: ``WorkingDirectory.prepare`` removes whatever an earlier run left
there and writes back each file of the user's that a run deleted or changed. A
script may read, change and delete them as it likes; it changes only its own
run's copy. After the run, ``WorkingDirectory.written`` lists what the run wrote
there (new files, and the user's files it changed), for the page to offer as
downloads.

Telling a changed copy from an untouched one must not cost a keystroke a read of
every file, so each copy's ``os.stat`` is noted when it is written, with its
modification time set to a mark no write leaves (0, the epoch): a write, a
truncation or a file deleted and made again changes the size, the time or the
inode. Only the directory and its folders count: a file written elsewhere
(``/tmp``) is not listed.
"""

import json
import os
import shutil

from ..errors import ArgumentError

#: Where the page's scripts run: Pyodide's home has nothing else in this folder.
DEFAULT_PATH = "/home/pyodide/work"
#: The modification time (nanoseconds) each copy of a user's file is given: no write leaves it.
UNTOUCHED_MTIME_NS = 0


class WorkingDirectory:
    """A folder that every run starts in, holding the user's files (by name) and nothing else."""

    def __init__(self, path=DEFAULT_PATH):
        self.path = path
        #: Each user's file copied in, by name: the ``(size, mtime_ns, inode)`` it was left with.
        self.copies = {}

    def prepare(self, names, write):
        """Make the folder hold exactly the files ``names`` as stored, and make it the working directory.

        ``write(name, path)`` writes the stored bytes of the file ``name`` to ``path``;
        it is called only for a file whose copy is missing or was changed since it was
        written. Everything else in the folder (an earlier run's output) is removed.
        """
        names = set(names)
        for name in names:
            if not is_file_name(name):
                raise ArgumentError(f"{name!r} is not a file name: a user's file is named without a folder")
        os.makedirs(self.path, exist_ok=True)
        for entry in os.scandir(self.path):
            if entry.name in names and entry.is_file(follow_symlinks=False) and self._untouched(entry):
                continue
            self.copies.pop(entry.name, None)
            _remove(entry)
        for name in sorted(names - set(os.listdir(self.path))):
            path = os.path.join(self.path, name)
            write(name, path)
            os.utime(path, ns=(UNTOUCHED_MTIME_NS, UNTOUCHED_MTIME_NS))
            self.copies[name] = _signature(os.stat(path))
        for name in set(self.copies) - names:
            del self.copies[name]
        os.chdir(self.path)

    def written(self):
        """What the run wrote in the folder: ``[{"name": relative path, "size": bytes}]``, sorted by name.

        A new file, or a user's file whose copy changed; folders are walked (``logs/run.txt``).
        """
        found = []
        if not os.path.isdir(self.path):
            return found
        for folder, folders, files in os.walk(self.path):
            folders.sort()
            for name in files:
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, self.path).replace(os.sep, "/")
                if not os.path.isfile(path) or os.path.islink(path):
                    continue
                if relative in self.copies and self._untouched_path(relative, path):
                    continue
                found.append({"name": relative, "size": os.path.getsize(path)})
        return sorted(found, key=lambda item: item["name"])

    def written_json(self):
        return json.dumps(self.written())

    def _untouched(self, entry):
        return self.copies.get(entry.name) == _signature(entry.stat(follow_symlinks=False))

    def _untouched_path(self, name, path):
        return self.copies.get(name) == _signature(os.stat(path))


def is_file_name(name):
    """Whether ``name`` names a file in the folder itself: not empty, no folder separator, not ``.`` or ``..``."""
    return bool(name) and "/" not in name and "\\" not in name and "\0" not in name and name not in (".", "..")


def _signature(stat):
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def _remove(entry):
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path, ignore_errors=True)
    else:
        os.remove(entry.path)
