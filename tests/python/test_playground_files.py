"""The page's working directory (topos.playground.files): every run starts with the user's files as
stored, whatever the run before it did to them, and the files a run writes are listed for download.

These run in CPython on a temporary folder; tests/browser/files.test.mjs runs the same module in
Pyodide, in both of the page's workers."""

import json
import os

import numpy as np
import pytest

from topos import playground
from topos.playground.files import WorkingDirectory, is_file_name

STORED = {"data.csv": b"1,2\n3,4\n", "notes.txt": b"hello\n"}


@pytest.fixture
def directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # prepare() changes the working directory: put it back after each test
    return WorkingDirectory(str(tmp_path / "work"))


def write_stored(calls):
    def write(name, path):
        calls.append(name)
        with open(path, "wb") as file:
            file.write(STORED[name])

    return write


def contents(folder):
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                found[os.path.relpath(path, folder)] = file.read()
    return found


def test_a_run_starts_in_a_folder_with_the_users_files_and_nothing_written_yet(directory):
    calls = []
    directory.prepare(STORED, write_stored(calls))
    assert os.getcwd() == directory.path
    assert contents(directory.path) == STORED
    assert sorted(calls) == sorted(STORED)
    assert directory.written() == []


def test_an_untouched_file_is_not_written_again(directory):
    calls = []
    directory.prepare(STORED, write_stored(calls))
    calls.clear()
    directory.prepare(STORED, write_stored(calls))
    assert calls == [], "a keystroke does not copy the user's files again"


def test_what_a_run_changed_deleted_or_wrote_is_undone_before_the_next_run(directory):
    directory.prepare(STORED, write_stored([]))
    with open("data.csv", "ab") as file:  # same folder: the run's working directory
        file.write(b"5,6\n")
    os.remove("notes.txt")
    np.save("weights.npy", np.arange(3.0))
    os.makedirs("logs")
    with open("logs/run.txt", "w") as file:
        file.write("step 1\n")
    written = directory.written()
    assert [item["name"] for item in written] == ["data.csv", "logs/run.txt", "weights.npy"]
    assert written[0]["size"] == len(STORED["data.csv"]) + 4
    calls = []
    directory.prepare(STORED, write_stored(calls))
    assert sorted(calls) == ["data.csv", "notes.txt"]
    assert contents(directory.path) == STORED
    assert directory.written() == []


def test_a_same_size_rewrite_is_seen(directory):
    # The copy's mark is its modification time of 0: any write moves it, even one of the same size.
    directory.prepare(STORED, write_stored([]))
    with open("notes.txt", "wb") as file:
        file.write(b"HELLO\n")
    assert [item["name"] for item in directory.written()] == ["notes.txt"]
    directory.prepare(STORED, write_stored([]))
    with open("notes.txt", "rb") as file:
        assert file.read() == b"hello\n"


def test_a_file_the_user_removed_leaves_the_folder(directory):
    directory.prepare(STORED, write_stored([]))
    directory.prepare(["data.csv"], write_stored([]))
    assert contents(directory.path) == {"data.csv": STORED["data.csv"]}


def test_a_folder_the_run_removed_is_made_again(directory):
    directory.prepare(STORED, write_stored([]))
    os.chdir("..")
    for name in os.listdir(directory.path):
        os.remove(os.path.join(directory.path, name))
    os.rmdir(directory.path)
    assert directory.written() == []
    directory.prepare(STORED, write_stored([]))
    assert contents(directory.path) == STORED


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "..\\x", "nul\0"])
def test_a_name_with_a_folder_in_it_is_refused(directory, name):
    assert not is_file_name(name)
    with pytest.raises(ValueError, match="not a file name"):
        directory.prepare([name], write_stored([]))


def test_a_readings_run_reads_the_users_file_and_leaves_the_working_directory_there(directory):
    directory.prepare(STORED, write_stored([]))
    code = (
        "import numpy as np, os\n"
        "values = np.loadtxt('data.csv', delimiter=',')\n"
        "print(values.sum(), open('notes.txt').read().strip())\n"
        "os.chdir('..')\n"
        "np.save('out.npy', values)\n"
    )
    result = json.loads(playground.run(code))
    assert result["error"] is None and result["output_text"] == "10.0 hello\n"
    # The script moved away; the run's end put the working directory back (topos.playground.state).
    assert os.getcwd() == directory.path
    assert directory.written() == [], "out.npy went to the folder above, which is not listed"
    assert os.path.exists(os.path.join(directory.path, "..", "out.npy"))
