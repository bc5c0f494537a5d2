"""Where a job's record lives: ``<storage root>/_lna_jobs/``, beside the catalog's tables.

A job outlives the process that started it, so its state is kept in the namespace's
storage, not in memory: any process configured with the same root describes, cancels or
resumes it. Three files per job, each with one writer so no update is lost to a race:

* ``<id>.json``: the runner's record (status, progress, version, error, heartbeat,
  checkpoints). Written by whoever starts the job (QUEUED), then only by its driver;
* ``<id>.cancel``: the cancel request, created by any process (AlterTransaction); the
  driver sees it at its next heartbeat or ``raise_if_cancelled``;
* ``<id>.props.json``: the properties AlterTransaction sets, under a file lock.

Every write replaces a whole file (locally a temp file renamed over the old one; on
``s3://`` one PUT), so readers see the old record or the new, never half of one.
Paths are built from validated job ids only, so nothing is
written outside ``_lna_jobs``. Records hold no secrets: the request is stripped of its
``identity`` and ``context`` and the backend's properties are never stored; a job's
connection always comes from the backend that runs it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from .. import errors

#: a job's id: the prefix DescribeTransaction routes on, then 32 hex digits
JOB_ID: Final = re.compile(r"^lna-job-[0-9a-f]{32}$")
#: the folder under the storage root
FOLDER: Final = "_lna_jobs"
#: the most bytes of one record (a larger one is refused before anything runs)
MAX_RECORD_BYTES: Final = 1024 * 1024
#: AlterTransaction's properties: how many, and how long a key or value may be
MAX_PROPERTIES: Final = 64
MAX_KEY_CHARS: Final = 256
MAX_VALUE_CHARS: Final = 4096
#: the most records :meth:`JobStore.records` reads when looking for a job to resume
MAX_SCANNED: Final = 10_000


#: reads of a record that does not parse before it is called corrupt
_READ_ATTEMPTS: Final = 5


def valid_job_id(job_id: str) -> bool:
    return bool(JOB_ID.match(job_id))


class _LocalFiles:
    """A local folder: temp file + rename for every write, ``flock`` for the properties."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def put(self, name: str, data: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.folder / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def get(self, name: str) -> bytes | None:
        try:
            with open(self.folder / name, "rb") as handle:
                return handle.read(MAX_RECORD_BYTES + 1)
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return (self.folder / name).exists()

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.folder / name)

    def names(self) -> list[tuple[str, float]]:
        try:
            return [(entry.name, entry.stat().st_mtime) for entry in os.scandir(self.folder)]
        except FileNotFoundError:
            return []

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / name, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


#: Lance's S3 storage option names → pyarrow's S3FileSystem arguments
_S3_OPTIONS: Final = {
    "access_key": ("aws_access_key_id", "access_key_id"),
    "secret_key": ("aws_secret_access_key", "secret_access_key"),
    "session_token": ("aws_session_token", "session_token", "token"),
    "region": ("aws_region", "region"),
    "endpoint_override": ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url"),
}


class _S3Files:
    """An S3 prefix (pyarrow's S3 client, configured from the backend's ``storage.*``
    options): one PUT per write, which S3 makes atomic; the properties file is last
    writer wins (S3 has no lock to take)."""

    def __init__(self, uri: str, options: Mapping[str, str]) -> None:
        from pyarrow import fs

        given = {k.lower(): v for k, v in options.items()}
        arguments: dict[str, Any] = {}
        for argument, keys in _S3_OPTIONS.items():
            for key in keys:
                if given.get(key):
                    arguments[argument] = given[key]
                    break
        endpoint = str(arguments.get("endpoint_override", ""))
        if "://" in endpoint:
            scheme, _, arguments["endpoint_override"] = endpoint.partition("://")
            arguments["scheme"] = scheme
        # writes complete in close(): a record is whole once put() returns
        self.fs = fs.S3FileSystem(background_writes=False, **arguments)
        self.folder = uri.partition("://")[2].rstrip("/")

    def put(self, name: str, data: bytes) -> None:
        with self.fs.open_output_stream(f"{self.folder}/{name}") as out:
            out.write(data)

    def get(self, name: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(f"{self.folder}/{name}") as handle:
                data: bytes = handle.read(MAX_RECORD_BYTES + 1)
                return data
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        from pyarrow import fs

        return bool(self.fs.get_file_info(f"{self.folder}/{name}").type != fs.FileType.NotFound)

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(f"{self.folder}/{name}")

    def names(self) -> list[tuple[str, float]]:
        from pyarrow import fs

        found = self.fs.get_file_info(fs.FileSelector(self.folder, allow_not_found=True))
        return [(info.base_name, info.mtime.timestamp() if info.mtime else 0.0) for info in found]

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        yield


class JobStore:
    """The job records of one storage root (see the module docstring): a local path, or
    an ``s3://`` root reached with the backend's ``storage.*`` options."""

    def __init__(self, root: str, storage_options: Mapping[str, str] | None = None) -> None:
        self._files: _LocalFiles | _S3Files
        if root.startswith(("s3://", "s3a://")):
            self._files = _S3Files(f"{root.rstrip('/')}/{FOLDER}", storage_options or {})
        elif "://" in root and not root.startswith("file://"):
            raise errors.UnsupportedOperationError(
                f"jobs keep their records under the storage root, which must be a local "
                f"path or s3:// (got a {root.partition('://')[0]}:// root)"
            )
        else:
            folder = Path(root.removeprefix("file://")).expanduser().absolute() / FOLDER
            self._files = _LocalFiles(folder)

    def _name(self, job_id: str, suffix: str) -> str:
        if not valid_job_id(job_id):
            raise errors.InvalidInputError(f"{job_id!r} is not a job id (lna-job-<32 hex>)")
        return f"{job_id}{suffix}"

    def _load(self, name: str) -> dict[str, Any] | None:
        # an object store may show a write under way (moto's S3 shows an object being
        # replaced empty for a moment): a record that does not parse is read again
        # before it is called corrupt
        for attempt in range(_READ_ATTEMPTS):
            try:
                return _parsed(name, self._files.get(name))
            except errors.InvalidTableStateError:
                if attempt == _READ_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
        return None

    # the runner's record

    def write(self, record: Mapping[str, Any]) -> None:
        data = json.dumps(record, sort_keys=True).encode()
        if len(data) > MAX_RECORD_BYTES:
            raise errors.InvalidInputError(
                f"the job's record would take {len(data)} bytes (at most {MAX_RECORD_BYTES})"
            )
        self._files.put(self._name(str(record["job_id"]), ".json"), data)

    def read(self, job_id: str) -> dict[str, Any] | None:
        return self._load(self._name(job_id, ".json"))

    def records(self) -> Iterator[dict[str, Any]]:
        """Every job's record (at most :data:`MAX_SCANNED`, newest first)."""
        entries = [
            (name, mtime)
            for name, mtime in self._files.names()
            if name.endswith(".json")
            and not name.endswith(".props.json")
            and valid_job_id(name.removesuffix(".json"))
        ]
        entries.sort(key=lambda entry: entry[1], reverse=True)
        for name, _ in entries[:MAX_SCANNED]:
            found = self._load(name)
            if found is not None:
                yield found

    # retention

    def stale(self, before: float) -> tuple[list[str], list[str]]:
        """``(job ids, stray files)`` last written before ``before`` (seconds since the
        epoch), oldest first: the jobs whose record may be pruned (a running job's record
        is stamped every second, so an old one belongs to a finished or dead job), and
        the files of no record (a crashed write's temp file, a job's side files left
        by an interrupted prune). One listing; nothing is read."""
        listed = self._files.names()
        records = {
            name.removesuffix(".json")
            for name, _ in listed
            if name.endswith(".json") and not name.endswith(".props.json")
        }
        jobs: list[tuple[float, str]] = []
        strays: list[tuple[float, str]] = []
        for name, mtime in listed:
            if mtime >= before:
                continue
            job_id = name.split(".", 1)[0]
            if name == f"{job_id}.json" and valid_job_id(job_id):
                jobs.append((mtime, job_id))
            elif name.startswith(".tmp-") or (valid_job_id(job_id) and job_id not in records):
                strays.append((mtime, name))
        return [job_id for _, job_id in sorted(jobs)], [name for _, name in sorted(strays)]

    def remove(self, job_id: str) -> None:
        """Delete a job's record, then its cancel request, properties and lock: a reader
        in between finds no job (TransactionNotFound), never half of one."""
        for suffix in (".json", ".cancel", ".props.json", ".lock"):
            self._files.delete(self._name(job_id, suffix))

    def remove_stray(self, name: str) -> None:
        """Delete a file :meth:`stale` called stray (nothing else: names are checked)."""
        job_id = name.split(".", 1)[0]
        if not (name.startswith(".tmp-") or valid_job_id(job_id)) or "/" in name:
            raise errors.InvalidInputError(f"{name!r} is not a job file")
        self._files.delete(name)

    # cancellation

    def request_cancel(self, job_id: str) -> None:
        self._files.put(self._name(job_id, ".cancel"), b"cancel requested\n")

    def cancel_requested(self, job_id: str) -> bool:
        return self._files.exists(self._name(job_id, ".cancel"))

    # AlterTransaction's properties

    def properties(self, job_id: str) -> dict[str, str]:
        found = self._load(self._name(job_id, ".props.json"))
        return {str(k): str(v) for k, v in (found or {}).items()}

    def alter_properties(self, job_id: str, set_: Mapping[str, str], unset: list[str]) -> None:
        name = self._name(job_id, ".props.json")
        with self._files.locked(self._name(job_id, ".lock")):
            current = {str(k): str(v) for k, v in (self._load(name) or {}).items()}
            current.update(set_)
            for key in unset:
                current.pop(key, None)
            if len(current) > MAX_PROPERTIES:
                raise errors.InvalidInputError(
                    f"a job keeps at most {MAX_PROPERTIES} properties ({len(current)} asked)"
                )
            self._files.put(name, json.dumps(current, sort_keys=True).encode())


def _parsed(name: str, data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    if len(data) > MAX_RECORD_BYTES:
        raise errors.InvalidTableStateError(f"the job record {name} is too large")
    try:
        found = json.loads(data)
    except ValueError:
        raise errors.InvalidTableStateError(f"the job record {name} is corrupt") from None
    if not isinstance(found, dict):
        raise errors.InvalidTableStateError(f"the job record {name} is not an object")
    return found
