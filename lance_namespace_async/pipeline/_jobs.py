"""Jobs: start one on a named Spark cluster, describe it, cancel it, wait for it.

The pipeline's operations that compute (RefreshMaterializedView, AlterTableBackfillColumns)
call :func:`start_job` and answer its id at once; DescribeTransaction and AlterTransaction
whose last id element is a job id (``lna-job-<32 hex>``) arrive here from every storage
backend (``_core.pipeline_hook``). A job's id alone finds it (``id=[job_id]``), and so does
the table followed by it, as pylance addresses a table's transactions.

Records live under the storage root (``_store``), so a job outlives the process that
started it; a job's status is derived from its record on every read: a queued or running
job whose driver is gone (its process dead on this host, or its heartbeat older than
``job_heartbeat_timeout``) is FAILED (ServiceUnavailable), never running for ever.

A failed or cancelled job leaves its checkpoints in its record; starting the same kind of
job on the same table with the same request resumes from them (``resumed_from``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .. import errors
from ..models import (
    AlterTransactionResponse,
    AlterTransactionResponseProperties,
    DescribeTransactionRequest,
    DescribeTransactionResponse,
    DescribeTransactionResponseProperties,
    Unset,
)
from ._clusters import driver_for, resolve
from ._control import JobCancelled, JobStatus
from ._runner import now_ms
from ._store import MAX_KEY_CHARS, MAX_VALUE_CHARS, JobStore, valid_job_id

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

logger = logging.getLogger("lance_namespace_async.pipeline.jobs")

#: the job kinds the runner knows, kind → ``"module:function"`` of its body
JOB_KINDS: dict[str, str] = {
    "refresh_materialized_view": "lance_namespace_async.pipeline._views:run_refresh",
    "backfill_columns": "lance_namespace_async.pipeline._backfill:run_backfill",
}

#: request fields never kept in a record (credentials, tracing)
_NOT_KEPT: Final = frozenset({"identity", "context"})

#: the property names a job's description uses (AlterTransaction may not set them)
RESERVED: Final = frozenset(
    {
        "kind",
        "table_id",
        "cluster",
        "created_at_ms",
        "started_at_ms",
        "finished_at_ms",
        "heartbeat_at_ms",
        "fragments_done",
        "fragments_total",
        "version",
        "error_code",
        "error_type",
        "error_message",
        "resumed_from",
        "cancel_requested",
    }
)

#: days a finished job's record is kept unless ``job_retention_days`` says
DEFAULT_RETENTION_DAYS: Final = 30.0
#: the most records one new job reads (and deletes) while pruning: starting a job stays
#: cheap however many records wait, and they go a batch per job
PRUNED_PER_JOB: Final = 64

_SET_MODES: Final = frozenset({"OVERWRITE", "FAIL", "SKIP"})
_UNSET_MODES: Final = frozenset({"SKIP", "FAIL"})


def _root(ns: AsyncLanceNamespace) -> str:
    root = getattr(ns.config, "root", None)
    if not root:
        raise errors.InvalidInputError(
            f"jobs keep their records under the storage root: configure 'root' on the "
            f"{ns.impl_name} backend to run them"
        )
    text = str(root)
    return text if "://" in text else os.path.abspath(os.path.expanduser(text))


def _store(ns: AsyncLanceNamespace) -> JobStore:
    """The job records of ``ns``'s storage root, reached with its ``storage.*`` options."""
    return JobStore(_root(ns), _storage_options(ns))


def _storage_options(ns: AsyncLanceNamespace) -> dict[str, str]:
    return dict(getattr(ns.config, "storage", None) or {})


def _heartbeat_timeout(ns: AsyncLanceNamespace) -> float:
    return float(getattr(ns.config, "job_heartbeat_timeout", 30.0))


def _retention_days(ns: AsyncLanceNamespace) -> float:
    return float(getattr(ns.config, "job_retention_days", DEFAULT_RETENTION_DAYS))


# starting


async def start_job(
    ns: AsyncLanceNamespace,
    *,
    kind: str,
    table_id: Sequence[str],
    request: Mapping[str, Any],
    cluster: str | None,
) -> str:
    """Queue a job of ``kind`` on ``cluster`` (None: ``default``) and return its id.

    ``request`` (JSON-able; its ``identity``/``context`` are dropped) is what the body
    gets, kept in the record. An unknown kind or cluster, or a request too large to keep,
    is InvalidInput and starts nothing. The call returns once the job is queued; its
    driver starts it (and Spark, on its first job) on its own."""
    target = JOB_KINDS.get(kind)
    if target is None:
        raise errors.InvalidInputError(f"unknown job kind {kind!r} (known: {sorted(JOB_KINDS)})")
    chosen = resolve(ns.config, cluster)
    root = _root(ns)
    try:
        kept = json.loads(
            json.dumps({k: v for k, v in request.items() if k not in _NOT_KEPT}, sort_keys=True)
        )
    except (TypeError, ValueError) as exc:
        raise errors.InvalidInputError(f"a job's request must be JSON: {exc}") from None
    job_id = f"lna-job-{uuid.uuid4().hex}"
    properties = dict(ns.config.properties)
    impl = ns.impl_name

    storage_options = _storage_options(ns)
    retention_days, heartbeat_timeout = _retention_days(ns), _heartbeat_timeout(ns)

    def start() -> None:
        store = JobStore(root, storage_options)
        checkpoints, resumed_from = _resumable(store, kind, list(table_id), kept)
        pid, handle = driver_for(chosen)
        record: dict[str, Any] = {
            "job_id": job_id,
            "kind": kind,
            "table_id": list(table_id),
            "cluster": chosen.name,
            "request": kept,
            "status": JobStatus.QUEUED.value,
            "created_at": now_ms(),
            "heartbeat": now_ms(),
            "driver": {"host": socket.gethostname(), "pid": pid},
            "checkpoints": checkpoints,
        }
        if resumed_from:
            record["resumed_from"] = resumed_from
        store.write(record)
        handle.send(
            {
                "op": "run",
                "root": root,
                "storage_options": storage_options,
                "job_id": job_id,
                "target": target,
                "impl": impl,
                "properties": properties,
                "request": kept,
                "checkpoints": checkpoints,
            }
        )
        try:  # the job is on its way: a prune that fails must not fail it
            prune(store, retention_days, heartbeat_timeout, limit=PRUNED_PER_JOB)
        except Exception as exc:
            logger.warning("pruning old job records under %s failed: %s", root, exc)

    await asyncio.to_thread(start)
    return job_id


# retention


def prune(
    store: JobStore, retention_days: float, heartbeat_timeout: float, *, limit: int | None = None
) -> list[str]:
    """Delete the records of jobs that finished more than ``retention_days`` ago; return
    their ids.

    Only finished jobs go (SUCCEEDED, FAILED, CANCELLED, or a queued or running one whose
    driver is gone, as :func:`effective` reads it): a job still running is never
    touched. At most ``limit`` records are read (None: every stale one), oldest first,
    from one listing; 0 days keeps everything. A pruned job is TransactionNotFound, and
    its checkpoints are gone: the same request starts afresh."""
    if retention_days <= 0:
        return []
    cutoff_ms = now_ms() - int(retention_days * 86_400_000)
    jobs, strays = store.stale(cutoff_ms / 1000)
    pruned: list[str] = []
    for job_id in jobs[:limit]:
        try:
            record = store.read(job_id)
        except errors.InvalidTableStateError:  # corrupt, and untouched for that long
            record = None
        if record is not None:
            seen = effective(record, store, heartbeat_timeout)
            if not JobStatus(seen["status"]).finished:
                continue
            last = max(int(record.get(key) or 0) for key in ("finished_at", "heartbeat"))
            if last >= cutoff_ms:
                continue
        store.remove(job_id)
        pruned.append(job_id)
    for name in strays[: None if limit is None else max(0, limit - len(pruned))]:
        store.remove_stray(name)
    return pruned


async def prune_jobs(ns: AsyncLanceNamespace, *, older_than_days: float | None = None) -> list[str]:
    """Delete the records of ``ns``'s jobs finished more than ``older_than_days`` ago
    (default: the backend's ``job_retention_days``), every one at once; return their
    ids. Storage backends only: a ``rest`` backend's records live with its server."""
    if not type(ns).stores_tables:
        raise errors.UnsupportedOperationError(
            f"job records live with the {ns.impl_name} backend's server: prune them there"
        )
    if older_than_days is not None and not 0 < older_than_days < float("inf"):
        raise errors.InvalidInputError(f"older_than_days must be > 0, got {older_than_days!r}")
    days = _retention_days(ns) if older_than_days is None else older_than_days
    store, timeout = _store(ns), _heartbeat_timeout(ns)
    return await asyncio.to_thread(prune, store, days, timeout)


def _resumable(
    store: JobStore, kind: str, table_id: list[str], request: Any
) -> tuple[dict[str, str], str | None]:
    """The checkpoints of the newest failed or cancelled run of the same job, if any."""
    for record in store.records():
        if (
            record.get("kind") == kind
            and record.get("table_id") == table_id
            and record.get("request") == request
            and record.get("checkpoints")
            and record.get("status") in (JobStatus.FAILED.value, JobStatus.CANCELLED.value)
        ):
            return dict(record["checkpoints"]), str(record["job_id"])
    return {}, None


# describing


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


def effective(record: Mapping[str, Any], store: JobStore, timeout: float) -> dict[str, Any]:
    """The record as a reader must see it: a queued or running job whose driver is gone
    is FAILED (or CANCELLED when a cancel was asked: nothing of it is visible either way)."""
    found = dict(record)
    if JobStatus(found["status"]).finished:
        return found
    driver = found.get("driver") or {}
    stale = now_ms() - int(found.get("heartbeat") or 0) > timeout * 1000
    gone = driver.get("host") == socket.gethostname() and _pid_gone(int(driver.get("pid") or 0))
    if stale or gone:
        if store.cancel_requested(str(found["job_id"])):
            found["status"] = JobStatus.CANCELLED.value
        else:
            found["status"] = JobStatus.FAILED.value
            found["error"] = {
                "code": int(errors.ServiceUnavailableError.code),
                "type": "ServiceUnavailableError",
                "message": "the job's driver is gone "
                + ("(its process exited)" if gone else f"(no heartbeat for {timeout:g}s)"),
            }
    return found


def _properties(record: Mapping[str, Any], store: JobStore) -> dict[str, str]:
    job_id = str(record["job_id"])
    shown = dict(store.properties(job_id))
    shown.update(
        {
            "kind": str(record["kind"]),
            "table_id": json.dumps(record["table_id"]),
            "cluster": str(record.get("cluster", "")),
            "created_at_ms": str(record.get("created_at", "")),
            "heartbeat_at_ms": str(record.get("heartbeat", "")),
        }
    )
    for key, name in (("started_at", "started_at_ms"), ("finished_at", "finished_at_ms")):
        if record.get(key) is not None:
            shown[name] = str(record[key])
    progress = record.get("progress")
    if progress:
        shown["fragments_done"], shown["fragments_total"] = str(progress[0]), str(progress[1])
    if record.get("version") is not None:
        shown["version"] = str(record["version"])
    error = record.get("error")
    if error:
        shown["error_code"] = str(error["code"])
        shown["error_type"] = str(error["type"])
        shown["error_message"] = str(error["message"])
    if record.get("resumed_from"):
        shown["resumed_from"] = str(record["resumed_from"])
    if store.cancel_requested(job_id):
        shown["cancel_requested"] = "true"
    return shown


def _find(ns: AsyncLanceNamespace, ids: Any) -> tuple[JobStore, dict[str, Any]]:
    """The job ``ids`` names (``[job_id]`` or ``[*table_id, job_id]``) or
    TransactionNotFound; a malformed job id is InvalidInput."""
    if isinstance(ids, Unset) or not ids:
        raise errors.InvalidInputError("a job's id is required")
    job_id = str(ids[-1])
    if not valid_job_id(job_id):
        raise errors.InvalidInputError(f"{job_id!r} is not a job id (lna-job-<32 hex>)")
    if not getattr(ns.config, "root", None):
        raise errors.TransactionNotFoundError(f"no job {job_id}: this backend has no root")
    store = _store(ns)
    record = store.read(job_id)
    table = [str(part) for part in ids[:-1]]
    if record is None or (table and record.get("table_id") != table):
        where = f" of table {'.'.join(table)}" if table else ""
        raise errors.TransactionNotFoundError(f"no job {job_id}{where}")
    return store, effective(record, store, _heartbeat_timeout(ns))


async def describe_transaction(
    ns: AsyncLanceNamespace, request: Any
) -> DescribeTransactionResponse:
    """DescribeTransaction of a job: its status and properties (see :data:`RESERVED`)."""

    def describe() -> DescribeTransactionResponse:
        store, record = _find(ns, request.id)
        return DescribeTransactionResponse(
            status=str(record["status"]),
            properties=DescribeTransactionResponseProperties.from_dict(_properties(record, store)),
        )

    return await asyncio.to_thread(describe)


# altering


def _checked_actions(actions: Any) -> tuple[bool, dict[str, tuple[str, str]], dict[str, str]]:
    """``(cancel, {key: (value, mode)}, {key: mode})`` of AlterTransaction's actions, all
    checked before any is applied."""
    cancel = False
    to_set: dict[str, tuple[str, str]] = {}
    to_unset: dict[str, str] = {}
    if not actions:
        raise errors.InvalidInputError("AlterTransaction needs at least one action")
    for action in actions:
        status = action.set_status_action
        put = action.set_property_action
        drop = action.unset_property_action
        given = [a for a in (status, put, drop) if not isinstance(a, Unset) and a is not None]
        if len(given) != 1:
            raise errors.InvalidInputError("each AlterTransaction action sets exactly one thing")
        if given[0] is status:
            wanted = str(status.status).upper() if not isinstance(status.status, Unset) else ""
            if wanted != JobStatus.CANCELLED.value:
                raise errors.InvalidInputError(
                    f"a job's status can only be set to CANCELLED (got {wanted or 'nothing'!r})"
                )
            cancel = True
        elif given[0] is put:
            key, value = _key(put.key), put.value
            if isinstance(value, Unset) or len(value) > MAX_VALUE_CHARS:
                raise errors.InvalidInputError(
                    f"property {key!r} needs a value of at most {MAX_VALUE_CHARS} characters"
                )
            to_set[key] = (value, _mode(put.mode, _SET_MODES, "OVERWRITE"))
        else:
            to_unset[_key(drop.key)] = _mode(drop.mode, _UNSET_MODES, "SKIP")
    return cancel, to_set, to_unset


def _key(key: Any) -> str:
    if isinstance(key, Unset) or not key or len(key) > MAX_KEY_CHARS:
        raise errors.InvalidInputError(f"a property key of 1 to {MAX_KEY_CHARS} characters")
    if key in RESERVED:
        raise errors.InvalidInputError(f"property {key!r} is the job's own; it cannot be set")
    return str(key)


def _mode(mode: Any, allowed: frozenset[str], default: str) -> str:
    if isinstance(mode, Unset) or mode is None:
        return default
    upper = str(mode).upper()
    if upper not in allowed:
        raise errors.InvalidInputError(f"mode {mode!r} is not one of {sorted(allowed)}")
    return upper


async def alter_transaction(ns: AsyncLanceNamespace, request: Any) -> AlterTransactionResponse:
    """AlterTransaction of a job: ``setStatusAction`` CANCELLED cancels a queued or
    running job (any other status is InvalidInput; a finished job's cancel is
    ConcurrentModification: it finished first); set/unsetPropertyAction change its
    properties (bounded; the job's own, :data:`RESERVED`, cannot be changed). Every
    action is checked before one is applied."""

    def alter() -> AlterTransactionResponse:
        cancel, to_set, to_unset = _checked_actions(request.actions)
        store, record = _find(ns, request.id)
        job_id = str(record["job_id"])
        if cancel and JobStatus(record["status"]).finished:
            raise errors.ConcurrentModificationError(
                f"job {job_id} already finished ({record['status']}); it cannot be cancelled"
            )
        current = store.properties(job_id)
        for key, (_, mode) in to_set.items():
            if mode == "FAIL" and key in current:
                raise errors.InvalidInputError(f"property {key!r} is already set")
        for key, mode in to_unset.items():
            if mode == "FAIL" and key not in current:
                raise errors.InvalidInputError(f"property {key!r} is not set")
        changes = {k: v for k, (v, mode) in to_set.items() if not (mode == "SKIP" and k in current)}
        if changes or to_unset:
            store.alter_properties(job_id, changes, list(to_unset))
        if cancel:
            store.request_cancel(job_id)
        record = effective(store.read(job_id) or record, store, _heartbeat_timeout(ns))
        return AlterTransactionResponse(
            status=str(record["status"]),
            properties=AlterTransactionResponseProperties.from_dict(_properties(record, store)),
        )

    return await asyncio.to_thread(alter)


# waiting


async def wait_for_job(
    ns: AsyncLanceNamespace,
    job_id: str,
    *,
    timeout: float | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Any:
    """Wait until job ``job_id`` finishes; return its final DescribeTransactionResponse.

    Works on every backend, ``rest`` included (it only calls DescribeTransaction).
    ``on_progress(done, total)`` is called whenever the job's progress changes. A job
    that FAILED raises its typed error (the protocol code it failed with); one that was
    CANCELLED raises :class:`JobCancelled`; ``timeout`` seconds without an end raise
    ``TimeoutError`` (the job keeps running)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    seen: tuple[int, int] | None = None
    # polls back off by a fifth each time (to 1 s): a job is seen done at most ~20% of its
    # run time after it ended (1.5x per poll made a 0.9 s refresh look like 1.3 s)
    pause = 0.05
    while True:
        answer = await ns.describe_transaction(DescribeTransactionRequest(id=[job_id]))
        shown = answer.properties.to_dict() if answer.properties else {}
        if on_progress is not None and "fragments_done" in shown:
            progress = (int(shown["fragments_done"]), int(shown["fragments_total"]))
            if progress != seen:
                seen = progress
                on_progress(*progress)
        status = str(answer.status).upper()
        if status == JobStatus.SUCCEEDED.value:
            return answer
        if status == JobStatus.FAILED.value:
            raise errors.from_code(
                int(shown.get("error_code", errors.InternalError.code)),
                f"job {job_id} failed: {shown.get('error_message', 'no reason recorded')}",
            )
        if status == JobStatus.CANCELLED.value:
            raise JobCancelled(f"job {job_id} was cancelled")
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"job {job_id} is still {status} after {timeout:g}s")
        wait = pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic()))
        await asyncio.sleep(wait)
        pause = min(pause * 1.2, 1.0)


def wait_for_job_sync(
    ns: Any,
    job_id: str,
    *,
    timeout: float | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Any:
    """:func:`wait_for_job` for a :class:`SyncLanceNamespace`, run on its portal."""
    return ns.run(
        wait_for_job, ns.async_namespace, job_id, timeout=timeout, on_progress=on_progress
    )
