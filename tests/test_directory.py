"""The directory backend (impl="dir"), operation by operation, mode by mode (seed 002)."""

from __future__ import annotations

from pathlib import Path

import lance
import pytest
from conftest import disk_state, sample_table

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.directory import DirectoryNamespace
from lance_namespace_async.models import (
    CreateNamespaceRequest,
    CreateNamespaceRequestProperties,
    ListTablesRequest,
)


async def write_table(ns: DirectoryNamespace, table_id: list[str], rows: int = 3) -> str:
    """Declare a table through ours and write real Lance data at its location."""
    declared = await ns.declare_table({"id": table_id})
    lance.write_dataset(sample_table(rows), declared.location, mode="overwrite")
    return declared.location


def props(response: object) -> dict[str, str]:
    value = getattr(response, "properties", None)
    return dict(value.additional_properties) if hasattr(value, "additional_properties") else {}


# -- CreateNamespace -----------------------------------------------------------


class TestCreateNamespace:
    async def test_create_stores_properties(self, ns: DirectoryNamespace) -> None:
        request = CreateNamespaceRequest(
            id=["sales"], properties=CreateNamespaceRequestProperties.from_dict({"owner": "ana"})
        )
        created = await ns.create_namespace(request)
        assert props(created) == {"owner": "ana"}
        assert props(await ns.describe_namespace({"id": ["sales"]})) == {"owner": "ana"}

    @pytest.mark.parametrize("mode", ["Create", "CREATE", "create", None])
    async def test_create_mode_fails_when_it_exists(
        self, ns: DirectoryNamespace, mode: str | None
    ) -> None:
        await ns.create_namespace({"id": ["sales"]})
        with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
            await ns.create_namespace({"id": ["sales"], "mode": mode})
        assert caught.value.code == 2

    @pytest.mark.parametrize("mode", ["ExistOk", "EXIST_OK", "exist_ok", "existok"])
    async def test_exist_ok_keeps_the_existing_namespace(
        self, ns: DirectoryNamespace, mode: str
    ) -> None:
        await ns.create_namespace({"id": ["sales"], "properties": {"v": "1"}})
        await write_table(ns, ["sales", "orders"])
        again = await ns.create_namespace({"id": ["sales"], "mode": mode, "properties": {"v": "2"}})
        assert props(again) == {"v": "1"}
        assert (await ns.list_tables({"id": ["sales"]})).tables == ["orders"]

    @pytest.mark.parametrize("mode", ["Overwrite", "OVERWRITE", "overwrite"])
    async def test_overwrite_replaces_with_an_empty_namespace(
        self, ns: DirectoryNamespace, root: Path, mode: str
    ) -> None:
        await ns.create_namespace({"id": ["sales"], "properties": {"v": "1"}})
        await ns.create_namespace({"id": ["sales", "eu"]})
        location = await write_table(ns, ["sales", "orders"])
        again = await ns.create_namespace({"id": ["sales"], "mode": mode, "properties": {"v": "2"}})
        assert props(again) == {"v": "2"}
        assert (await ns.list_tables({"id": ["sales"]})).tables == []
        assert (await ns.list_namespaces({"id": ["sales"]})).namespaces == []
        assert not Path(location.removeprefix("file://")).exists()

    async def test_overwrite_of_a_missing_namespace_creates_it(
        self, ns: DirectoryNamespace
    ) -> None:
        await ns.create_namespace({"id": ["fresh"], "mode": "Overwrite"})
        await ns.namespace_exists({"id": ["fresh"]})

    async def test_nested_namespace_needs_its_parent(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        before = disk_state(root)
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.create_namespace({"id": ["missing", "child"]})
        assert disk_state(root) == before

    async def test_nested_namespaces_three_levels(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"]})
        await ns.create_namespace({"id": ["a", "b"]})
        await ns.create_namespace({"id": ["a", "b", "c"]})
        assert (await ns.list_namespaces({"id": ["a", "b"]})).namespaces == ["c"]

    async def test_unicode_and_spaces_are_valid_names(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["équipe données"]})
        await write_table(ns, ["équipe données", "ventes 2026"])
        assert (await ns.list_tables({"id": ["équipe données"]})).tables == ["ventes 2026"]

    @pytest.mark.parametrize("mode", ["Replace", "", "exist-ok-please", 3])
    async def test_unknown_mode_is_invalid_input(
        self, ns: DirectoryNamespace, root: Path, mode: object
    ) -> None:
        before = disk_state(root)
        if mode == "":
            await ns.create_namespace({"id": ["x"], "mode": mode})  # empty means default
            return
        with pytest.raises(errors.InvalidInputError):
            await ns.create_namespace({"id": ["x"], "mode": mode})
        assert disk_state(root) == before

    async def test_root_cannot_be_created(self, ns: DirectoryNamespace) -> None:
        with pytest.raises(errors.InvalidInputError):
            await ns.create_namespace({"id": []})


# -- ListNamespaces / DescribeNamespace / NamespaceExists -------------------------


class TestListAndDescribeNamespaces:
    async def test_pagination_follows_every_page_in_order(self, ns: DirectoryNamespace) -> None:
        names = [f"ns{i:02d}" for i in range(23)]
        for name in names:
            await ns.create_namespace({"id": [name]})
        seen: list[str] = []
        token = None
        pages = 0
        while True:
            page = await ns.list_namespaces({"limit": 5, "page_token": token})
            assert len(page.namespaces) <= 5
            seen.extend(page.namespaces)
            pages += 1
            token = page.page_token
            if not token:
                break
        assert seen == names
        assert pages == 5

    async def test_listing_a_missing_namespace_is_not_found(self, ns: DirectoryNamespace) -> None:
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.list_namespaces({"id": ["nope"]})

    @pytest.mark.parametrize("limit", [0, -1, "10"])
    async def test_bad_limit_is_invalid_input(self, ns: DirectoryNamespace, limit: object) -> None:
        with pytest.raises(errors.InvalidInputError):
            await ns.list_namespaces({"limit": limit})

    async def test_root_exists_and_describes(self, ns: DirectoryNamespace) -> None:
        await ns.namespace_exists()
        await ns.namespace_exists({"id": []})
        assert props(await ns.describe_namespace({"id": []})) == {}

    async def test_exists_raises_not_found_like_the_protocol(self, ns: DirectoryNamespace) -> None:
        with pytest.raises(errors.NamespaceNotFoundError) as caught:
            await ns.namespace_exists({"id": ["ghost"]})
        assert caught.value.code == 1
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.describe_namespace({"id": ["ghost"]})


# -- DropNamespace -------------------------------------------------------------


class TestDropNamespace:
    @pytest.mark.parametrize("mode", [None, "Fail", "FAIL"])
    async def test_fail_mode_on_missing_namespace(
        self, ns: DirectoryNamespace, mode: str | None
    ) -> None:
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.drop_namespace({"id": ["ghost"], "mode": mode})

    @pytest.mark.parametrize("mode", ["Skip", "SKIP", "skip"])
    async def test_skip_mode_on_missing_namespace_succeeds(
        self, ns: DirectoryNamespace, root: Path, mode: str
    ) -> None:
        before = disk_state(root)
        await ns.drop_namespace({"id": ["ghost"], "mode": mode})
        assert disk_state(root) == before

    @pytest.mark.parametrize("behavior", [None, "Restrict", "RESTRICT"])
    async def test_restrict_refuses_a_namespace_with_a_table(
        self, ns: DirectoryNamespace, behavior: str | None
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        await write_table(ns, ["a", "t"])
        with pytest.raises(errors.NamespaceNotEmptyError) as caught:
            await ns.drop_namespace({"id": ["a"], "behavior": behavior})
        assert caught.value.code == 3
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]

    async def test_restrict_refuses_a_namespace_with_a_child(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"]})
        await ns.create_namespace({"id": ["a", "b"]})
        with pytest.raises(errors.NamespaceNotEmptyError):
            await ns.drop_namespace({"id": ["a"], "behavior": "Restrict"})
        await ns.namespace_exists({"id": ["a", "b"]})

    async def test_restrict_drops_an_empty_namespace(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"], "properties": {"k": "v"}})
        dropped = await ns.drop_namespace({"id": ["a"]})
        assert props(dropped) == {"k": "v"}
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.namespace_exists({"id": ["a"]})

    @pytest.mark.parametrize("behavior", ["Cascade", "CASCADE", "cascade"])
    async def test_cascade_drops_children_and_their_tables_with_data(
        self, ns: DirectoryNamespace, behavior: str
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        await ns.create_namespace({"id": ["a", "b"]})
        top = await write_table(ns, ["a", "t1"])
        deep = await write_table(ns, ["a", "b", "t2"])
        await ns.declare_table({"id": ["a", "b", "declared"]})
        await ns.create_namespace({"id": ["other"]})
        kept = await write_table(ns, ["other", "t"])
        await ns.drop_namespace({"id": ["a"], "behavior": behavior})
        assert (await ns.list_namespaces()).namespaces == ["other"]
        for location in (top, deep):
            assert not Path(location.removeprefix("file://")).exists()
        assert Path(kept.removeprefix("file://")).exists()
        assert (await ns.list_all_tables()).tables == ["other$t"]

    async def test_root_cannot_be_dropped(self, ns: DirectoryNamespace) -> None:
        with pytest.raises(errors.InvalidInputError):
            await ns.drop_namespace({"id": []})

    async def test_bad_behavior_changes_nothing(self, ns: DirectoryNamespace, root: Path) -> None:
        await ns.create_namespace({"id": ["a"]})
        before = disk_state(root)
        with pytest.raises(errors.InvalidInputError):
            await ns.drop_namespace({"id": ["a"], "behavior": "Explode"})
        assert disk_state(root) == before


# -- Tables: declare, list, describe, exists -----------------------------------------


class TestTables:
    async def test_declare_then_exists_and_describe_as_only_declared(
        self, ns: DirectoryNamespace
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        declared = await ns.declare_table({"id": ["a", "t"]})
        assert declared.location
        await ns.table_exists({"id": ["a", "t"]})
        described = await ns.describe_table({"id": ["a", "t"], "check_declared": True})
        assert described.is_only_declared is True
        assert described.location == declared.location

    async def test_declare_twice_is_already_exists(self, ns: DirectoryNamespace) -> None:
        await ns.declare_table({"id": ["t"]})
        with pytest.raises(errors.TableAlreadyExistsError) as caught:
            await ns.declare_table({"id": ["t"]})
        assert caught.value.code == 5

    async def test_declare_in_a_missing_namespace_changes_nothing(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        before = disk_state(root)
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.declare_table({"id": ["ghost", "t"]})
        assert disk_state(root) == before

    async def test_list_tables_paginates_and_filters_declared(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"]})
        for i in range(7):
            await write_table(ns, ["a", f"t{i}"], rows=1)
        await ns.declare_table({"id": ["a", "zz_declared"]})
        everything: list[str] = []
        token = None
        while True:
            page = await ns.list_tables(ListTablesRequest(id=["a"], limit=3, page_token=token))
            everything.extend(page.tables)
            token = page.page_token
            if not token:
                break
        assert everything == [*(f"t{i}" for i in range(7)), "zz_declared"]
        stored = await ns.list_tables({"id": ["a"], "include_declared": False})
        assert stored.tables == [f"t{i}" for i in range(7)]

    async def test_list_tables_of_a_missing_namespace(self, ns: DirectoryNamespace) -> None:
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.list_tables({"id": ["ghost"]})

    async def test_list_all_tables_recurses_and_paginates(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"]})
        await ns.create_namespace({"id": ["a", "b"]})
        await write_table(ns, ["top"])
        await write_table(ns, ["a", "t"])
        await write_table(ns, ["a", "b", "deep"])
        assert (await ns.list_all_tables()).tables == ["a$b$deep", "a$t", "top"]
        dotted = await ns.list_all_tables({"delimiter": "."})
        assert dotted.tables == ["a.b.deep", "a.t", "top"]
        first = await ns.list_all_tables({"limit": 2})
        assert first.tables == ["a$b$deep", "a$t"]
        rest = await ns.list_all_tables({"limit": 2, "page_token": first.page_token})
        assert rest.tables == ["top"]
        assert not rest.page_token

    async def test_describe_with_detailed_metadata_reads_the_real_table(
        self, ns: DirectoryNamespace
    ) -> None:
        location = await write_table(ns, ["t"], rows=5)
        lance.write_dataset(sample_table(2), location, mode="append")
        ds = lance.dataset(location)
        ds.delete("id = 0")
        described = await ns.describe_table({"id": ["t"], "load_detailed_metadata": True})
        assert described.version == 3
        assert [f.name for f in described.schema.fields] == ["id", "name"]
        assert described.stats.num_fragments == 2
        assert described.stats.num_deleted_rows == 2
        assert described.is_only_declared is False
        assert described.metadata.additional_properties["total_rows"] == "5"

    async def test_describe_a_version_and_a_missing_version(self, ns: DirectoryNamespace) -> None:
        location = await write_table(ns, ["t"], rows=5)
        lance.write_dataset(sample_table(2), location, mode="append")
        old = await ns.describe_table({"id": ["t"], "version": 1, "load_detailed_metadata": True})
        assert old.version == 1
        with pytest.raises(errors.TableVersionNotFoundError) as caught:
            await ns.describe_table({"id": ["t"], "version": 99})
        assert caught.value.code == 11
        await ns.table_exists({"id": ["t"], "version": 2})
        with pytest.raises(errors.TableVersionNotFoundError):
            await ns.table_exists({"id": ["t"], "version": 99})

    async def test_with_table_uri_is_a_uri(self, ns: DirectoryNamespace) -> None:
        await write_table(ns, ["t"])
        plain = await ns.describe_table({"id": ["t"]})
        assert not plain.table_uri
        with_uri = await ns.describe_table({"id": ["t"], "with_table_uri": True})
        assert with_uri.table_uri.startswith("file://")

    async def test_missing_table_is_not_found(self, ns: DirectoryNamespace) -> None:
        with pytest.raises(errors.TableNotFoundError) as caught:
            await ns.describe_table({"id": ["ghost"]})
        assert caught.value.code == 4
        with pytest.raises(errors.TableNotFoundError):
            await ns.table_exists({"id": ["ghost"]})
        await ns.create_namespace({"id": ["a"]})
        with pytest.raises(errors.TableNotFoundError):
            await ns.describe_table({"id": ["a", "ghost"]})
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.describe_table({"id": ["nons", "ghost"]})


# -- Register / Deregister / Drop / Rename / Restore / Versions ---------------------


class TestTableLifecycle:
    async def test_register_a_relative_location(self, ns: DirectoryNamespace, root: Path) -> None:
        await ns.create_namespace({"id": ["a"]})
        lance.write_dataset(sample_table(4), str(root / "loose"))
        await ns.register_table({"id": ["a", "loose_t"], "location": "loose"})
        described = await ns.describe_table(
            {"id": ["a", "loose_t"], "load_detailed_metadata": True}
        )
        assert described.location == f"file://{root}/loose"
        assert described.version == 1

    async def test_register_an_absolute_location_inside_root(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        lance.write_dataset(sample_table(4), str(root / "inside"))
        registered = await ns.register_table({"id": ["a", "t"], "location": str(root / "inside")})
        assert registered.location == f"file://{root}/inside"
        assert (await ns.describe_table({"id": ["a", "t"]})).location == f"file://{root}/inside"

    async def test_register_an_absolute_location_outside_root(
        self, ns: DirectoryNamespace, tmp_path: Path
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        outside = tmp_path / "elsewhere"
        lance.write_dataset(sample_table(4), str(outside))
        await ns.register_table({"id": ["a", "ext"], "location": str(outside)})
        described = await ns.describe_table({"id": ["a", "ext"], "load_detailed_metadata": True})
        assert described.location == f"file://{outside}"
        assert described.version == 1
        assert lance.dataset(described.location).count_rows() == 4
        assert (await ns.list_tables({"id": ["a"]})).tables == ["ext"]

    async def test_register_at_the_root_is_refused_with_a_reason(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        lance.write_dataset(sample_table(1), str(root / "data"))
        before = disk_state(root)
        with pytest.raises(errors.InvalidInputError, match="child namespace"):
            await ns.register_table({"id": ["t"], "location": "data"})
        assert disk_state(root) == before

    @pytest.mark.parametrize("mode", [None, "Create", "create"])
    async def test_register_create_mode_refuses_a_taken_name(
        self, ns: DirectoryNamespace, root: Path, mode: str | None
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        await write_table(ns, ["a", "t"])
        lance.write_dataset(sample_table(1), str(root / "other"))
        with pytest.raises(errors.TableAlreadyExistsError):
            await ns.register_table({"id": ["a", "t"], "location": "other", "mode": mode})

    @pytest.mark.parametrize("mode", ["Overwrite", "OVERWRITE"])
    async def test_register_overwrite_replaces_the_registration(
        self, ns: DirectoryNamespace, root: Path, mode: str
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        old = await write_table(ns, ["a", "t"])
        lance.write_dataset(sample_table(1), str(root / "other"))
        await ns.register_table({"id": ["a", "t"], "location": "other", "mode": mode})
        assert (await ns.describe_table({"id": ["a", "t"]})).location == f"file://{root}/other"
        assert Path(old.removeprefix("file://")).exists(), "overwrite deregisters, never deletes"

    @pytest.mark.parametrize("location", ["", "   ", "../escape", "a/../../escape"])
    async def test_register_bad_locations_change_nothing(
        self, ns: DirectoryNamespace, root: Path, location: str
    ) -> None:
        await ns.create_namespace({"id": ["a"]})
        before = disk_state(root)
        with pytest.raises(errors.InvalidInputError):
            await ns.register_table({"id": ["a", "t"], "location": location})
        assert disk_state(root) == before

    async def test_register_into_a_missing_namespace(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        lance.write_dataset(sample_table(1), str(root / "data"))
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.register_table({"id": ["ghost", "t"], "location": "data"})

    async def test_deregister_keeps_the_data(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"]})
        location = await write_table(ns, ["a", "t"])
        response = await ns.deregister_table({"id": ["a", "t"]})
        assert response.location == location
        assert list(response.id) == ["a", "t"]
        with pytest.raises(errors.TableNotFoundError):
            await ns.table_exists({"id": ["a", "t"]})
        assert lance.dataset(location).count_rows() == 3

    async def test_deregister_at_the_root_is_refused_with_a_reason(
        self, ns: DirectoryNamespace
    ) -> None:
        location = await write_table(ns, ["t"])
        with pytest.raises(errors.InvalidInputError, match="cannot be deregistered"):
            await ns.deregister_table({"id": ["t"]})
        await ns.table_exists({"id": ["t"]})
        assert lance.dataset(location).count_rows() == 3

    async def test_drop_table_removes_the_data(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"]})
        location = await write_table(ns, ["a", "t"])
        dropped = await ns.drop_table({"id": ["a", "t"]})
        assert dropped.location == location
        assert not Path(location.removeprefix("file://")).exists()
        with pytest.raises(errors.TableNotFoundError):
            await ns.drop_table({"id": ["a", "t"]})

    async def test_rename_within_and_across_namespaces(self, ns: DirectoryNamespace) -> None:
        await ns.create_namespace({"id": ["a"]})
        await ns.create_namespace({"id": ["b"]})
        location = await write_table(ns, ["a", "t"], rows=4)
        await ns.rename_table({"id": ["a", "t"], "new_table_name": "t2"})
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t2"]
        await ns.rename_table(
            {"id": ["a", "t2"], "new_table_name": "t3", "new_namespace_id": ["b"]}
        )
        assert (await ns.list_tables({"id": ["a"]})).tables == []
        moved = await ns.describe_table({"id": ["b", "t3"]})
        assert moved.location == location
        assert lance.dataset(moved.location).count_rows() == 4

    async def test_rename_errors(self, ns: DirectoryNamespace, root: Path) -> None:
        await write_table(ns, ["t"])
        await write_table(ns, ["u"])
        before = disk_state(root)
        with pytest.raises(errors.TableAlreadyExistsError):
            await ns.rename_table({"id": ["t"], "new_table_name": "u"})
        with pytest.raises(errors.TableNotFoundError):
            await ns.rename_table({"id": ["ghost"], "new_table_name": "x"})
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.rename_table({"id": ["t"], "new_table_name": "x", "new_namespace_id": ["no"]})
        with pytest.raises(errors.InvalidInputError):
            await ns.rename_table({"id": ["t"], "new_table_name": "../x"})
        assert disk_state(root) == before

    async def test_rename_a_table_known_only_by_directory_listing(
        self, ns: DirectoryNamespace, root: Path
    ) -> None:
        lance.write_dataset(sample_table(2), str(root / "listed.lance"))
        assert "listed" in (await ns.list_tables()).tables
        await ns.rename_table({"id": ["listed"], "new_table_name": "renamed"})
        assert (await ns.list_tables()).tables == ["renamed"]
        assert lance.dataset(str(root / "renamed.lance")).count_rows() == 2

    async def test_restore_and_list_versions(self, ns: DirectoryNamespace) -> None:
        location = await write_table(ns, ["t"], rows=5)
        lance.write_dataset(sample_table(1), location, mode="overwrite")
        await ns.restore_table({"id": ["t"], "version": 1})
        assert lance.dataset(location).count_rows() == 5
        versions = await ns.list_table_versions({"id": ["t"], "descending": True})
        numbers = [v.version for v in versions.versions]
        assert numbers == [3, 2, 1]
        page = await ns.list_table_versions({"id": ["t"], "limit": 2})
        assert [v.version for v in page.versions] == [1, 2]
        rest = await ns.list_table_versions(
            {"id": ["t"], "limit": 2, "page_token": page.page_token}
        )
        assert [v.version for v in rest.versions] == [3]
        assert all(v.manifest_path for v in versions.versions)

    async def test_restore_needs_a_version(self, ns: DirectoryNamespace) -> None:
        await write_table(ns, ["t"])
        with pytest.raises(errors.InvalidInputError):
            await ns.restore_table({"id": ["t"], "version": -1})
        with pytest.raises(errors.TableVersionNotFoundError):
            await ns.restore_table({"id": ["t"], "version": 42})


# -- bad input ------------------------------------------------------------------------


BAD_NAMES = ["", ".", "..", "a/b", "a\\b", "a$b", "tab\there", "nul\x00", "c:drive"]


@pytest.mark.parametrize("name", BAD_NAMES)
async def test_bad_names_are_invalid_input_and_change_nothing(
    ns: DirectoryNamespace, root: Path, name: str
) -> None:
    await ns.create_namespace({"id": ["ok"]})
    before = disk_state(root)
    for call in (
        ns.create_namespace({"id": [name]}),
        ns.create_namespace({"id": ["ok", name]}),
        ns.declare_table({"id": ["ok", name]}),
        ns.declare_table({"id": [name]}),
        ns.register_table({"id": ["ok", name], "location": "x"}),
    ):
        with pytest.raises(errors.InvalidInputError) as caught:
            await call
        assert caught.value.code == 13
    assert disk_state(root) == before


async def test_a_malformed_request_is_invalid_input(ns: DirectoryNamespace) -> None:
    with pytest.raises(errors.InvalidInputError):
        await ns.list_tables(42)  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidInputError):
        await ns.declare_table({"id": "a$t"})


@pytest.mark.parametrize(
    ("properties", "key"),
    [
        ({}, "root"),
        ({"root": "/tmp/x", "roots": "/tmp/y"}, "roots"),
        ({"root": "/tmp/x", "manifest_enabled": "maybe"}, "manifest_enabled"),
        ({"root": "/tmp/x", "worker_threads": "0"}, "worker_threads"),
    ],
)
def test_configuration_errors_name_the_key(properties: dict[str, str], key: str) -> None:
    with pytest.raises(errors.InvalidInputError, match=key):
        lna.connect("dir", properties)


def test_secrets_in_storage_options_never_show(tmp_path: Path) -> None:
    namespace = lna.connect(
        "dir", {"root": str(tmp_path), "storage.aws_secret_access_key": "TOPSECRET"}
    )
    assert "TOPSECRET" not in repr(namespace)
    assert "TOPSECRET" not in repr(namespace.config)
    assert "TOPSECRET" not in str(namespace.config.redacted_properties())
    assert namespace.config.storage == {"aws_secret_access_key": "TOPSECRET"}
    assert "TOPSECRET" not in namespace.namespace_id()
    other = lna.connect("dir", {"root": str(tmp_path), "storage.aws_secret_access_key": "OTHER"})
    plain = lna.connect("dir", {"root": str(tmp_path)})
    assert len({namespace.namespace_id(), other.namespace_id(), plain.namespace_id()}) == 3


async def test_relative_root_is_resolved_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with lna.connect("dir", {"root": "rel/cat"}) as namespace:
        await namespace.create_namespace({"id": ["a"]})
    assert (tmp_path / "rel" / "cat" / "__manifest").is_dir()


def test_constructor_touches_no_disk(tmp_path: Path) -> None:
    lna.connect("dir", {"root": str(tmp_path / "not-yet")})
    assert not (tmp_path / "not-yet").exists()


#: what pylance 14.0.2's DirectoryNamespace answers "not implemented" (the trait's defaults)
PYLANCE_UNIMPLEMENTED = {
    "create_materialized_view",
    "refresh_materialized_view",
    "alter_table_backfill_columns",
}


def test_every_operation_that_works_is_listed() -> None:
    # ours, handed to pylance's DirectoryNamespace (the batches it lacks are ours), or the
    # pipeline's (PySpark is installed here), which takes the three pylance answers "not
    # implemented" (found by calling it) before pylance would see them
    from lance_namespace_async._core import pipeline_hook
    from lance_namespace_async.directory._ops import _pylance_unimplemented

    assert DirectoryNamespace.list_operations() == [op.method for op in lna.OPERATIONS]
    assert _pylance_unimplemented() == PYLANCE_UNIMPLEMENTED <= pipeline_hook.ALWAYS


async def test_an_operation_pylance_does_not_implement_is_unsupported(tmp_path: Path) -> None:
    """pylance's own path (what answers where PySpark is not installed): code 0."""
    from lance_namespace_async._core.base import coerce_request

    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        await ns.declare_table({"id": ["t"]})
        backfill = coerce_request({"id": ["t"], "column": "x"}, "AlterTableBackfillColumnsRequest")
        with pytest.raises(lna.errors.UnsupportedOperationError) as refused:
            await ns._alter_table_backfill_columns(backfill)
        assert refused.value.code == 0
        refresh = coerce_request({"id": ["t"]}, "RefreshMaterializedViewRequest")
        with pytest.raises(lna.errors.UnsupportedOperationError):
            await ns._refresh_materialized_view(refresh)


@pytest.mark.parametrize("bad_id", ["zzz", 7, {"a": 1}, ["a", 3]])
async def test_an_id_that_is_not_a_list_of_names_is_invalid_input(
    ns: DirectoryNamespace, bad_id: object
) -> None:
    with pytest.raises(errors.InvalidInputError):
        await ns.describe_namespace({"id": bad_id})
    with pytest.raises(errors.InvalidInputError):
        await ns.list_namespaces({"id": bad_id})
