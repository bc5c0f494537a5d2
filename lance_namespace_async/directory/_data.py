"""CountTableRows, InsertIntoTable and QueryTable of the directory backend, on the table.

pylance's Rust ``DirectoryNamespace`` finds a child namespace's table by scanning the
``__manifest`` table on every call: about a millisecond of CPU, most of a CountTableRows
and a fifth of a 3,000-row insert. The manifest copy of ``_manifest_snapshot`` already
knows where the table is (one ``stat`` proves the copy current), so here the table is
opened at that location with pylance's Python API, in one worker-thread hop:

* CountTableRows opens the table (at its latest version, or the asked one) and counts,
  with the predicate when there is one. Only pylance's own caches (the namespace's
  ``lance.Session``, keyed by file and version) are shared: every call finds the latest
  version anew and sees every commit, whoever made it. Any failure is handed to
  pylance's operation, which reports it in its words (a read: asking twice changes
  nothing).
* InsertIntoTable appends (mode absent or ``append``) when the table exists, the rows'
  schema is exactly the table's and there is at least one row. Everything else (a
  declared table pylance creates on the first insert, an overwrite, a schema pylance
  must refuse, an empty stream, a branch) goes to pylance before anything is written. Once
  the append has started, a failure is reported as it is, never retried through
  pylance: a second write could insert the rows twice.

* QueryTable builds the scanner pylance's operation builds (``_query``) and answers with
  its rows as an IPC file; a request it does not map, and any failure, go to pylance.

All apply only where the manifest copy does (a local root without storage settings
or credential vending) and, for inserts, without ``table_version_tracking_enabled``
(pylance then records versions in the manifest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from .._core.operations import OPERATIONS_BY_ID
from ._core import drop_nones
from ._ops import _call_pylance
from ._query import QUERY_FIELDS, run_query, scanner_arguments
from ._reads import Confine, located, read_directly
from ._tables import TableOperations

if TYPE_CHECKING:
    from .._core.arrow_data import ArrowData
    from .._core.identifiers import Identifier
    from ._manifest_snapshot import ManifestSnapshots

__all__ = ["DataOperations"]

T = TypeVar("T")

#: request fields the direct paths understand; any other one set goes to pylance
_COUNT_FIELDS = frozenset({"id", "version", "predicate"})
_INSERT_FIELDS = frozenset({"id", "mode"})


class DataOperations(TableOperations):
    """CountTableRows and InsertIntoTable without pylance's manifest scan."""

    async def _count_table_rows(self, request: Any) -> Any:
        operation = OPERATIONS_BY_ID["CountTableRows"]
        body = drop_nones(request.to_dict())
        table = self._direct_table(body, _COUNT_FIELDS)
        version = body.get("version")
        predicate = body.get("predicate")
        if (
            table is not None
            and (version is None or (type(version) is int and 0 <= version < 2**64))
            and (predicate is None or isinstance(predicate, str))
            and await self._snapshot_confirmed(table)
        ):
            snapshots = self._snapshots
            assert snapshots is not None
            session = self.lance_session()
            confine = self._confiner("CountTableRows")
            counted = await self._run(
                _count_rows, snapshots, session, table, version, predicate, confine
            )
            if counted is not None:
                return operation.response_class().from_dict({operation.response_field: counted})
        return await _call_pylance(self, operation, request, None)

    async def _insert_into_table(self, request: Any, data: ArrowData) -> Any:
        operation = OPERATIONS_BY_ID["InsertIntoTable"]
        body = drop_nones(request.to_dict())
        table = self._direct_table(body, _INSERT_FIELDS)
        if (
            table is not None
            and body.get("mode", "append") == "append"
            and self.config.table_version_tracking_enabled is not True
            and not data.is_stream
            and await self._snapshot_confirmed(table)
        ):
            snapshots = self._snapshots
            assert snapshots is not None
            session = self.lance_session()
            confine = self._confiner("InsertIntoTable")
            answer = await self._run(_append, snapshots, session, table, data.to_bytes(), confine)
            if answer is not None:
                return operation.response_class().from_dict(answer)
        return await _call_pylance(self, operation, request, data)

    async def _query_table(self, request: Any) -> Any:
        operation = OPERATIONS_BY_ID["QueryTable"]
        body = drop_nones(request.to_dict())
        table = self._direct_table(body, QUERY_FIELDS)
        mapped = None if table is None else scanner_arguments(body)
        if table is not None and mapped is not None and await self._snapshot_confirmed(table):
            snapshots = self._snapshots
            assert snapshots is not None
            arguments, column = mapped
            session = self.lance_session()
            version = body.get("version")
            confine = self._confiner("QueryTable")
            answer = await self._run(
                run_query, snapshots, session, table, version, arguments, column, confine
            )
            if answer is not None:
                return answer
        return await _call_pylance(self, operation, request, None)

    def _confiner(self, what: str) -> Confine:
        """What the direct paths call with the table's location before they open it."""
        refuse = self.tables.confinement.refuse
        return lambda location: refuse(location, what)

    def _direct_table(self, body: dict[str, Any], fields: frozenset[str]) -> Identifier | None:
        """The table id when the direct path may serve this request (else None)."""
        snapshots = self._snapshots
        if snapshots is None or not body.keys() <= fields or not snapshots.worth_checking():
            return None
        table = self._table_id(body.get("id"))
        return table if len(table) > 1 else None  # root tables are not manifest rows

    async def _snapshot_confirmed(self, table: Identifier) -> bool:
        """Whether the manifest copy's locations are pylance's: the first DescribeTable
        through pylance confirms it (once per namespace object)."""
        snapshots = self._snapshots
        if snapshots is None:
            return False
        if not snapshots.confirmed:
            try:
                await self._plain_describe(table)
            except Exception:
                return False  # pylance reports it when it runs the operation
        return snapshots.confirmed


def _count_rows(
    snapshots: ManifestSnapshots,
    session: Any,
    table: Identifier,
    version: int | None,
    predicate: str | None,
    confine: Confine,
) -> int | None:
    return read_directly(
        snapshots,
        session,
        table,
        version,
        lambda dataset: int(dataset.count_rows(filter=predicate)),
        confine,
    )


def _append(
    snapshots: ManifestSnapshots, session: Any, table: Identifier, ipc: bytes, confine: Confine
) -> dict[str, Any] | None:
    """Append the IPC stream ``ipc`` to the table; None (nothing written) when pylance
    must decide: no table there yet, another schema, no rows."""
    import lance
    import pyarrow as pa

    location = located(snapshots, table, confine)
    if location is None:
        return None
    try:
        dataset = lance.dataset(location, session=session)
        rows = pa.ipc.open_stream(pa.py_buffer(ipc)).read_all()
    except Exception:
        return None
    if rows.num_rows == 0 or not rows.schema.equals(dataset.schema, check_metadata=True):
        return None
    # from here on, a failure is the insert's own: reported, never written a second time
    written = lance.write_dataset(rows, dataset, mode="append")
    return {"num_inserted_rows": rows.num_rows, "version": int(written.version)}
