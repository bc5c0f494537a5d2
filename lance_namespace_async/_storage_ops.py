"""Table operations on storage for the catalog backends (iceberg, unity, glue, hive).

A catalog only knows where a Lance table lives. Every data, index, tag, version
and schema operation of a storage-managed table is therefore the same on every
catalog, and is written once here: the table is resolved through the backend's
own DescribeTable (its location and storage options, so endpoints and
credentials come from the catalog), and the operation runs on the dataset with
pylance, on the backend's bounded worker threads (requests become pylance arguments
in :mod:`._storage_requests`), with pylance's failures
translated by :func:`~._lance_tables.translate` (the translation the directory
backend uses too).

A backend mixes :class:`StorageTableOperations` in and adds only what its
catalog must see:

* :meth:`~StorageTableOperations._creation_location`: where CreateTable writes a
  new table (the backend's default layout);
* :meth:`~StorageTableOperations._storage_access`: whether the catalog lets
  operations write storage directly, which version readers see, and whether
  pylance must commit through the namespace (Iceberg's ``managed_by=impl``
  tables: the catalog's version, and every commit through its UpdateTable);
* :meth:`~StorageTableOperations._schema_changed`: called after an operation
  changed the table's columns, for catalogs that store them;
* :meth:`~StorageTableOperations._describe_for_storage`: the DescribeTable an
  operation resolves the table with (Unity asks it for credentials that fit the
  operation, READ or READ_WRITE, when it vends: see ``_vended_credentials``).

CreateTable writes the rows first and then registers the table through the
backend's own RegisterTable; a failure of either step leaves neither behind. It
writes only where it could undo the write: an empty location that the shared
deletion rules of :class:`~._lance_tables.LanceTables` allow deleting.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from . import errors
from ._base import AsyncLanceNamespace, json_data
from ._lance_tables import LanceTables, has_data, has_versions, local_path
from ._modes import CREATE_MODES, parse_mode
from ._paging import page_of
from ._storage_requests import (
    dataset_indices,
    distance_type,
    fragment_summary,
    merge_insert,
    scan_arguments,
    tag_name,
    update_field_metadata,
    version_entry,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from ._arrow_data import ArrowData

__all__ = ["StorageAccess", "StorageTable", "StorageTableOperations"]

logger = logging.getLogger("lance_namespace_async.tables")


#: index types built by ``create_scalar_index``; every other type is a vector index
_SCALAR_INDEX_TYPES = frozenset(
    {"BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "FTS", "NGRAM", "ZONEMAP", "BLOOMFILTER"}
)
#: CreateTableIndex fields handed to pylance's vector index builder, by its names
_VECTOR_INDEX_ARGUMENTS = {
    "num_partitions": "num_partitions",
    "num_sub_vectors": "num_sub_vectors",
    "num_bits": "num_bits",
    "sample_rate": "sample_rate",
    "max_iterations": "max_iterations",
    "target_partition_size": "target_partition_size",
    "m": "m",
    "ef_construction": "ef_construction",
}
#: CreateTableIndex fields handed to pylance's full-text index builder
_TEXT_INDEX_ARGUMENTS = (
    "with_position",
    "base_tokenizer",
    "language",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "ascii_folding",
)
#: a fragment with fewer rows than this counts as small in GetTableStats
_SMALL_FRAGMENT_ROWS = 100_000


@attrs.frozen
class StorageAccess:
    """What a catalog allows on storage for one table.

    ``write_refusal``: why operations must not write the table's storage directly
    (None: they may); ``read_version``: the version readers see when they name
    none (None: storage's newest), and the newest they may name;
    ``namespace_client``: a pylance namespace client through which every commit
    and version lookup of the table goes (managed versioning), or None.
    """

    write_refusal: str | None = None
    read_version: int | None = None
    namespace_client: Any = None


@attrs.frozen
class StorageTable:
    """A table resolved through the catalog: where it is and how to reach it."""

    id: list[str]
    location: str
    storage_options: dict[str, str] | None
    access: StorageAccess


class StorageTableOperations(AsyncLanceNamespace):
    """The table operations of a catalog backend, run on storage through pylance."""

    tables: LanceTables
    stores_tables = True
    #: entries the catalog itself keeps in a table's directory (Iceberg's metadata)
    _catalog_files: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A backend's own DescribeTable refuses a branch: a catalog's tables have none
        (CreateTableBranch is not theirs), and its answer would describe main."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("_describe_table")
        if own is not None:

            async def describe_table(self: Any, request: Any) -> Any:
                if json_data(request).get("branch") not in (None, "", "main"):
                    raise errors.UnsupportedOperationError("DescribeTable on a branch")
                return await own(self, request)

            describe_table.__doc__ = own.__doc__
            cls._describe_table = describe_table  # type: ignore[method-assign]

    # -- what a backend provides -------------------------------------------------------------

    async def _creation_location(self, table: list[str]) -> str:
        """Where CreateTable writes the new table ``table`` (the backend's default)."""
        raise NotImplementedError

    def _storage_access(self, described: Any) -> StorageAccess:
        """What the catalog allows on storage for the table ``described``
        (a DescribeTableResponse); by default everything, at storage's newest version."""
        return StorageAccess()

    async def _schema_changed(self, table: StorageTable, dataset: Any) -> None:
        """Called after an operation changed the columns of ``table`` (now ``dataset``);
        catalogs that store columns bring them up to date here."""

    async def _describe_for_storage(self, table: list[str], *, writes: bool) -> Any:
        """The DescribeTable answer an operation on ``table`` works from; backends whose
        catalog vends credentials per operation (Unity: READ or READ_WRITE) ask for the
        ones ``writes`` needs."""
        from .models import DescribeTableRequest

        return await self._describe_table(DescribeTableRequest.from_dict({"id": table}))

    async def _commit_created(self, table: StorageTable, dataset: Any) -> None:
        """Called after the first version of a declared table whose commits go through
        the namespace (``access.namespace_client``) was written to storage: the
        catalog takes it here. Only backends that hand out such a client need it."""
        raise NotImplementedError

    # -- resolving a table ----------------------------------------------------------------------

    async def _storage_table(
        self, body: Mapping[str, Any], what: str, *, writes: bool
    ) -> StorageTable:
        if body.get("branch"):
            raise errors.UnsupportedOperationError(f"{what} on a branch")
        table = body.get("id")
        if not isinstance(table, list) or not table:
            raise errors.InvalidInputError(f"{what} needs a table id")
        described = await self._describe_for_storage(list(table), writes=writes)
        location = described.to_dict().get("location")
        if not isinstance(location, str) or not location:
            raise errors.InvalidTableStateError(f"{what}: the catalog holds no location")
        await self.tables.confinement.check(location, what)
        options = described.to_dict().get("storage_options")
        access = self._storage_access(described)
        if writes and access.write_refusal is not None:
            raise errors.UnsupportedOperationError(f"{what}: {access.write_refusal}")
        storage_options = {str(k): str(v) for k, v in (options or {}).items()} or None
        return StorageTable(list(table), location, storage_options, access)

    async def _open(self, table: StorageTable, version: Any = None) -> Any:
        """The table's dataset (at ``version``, else the version its readers see)."""
        import lance

        newest = table.access.read_version
        if version is None:
            version = newest
        elif isinstance(version, bool) or not isinstance(version, int) or not 0 <= version < 2**64:
            raise errors.InvalidInputError(f"version must be an integer >= 0, got {version!r}")
        client = table.access.namespace_client
        if client is not None and (newest is None or version > newest):
            # a version the catalog did not accept (yet) is not the table's
            raise errors.TableVersionNotFoundError(
                f"version {version} of table {'.'.join(table.id)} not found in the catalog"
            )
        location, options = table.location, table.storage_options

        def open_it() -> Any:
            try:
                if client is not None:  # commits and version lookups through the namespace
                    return lance.LanceDataset(
                        location,
                        version=version,
                        storage_options=options,
                        namespace_client=client,
                        table_id=list(table.id),
                        namespace_client_managed_versioning=True,
                    )
                return lance.dataset(location, version=version, storage_options=options)
            except ValueError as exc:
                text = str(exc)
                if "was not found" not in text and "Not found" not in text:
                    raise
                if version is not None and has_versions(location):
                    raise errors.TableVersionNotFoundError(
                        f"version {version} of table {'.'.join(table.id)} not found"
                    ) from None
                raise errors.InvalidInputError(
                    f"no Lance table at {location!r}, where the catalog places {'.'.join(table.id)}"
                ) from None

        return await self.tables.run(open_it)

    async def _on_storage(
        self, request: Any, what: str, *, writes: bool, version: Any = None
    ) -> tuple[dict[str, Any], StorageTable, Any]:
        body: dict[str, Any] = json_data(request)
        table = await self._storage_table(body, what, writes=writes)
        return body, table, await self._open(table, version)

    # -- rows -----------------------------------------------------------------------------------

    async def _create_table(self, request: Any, data: ArrowData) -> Any:
        """CreateTable: write the rows, then register the table in the catalog.

        The rows are read and checked before anything is written; the registration
        is the backend's own RegisterTable. When registering fails, the data this call
        wrote is deleted (it wrote only into an empty location), so neither is left.
        """
        import lance

        from .models import CreateTableResponse, DescribeTableRequest, RegisterTableRequest

        body: dict[str, Any] = json_data(request)
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        self.tables.refuse_request_options(body.get("storage_options"))
        table_id = body.get("id")
        if not isinstance(table_id, list) or not table_id:
            raise errors.InvalidInputError("CreateTable needs a table id")
        what = f"CreateTable {'.'.join(map(str, table_id))}"
        rows = await self.tables.run(data.read_all)
        try:
            described = await self._describe_table(DescribeTableRequest.from_dict({"id": table_id}))
        except errors.TableNotFoundError:
            described = None
        if described is not None:
            table = await self._storage_table({"id": table_id}, what, writes=mode != "ExistOk")
            if await self._only_declared(table):  # the declaration reserved it for these rows
                dataset = await self._write(table, rows, "create")
                await self._schema_changed(table, dataset)
                return CreateTableResponse.from_dict(
                    {"location": table.location, "version": int(dataset.version)}
                )
            if mode == "Create":
                raise errors.TableAlreadyExistsError(f"{what}: the table already exists")
            if mode == "ExistOk":
                dataset = await self._open(table)
                return CreateTableResponse.from_dict(
                    {"location": table.location, "version": int(dataset.version)}
                )
            dataset = await self._write(table, rows, "overwrite")
            await self._schema_changed(table, dataset)
            return CreateTableResponse.from_dict(
                {"location": table.location, "version": int(dataset.version)}
            )
        properties = body.get("properties") or {}
        location = await self._creation_location(table_id)
        await self.tables.confinement.check(location, what)
        options = self.tables.options_for(dict(body.get("storage_options") or {})) or None
        if await self.tables.run(has_data, location, options):
            raise errors.InvalidInputError(
                f"{what}: location {location!r} already holds a Lance table"
            )
        if await self.tables.run(_holds_files, location, frozenset(), options):
            raise errors.InvalidInputError(f"{what}: location {location!r} is not empty")
        refusal = await self.tables.deletion_refused(location, default_location=location)
        if refusal is not None:  # what could not be undone is not written
            raise errors.InvalidInputError(f"{what}: location {location!r} is refused: {refusal}")
        try:
            dataset = await self.tables.run(
                lambda: lance.write_dataset(rows, location, mode="create", storage_options=options)
            )
        except BaseException:
            await self._remove_written(location, options, what)
            raise
        try:
            await self._register_table(
                RegisterTableRequest.from_dict(
                    {"id": table_id, "location": location, "mode": "Create", **_props(properties)}
                )
            )
        except BaseException:
            await self._remove_written(location, options, what)
            raise
        return CreateTableResponse.from_dict(
            {
                "location": await self._registered_location(table_id, location),
                "version": int(dataset.version),
                **_props(properties),
            }
        )

    async def _registered_location(self, table_id: list[str], written: str) -> str:
        """The location as the catalog now reports it (Unity stores ``/p`` as ``file:///p``),
        so CreateTable answers what DescribeTable will; ``written`` if it cannot say."""
        from .models import DescribeTableRequest

        try:
            described = await self._describe_table(DescribeTableRequest.from_dict({"id": table_id}))
        except errors.LanceNamespaceError:
            return written
        location = described.to_dict().get("location")
        return location if isinstance(location, str) and location else written

    async def _only_declared(self, table: StorageTable) -> bool:
        """Whether ``table`` is only declared: no Lance table at its location, and no
        files there but the catalog's own (:attr:`_catalog_files`)."""
        if await self.tables.run(has_data, table.location, table.storage_options):
            return False
        return not await self.tables.run(
            _holds_files, table.location, self._catalog_files, table.storage_options
        )

    async def _write(self, table: StorageTable, rows: pa.Table, mode: str) -> Any:
        """Write ``rows`` (``mode``: create, append, overwrite); a table whose commits go
        through the namespace appends and overwrites as pylance's users do, through
        it, and has its first version taken by the catalog."""
        import lance

        client = table.access.namespace_client
        if client is not None and mode != "create":
            return await self.tables.run(
                lambda: lance.write_dataset(
                    rows,
                    namespace_client=client,
                    table_id=list(table.id),
                    mode=mode,
                    storage_options=table.storage_options,
                )
            )
        dataset = await self.tables.run(
            lambda: lance.write_dataset(
                rows, table.location, mode=mode, storage_options=table.storage_options
            )
        )
        if client is not None:
            await self._commit_created(table, dataset)
        return dataset

    async def _remove_written(
        self, location: str, options: dict[str, str] | None, what: str
    ) -> None:
        """Delete what CreateTable wrote at ``location`` (empty before it started)."""
        with anyio_shielded():
            try:
                await self.tables.delete(location, options)
            except errors.LanceNamespaceError as exc:
                logger.warning("%s: could not remove the data it wrote: %s", what, exc)

    async def _insert_into_table(self, request: Any, data: ArrowData) -> Any:

        from .models import InsertIntoTableResponse

        body: dict[str, Any] = json_data(request)
        mode = str(body.get("mode") or "append").lower()
        if mode not in ("append", "overwrite"):
            raise errors.InvalidInputError(
                f"InsertIntoTable mode must be append or overwrite, got {mode!r}"
            )
        table = await self._storage_table(body, "InsertIntoTable", writes=True)
        declared = await self._only_declared(table)
        if not declared:
            await self._open(table)  # a table that is not Lance is refused before writing
        rows = await self.tables.run(data.read_all)
        dataset = await self._write(table, rows, "create" if declared else mode)
        if mode == "overwrite" or declared:
            await self._schema_changed(table, dataset)
        return InsertIntoTableResponse.from_dict(
            {"num_inserted_rows": rows.num_rows, "version": int(dataset.version)}
        )

    async def _merge_insert_into_table(self, request: Any, data: ArrowData) -> Any:
        from .models import MergeInsertIntoTableResponse

        body, _, dataset = await self._on_storage(request, "MergeInsertIntoTable", writes=True)
        rows = await self.tables.run(data.read_all)
        answer = await self.tables.run(merge_insert, dataset, body, rows)
        return MergeInsertIntoTableResponse.from_dict(answer)

    async def _update_table(self, request: Any) -> Any:
        from .models import UpdateTableResponse

        body, _, dataset = await self._on_storage(request, "UpdateTable", writes=True)
        updates = body.get("updates") or []
        if not all(isinstance(u, list) and len(u) == 2 for u in updates) or not updates:
            raise errors.InvalidInputError("UpdateTable updates are [column, expression] pairs")

        def update() -> dict[str, Any]:
            result = dataset.update(
                {str(c): str(e) for c, e in updates}, where=body.get("predicate")
            )
            return {
                "updated_rows": int(result.get("num_rows_updated", 0)),
                "version": int(dataset.latest_version),
            }

        return UpdateTableResponse.from_dict(await self.tables.run(update))

    async def _delete_from_table(self, request: Any) -> Any:
        from .models import DeleteFromTableResponse

        body, _, dataset = await self._on_storage(request, "DeleteFromTable", writes=True)
        predicate = body.get("predicate")
        if not isinstance(predicate, str) or not predicate.strip():
            raise errors.InvalidInputError("DeleteFromTable needs a predicate")

        def delete() -> int:
            dataset.delete(predicate)
            return int(dataset.latest_version)

        return DeleteFromTableResponse.from_dict({"version": await self.tables.run(delete)})

    # -- reading --------------------------------------------------------------------------------

    async def _scanner(self, request: Any, what: str) -> Any:
        body = json_data(request)
        query = body.get("query") if what == "ExplainTableQueryPlan" else body
        if not isinstance(query, dict):
            raise errors.InvalidInputError(f"{what} needs a query")
        query = {**query, "id": body.get("id"), "branch": body.get("branch")}
        _, _, dataset = await self._on_storage(
            query, what, writes=False, version=query.get("version")
        )
        arguments = scan_arguments(query, dataset.schema, what)
        return await self.tables.run(lambda: dataset.scanner(**arguments))

    async def _query_table(self, request: Any) -> bytes:
        from ._arrow_data import ipc_file_bytes

        scanner = await self._scanner(request, "QueryTable")
        result = await self.tables.run(scanner.to_table)
        return await self.tables.run(ipc_file_bytes, result)

    async def _explain_table_query_plan(self, request: Any) -> Any:
        from .models import ExplainTableQueryPlanResponse

        verbose = json_data(request).get("verbose") is True
        scanner = await self._scanner(request, "ExplainTableQueryPlan")
        plan = await self.tables.run(lambda: scanner.explain_plan(verbose))
        return ExplainTableQueryPlanResponse.from_dict({"plan": str(plan)})

    async def _analyze_table_query_plan(self, request: Any) -> Any:
        from .models import AnalyzeTableQueryPlanResponse

        scanner = await self._scanner(request, "AnalyzeTableQueryPlan")
        analysis = await self.tables.run(scanner.analyze_plan)
        return AnalyzeTableQueryPlanResponse.from_dict({"analysis": str(analysis)})

    async def _count_table_rows(self, request: Any) -> Any:
        from .models import CountTableRowsResponse

        body = json_data(request)
        _, _, dataset = await self._on_storage(
            body, "CountTableRows", writes=False, version=body.get("version")
        )
        predicate = body.get("predicate")
        count = await self.tables.run(lambda: dataset.count_rows(filter=predicate))
        return CountTableRowsResponse.from_dict({"count": int(count)})

    async def _get_table_stats(self, request: Any) -> Any:
        from .models import GetTableStatsResponse

        _, _, dataset = await self._on_storage(request, "GetTableStats", writes=False)

        def stats() -> dict[str, Any]:
            lengths = sorted(int(f.count_rows()) for f in dataset.get_fragments()) or [0]
            data_stats = dataset.data_stats() if hasattr(dataset, "data_stats") else None
            total = sum(int(f.data_size) for f in data_stats.fields) if data_stats else 0
            return {
                "total_bytes": total,
                "num_rows": int(dataset.count_rows()),
                "num_indices": len(dataset.describe_indices()),
                "fragment_stats": {
                    "num_fragments": len(dataset.get_fragments()),
                    "num_small_fragments": sum(1 for n in lengths if n < _SMALL_FRAGMENT_ROWS),
                    "lengths": fragment_summary(lengths),
                },
            }

        return GetTableStatsResponse.from_dict(await self.tables.run(stats))

    # -- indices --------------------------------------------------------------------------------

    async def _create_table_index(self, request: Any) -> Any:
        from .models import CreateTableIndexResponse

        await self._build_index(request, "CreateTableIndex")
        return CreateTableIndexResponse.from_dict({})

    async def _create_table_scalar_index(self, request: Any) -> Any:
        from .models import CreateTableScalarIndexResponse

        await self._build_index(request, "CreateTableScalarIndex")
        return CreateTableScalarIndexResponse.from_dict({})

    async def _build_index(self, request: Any, what: str) -> None:
        body, _, dataset = await self._on_storage(request, what, writes=True)
        column, kind = body.get("column"), str(body.get("index_type") or "").upper()
        if not isinstance(column, str) or not column or not kind:
            raise errors.InvalidInputError(f"{what} needs a column and an index type")
        name = body.get("name")
        if kind in _SCALAR_INDEX_TYPES:
            kind = "INVERTED" if kind == "FTS" else kind
            extra = {k: body[k] for k in _TEXT_INDEX_ARGUMENTS if body.get(k) is not None}

            def build() -> None:
                dataset.create_scalar_index(column, kind, name=name, **extra)

        else:
            arguments = {
                theirs: body[ours]
                for ours, theirs in _VECTOR_INDEX_ARGUMENTS.items()
                if body.get(ours) is not None
            }
            if body.get("distance_type"):
                arguments["metric"] = str(body["distance_type"]).lower()

            def build() -> None:
                dataset.create_index(column, kind, name=name, **arguments)

        await self.tables.run(build)

    async def _list_table_indices(self, request: Any) -> Any:
        from .models import ListTableIndicesResponse

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
        from .models import DescribeTableIndexStatsResponse

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
        from .models import DropTableIndexResponse

        body, _, dataset = await self._on_storage(request, "DropTableIndex", writes=True)
        name = body.get("index_name")
        if not isinstance(name, str) or not name:
            raise errors.InvalidInputError("DropTableIndex needs an index name")
        await self.tables.run(lambda: dataset.drop_index(name))
        return DropTableIndexResponse.from_dict({})

    # -- tags -----------------------------------------------------------------------------------

    async def _list_table_tags(self, request: Any) -> Any:
        from .models import ListTableTagsResponse

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
        from .models import GetTableTagVersionResponse

        body, _, dataset = await self._on_storage(request, "GetTableTagVersion", writes=False)
        tag = tag_name(body, "GetTableTagVersion")
        version = await self.tables.run(lambda: dataset.tags.get_version(tag))
        return GetTableTagVersionResponse.from_dict({"version": int(version)})

    async def _create_table_tag(self, request: Any) -> Any:
        from .models import CreateTableTagResponse

        await self._tag_change(request, "CreateTableTag", "create")
        return CreateTableTagResponse.from_dict({})

    async def _update_table_tag(self, request: Any) -> Any:
        from .models import UpdateTableTagResponse

        await self._tag_change(request, "UpdateTableTag", "update")
        return UpdateTableTagResponse.from_dict({})

    async def _delete_table_tag(self, request: Any) -> Any:
        from .models import DeleteTableTagResponse

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
        from .models import ListTableVersionsResponse

        body, table, dataset = await self._on_storage(request, "ListTableVersions", writes=False)
        versions = [
            version_entry(table.location, v) for v in await self.tables.run(dataset.versions)
        ]
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
        from .models import DescribeTableVersionResponse

        body, table, dataset = await self._on_storage(request, "DescribeTableVersion", writes=False)
        wanted = body.get("version")
        if wanted is None:
            wanted = int(dataset.version)
        for entry in await self.tables.run(dataset.versions):
            if int(entry["version"]) == wanted:
                return DescribeTableVersionResponse.from_dict(
                    {"version": version_entry(table.location, entry)}
                )
        raise errors.TableVersionNotFoundError(
            f"version {wanted} of table {'.'.join(table.id)} not found"
        )

    async def _restore_table(self, request: Any) -> Any:
        from .models import RestoreTableResponse

        body, table, _ = await self._on_storage(request, "RestoreTable", writes=True)
        version = body.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise errors.InvalidInputError(f"RestoreTable needs a version >= 0, got {version!r}")
        old = await self._open(table, version)
        await self.tables.run(old.restore)
        await self._schema_changed(table, await self._open(table))
        return RestoreTableResponse.from_dict({})

    # -- columns and schema ---------------------------------------------------------------------

    async def _alter_table_add_columns(self, request: Any) -> Any:
        from .models import AlterTableAddColumnsResponse

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
        from .models import AlterTableAlterColumnsResponse

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
        from .models import AlterTableDropColumnsResponse

        body, table, dataset = await self._on_storage(request, "AlterTableDropColumns", writes=True)
        columns = body.get("columns") or []
        if not columns or not all(isinstance(c, str) for c in columns):
            raise errors.InvalidInputError("AlterTableDropColumns needs column names")
        await self.tables.run(lambda: dataset.drop_columns(list(columns)))
        return await self._columns_changed(table, AlterTableDropColumnsResponse)

    async def _columns_changed(self, table: StorageTable, response: Any) -> Any:
        dataset = await self._open(table)
        await self._schema_changed(table, dataset)
        return response.from_dict({"version": int(dataset.version)})

    async def _update_field_metadata(self, request: Any) -> Any:
        from .models import UpdateFieldMetadataResponse

        body, _, dataset = await self._on_storage(request, "UpdateFieldMetadata", writes=True)
        answer = await self.tables.run(update_field_metadata, dataset, body.get("updates") or [])
        return UpdateFieldMetadataResponse.from_dict(answer)

    async def _update_table_schema_metadata(self, request: Any) -> Any:
        from .models import UpdateTableSchemaMetadataResponse

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


# -- helpers ------------------------------------------------------------------------------------


@contextlib.contextmanager
def anyio_shielded() -> Any:
    """Let clean-up finish even when the call that needs it was cancelled."""
    import anyio

    with anyio.CancelScope(shield=True):
        yield


def _holds_files(
    location: str,
    ignored: frozenset[str] = frozenset(),
    storage_options: Mapping[str, str] | None = None,
) -> bool:
    """Whether ``location`` exists and is not an empty directory (entries named in
    ``ignored`` do not count); on an object store: whether any object is below it."""
    path = local_path(location)
    if path is None:
        from lance.file import LanceFileSession

        session = LanceFileSession(location, storage_options=dict(storage_options or {}) or None)
        listed = session.list_with_delimiter()
        names = [entry.rstrip("/").rpartition("/")[2] for entry in listed.common_prefixes]
        names += [entry.rpartition("/")[2] for entry in listed.objects]
        return any(name not in ignored for name in names)
    if not os.path.lexists(path):
        return False
    if not os.path.isdir(path) or os.path.islink(path):
        return True
    return any(entry not in ignored for entry in os.listdir(path))


def _props(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"properties": dict(properties)} if properties else {}
