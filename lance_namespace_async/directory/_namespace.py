"""The directory namespace (the Lance Namespace specification's "Lance Directory Namespace").

A namespace directory holds one sub-directory per table. Nested namespaces,
properties and declared tables live in the ``__manifest`` Lance table at the
root, exactly as pylance's own ``DirectoryNamespace`` keeps them, so a catalog
written by either is fully usable by the other.

This backend drives pylance's Rust implementation (the layout's reference) on
bounded anyio worker threads and fixes, above it, what pylance 14.0.2 lacks:

* CreateNamespace modes ExistOk and Overwrite;
* DropNamespace mode Skip and behavior Cascade (children and their tables);
* NamespaceNotFound when a parent namespace is missing (list, declare, register);
* pagination of ListNamespaces and ListAllTables, and ListAllTables recursion;
* RegisterTable of an absolute location (relative when inside the root);
* DescribeTable ``load_detailed_metadata`` with stats; TableExists of a version;
* RenameTable, including a move to another namespace;
* DropTable deleting data, DeregisterTable never touching it;
* names unique among a namespace's tables and child namespaces (seed 002).

pylance resolves every manifest location against the root; a location we
register outside the root is kept absolute and resolved here. Such a table is
usable through this backend (and the sync facade given to pylance), not
through pylance's own DirectoryNamespace.

Deletion (``_lance_tables`` decides it, as for every backend): the storage root
is ``root``. DropTable deletes a table's data only strictly inside the root (or
below a ``drop_allowed_locations`` prefix), never the root, the ``__manifest``,
a directory inside or holding another Lance table, nor a location another
table of the manifest points at; otherwise it deregisters the table and keeps
the data. RegisterTable needs a Lance table at the location and refuses the
root, the manifest and places inside, holding, or shared with another table.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Self, TypeVar
from urllib.parse import unquote, urlparse

import anyio
import anyio.to_thread
import attrs

from .. import errors
from .._base import AsyncLanceNamespace
from .._config import BackendConfig, parse_bool, parse_positive_int, prop
from .._identifiers import Identifier, join_identifier, validate_identifier, validate_name
from .._lance_tables import (
    DROP_ALLOWED_LOCATIONS_DOC,
    Claims,
    LanceTables,
    Place,
    as_uri,
    canonical,
    has_versions,
    local_path,
    parse_locations,
    place_of,
    storage_failure,
)
from .._modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, REGISTER_MODES, parse_mode
from .._namespace_guard import NamespaceGuard
from .._paging import check_limit, page_of, token_of
from .._unique_names import refuse_namespace_named_like, refuse_table_named_like
from ..models import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    DropTableRequest,
    DropTableResponse,
    ListAllTablesRequest,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    RestoreTableRequest,
    RestoreTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from ._manifest_snapshot import ManifestSnapshots, Snapshot, read_manifest_rows
from ._ops import install_pylance_operations

__all__ = ["MANIFEST_DIR", "DirectoryConfig", "DirectoryNamespace"]

T = TypeVar("T")

MANIFEST_DIR = "__manifest"
_MANIFEST_DELIMITER = "$"
_EMBEDDED_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")
_PLACEHOLDER = ".lance-namespace-async/registering"

logger = logging.getLogger("lance_namespace_async.tables")


@attrs.frozen
class DirectoryConfig(BackendConfig):
    """Properties of ``impl="dir"``, as pylance's DirectoryNamespace takes them."""

    root: str = prop(doc="namespace directory: local path (relative to cwd) or URI")
    manifest_enabled: bool = prop(default=True, parse=parse_bool)
    dir_listing_enabled: bool = prop(default=True, parse=parse_bool)
    inline_optimization_enabled: bool | None = prop(default=None, parse=parse_bool)
    table_version_tracking_enabled: bool | None = prop(default=None, parse=parse_bool)
    dir_listing_to_manifest_migration_enabled: bool | None = prop(default=None, parse=parse_bool)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)
    credential_vendor: dict[str, str] = prop(prefix="credential_vendor.", secret=True)
    worker_threads: int = prop(default=8, parse=parse_positive_int, doc="blocking-call threads")
    drop_allowed_locations: tuple[str, ...] = prop(
        default=(), parse=parse_locations, doc=DROP_ALLOWED_LOCATIONS_DOC
    )

    def rust_properties(self, root: str) -> dict[str, str]:
        """The map pylance's Rust DirectoryNamespace is built from."""
        passed: dict[str, str] = {"root": root}
        for key in (
            "manifest_enabled",
            "dir_listing_enabled",
            "inline_optimization_enabled",
            "table_version_tracking_enabled",
            "dir_listing_to_manifest_migration_enabled",
        ):
            value = getattr(self, key)
            if value is not None:
                passed[key] = "true" if value else "false"
        passed.update({f"storage.{k}": v for k, v in self.storage.items()})
        passed.update({f"credential_vendor.{k}": v for k, v in self.credential_vendor.items()})
        return passed


def _absolute_root(root: str) -> str:
    """The root as pylance resolves it: URIs as given, paths against the cwd."""
    if root == "":
        raise errors.InvalidInputError("configuration key 'root' must not be empty")
    if "://" in root:
        return root.rstrip("/")
    return os.path.abspath(os.path.expanduser(root))


def _is_absolute_location(location: str) -> bool:
    return "://" in location or location.startswith("/") or bool(_EMBEDDED_SCHEME.match(location))


def _str_map(value: Any) -> dict[str, str] | None:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return None


class DirectoryNamespace(AsyncLanceNamespace):
    """``impl="dir"``: Lance tables in a directory, nested namespaces in its manifest."""

    impl_name: ClassVar[str] = "dir"
    config: DirectoryConfig

    def __init__(self, config: DirectoryConfig) -> None:
        super().__init__(config)
        self.root = _absolute_root(config.root)
        self.delimiter = _MANIFEST_DELIMITER
        self.tables = LanceTables(
            threads=config.worker_threads,
            storage_options=config.storage,
            storage_root=self.root,
            drop_allowed=config.drop_allowed_locations,
            sealed=(self._manifest_uri(),),
        )
        self._inner: Any = None
        self._open_lock = anyio.Lock()
        self._manifest_lock = anyio.Lock()
        # pylance commits a declare and a Restrict drop as separate manifest writes
        self._guard = NamespaceGuard()
        self._snapshots = self._manifest_snapshots()

    def _manifest_snapshots(self) -> ManifestSnapshots | None:
        """Reads of a local catalog without storage settings answer from a copy of the
        manifest while it holds (``_manifest_snapshot``), not by a pylance scan each."""
        path = local_path(self.root)
        config = self.config
        if path is None or not config.manifest_enabled or config.storage:
            return None
        if config.credential_vendor:  # answers carry vended credentials: pylance's
            return None
        uri = self._manifest_uri()
        return ManifestSnapshots(
            path, _MANIFEST_DELIMITER, lambda: read_manifest_rows(uri, None), f"file://{path}/"
        )

    @classmethod
    def from_properties(cls, properties: dict[str, str] | Any) -> Self:
        return cls(DirectoryConfig.from_properties(properties))

    def namespace_id(self) -> str:
        """Equal for equal settings (pylance shares caches by it), secrets only as a digest."""
        if not (self.config.storage or self.config.credential_vendor):
            return f"DirectoryNamespace(root={self.root!r})"
        settings = json.dumps(
            [sorted(self.config.storage.items()), sorted(self.config.credential_vendor.items())]
        )
        digest = hashlib.sha256(settings.encode()).hexdigest()[:12]
        return f"DirectoryNamespace(root={self.root!r}, options={digest})"

    # -- plumbing --------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.tables.run(fn, *args)

    async def _rust(self) -> Any:
        if self._inner is None:
            async with self._open_lock:
                if self._inner is None:
                    from lance.lance import PyDirectoryNamespace  # type: ignore[attr-defined]

                    props = self.config.rust_properties(self.root)
                    with self._storage_context():
                        self._inner = await self._run(lambda: PyDirectoryNamespace(**props))
        return self._inner

    async def _call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        inner = await self._rust()
        with self._storage_context():
            result = await self._run(getattr(inner, method), body)
        return dict(result or {})

    @contextlib.contextmanager
    def _storage_context(self) -> Iterator[None]:
        """A storage failure names the root: pylance's own text stays on the chain."""
        try:
            yield
        except errors.LanceNamespaceError as exc:
            cause = exc.__cause__
            if cause is None or storage_failure(cause) is None:
                raise
            raise type(exc)(f"namespace root {self.root!r}: {exc.message}") from cause

    async def _require_root_for_read(self, namespace: Identifier, empty: bool) -> None:
        """A read of a local root that does not exist is NamespaceNotFound, not an empty
        catalog (pylance answers empty lists): a mistyped root must not look empty.

        Checked only when the answer was empty, so listings of a real root cost nothing
        more. Writes create the root, as pylance does.
        """
        if namespace or not empty:
            return
        path = local_path(self.root)
        if path is not None and not await anyio.to_thread.run_sync(os.path.isdir, path):
            raise errors.NamespaceNotFoundError(
                f"namespace root {self.root!r} does not exist (check the 'root' property)"
            )

    def _namespace_id(self, value: Any, *, allow_root: bool = True) -> Identifier:
        return validate_identifier(
            value,
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=allow_root,
            what="namespace id",
        )

    def _table_id(self, value: Any) -> Identifier:
        return validate_identifier(
            value,
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=False,
            what="table id",
        )

    async def _snapshot(self) -> Snapshot | None:
        if self._snapshots is None or not self._snapshots.worth_checking():
            return None
        return await self._run(self._snapshots.current)

    async def _require_namespace(self, namespace: Identifier) -> None:
        if namespace:
            snapshot = await self._snapshot()
            if snapshot is not None and _manifest_id(namespace) in snapshot.namespaces:
                return
            try:
                await self._call("namespace_exists", {"id": list(namespace)})
            except errors.NamespaceNotFoundError:
                # pylance's text for a fresh root ("Child namespace reads require an
                # existing __manifest dataset") does not say which namespace is missing
                raise errors.NamespaceNotFoundError(
                    f"namespace {'.'.join(namespace)!r} does not exist"
                ) from None

    # -- manifest access for what pylance has no call for ----------------------

    def _manifest_uri(self) -> str:
        return f"{self.root}/{MANIFEST_DIR}"

    def _open_manifest(self) -> Any:
        import lance

        return lance.dataset(self._manifest_uri(), storage_options=self.tables.storage_options)

    @staticmethod
    def _quote(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    def _manifest_row(self, object_id: str) -> dict[str, Any] | None:
        if not self.config.manifest_enabled:
            return None
        try:
            manifest = self._open_manifest()
        except (ValueError, OSError):
            return None
        rows = manifest.to_table(filter=f"object_id = {self._quote(object_id)}").to_pylist()
        return rows[0] if rows else None

    def _manifest_insert(self, row: dict[str, Any]) -> None:
        import pyarrow as pa

        manifest = self._open_manifest()
        table = pa.Table.from_pylist([row], schema=manifest.schema)
        result = manifest.merge_insert("object_id").when_not_matched_insert_all().execute(table)
        if int(result.get("num_inserted_rows", 0)) != 1:
            raise errors.TableAlreadyExistsError(
                f"table {row['object_id'].replace(_MANIFEST_DELIMITER, '.')!r} already exists"
            )

    def _manifest_set_location(self, object_id: str, location: str) -> None:
        import pyarrow as pa

        row = self._manifest_row(object_id)
        if row is None:
            raise errors.TableNotFoundError(f"table {object_id!r} vanished while registering")
        manifest = self._open_manifest()
        row["location"] = location
        table = pa.Table.from_pylist([row], schema=manifest.schema)
        manifest.merge_insert("object_id").when_matched_update_all().execute(table)

    def _manifest_delete(self, object_id: str) -> None:
        self._open_manifest().delete(f"object_id = {self._quote(object_id)}")

    def _mangled(self, reported: str) -> bool:
        for prefix in (f"file://{self.root}/", f"{self.root}/"):
            if reported.startswith(prefix) and _EMBEDDED_SCHEME.match(reported[len(prefix) :]):
                return True
        return False

    async def _resolve(self, reported: str, table: Identifier) -> str:
        """pylance joins every manifest location to the root; undo that for absolute ones."""
        if not self._mangled(reported):
            return reported  # the common case: no thread hop, no manifest read
        row = await self._run(self._manifest_row, join_identifier(table, _MANIFEST_DELIMITER))
        if row is not None and row.get("location"):
            return str(row["location"])
        return reported

    async def _table_call(self, method: str, table: Identifier, **body: Any) -> dict[str, Any]:
        """A pylance table call; a missing parent namespace is reported as such.

        The parent is checked only after a TableNotFound, so the common path is one
        pylance call rather than two.
        """
        try:
            return await self._call(method, {"id": list(table), **body})
        except errors.TableNotFoundError:
            await self._require_namespace(table[:-1])
            raise

    # -- namespaces --------------------------------------------------------------

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"), allow_root=False)
        if "'" in namespace[-1]:
            # pylance 14 quotes namespace ids into SQL unescaped: such a namespace
            # breaks ListNamespaces/ListTables of itself and ListAllTables of the catalog
            raise errors.InvalidInputError(
                f"namespace name {namespace[-1]!r} must not contain a single quote"
            )
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        properties = _str_map(body.get("properties"))
        create: dict[str, Any] = {"id": list(namespace)}
        if properties:
            create["properties"] = properties
        async with self._guard.filling(namespace[:-1]):
            await self._require_namespace(namespace[:-1])
            await refuse_table_named_like(self, namespace)
            if mode == "Overwrite":
                async with self._guard.dropping(namespace):
                    await self._drop_namespace_tree(namespace, missing_ok=True)
            try:
                result = await self._create_once("create_namespace", create, namespace)
            except errors.NamespaceAlreadyExistsError:
                if mode != "ExistOk":
                    raise
                described = await self._call("describe_namespace", {"id": list(namespace)})
                return CreateNamespaceResponse.from_dict(
                    {"properties": _str_map(described.get("properties")) or {}}
                )
        return CreateNamespaceResponse.from_dict(
            {"properties": _str_map(result.get("properties")) or properties or {}}
        )

    async def _create_once(
        self, method: str, body: dict[str, Any], object_id: Identifier
    ) -> dict[str, Any]:
        """A pylance create whose lost race is AlreadyExists, as the protocol says.

        pylance reports a create that lost a manifest commit race against the same
        object ("concurrently created by another operation") as a concurrent
        modification; when the object now exists, that is AlreadyExists.
        """
        try:
            return await self._call(method, body)
        except errors.ConcurrentModificationError:
            exists = "namespace_exists" if method == "create_namespace" else "table_exists"
            try:
                await self._call(exists, {"id": list(object_id)})
            except errors.NotFoundError:
                raise errors.ConcurrentModificationError(
                    f"{'.'.join(object_id)!r}: a concurrent change interfered; try again"
                ) from None
            kind = "namespace" if method == "create_namespace" else "table"
            already = (
                errors.NamespaceAlreadyExistsError
                if kind == "namespace"
                else errors.TableAlreadyExistsError
            )
            raise already(f"{kind} {'.'.join(object_id)!r} already exists") from None

    async def _child_namespaces(self, namespace: Identifier) -> list[str]:
        await self._require_namespace(namespace)
        result = await self._call("list_namespaces", {"id": list(namespace)})
        names = [str(n) for n in result.get("namespaces") or []]
        await self._require_root_for_read(namespace, empty=not names)
        return names

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"))
        check_limit(body.get("limit"))
        names = await self._child_namespaces(namespace)
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListNamespacesResponse.from_dict({"namespaces": page, "page_token": token})

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        namespace = self._namespace_id(request.to_dict().get("id"))
        result = await self._call("describe_namespace", {"id": list(namespace)})
        await self._require_root_for_read(namespace, empty=True)
        return DescribeNamespaceResponse.from_dict(
            {"properties": _str_map(result.get("properties")) or {}}
        )

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        namespace = self._namespace_id(request.to_dict().get("id"))
        await self._call("namespace_exists", {"id": list(namespace)})
        await self._require_root_for_read(namespace, empty=True)
        return NamespaceExistsResponse.from_dict({})

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"), allow_root=False)
        mode = parse_mode(body.get("mode"), DROP_MODES, default="Fail")
        behavior = parse_mode(body.get("behavior"), DROP_BEHAVIORS, default="Restrict")
        try:
            described = await self._call("describe_namespace", {"id": list(namespace)})
        except errors.NamespaceNotFoundError:
            if mode == "Skip":
                return DropNamespaceResponse.from_dict({})
            raise
        async with self._guard.dropping(namespace):
            if behavior == "Cascade":
                await self._drop_namespace_tree(namespace, missing_ok=mode == "Skip")
            else:
                await self._call("drop_namespace", {"id": list(namespace)})
        return DropNamespaceResponse.from_dict(
            {"properties": _str_map(described.get("properties")) or {}}
        )

    async def _drop_namespace_tree(self, namespace: Identifier, *, missing_ok: bool) -> None:
        """Drop a namespace with every child namespace and table below it."""
        try:
            children = await self._child_namespaces(namespace)
        except errors.NamespaceNotFoundError:
            if missing_ok:
                return
            raise
        for child in children:
            await self._drop_namespace_tree((*namespace, child), missing_ok=True)
        for table in await self._table_names(namespace, include_declared=True):
            with contextlib.suppress(errors.TableNotFoundError):
                await self._drop_table_at((*namespace, table))
        try:
            await self._call("drop_namespace", {"id": list(namespace)})
        except errors.NamespaceNotFoundError:
            if not missing_ok:
                raise

    # -- listing tables ----------------------------------------------------------

    async def _table_names(self, namespace: Identifier, *, include_declared: bool) -> list[str]:
        if namespace and include_declared:
            snapshot = await self._snapshot()
            if snapshot is not None and _manifest_id(namespace) in snapshot.namespaces:
                return list(snapshot.children.get(_manifest_id(namespace), ()))
        await self._require_namespace(namespace)
        names: list[str] = []
        token: str | None = None
        while True:
            body: dict[str, Any] = {"id": list(namespace), "include_declared": include_declared}
            if token:
                body["page_token"] = token
            result = await self._call("list_tables", body)
            names.extend(str(n) for n in result.get("tables") or [])
            token = token_of(result.get("page_token"))
            if token is None:
                await self._require_root_for_read(namespace, empty=not names)
                return names

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        namespace = self._namespace_id(body.get("id"))
        check_limit(body.get("limit"))
        include_declared = body.get("include_declared", True) is not False
        names = await self._table_names(namespace, include_declared=include_declared)
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})

    async def _list_all_tables(self, request: ListAllTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        check_limit(body.get("limit"))
        delimiter = body.get("delimiter") or self.delimiter
        if not isinstance(delimiter, str):
            raise errors.InvalidInputError("delimiter must be a string")
        include_declared = body.get("include_declared", True) is not False
        found: list[str] = []
        pending: list[Identifier] = [()]
        while pending:
            namespace = pending.pop()
            for table in await self._table_names(namespace, include_declared=include_declared):
                found.append(join_identifier((*namespace, table), delimiter))
            pending.extend((*namespace, c) for c in await self._child_namespaces(namespace))
        page, token = page_of(found, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})

    # -- tables ------------------------------------------------------------------

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        declare: dict[str, Any] = {"id": list(table)}
        if isinstance(body.get("location"), str) and body["location"]:
            declare["location"] = body["location"]
        properties = _str_map(body.get("properties"))
        if properties:
            declare["properties"] = properties
        async with self._guard.filling(table[:-1]):
            await self._require_namespace(table[:-1])
            await refuse_namespace_named_like(self, table)
            result = await self._create_once("declare_table", declare, table)
        result["location"] = canonical(str(result.get("location", "")))
        storage = self.tables.storage_options
        if storage and not result.get("storage_options"):
            result["storage_options"] = storage
        return DeclareTableResponse.from_dict(_drop_nones(result))

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        properties = _str_map(body.get("properties"))
        if len(table) == 1:
            raise errors.InvalidInputError(
                "the directory namespace keeps root tables at <root>/<name>.lance; "
                "register the table into a child namespace"
            )
        async with self._guard.filling(table[:-1]):
            await self._require_namespace(table[:-1])
            await refuse_namespace_named_like(self, table)
            if mode == "Create":  # a taken name is TableAlreadyExists, whatever the location
                await self._ensure_not_registered(table)
            stored = self._relative_to_root(location)
            if not _is_absolute_location(stored):
                self._check_relative(stored)
            await self.tables.check_placement(
                self._absolute(stored),
                require_table=True,
                claims=self._claims(table),
                what="RegisterTable location",
            )
            if mode == "Overwrite":
                with contextlib.suppress(errors.TableNotFoundError):
                    await self._deregister(table)
            register: dict[str, Any] = {"id": list(table), "location": stored}
            if properties:
                register["properties"] = properties
            if _is_absolute_location(stored):
                await self._register_absolute(table, register)
            else:
                await self._create_once("register_table", register, table)
        return RegisterTableResponse.from_dict(
            _drop_nones({"location": canonical(location), "properties": properties})
        )

    def _relative_to_root(self, location: str) -> str:
        """A location inside the root is stored relative, as pylance expects."""
        local = local_path(location)
        root_local = local_path(self.root)
        if local is not None and root_local is not None and os.path.isabs(local):
            normalized = os.path.normpath(local)
            root_norm = os.path.normpath(root_local)
            if normalized.startswith(root_norm + os.sep):
                return os.path.relpath(normalized, root_norm)
            return "file://" + normalized
        if location.startswith(self.root + "/"):
            return location[len(self.root) + 1 :]
        return location

    @staticmethod
    def _check_relative(location: str) -> None:
        parts = location.replace("\\", "/").split("/")
        if any(p == ".." for p in parts):
            raise errors.InvalidInputError(
                f"location {location!r} must not leave the namespace root"
            )

    async def _register_absolute(self, table: Identifier, register: dict[str, Any]) -> None:
        """pylance only registers relative locations: register, then set the real one."""
        if not self.config.manifest_enabled:
            raise errors.InvalidInputError(
                "a location outside the root needs the manifest (manifest_enabled=true)"
            )
        location = register["location"]
        object_id = join_identifier(table, _MANIFEST_DELIMITER)
        async with self._manifest_lock:
            await self._call("register_table", {**register, "location": _PLACEHOLDER})
            try:
                await self._run(self._manifest_set_location, object_id, location)
            except BaseException:
                await self._call("deregister_table", {"id": list(table)})
                raise

    async def _ensure_not_registered(self, table: Identifier) -> None:
        try:
            await self._call("table_exists", {"id": list(table)})
        except errors.TableNotFoundError:
            return
        raise errors.TableAlreadyExistsError(f"table {'.'.join(table)!r} already exists")

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        version = body.get("version")
        detailed = body.get("load_detailed_metadata") is True
        if detailed or body.get("check_declared") is True:
            result = await self._table_call("describe_table", table, check_declared=True)
        else:
            result = await self._plain_describe(table)
        reported = str(result.get("location", ""))
        location = await self._resolve(reported, table)
        if location != reported and "is_only_declared" in result:
            # pylance checked the wrong path for an absolute location
            result["is_only_declared"] = not await self._run(has_versions, location)
        location = canonical(location)
        result["location"] = location
        result.pop("table_uri", None)
        if body.get("with_table_uri") is True:
            result["table_uri"] = as_uri(location)
        if detailed or isinstance(version, int):
            # opened here, not by pylance, so absolute locations work the same
            await self.tables.describe(result, location, version, detailed=detailed)
        storage = self.tables.storage_options
        if storage and not result.get("storage_options"):
            result["storage_options"] = storage
        return DescribeTableResponse.from_dict(_drop_nones(result))

    async def _plain_describe(self, table: Identifier) -> dict[str, Any]:
        """pylance's DescribeTable answer (no options), from the manifest copy when it
        holds the table and pylance's form of the answer has been seen once."""
        snapshots = self._snapshots
        snapshot = await self._snapshot() if len(table) > 1 else None
        stored = None if snapshot is None else snapshot.tables.get(_manifest_id(table))
        if snapshots is None or stored is None:
            return await self._table_call("describe_table", table)
        if snapshots.confirmed:
            return snapshots.described(table, stored)
        result = await self._table_call("describe_table", table)
        snapshots.confirm(table, stored, result)
        return result

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        snapshot = await self._snapshot() if len(table) > 1 else None
        if snapshot is None or _manifest_id(table) not in snapshot.table_ids:
            await self._table_call("table_exists", table)
        version = body.get("version")
        if isinstance(version, int):
            location = await self._describe_location(table)
            if await self.tables.open(location, version) is None:
                raise errors.TableVersionNotFoundError(
                    f"table {'.'.join(table)!r} has no version {version}"
                )
        return TableExistsResponse.from_dict({})

    async def _deregister(self, table: Identifier) -> dict[str, Any]:
        result = await self._table_call("deregister_table", table)
        result["location"] = await self._resolve(str(result.get("location", "")), table)
        return result

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        table = self._table_id(request.to_dict().get("id"))
        if len(table) == 1:
            raise errors.InvalidInputError(
                "a root table of the directory namespace is its <root>/<name>.lance "
                "directory: drop it, or keep it; it cannot be deregistered"
            )
        described = await self._describe_location(table)
        result = await self._deregister(table)
        result["location"] = described
        result["id"] = list(table)
        return DeregisterTableResponse.from_dict(_drop_nones(result))

    async def _describe_location(self, table: Identifier) -> str:
        described = await self._table_call("describe_table", table)
        return canonical(await self._resolve(str(described.get("location", "")), table))

    def _absolute(self, stored: str) -> str:
        """A manifest location as a place: relative ones are inside the root."""
        return stored if _is_absolute_location(stored) else f"{self.root}/{stored}"

    def _table_locations(self) -> list[tuple[str, str]]:
        """(manifest object id, location) of every table: manifest rows, root tables."""
        found: list[tuple[str, str]] = []
        try:
            manifest = self._open_manifest() if self.config.manifest_enabled else None
        except (ValueError, OSError):
            manifest = None
        if manifest is not None:
            rows = manifest.to_table(
                columns=["object_id", "location"], filter="object_type = 'table'"
            ).to_pylist()
            found += [
                (str(r["object_id"]), self._absolute(r["location"])) for r in rows if r["location"]
            ]
        root_path = local_path(self.root)
        if root_path is not None and os.path.isdir(root_path):
            for entry in os.scandir(root_path):
                if entry.name.endswith(".lance") and entry.is_dir():
                    found.append((entry.name.removesuffix(".lance"), entry.path))
        return found

    def _claims(self, table: Identifier) -> Claims:
        """Which other table of this catalog is stored at, around or inside a place."""
        own = join_identifier(table, _MANIFEST_DELIMITER)

        def find(place: Place) -> str | None:
            for object_id, location in self._table_locations():
                other = place_of(location) if object_id != own else None
                if other is not None and (place.within(other) or other.within(place)):
                    return f"table {object_id.replace(_MANIFEST_DELIMITER, '.')!r}"
            return None

        async def claims(place: Place) -> str | None:
            return await self._run(find, place)

        return claims

    async def _drop_table_at(self, table: Identifier) -> dict[str, Any]:
        location = await self._describe_location(table)
        reason = await self.tables.deletion_refused(location, claims=self._claims(table))
        if reason is not None:
            logger.warning(
                "DropTable %s keeps the data at %r: %s", ".".join(table), location, reason
            )
            await self._forget(table, location, reason)
            return {"id": list(table), "location": location}
        if self._is_outside_root(location):
            # pylance would delete the wrong path: delete the data here, then deregister
            await self.tables.delete(location)
            await self._deregister(table)
            return {"id": list(table), "location": location}
        result = await self._call("drop_table", {"id": list(table)})
        if "%" in location:  # a name that needs percent-encoding: see _remove_encoded_twins
            await self.tables.delete(location)
            await anyio.to_thread.run_sync(_remove_encoded_twins, location)
        result["location"] = location
        result["id"] = list(table)
        return result

    async def _forget(self, table: Identifier, location: str, reason: str) -> None:
        """Drop a table whose data must be kept: deregister it, delete nothing."""
        if len(table) > 1:
            await self._deregister(table)
            return
        # a root table is its <root>/<name>.lance directory: only a link can go
        link = os.path.join(local_path(self.root) or "", f"{table[0]}.lance")

        def unlink() -> None:
            if not os.path.islink(link):
                raise errors.InvalidInputError(
                    f"DropTable {table[0]!r} refused: its data must be kept ({reason}), and "
                    "a root table cannot be deregistered"
                )
            os.unlink(link)
            if self._manifest_row(table[0]) is not None:
                self._manifest_delete(table[0])

        async with self._manifest_lock:
            await self._run(unlink)

    def _is_outside_root(self, location: str) -> bool:
        local, root_local = local_path(location), local_path(self.root)
        if local is not None and root_local is not None:
            return not os.path.normpath(local).startswith(os.path.normpath(root_local) + os.sep)
        return not location.startswith(self.root + "/")

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        table = self._table_id(request.to_dict().get("id"))
        return DropTableResponse.from_dict(_drop_nones(await self._drop_table_at(table)))

    async def _restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        version = body.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise errors.InvalidInputError("RestoreTable needs a version >= 0")
        location = await self._describe_location(table)
        dataset = await self.tables.open(location, version)
        if dataset is None:
            raise errors.TableNotFoundError(f"table {'.'.join(table)!r} has no data to restore")
        await self._run(dataset.restore)
        return RestoreTableResponse.from_dict({})

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        new_name = validate_name(
            body.get("new_table_name"),  # type: ignore[arg-type]
            delimiter=self.delimiter,
            storage_backed=True,
            what="new_table_name",
        )
        target_namespace = (
            self._namespace_id(body["new_namespace_id"])
            if body.get("new_namespace_id") is not None
            else table[:-1]
        )
        target = (*target_namespace, new_name)
        if target == table:
            raise errors.InvalidInputError("RenameTable target equals the source table")
        async with self._guard.filling(target_namespace):
            await self._require_namespace(target_namespace)
            location = await self._describe_location(table)
            await self._ensure_not_registered(target)
            await refuse_namespace_named_like(self, target)
            await self._rename_in_manifest(table, target, location)
        return RenameTableResponse.from_dict({})

    async def _rename_in_manifest(
        self, table: Identifier, target: Identifier, location: str
    ) -> None:
        if len(table) == 1 or len(target) == 1:
            if len(table) != len(target):
                raise errors.InvalidInputError(
                    "root tables live at <root>/<name>.lance: a table cannot move "
                    "between the root and a child namespace"
                )
            await self._rename_root_table(table[0], target[0], location)
            return
        source_id = join_identifier(table, _MANIFEST_DELIMITER)
        async with self._manifest_lock:
            row = await self._run(self._manifest_row, source_id)
            if row is None:
                raise errors.TableNotFoundError(f"table {'.'.join(table)!r} not found")
            new_row = dict(row)
            new_row["object_id"] = join_identifier(target, _MANIFEST_DELIMITER)
            await self._run(self._manifest_insert, new_row)
            try:
                await self._run(self._manifest_delete, source_id)
            except BaseException:
                await self._run(self._manifest_delete, new_row["object_id"])
                raise

    async def _rename_root_table(self, source: str, target: str, location: str) -> None:
        """Root tables are found by directory name, so the directory is renamed."""
        source_path, root_path = local_path(location), local_path(self.root)
        if source_path is None or root_path is None:
            raise errors.UnsupportedOperationError(
                "renaming a root table needs a local filesystem root"
            )
        destination = os.path.join(root_path, f"{target}.lance")

        def move() -> None:
            if os.path.exists(destination):
                raise errors.TableAlreadyExistsError(f"table {target!r} already exists")
            os.rename(source_path, destination)
            row = self._manifest_row(source)
            if row is not None:
                self._manifest_insert({**row, "object_id": target, "location": f"{target}.lance"})
                self._manifest_delete(source)

        async with self._manifest_lock:
            await self._run(move)

    async def _list_table_versions(
        self, request: ListTableVersionsRequest
    ) -> ListTableVersionsResponse:
        body = request.to_dict()
        table = self._table_id(body.get("id"))
        limit = check_limit(body.get("limit"))
        descending = body.get("descending") is True
        location = await self._describe_location(table)
        dataset = await self.tables.open(location)
        versions: list[dict[str, Any]] = []
        if dataset is not None:
            listed = await self._call("list_table_versions", {"id": list(table)})
            versions = [_relative_manifest(dict(v), location) for v in listed.get("versions") or []]
            if not versions:
                versions = await self._run(_versions_of, dataset)
        versions.sort(key=lambda v: int(v["version"]), reverse=descending)
        start = token_of(body.get("page_token"))
        if start is not None:
            try:
                after = int(start)
            except ValueError:
                raise errors.InvalidInputError(f"invalid page_token {start!r}") from None
            versions = [
                v
                for v in versions
                if (v["version"] < after if descending else v["version"] > after)
            ]
        token = None
        if limit is not None and len(versions) > limit:
            versions = versions[:limit]
            token = str(versions[-1]["version"])
        return ListTableVersionsResponse.from_dict(
            {"versions": [_drop_nones(v) for v in versions], "page_token": token}
        )


def _manifest_id(identifier: Identifier) -> str:
    return join_identifier(identifier, _MANIFEST_DELIMITER)


def _drop_nones(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _relative_manifest(version: dict[str, Any], location: str) -> dict[str, Any]:
    """The version with its ``manifest_path`` relative to the table, as the spec allows.

    pylance answers the object-store path (``srv/root/<dir>/_versions/N.manifest``),
    which shows the server's layout to every client and means nothing on theirs.
    """
    path = version.get("manifest_path")
    if not isinstance(path, str):
        return version
    table_path = urlparse(location).path if "://" in location else location
    prefix = unquote(table_path).strip("/") + "/"
    if path.lstrip("/").startswith(prefix):
        version["manifest_path"] = path.lstrip("/")[len(prefix) :]
    elif "/_versions/" in path:  # another spelling of the table's path: keep the table's part
        version["manifest_path"] = "_versions/" + path.rsplit("/_versions/", 1)[1]
    return version


def _versions_of(dataset: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in dataset.versions():
        timestamp = entry.get("timestamp")
        out.append(
            {
                "version": int(entry["version"]),
                "manifest_path": f"_versions/{int(entry['version'])}.manifest",
                "timestamp_millis": int(timestamp.timestamp() * 1000) if timestamp else None,
                "metadata": {str(k): str(v) for k, v in (entry.get("metadata") or {}).items()},
            }
        )
    return out


def _remove_encoded_twins(location: str) -> None:
    """What pylance 14.0.2 leaves of a dropped table whose name needs percent-encoding.

    Its DeclareTable reserves a directory at a partly *encoded* spelling of the name
    (``<hash>_k$donn%C3%A9es`` with ``.lance-reserved``) plus an empty twin encoded
    twice (``<hash>_k$donn%25C3%25A9es``), while Lance writes the data at the decoded
    path (``<hash>_k$données``); its DropTable deletes only the first. The data goes
    through ``LanceTables.delete``; this removes the empty directories left with the
    table's own ``<hash>_`` prefix (never a directory holding anything else).
    """
    path = local_path(location)
    if path is None:
        return
    parent, name = os.path.split(path)
    prefix = re.match(r"[0-9a-f]{8}_", name)
    if prefix is None or not os.path.isdir(parent):
        return
    for entry in os.listdir(parent):
        if entry.startswith(prefix.group()):
            leftover = os.path.join(parent, entry)
            with contextlib.suppress(OSError):  # not there, or not only the marker
                os.remove(os.path.join(leftover, ".lance-reserved"))
            with contextlib.suppress(OSError):  # not empty: not ours to remove
                os.rmdir(leftover)


install_pylance_operations(DirectoryNamespace)
