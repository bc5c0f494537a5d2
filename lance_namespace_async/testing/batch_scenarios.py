"""Scenarios of the version records and the all-or-none batches: CreateTableVersion,
BatchDeleteTableVersions, BatchCreateTableVersions and BatchCommitTables.

Registered with the catalog scenarios (imported at the end of the package ``scenarios``).
A version is recorded from a manifest staged inside the table, as a writer with
managed versioning stages it: the scenario writes a real next version with pylance
and moves its manifest out of ``_versions/`` to a staging name, so the table is
back at its previous version until the batch records the staged one. Staging
moves files, so the scenarios need tables on a local filesystem (skipped otherwise).
A backend without the operation skips first, on an empty batch.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

import anyio.to_thread

from .. import errors
from .._storage.places import local_path
from ._kit import Kit, ScenarioSkipped
from ._scenario import scenario


async def _staged(kit: Kit, location: str) -> tuple[int, str]:
    """Write the table's next version, then un-record it: (its number, its staged
    manifest's path relative to the table)."""
    import lance

    path = local_path(location)
    if path is None:
        raise ScenarioSkipped("needs tables on a local filesystem to stage a manifest")
    await kit.write(location, 2, mode="append")

    def stage() -> tuple[int, str]:
        version = int(lance.dataset(path).version)
        versions = os.path.join(path, "_versions")
        for name in os.listdir(versions):
            number = name.removesuffix(".manifest")
            if number.isdigit() and version in (int(number), 2**64 - 1 - int(number)):
                staged = f"_versions/{version}.manifest-{secrets.token_hex(4)}"
                os.rename(os.path.join(versions, name), os.path.join(path, staged))
                return version, staged
        raise AssertionError(f"no manifest of version {version} at {location}")

    return await anyio.to_thread.run_sync(stage)


async def _versions(kit: Kit, table: list[str]) -> list[int]:
    listed = await kit.ns.list_table_versions({"id": table})
    return sorted(v.version for v in listed.versions)


async def _two_tables(kit: Kit) -> list[tuple[list[str], str]]:
    made = []
    for name in ("a", "b"):
        table = kit.table(name)
        made.append((table, await kit.create_table(table, rows=3)))
    return made


@scenario()
async def batch_create_table_versions_records_every_version_or_none(kit: Kit) -> None:
    """BatchCreateTableVersions records the staged version of each listed table and
    answers them in the request's order; ListTableVersions and DescribeTableVersion
    then show them and the tables read at them. A batch with one entry whose version
    already exists answers ConcurrentModification (14) and records none of them."""
    await kit.ns.batch_create_table_versions({"entries": []})
    tables = await _two_tables(kit)
    staged = [(table, location, *await _staged(kit, location)) for table, location in tables]
    (table_a, location_a, version_a, path_a), (table_b, _, version_b, path_b) = staged
    await kit.refuses(
        errors.ConcurrentModificationError,
        kit.ns.batch_create_table_versions,
        {
            "entries": [
                {"id": table_a, "version": version_a, "manifest_path": path_a},
                {"id": table_b, "version": 1, "manifest_path": path_b},
            ]
        },
    )
    assert await _versions(kit, table_a) == list(range(1, version_a))
    entries = [
        {"id": table, "version": version, "manifest_path": path}
        for table, _, version, path in staged
    ]
    answered = await kit.ns.batch_create_table_versions({"entries": entries})
    assert [v.version for v in answered.versions] == [version_a, version_b]
    for (table, location, version, _), recorded in zip(staged, answered.versions, strict=True):
        assert await _versions(kit, table) == list(range(1, version + 1))
        described = await kit.ns.describe_table_version({"id": table, "version": version})
        assert described.version.version == version
        assert described.version.manifest_size == recorded.manifest_size
        assert await kit.count_rows(location) == 5
    assert location_a


@scenario()
async def batch_commit_tables_applies_every_operation_or_none(kit: Kit) -> None:
    """BatchCommitTables applies a declare, a version record, a version deletion and a
    deregister in one batch and answers one result per operation, in order. When one
    operation of a batch fails (here a version that already exists: ConcurrentModification,
    14), none of the others is applied: the declared table is not there, the versions are
    all still listed, the deregistered table still exists."""
    await kit.ns.batch_commit_tables({"operations": []})
    (table_a, location_a), (table_b, location_b) = await _two_tables(kit)
    await kit.write(location_b, 1, mode="append")  # b has versions 1 and 2
    version, path = await _staged(kit, location_a)
    table_c, table_d = kit.table("c"), kit.table("d")
    location_d = await kit.create_table(table_d)
    kit.forget_later(location_d)
    operations: list[dict[str, Any]] = [
        {"declare_table": {"id": table_c}},
        {"create_table_version": {"id": table_a, "version": version, "manifest_path": path}},
        {
            "delete_table_versions": {
                "id": table_b,
                "ranges": [{"start_version": 1, "end_version": 2}],
            }
        },
        {"deregister_table": {"id": table_d}},
    ]
    conflict = {"create_table_version": {"id": table_a, "version": 1, "manifest_path": path}}
    await kit.refuses(
        errors.ConcurrentModificationError,
        kit.ns.batch_commit_tables,
        {"operations": [*operations, conflict]},
    )
    assert await _versions(kit, table_a) == list(range(1, version))
    assert await _versions(kit, table_b) == [1, 2]
    committed = await kit.ns.batch_commit_tables({"operations": operations})
    results = [result.to_dict() for result in committed.results]
    assert [list(result) for result in results] == [[next(iter(o))] for o in operations]
    assert results[0]["declare_table"]["location"]
    assert results[1]["create_table_version"]["version"]["version"] == version
    assert results[2]["delete_table_versions"]["deleted_count"] == 1
    assert await _versions(kit, table_a) == list(range(1, version + 1))
    assert await _versions(kit, table_b) == [2]
    assert await kit.tables() == ["a", "b", "c"]
    assert await kit.count_rows(location_a) == 5


def _as_writer_spells(location: str, path: str) -> str:
    """A staged manifest's path as pylance's managed-versioning writer sends it: the
    object-store path (the absolute path without its leading slash)."""
    return os.path.join(local_path(location) or "", path).lstrip("/")


@scenario()
async def create_table_version_records_a_staged_manifest_once(kit: Kit) -> None:
    """CreateTableVersion records the version a writer staged (put-if-not-exists of its
    manifest, named as pylance's writer names it): ListTableVersions and
    DescribeTableVersion show it and the table reads it. Recording a version the table
    already has answers ConcurrentModification (14) and changes nothing; a staged
    manifest that is not there is InvalidInput (13)."""
    table = kit.table("t")
    location = await kit.create_table(table, rows=3)
    version, path = await _staged(kit, location)
    staged = _as_writer_spells(location, path)
    await kit.ns.create_table_version({"id": table, "version": version, "manifest_path": staged})
    assert await _versions(kit, table) == list(range(1, version + 1))
    described = await kit.ns.describe_table_version({"id": table, "version": version})
    assert described.version.version == version
    assert await kit.count_rows(location) == 5
    again, path_again = await _staged(kit, location)
    await kit.refuses(
        errors.ConcurrentModificationError,
        kit.ns.create_table_version,
        {"id": table, "version": version, "manifest_path": _as_writer_spells(location, path_again)},
    )
    missing = _as_writer_spells(location, f"_versions/{again}.manifest-missing")
    await kit.refuses(
        errors.InvalidInputError,
        kit.ns.create_table_version,
        {"id": table, "version": again, "manifest_path": missing},
    )


@scenario()
async def batch_delete_table_versions_deletes_the_versions_in_its_ranges(kit: Kit) -> None:
    """BatchDeleteTableVersions deletes the versions in its ranges (start inclusive, end
    exclusive, -1 open) and answers how many; the others stay listed and the table
    reads its latest version. Of a missing table it is TableNotFound (4)."""
    table = kit.table("t")
    location = await kit.create_table(table, rows=3)
    await kit.write(location, 1, mode="append")
    await kit.write(location, 1, mode="append")  # versions 1, 2, 3
    deleted = await kit.ns.batch_delete_table_versions(
        {"id": table, "ranges": [{"start_version": 1, "end_version": 3}]}
    )
    assert deleted.deleted_count == 2
    assert await _versions(kit, table) == [3]
    assert await kit.count_rows(location) == 5
    await kit.refuses(
        errors.TableNotFoundError,
        kit.ns.batch_delete_table_versions,
        {"id": kit.table("missing"), "ranges": [{"start_version": 1, "end_version": -1}]},
    )
