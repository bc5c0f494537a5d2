"""The index, tag, version, column and schema operations on storage of the catalog
backends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import errors
from .._core.base import json_data
from .._core.paging import page_of
from .indexes import index_builder
from .requests import (
    dataset_indices,
    distance_type,
    tag_name,
    update_field_metadata,
    version_entry,
)
from .store_versions import committed_on_store
from .table_base import StorageTable, StorageTableBase
from .tables import has_data
from .version_batches import committed_manifests

if TYPE_CHECKING:
    pass


class StorageMetadataOperations(StorageTableBase):
    """Indices, tags, versions, columns and schema metadata on storage."""

    # -- indices --------------------------------------------------------------------------------

    async def _create_table_index(self, request: Any) -> Any:
        from ..models import CreateTableIndexResponse

        await self._build_index(request, "CreateTableIndex")
        return CreateTableIndexResponse.from_dict({})

    async def _create_table_scalar_index(self, request: Any) -> Any:
        from ..models import CreateTableScalarIndexResponse

        await self._build_index(request, "CreateTableScalarIndex")
        return CreateTableScalarIndexResponse.from_dict({})

    async def _build_index(self, request: Any, what: str) -> None:
        body, _, dataset = await self._on_storage(request, what, writes=True)
        build = index_builder(dataset, body, what)
        await self.tables.run(build)

    async def _list_table_indices(self, request: Any) -> Any:
        from ..models import ListTableIndicesResponse

        body = json_data(request)
        _, _, dataset = await self._on_storage(
            body, "ListTableIndices", writes=False, version=body.get("version")
        )
        indices = await self.tables.run(dataset_indices, dataset)
        by_name = {str(index["name"]): index for index in indices}
        page, token = page_of(by_name, body.get("page_token"), body.get("limit"))
        listed = [
            {
                "index_name": name,
                "index_uuid": str(by_name[name].get("uuid", "")),
                "columns": [str(c) for c in by_name[name].get("fields", [])],
                "status": "SUCCEEDED",
                "index_type": str(by_name[name].get("type", "")),
            }
            for name in page
        ]
        return ListTableIndicesResponse.from_dict({"indexes": listed, "page_token": token})

    async def _describe_table_index_stats(self, request: Any) -> Any:
        from ..models import DescribeTableIndexStatsResponse

        body = json_data(request)
        _, _, dataset = await self._on_storage(
            body, "DescribeTableIndexStats", writes=False, version=body.get("version")
        )
        name = body.get("index_name")
        if not isinstance(name, str) or not name:
            raise errors.InvalidInputError("DescribeTableIndexStats needs an index name")
        stats = await self.tables.run(lambda: dataset.stats.index_stats(name))
        answer = {
            "index_type": stats.get("index_type"),
            "num_indexed_rows": stats.get("num_indexed_rows"),
            "num_unindexed_rows": stats.get("num_unindexed_rows"),
            "num_indices": stats.get("num_indices"),
        }
        metric = distance_type(stats)
        if metric is not None:
            answer["distance_type"] = metric
        return DescribeTableIndexStatsResponse.from_dict(
            {k: v for k, v in answer.items() if v is not None}
        )

    async def _drop_table_index(self, request: Any) -> Any:
        from ..models import DropTableIndexResponse

        body, _, dataset = await self._on_storage(request, "DropTableIndex", writes=True)
        name = body.get("index_name")
        if not isinstance(name, str) or not name:
            raise errors.InvalidInputError("DropTableIndex needs an index name")
        await self.tables.run(lambda: dataset.drop_index(name))
        return DropTableIndexResponse.from_dict({})

    # -- tags -----------------------------------------------------------------------------------

    async def _list_table_tags(self, request: Any) -> Any:
        from ..models import ListTableTagsResponse

        body, _, dataset = await self._on_storage(request, "ListTableTags", writes=False)
        tags = await self.tables.run(dataset.tags.list)
        page, token = page_of(tags, body.get("page_token"), body.get("limit"))
        contents = {
            name: {
                "version": int(tags[name]["version"]),
                "manifestSize": int(tags[name].get("manifest_size") or 0),
                **({"branch": tags[name]["branch"]} if tags[name].get("branch") else {}),
            }
            for name in page
        }
        return ListTableTagsResponse.from_dict({"tags": contents, "page_token": token})

    async def _get_table_tag_version(self, request: Any) -> Any:
        from ..models import GetTableTagVersionResponse

        body, _, dataset = await self._on_storage(request, "GetTableTagVersion", writes=False)
        tag = tag_name(body, "GetTableTagVersion")
        version = await self.tables.run(lambda: dataset.tags.get_version(tag))
        return GetTableTagVersionResponse.from_dict({"version": int(version)})

    async def _create_table_tag(self, request: Any) -> Any:
        from ..models import CreateTableTagResponse

        await self._tag_change(request, "CreateTableTag", "create")
        return CreateTableTagResponse.from_dict({})

    async def _update_table_tag(self, request: Any) -> Any:
        from ..models import UpdateTableTagResponse

        await self._tag_change(request, "UpdateTableTag", "update")
        return UpdateTableTagResponse.from_dict({})

    async def _delete_table_tag(self, request: Any) -> Any:
        from ..models import DeleteTableTagResponse

        await self._tag_change(request, "DeleteTableTag", "delete")
        return DeleteTableTagResponse.from_dict({})

    async def _tag_change(self, request: Any, what: str, action: str) -> None:
        # tags live beside the table's versions, not in them: the catalog's version
        # of an implementation-managed table is not advanced by them
        body, _, dataset = await self._on_storage(request, what, writes=False)
        tag = tag_name(body, what)
        if action == "delete":
            await self.tables.run(lambda: dataset.tags.delete(tag))
            return
        version = body.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise errors.InvalidInputError(f"{what} needs a version >= 0, got {version!r}")
        await self.tables.run(lambda: getattr(dataset.tags, action)(tag, version))

    # -- versions -------------------------------------------------------------------------------

    async def _list_table_versions(self, request: Any) -> Any:
        from ..models import ListTableVersionsResponse

        body = json_data(request)
        table = await self._storage_table(body, "ListTableVersions", writes=False)
        try:
            dataset = await self._open(table)
        except errors.InvalidInputError:
            if await self.tables.run(has_data, table.location, table.storage_options):
                raise
            dataset = None  # declared, no version yet: a managed-versioning writer asks
        versions = [] if dataset is None else await self._version_entries(table, dataset)
        newest = table.access.read_version
        if newest is not None:  # the catalog's version is the newest its readers see
            versions = [v for v in versions if v["version"] <= newest]
        versions.sort(key=lambda v: int(v["version"]), reverse=body.get("descending") is True)
        limit, token = body.get("limit"), body.get("page_token")
        start = 0
        if token is not None:
            numbers = [str(v["version"]) for v in versions]
            if str(token) not in numbers:
                raise errors.InvalidInputError(f"unknown page token {token!r}")
            start = numbers.index(str(token)) + 1
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise errors.InvalidInputError(f"limit must be a positive integer, got {limit!r}")
        page = versions[start : start + limit] if limit else versions[start:]
        more = limit is not None and start + limit < len(versions)
        return ListTableVersionsResponse.from_dict(
            {"versions": page, "page_token": str(page[-1]["version"]) if more and page else None}
        )

    async def _describe_table_version(self, request: Any) -> Any:
        from ..models import DescribeTableVersionResponse

        body, table, dataset = await self._on_storage(request, "DescribeTableVersion", writes=False)
        wanted = body.get("version")
        if wanted is None:
            wanted = int(dataset.version)
        for entry in await self._version_entries(table, dataset):
            if entry["version"] == wanted:
                return DescribeTableVersionResponse.from_dict({"version": entry})
        raise errors.TableVersionNotFoundError(
            f"version {wanted} of table {'.'.join(table.id)} not found"
        )

    async def _version_entries(self, table: StorageTable, dataset: Any) -> list[dict[str, Any]]:
        """TableVersion bodies of the dataset's versions, each with the path of its
        manifest as named on storage (V1 or V2; local or an object store) relative to the
        table, as the directory backend answers it (pylance, reading a managed-versioning
        table, opens that path; the server's layout is no client's business)."""

        location = table.data_location
        below = "" if table.branch is None else f"tree/{table.branch}/"

        def listed() -> list[dict[str, Any]]:
            names = committed_manifests(location) or committed_on_store(
                location, table.storage_options
            )
            return [
                version_entry(
                    location,
                    entry,
                    manifest_path=(
                        f"{below}_versions/{names[int(entry['version'])]}"
                        if int(entry["version"]) in names
                        else None
                    ),
                )
                for entry in dataset.versions()
            ]

        entries: list[dict[str, Any]] = await self.tables.run(listed)
        return entries

    async def _restore_table(self, request: Any) -> Any:
        from ..models import RestoreTableResponse

        body, table, _ = await self._on_storage(request, "RestoreTable", writes=True)
        version = body.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise errors.InvalidInputError(f"RestoreTable needs a version >= 0, got {version!r}")
        old = await self._open(table, version)
        await self.tables.run(old.restore)
        await self._main_schema_changed(table, await self._open(table))
        return RestoreTableResponse.from_dict({})

    # -- columns and schema ---------------------------------------------------------------------

    async def _alter_table_add_columns(self, request: Any) -> Any:
        from ..models import AlterTableAddColumnsResponse

        body, table, dataset = await self._on_storage(request, "AlterTableAddColumns", writes=True)
        columns: dict[str, str] = {}
        for entry in body.get("new_columns") or []:
            if entry.get("virtual_column") or entry.get("computed"):
                raise errors.UnsupportedOperationError(
                    "AlterTableAddColumns: only columns computed from a SQL expression"
                )
            if not isinstance(entry.get("expression"), str):
                raise errors.InvalidInputError(
                    f"new column {entry.get('name')!r} has no expression"
                )
            columns[str(entry["name"])] = entry["expression"]
        if not columns:
            raise errors.InvalidInputError("AlterTableAddColumns needs new columns")
        await self.tables.run(lambda: dataset.add_columns(columns))
        return await self._columns_changed(table, AlterTableAddColumnsResponse)

    async def _alter_table_alter_columns(self, request: Any) -> Any:
        from ..models import AlterTableAlterColumnsResponse

        body, table, dataset = await self._on_storage(
            request, "AlterTableAlterColumns", writes=True
        )
        alterations: list[dict[str, Any]] = []
        for entry in body.get("alterations") or []:
            if entry.get("data_type") or entry.get("virtual_column"):
                raise errors.UnsupportedOperationError(
                    "AlterTableAlterColumns: renames and nullability only"
                )
            alteration: dict[str, Any] = {"path": entry.get("path")}
            if entry.get("rename"):
                alteration["name"] = entry["rename"]
            if entry.get("nullable") is not None:
                alteration["nullable"] = bool(entry["nullable"])
            alterations.append(alteration)
        if not alterations:
            raise errors.InvalidInputError("AlterTableAlterColumns needs alterations")
        await self.tables.run(lambda: dataset.alter_columns(*alterations))
        return await self._columns_changed(table, AlterTableAlterColumnsResponse)

    async def _alter_table_drop_columns(self, request: Any) -> Any:
        from ..models import AlterTableDropColumnsResponse

        body, table, dataset = await self._on_storage(request, "AlterTableDropColumns", writes=True)
        columns = body.get("columns") or []
        if not columns or not all(isinstance(c, str) for c in columns):
            raise errors.InvalidInputError("AlterTableDropColumns needs column names")
        await self.tables.run(lambda: dataset.drop_columns(list(columns)))
        return await self._columns_changed(table, AlterTableDropColumnsResponse)

    async def _columns_changed(self, table: StorageTable, response: Any) -> Any:
        dataset = await self._open(table)
        await self._main_schema_changed(table, dataset)
        return response.from_dict({"version": int(dataset.version)})

    async def _update_field_metadata(self, request: Any) -> Any:
        from ..models import UpdateFieldMetadataResponse

        body, _, dataset = await self._on_storage(request, "UpdateFieldMetadata", writes=True)
        answer = await self.tables.run(update_field_metadata, dataset, body.get("updates") or [])
        return UpdateFieldMetadataResponse.from_dict(answer)

    async def _update_table_schema_metadata(self, request: Any) -> Any:
        from ..models import UpdateTableSchemaMetadataResponse

        body, table, dataset = await self._on_storage(
            request, "UpdateTableSchemaMetadata", writes=True
        )
        metadata = body.get("metadata")
        if not isinstance(metadata, dict):
            raise errors.InvalidInputError("UpdateTableSchemaMetadata needs a metadata object")
        await self.tables.run(lambda: dataset.update_schema_metadata(metadata))
        schema = (await self._open(table)).schema
        current = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
        return UpdateTableSchemaMetadataResponse.from_dict({"metadata": current})
