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
from typing import Any

from .._lance_tables import as_uri, local_path

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
    """One write job's directory beside the table's (see the module docstring)."""

    def __init__(self, location: str, job: str | None = None) -> None:
        self.location = location
        self.job = job or uuid.uuid4().hex

    def __repr__(self) -> str:
        return f"JobFiles({self.job})"

    def start(self) -> bool:
        """Driver side, before any task runs: the directory and its ``LIVE`` mark. False
        (the job goes without; an abort deletes the files of the messages it is given)
        for a table on an object store, or a local one that cannot take the directory."""
        if local_path(self.location) is None:
            return False
        try:
            filesystem, root = _filesystem(self.location)
            directory = f"{root}/{_PREFIX}{self.job}"
            filesystem.create_dir(directory, recursive=True)
            with filesystem.open_output_stream(f"{directory}/{_LIVE}") as out:
                out.write(b"")
        except (OSError, ValueError):
            return False
        return True

    def record(self, paths: list[str]) -> None:
        """Task side, after writing ``paths`` (relative to ``data``), before returning them.

        Raises :class:`LateTaskError`, the files deleted, when the job already ended.
        """
        if not paths:
            return
        from pyarrow import fs

        filesystem, root = _filesystem(self.location)
        directory = f"{root}/{_PREFIX}{self.job}"
        record = f"{directory}/task-{uuid.uuid4().hex}.json"
        try:
            with filesystem.open_output_stream(record) as out:
                out.write(json.dumps(paths).encode())
        except FileNotFoundError:  # the job's directory is gone: it ended
            live = False
        except (OSError, ValueError):  # unreachable from this executor: the message only
            return
        else:
            live = filesystem.get_file_info(f"{directory}/{_LIVE}").type != fs.FileType.NotFound
        if not live:
            _delete(filesystem, [*data_files(root, paths), record])
            raise LateTaskError(
                f"write job {self.job} ended before this task finished; its files were deleted"
            )

    def finish(self, *, aborted: bool, known: list[str]) -> None:
        """Driver side, once: end the job. On abort, delete every file a task wrote
        (``known``, from the messages Spark passed on, and every recorded one); on commit
        (``known``: the files committed), the recorded ones not committed (a task attempt
        that failed or lost to a speculative copy after recording them)."""
        from pyarrow import fs

        filesystem, root = _filesystem(self.location)
        directory = f"{root}/{_PREFIX}{self.job}"
        local = local_path(self.location)
        if local is not None and os.path.islink(os.path.join(local, f"{_PREFIX}{self.job}")):
            return  # not the directory start() made: nothing in it is the job's to delete
        _delete(filesystem, [f"{directory}/{_LIVE}"])
        records = [
            info.path
            for info in filesystem.get_file_info(fs.FileSelector(directory, allow_not_found=True))
            if info.type == fs.FileType.File and _RECORD_NAME.fullmatch(info.base_name)
        ]
        recorded: list[str] = []
        for record in records:
            with (
                contextlib.suppress(FileNotFoundError, ValueError),
                filesystem.open_input_stream(record) as stream,
            ):
                paths = json.loads(stream.read(_RECORD_BYTES))
                if isinstance(paths, list):
                    recorded.extend(path for path in paths if isinstance(path, str))
        committed = set() if aborted else set(known)
        doomed = [*known, *recorded] if aborted else [p for p in recorded if p not in committed]
        _delete(filesystem, data_files(root, doomed))
        _delete(filesystem, records)
        with contextlib.suppress(FileNotFoundError, OSError):  # not empty: a late task's
            if not filesystem.get_file_info(fs.FileSelector(directory, allow_not_found=True)):
                filesystem.delete_dir(directory)


def delete_data_files(location: str, paths: list[str]) -> None:
    """Delete data files named relative to ``<location>/data`` (local or object store)."""
    if paths:
        filesystem, root = _filesystem(location)
        _delete(filesystem, data_files(root, paths))


def _filesystem(location: str) -> tuple[Any, str]:
    from pyarrow import fs

    filesystem, root = fs.FileSystem.from_uri(as_uri(location))
    return filesystem, root.rstrip("/")


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


def _delete(filesystem: Any, paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_file(path)
