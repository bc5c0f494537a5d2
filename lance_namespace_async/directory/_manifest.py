"""The ``__manifest`` table, read and written here for what pylance has no call for.

Nested namespaces, their properties and the tables of child namespaces are rows
of the Lance table ``<root>/__manifest`` (pylance's layout). Our own writes: a
location outside the root (pylance joins every location to the root), a rename (a
new row, then the old one deleted), a root table's row after its directory moved or
its link went, and the common table writes of a large catalog (:meth:`Manifest.append_table`,
:meth:`Manifest.delete_table`).

Why those last two are ours: pylance 14.0.2 commits every change by rewriting the
whole manifest into a new data file (an ``Overwrite``), so a DeclareTable costs in
proportion to the catalog (about 15 ms at 10,000 tables, 100 ms at 100,000) and leaves
a dead copy of the manifest behind each time. Appending the one new row as a fragment
of its own, and deleting a row with a deletion file, cost the same at any size; the
small fragments are compacted into one now and then (Lance's ``compact_files``). The
directory stays pylance's: the same table, schema and rows, and pylance's next write
rewrites it as before. Each of our commits is made on top of exactly the version the
manifest copy that approved it was read at (``read_version``): a concurrent pylance
rewrite makes it fail (Lance refuses an append over an ``Overwrite``), and then pylance
does the write instead. Lance would rebase an append over another append, so two of
our writers (threads or processes) adding rows take turns: the check that the id is free
and the commit are made holding an advisory lock (``flock``) on ``__manifest/.lna-write.lock``
(local roots only, where this path is taken). An append of the same id by a writer that
takes no lock is still found after the commit and resolved: the earlier fragment keeps
the id. Calls here block: run them on a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from .. import errors
from .._core.identifiers import Identifier, join_identifier
from .._storage.places import local_path

__all__ = [
    "MANIFEST_DELIMITER",
    "MANIFEST_DIR",
    "Manifest",
    "ManifestMoved",
    "manifest_id",
    "new_table_location",
]

#: the file (in ``__manifest``, where Lance reads no file it does not know) whose
#: ``flock`` our row-adding writers of one catalog take turns with
LOCK_FILE = ".lna-write.lock"
#: compact the manifest once our appends and deletions left more small fragments than this
COMPACT_AT_FRAGMENTS = 16
#: compaction merges fragments into ones of at most this many rows, and leaves the full
#: ones alone: a compaction costs the same at any catalog size (a pylance rewrite makes
#: one fragment of every row, also left alone)
FRAGMENT_ROWS = 4096


class ManifestMoved(Exception):
    """Another writer changed the manifest in a way our commit cannot be made over (a
    pylance rewrite): nothing of ours was committed; let pylance do the write."""


MANIFEST_DIR = "__manifest"
MANIFEST_DELIMITER = "$"


def manifest_id(identifier: Identifier) -> str:
    """The manifest's ``object_id`` of a namespace or table: its parts joined by ``$``."""
    return join_identifier(identifier, MANIFEST_DELIMITER)


def new_table_location(object_id: str) -> str:
    """Where a new table of a child namespace goes, relative to the root, in pylance's
    form: ``<8 random hex digits>_<object id>`` (the prefix keeps a table re-created
    under the same name out of the old one's directory)."""
    return f"{secrets.token_hex(4)}_{object_id}"


def _shown(object_id: str) -> str:
    """A manifest object id as our messages name a table: its parts joined by dots."""
    return repr(object_id.replace(MANIFEST_DELIMITER, "."))


def _lost_to_a_rewrite(exc: Exception) -> bool:
    """Whether Lance refused our commit over a concurrent one it cannot be made on top of
    (pylance's rewrite of the manifest): nothing of ours was committed."""
    return type(exc).__name__ == "CommitConflictError" or "Incompatible transaction" in str(exc)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class Manifest:
    """The manifest of the namespace directory ``root`` (absent when disabled)."""

    def __init__(self, root: str, storage_options: Mapping[str, str] | None, enabled: bool) -> None:
        self.uri = f"{root}/{MANIFEST_DIR}"
        self.storage_options = dict(storage_options or {}) or None
        self.enabled = enabled
        self._cached_schema: Any = None
        #: the manifest dataset our last commit made (see :meth:`_take`)
        self._last: Any = None
        self._last_lock = threading.Lock()
        #: the local directory of the root (None for object stores): where the lock is
        self.local_root = local_path(root)

    def open(self) -> Any:
        import lance

        return lance.dataset(self.uri, storage_options=self.storage_options)

    def row(self, object_id: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            manifest = self.open()
        except (ValueError, OSError):
            return None
        rows = manifest.to_table(filter=f"object_id = {_quote(object_id)}").to_pylist()
        return rows[0] if rows else None

    def insert(self, row: dict[str, Any]) -> None:
        import pyarrow as pa

        with self.writing():
            manifest = self.open()
            table = pa.Table.from_pylist([row], schema=manifest.schema)
            insert = manifest.merge_insert("object_id").when_not_matched_insert_all()
            result = insert.execute(table)
        if int(result.get("num_inserted_rows", 0)) != 1:
            raise errors.TableAlreadyExistsError(f"table {_shown(row['object_id'])} already exists")

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the catalog's row-adding lock (``__manifest/.lna-write.lock``), which every
        writer of ours takes around its check and its commit (blocks; nothing to hold
        where the root is not local)."""
        import fcntl

        if self.local_root is None:
            yield
            return
        path = os.path.join(self.local_root, MANIFEST_DIR, LOCK_FILE)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # releases the lock

    def _schema(self) -> Any:
        if self._cached_schema is None:
            self._cached_schema = self.open().schema
        return self._cached_schema

    def append_table(self, object_id: str, location: str, read_version: int) -> Any:
        """Add the table row ``object_id`` at ``location`` (relative to the root) as a
        fragment of its own, on top of exactly ``read_version``, where the caller saw no
        such row; the version committed. ManifestMoved: a rewrite came first (nothing
        committed). TableAlreadyExists: another writer's append of the same id came first
        (ours is taken back)."""
        import lance
        import pyarrow as pa
        from lance.fragment import write_fragments

        schema = self._schema()
        row = {
            "object_id": object_id,
            "object_type": "table",
            "location": location,
            "metadata": None,
            "base_objects": None,
        }
        fragments = write_fragments(
            pa.Table.from_pylist([row], schema=schema), self.uri, schema=schema
        )
        committed = self._commit(lance.LanceOperation.Append(fragments), read_version)
        if committed.version != read_version + 1:
            self._keep_first(committed, object_id, fragments[0].files[0].path)
        return committed

    def _taken(self, version: int) -> Any:
        """The dataset :meth:`release` kept, now the caller's alone, when it is at
        ``version`` (else None): a Lance dataset object must not be used by two threads
        at once (a deletion changes it in place)."""
        with self._last_lock:
            last, self._last = self._last, None
        return last if last is not None and int(last.version) == version else None

    def _take(self, version: int) -> Any:
        """The manifest dataset at ``version``: the one our last commit left when it is
        that version (opening a version anew costs more than a deletion), else opened."""
        import lance

        last = self._taken(version)
        if last is not None:
            return last
        return lance.dataset(self.uri, version=version, storage_options=self.storage_options)

    def release(self, dataset: Any) -> None:
        """Keep ``dataset`` (the version a commit of ours made, no longer used by its
        caller) for the next write's :meth:`_take`."""
        with self._last_lock:
            self._last = dataset

    def _commit(self, operation: Any, read_version: int) -> Any:
        import lance

        base = self._taken(read_version) or self.uri
        try:
            return lance.LanceDataset.commit(
                base,
                operation,
                read_version=read_version,
                storage_options=self.storage_options,
                max_retries=0,
            )
        except Exception as exc:
            if _lost_to_a_rewrite(exc):
                raise ManifestMoved(str(exc)) from exc
            raise

    def _keep_first(self, dataset: Any, object_id: str, our_file: str) -> None:
        """After our append was rebased over other commits: when another fragment holds
        the same id too, the one committed first keeps it and ours is taken back."""
        import lance

        found = dataset.to_table(
            columns=["object_id"], filter=f"object_id = {_quote(object_id)}", with_row_address=True
        )
        holders = sorted({int(a) >> 32 for a in found.column("_rowaddr").to_pylist()})
        if len(holders) < 2:
            return
        ours = next(
            (f.fragment_id for f in dataset.get_fragments() if f.data_files()[0].path == our_file),
            None,
        )
        if ours is None or ours == holders[0]:
            return
        lance.LanceDataset.commit(
            self.uri,
            lance.LanceOperation.Delete([], [ours], f"object_id = {_quote(object_id)}"),
            read_version=dataset.version,
            storage_options=self.storage_options,
        )
        raise errors.TableAlreadyExistsError(f"table {_shown(object_id)} already exists")

    def delete_table(self, object_id: str, read_version: int) -> Any:
        """Delete the table row ``object_id`` (a deletion file, not a rewrite), on top of
        ``read_version``; the dataset committed. TableNotFound when no row was deleted."""
        dataset = self._take(read_version)
        try:
            deleted = dataset.delete(f"object_id = {_quote(object_id)}")
        except Exception as exc:
            if _lost_to_a_rewrite(exc):
                raise ManifestMoved(str(exc)) from exc
            raise
        if isinstance(deleted, dict) and int(deleted.get("num_deleted_rows", 1)) == 0:
            raise errors.TableNotFoundError(f"table {_shown(object_id)} does not exist")
        return dataset

    def compact(self, dataset: Any) -> Any:
        """When the manifest ``dataset`` (ours, just committed) has more than
        ``COMPACT_AT_FRAGMENTS`` small fragments (or ones with deleted rows), merge them
        into fragments of up to ``FRAGMENT_ROWS`` rows: reads of the manifest, pylance's
        and ours, cost per fragment. The latest version
        once compacted (its dataset), when every commit since ``dataset`` was the
        compaction's own (it reserves fragment ids, then rewrites: the rows are the
        same); else None (nothing to do, a concurrent writer, or the compaction lost to
        one: best effort)."""
        import lance

        try:
            small = sum(
                1
                for fragment in dataset.get_fragments()
                if fragment.metadata.physical_rows < FRAGMENT_ROWS
                # Lance rewrites a fragment with more than 10% of its rows deleted
                or fragment.metadata.num_deletions * 10 > fragment.metadata.physical_rows
            )
            if small <= COMPACT_AT_FRAGMENTS:
                return None
            ours = int(dataset.version)  # compact_files moves ``dataset`` to its result
            metrics = dataset.optimize.compact_files(target_rows_per_fragment=FRAGMENT_ROWS)
            if not metrics.fragments_removed:
                return None
            latest = lance.dataset(self.uri, storage_options=self.storage_options)
            for version in range(ours + 1, int(latest.version) + 1):
                transaction = latest.read_transaction(version)
                kind = type(getattr(transaction, "operation", None)).__name__
                # Rewrite, and the fragment-id reservation (no Python class of its own)
                if kind not in ("Rewrite", "BaseOperation"):
                    return None
            return latest
        except Exception:
            return None

    def set_location(self, object_id: str, location: str) -> None:
        import pyarrow as pa

        row = self.row(object_id)
        if row is None:
            raise errors.TableNotFoundError(f"table {object_id!r} vanished while registering")
        manifest = self.open()
        row["location"] = location
        table = pa.Table.from_pylist([row], schema=manifest.schema)
        manifest.merge_insert("object_id").when_matched_update_all().execute(table)

    def delete(self, object_id: str) -> None:
        self.open().delete(f"object_id = {_quote(object_id)}")

    def table_locations(self) -> list[tuple[str, str]]:
        """(object id, stored location) of every table row with a location."""
        try:
            manifest = self.open() if self.enabled else None
        except (ValueError, OSError):
            manifest = None
        if manifest is None:
            return []
        rows = manifest.to_table(
            columns=["object_id", "location"], filter="object_type = 'table'"
        ).to_pylist()
        return [(str(r["object_id"]), r["location"]) for r in rows if r["location"]]
