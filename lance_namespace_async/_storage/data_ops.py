"""The row operations on storage of the catalog backends: CreateTable, InsertIntoTable,
MergeInsertIntoTable, UpdateTable, DeleteFromTable, QueryTable and its plans,
CountTableRows and GetTableStats.

CreateTable writes the rows first and then registers the table through the
backend's own RegisterTable; a failure of either step leaves neither behind.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import errors
from .._core.base import json_data
from .._core.modes import CREATE_MODES, parse_mode
from .requests import (
    fragment_summary,
    merge_insert,
    scan_arguments,
)
from .table_base import (
    StorageTable,
    StorageTableBase,
    _holds_files,
    _props,
    anyio_shielded,
)
from .tables import has_data

if TYPE_CHECKING:
    import pyarrow as pa

    from .._core.arrow_data import ArrowData

logger = logging.getLogger("lance_namespace_async.tables")

#: a fragment with fewer rows than this counts as small in GetTableStats
_SMALL_FRAGMENT_ROWS = 100_000


class StorageDataOperations(StorageTableBase):
    """Rows: written, changed, queried and counted on storage."""

    # -- rows -----------------------------------------------------------------------------------

    async def _create_table(self, request: Any, data: ArrowData) -> Any:
        """CreateTable: write the rows, then register the table in the catalog.

        The rows are read and checked before anything is written; the registration
        is the backend's own RegisterTable. When registering fails, the data this call
        wrote is deleted (it wrote only into an empty location), so neither is left.
        """
        import lance

        from ..models import CreateTableResponse, DescribeTableRequest, RegisterTableRequest

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
        from ..models import DescribeTableRequest

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

        if table.branch is not None:  # through the checked-out branch: lands on it
            checked_out = await self._open(table)
            return await self.tables.run(lambda: lance.write_dataset(rows, checked_out, mode=mode))
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

        from ..models import InsertIntoTableResponse

        body: dict[str, Any] = json_data(request)
        mode = str(body.get("mode") or "append").lower()
        if mode not in ("append", "overwrite"):
            raise errors.InvalidInputError(
                f"InsertIntoTable mode must be append or overwrite, got {mode!r}"
            )
        table = await self._storage_table(body, "InsertIntoTable", writes=True)
        declared = table.branch is None and await self._only_declared(table)
        if not declared:
            await self._open(table)  # a table that is not Lance is refused before writing
        rows = await self.tables.run(data.read_all)
        dataset = await self._write(table, rows, "create" if declared else mode)
        if mode == "overwrite" or declared:
            await self._main_schema_changed(table, dataset)
        return InsertIntoTableResponse.from_dict(
            {"num_inserted_rows": rows.num_rows, "version": int(dataset.version)}
        )

    async def _merge_insert_into_table(self, request: Any, data: ArrowData) -> Any:
        from ..models import MergeInsertIntoTableResponse

        body, _, dataset = await self._on_storage(request, "MergeInsertIntoTable", writes=True)
        rows = await self.tables.run(data.read_all)
        answer = await self.tables.run(merge_insert, dataset, body, rows)
        return MergeInsertIntoTableResponse.from_dict(answer)

    async def _update_table(self, request: Any) -> Any:
        from ..models import UpdateTableResponse

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
        from ..models import DeleteFromTableResponse

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
        named = [b for b in (body.get("branch"), query.get("branch")) if b not in (None, "")]
        if len(named) == 2 and named[0] != named[1]:  # never one of them silently
            raise errors.InvalidInputError(f"{what} names two branches: {named!r}")
        query = {**query, "id": body.get("id"), "branch": named[0] if named else None}
        _, _, dataset = await self._on_storage(
            query, what, writes=False, version=query.get("version")
        )
        arguments = scan_arguments(query, dataset.schema, what)
        return await self.tables.run(lambda: dataset.scanner(**arguments))

    async def _query_table(self, request: Any) -> bytes:
        from .._core.arrow_data import ipc_file_bytes

        scanner = await self._scanner(request, "QueryTable")
        result = await self.tables.run(scanner.to_table)
        return await self.tables.run(ipc_file_bytes, result)

    async def _explain_table_query_plan(self, request: Any) -> Any:
        from ..models import ExplainTableQueryPlanResponse

        verbose = json_data(request).get("verbose") is True
        scanner = await self._scanner(request, "ExplainTableQueryPlan")
        plan = await self.tables.run(lambda: scanner.explain_plan(verbose))
        return ExplainTableQueryPlanResponse.from_dict({"plan": str(plan)})

    async def _analyze_table_query_plan(self, request: Any) -> Any:
        from ..models import AnalyzeTableQueryPlanResponse

        scanner = await self._scanner(request, "AnalyzeTableQueryPlan")
        analysis = await self.tables.run(scanner.analyze_plan)
        return AnalyzeTableQueryPlanResponse.from_dict({"analysis": str(analysis)})

    async def _count_table_rows(self, request: Any) -> Any:
        from ..models import CountTableRowsResponse

        body = json_data(request)
        _, _, dataset = await self._on_storage(
            body, "CountTableRows", writes=False, version=body.get("version")
        )
        predicate = body.get("predicate")
        count = await self.tables.run(lambda: dataset.count_rows(filter=predicate))
        return CountTableRowsResponse.from_dict({"count": int(count)})

    async def _get_table_stats(self, request: Any) -> Any:
        from ..models import GetTableStatsResponse

        _, _, dataset = await self._on_storage(request, "GetTableStats", writes=False)

        def stats() -> dict[str, Any]:
            lengths = sorted(int(f.count_rows()) for f in dataset.get_fragments()) or [0]
            # the bytes on disk of every field, as pylance's DirectoryNamespace answers
            total = sum(int(f.bytes_on_disk) for f in dataset.stats.data_stats().fields)
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
