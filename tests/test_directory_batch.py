"""BatchCreateTableVersions and BatchCommitTables of the directory backend: all or none.

Real pylance on real temporary directories (no server). A version is recorded from a
manifest staged inside the table, as a writer with managed versioning stages it: each
test writes a real next version with pylance and moves its manifest out of
``_versions/`` to a staging name, so the table reads its previous version until a
batch records the staged one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import lance
import pytest
from conftest import disk_state, sample_table

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.directory import DirectoryNamespace

_U64_MAX = 2**64 - 1


async def table_with_versions(ns: DirectoryNamespace, table: list[str], versions: int = 1) -> str:
    """Declare ``table`` and write ``versions`` versions of 3 rows; its local path."""
    if len(table) > 1:
        await ns.create_namespace({"id": table[:-1], "mode": "ExistOk"})
    location = (await ns.declare_table({"id": table})).location
    path = location.removeprefix("file://")
    lance.write_dataset(sample_table(3), path, mode="overwrite")
    for _ in range(versions - 1):
        lance.write_dataset(sample_table(3), path, mode="append")
    return path


def stage_next_version(path: str, tag: str = "staged") -> tuple[int, str]:
    """Write the next version (3 more rows), then un-record it: (its number, its staged
    manifest's path relative to the table)."""
    lance.write_dataset(sample_table(3), path, mode="append")
    version = lance.dataset(path).version
    staged = f"_versions/{version}.manifest-{tag}"
    os.rename(f"{path}/_versions/{_U64_MAX - version:020d}.manifest", f"{path}/{staged}")
    return version, staged


async def versions_of(ns: DirectoryNamespace, table: list[str]) -> list[int]:
    listed = await ns.list_table_versions({"id": table})
    return sorted(v.version for v in listed.versions)


def entry(table: list[str], version: int, manifest_path: str, **more: Any) -> dict[str, Any]:
    return {"id": table, "version": version, "manifest_path": manifest_path, **more}


# -- BatchCreateTableVersions --------------------------------------------------------------


class TestBatchCreateTableVersions:
    async def test_records_one_version_of_each_table_in_order(self, ns: DirectoryNamespace) -> None:
        a = await table_with_versions(ns, ["sales", "a"])
        b = await table_with_versions(ns, ["b"], versions=2)
        version_a, staged_a = stage_next_version(a)
        version_b, staged_b = stage_next_version(b)
        assert (version_a, version_b) == (2, 3)
        assert lance.dataset(a).version == 1  # a staged version is not a version yet

        answered = await ns.batch_create_table_versions(
            {
                "entries": [
                    entry(["sales", "a"], version_a, staged_a),
                    entry(["b"], version_b, f"{b}/{staged_b}"),  # absolute paths too
                ]
            }
        )

        assert [v.version for v in answered.versions] == [2, 3]
        assert (lance.dataset(a).version, lance.dataset(a).count_rows()) == (2, 6)
        assert (lance.dataset(b).version, lance.dataset(b).count_rows()) == (3, 9)
        assert not os.path.exists(f"{a}/{staged_a}")
        assert not os.path.exists(f"{b}/{staged_b}")
        assert await versions_of(ns, ["sales", "a"]) == [1, 2]
        assert await versions_of(ns, ["b"]) == [1, 2, 3]
        listed = await ns.list_table_versions({"id": ["b"], "descending": True})
        assert listed.versions[0].to_dict() == answered.versions[1].to_dict()
        described = await ns.describe_table_version({"id": ["sales", "a"], "version": 2})
        assert described.version.manifest_size == answered.versions[0].manifest_size
        detailed = {"id": ["sales", "a"], "load_detailed_metadata": True}
        assert (await ns.describe_table(detailed)).version == 2

    async def test_an_existing_version_fails_the_whole_batch_and_records_none(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        a = await table_with_versions(ns, ["a"])
        b = await table_with_versions(ns, ["b"])
        version_a, staged_a = stage_next_version(a)
        _, staged_b = stage_next_version(b)
        before = disk_state(root)

        with pytest.raises(errors.ConcurrentModificationError) as caught:
            await ns.batch_create_table_versions(
                {"entries": [entry(["a"], version_a, staged_a), entry(["b"], 1, staged_b)]}
            )

        assert caught.value.code == 14
        assert "'b' already has version 1" in str(caught.value)
        assert disk_state(root) == before  # a's version was not recorded, both still staged
        assert await versions_of(ns, ["a"]) == [1]
        assert lance.dataset(a).version == 1

    async def test_a_version_recorded_while_the_batch_runs_undoes_the_recorded_ones(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        # two connections (two processes, as far as locks go) record the same version of
        # b: the put-if-not-exists of the final manifest lets exactly one win
        a = await table_with_versions(ns, ["a"])
        b = await table_with_versions(ns, ["b"])
        version_a, staged_a = stage_next_version(a)
        version_b, staged_b = stage_next_version(b)
        os.link(f"{b}/{staged_b}", f"{b}/_versions/{version_b}.manifest-other")
        outcomes: list[str] = []

        async with lna.connect("dir", {"root": str(root)}) as other:

            async def batch(namespace: Any, entries: list[dict[str, Any]]) -> None:
                try:
                    await namespace.batch_create_table_versions({"entries": entries})
                    outcomes.append("recorded")
                except errors.ConcurrentModificationError:
                    outcomes.append("conflict")

            async with anyio.create_task_group() as group:
                group.start_soon(
                    batch,
                    ns,
                    [entry(["a"], version_a, staged_a), entry(["b"], version_b, staged_b)],
                )
                group.start_soon(
                    batch, other, [entry(["b"], version_b, f"_versions/{version_b}.manifest-other")]
                )

        assert sorted(outcomes) == ["conflict", "recorded"]
        assert await versions_of(ns, ["b"]) == [1, 2]
        a_recorded = await versions_of(ns, ["a"]) == [1, 2]
        assert a_recorded == os.path.exists(f"{b}/_versions/{version_b}.manifest-other")
        assert a_recorded != os.path.exists(f"{a}/{staged_a}")

    async def test_a_missing_table_is_table_not_found_and_records_none(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        a = await table_with_versions(ns, ["a"])
        version, staged = stage_next_version(a)
        before = disk_state(root)
        with pytest.raises(errors.TableNotFoundError):
            await ns.batch_create_table_versions(
                {"entries": [entry(["a"], version, staged), entry(["nope"], 1, staged)]}
            )
        assert disk_state(root) == before

    @pytest.mark.parametrize(
        ("entries", "says"),
        [
            ("zzz", "entries must be list"),
            ([{"id": ["a"], "version": 2}], "manifest_path"),
            ([entry(["a"], -1, "{staged}")], ">= 0"),
            ([entry(["a"], True, "{staged}")], "must be int"),
            ([entry(["a"], 2, "{staged}", naming_scheme="V3")], "naming_scheme"),
            ([entry(["a"], 2, "{staged}", manifest_size=1)], "not the file's size"),
            ([entry(["a"], 2, "../b/_versions/2.manifest-staged")], "no staged manifest"),
            ([entry(["a"], 2, "/etc/passwd")], "no staged manifest"),
            ([entry(["a"], 2, "_versions/18446744073709551614.manifest")], "committed"),
            ([entry(["a"], 2, "{staged}"), entry(["a"], 2, "{staged}")], "twice"),
            ([entry([], 2, "{staged}")], "table id"),
        ],
    )
    async def test_bad_input_is_invalid_input_and_changes_nothing(
        self, ns: DirectoryNamespace, root: Path, entries: Any, says: str
    ) -> None:
        a = await table_with_versions(ns, ["a"])
        await table_with_versions(ns, ["b"])
        _, staged = stage_next_version(a)
        if isinstance(entries, list):
            entries = [
                {**e, "manifest_path": e.get("manifest_path", "").format(staged=staged)}
                if "manifest_path" in e
                else e
                for e in entries
            ]
        before = disk_state(root)
        with pytest.raises(errors.InvalidInputError) as caught:
            await ns.batch_create_table_versions({"entries": entries})
        assert caught.value.code == 13
        assert says in str(caught.value)
        assert disk_state(root) == before

    async def test_an_empty_batch_records_nothing(self, ns: DirectoryNamespace) -> None:
        assert (await ns.batch_create_table_versions({"entries": []})).versions == []

    async def test_a_branch_is_unsupported(self, ns: DirectoryNamespace) -> None:
        with pytest.raises(errors.UnsupportedOperationError):
            await ns.batch_create_table_versions(
                {"entries": [entry(["a"], 2, "_versions/x", branch="dev")]}
            )


# -- BatchCommitTables ---------------------------------------------------------------------


async def mixed_batch(ns: DirectoryNamespace) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Tables a (a staged version 2), b (versions 1-3), d (nested, to deregister) and
    the operations: declare c, record a's version 2, delete b's 1 and 2, deregister d."""
    paths = {
        "a": await table_with_versions(ns, ["a"]),
        "b": await table_with_versions(ns, ["b"], versions=3),
        "d": await table_with_versions(ns, ["ns", "d"]),
    }
    version, staged = stage_next_version(paths["a"])
    operations = [
        {"declare_table": {"id": ["c"]}},
        {"create_table_version": entry(["a"], version, staged)},
        {
            "delete_table_versions": {
                "id": ["b"],
                "ranges": [{"start_version": 1, "end_version": 3}],
            }
        },
        {"deregister_table": {"id": ["ns", "d"]}},
    ]
    return operations, paths


class TestBatchCommitTables:
    async def test_applies_every_operation_and_answers_each_in_order(
        self, ns: DirectoryNamespace
    ) -> None:
        operations, paths = await mixed_batch(ns)

        committed = await ns.batch_commit_tables({"operations": operations})

        results = [result.to_dict() for result in committed.results]
        assert [list(r) for r in results] == [
            ["declare_table"],
            ["create_table_version"],
            ["delete_table_versions"],
            ["deregister_table"],
        ]
        assert results[0]["declare_table"]["location"].endswith("/c.lance")
        assert results[1]["create_table_version"]["version"]["version"] == 2
        assert results[2]["delete_table_versions"]["deleted_count"] == 2
        assert results[3]["deregister_table"]["location"] == "file://" + paths["d"]
        assert (await ns.list_tables({"id": []})).tables == ["a", "b", "c"]
        assert (await ns.list_tables({"id": ["ns"]})).tables == []
        assert os.path.isdir(paths["d"])  # deregistered: its data stays
        assert await versions_of(ns, ["a"]) == [1, 2]
        assert await versions_of(ns, ["b"]) == [3]
        assert lance.dataset(paths["b"]).count_rows() == 9
        assert not os.path.exists(f"{paths['b']}/.lance-namespace-async")  # set aside, then gone

    async def test_one_failing_operation_applies_none(self, ns: DirectoryNamespace) -> None:
        operations, paths = await mixed_batch(ns)
        staged = operations[1]["create_table_version"]["manifest_path"]
        conflict = {"create_table_version": entry(["a"], 1, staged)}  # a has a version 1

        with pytest.raises(errors.ConcurrentModificationError):
            await ns.batch_commit_tables({"operations": [*operations, conflict]})

        assert (await ns.list_tables({"id": []})).tables == ["a", "b"]
        assert (await ns.list_tables({"id": ["ns"]})).tables == ["d"]
        await ns.describe_table({"id": ["ns", "d"]})
        assert not os.path.exists(f"{ns.root}/c.lance")
        assert await versions_of(ns, ["a"]) == [1]
        assert await versions_of(ns, ["b"]) == [1, 2, 3]
        assert os.path.exists(f"{paths['a']}/{staged}")  # still staged, for a retry
        # and the same batch without the conflict then lands whole
        await ns.batch_commit_tables({"operations": operations})
        assert await versions_of(ns, ["a"]) == [1, 2]

    async def test_declaring_an_existing_table_undoes_the_operations_before_it(
        self, ns: DirectoryNamespace
    ) -> None:
        operations, _ = await mixed_batch(ns)
        with pytest.raises(errors.TableAlreadyExistsError):
            await ns.batch_commit_tables(
                {"operations": [*operations, {"declare_table": {"id": ["b"]}}]}
            )
        assert (await ns.list_tables({"id": []})).tables == ["a", "b"]
        assert await versions_of(ns, ["a"]) == [1]
        assert await versions_of(ns, ["b"]) == [1, 2, 3]
        assert (await ns.list_tables({"id": ["ns"]})).tables == ["d"]

    @pytest.mark.parametrize(
        ("operations", "says"),
        [
            ({"declare_table": {"id": ["c"]}}, "must be list"),
            ([{}], "exactly one of"),
            ([{"declare_table": {"id": ["c"]}, "deregister_table": {"id": ["a"]}}], "exactly one"),
            ([{"drop_table": {"id": ["a"]}}], "exactly one of"),
            ([{"declare_table": "c"}], "must be DeclareTableRequest"),
            ([{"declare_table": {"id": ["c"]}}, {"deregister_table": {"id": []}}], "table id"),
            (
                [{"delete_table_versions": {"id": ["a"], "ranges": [{"start_version": 1}]}}],
                "end_version",
            ),
            ([{"create_table_version": {"id": ["a"], "version": "2"}}], "must be int"),
        ],
    )
    async def test_bad_input_is_invalid_input_and_changes_nothing(
        self, ns: DirectoryNamespace, root: Path, operations: Any, says: str
    ) -> None:
        await table_with_versions(ns, ["a"])
        before = disk_state(root)
        with pytest.raises(errors.InvalidInputError) as caught:
            await ns.batch_commit_tables({"operations": operations})
        assert says in str(caught.value)
        assert disk_state(root) == before
