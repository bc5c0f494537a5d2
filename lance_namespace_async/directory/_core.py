"""What every operation of the directory backend shares.

The pylance ``DirectoryNamespace`` it drives (opened once, called on bounded
worker threads, its storage failures naming the root), the checks of ids and of
parent namespaces, the copy of the manifest that answers reads, and DropTable's
deletion, which DropTable and a Cascade DropNamespace both use.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import anyio
import anyio.to_thread

from .. import errors
from .._core.base import AsyncLanceNamespace
from .._core.identifiers import Identifier, validate_identifier
from .._core.namespace_guard import NamespaceGuard
from .._storage.failures import storage_failure
from .._storage.places import Claims, Place, canonical, local_path, place_of
from .._storage.tables import LanceTables
from ._manifest import (
    MANIFEST_DELIMITER,
    Manifest,
    ManifestMoved,
    manifest_id,
    new_table_location,
)
from ._manifest_snapshot import PLAIN_LOCATION, ManifestSnapshots, Snapshot, read_manifest_rows
from ._placement import absolute, is_outside_root, mangled, remove_encoded_twins, root_tables
from ._properties import DirectoryConfig, absolute_root, context_provider

__all__ = ["DirectoryCore", "drop_nones", "str_map"]

T = TypeVar("T")

logger = logging.getLogger("lance_namespace_async.tables")

#: set while a counted operation runs, so the operations it calls are not counted
_IN_OPERATION: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "lance_namespace_async_dir_operation", default=False
)


def str_map(value: Any) -> dict[str, str] | None:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return None


def drop_nones(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


class DirectoryCore(AsyncLanceNamespace):
    """The state and plumbing of ``impl="dir"``; the operations are in subclasses."""

    config: DirectoryConfig
    stores_tables = True
    #: no blocking call of this backend calls back into its event loop, so a storage
    #: worker (one operation at a time) may run them on the loop thread
    blocking_calls_may_run_inline = True

    def __init__(self, config: DirectoryConfig) -> None:
        super().__init__(config)
        self.root = absolute_root(config.root)
        self.delimiter = MANIFEST_DELIMITER
        self.manifest = Manifest(self.root, config.storage, config.manifest_enabled)
        self.tables = LanceTables(
            threads=config.worker_threads,
            backend="dir",
            storage_options=config.storage,
            storage_root=self.root,
            drop_allowed=config.drop_allowed_locations,
            table_option_keys=config.table_storage_options,
            sealed=(self.manifest.uri,),
            confined=config.confine_storage,
            allowed_locations=config.allowed_locations,
        )
        self._inner: Any = None
        #: pylance's caches (manifests, file metadata, indices) shared by every call on
        #: this namespace, ours and pylance's operations: without one, each call starts
        #: from nothing (a k-NN query re-reads every data file's metadata)
        self._lance_session: Any = None
        self._open_lock = anyio.Lock()
        self._manifest_lock = anyio.Lock()
        # pylance commits a declare and a Restrict drop as separate manifest writes
        self._guard = NamespaceGuard()
        self._snapshots = self._manifest_snapshots()
        #: whether table rows of child namespaces are added and deleted here rather than
        #: by pylance's rewrite of the manifest (``_manifest``): where the copy answers,
        #: and nothing pylance does on a write differs from a plain row
        self._own_rows = (
            self._snapshots is not None
            and not config.table_version_tracking_enabled
            and not config.dynamic_context_provider
            and not config.vend_input_storage_options
        )
        self._root_place: Place | None = None
        self._ops_metrics: collections.Counter[str] | None = None
        if config.ops_metrics_enabled:
            self._count_operations()

    # -- ops_metrics_enabled -----------------------------------------------------------

    def _count_operations(self) -> None:
        """Count each operation's calls, as pylance's ``ops_metrics_enabled`` does (by
        its snake_case name). Counted here, not by pylance, because many operations are
        answered without pylance (the manifest copy, the direct reads)."""
        from .._core.operations import OPERATIONS

        counts: collections.Counter[str] = collections.Counter()
        self._ops_metrics = counts
        for operation in OPERATIONS:
            if getattr(getattr(self, f"_{operation.method}"), "__lance_unsupported__", False):
                continue
            public = getattr(self, operation.method)  # not the hooks: internal calls use those

            async def counted(
                *args: Any, _public: Any = public, _name: str = operation.method, **kwargs: Any
            ) -> Any:
                if _IN_OPERATION.get():  # an operation's own step (unique_names' check)
                    return await _public(*args, **kwargs)
                counts[_name] += 1
                token = _IN_OPERATION.set(True)
                try:
                    return await _public(*args, **kwargs)
                finally:
                    _IN_OPERATION.reset(token)

            counted.__name__ = counted.__qualname__ = operation.method
            counted.__doc__ = public.__doc__
            setattr(self, operation.method, counted)

    def retrieve_ops_metrics(self) -> dict[str, int]:
        """Calls of each operation since the start (or the last reset), by snake_case
        name; empty unless ``ops_metrics_enabled`` (pylance's method of that name)."""
        return dict(self._ops_metrics or {})

    def reset_ops_metrics(self) -> None:
        """Start counting again from zero (nothing without ``ops_metrics_enabled``)."""
        if self._ops_metrics is not None:
            self._ops_metrics.clear()

    def _manifest_snapshots(self) -> ManifestSnapshots | None:
        """Reads of a local catalog without storage settings answer from a copy of the
        manifest while it holds (``_manifest_snapshot``), not by a pylance scan each."""
        path = local_path(self.root)
        config = self.config
        if path is None or not config.manifest_enabled or config.storage:
            return None
        if config.credential_vendor:  # answers carry vended credentials: pylance's
            return None
        uri = self.manifest.uri
        return ManifestSnapshots(
            path,
            MANIFEST_DELIMITER,
            lambda version: read_manifest_rows(uri, None, version),
            f"file://{path}/",
        )

    # -- pylance -------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.tables.run(fn, *args)

    async def _rust(self) -> Any:
        if self._inner is None:
            async with self._open_lock:
                if self._inner is None:
                    from lance.lance import PyDirectoryNamespace  # type: ignore[attr-defined]

                    props = self.config.rust_properties(self.root)
                    session = self.lance_session()
                    provider = context_provider(self.config.dynamic_context_provider)
                    with self._storage_context():
                        self._inner = await self._run(
                            lambda: PyDirectoryNamespace(
                                session=session, context_provider=provider, **props
                            )
                        )
        return self._inner

    def lance_session(self) -> Any:
        """The ``lance.Session`` of this namespace (pylance's caches, keyed by file and
        version, so another writer's commits are read, never hidden)."""
        if self._lance_session is None:
            from lance.dataset import Session  # type: ignore[attr-defined]

            self._lance_session = Session()
        return self._lance_session

    async def _call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        inner = await self._rust()
        with self._storage_context(), self._own_not_found_words(body.get("id"), method):
            result = await self._run(getattr(inner, method), body)
        return dict(result or {})

    @contextlib.contextmanager
    def _own_not_found_words(self, object_id: Any, method: str) -> Iterator[None]:
        """pylance's NamespaceNotFound for a root without a ``__manifest`` ("Child
        namespace reads require an existing __manifest dataset") names neither the
        namespace nor the root: say which is missing."""
        try:
            yield
        except errors.NamespaceNotFoundError as exc:
            if "__manifest" not in exc.message or not isinstance(object_id, list):
                raise
            names = [str(part) for part in object_id]
            namespace = names if "namespace" in method else names[:-1]
            raise errors.NamespaceNotFoundError(self._missing_namespace_text(namespace)) from None

    def _missing_namespace_text(self, namespace: list[str]) -> str:
        path = local_path(self.root)
        if path is not None and not os.path.isdir(path):
            return (
                f"namespace {'.'.join(namespace)!r} does not exist: the namespace root "
                f"{self.root!r} does not exist (check the 'root' property)"
            )
        return f"namespace {'.'.join(namespace)!r} does not exist"

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
            await self._lost_create_race(method, object_id)

    async def _lost_create_race(self, method: str, object_id: Identifier) -> NoReturn:
        """After pylance's create ``method`` of ``object_id`` lost a commit race:
        AlreadyExists when the object now exists, else ConcurrentModification."""
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

    # -- ids and parents -------------------------------------------------------------

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
        # proven current by a stat or two, on this thread: no worker-thread hop
        return self._snapshots.cached() or await self._run(self._snapshots.current)

    async def _require_namespace(self, namespace: Identifier) -> None:
        if namespace:
            snapshot = await self._snapshot()
            if snapshot is not None and manifest_id(namespace) in snapshot.namespaces:
                return
            try:
                await self._call("namespace_exists", {"id": list(namespace)})
            except errors.NamespaceNotFoundError:
                # pylance's text for a fresh root ("Child namespace reads require an
                # existing __manifest dataset") does not say which namespace is missing
                raise errors.NamespaceNotFoundError(
                    self._missing_namespace_text(list(namespace))
                ) from None

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

    # -- locations -------------------------------------------------------------------

    async def _resolve(self, reported: str, table: Identifier) -> str:
        """pylance joins every manifest location to the root; undo that for absolute ones."""
        if not mangled(self.root, reported):
            return reported  # the common case: no thread hop, no manifest read
        row = await self._run(self.manifest.row, manifest_id(table))
        if row is not None and row.get("location"):
            return str(row["location"])
        return reported

    async def _describe_location(self, table: Identifier) -> str:
        described = await self._table_call("describe_table", table)
        return canonical(await self._resolve(str(described.get("location", "")), table))

    async def _confine_table(self, table: Identifier, what: str) -> None:
        """Refuse (PermissionDenied) an operation on the storage of a table that lies
        outside the root and ``allowed_locations`` of a confined backend, before
        pylance (which resolves the location itself) or anything else touches it.

        The location comes from the manifest copy when it holds (one worker hop), else
        from DescribeTable; a table that does not exist has no storage to protect (the
        operation reports it, or creates the table in the root).
        """
        if not self.tables.confinement.enabled:
            return
        if await self._run(self._confine_known, table, what):
            return
        try:
            location = await self._describe_location(table)
        except errors.NotFoundError:  # the operation reports it in its own words
            return
        await self.tables.confinement.check(location, what)

    def _confine_known(self, table: Identifier, what: str) -> bool:
        """:meth:`_confine_table` where the location is known without pylance (worker
        thread): a root table's ``<root>/<name>.lance``, a manifest copy's row or
        absence. False: ask DescribeTable."""
        refuse = self.tables.confinement.refuse
        if len(table) == 1:
            refuse(f"{self.root}/{table[0]}.lance", what)
            return True
        snapshots = self._snapshots
        if snapshots is None or not snapshots.worth_checking():
            return False
        snapshot = snapshots.current()
        if snapshot is None:
            return False
        object_id = manifest_id(table)
        stored = snapshot.tables.get(object_id)
        if stored is not None:
            refuse(absolute(self.root, stored), what)
            return True
        return object_id not in snapshot.table_ids  # no such table: nothing stored

    def _table_locations(self) -> list[tuple[str, str]]:
        """(manifest object id, location) of every table: manifest rows, root tables."""
        found = [
            (object_id, absolute(self.root, stored))
            for object_id, stored in self.manifest.table_locations()
        ]
        return found + root_tables(self.root)

    def _claims(self, table: Identifier) -> Claims:
        """Which other table of this catalog is stored at, around or inside a place."""
        own = manifest_id(table)

        def find(place: Place) -> str | None:
            known = self._claimed_in_copy(place, own)
            if known is not None:
                return known or None
            for object_id, location in self._table_locations():
                other = place_of(location) if object_id != own else None
                if other is not None and (place.within(other) or other.within(place)):
                    return f"table {object_id.replace(MANIFEST_DELIMITER, '.')!r}"
            return None

        async def claims(place: Place) -> str | None:
            return await self._run(find, place)

        return claims

    def _claimed_in_copy(self, place: Place, own: str) -> str | None:
        """:meth:`_claims` answered from the manifest copy's index of places
        (``TablePlaces``) without a scan (worker thread): the table's words, "" for
        none, None when the copy cannot tell."""
        snapshots = self._snapshots
        if snapshots is None or place.local is None:
            return None
        snapshot = snapshots.current(force=True)  # else a scan of every row
        root_path = local_path(self.root)
        if snapshot is None or root_path is None:
            return None
        if self._root_place is None:
            self._root_place = place_of(root_path)
        root = self._root_place
        if root is None or not place.below(root):
            return None
        relative = place.parts[len(root.parts) :]
        first = relative[0]
        # a root table is its <root>/<name>.lance directory, whatever the manifest says
        if (
            first.endswith(".lance")
            and first[: -len(".lance")] != own
            and os.path.isdir(os.path.join(root_path, first))
        ):
            return f"table {first[: -len('.lance')]!r}"
        found = snapshot.places.claimed(snapshot, root_path, relative, own)
        if found == snapshot.places.UNKNOWN:
            return None
        return f"table {found.replace(MANIFEST_DELIMITER, '.')!r}" if found else ""

    # -- dropping a table (DropTable, and DropNamespace's Cascade) -------------------

    async def _deregister(self, table: Identifier) -> dict[str, Any]:
        location = await self._run(self._location_in_copy, table)
        if location is not None and await self._run(self._delete_own_row, table):
            return {"id": list(table), "location": location}
        result = await self._table_call("deregister_table", table)
        result["location"] = await self._resolve(str(result.get("location", "")), table)
        return result

    async def _drop_table_at(self, table: Identifier) -> dict[str, Any]:
        location = await self._run(self._location_in_copy, table)
        if location is None:
            location = await self._describe_location(table)
        reason = await self.tables.deletion_refused(location, claims=self._claims(table))
        if reason is None and await self._run(self._delete_own_row, table):
            await self.tables.delete(location)
            return {"id": list(table), "location": location}
        if reason is not None:
            logger.warning(
                "DropTable %s keeps the data at %r: %s", ".".join(table), location, reason
            )
            await self._forget(table, location, reason)
            return {"id": list(table), "location": location}
        if is_outside_root(self.root, location):
            # pylance would delete the wrong path: delete the data here, then deregister
            await self.tables.delete(location)
            await self._deregister(table)
            return {"id": list(table), "location": location}
        result = await self._call("drop_table", {"id": list(table)})
        if "%" in location:  # a name that needs percent-encoding: see remove_encoded_twins
            await self.tables.delete(location)
            await anyio.to_thread.run_sync(remove_encoded_twins, location)
        result["location"] = location
        result["id"] = list(table)
        return result

    def _location_in_copy(self, table: Identifier) -> str | None:
        """A child namespace's table's location as DescribeTable says it, from the
        manifest copy (worker thread); None: ask pylance."""
        snapshots = self._snapshots
        if snapshots is None or len(table) < 2:
            return None
        snapshot = snapshots.current(force=True)  # else pylance's describe
        stored = None if snapshot is None else snapshot.tables.get(manifest_id(table))
        if stored is None:
            return None
        return canonical(str(snapshots.described(table, stored)["location"]))

    def _delete_own_row(self, table: Identifier) -> bool:
        """Delete a child namespace's table row ourselves (``Manifest.delete_table``),
        where the copy holds it as a plain row (worker thread); False: let pylance."""
        snapshots = self._snapshots
        if not self._own_rows or snapshots is None or len(table) < 2:
            return False
        object_id = manifest_id(table)
        # our writers take turns here too: concurrent deletions of one fragment's rows
        # conflict in Lance, and each would then fall back to pylance's rewrite
        with self.manifest.writing():
            snapshot = snapshots.current(force=True)  # else pylance's rewrite
            if snapshot is None or snapshot.version is None or object_id not in snapshot.tables:
                return False
            try:
                committed = self.manifest.delete_table(object_id, snapshot.version)
            except ManifestMoved:
                return False  # pylance's rewrite came first: pylance drops it
            if committed.version == snapshot.version + 1:
                snapshots.table_removed(snapshot, object_id)
            self._compact(snapshots, committed)
        return True

    def _compact(self, snapshots: ManifestSnapshots, committed: Any) -> None:
        """Compact the manifest after our commit (``Manifest.compact``), the copy
        carried over it."""
        version = int(committed.version)
        compacted = self.manifest.compact(committed)
        if compacted is not None:
            snapshots.rows_unchanged(version, int(compacted.version))
        self.manifest.release(committed if compacted is None else compacted)

    def _append_own_row(
        self, table: Identifier, stored: str, make: Callable[[str], None] | None = None
    ) -> bool:
        """Add a child namespace's table row stored at ``stored`` (relative, plain)
        ourselves (``Manifest.append_table``), where the copy proves the parent namespace
        exists and no table or namespace has that id (worker thread). ``make`` first
        makes what the row will point at (``<root>/<stored>``, which must not exist: the
        ``.lance-reserved`` marker of a declared table, a created table's data), taken
        back when the row is not added. False: let pylance (nothing was left written)."""
        snapshots = self._snapshots
        root_path = local_path(self.root)
        if not self._own_rows or snapshots is None or len(table) < 2 or root_path is None:
            return False
        object_id, parent = manifest_id(table), manifest_id(table[:-1])
        if not PLAIN_LOCATION.fullmatch(stored) or not PLAIN_LOCATION.fullmatch(object_id):
            return False

        def free(snapshot: Snapshot | None) -> bool:
            return not (
                snapshot is None
                or snapshot.version is None
                or parent not in snapshot.namespaces
                or object_id in snapshot.namespaces
                or object_id in snapshot.table_ids
            )

        # else pylance's rewrite: a copy even of a manifest changing all the time
        if not free(snapshots.current(force=True)):
            return False
        directory = os.path.join(root_path, stored)
        if make is not None:  # before the lock: a created table's data may take long
            if os.path.lexists(directory):
                return False  # taken: pylance decides
            try:
                make(directory)
            except BaseException:
                shutil.rmtree(directory, ignore_errors=True)
                raise
        try:
            with self.manifest.writing():
                snapshot = snapshots.current(force=True)
                if not free(snapshot):
                    raise ManifestMoved("the id was taken meanwhile: pylance decides")
                assert snapshot is not None
                assert snapshot.version is not None
                committed = self.manifest.append_table(object_id, stored, snapshot.version)
                if committed.version == snapshot.version + 1:
                    snapshots.table_added(snapshot, object_id, snapshots.prefix + stored)
                self._compact(snapshots, committed)  # one compaction at a time
        except ManifestMoved:
            if make is not None:
                shutil.rmtree(directory, ignore_errors=True)
            return False
        except BaseException:
            if make is not None:
                shutil.rmtree(directory, ignore_errors=True)
            raise
        return True

    async def _create_own_table(
        self, table: Identifier, body: dict[str, Any], data: Any
    ) -> dict[str, Any] | None:
        """CreateTable of a child namespace's table, plain (no location, properties or
        options; mode Create), written here and its row appended (``_append_own_row``),
        as pylance would lay it out; None: pylance does it."""
        mode = body.get("mode")
        if set(body) - {"id", "mode"} or (mode is not None and str(mode).lower() != "create"):
            return None
        snapshots = self._snapshots
        if not self._own_rows or snapshots is None or len(table) < 2:
            return None
        stored = new_table_location(manifest_id(table))
        session = self.lance_session()

        def write(directory: str) -> None:
            import lance

            lance.write_dataset(data.read_all(), directory, mode="create", session=session)

        if not await self._run(lambda: self._append_own_row(table, stored, write)):
            return None
        return {"location": snapshots.prefix + stored, "version": 1}

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
            if self.manifest.row(table[0]) is not None:
                self.manifest.delete(table[0])

        async with self._manifest_lock:
            await self._run(unlink)
