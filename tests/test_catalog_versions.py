"""Version operations of the catalog backends on storage: pylance's own managed-versioning
writer through a catalog, CreateTableVersion's put-if-not-exists, BatchDeleteTableVersions
only inside the storage root.

Servers: moto's Glue server (tests/glue_fixtures.py) and the Unity Catalog look-alike
(tests/unity_server.py, or the real server of LANCE_NS_UNITY_URI), on 127.0.0.1, started
and stopped by test_kit.py's ``running``. Tables are real Lance tables in a temporary
storage root, written by pylance (``lance.write_dataset(namespace_client=<our sync
facade>, table_id=...)``), which records every version through our CreateTableVersion
when DescribeTable answers ``managed_versioning=true`` (``table_version_tracking_enabled``).
The all-or-none batches run over every backend in the conformance kit (test_kit).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator

import lance
import pyarrow as pa
import pytest
from hive_metastore import Metastore
from test_kit import running_param

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.registry import resolve_impl
from lance_namespace_async._storage.places import local_path
from lance_namespace_async.testing import KitSettings

BACKENDS = ["glue-moto", "unity"]


@pytest.fixture(scope="module", params=BACKENDS)
def settings(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[KitSettings]:
    with running_param(request, tmp_path_factory, hive_metastores, "versions") as found:
        yield found


@pytest.fixture
def tracked(settings: KitSettings) -> Iterator[tuple[lna.SyncLanceNamespace, list[str]]]:
    """A facade with ``table_version_tracking_enabled`` and a fresh namespace of its own."""
    properties = {**settings.properties, "table_version_tracking_enabled": "true"}
    with lna.connect_sync(settings.impl, properties) as facade:
        namespace = [*settings.root, f"v{secrets.token_hex(4)}"]
        facade.create_namespace({"id": namespace})
        yield facade, namespace


def rows(count: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64())})


def manifests(location: str) -> list[str]:
    path = local_path(location)
    assert path is not None, location
    return sorted(os.listdir(os.path.join(path, "_versions")))


def test_pylance_writes_a_managed_versioning_table_through_the_catalog(
    tracked: tuple[lna.SyncLanceNamespace, list[str]],
) -> None:
    facade, namespace = tracked
    table = [*namespace, "t"]
    created = lance.write_dataset(rows(3), namespace_client=facade, table_id=table, mode="create")
    appended = lance.write_dataset(
        rows(2, start=3), namespace_client=facade, table_id=table, mode="append"
    )
    read = lance.dataset(namespace_client=facade, table_id=table)

    assert (created.version, appended.version) == (1, 2)
    assert sorted(read.to_table().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    described = facade.describe_table({"id": table})
    assert described.managed_versioning is True
    listed = facade.list_table_versions({"id": table})
    assert [v.version for v in listed.versions] == [1, 2]
    # every version under its final name (V2), no staged manifest left behind
    names = manifests(described.location)
    assert [n for n in names if n.endswith(".manifest")] == [
        f"{2**64 - 1 - v:020d}.manifest" for v in (2, 1)
    ]
    assert not [n for n in names if ".manifest-" in n], names
    for version in listed.versions:  # relative to the table, as the dir backend answers
        assert os.path.isfile(
            os.path.join(local_path(described.location) or "", version.manifest_path)
        )
    assert lance.dataset(described.location).count_rows() == 5  # from storage alone


def test_create_table_version_records_once_and_refuses_a_recorded_version(
    tracked: tuple[lna.SyncLanceNamespace, list[str]],
) -> None:
    facade, namespace = tracked
    table = [*namespace, "t"]
    lance.write_dataset(rows(3), namespace_client=facade, table_id=table, mode="create")
    location = facade.describe_table({"id": table}).location
    path = local_path(location)
    assert path is not None
    # a writer that staged version 1 again (lost the race) is refused, nothing changes
    staged = os.path.join(path, "_versions", f"{2**64 - 2:020d}.manifest-racer")
    with open(os.path.join(path, "_versions", f"{2**64 - 2:020d}.manifest"), "rb") as f:
        payload = f.read()
    with open(staged, "wb") as f:
        f.write(payload)
    before = manifests(location)
    with pytest.raises(errors.ConcurrentModificationError):
        facade.create_table_version(
            {"id": table, "version": 1, "manifest_path": staged.lstrip("/"), "naming_scheme": "V2"}
        )
    assert manifests(location) == before
    # a staged manifest outside the table is refused as bad input
    with pytest.raises(errors.InvalidInputError):
        facade.create_table_version(
            {"id": table, "version": 2, "manifest_path": "/etc/passwd", "naming_scheme": "V2"}
        )
    assert manifests(location) == before
    # (a dict request gets pylance's dict answer for the version operations)
    described = facade.describe_table_version({"id": table, "version": 1})["version"]
    assert described["version"] == 1
    assert described["manifest_path"] == f"_versions/{2**64 - 2:020d}.manifest"


def test_batch_delete_table_versions_deletes_inside_the_root_only(
    tracked: tuple[lna.SyncLanceNamespace, list[str]],
    settings: KitSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    facade, namespace = tracked
    table = [*namespace, "t"]
    lance.write_dataset(rows(3), namespace_client=facade, table_id=table, mode="create")
    for _ in range(2):
        lance.write_dataset(rows(1), namespace_client=facade, table_id=table, mode="append")
    deleted = facade.batch_delete_table_versions(
        {"id": table, "ranges": [{"start_version": 1, "end_version": 3}]}
    )
    assert deleted["deleted_count"] == 2
    assert [v.version for v in facade.list_table_versions({"id": table}).versions] == [3]
    assert lance.dataset(namespace_client=facade, table_id=table).count_rows() == 5

    # a table registered outside the storage root: its versions are never deleted
    outside = str(tmp_path_factory.mktemp("outside") / "t")
    lance.write_dataset(rows(2), outside)
    lance.write_dataset(rows(2), outside, mode="append")
    facade.register_table({"id": [*namespace, "out"], "location": outside})
    before = manifests(outside)
    with pytest.raises(errors.PermissionDeniedError):
        facade.batch_delete_table_versions(
            {"id": [*namespace, "out"], "ranges": [{"start_version": 1, "end_version": -1}]}
        )
    assert manifests(outside) == before
    facade.deregister_table({"id": [*namespace, "out"]})


def test_every_catalog_lists_the_version_operations() -> None:
    for impl in ("iceberg", "unity", "glue", "hive"):
        listed = set(resolve_impl(impl).list_operations())
        assert {
            "create_table_version",
            "describe_table_version",
            "batch_delete_table_versions",
            "batch_create_table_versions",
            "batch_commit_tables",
        } <= listed, impl
