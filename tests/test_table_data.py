"""Table data, index, tag, version, branch and schema operations (issue 16), end to end.

Each scenario runs on three stacks: our ``dir`` backend on a real temporary folder;
our ``rest`` client against pylance's own Rust ``RestAdapter`` (its DirectoryNamespace)
on a free loopback port; our ``rest`` client against our adapter server
(``create_app`` over ``dir``, uvicorn in a thread, tests/uvicorn_thread.py). What the
operations wrote is read back by pylance directly from storage (``lance.dataset`` on
the table's location), never through the stack under test. The retry test uses a
minimal ASGI server (uvicorn in a thread) that answers 503 once and records bodies.

pylance 14.0.2's server answers two caller mistakes with code 18 (Internal): a filter
Lance cannot parse and rows of another schema. Our dir backend (and so our adapter)
answers 13 and 20, as the specification's codes say; the rest-pylance expectations
below record pylance's answer, so the day it changes is noticed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest
from conftest import disk_state
from lance.namespace import RestAdapter
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from lance_namespace_async import errors, models
from lance_namespace_async.server import create_app

STACKS = ("dir", "rest-pylance", "rest-adapter")
TABLE = ["shop", "items"]


@dataclass
class Stack:
    name: str
    ns: lna.AsyncLanceNamespace
    root: Path
    uri: str | None = None


@contextlib.contextmanager
def _pylance_adapter(root: Path) -> Iterator[str]:
    adapter = RestAdapter("dir", {"root": str(root)}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        yield f"http://127.0.0.1:{adapter.port}"
    finally:
        adapter.stop()


@contextlib.contextmanager
def _our_adapter(root: Path) -> Iterator[str]:
    server = UvicornThread(
        create_app(lna.connect("dir", {"root": str(root)}), max_body_bytes=4_000_000),
        name="data-adapter",
        description="our REST adapter server over dir",
    )
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(params=STACKS)
async def stack(request: pytest.FixtureRequest, root: Path) -> AsyncIterator[Stack]:
    name = request.param
    with contextlib.ExitStack() as servers:
        uri = None
        if name == "dir":
            ns = lna.connect("dir", {"root": str(root)})
        else:
            server = _pylance_adapter if name == "rest-pylance" else _our_adapter
            uri = servers.enter_context(server(root))
            ns = lna.connect("rest", {"uri": uri, "max_retries": "0"})
        async with ns:
            await ns.create_namespace({"id": TABLE[:1]})
            yield Stack(name, ns, root, uri)


def rows(count: int, start: int = 0) -> pa.Table:
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"item-{i}" for i in ids],
            "vec": pa.array([[float(i), float(i)] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )


async def created(stack: Stack, count: int = 4) -> str:
    """Create TABLE from ``count`` rows; its location."""
    response = await stack.ns.create_table({"id": TABLE}, rows(count))
    assert response.version == 1
    return str(response.location)


def stored(location: str) -> pa.Table:
    """The table as pylance reads it from storage, rows in id order."""
    return lance.dataset(location).to_table().sort_by("id")


# -- rows in and out ------------------------------------------------------------------------


async def test_create_insert_and_query_rows_that_pylance_then_reads_from_storage(
    stack: Stack,
) -> None:
    location = await created(stack, 3)
    inserted = await stack.ns.insert_into_table({"id": TABLE}, rows(2, 3))
    assert (inserted.num_inserted_rows, inserted.version) == (2, 2)
    batches = rows(2, 5)
    reader = pa.RecordBatchReader.from_batches(batches.schema, batches.to_batches())
    await stack.ns.insert_into_table({"id": TABLE}, reader)  # streamed batch by batch

    assert stored(location).column("id").to_pylist() == list(range(7))
    assert (await stack.ns.count_table_rows({"id": TABLE})).count == 7
    assert (await stack.ns.count_table_rows({"id": TABLE, "predicate": "id >= 5"})).count == 2
    result = await stack.ns.query_table(
        {
            "id": TABLE,
            "k": 10,
            "vector": None,
            "filter": "id < 2",
            "columns": {"column_names": ["id", "name"]},
        }
    )
    assert isinstance(result, pa.Table)
    assert result.sort_by("id").to_pylist() == [
        {"id": 0, "name": "item-0"},
        {"id": 1, "name": "item-1"},
    ]


async def test_insert_overwrite_replaces_the_rows(stack: Stack) -> None:
    location = await created(stack)
    await stack.ns.insert_into_table({"id": TABLE, "mode": "overwrite"}, rows(1, 100))
    assert stored(location).column("id").to_pylist() == [100]


async def test_ipc_bytes_are_accepted_as_data(stack: Stack) -> None:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows(2).schema) as writer:
        writer.write_table(rows(2))
    response = await stack.ns.create_table({"id": TABLE}, sink.getvalue().to_pybytes())
    assert stored(str(response.location)).num_rows == 2


async def test_k_nearest_neighbours_come_nearest_first(stack: Stack) -> None:
    await created(stack, 10)
    result = await stack.ns.query_table(
        {"id": TABLE, "k": 3, "vector": {"single_vector": [6.2, 6.2]}, "vector_column": "vec"}
    )
    assert result.column("id").to_pylist() == [6, 7, 5]


async def test_streaming_query_yields_the_same_rows(stack: Stack) -> None:
    await created(stack, 5)
    batches = [
        batch
        async for batch in stack.ns.query_table_batches({"id": TABLE, "k": 10, "vector": None})
    ]
    assert sorted(pa.Table.from_batches(batches).column("id").to_pylist()) == list(range(5))


async def test_merge_insert_updates_matches_and_inserts_the_rest(stack: Stack) -> None:
    location = await created(stack, 3)
    incoming = pa.table(
        {
            "id": pa.array([2, 3], pa.int64()),
            "name": ["two", "three"],
            "vec": pa.array([[0.0, 0.0]] * 2, pa.list_(pa.float32(), 2)),
        }
    )
    await stack.ns.merge_insert_into_table(
        {
            "id": TABLE,
            "on": "id",
            "when_matched_update_all": True,
            "when_not_matched_insert_all": True,
        },
        incoming,
    )
    assert stored(location).column("name").to_pylist() == ["item-0", "item-1", "two", "three"]


async def test_update_and_delete_change_exactly_the_matching_rows(stack: Stack) -> None:
    location = await created(stack, 4)
    await stack.ns.update_table(
        {"id": TABLE, "predicate": "id = 0", "updates": [["name", "'zero'"]]}
    )
    await stack.ns.delete_from_table({"id": TABLE, "predicate": "id >= 2"})
    assert stored(location).to_pydict()["name"] == ["zero", "item-1"]


# -- tags, versions, branches ------------------------------------------------------------------


async def test_tags_name_versions_until_moved_or_deleted(stack: Stack) -> None:
    await created(stack)
    await stack.ns.insert_into_table({"id": TABLE}, rows(1, 10))
    await stack.ns.create_table_tag({"id": TABLE, "tag": "first", "version": 1})
    with pytest.raises(errors.TableTagAlreadyExistsError):
        await stack.ns.create_table_tag({"id": TABLE, "tag": "first", "version": 2})
    listed = await stack.ns.list_table_tags({"id": TABLE})
    assert listed.tags.to_dict()["first"]["version"] == 1
    assert (await stack.ns.get_table_tag_version({"id": TABLE, "tag": "first"})).version == 1

    await stack.ns.update_table_tag({"id": TABLE, "tag": "first", "version": 2})
    assert (await stack.ns.get_table_tag_version({"id": TABLE, "tag": "first"})).version == 2
    await stack.ns.delete_table_tag({"id": TABLE, "tag": "first"})
    with pytest.raises(errors.TableTagNotFoundError):
        await stack.ns.get_table_tag_version({"id": TABLE, "tag": "first"})


async def test_versions_are_described_and_a_missing_one_is_not_found(stack: Stack) -> None:
    await created(stack)
    await stack.ns.insert_into_table({"id": TABLE}, rows(1, 10))
    described = await stack.ns.describe_table_version({"id": TABLE, "version": 1})
    assert described.version.version == 1
    latest = await stack.ns.describe_table_version({"id": TABLE})
    assert latest.version.version == 2
    with pytest.raises(errors.TableVersionNotFoundError):
        await stack.ns.describe_table_version({"id": TABLE, "version": 99})
    listed = await stack.ns.list_table_versions({"id": TABLE})
    assert [v.version for v in listed.versions] == [1, 2]


async def test_branches_are_created_listed_and_deleted(stack: Stack) -> None:
    await created(stack)
    await stack.ns.create_table_branch({"id": TABLE, "name": "dev", "from_version": 1})
    listed = await stack.ns.list_table_branches({"id": TABLE})
    assert "dev" in listed.branches.to_dict()
    await stack.ns.delete_table_branch({"id": TABLE, "name": "dev"})
    assert "dev" not in (await stack.ns.list_table_branches({"id": TABLE})).branches.to_dict()


# -- indices -------------------------------------------------------------------------------------


async def test_scalar_and_vector_indices_are_built_listed_described_and_dropped(
    stack: Stack,
) -> None:
    location = await created(stack, 8)
    await stack.ns.create_table_scalar_index(
        {"id": TABLE, "column": "id", "index_type": "BTREE", "name": "by_id"}
    )
    await stack.ns.create_table_index(
        {
            "id": TABLE,
            "column": "vec",
            "index_type": "IVF_FLAT",
            "name": "by_vec",
            "num_partitions": 1,
            "distance_type": "l2",
        }
    )
    listed = await stack.ns.list_table_indices({"id": TABLE})
    assert {index.index_name for index in listed.indexes} == {"by_id", "by_vec"}
    stats = await stack.ns.describe_table_index_stats({"id": TABLE, "index_name": "by_id"})
    assert stats.num_indexed_rows == 8
    assert {index.name for index in lance.dataset(location).describe_indices()} == {
        "by_id",
        "by_vec",
    }

    await stack.ns.drop_table_index({"id": TABLE, "index_name": "by_id"})
    listed = await stack.ns.list_table_indices({"id": TABLE})
    assert [index.index_name for index in listed.indexes] == ["by_vec"]
    with pytest.raises(errors.TableIndexNotFoundError):
        await stack.ns.describe_table_index_stats({"id": TABLE, "index_name": "by_id"})


# -- schema, statistics, plans -------------------------------------------------------------------


async def test_columns_are_added_renamed_and_dropped_as_pylance_then_reads(stack: Stack) -> None:
    location = await created(stack, 2)
    await stack.ns.alter_table_add_columns(
        {"id": TABLE, "new_columns": [{"name": "double", "expression": "id * 2"}]}
    )
    assert stored(location).column("double").to_pylist() == [0, 2]
    await stack.ns.alter_table_alter_columns(
        {"id": TABLE, "alterations": [{"path": "double", "rename": "twice"}]}
    )
    assert "twice" in lance.dataset(location).schema.names
    await stack.ns.alter_table_drop_columns({"id": TABLE, "columns": ["twice", "vec"]})
    assert lance.dataset(location).schema.names == ["id", "name"]


async def test_schema_metadata_is_merged_into_the_stored_schema(stack: Stack) -> None:
    location = await created(stack)
    updated = await stack.ns.update_table_schema_metadata(
        {"id": TABLE, "metadata": {"owner": "ann"}}
    )
    assert updated.metadata.to_dict()["owner"] == "ann"
    assert lance.dataset(location).schema.metadata[b"owner"] == b"ann"


async def test_statistics_and_query_plans(stack: Stack) -> None:
    await created(stack, 5)
    stats = await stack.ns.get_table_stats({"id": TABLE})
    assert (stats.num_rows, stats.fragment_stats.num_fragments) == (5, 1)
    query = {"k": 5, "vector": None, "filter": "id > 1"}
    explained = await stack.ns.explain_table_query_plan({"id": TABLE, "query": query})
    assert "LanceRead" in explained.plan or "LanceScan" in explained.plan
    analyzed = await stack.ns.analyze_table_query_plan({"id": TABLE, **query})
    assert "metrics" in analyzed.analysis.lower() or "output_rows" in analyzed.analysis


# -- bad input -----------------------------------------------------------------------------------

#: pylance 14.0.2's server answers these caller mistakes with code 18 (Internal)
PYLANCE_SERVER_INTERNAL = {"rest-pylance"}


async def test_rows_of_another_schema_are_refused_and_change_nothing(stack: Stack) -> None:
    location = await created(stack)
    expected: type[errors.LanceNamespaceError] = (
        errors.InternalError
        if stack.name in PYLANCE_SERVER_INTERNAL
        else errors.TableSchemaValidationError
    )
    with pytest.raises(expected):
        await stack.ns.insert_into_table({"id": TABLE}, pa.table({"other": [1]}))
    assert lance.dataset(location).version == 1


async def test_a_filter_lance_cannot_parse_is_invalid_input(stack: Stack) -> None:
    await created(stack)
    expected: type[errors.LanceNamespaceError] = (
        errors.InternalError if stack.name in PYLANCE_SERVER_INTERNAL else errors.InvalidInputError
    )
    with pytest.raises(expected):
        await stack.ns.count_table_rows({"id": TABLE, "predicate": "id >>> 2"})


@pytest.mark.parametrize("data", [None, "rows", [1, 2], b"not arrow at all"])
async def test_data_that_is_not_arrow_is_invalid_input_before_any_io(
    stack: Stack, data: Any
) -> None:
    before = disk_state(stack.root)
    with pytest.raises(errors.InvalidInputError, match="data"):
        await stack.ns.create_table({"id": TABLE}, data)
    assert disk_state(stack.root) == before


async def test_a_missing_table_is_not_found_for_data_operations(stack: Stack) -> None:
    with pytest.raises(errors.TableNotFoundError):
        await stack.ns.count_table_rows({"id": ["shop", "nothing"]})
    with pytest.raises(errors.TableNotFoundError):
        await stack.ns.insert_into_table({"id": ["shop", "nothing"]}, rows(1))


# -- map fields as plain dicts (issue 16) --------------------------------------------------------


async def test_generated_models_take_plain_dicts_in_their_map_fields(stack: Stack) -> None:
    request = models.CreateNamespaceRequest(id=["maps"], properties={"k": "v"})  # type: ignore[arg-type]
    await stack.ns.create_namespace(request)
    described = await stack.ns.describe_namespace(models.DescribeNamespaceRequest(id=["maps"]))
    assert described.properties.to_dict() == {"k": "v"}


@pytest.mark.parametrize(
    ("properties", "field"),
    [({"k": 1}, "properties"), (["k"], "properties"), ("k=v", "properties")],
)
async def test_a_map_field_of_the_wrong_shape_is_invalid_input_naming_it(
    stack: Stack, properties: Any, field: str
) -> None:
    before = disk_state(stack.root)
    request = models.CreateNamespaceRequest(id=["bad"], properties=properties)
    with pytest.raises(errors.InvalidInputError, match=field):
        await stack.ns.create_namespace(request)
    assert disk_state(stack.root) == before


# -- the adapter's wire ----------------------------------------------------------------------------


def test_the_adapter_answers_an_unsupported_operation_with_406_and_code_0(root: Path) -> None:
    # dir runs every operation, but records no versions on a branch
    on_a_branch = {"id": ["t"], "version": 2, "manifest_path": "_versions/x", "branch": "dev"}
    with _our_adapter(root) as uri:
        answer = httpx.post(f"{uri}/v1/table/version/batch-create", json={"entries": [on_a_branch]})
    assert answer.status_code == 406
    assert answer.json()["code"] == 0


def test_the_adapter_refuses_an_arrow_upload_above_its_body_limit(root: Path) -> None:
    with _our_adapter(root) as uri:
        sink = pa.BufferOutputStream()
        big = pa.table({"blob": [b"x" * 1_000_000] * 5})
        with pa.ipc.new_stream(sink, big.schema) as writer:
            writer.write_table(big)
        answer = httpx.post(
            f"{uri}/v1/table/t/create",
            content=sink.getvalue().to_pybytes(),
            headers={"Content-Type": "application/vnd.apache.arrow.stream"},
        )
    assert answer.status_code == 413
    assert answer.json()["code"] == 13
    assert not (root / "t.lance").exists()


def test_the_adapter_answers_a_query_as_an_arrow_ipc_file(root: Path) -> None:
    with _our_adapter(root) as uri:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows(3).schema) as writer:
            writer.write_table(rows(3))
        created_answer = httpx.post(
            f"{uri}/v1/table/t/create",
            content=sink.getvalue().to_pybytes(),
            headers={"Content-Type": "application/vnd.apache.arrow.stream"},
        )
        assert created_answer.status_code == 200, created_answer.text
        answer = httpx.post(f"{uri}/v1/table/t/query", json={"k": 10, "vector": None})
        counted = httpx.post(f"{uri}/v1/table/t/count_rows", json={})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/vnd.apache.arrow.file"
    table = pa.ipc.open_file(pa.BufferReader(answer.content)).read_all()
    assert sorted(table.column("id").to_pylist()) == [0, 1, 2]
    assert counted.json() == 3  # the bare integer the specification declares


async def test_a_request_holding_dicts_for_its_nested_models_is_sent_as_the_wire_expects(
    stack: Stack,
) -> None:
    location = await created(stack, 2)
    request = models.AlterTableAddColumnsRequest(
        id=TABLE,
        new_columns=[{"name": "twice", "expression": "id * 2"}],  # type: ignore[list-item]
    )
    await stack.ns.alter_table_add_columns(request)
    assert stored(location).column("twice").to_pylist() == [0, 2]
    bad = models.AlterTableAddColumnsRequest(
        id=TABLE,
        new_columns=[{"name": 5, "expression": "id"}],  # type: ignore[list-item]
    )
    with pytest.raises(errors.InvalidInputError, match=r"new_columns\[0\]\.name"):
        await stack.ns.alter_table_add_columns(bad)
    assert lance.dataset(location).schema.names == ["id", "name", "vec", "twice"]


# -- retries and streamed rows -------------------------------------------------------------------


class _BusyOnce:
    """An ASGI server answering 503 to the first insert, 200 after; it records the bodies."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        busy = len(self.bodies) == 1
        status, payload = (503, b'{"code": 17}') if busy else (200, b'{"version": 2}')
        headers = [(b"content-type", b"application/json"), (b"retry-after", b"0")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


@pytest.mark.parametrize("http_client", ["httpx", "aiohttp", "lean"])
async def test_a_table_is_resent_after_a_503_but_a_readers_rows_are_sent_once(
    http_client: str,
) -> None:
    app = _BusyOnce()
    server = UvicornThread(app, name="busy-once", description="503 first, then 200")
    uri = server.start()
    try:
        properties = {"uri": uri, "http_client": http_client, "retry_backoff_ms": "1"}
        async with lna.connect("rest", properties) as ns:
            await ns.insert_into_table({"id": TABLE}, rows(2))
            assert len(app.bodies) == 2
            assert app.bodies[0] == app.bodies[1] != b""  # the same rows, twice

            app.bodies.clear()
            batches = rows(2)
            reader = pa.RecordBatchReader.from_batches(batches.schema, batches.to_batches())
            with pytest.raises(errors.ServiceUnavailableError):
                await ns.insert_into_table({"id": TABLE}, reader)
            assert len(app.bodies) == 1  # never replayed as an empty or partial body
            sent = pa.ipc.open_stream(pa.BufferReader(app.bodies[0])).read_all()
            assert sent.equals(batches)
    finally:
        server.stop()


@pytest.mark.parametrize("chunk", [1, 7, 4096])
async def test_a_query_answer_is_decoded_batch_by_batch_whatever_its_chunking(
    root: Path, chunk: int
) -> None:
    from lance_namespace_async._core.arrow_guard import IpcFileDecoder

    async with lna.connect("dir", {"root": str(root)}) as ns:
        await ns.create_table({"id": ["t"]}, rows(3000))
        answer = await ns.query_table_ipc({"id": ["t"], "k": 3000, "vector": None})
    decoder = IpcFileDecoder()
    batches = []
    for start in range(0, len(answer), chunk):
        batches += decoder.feed(answer[start : start + chunk])
    batches += decoder.finish()
    whole = pa.ipc.open_file(pa.BufferReader(answer)).read_all()
    assert pa.Table.from_batches(batches).equals(whole)
    assert whole.num_rows == 3000


async def test_field_metadata_is_merged_or_replaced_per_field(stack: Stack) -> None:
    location = await created(stack)
    request = {
        "id": TABLE,
        "updates": [
            {"path": "id", "metadata": {"unit": "count", "note": "x"}},
            {"path": "name", "metadata": {"lang": "en"}, "replace": True},
        ],
    }
    if stack.name == "rest-pylance":  # pylance 14.0.2: "not implemented", as code 18
        with pytest.raises(errors.InternalError):
            await stack.ns.update_field_metadata(request)
        return
    await stack.ns.update_field_metadata(request)
    removed = await stack.ns.update_field_metadata(
        {"id": TABLE, "updates": [{"path": "id", "metadata": {"note": None}}]}
    )
    assert removed.fields.to_dict()["id"] == {"unit": "count"}
    schema = lance.dataset(location).schema
    assert schema.field("id").metadata == {b"unit": b"count"}
    assert schema.field("name").metadata == {b"lang": b"en"}
    with pytest.raises(errors.TableColumnNotFoundError):
        await stack.ns.update_field_metadata(
            {"id": TABLE, "updates": [{"path": "nope", "metadata": {"a": "b"}}]}
        )
