"""Where a job's record lives: ``<storage root>/_lna_jobs/``, beside the catalog's tables.

A job outlives the process that started it, so its state is kept in the namespace's
storage, not in memory: any process configured with the same root describes, cancels or
resumes it. Three files per job, each with one writer so no update is lost to a race:

* ``<id>.json``: the runner's record (status, progress, version, error, heartbeat,
  checkpoints). Written by whoever starts the job (QUEUED), then only by its driver;
* ``<id>.cancel``: the cancel request, created by any process (AlterTransaction); the
  driver sees it at its next heartbeat or ``raise_if_cancelled``;
* ``<id>.props.json``: the properties AlterTransaction sets, under a file lock.

Every write is a temp file renamed over the old one (readers see the old record or the
new, never half of one). Paths are built from validated job ids only, so nothing is
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


def valid_job_id(job_id: str) -> bool:
    return bool(JOB_ID.match(job_id))


class JobStore:
    """The job records of one storage root (a local path; see the module docstring)."""

    def __init__(self, root: str) -> None:
        if "://" in root and not root.startswith("file://"):
            raise errors.UnsupportedOperationError(
                f"jobs keep their records under the storage root, which must be a local "
                f"path for now (got a {root.partition('://')[0]}:// root)"
            )
        self.folder = Path(root.removeprefix("file://")).expanduser().absolute() / FOLDER

    def _path(self, job_id: str, suffix: str) -> Path:
        if not valid_job_id(job_id):
            raise errors.InvalidInputError(f"{job_id!r} is not a job id (lna-job-<32 hex>)")
        return self.folder / f"{job_id}{suffix}"

    # the runner's record

    def write(self, record: Mapping[str, Any]) -> None:
        data = json.dumps(record, sort_keys=True).encode()
        if len(data) > MAX_RECORD_BYTES:
            raise errors.InvalidInputError(
                f"the job's record would take {len(data)} bytes (at most {MAX_RECORD_BYTES})"
            )
        self._replace(self._path(str(record["job_id"]), ".json"), data)

    def read(self, job_id: str) -> dict[str, Any] | None:
        return _load(self._path(job_id, ".json"))

    def records(self) -> Iterator[dict[str, Any]]:
        """Every job's record (at most :data:`MAX_SCANNED`, newest files first)."""
        try:
            entries = [
                entry
                for entry in os.scandir(self.folder)
                if entry.name.endswith(".json")
                and not entry.name.endswith(".props.json")
                and valid_job_id(entry.name.removesuffix(".json"))
            ]
        except FileNotFoundError:
            return
        entries.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
        for entry in entries[:MAX_SCANNED]:
            found = _load(Path(entry.path))
            if found is not None:
                yield found

    # cancellation

    def request_cancel(self, job_id: str) -> None:
        self._replace(self._path(job_id, ".cancel"), b"cancel requested\n")

    def cancel_requested(self, job_id: str) -> bool:
        return self._path(job_id, ".cancel").exists()

    # AlterTransaction's properties

    def properties(self, job_id: str) -> dict[str, str]:
        found = _load(self._path(job_id, ".props.json"))
        return {str(k): str(v) for k, v in (found or {}).items()}

    def alter_properties(self, job_id: str, set_: Mapping[str, str], unset: list[str]) -> None:
        path = self._path(job_id, ".props.json")
        with self._locked(job_id):
            current = {str(k): str(v) for k, v in (_load(path) or {}).items()}
            current.update(set_)
            for key in unset:
                current.pop(key, None)
            if len(current) > MAX_PROPERTIES:
                raise errors.InvalidInputError(
                    f"a job keeps at most {MAX_PROPERTIES} properties ({len(current)} asked)"
                )
            self._replace(path, json.dumps(current, sort_keys=True).encode())

    @contextlib.contextmanager
    def _locked(self, job_id: str) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self._path(job_id, ".lock"), "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _replace(self, path: Path, data: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _load(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(data) > MAX_RECORD_BYTES:
        raise errors.InvalidTableStateError(f"the job record {path.name} is too large")
    try:
        found = json.loads(data)
    except ValueError:
        raise errors.InvalidTableStateError(f"the job record {path.name} is corrupt") from None
    if not isinstance(found, dict):
        raise errors.InvalidTableStateError(f"the job record {path.name} is not an object")
    return found
