"""Scenarios of a table's branches: CreateTableBranch, ListTableBranches,
DeleteTableBranch, and the ``branch`` of the operations that take one.

Registered with the catalog scenarios (imported at the end of the package ``scenarios``).
A branch is the table's own (Lance keeps it beside main): writes to it leave main's
rows and version as they were, which the scenarios check from storage with pylance.
An operation addressed to a branch acts on it or is refused with UnsupportedOperation
(code 0); it never acts on main.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from .. import errors
from ._kit import Kit
from ._scenario import scenario
from .data_scenarios import _created, _rows


async def _count(kit: Kit, table: list[str], branch: str | None = None) -> int:
    body: dict[str, Any] = {"id": table}
    if branch is not None:
        body["branch"] = branch
    counted = (await kit.ns.count_table_rows(body)).count
    assert isinstance(counted, int), counted
    return counted


async def _branches(kit: Kit, table: list[str]) -> dict[str, Any]:
    listed = await kit.ns.list_table_branches({"id": table})
    return dict(listed.branches.additional_properties)


async def _main_of(kit: Kit, location: str) -> tuple[int, int]:
    """Main's (version, rows) read from storage with pylance."""
    import anyio.to_thread
    import lance

    options = kit.storage_options() or None

    def read() -> tuple[int, int]:
        dataset = lance.dataset(location, storage_options=options)
        return int(dataset.version), int(dataset.count_rows())

    return await anyio.to_thread.run_sync(read)


@scenario()
async def table_branches_are_created_listed_and_deleted(kit: Kit) -> None:
    """CreateTableBranch makes a branch at main's newest version (listed by
    ListTableBranches with that parent version); rows inserted on it are the branch's
    only (main's rows and version read from storage are unchanged); a branch made
    from another branch starts with its rows. Creating an existing branch answers
    TableBranchAlreadyExists (23); a deleted branch is no longer listed, and an
    operation on it answers TableBranchNotFound (22)."""
    table, location = await _created(kit, rows=3)
    await kit.ns.create_table_branch({"id": table, "name": "dev"})
    listed = await _branches(kit, table)
    assert list(listed) == ["dev"], listed
    assert listed["dev"].parent_version == 1, listed["dev"]
    await kit.ns.insert_into_table({"id": table, "branch": "dev"}, _rows(2, 3))
    assert await _count(kit, table, "dev") == 5
    assert await _count(kit, table) == 3
    assert await _main_of(kit, location) == (1, 3)
    await kit.refuses(
        errors.TableBranchAlreadyExistsError,
        kit.ns.create_table_branch,
        {"id": table, "name": "dev"},
    )
    await kit.ns.create_table_branch({"id": table, "name": "feature", "from_branch": "dev"})
    assert await _count(kit, table, "feature") == 5
    assert sorted(await _branches(kit, table)) == ["dev", "feature"]
    await kit.ns.delete_table_branch({"id": table, "name": "feature"})
    assert list(await _branches(kit, table)) == ["dev"]
    await kit.refuses(
        errors.TableBranchNotFoundError, kit.ns.count_table_rows, {"id": table, "branch": "feature"}
    )
    await kit.refuses(
        errors.TableBranchNotFoundError,
        kit.ns.delete_table_branch,
        {"id": table, "name": "feature"},
    )
    assert await _main_of(kit, location) == (1, 3)


@scenario()
async def a_branch_name_or_a_missing_branch_is_refused_before_anything_changes(
    kit: Kit,
) -> None:
    """A branch name that is no path segment (``a//b``, ``..``) is InvalidInput (13);
    a write or a read addressed to a branch the table lacks answers TableBranchNotFound
    (22); neither changes the table."""
    table, location = await _created(kit, rows=3)
    for name in ("a//b", ".."):
        await kit.refuses(
            errors.InvalidInputError, kit.ns.create_table_branch, {"id": table, "name": name}
        )
    await kit.refuses(
        errors.TableBranchNotFoundError,
        functools.partial(kit.ns.insert_into_table, data=_rows(1, 10)),
        {"id": table, "branch": "nope"},
    )
    await kit.refuses(
        errors.TableBranchNotFoundError, kit.ns.count_table_rows, {"id": table, "branch": "nope"}
    )
    assert await _branches(kit, table) == {}
    assert await _main_of(kit, location) == (1, 3)


@scenario()
async def operations_on_a_branch_act_on_it_never_on_main(kit: Kit) -> None:
    """UpdateTable, DeleteFromTable, MergeInsertIntoTable, QueryTable, DescribeTable,
    ListTableVersions, CreateTableTag, CreateTableScalarIndex and AlterTableAddColumns
    addressed to a branch act on the branch (checked by reading it back) or answer
    UnsupportedOperation (0); main's rows and version, read from storage, never change."""
    table, location = await _created(kit, rows=5)
    await kit.ns.create_table_branch({"id": table, "name": "dev"})
    on_dev = {"id": table, "branch": "dev"}

    async def acts(call: Callable[[], Awaitable[Any]]) -> Any:
        """The call's answer, or None where the backend refuses the branch (code 0)."""
        try:
            return await call()
        except errors.UnsupportedOperationError as exc:
            if exc.code != 0:
                raise AssertionError(f"UnsupportedOperation with code {exc.code}") from exc
            return None
        finally:
            assert await _main_of(kit, location) == (1, 5)

    if await acts(lambda: kit.ns.delete_from_table({**on_dev, "predicate": "id < 2"})):
        assert await _count(kit, table, "dev") == 3
    await acts(lambda: kit.ns.update_table({**on_dev, "updates": [["id", "id + 100"]]}))
    await acts(
        lambda: kit.ns.merge_insert_into_table(
            {**on_dev, "on": "id", "when_not_matched_insert_all": True}, _rows(1, 50)
        )
    )
    queried = await acts(
        lambda: kit.ns.query_table({**on_dev, "k": 100, "vector": None, "columns": None})
    )
    if queried is not None:
        assert queried.num_rows == await _count(kit, table, "dev")
    described = await acts(lambda: kit.ns.describe_table(on_dev))
    if described is not None:
        assert isinstance(described.version, int), described
        assert described.version > 1, described
    versions = await acts(lambda: kit.ns.list_table_versions(on_dev))
    if versions is not None and described is not None:
        assert max(v.version for v in versions.versions) == described.version
    await acts(lambda: kit.ns.create_table_tag({**on_dev, "tag": "on_dev", "version": 1}))
    await acts(
        lambda: kit.ns.create_table_scalar_index({**on_dev, "column": "id", "index_type": "BTREE"})
    )
    added = await acts(
        lambda: kit.ns.alter_table_add_columns(
            {**on_dev, "new_columns": [{"name": "twice", "expression": "id * 2"}]}
        )
    )
    if added is not None:
        dev = await kit.ns.query_table({**on_dev, "k": 100, "vector": None, "columns": None})
        assert "twice" in dev.column_names
        main = await kit.ns.query_table({"id": table, "k": 100, "vector": None, "columns": None})
        assert "twice" not in main.column_names
    assert await _count(kit, table) == 5
