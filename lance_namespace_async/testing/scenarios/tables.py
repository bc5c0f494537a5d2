"""Scenarios of the table operations: DeclareTable, RegisterTable, DeregisterTable,
DescribeTable, TableExists, DropTable, RenameTable, ListTables, ListAllTables,
ListTableVersions, RestoreTable, and names with unusual characters (registered by
the package)."""

from __future__ import annotations

import functools

from ... import errors
from ...models import JsonArrowSchema, TableBasicStats
from .._kit import Kit, ScenarioSkipped
from .._scenario import (
    CREATE,
    EXIST_OK,
    OVERWRITE,
    UNUSUAL_NAMES,
    check_pages,
    gone,
    scenario,
    table_gone,
)

# == DeclareTable ==========================================================================


@scenario()
async def declare_table_reserves_a_table_without_data(kit: Kit) -> None:
    """DeclareTable reserves a table and answers its location: the table exists, is listed,
    DescribeTable answers the same location and (asked with check_declared) that it is
    only declared; data written at the location makes it a real table."""
    table = kit.table("t")
    declared = await kit.ns.declare_table({"id": table})
    assert isinstance(declared.location, str)
    assert declared.location
    await kit.ns.table_exists({"id": table})
    assert await kit.tables() == ["t"]
    described = await kit.ns.describe_table({"id": table, "check_declared": True})
    assert described.location == declared.location
    assert described.is_only_declared is True, described.is_only_declared
    await kit.write(declared.location, 2, options=kit.storage_options(declared))
    written = await kit.ns.describe_table({"id": table, "check_declared": True})
    assert written.is_only_declared is False, written.is_only_declared


@scenario(params=("declared", "written"))
async def declare_table_refuses_an_existing_table(kit: Kit, state: str) -> None:
    """DeclareTable of a table that exists (declared, or with data) is TableAlreadyExists
    (5), and the table keeps its location and data."""
    table = kit.table("t")
    if state == "declared":
        await kit.ns.declare_table({"id": table})
    else:
        await kit.create_table(table)
    await kit.refuses(errors.TableAlreadyExistsError, kit.ns.declare_table, {"id": table})


@scenario()
async def declare_table_needs_its_namespace(kit: Kit) -> None:
    """DeclareTable in a namespace that does not exist is NamespaceNotFound (1), and
    neither the table nor the namespace appears."""
    missing = kit.child("missing")
    await kit.refuses(
        errors.NamespaceNotFoundError, kit.ns.declare_table, {"id": kit.table("t", missing)}
    )
    await gone(kit, missing)


# == RegisterTable / DeregisterTable =======================================================


async def _loose_table(kit: Kit, rows: int = 5) -> str:
    """A Lance table outside the catalog: written through a declared table that is then
    deregistered (so the kit needs no knowledge of the backend's storage layout)."""
    location = await kit.create_table(kit.table("loose"), rows)
    await kit.ns.deregister_table({"id": kit.table("loose")})
    kit.forget_later(location)
    return location


@scenario()
async def register_table_registers_an_existing_table(kit: Kit) -> None:
    """RegisterTable of a Lance table's location makes it a table of the namespace: it
    exists, is listed, DescribeTable answers that location, and its data is readable."""
    location = await _loose_table(kit)
    registered = await kit.ns.register_table({"id": kit.table("r"), "location": location})
    assert registered.location in (location, None)
    await kit.ns.table_exists({"id": kit.table("r")})
    assert await kit.tables() == ["r"]
    described = await kit.ns.describe_table({"id": kit.table("r"), "load_detailed_metadata": True})
    assert described.location == location
    assert described.version == 1
    assert await kit.count_rows(location) == 5


@scenario(params=("default", *CREATE))
async def register_table_mode_create_refuses_an_existing_table(kit: Kit, mode: str) -> None:
    """RegisterTable with mode Create (the default) of a table that exists is
    TableAlreadyExists (5), and the table keeps its location."""
    location = await _loose_table(kit)
    await kit.create_table(kit.table("t"))
    request = {"id": kit.table("t"), "location": location}
    if mode != "default":
        request["mode"] = mode
    await kit.refuses(errors.TableAlreadyExistsError, kit.ns.register_table, request)


@scenario(params=OVERWRITE)
async def register_table_mode_overwrite_replaces_the_registration(kit: Kit, mode: str) -> None:
    """RegisterTable with mode Overwrite of a table that exists points it at the new
    location (the old location's data is left alone)."""
    location = await _loose_table(kit)
    old = await kit.create_table(kit.table("t"), rows=2)
    await kit.ns.register_table({"id": kit.table("t"), "location": location, "mode": mode})
    kit.forget_later(old)
    described = await kit.ns.describe_table({"id": kit.table("t")})
    assert described.location == location
    assert await kit.count_rows(old) == 2


@scenario()
async def register_table_needs_its_namespace(kit: Kit) -> None:
    """RegisterTable in a namespace that does not exist is NamespaceNotFound (1)."""
    location = await _loose_table(kit)
    missing = kit.child("missing")
    await kit.refuses(
        errors.NamespaceNotFoundError,
        kit.ns.register_table,
        {"id": kit.table("r", missing), "location": location},
    )
    await gone(kit, missing)


@scenario()
async def register_table_refuses_a_location_without_a_lance_table(kit: Kit) -> None:
    """RegisterTable of a location where no Lance table is stored is InvalidInput (13),
    and nothing changes (a later DropTable could otherwise delete whatever is there)."""
    location = await _loose_table(kit)
    await kit.refuses(
        errors.InvalidInputError,
        kit.ns.register_table,
        {"id": kit.table("r"), "location": location.rstrip("/") + "_nothing_here"},
    )


@scenario()
async def register_table_refuses_another_tables_location(kit: Kit) -> None:
    """RegisterTable of the location of a table of the catalog under another name is
    InvalidInput (13), and nothing changes: dropping the second name would delete the
    first table's data."""
    location = await kit.create_table(kit.table("t"))
    await kit.refuses(
        errors.InvalidInputError,
        kit.ns.register_table,
        {"id": kit.table("r"), "location": location},
    )
    assert await kit.count_rows(location) == 3


@scenario()
async def drop_table_keeps_the_data_of_a_table_registered_outside_the_root(kit: Kit) -> None:
    """DropTable of a table registered at a location outside the storage root removes the
    table and keeps its data: a namespace deletes only what lives in its storage."""
    location = kit.settings.outside_location(f"kit_{kit.token}_outside")
    await kit.write(location, 4)
    kit.forget_later(location)
    await kit.ns.register_table({"id": kit.table("r"), "location": location})
    await kit.ns.drop_table({"id": kit.table("r")})
    await table_gone(kit, kit.table("r"))
    assert await kit.count_rows(location) == 4, "DropTable deleted data outside the root"


@scenario(nested=True)
async def a_table_and_a_namespace_never_share_a_name(kit: Kit) -> None:
    """Names are unique among a namespace's tables and namespaces: DeclareTable of a
    child namespace's name is TableAlreadyExists (5), CreateNamespace (any mode) of a
    table's name is NamespaceAlreadyExists (2), and nothing changes."""
    await kit.ns.create_namespace({"id": kit.child("both")})
    await kit.refuses(
        errors.TableAlreadyExistsError, kit.ns.declare_table, {"id": kit.table("both")}
    )
    await kit.ns.declare_table({"id": kit.table("t")})
    for mode in (*CREATE, *EXIST_OK, *OVERWRITE):
        await kit.refuses(
            errors.NamespaceAlreadyExistsError,
            kit.ns.create_namespace,
            {"id": kit.child("t"), "mode": mode},
        )


@scenario()
async def deregister_table_removes_the_entry_and_keeps_the_data(kit: Kit) -> None:
    """DeregisterTable removes a table from the namespace and answers its location; the
    data stays readable there."""
    location = await kit.create_table(kit.table("t"), rows=4)
    deregistered = await kit.ns.deregister_table({"id": kit.table("t")})
    kit.forget_later(location)
    assert deregistered.location in (location, None)
    await table_gone(kit, kit.table("t"))
    assert await kit.tables() == []
    assert await kit.count_rows(location) == 4


@scenario()
async def deregister_table_of_a_missing_table_is_not_found(kit: Kit) -> None:
    """DeregisterTable of a table that does not exist is TableNotFound (4)."""
    await kit.refuses(errors.TableNotFoundError, kit.ns.deregister_table, {"id": kit.table("t")})


# == DescribeTable / TableExists ===========================================================


@scenario()
async def describe_table_reads_the_latest_version_with_details(kit: Kit) -> None:
    """DescribeTable with load_detailed_metadata answers the latest version, the Arrow
    schema and the table's statistics."""
    location = await kit.create_table(kit.table("t"), rows=4)
    await kit.write(location, 1, mode="append")
    described = await kit.ns.describe_table({"id": kit.table("t"), "load_detailed_metadata": True})
    assert described.location == location
    assert described.version == 2
    assert isinstance(described.schema, JsonArrowSchema), described.schema
    assert [f.name for f in described.schema.fields] == ["x"]
    assert isinstance(described.stats, TableBasicStats), described.stats
    assert described.stats.num_fragments == 2


@scenario()
async def describe_table_reads_an_older_version(kit: Kit) -> None:
    """DescribeTable of an older ``version`` answers that version."""
    location = await kit.create_table(kit.table("t"))
    await kit.write(location, 1, mode="append")
    old = await kit.ns.describe_table(
        {"id": kit.table("t"), "version": 1, "load_detailed_metadata": True}
    )
    assert old.version == 1


@scenario()
async def describe_table_of_a_missing_version_is_table_version_not_found(kit: Kit) -> None:
    """DescribeTable of a version the table does not have is TableVersionNotFound (11)."""
    await kit.create_table(kit.table("t"))
    await kit.refuses(
        errors.TableVersionNotFoundError,
        kit.ns.describe_table,
        {"id": kit.table("t"), "version": 77},
    )


@scenario()
async def describe_table_of_a_missing_table_is_not_found(kit: Kit) -> None:
    """DescribeTable of a table that does not exist is TableNotFound (4)."""
    await kit.refuses(errors.TableNotFoundError, kit.ns.describe_table, {"id": kit.table("t")})


@scenario()
async def table_exists_answers_for_existing_and_missing_tables(kit: Kit) -> None:
    """TableExists succeeds for a declared and for a written table, and is TableNotFound
    (4) for a missing one and for a namespace's name."""
    await kit.ns.declare_table({"id": kit.table("declared")})
    await kit.create_table(kit.table("written"))
    await kit.ns.table_exists({"id": kit.table("declared")})
    await kit.ns.table_exists({"id": kit.table("written")})
    await kit.refuses(errors.TableNotFoundError, kit.ns.table_exists, {"id": kit.table("missing")})
    if not kit.settings.flat:
        await kit.ns.create_namespace({"id": kit.child("inner")})
        await kit.refuses(
            errors.TableNotFoundError, kit.ns.table_exists, {"id": kit.child("inner")}
        )


@scenario()
async def table_exists_of_a_version(kit: Kit) -> None:
    """TableExists of a version the table has succeeds; of one it lacks it is
    TableVersionNotFound (11)."""
    await kit.create_table(kit.table("t"))
    await kit.ns.table_exists({"id": kit.table("t"), "version": 1})
    await kit.refuses(
        errors.TableVersionNotFoundError, kit.ns.table_exists, {"id": kit.table("t"), "version": 77}
    )


# == DropTable =============================================================================


@scenario()
async def drop_table_removes_the_entry_and_the_data(kit: Kit) -> None:
    """DropTable removes the table from its namespace and deletes its data; a declared-only
    table is dropped too."""
    location = await kit.create_table(kit.table("t"))
    await kit.ns.declare_table({"id": kit.table("declared")})
    dropped = await kit.ns.drop_table({"id": kit.table("t")})
    assert dropped.location in (location, None)
    await kit.ns.drop_table({"id": kit.table("declared")})
    await table_gone(kit, kit.table("t"))
    assert await kit.tables() == []
    assert not await kit.exists_on_storage(location), "DropTable left the data"


@scenario()
async def drop_table_of_a_missing_table_is_not_found(kit: Kit) -> None:
    """DropTable of a table that does not exist is TableNotFound (4)."""
    await kit.refuses(errors.TableNotFoundError, kit.ns.drop_table, {"id": kit.table("t")})


# == RenameTable ===========================================================================


@scenario()
async def rename_table_renames_within_its_namespace(kit: Kit) -> None:
    """RenameTable with only new_table_name renames the table in its namespace; the data
    stays readable through the new name and the old name is gone."""
    location = await kit.create_table(kit.table("t"), rows=2)
    await kit.ns.rename_table({"id": kit.table("t"), "new_table_name": "u"})
    assert await kit.tables() == ["u"]
    described = await kit.ns.describe_table({"id": kit.table("u")})
    assert isinstance(described.location, str)
    assert await kit.count_rows(described.location) == 2
    await table_gone(kit, kit.table("t"))
    del location


@scenario()
async def rename_table_moves_it_to_another_namespace(kit: Kit) -> None:
    """RenameTable with new_namespace_id moves the table there under its new name."""
    other = kit.child("other")
    await kit.ns.create_namespace({"id": other})
    await kit.create_table(kit.table("t"), rows=2)
    await kit.ns.rename_table(
        {"id": kit.table("t"), "new_table_name": "u", "new_namespace_id": other}
    )
    assert await kit.tables(other) == ["u"]
    assert await kit.tables() == []
    described = await kit.ns.describe_table({"id": kit.table("u", other)})
    assert isinstance(described.location, str)
    assert await kit.count_rows(described.location) == 2


@scenario()
async def rename_table_refuses_an_existing_target(kit: Kit) -> None:
    """RenameTable onto a name that is taken is TableAlreadyExists (5); both tables stay."""
    await kit.create_table(kit.table("t"))
    await kit.create_table(kit.table("u"))
    await kit.refuses(
        errors.TableAlreadyExistsError,
        kit.ns.rename_table,
        {"id": kit.table("t"), "new_table_name": "u"},
    )


@scenario()
async def rename_table_of_a_missing_table_is_not_found(kit: Kit) -> None:
    """RenameTable of a table that does not exist is TableNotFound (4)."""
    await kit.refuses(
        errors.TableNotFoundError,
        kit.ns.rename_table,
        {"id": kit.table("t"), "new_table_name": "u"},
    )


@scenario()
async def rename_table_into_a_missing_namespace_is_not_found(kit: Kit) -> None:
    """RenameTable into a namespace that does not exist is NamespaceNotFound (1); the
    table stays where it was."""
    await kit.create_table(kit.table("t"))
    missing = kit.child("missing")
    await kit.refuses(
        errors.NamespaceNotFoundError,
        kit.ns.rename_table,
        {"id": kit.table("t"), "new_table_name": "u", "new_namespace_id": missing},
    )
    await gone(kit, missing)


# == ListTables / ListAllTables ============================================================


@scenario()
async def list_tables_lists_the_tables_of_a_namespace(kit: Kit) -> None:
    """ListTables answers the names of a namespace's tables (declared and written), each
    once, and not its child namespaces nor other namespaces' tables."""
    await kit.ns.declare_table({"id": kit.table("b")})
    await kit.create_table(kit.table("a"))
    other = kit.child("other")
    await kit.ns.create_namespace({"id": other})
    await kit.ns.declare_table({"id": kit.table("elsewhere", other)})
    assert sorted(await kit.tables()) == ["a", "b"]
    assert await kit.tables(other) == ["elsewhere"]


@scenario()
async def list_tables_of_a_missing_namespace_is_not_found(kit: Kit) -> None:
    """ListTables of a namespace that does not exist is NamespaceNotFound (1)."""
    await kit.refuses(
        errors.NamespaceNotFoundError, kit.ns.list_tables, {"id": kit.child("missing")}
    )


@scenario()
async def list_tables_paginates_many_tables(kit: Kit) -> None:
    """ListTables with a small ``limit`` over many tables (1,000 by default): every page
    holds at most ``limit`` names, following ``page_token`` reaches every table exactly
    once, and the last page carries no token. Each listed name drops its table."""
    names = [f"t{i:04d}" for i in range(kit.settings.many)]
    await kit.all_at_once(
        functools.partial(kit.ns.declare_table, {"id": kit.table(name)}) for name in names
    )
    limit = kit.settings.page_size
    pages = await kit.pages("list_tables", {"id": kit.home, "limit": limit}, "tables")
    check_pages(pages, limit, list, names)
    listed = [name for page in pages for name in page]
    await kit.all_at_once(
        functools.partial(kit.ns.drop_table, {"id": kit.table(name)}) for name in listed
    )
    assert await kit.tables() == []


@scenario()
async def list_all_tables_lists_the_tables_of_every_namespace(kit: Kit) -> None:
    """ListAllTables answers the full string identifiers (joined by the delimiter) of
    tables in every namespace, including the scenario's, each once."""
    other = kit.child("other")
    await kit.ns.create_namespace({"id": other})
    await kit.ns.declare_table({"id": kit.table("t")})
    await kit.ns.declare_table({"id": kit.table("u", other)})
    delimiter = kit.ns.delimiter
    listed = await kit.listed("list_all_tables", {"limit": kit.settings.page_size}, "tables")
    assert len(listed) == len(set(listed)), "a table listed twice"
    assert listed == sorted(listed), "the pages are not in order"
    for table in (kit.table("t"), kit.table("u", other)):
        assert delimiter.join(table) in listed, f"{table} not listed"


@scenario()
async def list_all_tables_honours_delimiter_and_include_declared(kit: Kit) -> None:
    """ListAllTables joins identifiers with the request's ``delimiter``, and with
    ``include_declared=false`` leaves out the tables that are only declared."""
    await kit.ns.declare_table({"id": kit.table("declared")})
    await kit.create_table(kit.table("written"))
    joined = "::".join
    listed = await kit.listed("list_all_tables", {"delimiter": "::"}, "tables")
    assert joined(kit.table("declared")) in listed, listed
    assert joined(kit.table("written")) in listed, listed
    with_data = await kit.listed(
        "list_all_tables", {"delimiter": "::", "include_declared": False}, "tables"
    )
    assert joined(kit.table("written")) in with_data, with_data
    assert joined(kit.table("declared")) not in with_data, "a declared table listed"


@scenario()
async def crawl_reaches_every_table_through_pages_of_one(kit: Kit) -> None:
    """Following ListNamespaces and ListTables page by page (``limit`` 1, as
    ``lance_namespace_async.crawl`` does with page_size=1) from the scenario's
    namespace reaches every table below it exactly once, nested ones included."""
    from ..._facade.crawl import crawl

    expected = [kit.table("t"), kit.table("u")]
    await kit.ns.declare_table({"id": expected[0]})
    await kit.create_table(expected[1])
    if not kit.settings.flat:
        inner = kit.child("inner")
        await kit.ns.create_namespace({"id": inner})
        expected.append(kit.table("deep", inner))
        await kit.ns.declare_table({"id": expected[-1]})
    found = [table.id async for table in crawl(kit.backend, kit.home, concurrency=4, page_size=1)]
    assert sorted(found) == sorted(tuple(table) for table in expected)


# == ListTableVersions / RestoreTable ======================================================


@scenario(params=("ascending", "descending"))
async def list_table_versions_lists_every_version(kit: Kit, order: str) -> None:
    """ListTableVersions answers every version of a table; with descending=true newest
    first."""
    location = await kit.create_table(kit.table("t"))
    await kit.write(location, 1, mode="append")
    await kit.write(location, 1, mode="append")
    request = {"id": kit.table("t"), "descending": order == "descending"}
    listed = await kit.ns.list_table_versions(request)
    versions = [v.version for v in listed.versions]
    if order == "descending":
        assert versions == [3, 2, 1], versions
    else:
        assert sorted(versions) == [1, 2, 3], versions


@scenario()
async def list_table_versions_of_a_missing_table_is_not_found(kit: Kit) -> None:
    """ListTableVersions of a table that does not exist is TableNotFound (4)."""
    await kit.refuses(errors.TableNotFoundError, kit.ns.list_table_versions, {"id": kit.table("t")})


@scenario()
async def restore_table_makes_an_old_version_the_latest(kit: Kit) -> None:
    """RestoreTable of an older version makes its data the latest version's."""
    location = await kit.create_table(kit.table("t"), rows=3)
    await kit.write(location, 1, mode="overwrite")
    await kit.ns.restore_table({"id": kit.table("t"), "version": 1})
    assert await kit.count_rows(location) == 3
    described = await kit.ns.describe_table({"id": kit.table("t"), "load_detailed_metadata": True})
    assert described.version == 3


@scenario()
async def restore_table_of_a_missing_version_is_table_version_not_found(kit: Kit) -> None:
    """RestoreTable of a version the table does not have is TableVersionNotFound (11)."""
    await kit.create_table(kit.table("t"))
    await kit.refuses(
        errors.TableVersionNotFoundError,
        kit.ns.restore_table,
        {"id": kit.table("t"), "version": 77},
    )


@scenario()
async def restore_table_of_a_missing_table_is_not_found(kit: Kit) -> None:
    """RestoreTable of a table that does not exist is TableNotFound (4)."""
    await kit.refuses(
        errors.TableNotFoundError, kit.ns.restore_table, {"id": kit.table("t"), "version": 1}
    )


# == identifiers ===========================================================================


@scenario(params=UNUSUAL_NAMES)
async def identifiers_with_unicode_and_spaces(kit: Kit, name: str) -> None:
    """A namespace and a table named with accents, CJK characters, spaces or emoji work
    like any other: created, listed under exactly that name, described, written, read
    and dropped. A backend whose catalog cannot store such a name must refuse it with
    InvalidInput (13) up front (the scenario is then skipped)."""
    namespace = kit.child(name)
    try:
        await kit.ns.create_namespace({"id": namespace})
    except errors.InvalidInputError as exc:
        await gone(kit, namespace)
        raise ScenarioSkipped(
            f"namespace name {name!r} refused by {kit.settings.impl}: {exc}"
        ) from None
    assert namespace[-1] in await kit.namespaces(namespace[:-1])
    await kit.ns.describe_namespace({"id": namespace})
    table = kit.table(name, namespace)
    try:
        location = await kit.create_table(table, rows=2)
    except errors.InvalidInputError as exc:
        await table_gone(kit, table)
        raise ScenarioSkipped(
            f"table name {name!r} refused by {kit.settings.impl}: {exc}"
        ) from None
    assert await kit.tables(namespace) == [name]
    await kit.ns.table_exists({"id": table})
    described = await kit.ns.describe_table({"id": table})
    assert described.location == location
    assert await kit.count_rows(location) == 2
    await kit.ns.drop_table({"id": table})
    await kit.ns.drop_namespace({"id": namespace})
    await gone(kit, namespace)


# == list_operations =======================================================================


@scenario()
async def every_unlisted_operation_answers_unsupported(kit: Kit) -> None:
    """An operation the backend's ``list_operations()`` leaves out answers
    UnsupportedOperationError, code 0, to a well-formed request (every field the spec
    requires) on an existing table: what it lists is what works."""
    import pyarrow as pa

    from ..._core.operations import OPERATIONS
    from ..._core.request_samples import sample_request

    listed = set(kit.backend.list_operations())
    table = kit.table("t")
    await kit.create_table(table)
    for operation in OPERATIONS:
        if operation.method in listed:
            continue
        request = sample_request(operation.request_model, table)
        call = getattr(kit.ns, operation.method)
        answer: object = None
        try:
            if operation.takes_data:
                await call(request, pa.table({"x": [1]}))
            else:
                await call(request)
        except errors.LanceNamespaceError as exc:
            answer = exc
        what = f"{operation.operation_id}, not listed, answered {answer!r}"
        assert type(answer) is errors.UnsupportedOperationError, what
        assert answer.code == 0, what
