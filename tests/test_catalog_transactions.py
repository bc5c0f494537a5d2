"""DescribeTransaction and AlterTransaction on the catalog backends answer as pylance
14.0.2's DirectoryNamespace answers on a directory, for the same requests.

Servers: moto's Glue server (tests/glue_fixtures.py, through test_kit.py's ``running``)
for storage-managed tables, and the Iceberg project's REST reference server (conftest
``iceberg_reference``) for ``managed_by=impl`` tables, whose versions are Iceberg
snapshots. The reference is pylance's own DirectoryNamespace on a temporary directory
(driven through its Rust binding ``_inner`` with the protocol's camelCase JSON: its
Python ``alter_transaction`` sends ``model_dump()``'s snake_case names, which its Rust
side ignores, so every action would be dropped). Tables are real Lance tables written
by pylance: an overwrite, an append carrying ``transaction_properties``, a delete, an
index, a compaction that rewrites the index (an operation pylance's Python cannot
convert) and a schema-metadata change.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import lance_namespace
import pyarrow as pa
import pytest
from hive_metastore import Metastore
from iceberg_real_server import ReferenceIcebergServer, unique_name
from lance.namespace import DirectoryNamespace
from test_kit import running_param

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._storage.transactions import MAX_ACTIONS, MAX_KEY_CHARS
from lance_namespace_async.testing import KitSettings


@pytest.fixture(scope="module", params=["glue-moto"])
def settings(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[KitSettings]:
    with running_param(request, tmp_path_factory, hive_metastores, "txn") as found:
        yield found


@pytest.fixture(scope="module")
def glue(settings: KitSettings) -> Iterator[lna.SyncLanceNamespace]:
    with lna.connect_sync(settings.impl, dict(settings.properties)) as facade:
        yield facade


def ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def history(location: str) -> None:
    """Versions 2..7 of the table at ``location`` (version 1 exists), one of each kind."""
    more = pa.table({"id": pa.array([4, 5], pa.int64())})
    lance.write_dataset(
        more, location, mode="append", transaction_properties={"job": "nightly", "k": "v"}
    )
    dataset = lance.dataset(location)
    dataset.delete("id = 1")
    dataset.create_scalar_index("id", "BTREE")
    dataset.optimize.compact_files()  # ReserveFragments, then a Rewrite of data and index
    lance.dataset(location).update_schema_metadata({"a": "b"})


@pytest.fixture
def pair(
    settings: KitSettings, glue: lna.SyncLanceNamespace, tmp_path: Path
) -> tuple[Callable[..., Any], Callable[..., Any], str]:
    """The same table twice, at one history: in pylance's directory, and a copy of its
    files registered in Glue. Answers (reference, ours, the copy's location), each call
    taking (operation, body) and answering the JSON answer or the error's code."""
    root = Path(settings.properties["root"]) / f"pair-{secrets.token_hex(4)}"
    reference = DirectoryNamespace(root=str(root / "dir"))
    reference.create_table(
        lance_namespace.CreateTableRequest(id=["t"]),
        ipc(pa.table({"id": pa.array([1, 2, 3], pa.int64())})),
    )
    history(str(root / "dir" / "t.lance"))
    copy = root / "copy.lance"
    shutil.copytree(root / "dir" / "t.lance", copy)
    database = f"txn{secrets.token_hex(4)}"
    glue.create_namespace({"id": [database]})
    glue.register_table({"id": [database, "t"], "location": str(copy)})

    def theirs(operation: str, body: dict[str, Any]) -> Any:
        try:
            return getattr(reference._inner, operation)({**body, "id": ["t", *body["id"]]})
        except Exception as exc:  # pylance's errors carry the protocol code
            return getattr(exc, "code", type(exc).__name__)

    def ours(operation: str, body: dict[str, Any]) -> Any:
        try:
            answer = getattr(glue, operation)({**body, "id": [database, "t", *body["id"]]})
        except errors.LanceNamespaceError as exc:
            return int(exc.code)
        answered: dict[str, Any] = answer.to_dict()
        answered.pop("context", None)
        return answered

    return theirs, ours, str(copy)


def uuids(location: str) -> list[str]:
    return sorted(name[:-4].split("-", 1)[1] for name in os.listdir(f"{location}/_transactions"))


def test_every_version_and_uuid_is_described_as_pylances_directory_describes_it(
    pair: tuple[Callable[..., Any], Callable[..., Any], str],
) -> None:
    theirs, ours, location = pair
    newest = lance.dataset(location).version
    assert newest == 7
    names = [str(v) for v in range(newest + 2)] + uuids(location)
    names += ["+2", "02", "99999999999999999999", "-1", "no-such-transaction", str(uuid.uuid4())]
    answers = {name: ours("describe_transaction", {"id": [name]}) for name in names}
    assert answers == {name: theirs("describe_transaction", {"id": [name]}) for name in names}
    # what that is: each version SUCCEEDED, the writer's properties kept, missing ones 10
    assert answers["2"]["status"] == "SUCCEEDED"
    assert answers["2"]["properties"]["job"] == "nightly"
    assert answers["2"]["properties"]["operation"] == "Append"
    assert answers["2"]["properties"]["version"] == "2"
    described = {answers[str(v)]["properties"]["operation"] for v in range(1, newest + 1)}
    assert {"Rewrite", "ReserveFragments", "CreateIndex", "UpdateConfig"} <= described
    for missing in ("0", str(newest + 1), "no-such-transaction", "99999999999999999999"):
        assert answers[missing] == errors.TransactionNotFoundError.code
    by_uuid = [answers[name] for name in uuids(location)]
    assert sorted(a["properties"]["version"] for a in by_uuid) == [str(v) for v in range(1, 8)]


#: AlterTransaction requests applied in order to both tables (ids: the transaction's)
STEPS: list[tuple[str, list[dict[str, Any]]]] = [
    ("2", [{"setPropertyAction": {"key": "reviewed", "value": "yes"}}]),
    ("2", [{"setPropertyAction": {"key": "reviewed", "value": "no", "mode": "Fail"}}]),
    ("2", [{"setPropertyAction": {"key": "job", "value": "x", "mode": "fail"}}]),
    ("2", [{"setPropertyAction": {"key": "reviewed", "value": "no", "mode": "Skip"}}]),
    ("2", [{"setPropertyAction": {"key": "k", "value": "over"}}]),
    ("2", [{"setPropertyAction": {"key": "version", "value": "9"}}]),
    ("2", [{"unsetPropertyAction": {"key": "operation"}}]),
    ("2", [{"unsetPropertyAction": {"key": "job"}}]),
    ("2", [{"unsetPropertyAction": {"key": "job"}}]),
    ("2", [{"unsetPropertyAction": {"key": "job", "mode": "Fail"}}]),
    ("2", [{"setPropertyAction": {"key": "mode", "value": "v", "mode": "bogus"}}]),
    ("2", [{"unsetPropertyAction": {"key": "mode", "mode": "bogus"}}]),
    ("2", [{"setStatusAction": {"status": "Failed"}}]),
    ("2", [{"setStatusAction": {"status": "bogus"}}]),
    ("2", [{"setStatusAction": {"status": "canceled"}}]),
    (
        "2",  # all or nothing: the last action fails, the first two never land
        [
            {"setPropertyAction": {"key": "m1", "value": "v"}},
            {"setStatusAction": {"status": "Running"}},
            {"unsetPropertyAction": {"key": "absent", "mode": "Fail"}},
        ],
    ),
    ("2", [{"setPropertyAction": {"key": "job", "value": "again"}}]),
    ("6", [{"setPropertyAction": {"key": "compacted", "value": "yes"}}]),
    ("8", [{"setPropertyAction": {"key": "a", "value": "b"}}]),
    ("no-such-transaction", [{"setPropertyAction": {"key": "a", "value": "b"}}]),
    # an action naming none is nothing to do: pylance's own Python client sends only such
    ("2", [{}]),
]


def test_alterations_answer_and_are_kept_as_on_pylances_directory(
    pair: tuple[Callable[..., Any], Callable[..., Any], str],
) -> None:
    theirs, ours, location = pair
    for transaction, actions in STEPS:
        body = {"id": [transaction], "actions": actions}
        answered = ours("alter_transaction", body)
        assert answered == theirs("alter_transaction", body), (transaction, actions)
        for name in ("2", "6"):
            described = ours("describe_transaction", {"id": [name]})
            assert described == theirs("describe_transaction", {"id": [name]})
    final = ours("describe_transaction", {"id": ["2"]})
    assert final["status"] == "canceled"
    assert final["properties"]["job"] == "again"
    assert final["properties"]["k"] == "over"
    assert "m1" not in final["properties"]
    assert final["properties"]["version"] == "2"
    # the same file as pylance's, where pylance keeps it
    kept = sorted(os.listdir(f"{location}/_alter_transactions"))
    altered = [ours("describe_transaction", {"id": [v]})["properties"]["uuid"] for v in ("2", "6")]
    assert kept == sorted(f"{uuid}.json" for uuid in altered)


def test_either_side_reads_what_the_other_altered(
    settings: KitSettings, glue: lna.SyncLanceNamespace
) -> None:
    """One table, in pylance's directory and registered in Glue at the same place."""
    root = Path(settings.properties["root"]) / f"shared-{secrets.token_hex(4)}"
    reference = DirectoryNamespace(root=str(root))
    reference.create_table(
        lance_namespace.CreateTableRequest(id=["t"]),
        ipc(pa.table({"id": pa.array([1], pa.int64())})),
    )
    history(str(root / "t.lance"))
    database = f"txn{secrets.token_hex(4)}"
    glue.create_namespace({"id": [database]})
    glue.register_table({"id": [database, "t"], "location": str(root / "t.lance")})
    by_glue = [{"setPropertyAction": {"key": "by", "value": "glue"}}]
    glue.alter_transaction({"id": [database, "t", "2"], "actions": by_glue})
    assert reference._inner.describe_transaction({"id": ["t", "2"]})["properties"]["by"] == "glue"
    reference._inner.alter_transaction(
        {"id": ["t", "3"], "actions": [{"setStatusAction": {"status": "Failed"}}]}
    )
    assert glue.describe_transaction({"id": [database, "t", "3"]}).status == "Failed"


def test_bad_requests_are_refused_with_a_typed_error_and_change_nothing(
    pair: tuple[Callable[..., Any], Callable[..., Any], str],
    glue: lna.SyncLanceNamespace,
) -> None:
    _, ours, location = pair
    first = [{"setPropertyAction": {"key": "k0", "value": "v"}}]
    ours("alter_transaction", {"id": ["2"], "actions": first})
    kept_dir = f"{location}/_alter_transactions"
    before = {name: Path(kept_dir, name).read_bytes() for name in os.listdir(kept_dir)}
    set_one = {"setPropertyAction": {"key": "k1", "value": "v"}}
    bad: list[list[dict[str, Any]] | Any] = [
        [],  # the spec's minItems: 1 (pylance's directory takes it as nothing to do)
        [{"fooAction": {}}],
        [set_one, {"fooAction": {}}],
        [{"setPropertyAction": {"key": "", "value": "v"}}],
        [{"setPropertyAction": {"key": "k" * (MAX_KEY_CHARS + 1), "value": "v"}}],
        [{"setPropertyAction": {"key": "k1", "value": "v" * 1_000_000}}],
        [{"setPropertyAction": {"key": "k1"}}],
        [{"unsetPropertyAction": {}}],
        [{"setStatusAction": {}}],
        [set_one] * (MAX_ACTIONS + 1),
    ]
    for actions in bad:
        assert ours("alter_transaction", {"id": ["2"], "actions": actions}) == 13, actions
    # ids that name no table and transaction
    for given in ([], ["only-a-table"]):
        with pytest.raises(errors.InvalidInputError):
            glue.describe_transaction({"id": given})
        with pytest.raises(errors.InvalidInputError):
            glue.alter_transaction({"id": given, "actions": [set_one]})
    after = {name: Path(kept_dir, name).read_bytes() for name in os.listdir(kept_dir)}
    assert after == before
    assert json.loads(next(iter(after.values())))["properties"] == {"k0": "v"}


def test_a_planted_link_is_never_written_through(
    pair: tuple[Callable[..., Any], Callable[..., Any], str], tmp_path: Path
) -> None:
    _, ours, location = pair
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, f"{location}/_alter_transactions")
    set_one = [{"setPropertyAction": {"key": "k", "value": "v"}}]
    assert ours("alter_transaction", {"id": ["2"], "actions": set_one}) == 19  # InvalidTableState
    assert ours("describe_transaction", {"id": ["2"]}) == 19
    assert list(elsewhere.iterdir()) == []


# -- Iceberg managed_by=impl: a transaction per snapshot the catalog accepted -----------------


async def test_a_managed_iceberg_tables_transactions_are_its_snapshots_lance_commits(
    iceberg_reference: ReferenceIcebergServer, tmp_path: Path
) -> None:
    """The transaction of snapshot N is the Lance commit of version N; a version written
    to storage around the catalog was never the table's, so it has no transaction."""
    place = unique_name("itxn")
    iceberg_reference.rest_client().create_namespace(place)
    properties = iceberg_reference.properties(root=str(tmp_path / "root"), warehouses="wh")
    location = str(tmp_path / "root" / "managed.lance")
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), location)
    table = ["wh", place, "managed"]
    async with lna.connect("iceberg", properties) as ns:
        await ns.register_table(
            {"id": table, "location": location, "properties": {"managed_by": "impl"}}
        )
        more = pa.table({"id": pa.array([2, 3], pa.int64())})
        await ns.insert_into_table({"id": table}, more)  # snapshot 2, through the catalog
        snapshot = iceberg_reference.rest_client().load_table((place, "managed")).metadata
        assert [s.snapshot_id for s in snapshot.snapshots] == [1, 2]

        described = await ns.describe_transaction({"id": [*table, "2"]})
        assert described.status == "SUCCEEDED"
        properties_2 = described.properties.additional_properties
        assert (properties_2["version"], properties_2["operation"]) == ("2", "Append")
        by_uuid = await ns.describe_transaction({"id": [*table, properties_2["uuid"]]})
        assert by_uuid.properties.additional_properties == properties_2
        # written straight to storage: version 3 exists there, not in the catalog
        around = lance.write_dataset(more, location, mode="append")
        assert around.version == 3
        stray = around.read_transaction(3).uuid
        for name in ("3", stray):
            with pytest.raises(errors.TransactionNotFoundError):
                await ns.describe_transaction({"id": [*table, name]})
            with pytest.raises(errors.TransactionNotFoundError):
                await ns.alter_transaction(
                    {"id": [*table, name], "actions": [{"setStatusAction": {"status": "Failed"}}]}
                )
        altered = await ns.alter_transaction(
            {"id": [*table, "2"], "actions": [{"setPropertyAction": {"key": "k", "value": "v"}}]}
        )
        assert altered.properties.additional_properties["k"] == "v"
        again = await ns.describe_transaction({"id": [*table, "2"]})
        assert again.properties.additional_properties["k"] == "v"
