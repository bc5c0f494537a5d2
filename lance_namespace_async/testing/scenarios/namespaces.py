"""Scenarios of the namespace operations: CreateNamespace, ListNamespaces,
DescribeNamespace, NamespaceExists and DropNamespace (registered by the package)."""

from __future__ import annotations

import functools

from ... import errors
from .._kit import Kit, properties_of
from .._scenario import (
    CASCADE,
    CREATE,
    EXIST_OK,
    FAIL,
    OVERWRITE,
    RESTRICT,
    SKIP,
    check_pages,
    gone,
    scenario,
)

# == CreateNamespace =======================================================================


@scenario(params=CREATE)
async def create_namespace_mode_create_refuses_an_existing_namespace(kit: Kit, mode: str) -> None:
    """CreateNamespace with mode Create (any spelling) creates a missing namespace and
    answers NamespaceAlreadyExists (2) for an existing one, which it leaves untouched."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child, "mode": mode, "properties": {"kit.v": "1"}})
    await kit.ns.namespace_exists({"id": child})
    await kit.refuses(
        errors.NamespaceAlreadyExistsError,
        kit.ns.create_namespace,
        {"id": child, "mode": mode, "properties": {"kit.v": "2"}},
    )


@scenario()
async def create_namespace_default_mode_is_create(kit: Kit) -> None:
    """CreateNamespace without a mode is Create: an existing namespace is
    NamespaceAlreadyExists (2), and nothing changes."""
    await kit.refuses(errors.NamespaceAlreadyExistsError, kit.ns.create_namespace, {"id": kit.home})


@scenario(params=EXIST_OK)
async def create_namespace_mode_exist_ok_keeps_the_existing_namespace(kit: Kit, mode: str) -> None:
    """CreateNamespace with mode ExistOk succeeds on an existing namespace and keeps it as
    it was: its properties are not replaced, its tables stay."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child, "properties": {"kit.v": "1"}})
    await kit.ns.declare_table({"id": kit.table("t", child)})
    kept = await kit.ns.create_namespace({"id": child, "mode": mode, "properties": {"kit.v": "2"}})
    assert properties_of(kept).get("kit.v") != "2", "ExistOk answered the new properties"
    described = properties_of(await kit.ns.describe_namespace({"id": child}))
    assert described.get("kit.v", "1") == "1", f"ExistOk changed the properties: {described}"
    assert await kit.tables(child) == ["t"]
    created = kit.child("b")
    await kit.ns.create_namespace({"id": created, "mode": mode})
    await kit.ns.namespace_exists({"id": created})


@scenario(params=OVERWRITE)
async def create_namespace_mode_overwrite_replaces_it_with_an_empty_one(
    kit: Kit, mode: str
) -> None:
    """CreateNamespace with mode Overwrite replaces an existing namespace by a new empty one
    with the new properties (its tables are gone), and creates a missing one."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child, "properties": {"kit.v": "1"}})
    await kit.create_table(kit.table("t", child))
    await kit.ns.create_namespace({"id": child, "mode": mode, "properties": {"kit.v": "2"}})
    described = properties_of(await kit.ns.describe_namespace({"id": child}))
    assert described.get("kit.v", "2") == "2", f"Overwrite kept the old properties: {described}"
    assert await kit.tables(child) == [], "Overwrite kept the tables"
    created = kit.child("b")
    await kit.ns.create_namespace({"id": created, "mode": mode})
    await kit.ns.namespace_exists({"id": created})


@scenario()
async def create_namespace_stores_its_properties(kit: Kit) -> None:
    """CreateNamespace stores the properties it is given: CreateNamespace and
    DescribeNamespace answer them (a server may add entries, or drop some, but never
    answers a value it was not given)."""
    child = kit.child("a")
    given = {"kit.owner": "ana", "kit.note": "données ok"}
    created = await kit.ns.create_namespace({"id": child, "properties": given})
    for answer in (
        properties_of(created),
        properties_of(await kit.ns.describe_namespace({"id": child})),
    ):
        for key, value in given.items():
            assert answer.get(key, value) == value, f"{key} came back as {answer[key]!r}"


@scenario(nested=True)
async def create_namespace_needs_its_parent(kit: Kit) -> None:
    """CreateNamespace inside a namespace that does not exist is NamespaceNotFound (1) and
    creates nothing (neither the namespace nor its missing parent)."""
    missing = [*kit.home, "missing"]
    await kit.refuses(
        errors.NamespaceNotFoundError, kit.ns.create_namespace, {"id": [*missing, "b"]}
    )
    await gone(kit, missing)


@scenario(params=("empty", "delimiter", "control character"))
async def create_namespace_refuses_bad_names(kit: Kit, kind: str) -> None:
    """A namespace name that is empty, contains the identifier delimiter, or contains a
    control character is InvalidInput (13), and nothing is created."""
    name = {"empty": "", "delimiter": f"a{kit.ns.delimiter}b", "control character": "bell\x07"}[
        kind
    ]
    await kit.refuses(
        errors.InvalidInputError, kit.ns.create_namespace, {"id": [*kit.parent_of_children(), name]}
    )


@scenario()
async def create_namespace_refuses_an_unknown_mode(kit: Kit) -> None:
    """CreateNamespace with a mode that is not Create, ExistOk or Overwrite is
    InvalidInput (13), for a new and for an existing namespace, and changes nothing."""
    await kit.refuses(
        errors.InvalidInputError,
        kit.ns.create_namespace,
        {"id": kit.child("a"), "mode": "Sometimes"},
    )
    await kit.refuses(
        errors.InvalidInputError, kit.ns.create_namespace, {"id": kit.home, "mode": "Sometimes"}
    )


# == ListNamespaces ========================================================================


@scenario()
async def list_namespaces_lists_the_children(kit: Kit) -> None:
    """ListNamespaces of a namespace answers the names of its children, each once, and
    not the names of its tables."""
    for name in ("c", "a", "b"):
        await kit.ns.create_namespace({"id": kit.child(name)})
    await kit.ns.declare_table({"id": kit.table("t")})
    listed = await kit.namespaces(kit.parent_of_children())
    assert sorted(kit.child_names(listed)) == ["a", "b", "c"], listed
    assert len(listed) == len(set(listed)), f"a name listed twice: {listed}"
    if not kit.settings.flat:
        assert await kit.namespaces(kit.child("a")) == []


@scenario()
async def list_namespaces_of_a_missing_namespace_is_not_found(kit: Kit) -> None:
    """ListNamespaces of a namespace that does not exist is NamespaceNotFound (1)."""
    await kit.refuses(
        errors.NamespaceNotFoundError, kit.ns.list_namespaces, {"id": kit.child("missing")}
    )


@scenario()
async def list_namespaces_paginates_many_children(kit: Kit) -> None:
    """ListNamespaces with a small ``limit`` over many children (1,000 by default): every
    page holds at most ``limit`` names, following ``page_token`` reaches every child
    exactly once, and the last page carries no token. Each listed name drops its
    namespace."""
    names = [f"n{i:04d}" for i in range(kit.settings.many)]
    ids = [kit.child(name) for name in names]
    await kit.all_at_once(
        functools.partial(kit.ns.create_namespace, {"id": namespace}) for namespace in ids
    )
    limit = kit.settings.page_size
    pages = await kit.pages(
        "list_namespaces", {"id": kit.parent_of_children(), "limit": limit}, "namespaces"
    )
    check_pages(pages, limit, kit.child_names, names)
    await kit.all_at_once(
        functools.partial(kit.ns.drop_namespace, {"id": namespace}) for namespace in ids
    )


# == DescribeNamespace / NamespaceExists ===================================================


@scenario()
async def describe_namespace_of_a_missing_namespace_is_not_found(kit: Kit) -> None:
    """DescribeNamespace of a namespace that does not exist is NamespaceNotFound (1)."""
    await kit.refuses(
        errors.NamespaceNotFoundError, kit.ns.describe_namespace, {"id": kit.child("missing")}
    )


@scenario()
async def describe_namespace_the_root_always_exists(kit: Kit) -> None:
    """The root namespace (the empty identifier) always exists: NamespaceExists and
    DescribeNamespace of it succeed, and so they do for the kit root."""
    await kit.ns.namespace_exists({"id": []})
    await kit.ns.describe_namespace({"id": []})
    await kit.ns.namespace_exists({"id": list(kit.settings.root)})
    await kit.ns.describe_namespace({"id": list(kit.settings.root)})


@scenario()
async def namespace_exists_answers_for_existing_and_missing_namespaces(kit: Kit) -> None:
    """NamespaceExists succeeds for an existing namespace and is NamespaceNotFound (1) for
    a missing one, and for a table's name (a table is not a namespace)."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child})
    await kit.ns.namespace_exists({"id": child})
    await kit.ns.namespace_exists({"id": kit.home})
    await kit.refuses(
        errors.NamespaceNotFoundError, kit.ns.namespace_exists, {"id": kit.child("missing")}
    )
    await kit.ns.declare_table({"id": kit.table("t")})
    if not kit.settings.flat:
        await kit.refuses(
            errors.NamespaceNotFoundError, kit.ns.namespace_exists, {"id": kit.table("t")}
        )


# == DropNamespace =========================================================================


@scenario()
async def drop_namespace_drops_an_empty_namespace(kit: Kit) -> None:
    """DropNamespace with the default mode and behavior drops an empty namespace: it is
    gone afterwards and no longer listed."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child})
    await kit.ns.drop_namespace({"id": child})
    await gone(kit, child)
    assert kit.child_names(await kit.namespaces(kit.parent_of_children())) == []


@scenario(params=(*FAIL, "default"))
async def drop_namespace_mode_fail_on_a_missing_namespace_is_not_found(kit: Kit, mode: str) -> None:
    """DropNamespace with mode Fail (also the default) of a namespace that does not
    exist is NamespaceNotFound (1); of an existing empty one it drops it."""
    child = kit.child("a")
    request = {"id": child} if mode == "default" else {"id": child, "mode": mode}
    await kit.refuses(errors.NamespaceNotFoundError, kit.ns.drop_namespace, request)
    await kit.ns.create_namespace({"id": child})
    await kit.ns.drop_namespace(request)
    await gone(kit, child)


@scenario(params=SKIP)
async def drop_namespace_mode_skip_ignores_a_missing_namespace(kit: Kit, mode: str) -> None:
    """DropNamespace with mode Skip of a namespace that does not exist succeeds and
    changes nothing; of an existing empty one it drops it."""
    child = kit.child("a")
    before = await kit.snapshot()
    await kit.ns.drop_namespace({"id": child, "mode": mode})
    assert await kit.snapshot() == before
    await gone(kit, child)
    await kit.ns.create_namespace({"id": child})
    await kit.ns.drop_namespace({"id": child, "mode": mode})
    await gone(kit, child)


@scenario(params=(*RESTRICT, "default"))
async def drop_namespace_behavior_restrict_refuses_a_namespace_with_tables(
    kit: Kit, behavior: str
) -> None:
    """DropNamespace with behavior Restrict (also the default) of a namespace holding a
    table is NamespaceNotEmpty (3): the namespace, the table and its data stay."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child})
    location = await kit.create_table(kit.table("t", child))
    request = {"id": child} if behavior == "default" else {"id": child, "behavior": behavior}
    await kit.refuses(errors.NamespaceNotEmptyError, kit.ns.drop_namespace, request)
    assert await kit.count_rows(location) == 3


@scenario(nested=True)
async def drop_namespace_behavior_restrict_refuses_a_namespace_with_children(kit: Kit) -> None:
    """DropNamespace with behavior Restrict of a namespace holding only a child namespace
    is NamespaceNotEmpty (3), and both namespaces stay."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child})
    await kit.ns.create_namespace({"id": [*child, "inner"]})
    await kit.refuses(
        errors.NamespaceNotEmptyError, kit.ns.drop_namespace, {"id": child, "behavior": "Restrict"}
    )


@scenario(params=CASCADE)
async def drop_namespace_behavior_cascade_drops_its_tables_and_their_data(
    kit: Kit, behavior: str
) -> None:
    """DropNamespace with behavior Cascade drops a namespace with its tables (written and
    only declared): the namespace and the tables are gone, and so is the tables' data."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child})
    location = await kit.create_table(kit.table("t", child))
    await kit.ns.declare_table({"id": kit.table("declared", child)})
    await kit.ns.drop_namespace({"id": child, "behavior": behavior})
    await gone(kit, child)
    assert not await kit.exists_on_storage(location), "Cascade left the table's data"


@scenario(nested=True)
async def drop_namespace_behavior_cascade_drops_child_namespaces(kit: Kit) -> None:
    """DropNamespace with behavior Cascade drops child namespaces and their tables too."""
    child = kit.child("a")
    inner = [*child, "inner"]
    await kit.ns.create_namespace({"id": child})
    await kit.ns.create_namespace({"id": inner})
    location = await kit.create_table(kit.table("t", inner))
    await kit.ns.drop_namespace({"id": child, "behavior": "Cascade"})
    await gone(kit, inner)
    await gone(kit, child)
    assert not await kit.exists_on_storage(location), "Cascade left the table's data"


@scenario()
async def drop_namespace_refuses_the_root(kit: Kit) -> None:
    """DropNamespace of the root namespace (the empty identifier) is InvalidInput (13):
    the root's lifecycle is outside the specification."""
    await kit.refuses(errors.InvalidInputError, kit.ns.drop_namespace, {"id": []})
    await kit.ns.namespace_exists({"id": kit.home})


@scenario(params=("mode", "behavior"))
async def drop_namespace_refuses_an_unknown_mode_or_behavior(kit: Kit, key: str) -> None:
    """DropNamespace with an unknown mode or behavior is InvalidInput (13) and the
    namespace stays."""
    child = kit.child("a")
    await kit.ns.create_namespace({"id": child})
    await kit.refuses(
        errors.InvalidInputError, kit.ns.drop_namespace, {"id": child, key: "Explode"}
    )
