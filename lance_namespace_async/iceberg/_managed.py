"""Implementation-managed Iceberg tables (seed 003, ``managed_by=impl``): commits via UpdateTable.

The catalog, not the table directory, holds the version of such a table: its
``current-snapshot-id`` is the Lance version readers see through the namespace.
Every new Lance version therefore becomes visible only through an Iceberg
UpdateTable whose requirement ``assert-ref-snapshot-id`` is the version the
writer started from, so of two writers racing from one version exactly one wins
and the other gets ConcurrentModification (14), as the catalog's 409 says.

Lance itself drives that protocol when a table is *managed-versioning*
(DescribeTable answers ``managed_versioning=true``): it writes the new manifest
under a staging name (``_versions/<final>.manifest-<uuid>``) and calls
CreateTableVersion; it finds versions with ListTableVersions and
DescribeTableVersion. Here CreateTableVersion

1. checks that the staged manifest is the table's own (inside its ``_versions``
   directory, named for the version and naming scheme it claims),
2. commits the version to the catalog (snapshot ``version``, the ``main`` ref
   moved to it, asserting it still points at ``version - 1``), and only then
3. moves the staged manifest to its final name, replacing whatever was written
   there around the catalog (seed 002: such changes are not reflected).

The versions listed are the table's manifests up to the catalog's version; a
version above it (a commit that lost, or one written straight to storage) is
never listed, described or opened through the namespace.

Both kinds of writers take that path: pylance given our sync facade as
``namespace_client``, and our own data operations (InsertIntoTable, UpdateTable,
indices, schema changes, RestoreTable ...), which open the table with
:class:`LoopNamespace`, a pylance namespace client that calls this backend back
on its event loop from pylance's threads.

With ``iceberg_tooling=true`` each commit also brings the Iceberg schema up to
date (Arrow -> Iceberg types) when the columns changed, so pyiceberg shows the
version and the columns. Manifests are moved with local file operations: a
managed table on an object store is refused with UnsupportedOperation.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import lance_namespace

from .. import errors
from .._core.base import json_data
from .._core.operations import OPERATIONS_BY_METHOD
from .._storage.failures import translate
from .._storage.operations import StorageTableOperations
from .._storage.places import local_path
from .._storage.requests import version_entry
from .._storage.table_base import StorageTable
from ._mapping import arrow_to_iceberg_schema, current_version, schema_changes, snapshot_updates

if TYPE_CHECKING:
    from .._core.identifiers import Identifier
    from ._client import IcebergRestClient

__all__ = ["LoopNamespace", "ManagedIcebergVersions"]

_U64_MAX = 2**64 - 1
#: a staged manifest: the final name, then ``-`` and the writer's unique suffix
_STAGED = re.compile(r"^(\d{1,20})\.manifest-[A-Za-z0-9-]{1,64}$")
_FINAL = re.compile(r"^(\d{1,20})\.manifest$")
#: digits of a V2 manifest name (``u64::MAX - version``, zero-padded)
_V2_DIGITS = 20


def manifest_name(version: int, scheme: str) -> str:
    """The final file name of ``version``'s manifest in a naming scheme (V1 or V2)."""
    if scheme == "V1":
        return f"{version}.manifest"
    return f"{_U64_MAX - version:0{_V2_DIGITS}d}.manifest"


def _version_of(digits: str) -> tuple[int, str]:
    """The version and naming scheme of a manifest name's number."""
    if len(digits) == _V2_DIGITS:
        return _U64_MAX - int(digits), "V2"
    return int(digits), "V1"


# -- manifests on storage ------------------------------------------------------------------


def _versions_dir(location: str, what: str) -> str:
    path = local_path(location)
    if path is None:
        raise errors.UnsupportedOperationError(
            f"{what}: managed_by=impl tables are committed on a local filesystem only, "
            f"not at {location!r}"
        )
    return os.path.join(os.path.abspath(path), "_versions")


def _staged_manifest(
    location: str, manifest_path: Any, version: int, scheme: Any, what: str
) -> tuple[str, str, str]:
    """The staged manifest of a CreateTableVersion, checked: its local path, its final
    local path, and the final path as the caller spelled the staged one.

    The staged manifest must lie directly in the table's ``_versions`` directory and
    be named for ``version`` (in ``scheme``, when given); anything else is refused
    before the catalog is touched.
    """
    if not isinstance(manifest_path, str) or not manifest_path or "\x00" in manifest_path:
        raise errors.InvalidInputError(f"{what}: manifest_path must be a non-empty path")
    versions = _versions_dir(location, what)
    spelled = manifest_path
    if spelled.startswith("file://"):
        spelled = local_path(spelled) or ""
    if spelled.startswith("_versions/"):  # relative to the table
        candidate = os.path.join(os.path.dirname(versions), spelled)
    else:  # an object-store path: the absolute path without its leading slash
        candidate = "/" + spelled.lstrip("/")
    if ".." in candidate.split("/") or os.path.dirname(candidate) != versions:
        raise errors.InvalidInputError(
            f"{what}: manifest_path {manifest_path!r} is not in the table's _versions directory"
        )
    name = os.path.basename(candidate)
    staged = _STAGED.match(name)
    if staged is None:
        raise errors.InvalidInputError(
            f"{what}: {name!r} is not a staged manifest (<version name>.manifest-<suffix>)"
        )
    named, named_scheme = _version_of(staged.group(1))
    if named != version or (scheme not in (None, "") and str(scheme) != named_scheme):
        raise errors.InvalidInputError(
            f"{what}: manifest {name!r} is not version {version}"
            + (f" in naming scheme {scheme}" if scheme else "")
        )
    final_name = f"{staged.group(1)}.manifest"
    final_spelled = manifest_path[: len(manifest_path) - len(name)] + final_name
    return candidate, os.path.join(versions, final_name), final_spelled


def _require_file(path: str, what: str) -> None:
    if not os.path.isfile(path) or os.path.islink(path):
        raise errors.InvalidInputError(f"{what}: the staged manifest {path!r} does not exist")


def _finalize(staged: str, final: str) -> int:
    """Give the staged manifest its final name (atomically, replacing what a writer
    around the catalog put there); its size."""
    try:
        os.replace(staged, final)
    except FileNotFoundError:
        if not os.path.isfile(final):
            raise
        # a DescribeTable that saw the catalog's version before its rename did it
    return os.path.getsize(final)


def _manifest_names(location: str, newest: int) -> dict[int, str]:
    """The final manifest names in a local table's ``_versions``, by version <= ``newest``.

    An object store's names are not listed: they are taken to follow V2, pylance's
    default naming scheme.
    """
    path = local_path(location)
    if path is None:
        return {}
    names: dict[int, str] = {}
    try:
        entries = os.listdir(os.path.join(path, "_versions"))
    except OSError:
        return {}
    for entry in entries:
        final = _FINAL.match(entry)
        if final is None:
            continue
        version, _ = _version_of(final.group(1))
        if version <= newest:
            names[version] = entry
    return names


def _final_manifests_above(location: str, newest: int) -> list[str]:
    """Names of a local table's final manifests of versions above ``newest``."""
    path = local_path(location)
    if path is None:
        return []
    try:
        entries = os.listdir(os.path.join(path, "_versions"))
    except OSError:
        return []
    return [
        entry
        for entry in entries
        if (final := _FINAL.match(entry)) is not None and _version_of(final.group(1))[0] > newest
    ]


def _set_aside(location: str, names: list[str]) -> list[tuple[str, str]]:
    """Rename manifests out of Lance's sight (``<name>-unaccepted-<uuid>``, which no
    listing of versions counts); the (final, set-aside) paths actually renamed."""
    versions = os.path.join(local_path(location) or "", "_versions")
    moved: list[tuple[str, str]] = []
    for name in names:
        final = os.path.join(versions, name)
        aside = f"{final}-unaccepted-{uuid.uuid4().hex}"
        try:
            os.rename(final, aside)
        except FileNotFoundError:
            continue
        moved.append((final, aside))
    return moved


def _put_back(moved: list[tuple[str, str]], newest: int | None) -> None:
    """Undo setting aside a version the catalog accepted meanwhile, unless its
    accepted manifest took the final name since."""
    for final, aside in moved:
        version, _ = _version_of(_FINAL.match(os.path.basename(final)).group(1))  # type: ignore[union-attr]
        if newest is not None and version <= newest and not os.path.exists(final):
            os.rename(aside, final)


_SET_ASIDE = re.compile(r"^(\d{1,20}\.manifest)-unaccepted-[0-9a-f]{32}$")


def _staged_of(metadata: Mapping[str, Any], version: int) -> str | None:
    """The staged manifest name the catalog's snapshot of ``version`` recorded."""
    for snapshot in metadata.get("snapshots") or []:
        if isinstance(snapshot, dict) and snapshot.get("snapshot-id") == version:
            summary = snapshot.get("summary")
            staged = summary.get("lance-staged") if isinstance(summary, dict) else None
            if isinstance(staged, str) and _STAGED.match(staged):
                return staged
    return None


def _finish_lost_rename(location: str, version: int, staged: str) -> None:
    """Give the catalog's ``version`` its final manifest when only the staged one is
    there (the rename after the catalog's commit never happened)."""
    named = _STAGED.match(staged)
    if named is None or _version_of(named.group(1))[0] != version:
        return
    versions = os.path.join(local_path(location) or "", "_versions")
    final = os.path.join(versions, f"{named.group(1)}.manifest")
    if not os.path.exists(final) and os.path.isfile(os.path.join(versions, staged)):
        os.rename(os.path.join(versions, staged), final)


def _bring_back(location: str) -> None:
    """Give set-aside manifests their final names again (the newest copy of each
    version), where no manifest took the name since."""
    path = local_path(location)
    if path is None:
        return
    versions = os.path.join(path, "_versions")
    try:
        entries = os.listdir(versions)
    except OSError:
        return
    newest: dict[str, tuple[float, str]] = {}
    for entry in entries:
        aside = _SET_ASIDE.match(entry)
        if aside is None:
            continue
        stamp = os.stat(os.path.join(versions, entry)).st_mtime
        if aside.group(1) not in newest or stamp > newest[aside.group(1)][0]:
            newest[aside.group(1)] = (stamp, entry)
    for final, (_, entry) in newest.items():
        if not os.path.exists(os.path.join(versions, final)):
            os.rename(os.path.join(versions, entry), os.path.join(versions, final))


def _managed_versions(dataset: Any, location: str, newest: int) -> list[dict[str, Any]]:
    """TableVersion bodies of a managed table's versions up to the catalog's ``newest``."""
    names = _manifest_names(location, newest)
    listed: list[dict[str, Any]] = []
    for entry in dataset.versions():
        number = int(entry["version"])
        if number > newest:
            continue
        manifest = "_versions/" + names.get(number, manifest_name(number, "V2"))
        listed.append(version_entry(location, entry, manifest_path=manifest))
    return listed


# -- pylance's namespace client for our own operations ----------------------------------------


class LoopNamespace(lance_namespace.LanceNamespace):
    """A pylance namespace client that calls an async backend on its own event loop.

    Our data operations run pylance on worker threads; for a managed table they open
    it with this client, so pylance's commits come back to the backend's
    CreateTableVersion (and its reads to ListTableVersions ...) exactly as a user's
    pylance given the sync facade does. ``token`` is the backend's event loop.
    """

    def __init__(self, backend: Any, token: Any) -> None:
        self._backend = backend
        self._token = token

    def namespace_id(self) -> str:
        return str(self._backend.namespace_id())

    def __repr__(self) -> str:
        return f"LoopNamespace({self.namespace_id()})"

    def _call(self, method: str, request: Any) -> Any:
        from .._core.peer import _compat_error, _peer_answer

        coroutine = getattr(self._backend, method)
        try:
            result = anyio.from_thread.run(coroutine, request, token=self._token)
        except errors.LanceNamespaceError as exc:
            raise _compat_error(exc) from None
        return _peer_answer(OPERATIONS_BY_METHOD[method], result)

    def describe_table(self, request: Any) -> Any:
        return self._call("describe_table", request)

    def list_table_versions(self, request: Any) -> Any:
        return self._call("list_table_versions", request)

    def create_table_version(self, request: Any) -> Any:
        return self._call("create_table_version", request)

    def describe_table_version(self, request: Any) -> Any:
        return self._call("describe_table_version", request)


# -- the backend's part -------------------------------------------------------------------------


class ManagedIcebergVersions(StorageTableOperations):
    """The table-version operations of :class:`~._namespace.IcebergNamespace` for
    ``managed_by=impl`` tables; storage-managed tables keep the shared ones."""

    if TYPE_CHECKING:  # provided by IcebergNamespace

        @property
        def _tooling(self) -> bool: ...

        def _table_parts(self, body: Mapping[str, Any]) -> tuple[str, Identifier, str]: ...

        async def _load_lance_table(
            self, warehouse: str, namespace: Identifier, name: str, what: str
        ) -> dict[str, Any]: ...

        _rest: IcebergRestClient

        def _is_managed(self, properties: Mapping[str, Any]) -> bool: ...

    def _managed_client(self) -> LoopNamespace:
        """pylance's client for this backend, bound to the running event loop."""
        return LoopNamespace(self, anyio.lowlevel.current_token())

    async def commit_snapshot(
        self,
        table_id: list[str],
        metadata: Mapping[str, Any],
        version: int,
        *,
        expected: int | None,
        what: str,
        schema: dict[str, Any] | None = None,
        manifest: str | None = None,
        staged: str | None = None,
    ) -> None:
        """UpdateTable: make ``version`` current, if the ``main`` ref is at ``expected``.

        A catalog that moved on answers 409, raised as ConcurrentModification (14).
        """
        warehouse, levels, name = self._table_parts({"id": table_id})
        location = str(metadata.get("location") or "")
        requirements: list[dict[str, Any]] = [
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": expected}
        ]
        if metadata.get("table-uuid"):
            requirements.append({"type": "assert-table-uuid", "uuid": metadata["table-uuid"]})
        await self._rest.update_table(
            warehouse,
            levels,
            name,
            requirements=requirements,
            updates=snapshot_updates(
                version,
                location,
                schema=schema,
                metadata=metadata,
                manifest=manifest,
                staged=staged,
            ),
            what=what,
        )

    async def _create_table_version(self, request: Any) -> Any:
        from ..models import CreateTableVersionResponse

        body: dict[str, Any] = json_data(request)
        warehouse, levels, name = self._table_parts(body)
        table_id = [warehouse, *levels, name]
        what = f"CreateTableVersion {'.'.join(table_id)}"
        if body.get("branch"):
            raise errors.UnsupportedOperationError(f"{what} on a branch")
        version = body.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or not 0 < version < 2**63:
            raise errors.InvalidInputError(f"{what}: version must be an integer >= 1")
        metadata = await self._load_lance_table(warehouse, levels, name, what)
        if not self._is_managed(metadata.get("properties") or {}):
            # managed_by=storage: the version is recorded on storage, as on every catalog
            return await super()._create_table_version(request)
        location = str(metadata.get("location") or "")
        staged, final, final_spelled = _staged_manifest(
            location, body.get("manifest_path"), version, body.get("naming_scheme"), what
        )
        await anyio.to_thread.run_sync(_require_file, staged, what)
        # the catalog first: a manifest under its final name is only ever one it accepted
        await self.commit_snapshot(
            table_id,
            metadata,
            version,
            expected=version - 1 if version > 1 else None,
            what=what,
            manifest=f"_versions/{os.path.basename(final)}",
            staged=os.path.basename(staged),
        )
        # not on the table's worker threads: pylance may hold all of them, waiting on this
        size = await anyio.to_thread.run_sync(_finalize, staged, final)
        if self._tooling:
            await self._follow_schema(table_id, location, version, what)
        answer: dict[str, Any] = {
            "version": version,
            "manifest_path": final_spelled,
            "manifest_size": size,
            "timestamp_millis": int(time.time() * 1000),
        }
        if isinstance(body.get("e_tag"), str):
            answer["e_tag"] = body["e_tag"]
        return CreateTableVersionResponse.from_dict({"version": answer})

    async def _follow_schema(
        self, table_id: list[str], location: str, version: int, what: str
    ) -> None:
        """Tooling mode: the Iceberg schema of the catalog's version, when its columns
        changed. A commit that got in first carries its own, so a race is no error."""
        import lance

        warehouse, levels, name = self._table_parts({"id": table_id})
        metadata = await self._load_lance_table(warehouse, levels, name, what)
        if current_version(metadata) != version:
            return
        dataset = await anyio.to_thread.run_sync(
            lambda: lance.dataset(location, version=version, storage_options=None)
        )
        changes = schema_changes(metadata, arrow_to_iceberg_schema(dataset.schema, 1))
        if not changes:
            return
        requirements = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": version}]
        try:
            await self._rest.update_table(
                warehouse, levels, name, requirements=requirements, updates=changes, what=what
            )
        except errors.ConcurrentModificationError:
            return

    async def _settle_storage(
        self, table_id: list[str], location: str, metadata: Mapping[str, Any]
    ) -> None:
        """Bring a managed table's storage in line with the catalog before it is used.

        The catalog's version whose manifest still has its staged name (the commit's
        answer was lost between UpdateTable and the rename) gets its final name.
        Versions written to storage around the catalog, above its version, are set
        aside (renamed, never deleted): Lance would otherwise count them when it
        commits through the namespace and number its commit past them, a commit the
        catalog could never take. A version is set aside only if the catalog, asked
        after the listing, still has not accepted it, and put back if it accepted it
        while it was being renamed.
        """
        newest = current_version(metadata)
        if newest is None or local_path(location) is None:
            return
        await self.tables.confinement.check(location, f"DescribeTable {'.'.join(table_id)}")
        staged = _staged_of(metadata, newest)
        if staged is not None:
            await anyio.to_thread.run_sync(_finish_lost_rename, location, newest, staged)
        found = await anyio.to_thread.run_sync(_final_manifests_above, location, newest)
        if not found:
            return
        warehouse, levels, name = self._table_parts({"id": table_id})
        what = f"DescribeTable {'.'.join(table_id)}"

        async def accepted() -> int | None:
            return current_version(await self._load_lance_table(warehouse, levels, name, what))

        fresh = await accepted()
        unaccepted = [
            entry
            for entry in found
            if fresh is None or _version_of(entry.split(".", 1)[0])[0] > fresh
        ]
        moved = await anyio.to_thread.run_sync(_set_aside, location, unaccepted)
        if moved:
            await anyio.to_thread.run_sync(_put_back, moved, await accepted())

    async def _adopt_set_aside(self, location: str) -> None:
        """Before versions written around the catalog are adopted on purpose
        (``commit_table_version``): the ones set aside are brought back."""
        await self.tables.confinement.check(location, "committing a table version")
        await anyio.to_thread.run_sync(_bring_back, location)

    async def _commit_created(self, table: StorageTable, dataset: Any) -> None:
        """A managed table's first version, written to storage where it was declared,
        committed to the catalog (which must hold no version yet)."""
        warehouse, levels, name = self._table_parts({"id": table.id})
        what = f"CreateTable {'.'.join(table.id)}"
        metadata = await self._load_lance_table(warehouse, levels, name, what)
        schema = None
        if self._tooling:
            schema = arrow_to_iceberg_schema(dataset.schema, 1)
        await self.commit_snapshot(
            table.id, metadata, int(dataset.version), expected=None, what=what, schema=schema
        )

    async def _list_table_versions(self, request: Any) -> Any:
        from ..models import ListTableVersionsResponse

        body: dict[str, Any] = json_data(request)
        table = await self._storage_table(body, "ListTableVersions", writes=False)
        if table.access.namespace_client is None:
            return await super()._list_table_versions(request)
        versions = await self._versions_up_to_catalog(table)
        page, token = _page_of_versions(versions, body)
        return ListTableVersionsResponse.from_dict({"versions": page, "page_token": token})

    async def _describe_table_version(self, request: Any) -> Any:
        from ..models import DescribeTableVersionResponse

        body: dict[str, Any] = json_data(request)
        table = await self._storage_table(body, "DescribeTableVersion", writes=False)
        if table.access.namespace_client is None:
            return await super()._describe_table_version(request)
        wanted = body.get("version")
        if wanted is None:
            wanted = table.access.read_version
        for entry in await self._versions_up_to_catalog(table):
            if entry["version"] == wanted:
                return DescribeTableVersionResponse.from_dict({"version": entry})
        raise errors.TableVersionNotFoundError(
            f"version {wanted} of table {'.'.join(table.id)} not found in the catalog"
        )

    async def _versions_up_to_catalog(self, table: StorageTable) -> list[dict[str, Any]]:
        import lance

        newest = table.access.read_version
        if newest is None:  # declared: no version committed yet
            return []
        options = table.storage_options

        def listed() -> list[dict[str, Any]]:
            dataset = lance.dataset(table.location, version=newest, storage_options=options)
            return _managed_versions(dataset, table.location, newest)

        # not on the table's worker threads: pylance asks this while it holds one of them
        try:
            return await anyio.to_thread.run_sync(listed)
        except Exception as exc:
            raise translate(exc) from exc


def _page_of_versions(
    versions: list[dict[str, Any]], body: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], str | None]:
    """A page of versions: ``descending`` order, after ``page_token`` (a version)."""
    descending = body.get("descending") is True
    versions = sorted(versions, key=lambda v: int(v["version"]), reverse=descending)
    token = body.get("page_token")
    if token not in (None, ""):
        try:
            after = int(str(token))
        except ValueError:
            raise errors.InvalidInputError(f"unknown page token {token!r}") from None
        versions = [
            v for v in versions if (v["version"] < after if descending else v["version"] > after)
        ]
    limit = body.get("limit")
    if limit is None:
        return versions, None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise errors.InvalidInputError(f"limit must be a positive integer, got {limit!r}")
    if len(versions) <= limit:
        return versions, None
    return versions[:limit], str(versions[limit - 1]["version"])
