"""DescribeTransaction and AlterTransaction on storage for the catalog backends
(Iceberg, Unity, Glue, Hive), answering as pylance's DirectoryNamespace does on a
directory (:mod:`.transactions` says what that is).

The table is resolved through the catalog (its location, storage options and the
version its readers see), so a transaction is one of the table's versions *as the
catalog knows them*: for an Iceberg ``managed_by=impl`` table, whose versions are
Iceberg snapshots (snapshot id = Lance version), the transaction of snapshot ``N``
is the Lance transaction that committed version ``N``; a version written to storage
that the catalog never accepted has none (TransactionNotFound, 10).

Each operation is one function over a :class:`TransactionHost`
(:func:`describe_transaction`, :func:`alter_transaction`), so another kind of
transaction (issue 32's Spark jobs, named by one id element) can be dispatched in
front of it. Alterations are written only inside the table's own directory, with the
writes the catalog allows on the table (its refusal, its confinement); concurrent
AlterTransactions of one transaction in one process run one at a time (across
processes the last one written wins, as on pylance's directory).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import attrs

from .. import errors
from .._core.base import json_data
from .table_base import StorageTable, StorageTableBase
from .tables import LanceTables
from .transactions import (
    Found,
    apply_actions,
    checked_actions,
    described,
    find_transaction,
    read_alteration,
    write_alteration,
)

__all__ = [
    "StorageTransactionOperations",
    "TransactionHost",
    "alter_transaction",
    "describe_transaction",
    "split_transaction_id",
]

#: one lock per stripe of (table location, transaction): read, alter and write in turn
_STRIPES = [anyio.Lock() for _ in range(64)]


@attrs.frozen
class TransactionHost:
    """What the transaction operations need of a backend: its table resolution (the
    catalog's DescribeTable, checked as every storage operation is) and its threads."""

    resolve: Callable[[list[str], str, bool], Awaitable[StorageTable]]
    tables: LanceTables


def split_transaction_id(body: Mapping[str, Any], what: str) -> tuple[list[str], str]:
    """The table id and the transaction's own id of a request (InvalidInput, 13, as
    pylance's directory, when the id names no table and transaction)."""
    given = body.get("id")
    if (
        not isinstance(given, list)
        or len(given) < 2
        or not all(isinstance(part, str) and part for part in given)
    ):
        raise errors.InvalidInputError(
            f"{what}: the id must be the table's id followed by a transaction id, got {given!r}"
        )
    return list(given[:-1]), given[-1]


async def _found(host: TransactionHost, table: StorageTable, wanted: str) -> Found:
    newest = table.access.read_version
    if newest is None and table.access.namespace_client is not None:
        found = None  # declared in the catalog: no version accepted yet
    else:
        found = await host.tables.run(
            find_transaction, table.location, table.storage_options, wanted, newest
        )
    if found is None:
        raise errors.TransactionNotFoundError(
            f"transaction {wanted!r} of table {'.'.join(table.id)} not found"
        )
    return found


async def describe_transaction(host: TransactionHost, request: Any) -> Any:
    """DescribeTransaction of a Lance table's transaction (named by version or uuid)."""
    from ..models import DescribeTransactionResponse

    body: dict[str, Any] = json_data(request)
    table_id, wanted = split_transaction_id(body, "DescribeTransaction")
    table = await host.resolve(table_id, "DescribeTransaction", False)
    found = await _found(host, table, wanted)
    kept = await host.tables.run(read_alteration, table.location, table.storage_options, found.uuid)
    return DescribeTransactionResponse.from_dict(described(found, kept))


async def alter_transaction(host: TransactionHost, request: Any) -> Any:
    """AlterTransaction: its actions all applied to what is kept of the transaction, or
    none (the first failing one's error)."""
    from ..models import AlterTransactionResponse

    body: dict[str, Any] = json_data(request)
    table_id, wanted = split_transaction_id(body, "AlterTransaction")
    actions = checked_actions(body)
    table = await host.resolve(table_id, "AlterTransaction", True)
    found = await _found(host, table, wanted)
    location, options = table.location, table.storage_options
    async with _STRIPES[hash((location.rstrip("/"), found.uuid)) % len(_STRIPES)]:
        kept = await host.tables.run(read_alteration, location, options, found.uuid)
        altered = apply_actions(found, kept, actions)
        if altered != kept:
            await host.tables.run(write_alteration, location, options, found.uuid, altered)
    return AlterTransactionResponse.from_dict(described(found, altered))


class StorageTransactionOperations(StorageTableBase):
    """DescribeTransaction and AlterTransaction of the tables a catalog holds."""

    def _transaction_host(self) -> TransactionHost:
        async def resolve(table: list[str], what: str, writes: bool) -> StorageTable:
            return await self._storage_table({"id": table}, what, writes=writes)

        return TransactionHost(resolve, self.tables)

    async def _describe_transaction(self, request: Any) -> Any:
        return await describe_transaction(self._transaction_host(), request)

    async def _alter_transaction(self, request: Any) -> Any:
        return await alter_transaction(self._transaction_host(), request)
