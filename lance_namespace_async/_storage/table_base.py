"""How a catalog backend's storage operation finds its table: the hooks a backend
provides, the table resolved through the catalog's DescribeTable, its dataset opened.

The operations themselves are :mod:`.data_ops` and :mod:`.metadata_ops`, put
together as :class:`~.operations.StorageTableOperations`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .. import errors
from .._core.base import AsyncLanceNamespace, json_data
from .places import local_path
from .ref_names import branch_of, check_ref_names
from .tables import LanceTables, has_versions

if TYPE_CHECKING:
    pass


@attrs.frozen
class StorageAccess:
    """What a catalog allows on storage for one table.

    ``write_refusal``: why operations must not write the table's storage directly
    (None: they may); ``read_version``: the version readers see when they name
    none (None: storage's newest), and the newest they may name;
    ``namespace_client``: a pylance namespace client through which every commit
    and version lookup of the table goes (managed versioning), or None.
    """

    write_refusal: str | None = None
    read_version: int | None = None
    namespace_client: Any = None


@attrs.frozen
class StorageTable:
    """A table resolved through the catalog: where it is and how to reach it."""

    id: list[str]
    location: str
    storage_options: dict[str, str] | None
    access: StorageAccess
    #: the branch the operation acts on (None: main)
    branch: str | None = None

    @property
    def data_location(self) -> str:
        """Where the versions the operation acts on are kept: the table's location, or
        its branch's (pylance keeps a branch at ``<table>/tree/<name>``)."""
        if self.branch is None:
            return self.location
        return f"{self.location.rstrip('/')}/tree/{self.branch}"


class StorageTableBase(AsyncLanceNamespace):
    """A catalog backend's tables on storage: what a backend provides, and how an
    operation resolves and opens its table (:meth:`_on_storage`)."""

    tables: LanceTables
    stores_tables = True
    #: entries the catalog itself keeps in a table's directory (Iceberg's metadata)
    _catalog_files: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A backend's own DescribeTable describes main; with ``branch`` its answer's
        version (and, with ``load_detailed_metadata``, schema and stats) are the branch's
        (:meth:`_describe_branch`). With ``table_version_tracking_enabled`` its
        DescribeTable and DeclareTable answer ``managed_versioning=true`` (pylance then
        commits through CreateTableVersion)."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("_describe_table")
        if own is not None:

            async def describe_table(self: Any, request: Any) -> Any:
                body = json_data(request)
                check_ref_names("DescribeTable", body)
                if branch_of(body) is None:
                    return self._tracked(await own(self, request))
                return await self._describe_branch(own, body)

            describe_table.__doc__ = own.__doc__
            cls._describe_table = describe_table  # type: ignore[method-assign]
        declare = cls.__dict__.get("_declare_table")
        if declare is not None:

            async def declare_table(self: Any, request: Any) -> Any:
                return self._tracked(await declare(self, request))

            declare_table.__doc__ = declare.__doc__
            cls._declare_table = declare_table  # type: ignore[method-assign]

    async def _describe_branch(self, describe: Any, body: dict[str, Any]) -> Any:
        """DescribeTable of a branch: the catalog's answer for the table (its location,
        properties, credentials), with the version, schema and stats of the branch."""
        from .._core.arrow_json import json_arrow_schema
        from ..models import DescribeTableRequest

        main_body = {key: value for key, value in body.items() if key != "branch"}
        main_body.pop("version", None)
        main_body.pop("load_detailed_metadata", None)
        answer = self._tracked(await describe(self, DescribeTableRequest.from_dict(main_body)))
        table = await self._storage_table(body, "DescribeTable", writes=False)
        dataset = await self._open(table, body.get("version"))
        described = answer.to_dict()
        described["version"] = int(dataset.version)
        if body.get("load_detailed_metadata") is True:

            def details() -> tuple[Any, Any]:
                return json_arrow_schema(dataset.schema), dataset.stats.dataset_stats()

            schema, stats = await self.tables.run(details)
            described["schema"] = schema
            described["stats"] = {
                "num_deleted_rows": int(stats.get("num_deleted_rows", 0)),
                "num_fragments": int(stats.get("num_fragments", 0)),
            }
        return type(answer).from_dict(described)

    def _tracked(self, answer: Any) -> Any:
        """``answer`` (DescribeTable's, DeclareTable's) marked ``managed_versioning``
        when the backend tracks versions (``table_version_tracking_enabled``)."""
        if getattr(self.config, "table_version_tracking_enabled", False) is True:
            answer.managed_versioning = True
        return answer

    # -- what a backend provides -------------------------------------------------------------

    async def _creation_location(self, table: list[str]) -> str:
        """Where CreateTable writes the new table ``table`` (the backend's default)."""
        raise NotImplementedError

    def _storage_access(self, described: Any) -> StorageAccess:
        """What the catalog allows on storage for the table ``described``
        (a DescribeTableResponse); by default everything, at storage's newest version."""
        return StorageAccess()

    async def _schema_changed(self, table: StorageTable, dataset: Any) -> None:
        """Called after an operation changed the columns of ``table`` (now ``dataset``);
        catalogs that store columns bring them up to date here."""

    async def _describe_for_storage(self, table: list[str], *, writes: bool) -> Any:
        """The DescribeTable answer an operation on ``table`` works from; backends whose
        catalog vends credentials per operation (Unity: READ or READ_WRITE) ask for the
        ones ``writes`` needs."""
        from ..models import DescribeTableRequest

        return await self._describe_table(DescribeTableRequest.from_dict({"id": table}))

    async def _commit_created(self, table: StorageTable, dataset: Any) -> None:
        """Called after the first version of a declared table whose commits go through
        the namespace (``access.namespace_client``) was written to storage: the
        catalog takes it here. Only backends that hand out such a client need it."""
        raise NotImplementedError

    # -- resolving a table ----------------------------------------------------------------------

    async def _storage_table(
        self, body: Mapping[str, Any], what: str, *, writes: bool
    ) -> StorageTable:
        check_ref_names(what.partition(" ")[0], body)
        branch = branch_of(body)
        table = body.get("id")
        if not isinstance(table, list) or not table:
            raise errors.InvalidInputError(f"{what} needs a table id")
        described = await self._describe_for_storage(list(table), writes=writes)
        location = described.to_dict().get("location")
        if not isinstance(location, str) or not location:
            raise errors.InvalidTableStateError(f"{what}: the catalog holds no location")
        await self.tables.confinement.check(location, what)
        options = described.to_dict().get("storage_options")
        access = self._storage_access(described)
        if writes and access.write_refusal is not None:
            raise errors.UnsupportedOperationError(f"{what}: {access.write_refusal}")
        if branch is not None and access.namespace_client is not None:
            raise errors.UnsupportedOperationError(
                f"{what} on a branch: table {'.'.join(table)!r} is managed by the catalog "
                "(managed_by=impl), which records the version of main only; its branches "
                "are not supported"
            )
        storage_options = {str(k): str(v) for k, v in (options or {}).items()} or None
        return StorageTable(list(table), location, storage_options, access, branch)

    async def _open(self, table: StorageTable, version: Any = None) -> Any:
        """The table's dataset (at ``version``, else the version its readers see)."""
        import lance

        newest = table.access.read_version
        if version is None:
            version = newest
        elif isinstance(version, bool) or not isinstance(version, int) or not 0 <= version < 2**64:
            raise errors.InvalidInputError(f"version must be an integer >= 0, got {version!r}")
        client = table.access.namespace_client
        if client is not None and (newest is None or version > newest):
            # a version the catalog did not accept (yet) is not the table's
            raise errors.TableVersionNotFoundError(
                f"version {version} of table {'.'.join(table.id)} not found in the catalog"
            )
        location, options = table.location, table.storage_options
        if table.branch is not None:
            return await self._open_branch(table, version)

        def open_it() -> Any:
            try:
                if client is not None:  # commits and version lookups through the namespace
                    return lance.LanceDataset(
                        location,
                        version=version,
                        storage_options=options,
                        namespace_client=client,
                        table_id=list(table.id),
                        namespace_client_managed_versioning=True,
                    )
                return lance.dataset(location, version=version, storage_options=options)
            except ValueError as exc:
                text = str(exc)
                if "was not found" not in text and "Not found" not in text:
                    raise
                if version is not None and has_versions(location):
                    raise errors.TableVersionNotFoundError(
                        f"version {version} of table {'.'.join(table.id)} not found"
                    ) from None
                raise errors.InvalidInputError(
                    f"no Lance table at {location!r}, where the catalog places {'.'.join(table.id)}"
                ) from None

        return await self.tables.run(open_it)

    async def _open_branch(self, table: StorageTable, version: int | None) -> Any:
        """The dataset checked out on ``table.branch`` (at ``version``, else its newest):
        what pylance writes through it lands on the branch, never on main."""
        import lance

        branch = table.branch
        name = ".".join(table.id)

        def open_it() -> Any:
            try:
                dataset = lance.dataset(table.location, storage_options=table.storage_options)
            except ValueError as exc:
                if "was not found" not in str(exc) and "Not found" not in str(exc):
                    raise
                raise errors.TableBranchNotFoundError(
                    f"branch {branch!r} of table {name} not found: the table has no data yet"
                ) from None
            try:
                return dataset.checkout_version((branch, version))
            except (ValueError, OSError) as exc:
                if "not found" not in str(exc).lower():
                    raise
                if branch not in dataset.branches.list():
                    raise errors.TableBranchNotFoundError(
                        f"branch {branch!r} of table {name} not found"
                    ) from None
                raise errors.TableVersionNotFoundError(
                    f"version {version} of branch {branch!r} of table {name} not found"
                ) from None

        return await self.tables.run(open_it)

    async def _main_schema_changed(self, table: StorageTable, dataset: Any) -> None:
        """:meth:`_schema_changed` for a change of main: the catalog's columns are
        main's, so a branch's change leaves them as they are."""
        if table.branch is None:
            await self._schema_changed(table, dataset)

    async def _on_storage(
        self, request: Any, what: str, *, writes: bool, version: Any = None
    ) -> tuple[dict[str, Any], StorageTable, Any]:
        body: dict[str, Any] = json_data(request)
        table = await self._storage_table(body, what, writes=writes)
        return body, table, await self._open(table, version)


# -- helpers ------------------------------------------------------------------------------------


@contextlib.contextmanager
def anyio_shielded() -> Any:
    """Let clean-up finish even when the call that needs it was cancelled."""
    import anyio

    with anyio.CancelScope(shield=True):
        yield


def _holds_files(
    location: str,
    ignored: frozenset[str] = frozenset(),
    storage_options: Mapping[str, str] | None = None,
) -> bool:
    """Whether ``location`` exists and is not an empty directory (entries named in
    ``ignored`` do not count); on an object store: whether any object is below it."""
    path = local_path(location)
    if path is None:
        from lance.file import LanceFileSession

        session = LanceFileSession(location, storage_options=dict(storage_options or {}) or None)
        listed = session.list_with_delimiter()
        names = [entry.rstrip("/").rpartition("/")[2] for entry in listed.common_prefixes]
        names += [entry.rpartition("/")[2] for entry in listed.objects]
        return any(name not in ignored for name in names)
    if not os.path.lexists(path):
        return False
    if not os.path.isdir(path) or os.path.islink(path):
        return True
    return any(entry not in ignored for entry in os.listdir(path))


def _props(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"properties": dict(properties)} if properties else {}
