"""The table operations of the directory backend.

A root table is the table directory ``<root>/<name>.lance``; a child
namespace's table is a manifest row. Above pylance: RegisterTable of an absolute
location (relative when inside the root), DescribeTable ``load_detailed_metadata``
with stats, TableExists of a version, RenameTable (including a move to another
namespace), DropTable deleting data and DeregisterTable never touching it, and
ListTableVersions' pagination with manifest paths relative to the table.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from .. import errors
from .._core.identifiers import Identifier, validate_name
from .._core.modes import REGISTER_MODES, parse_mode
from .._core.paging import check_limit
from .._core.unique_names import refuse_namespace_named_like
from .._storage.places import as_uri, canonical, local_path
from .._storage.tables import has_versions
from ..models import (
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropTableRequest,
    DropTableResponse,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    RestoreTableRequest,
    RestoreTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from ._branches import refuse_branch
from ._core import DirectoryCore, drop_nones, str_map
from ._manifest import manifest_id, new_table_location
from ._placement import (
    PLACEHOLDER,
    absolute,
    check_relative,
    is_absolute_location,
    relative_to_root,
)
from ._versions import page_of_versions, relative_manifest, versions_of

__all__ = ["TableOperations"]


class TableOperations(DirectoryCore):
    """DeclareTable, RegisterTable, DescribeTable, TableExists, DeregisterTable,
    DropTable, RestoreTable, RenameTable and ListTableVersions."""

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        declare: dict[str, Any] = {"id": list(table)}
        if isinstance(body.get("location"), str) and body["location"]:
            declare["location"] = body["location"]
            await self.tables.confinement.check_new(
                absolute(self.root, body["location"]), "DeclareTable location"
            )
        properties = str_map(body.get("properties"))
        if properties:
            declare["properties"] = properties
        async with self._guard.filling(table[:-1]):
            result = await self._declare_from_copy(table, declare)
            if result is None:  # the specification's checks, asked of pylance
                await self._require_namespace(table[:-1])
                await refuse_namespace_named_like(self, table)
                result = await self._create_once("declare_table", declare, table)
        result["location"] = canonical(str(result.get("location", "")))
        storage = self.tables.storage_options
        if storage and not result.get("storage_options"):
            result["storage_options"] = storage
        return DeclareTableResponse.from_dict(drop_nones(result))

    async def _declare_from_copy(
        self, table: Identifier, declare: dict[str, Any]
    ) -> dict[str, Any] | None:
        """DeclareTable in one worker-thread step when the manifest copy is current: the
        specification's checks (the parent namespace exists, no namespace has the
        table's name) answered from it, pylance's declare, and the copy carried over the
        commit (:meth:`ManifestSnapshots.table_added`). None: the copy cannot decide (no
        copy, or a check fails: the slow path reports it in its words); nothing was
        declared then."""
        snapshots = self._snapshots
        if snapshots is None or len(table) < 2:
            return None
        inner = await self._rust()
        parent, object_id = manifest_id(table[:-1]), manifest_id(table)
        plain = len(declare) == 1  # no location, no properties: a plain manifest row

        def declare_if_checked() -> dict[str, Any] | None:
            # a copy even of a manifest changing all the time: pylance's declare costs a
            # rewrite of every row anyway, and ours is carried over our commit
            snapshot = snapshots.current(force=True)
            if snapshot is None or parent not in snapshot.namespaces:
                return None
            if object_id in snapshot.namespaces:
                return None
            if plain:  # the row added here, not by pylance's rewrite of the manifest
                stored = new_table_location(object_id)
                if self._append_own_row(table, stored, _reserve):
                    return {"location": snapshots.prefix + stored}
            result = dict(inner.declare_table(declare) or {})
            location = str(result.get("location", "")) if plain else None
            snapshots.table_added(snapshot, object_id, location)
            return result

        try:
            with self._storage_context(), self._own_not_found_words(declare["id"], "declare"):
                return await self._run(declare_if_checked)
        except errors.ConcurrentModificationError:
            await self._lost_create_race("declare_table", table)

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        properties = str_map(body.get("properties"))
        if len(table) == 1:
            raise errors.InvalidInputError(
                "the directory namespace keeps root tables at <root>/<name>.lance; "
                "register the table into a child namespace"
            )
        async with self._guard.filling(table[:-1]):
            await self._require_namespace(table[:-1])
            await refuse_namespace_named_like(self, table)
            if mode == "Create":  # a taken name is TableAlreadyExists, whatever the location
                await self._ensure_not_registered(table)
            stored = relative_to_root(self.root, location)
            if not is_absolute_location(stored):
                check_relative(stored)
            await self.tables.check_placement(
                absolute(self.root, stored),
                require_table=True,
                claims=self._claims(table),
                what="RegisterTable location",
            )
            if mode == "Overwrite":
                with contextlib.suppress(errors.TableNotFoundError):
                    await self._deregister(table)
            register: dict[str, Any] = {"id": list(table), "location": stored}
            if properties:
                register["properties"] = properties
            if is_absolute_location(stored):
                await self._register_absolute(table, register)
            elif (
                mode == "Overwrite"
                or properties
                or not await self._run(lambda: self._append_own_row(table, stored))
            ):
                await self._create_once("register_table", register, table)
        return RegisterTableResponse.from_dict(
            drop_nones({"location": canonical(location), "properties": properties})
        )

    async def _register_absolute(self, table: Identifier, register: dict[str, Any]) -> None:
        """pylance only registers relative locations: register, then set the real one."""
        if not self.config.manifest_enabled:
            raise errors.InvalidInputError(
                "a location outside the root needs the manifest (manifest_enabled=true)"
            )
        location = register["location"]
        object_id = manifest_id(table)
        async with self._manifest_lock:
            await self._call("register_table", {**register, "location": PLACEHOLDER})
            try:
                await self._run(self.manifest.set_location, object_id, location)
            except BaseException:
                await self._call("deregister_table", {"id": list(table)})
                raise

    async def _ensure_not_registered(self, table: Identifier) -> None:
        snapshot = await self._snapshot()
        if snapshot is not None and manifest_id(table) not in snapshot.table_ids:
            return
        try:
            await self._call("table_exists", {"id": list(table)})
        except errors.TableNotFoundError:
            return
        raise errors.TableAlreadyExistsError(f"table {'.'.join(table)!r} already exists")

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        refuse_branch(body, "DescribeTable")
        version = body.get("version")
        detailed = body.get("load_detailed_metadata") is True
        if detailed or body.get("check_declared") is True or version is not None:
            await self._confine_table(table, "DescribeTable of the table's data")
        if detailed or body.get("check_declared") is True:
            result = await self._table_call("describe_table", table, check_declared=True)
        else:
            result = await self._plain_describe(table)
        reported = str(result.get("location", ""))
        location = await self._resolve(reported, table)
        if location != reported and "is_only_declared" in result:
            # pylance checked the wrong path for an absolute location
            result["is_only_declared"] = not await self._run(has_versions, location)
        location = canonical(location)
        result["location"] = location
        result.pop("table_uri", None)
        if body.get("with_table_uri") is True:
            result["table_uri"] = as_uri(location)
        if detailed or isinstance(version, int):
            # opened here, not by pylance, so absolute locations work the same
            await self.tables.describe(result, location, version, detailed=detailed)
        storage = self.tables.storage_options
        if storage and not result.get("storage_options"):
            result["storage_options"] = storage
        return DescribeTableResponse.from_dict(drop_nones(result))

    async def _plain_describe(self, table: Identifier) -> dict[str, Any]:
        """pylance's DescribeTable answer (no options), from the manifest copy when it
        holds the table and pylance's form of the answer has been seen once."""
        snapshots = self._snapshots
        snapshot = await self._snapshot() if len(table) > 1 else None
        stored = None if snapshot is None else snapshot.tables.get(manifest_id(table))
        if snapshots is None or stored is None:
            return await self._table_call("describe_table", table)
        if snapshots.confirmed:
            return snapshots.described(table, stored)
        result = await self._table_call("describe_table", table)
        snapshots.confirm(table, stored, result)
        return result

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        snapshot = await self._snapshot() if len(table) > 1 else None
        if snapshot is None or manifest_id(table) not in snapshot.table_ids:
            await self._table_call("table_exists", table)
        version = body.get("version")
        if isinstance(version, int):
            await self._confine_table(table, "TableExists of a version")
            location = await self._describe_location(table)
            if await self.tables.open(location, version) is None:
                raise errors.TableVersionNotFoundError(
                    f"table {'.'.join(table)!r} has no version {version}"
                )
        return TableExistsResponse.from_dict({})

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        table = self._table_id(request.to_dict().get("id"))
        if len(table) == 1:
            raise errors.InvalidInputError(
                "a root table of the directory namespace is its <root>/<name>.lance "
                "directory: drop it, or keep it; it cannot be deregistered"
            )
        described = await self._describe_location(table)
        result = await self._deregister(table)
        result["location"] = described
        result["id"] = list(table)
        return DeregisterTableResponse.from_dict(drop_nones(result))

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        table = self._table_id(request.to_dict().get("id"))
        return DropTableResponse.from_dict(drop_nones(await self._drop_table_at(table)))

    async def _restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        refuse_branch(body, "RestoreTable")
        version = body.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise errors.InvalidInputError("RestoreTable needs a version >= 0")
        location = await self._describe_location(table)
        dataset = await self.tables.open(location, version)
        if dataset is None:
            raise errors.TableNotFoundError(f"table {'.'.join(table)!r} has no data to restore")
        await self._run(dataset.restore)
        return RestoreTableResponse.from_dict({})

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        new_name = validate_name(
            body.get("new_table_name"),  # type: ignore[arg-type]
            delimiter=self.delimiter,
            storage_backed=True,
            what="new_table_name",
        )
        target_namespace = (
            self._namespace_id(body["new_namespace_id"])
            if body.get("new_namespace_id") is not None
            else table[:-1]
        )
        target = (*target_namespace, new_name)
        if target == table:
            raise errors.InvalidInputError("RenameTable target equals the source table")
        async with self._guard.filling(target_namespace):
            await self._require_namespace(target_namespace)
            location = await self._describe_location(table)
            await self._ensure_not_registered(target)
            await refuse_namespace_named_like(self, target)
            await self._rename_in_manifest(table, target, location)
        return RenameTableResponse.from_dict({})

    async def _rename_in_manifest(
        self, table: Identifier, target: Identifier, location: str
    ) -> None:
        if len(table) == 1 or len(target) == 1:
            if len(table) != len(target):
                raise errors.InvalidInputError(
                    "root tables live at <root>/<name>.lance: a table cannot move "
                    "between the root and a child namespace"
                )
            await self._rename_root_table(table[0], target[0], location)
            return
        source_id = manifest_id(table)
        async with self._manifest_lock:
            row = await self._run(self.manifest.row, source_id)
            if row is None:
                raise errors.TableNotFoundError(f"table {'.'.join(table)!r} not found")
            new_row = dict(row)
            new_row["object_id"] = manifest_id(target)
            await self._run(self.manifest.insert, new_row)
            try:
                await self._run(self.manifest.delete, source_id)
            except BaseException:
                await self._run(self.manifest.delete, new_row["object_id"])
                raise

    async def _rename_root_table(self, source: str, target: str, location: str) -> None:
        """Root tables are found by directory name, so the directory is renamed."""
        source_path, root_path = local_path(location), local_path(self.root)
        if source_path is None or root_path is None:
            raise errors.UnsupportedOperationError(
                "renaming a root table needs a local filesystem root"
            )
        destination = os.path.join(root_path, f"{target}.lance")

        def move() -> None:
            if os.path.exists(destination):
                raise errors.TableAlreadyExistsError(f"table {target!r} already exists")
            os.rename(source_path, destination)
            row = self.manifest.row(source)
            if row is not None:
                self.manifest.insert({**row, "object_id": target, "location": f"{target}.lance"})
                self.manifest.delete(source)

        async with self._manifest_lock:
            await self._run(move)

    async def _list_table_versions(
        self, request: ListTableVersionsRequest
    ) -> ListTableVersionsResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        refuse_branch(body, "ListTableVersions")
        limit = check_limit(body.get("limit"))
        location = await self._describe_location(table)
        dataset = await self.tables.open(location)
        versions: list[dict[str, Any]] = []
        if dataset is not None:
            listed = await self._call("list_table_versions", {"id": list(table)})
            versions = [relative_manifest(dict(v), location) for v in listed.get("versions") or []]
            if not versions:
                versions = await self._run(versions_of, dataset)
        page, token = page_of_versions(
            versions, body.get("page_token"), limit, descending=body.get("descending") is True
        )
        return ListTableVersionsResponse.from_dict(
            {"versions": [drop_nones(v) for v in page], "page_token": token}
        )


def _reserve(directory: str) -> None:
    """A declared table's directory, as pylance's DeclareTable leaves it."""
    os.mkdir(directory)
    with open(os.path.join(directory, ".lance-reserved"), "wb"):
        pass
