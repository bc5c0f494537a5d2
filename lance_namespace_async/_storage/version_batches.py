"""Versions recorded from staged manifests, and the all-or-none batches over them:
CreateTableVersion, BatchDeleteTableVersions, BatchCreateTableVersions and
BatchCommitTables, written once for every backend that stores tables (the directory
backend and the catalogs: Iceberg, Unity, Glue, Hive), each through a :class:`BatchHost`.

pylance 14.0.2's DirectoryNamespace has neither batch. All are built on the mechanism of
its CreateTableVersion (managed versioning on a directory): the caller stages a
manifest inside the table, and the version is recorded by putting that manifest at
its final name in ``_versions/`` *only if no such file exists* (put-if-not-exists);
the staged file is removed once recorded. Here the final name is a hard link of the
staged file (an exclusive-create copy where links are refused), so a version
another writer recorded first is a conflict (ConcurrentModification, 14), even
across processes.

All or none: every entry is checked first (bad input is InvalidInput, 13, a missing
table TableNotFound, 4, before anything changes); the entries are then applied in
order, each leaving an undo step, and a failure runs the undo steps backwards
(unlinks the recorded manifests, moves deleted ones back, drops tables the batch
declared, re-registers tables it deregistered) before the error is raised. Staged
manifests and deleted versions are removed for good only once the whole batch has
landed. Batches of one namespace object run one at a time. A reader may see an
entry of a batch that is later undone (storage has no multi-file transaction); it
never sees the outcome of a failed batch. A backend may leave some operations of a
BatchCommitTables to a commit of its own (:data:`Elsewhere`: the Iceberg catalog's
transaction of ``managed_by=impl`` tables), run after all others landed.

The undo steps need the files of the tables, so these operations need tables on a
local filesystem (UnsupportedOperation, 0, on an object store). Declares and
deregisters go through the backend's own operations, so the catalog (or the
directory's ``__manifest``) is written as by any other call. Versions are deleted
only where DropTable may delete data (:meth:`BatchHost.location` with ``deletes``):
inside the storage root or an operator's allowed prefix, never elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from .. import errors
from .._core.identifiers import Identifier
from .places import local_path

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace
    from .tables import LanceTables

__all__ = [
    "BatchHost",
    "Elsewhere",
    "batch_commit_tables",
    "batch_create_table_versions",
    "batch_delete_table_versions",
    "committed_manifests",
    "create_table_version",
]


_U64_MAX = 2**64 - 1
_COMMITTED = re.compile(r"^[0-9]+\.manifest$")
_KINDS = ("declare_table", "create_table_version", "delete_table_versions", "deregister_table")
_TRASH = ".lance-namespace-async"

Undo = Callable[[], Awaitable[None]]


@attrs.frozen(eq=False)
class BatchHost:
    """What the version operations need from a backend.

    ``namespace``: the backend (declares, drops, deregisters and registers go through
    its own operations; batches of one backend object run one at a time);
    ``tables``: its :class:`~.tables.LanceTables` (worker threads, confinement);
    ``table_id``: a request's table id checked, or InvalidInput;
    ``location``: the table's location for ``what``, refused (typed error) when the
    operation may not use its storage; with ``deletes`` also where no data may be
    deleted; ``describe_version``: the TableVersion body of a recorded version.
    """

    namespace: AsyncLanceNamespace
    tables: LanceTables
    table_id: Callable[[Any], Identifier]
    location: Callable[[Identifier, str, bool], Awaitable[str]]
    describe_version: Callable[[Identifier, int], Awaitable[dict[str, Any]]]


_locks: weakref.WeakKeyDictionary[Any, anyio.Lock] = weakref.WeakKeyDictionary()


def _lock(namespace: Any) -> anyio.Lock:
    lock = _locks.get(namespace)
    if lock is None:
        lock = _locks[namespace] = anyio.Lock()
    return lock


def _name(table: Sequence[str]) -> str:
    return ".".join(table)


# -- checking a version entry (no I/O) -----------------------------------------------------


def _int(value: Any, what: str, *, minimum: int | None = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.InvalidInputError(f"{what} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise errors.InvalidInputError(f"{what} must be >= {minimum}, got {value}")
    return value


def _no_branch(body: dict[str, Any], operation: str) -> None:
    if body.get("branch") not in (None, "", "main"):
        raise errors.UnsupportedOperationError(f"{operation} on a branch")


@attrs.frozen
class _VersionEntry:
    """One CreateTableVersion of a batch, checked for shape."""

    table: Identifier
    version: int
    manifest_path: str
    manifest_size: int | None
    naming_scheme: str | None

    @classmethod
    def parse(cls, host: BatchHost, body: Any, what: str) -> _VersionEntry:
        if not isinstance(body, dict):
            raise errors.InvalidInputError(f"{what} must be an object")
        _no_branch(body, "CreateTableVersion")
        table = host.table_id(body.get("id"))
        version = _int(body.get("version"), f"{what}: version")
        path = body.get("manifest_path")
        if not isinstance(path, str) or not path.strip():
            raise errors.InvalidInputError(f"{what}: manifest_path must be a non-empty string")
        size = body.get("manifest_size")
        if size is not None:
            size = _int(size, f"{what}: manifest_size")
        scheme = body.get("naming_scheme")
        if scheme is not None and scheme not in ("V1", "V2"):
            raise errors.InvalidInputError(f"{what}: naming_scheme must be V1 or V2")
        return cls(table, version, path, size, scheme)


# -- files of a table (worker thread) ------------------------------------------------------


def _table_dir(location: str, table: Identifier) -> str:
    path = local_path(location)
    if path is None:
        raise errors.UnsupportedOperationError(
            f"recording or deleting versions of table {_name(table)!r} needs it on a local "
            "filesystem (the undo steps move its files)"
        )
    return os.path.realpath(path)


def _version_of(file_name: str) -> int | None:
    """The version a committed manifest name stands for (both naming schemes)."""
    if not _COMMITTED.match(file_name):
        return None
    number = int(file_name[: -len(".manifest")])
    return _U64_MAX - number if len(file_name) == len("0" * 20 + ".manifest") else number


def _final_name(version: int, scheme: str) -> str:
    return f"{_U64_MAX - version:020d}.manifest" if scheme == "V2" else f"{version}.manifest"


def _committed(table_dir: str) -> dict[int, str]:
    """version -> file name of the committed manifests of a table."""
    try:
        names = os.listdir(os.path.join(table_dir, "_versions"))
    except FileNotFoundError:
        return {}
    found: dict[int, str] = {}
    for name in names:
        version = _version_of(name)
        if version is not None:
            found[version] = name
    return found


def _staged_file(entry: _VersionEntry, table_dir: str) -> str:
    """The staged manifest, which must be a regular file inside the table directory and
    not a committed manifest (it is removed once the version is recorded)."""
    path = entry.manifest_path
    local = local_path(path)
    if local is None:
        raise errors.InvalidInputError(
            f"manifest_path {path!r} of table {_name(entry.table)!r} is not a local path"
        )
    candidates = [local] if os.path.isabs(local) else [os.path.join(table_dir, local), "/" + local]
    for candidate in candidates:
        parent = os.path.realpath(os.path.dirname(candidate))
        inside = os.path.commonpath([parent, table_dir]) == table_dir
        if inside and os.path.lexists(candidate):
            staged = os.path.join(parent, os.path.basename(candidate))
            break
    else:
        raise errors.InvalidInputError(
            f"no staged manifest at {path!r} inside table {_name(entry.table)!r}"
        )
    if os.path.islink(staged) or not os.path.isfile(staged):
        raise errors.InvalidInputError(f"staged manifest {path!r} is not a regular file")
    if _COMMITTED.match(os.path.basename(staged)):
        raise errors.InvalidInputError(
            f"manifest_path {path!r} names a committed manifest, not a staged one"
        )
    if entry.manifest_size is not None and os.path.getsize(staged) != entry.manifest_size:
        raise errors.InvalidInputError(
            f"manifest_size {entry.manifest_size} of {path!r} is not the file's size"
        )
    return staged


@attrs.frozen
class _Landing:
    """Where one version's manifest goes: staged file -> final name in ``_versions/``."""

    entry: _VersionEntry
    staged: str
    final: str


def _plan(entry: _VersionEntry, table_dir: str) -> _Landing:
    staged = _staged_file(entry, table_dir)
    committed = _committed(table_dir)
    if entry.version in committed:
        raise errors.ConcurrentModificationError(
            f"table {_name(entry.table)!r} already has version {entry.version}"
        )
    scheme = entry.naming_scheme
    if scheme is None:  # the table's own scheme; V2 for a table without versions
        v1 = any(len(name) != len("0" * 20 + ".manifest") for name in committed.values())
        scheme = "V1" if v1 else "V2"
    final = os.path.join(table_dir, "_versions", _final_name(entry.version, scheme))
    return _Landing(entry, staged, final)


def _put_if_not_exists(landing: _Landing) -> None:
    os.makedirs(os.path.dirname(landing.final), exist_ok=True)
    try:
        os.link(landing.staged, landing.final)
        return
    except FileExistsError:
        pass
    except OSError:  # a filesystem without hard links: an exclusive create, then the bytes
        try:
            with open(landing.staged, "rb") as source, open(landing.final, "xb") as target:
                shutil.copyfileobj(source, target)
            return
        except FileExistsError:
            pass
    raise errors.ConcurrentModificationError(
        f"version {landing.entry.version} of table {_name(landing.entry.table)!r} was "
        "recorded by another writer"
    )


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# -- one batch: apply with undo steps -------------------------------------------------------


class _Batch:
    """The steps applied so far, their undo steps and what to remove once all landed."""

    def __init__(self, host: BatchHost) -> None:
        self.host = host
        self.undo: list[Undo] = []
        self.finally_remove: list[str] = []

    async def thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self.host.tables.run(fn, *args)

    async def table_dir(self, table: Identifier, *, deletes: bool = False) -> str:
        location = await self.host.location(table, "changing the table's versions", deletes)
        return _table_dir(location, table)

    async def plan_version(self, entry: _VersionEntry) -> _Landing:
        table_dir = await self.table_dir(entry.table)
        landing: _Landing = await self.thread(_plan, entry, table_dir)
        return landing

    async def land(self, landing: _Landing) -> None:
        await self.thread(_put_if_not_exists, landing)

        async def undo() -> None:
            await self.thread(_unlink, landing.final)

        self.undo.append(undo)
        self.finally_remove.append(landing.staged)

    async def answer(self, landing: _Landing) -> dict[str, Any]:
        """The recorded version as DescribeTableVersion and ListTableVersions answer it."""
        return await self.host.describe_version(landing.entry.table, landing.entry.version)

    async def rollback(self) -> None:
        for step in reversed(self.undo):
            with anyio.CancelScope(shield=True):
                await step()

    async def finish(self) -> None:
        def remove() -> None:
            for path in self.finally_remove:
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                    with contextlib.suppress(OSError):  # ours, if nothing else is in it
                        os.rmdir(os.path.dirname(path))
                else:
                    _unlink(path)

        with anyio.CancelScope(shield=True):
            await self.thread(remove)


async def _all_or_none(host: BatchHost, apply: Callable[[_Batch], Awaitable[Any]]) -> Any:
    async with _lock(host.namespace):
        batch = _Batch(host)
        try:
            result = await apply(batch)
        except BaseException:
            await batch.rollback()
            raise
        await batch.finish()
        return result


# -- BatchCreateTableVersions --------------------------------------------------------------


def _entries(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise errors.InvalidInputError(f"{what} must be a list")
    return value


def _refuse_twice(entries: list[_VersionEntry]) -> None:
    seen: set[tuple[Identifier, int]] = set()
    for entry in entries:
        key = (entry.table, entry.version)
        if key in seen:
            raise errors.InvalidInputError(
                f"version {entry.version} of table {_name(entry.table)!r} is in the batch twice"
            )
        seen.add(key)


async def batch_create_table_versions(host: BatchHost, request: Any) -> Any:
    """Record one version of each listed table: every one, or none (module docstring)."""
    from .._core.base import json_data
    from ..models import BatchCreateTableVersionsResponse

    body: dict[str, Any] = json_data(request)
    raw = _entries(body.get("entries"), "entries")
    entries = [
        _VersionEntry.parse(host, item, f"entries[{index}]") for index, item in enumerate(raw)
    ]
    _refuse_twice(entries)

    async def apply(batch: _Batch) -> list[dict[str, Any]]:
        landings = [await batch.plan_version(entry) for entry in entries]  # checks all first
        for landing in landings:
            await batch.land(landing)
        return [await batch.answer(landing) for landing in landings]

    versions = await _all_or_none(host, apply)
    return BatchCreateTableVersionsResponse.from_dict({"versions": versions})


# -- BatchCommitTables ---------------------------------------------------------------------


@attrs.frozen
class _Operation:
    kind: str
    body: dict[str, Any]
    table: Identifier
    version_entry: _VersionEntry | None = None
    ranges: tuple[tuple[int, int], ...] = ()


def _ranges(value: Any, what: str) -> tuple[tuple[int, int], ...]:
    found: list[tuple[int, int]] = []
    for index, item in enumerate(_entries(value, f"{what}: ranges")):
        if not isinstance(item, dict):
            raise errors.InvalidInputError(f"{what}: ranges[{index}] must be an object")
        start = _int(item.get("start_version"), f"{what}: ranges[{index}].start_version")
        end = _int(item.get("end_version"), f"{what}: ranges[{index}].end_version", minimum=-1)
        found.append((start, end))
    return tuple(found)


def _parse_operation(host: BatchHost, item: Any, what: str) -> _Operation:
    if not isinstance(item, dict):
        raise errors.InvalidInputError(f"{what} must be an object")
    given = [kind for kind in _KINDS if item.get(kind) is not None]
    unknown = sorted(set(item) - set(_KINDS) - {"additional_properties"})
    if len(given) != 1 or unknown:
        raise errors.InvalidInputError(f"{what} must hold exactly one of {', '.join(_KINDS)}")
    kind = given[0]
    body = item[kind]
    if not isinstance(body, dict):
        raise errors.InvalidInputError(f"{what}.{kind} must be an object")
    if kind == "create_table_version":
        entry = _VersionEntry.parse(host, body, f"{what}.{kind}")
        return _Operation(kind, body, entry.table, version_entry=entry)
    table = host.table_id(body.get("id"))
    if kind == "delete_table_versions":
        _no_branch(body, "DeleteTableVersions")
        return _Operation(kind, body, table, ranges=_ranges(body.get("ranges"), f"{what}.{kind}"))
    return _Operation(kind, body, table)


def _in_ranges(version: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    """pylance's BatchDeleteTableVersions ranges: start inclusive, end exclusive, -1 open."""
    return any(start <= version and (end == -1 or version < end) for start, end in ranges)


def _set_aside(table_dir: str, ranges: tuple[tuple[int, int], ...]) -> tuple[str, list[str]]:
    """Move the manifests of the versions in ``ranges`` out of ``_versions`` (to a
    directory of this batch inside the table); returns it and the names moved."""
    committed = _committed(table_dir)
    names = sorted(name for version, name in committed.items() if _in_ranges(version, ranges))
    aside = os.path.join(table_dir, _TRASH, f"batch-{uuid.uuid4().hex}")
    os.makedirs(aside)
    versions_dir = os.path.join(table_dir, "_versions")
    moved: list[str] = []
    try:
        for name in names:
            os.rename(os.path.join(versions_dir, name), os.path.join(aside, name))
            moved.append(name)
    except BaseException:
        _put_back(table_dir, aside, moved)
        raise
    return aside, moved


def _put_back(table_dir: str, aside: str, names: list[str]) -> None:
    for name in names:
        os.rename(os.path.join(aside, name), os.path.join(table_dir, "_versions", name))
    shutil.rmtree(aside, ignore_errors=True)


async def _apply(batch: _Batch, operation: _Operation) -> dict[str, Any]:
    from ..models import (
        DeclareTableRequest,
        DeregisterTableRequest,
        DropTableRequest,
        RegisterTableRequest,
    )

    ns, table = batch.host.namespace, operation.table
    if operation.kind == "declare_table":
        declared = await ns.declare_table(DeclareTableRequest.from_dict(operation.body))

        async def undeclare() -> None:
            await ns.drop_table(DropTableRequest(id=list(table)))

        batch.undo.append(undeclare)
        return {"declare_table": declared.to_dict()}
    if operation.kind == "deregister_table":
        deregistered = await ns.deregister_table(DeregisterTableRequest.from_dict(operation.body))
        location = str(deregistered.location)

        async def register_again() -> None:
            with batch.host.tables.confinement.restoring():  # it was registered a moment ago
                await ns.register_table(RegisterTableRequest(id=list(table), location=location))

        batch.undo.append(register_again)
        return {"deregister_table": deregistered.to_dict()}
    if operation.kind == "delete_table_versions":
        table_dir = await batch.table_dir(table, deletes=True)
        aside, moved = await batch.thread(_set_aside, table_dir, operation.ranges)

        async def put_back() -> None:
            await batch.thread(_put_back, table_dir, aside, moved)

        batch.undo.append(put_back)
        batch.finally_remove.append(aside)
        return {"delete_table_versions": {"deleted_count": len(moved)}}
    entry = operation.version_entry
    assert entry is not None
    landing = await batch.plan_version(entry)
    await batch.land(landing)
    return {"create_table_version": landing}


#: operations of a batch that another commit applies (an Iceberg catalog transaction):
#: their indices, and that commit, run last (it cannot be undone) once every other
#: operation landed; its failure undoes them; it answers its operations' results by index
Elsewhere = tuple[frozenset[int], Callable[[], Awaitable[dict[int, dict[str, Any]]]]]


async def batch_commit_tables(
    host: BatchHost, request: Any, *, elsewhere: Elsewhere | None = None
) -> Any:
    """Apply declares, version records, version deletions and deregisters in order:
    every one, or none (module docstring); ``elsewhere``'s operations by its commit."""
    from .._core.base import json_data
    from ..models import BatchCommitTablesResponse

    body: dict[str, Any] = json_data(request)
    raw = _entries(body.get("operations"), "operations")
    operations = [
        _parse_operation(host, item, f"operations[{index}]") for index, item in enumerate(raw)
    ]
    _refuse_twice([op.version_entry for op in operations if op.version_entry is not None])
    skipped, commit_elsewhere = elsewhere or (frozenset(), None)

    async def apply(batch: _Batch) -> list[dict[str, Any]]:
        results = [
            {} if index in skipped else await _apply(batch, operation)
            for index, operation in enumerate(operations)
        ]
        for result in results:  # answered once every version is recorded
            landing = result.get("create_table_version")
            if isinstance(landing, _Landing):
                result["create_table_version"] = {"version": await batch.answer(landing)}
        if commit_elsewhere is not None:
            for index, result in (await commit_elsewhere()).items():
                results[index] = result
        return results

    results = await _all_or_none(host, apply)
    return BatchCommitTablesResponse.from_dict({"results": results})


# -- CreateTableVersion and BatchDeleteTableVersions of one table ---------------------------


def committed_manifests(location: str) -> dict[int, str]:
    """version -> file name of the committed manifests of a local table (``{}`` on an
    object store, or without ``_versions``)."""
    path = local_path(location)
    return {} if path is None else _committed(path)


async def create_table_version(host: BatchHost, request: Any) -> Any:
    """Record one version from its staged manifest (put-if-not-exists, as pylance's
    DirectoryNamespace does): the table of managed-versioning writers (pylance given a
    namespace client whose DescribeTable answers ``managed_versioning=true``).

    The answer spells ``manifest_path`` as the request spelled the staged one, with the
    final name, as pylance's DirectoryNamespace does.
    """
    from .._core.base import json_data
    from ..models import CreateTableVersionResponse

    body: dict[str, Any] = json_data(request)
    entry = _VersionEntry.parse(host, body, "CreateTableVersion")

    async def apply(batch: _Batch) -> _Landing:
        landing = await batch.plan_version(entry)
        await batch.land(landing)
        return landing

    landing: _Landing = await _all_or_none(host, apply)
    size = await host.tables.run(os.path.getsize, landing.final)
    spelled = entry.manifest_path
    final_name = os.path.basename(landing.final)
    folder, slash, _ = spelled.rpartition("/")
    final_spelled = folder + slash + final_name
    answer: dict[str, Any] = {
        "version": entry.version,
        "manifest_path": final_spelled,
        "manifest_size": size,
    }
    if isinstance(body.get("e_tag"), str):
        answer["e_tag"] = body["e_tag"]
    return CreateTableVersionResponse.from_dict({"version": answer})


async def batch_delete_table_versions(host: BatchHost, request: Any) -> Any:
    """Delete the versions of one table in the request's ranges (start inclusive, end
    exclusive, -1 open, as pylance's DirectoryNamespace reads them): all of them or
    none, and only where the backend may delete data (:class:`BatchHost`)."""
    from .._core.base import json_data
    from ..models import BatchDeleteTableVersionsResponse

    body: dict[str, Any] = json_data(request)
    _no_branch(body, "BatchDeleteTableVersions")
    table = host.table_id(body.get("id"))
    ranges = _ranges(body.get("ranges"), "BatchDeleteTableVersions")

    async def apply(batch: _Batch) -> int:
        table_dir = await batch.table_dir(table, deletes=True)
        aside, moved = await batch.thread(_set_aside, table_dir, ranges)

        async def put_back() -> None:
            await batch.thread(_put_back, table_dir, aside, moved)

        batch.undo.append(put_back)
        batch.finally_remove.append(aside)
        return len(moved)

    deleted: int = await _all_or_none(host, apply)
    return BatchDeleteTableVersionsResponse.from_dict({"deleted_count": deleted})
