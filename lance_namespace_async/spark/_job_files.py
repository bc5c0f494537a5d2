"""A write job's record of the data files its tasks wrote, so that an abort finds them all.

Spark hands ``abort`` the commit messages of the tasks that finished before the job
failed. A task still running then (the other partition of a job whose first task
failed, a speculative copy) finishes later; its message is dropped, and without more
its data files would stay in the table's ``data`` directory, referenced by nothing.

So a job keeps a directory of its own beside the table's, ``_lna_spark_job_<id>``
(Lance reads only its own directories), holding a ``LIVE`` mark while it runs:

* a task, after writing its files and before returning its message, records their
  paths in a file of its own there, then looks for ``LIVE``. Gone: the job ended
  without it, and the task deletes its files and its record and fails;
* the driver, when the job ends, first deletes ``LIVE``, then every recorded file
  (on abort) and the directory.

Whichever comes first, a late task's files are deleted: if its look found ``LIVE``,
its record was there before the driver listed the records; if not, it deletes them
itself. A task whose record cannot be written because the directory is gone is a
late task too.

Only tables on a local (or mounted) file system keep such a directory. On an object
store the process may hold no credentials of its own (a catalog vends them to Lance),
and pyarrow looking for some would delay every write; there an abort still deletes
only the files of the messages Spark hands it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid

from .._storage.places import as_uri, local_path

__all__ = ["JobFiles", "LateTaskError", "delete_data_files"]

_PREFIX = "_lna_spark_job_"
_LIVE = "LIVE"
#: the most of a task's record read (a task writes a few file names)
_RECORD_BYTES = 1 << 20
#: a task's record, as :meth:`JobFiles.record` names it: nothing else there is deleted
_RECORD_NAME = re.compile(r"task-[0-9a-f]{32}\.json")


class LateTaskError(RuntimeError):
    """A task finished after its job had ended: its files were deleted again."""


class JobFiles:
    """One write job's directory beside the table's (see the module docstring).

    Only tables on a local (or mounted) file system have one, so it is plain ``os``
    work: ``start`` says whether the job has it.
    """

    def __init__(self, location: str, job: str | None = None) -> None:
        self.location = location
        self.job = job or uuid.uuid4().hex
        self._root = local_path(location)

    def __repr__(self) -> str:
        return f"JobFiles({self.job})"

    @property
    def _directory(self) -> str:
        assert self._root is not None  # a job without a directory is never used
        return os.path.join(self._root, f"{_PREFIX}{self.job}")

    def start(self) -> bool:
        """Driver side, before any task runs: the directory and its ``LIVE`` mark. False
        (the job goes without; an abort deletes the files of the messages it is given)
        for a table on an object store, or a local one that cannot take the directory."""
        if self._root is None:
            return False
        try:
            os.makedirs(self._directory)
            with open(os.path.join(self._directory, _LIVE), "xb"):
                pass
        except OSError:
            return False
        return True

    def record(self, paths: list[str]) -> None:
        """Task side, after writing ``paths`` (relative to ``data``), before returning them.

        Raises :class:`LateTaskError`, the files deleted, when the job already ended.
        """
        if not paths:
            return
        assert self._root is not None
        directory = self._directory
        record = os.path.join(directory, f"task-{uuid.uuid4().hex}.json")
        try:
            with open(record, "xb") as out:
                out.write(json.dumps(paths).encode())
        except FileNotFoundError:  # the job's directory is gone: it ended
            live = False
        except OSError:  # not writable from this executor: the message only
            return
        else:
            live = os.path.exists(os.path.join(directory, _LIVE))
        if not live:
            _unlink([*data_files(self._root, paths), record])
            with contextlib.suppress(OSError):  # the last one out: the directory too
                os.rmdir(directory)
            raise LateTaskError(
                f"write job {self.job} ended before this task finished; its files were deleted"
            )

    def finish(self, *, aborted: bool, known: list[str]) -> None:
        """Driver side, once: end the job. On abort, delete every file a task wrote
        (``known``, from the messages Spark passed on, and every recorded one); on commit
        (``known``: the files committed), the recorded ones not committed (a task attempt
        that failed or lost to a speculative copy after recording them)."""
        assert self._root is not None
        directory = self._directory
        if os.path.islink(directory):
            return  # not the directory start() made: nothing in it is the job's to delete
        _unlink([os.path.join(directory, _LIVE)])
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            names = []
        records = [
            os.path.join(directory, name)
            for name in names
            if _RECORD_NAME.fullmatch(name) and os.path.isfile(os.path.join(directory, name))
        ]
        recorded: list[str] = []
        for record in records:
            with contextlib.suppress(OSError, ValueError), open(record, "rb") as stream:
                paths = json.loads(stream.read(_RECORD_BYTES))
                if isinstance(paths, list):
                    recorded.extend(path for path in paths if isinstance(path, str))
        committed = set() if aborted else set(known)
        doomed = [*known, *recorded] if aborted else [p for p in recorded if p not in committed]
        _unlink(data_files(self._root, doomed))
        _unlink(records)
        with contextlib.suppress(OSError):  # not empty: a late task's record, it removes it
            os.rmdir(directory)


def delete_data_files(location: str, paths: list[str]) -> None:
    """Delete data files named relative to ``<location>/data`` (local or object store)."""
    if not paths:
        return
    from pyarrow import fs

    filesystem, root = fs.FileSystem.from_uri(as_uri(location))
    for path in data_files(root.rstrip("/"), paths):
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_file(path)


def data_files(root: str, paths: list[str]) -> list[str]:
    """The full paths of data files named relative to ``<root>/data``: only plain names
    below it (a record or message naming ``../_versions/...`` deletes nothing)."""
    return [
        f"{root}/data/{path}"
        for path in paths
        if isinstance(path, str)
        and path
        and not path.startswith("/")
        and ".." not in path.split("/")
        and "\\" not in path
    ]


def _unlink(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
