"""Lance tables on object storage through the catalog backends (issue 17).

Servers: moto's server (tests/glue_fixtures.py ``moto_glue``: its S3 holds the data, its
Glue is the glue backend's catalog), the Iceberg project's REST reference server started
for this module with S3FileIO on moto (tests/iceberg_real_server.py: it writes its own
metadata files next to the Lance data), and the Unity Catalog look-alike
(tests/unity_server.py); all on 127.0.0.1, started and stopped by module fixtures.

Every table lives at an ``s3://`` location. The catalog connection carries the object
store's settings (``storage.aws_endpoint``, keys, region, ``allow_http``) as catalog
properties, once: no test hands storage options to a call. What the backends wrote is
read back from moto with boto3 (every key, size and ETag) and with pylance through the
catalog, so the storage options a catalog hands out are proven to reach the data.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from glue_fixtures import REGION, glue_client, moto_glue, s3_client
from iceberg_real_server import ReferenceIcebergServer, reference_iceberg, unique_name
from test_kit import aws_environment
from unity_server import UnityServer, unity_catalog

import lance_namespace_async as lna
from jvm import need
from lance_namespace_async import errors

BUCKET = "lance-data"
BACKENDS = ["glue", "iceberg", "unity"]


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with aws_environment(), moto_glue() as endpoint:
        s3_client(endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint


def storage_properties(endpoint: str) -> dict[str, str]:
    """The object store's settings, as catalog properties (``storage.*``)."""
    return {
        "storage.aws_endpoint": endpoint,
        "storage.aws_access_key_id": "testing",
        "storage.aws_secret_access_key": "testing",
        "storage.aws_region": REGION,
        "storage.allow_http": "true",
    }


@dataclass
class Backend:
    """A catalog backend whose tables live under ``s3://BUCKET/<prefix>``."""

    impl: str
    properties: dict[str, str]
    root: tuple[str, ...]
    prefix: str
    moto: str
    iceberg: ReferenceIcebergServer | None = None
    unity: UnityServer | None = None

    def connect(self) -> lna.AsyncLanceNamespace:
        return lna.connect(self.impl, self.properties)

    def plant_foreign_table(self, namespace: list[str], name: str) -> None:
        """A table of the catalog that is not a Lance table, made by the catalog's own client."""
        if self.impl == "glue":
            glue_client(self.moto).create_table(
                DatabaseName=namespace[-1],
                TableInput={
                    "Name": name,
                    "TableType": "EXTERNAL_TABLE",
                    "Parameters": {"classification": "csv"},
                    "StorageDescriptor": {"Location": f"s3://{BUCKET}/{self.prefix}-csv/{name}"},
                },
            )
        elif self.impl == "iceberg":
            assert self.iceberg is not None
            schema = pa.schema([pa.field("v", pa.int64())])
            self.iceberg.rest_client().create_table((namespace[-1], name), schema=schema)
        else:
            assert self.unity is not None
            self.unity.add_table(
                namespace[0],
                namespace[1],
                name,
                data_source_format="DELTA",
                storage_location=f"s3://{BUCKET}/{self.prefix}-delta/{name}",
            )


@pytest.fixture(scope="module")
def iceberg_on_s3(
    moto: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReferenceIcebergServer]:
    with contextlib.ExitStack() as stack:
        workdir = tmp_path_factory.mktemp("iceberg-s3")
        yield need(lambda: stack.enter_context(reference_iceberg(workdir, s3_endpoint=moto)))


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest, moto: str) -> Iterator[Backend]:
    impl = str(request.param)
    prefix = unique_name(impl)
    common = {"root": f"s3://{BUCKET}/{prefix}"} | storage_properties(moto)
    if impl == "glue":
        properties = {"endpoint": moto, "region": REGION, "child_catalogs": "false"}
        yield Backend(impl, properties | common, (), prefix, moto)
    elif impl == "iceberg":
        server: ReferenceIcebergServer = request.getfixturevalue("iceberg_on_s3")
        properties = server.properties(retry_backoff_ms="1", **common)
        yield Backend(impl, properties, ("wh",), prefix, moto, iceberg=server)
    else:
        with unity_catalog() as unity:
            unity.add_catalog("main")
            properties = {"endpoint": unity.uri, "retry_backoff_ms": "1"} | common
            yield Backend(impl, properties, ("main",), prefix, moto, unity=unity)


def rows(count: int, start: int = 0) -> pa.Table:
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "vec": pa.array([[float(i), 0.0] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )


def objects(backend: Backend, prefix: str = "") -> dict[str, tuple[int, str]]:
    """Every object of the bucket below ``prefix``: key -> (size, ETag)."""
    s3 = s3_client(backend.moto)
    found: dict[str, tuple[int, str]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            found[item["Key"]] = (int(item["Size"]), str(item["ETag"]))
    return found


def key_of(location: str) -> str:
    """The bucket key prefix of an ``s3://BUCKET/...`` location."""
    assert location.startswith(f"s3://{BUCKET}/"), location
    return location.removeprefix(f"s3://{BUCKET}/").rstrip("/")


async def fresh_namespace(ns: lna.AsyncLanceNamespace, backend: Backend, stem: str) -> list[str]:
    namespace = [*backend.root, unique_name(stem)]
    await ns.create_namespace({"id": namespace})
    return namespace


async def test_a_table_on_s3_lives_its_whole_life_through_the_catalog(backend: Backend) -> None:
    async with backend.connect() as ns:
        namespace = await fresh_namespace(ns, backend, "life")
        table = [*namespace, "t"]
        created = await ns.create_table({"id": table}, rows(300))
        assert created.location.startswith(f"s3://{BUCKET}/{backend.prefix}/")
        prefix = key_of(created.location) + "/"
        assert any(key.endswith(".lance") for key in objects(backend, prefix))

        # the catalog hands out the storage options it was configured with ...
        described = (await ns.describe_table({"id": table})).to_dict()
        assert described["storage_options"]["aws_endpoint"] == backend.moto
        # ... and pylance, knowing nothing but the catalog, reads the rows through them
        with lna.connect_sync(backend.impl, backend.properties) as facade:
            through_catalog = lance.dataset(namespace_client=facade, table_id=table)
            assert through_catalog.count_rows() == 300

        inserted = await ns.insert_into_table({"id": table}, rows(20, 300))
        assert (inserted.num_inserted_rows, inserted.version) == (20, 2)
        assert (await ns.count_table_rows({"id": table})).count == 320
        assert (await ns.count_table_rows({"id": table, "predicate": "id >= 310"})).count == 10
        selected = await ns.query_table(
            {"id": table, "k": 50, "vector": None, "filter": "id BETWEEN 305 AND 307"}
        )
        assert sorted(selected.column("id").to_pylist()) == [305, 306, 307]

        await ns.create_table_scalar_index(
            {"id": table, "column": "id", "index_type": "BTREE", "name": "by_id"}
        )
        await ns.create_table_index(
            {
                "id": table,
                "column": "vec",
                "index_type": "IVF_FLAT",
                "name": "by_vec",
                "num_partitions": 2,
                "distance_type": "l2",
            }
        )
        indices = (await ns.list_table_indices({"id": table})).indexes
        assert sorted(i.index_name for i in indices) == ["by_id", "by_vec"]
        stats = await ns.describe_table_index_stats({"id": table, "index_name": "by_vec"})
        assert stats.num_indexed_rows == 320
        nearest = await ns.query_table(
            {"id": table, "k": 3, "vector": {"single_vector": [42.2, 0.0]}, "nprobes": 2}
        )
        assert nearest.column("id").to_pylist() == [42, 43, 41]
        assert any("/_indices/" in key for key in objects(backend, prefix))

        # neighbours of the table's prefix: a sibling whose name starts like the table's,
        # a file beside it, a sibling table; the drop removes the table's objects only
        s3 = s3_client(backend.moto)
        parent = prefix.removesuffix("t/")
        for key in (f"{parent}t_keep/part-0.csv", f"{parent}t.txt", f"{parent}tt"):
            s3.put_object(Bucket=BUCKET, Key=key, Body=b"kept")
        sibling = await ns.create_table({"id": [*namespace, "t2"]}, rows(2))
        others = {
            k: v for k, v in objects(backend, backend.prefix).items() if k[: len(prefix)] != prefix
        }

        await ns.drop_table({"id": table})
        assert objects(backend, prefix) == {}
        assert objects(backend, backend.prefix) == others
        assert (await ns.list_tables({"id": namespace})).tables == ["t2"]
        assert (
            lance.dataset(
                sibling.location, storage_options=described["storage_options"]
            ).count_rows()
            == 2
        )


async def test_bad_input_on_s3_is_refused_and_changes_nothing(backend: Backend) -> None:
    async with backend.connect() as ns:
        namespace = await fresh_namespace(ns, backend, "bad")
        table = [*namespace, "t"]
        await ns.create_table({"id": table}, rows(5))
        backend.plant_foreign_table(namespace, "foreign")
        junk = f"{backend.prefix}-junk/not-lance"
        s3_client(backend.moto).put_object(Bucket=BUCKET, Key=f"{junk}/data.csv", Body=b"a,b\n")

        async def catalog_state() -> tuple[list[str], Any]:
            listed = sorted((await ns.list_tables({"id": namespace})).tables)
            described = {"id": table, "load_detailed_metadata": True}
            return listed, (await ns.describe_table(described)).version

        stored_before = objects(backend)
        catalog_before = await catalog_state()
        assert catalog_before == (["t"], 1)

        unknown_column = [
            ns.count_table_rows({"id": table, "predicate": "nope > 1"}),
            ns.query_table({"id": table, "k": 5, "vector": None, "filter": "nope = 1"}),
            ns.delete_from_table({"id": table, "predicate": "nope = 1"}),
            ns.update_table({"id": table, "updates": [["id", "nope + 1"]]}),
        ]
        for call in unknown_column:
            with pytest.raises(errors.InvalidInputError) as refused:
                await call
            assert refused.value.code == 13
        for index in ("BTREE", "IVF_FLAT"):
            with pytest.raises(errors.TableColumnNotFoundError):
                await ns.create_table_index({"id": table, "column": "nope", "index_type": index})
        with pytest.raises(errors.TableSchemaValidationError):
            await ns.insert_into_table({"id": table}, pa.table({"other": [1]}))
        with pytest.raises(errors.TableSchemaValidationError):  # id as text
            await ns.insert_into_table({"id": table}, pa.table({"id": ["x"], "vec": [[1.0, 2.0]]}))

        with pytest.raises(errors.TableVersionNotFoundError):
            await ns.restore_table({"id": table, "version": 99})
        with pytest.raises(errors.TableVersionNotFoundError):
            await ns.count_table_rows({"id": table, "version": 99})
        with pytest.raises(errors.TableTagNotFoundError):
            await ns.get_table_tag_version({"id": table, "tag": "never"})
        with pytest.raises(errors.TableIndexNotFoundError):
            await ns.drop_table_index({"id": table, "index_name": "never"})

        not_lance = [
            ns.insert_into_table({"id": [*namespace, "foreign"]}, rows(1)),
            ns.count_table_rows({"id": [*namespace, "foreign"]}),
            ns.query_table({"id": [*namespace, "foreign"], "k": 1, "vector": None}),
            ns.drop_table({"id": [*namespace, "foreign"]}),
            ns.register_table({"id": [*namespace, "junk"], "location": f"s3://{BUCKET}/{junk}"}),
        ]
        for call in not_lance:
            with pytest.raises(errors.InvalidInputError) as refused:
                await call
            assert refused.value.code == 13

        assert objects(backend) == stored_before
        assert await catalog_state() == catalog_before


def test_the_adapter_serves_s3_tables_without_handing_out_its_keys(backend: Backend) -> None:
    """pylance's Rust RestNamespace in front of our adapter over the backend: the adapter
    writes and reads the s3:// table with the catalog's storage options, and no answer
    carries them (the keys are the server's own)."""
    from lance.namespace import RestNamespace
    from uvicorn_thread import UvicornThread

    from lance_namespace_async.server import create_app

    server = UvicornThread(
        create_app(backend.connect()),
        name=f"s3-adapter-{backend.impl}",
        description=f"our REST adapter over {backend.impl} on moto's S3",
    )
    peer = RestNamespace(uri=server.start())
    try:
        namespace = [*backend.root, unique_name("served")]
        peer.create_namespace(ln.CreateNamespaceRequest(id=namespace))
        table = [*namespace, "t"]
        created = peer.create_table(ln.CreateTableRequest(id=table), ipc(rows(6)))
        assert created.location.startswith(f"s3://{BUCKET}/{backend.prefix}/")
        peer.insert_into_table(ln.InsertIntoTableRequest(id=table), ipc(rows(4, 6)))
        assert peer.count_table_rows(ln.CountTableRowsRequest(id=table)).count == 10
        described = peer.describe_table(ln.DescribeTableRequest(id=table))
        assert not described.storage_options
        prefix = key_of(created.location) + "/"
        assert any(key.endswith(".lance") for key in objects(backend, prefix))
        peer.drop_table(ln.DropTableRequest(id=table))
        assert objects(backend, prefix) == {}
    finally:
        server.stop()


def ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


async def test_create_table_never_writes_into_objects_of_someone_else(backend: Backend) -> None:
    """A prefix holding objects (not a Lance table) where CreateTable would place the table:
    refused as on a local folder, since a failed create, or a later drop, would delete
    them with the table."""
    async with backend.connect() as ns:
        namespace = await fresh_namespace(ns, backend, "occupied")
        table = [*namespace, "t"]
        probe = await ns.create_table({"id": [*namespace, "probe"]}, rows(1))
        occupied = key_of(probe.location).removesuffix("/probe") + "/t"
        s3_client(backend.moto).put_object(Bucket=BUCKET, Key=f"{occupied}/theirs.csv", Body=b"1")
        before = objects(backend)
        with pytest.raises(errors.InvalidInputError, match="not empty"):
            await ns.create_table({"id": table}, rows(2))
        assert objects(backend) == before
        assert (await ns.list_tables({"id": namespace})).tables == ["probe"]


async def test_a_cascading_namespace_drop_removes_its_tables_objects_only(
    backend: Backend,
) -> None:
    async with backend.connect() as ns:
        namespace = await fresh_namespace(ns, backend, "cascade")
        first = await ns.create_table({"id": [*namespace, "a"]}, rows(3))
        await ns.create_table({"id": [*namespace, "b"]}, rows(2))
        parent = key_of(first.location).removesuffix("/a")
        s3_client(backend.moto).put_object(Bucket=BUCKET, Key=f"{parent}/notes.txt", Body=b"x")
        s3_client(backend.moto).put_object(Bucket=BUCKET, Key=f"{parent}/ab/x", Body=b"x")
        others = {
            key: value
            for key, value in objects(backend).items()
            if not key.startswith((f"{parent}/a/", f"{parent}/b/"))
        }
        await ns.drop_namespace({"id": namespace, "behavior": "Cascade"})
        assert objects(backend) == others
        assert (
            namespace[-1] not in (await ns.list_namespaces({"id": list(backend.root)})).namespaces
        )


async def test_a_transaction_on_s3_is_described_and_altered_beside_the_table(
    backend: Backend,
) -> None:
    """DescribeTransaction reads the commit from the bucket; AlterTransaction keeps its
    alteration where pylance's directory does, in the table's ``_alter_transactions``."""
    async with backend.connect() as ns:
        namespace = await fresh_namespace(ns, backend, "txn")
        table = [*namespace, "t"]
        created = await ns.create_table({"id": table}, rows(3))
        await ns.insert_into_table({"id": table}, rows(2, 3))
        described = await ns.describe_transaction({"id": [*table, "2"]})
        properties = described.properties.additional_properties
        assert (described.status, properties["version"]) == ("SUCCEEDED", "2")
        assert properties["operation"] == "Append"
        with pytest.raises(errors.TransactionNotFoundError):
            await ns.describe_transaction({"id": [*table, "3"]})

        actions = [{"setPropertyAction": {"key": "reviewed", "value": "yes"}}]
        await ns.alter_transaction({"id": [*table, properties["uuid"]], "actions": actions})
        again = await ns.describe_transaction({"id": [*table, "2"]})
        assert again.properties.additional_properties["reviewed"] == "yes"
        key = f"{key_of(created.location)}/_alter_transactions/{properties['uuid']}.json"
        kept = s3_client(backend.moto).get_object(Bucket=BUCKET, Key=key)["Body"].read()
        assert json.loads(kept)["properties"] == {"reviewed": "yes"}


async def test_pylance_records_versions_on_s3_through_create_table_version(
    backend: Backend,
) -> None:
    """With ``table_version_tracking_enabled`` pylance stages each manifest in the bucket
    and records it through our CreateTableVersion: S3's put-if-absent (``If-None-Match:
    *``) gives it its final name, once; a second record of a version is 14, changing
    nothing, and a staged manifest outside the table's ``_versions`` is 13."""
    properties = {**backend.properties, "table_version_tracking_enabled": "true"}
    async with backend.connect() as ns:
        namespace = await fresh_namespace(ns, backend, "ver")
    table = [*namespace, "t"]
    with lna.connect_sync(backend.impl, properties) as facade:
        created = lance.write_dataset(
            rows(3), namespace_client=facade, table_id=table, mode="create"
        )
        appended = lance.write_dataset(
            rows(2, 3), namespace_client=facade, table_id=table, mode="append"
        )
        assert (created.version, appended.version) == (1, 2)
        read = lance.dataset(namespace_client=facade, table_id=table)
        assert read.count_rows() == 5
        listed = facade.list_table_versions({"id": table})
        assert [v.version for v in listed.versions] == [1, 2]
        location = facade.describe_table({"id": table}).location
    prefix = key_of(location) + "/_versions/"
    names = sorted(key.removeprefix(prefix) for key in objects(backend, prefix))
    assert names == [f"{2**64 - 1 - v:020d}.manifest" for v in (2, 1)]  # nothing staged left

    s3 = s3_client(backend.moto)
    final = f"{prefix}{2**64 - 3:020d}.manifest"
    body = s3.get_object(Bucket=BUCKET, Key=final)["Body"].read()
    staged = f"{prefix}{2**64 - 3:020d}.manifest-racer"
    s3.put_object(Bucket=BUCKET, Key=staged, Body=body + b"x")
    before = objects(backend, key_of(location))
    async with backend.connect() as ns:
        with pytest.raises(errors.ConcurrentModificationError):
            await ns.create_table_version(
                {"id": table, "version": 2, "manifest_path": f"s3://{BUCKET}/{staged}"}
            )
        for outside in (f"s3://{BUCKET}/{key_of(location)}/data/x.manifest-1", "../x-1"):
            with pytest.raises(errors.InvalidInputError):
                await ns.create_table_version({"id": table, "version": 3, "manifest_path": outside})
    assert objects(backend, key_of(location)) == before
