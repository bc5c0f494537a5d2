"""A read-only copy of a local directory catalog's ``__manifest`` table, kept while it holds.

pylance's Rust ``DirectoryNamespace`` answers DescribeTable, TableExists and ListTables by
scanning the manifest (a Lance table) on every call: about a millisecond of CPU each, more
than the whole rest of a REST request. The manifest only changes by a commit, and a commit
adds a file to ``__manifest/_versions``, which changes that directory's mtime and ctime.
So a copy of the rows read at one state of that directory answers every call made while
the directory still has that state, for the price of one ``stat``.

The copy is trusted only when it cannot miss a commit:

* the directory's state (inode, mtime, ctime, size) is the same before and after the rows
  were read, and again when the copy is used;
* the directory had not changed for ``SETTLED_NS`` when it was read: a file system
  stamps times at a clock tick, so a commit in the same tick as the read could leave the
  stamps as they were (git's "racy" index entries); a directory that changed a second
  before cannot be changed again within the tick it was stamped in (three seconds where
  the times are whole seconds: file systems stamping in 1 or 2 s steps);
* the root is a local path (object stores have no directory times), and the manifest
  has at most ``MAX_ROWS`` rows (the copy is held in memory).

A manifest that changed a moment ago (a table just created, then written to) is not
left to pylance for the second its times need to settle: its rows are copied at the
exact version the names in ``_versions`` show as the latest, and that copy is used
while the latest version stays the same, checked by listing ``_versions`` on each use
(what pylance does on each call anyway, minus the scan). A version is a commit's own
number, never reused, so no commit can hide in a clock tick. Once the directory has
settled with the copy still the latest version, the copy goes back to the ``stat``
check. A manifest changing faster than ``RECHECK_NS`` is left to pylance as before.

Anything the copy cannot answer (a missing row, a row with metadata, a location of an
unusual form, an answer pylance has not shown its form of yet) goes to pylance as before,
so error texts and edge cases stay pylance's.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ._manifest import MANIFEST_DIR
from ._open_datasets import OpenDatasets

__all__ = ["ManifestSnapshots", "Snapshot"]

#: the directory must have been still this long before its rows are trusted
SETTLED_NS = 1_000_000_000
#: ... and this long where its times are whole seconds (a file system stamping in 1 or 2 s
#: steps, FAT's for one)
COARSE_SETTLED_NS = 3_000_000_000
#: a manifest still changing is copied at most once per this long; in between, reads of a
#: newer version go straight to pylance (no stat): a catalog written to all the time then
#: pays one copy per interval, not one per read
RECHECK_NS = 100_000_000
#: larger manifests are not copied (about 200 bytes a row in memory)
MAX_ROWS = 200_000
#: the manifest's columns the copy reads; a manifest with others is left to pylance
_COLUMNS = ("object_id", "object_type", "location", "metadata", "base_objects")
#: relative locations pylance joins to the root verbatim (no encoding, no dot segments)
_PLAIN_LOCATION = re.compile(
    r"[A-Za-z0-9_$@+=-][A-Za-z0-9_.$@+=-]*(?:/[A-Za-z0-9_$@+=-][A-Za-z0-9_.$@+=-]*)*"
)

_State = tuple[int, int, int, int]


@dataclass(frozen=True)
class Snapshot:
    """The manifest's rows at one state of ``_versions``."""

    state: _State
    #: the manifest version the rows were read at (None: the latest at a settled state
    #: whose version ``_versions`` did not show)
    version: int | None
    #: whether ``state`` proves the copy current (it was settled when taken): else the
    #: latest version in ``_versions`` must still be ``version``
    settled: bool
    #: object id -> stored location, for tables without metadata or base objects
    tables: dict[str, str]
    #: object ids of every table
    table_ids: frozenset[str]
    #: object ids of namespaces
    namespaces: frozenset[str]
    #: namespace object id ("" for the root) -> names of its tables, sorted
    children: dict[str, list[str]]


def _settled(state: _State) -> bool:
    """Whether the directory has been still long enough that a commit changes its times."""
    coarse = state[1] % 1_000_000_000 == 0 and state[2] % 1_000_000_000 == 0
    settled = COARSE_SETTLED_NS if coarse else SETTLED_NS
    return time.time_ns() - max(state[1], state[2]) >= settled


#: the largest manifest version (u64): pylance's V2 names count down from it
_U64_MAX = 2**64 - 1


def _latest_version(path: str) -> int | None:
    """The newest manifest version named in ``_versions`` (None when none is readable).

    Lance names a version's manifest ``<version>.manifest`` (V1) or, zero-padded to 20
    digits, ``<u64 max - version>.manifest`` (V2); a commit adds a file with a higher
    version, so the latest changes with every commit, whatever the clock.
    """
    latest = None
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                stem, _, suffix = entry.name.partition(".")
                if suffix != "manifest" or not stem.isdigit() or not stem.isascii():
                    continue
                number = int(stem)
                version = _U64_MAX - number if len(stem) == 20 else number
                if latest is None or version > latest:
                    latest = version
    except OSError:
        return None
    return latest


def _state(path: str) -> _State | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class ManifestSnapshots:
    """The current :class:`Snapshot` of one catalog's manifest, when one can be trusted.

    ``read_rows(version)`` returns the manifest's rows at that version, or the latest
    for None (the ``_COLUMNS`` of each, or raises);
    every method here blocks on the file system and runs on a worker thread.
    """

    def __init__(
        self, root_path: str, delimiter: str, read_rows: Callable[[int | None], Any], prefix: str
    ) -> None:
        self._versions = os.path.join(root_path, MANIFEST_DIR, "_versions")
        self._delimiter = delimiter
        self._read_rows = read_rows
        self._snapshot: Snapshot | None = None
        self._refreshing = threading.Lock()
        #: what pylance's DescribeTable location should be: this + the stored location
        self._prefix = prefix
        #: whether a real pylance answer had exactly the form :meth:`described` builds
        self.confirmed = False
        self._unsettled_until = 0  # time.monotonic_ns() before which not to look again
        self._refreshed_at = 0  # time.monotonic_ns() of the last copy of a changing manifest
        #: the tables' datasets kept open for the direct reads (``_reads``)
        self.datasets = OpenDatasets()

    def worth_checking(self) -> bool:
        """False for a while after the manifest was found changing (no file system access)."""
        return time.monotonic_ns() >= self._unsettled_until

    def current(self) -> Snapshot | None:
        """The snapshot of the manifest as it is now, or None (then ask pylance)."""
        state = _state(self._versions)
        if state is None:
            return None
        snapshot = self._snapshot
        if snapshot is not None and snapshot.settled and snapshot.state == state:
            return snapshot
        if _settled(state):
            # a copy at an exact version, still the latest now that the directory is still:
            # from now on its state proves it current
            latest = _latest_version(self._versions)
            if snapshot is not None and snapshot.version is not None and latest == snapshot.version:
                snapshot = replace(snapshot, state=state, settled=True)
                self._snapshot = snapshot
                return snapshot
            return self._refresh(state, latest, settled=True)
        # changed a moment ago: the stat cannot see a commit within the same clock tick,
        # the version numbers can
        latest = _latest_version(self._versions)
        if latest is None:
            return None
        if snapshot is not None and snapshot.version == latest:
            return snapshot
        now = time.monotonic_ns()
        if snapshot is not None and now < self._refreshed_at + RECHECK_NS:
            # changing all the time: reads go to pylance for a while, without a look
            self._unsettled_until = self._refreshed_at + RECHECK_NS
            return None
        self._refreshed_at = now
        return self._refresh(state, latest)

    def _refresh(
        self, state: _State, version: int | None = None, *, settled: bool = False
    ) -> Snapshot | None:
        """Copy the rows of ``version`` (the latest for None); ``settled``: ``state`` was
        settled, and proves the copy current while it stays the same.

        A settled copy records its version too (the latest ``_versions`` named, read at
        exactly that version), so our own commits can carry it forward
        (:meth:`table_added`)."""
        if not self._refreshing.acquire(blocking=False):
            return None  # another thread is reading it: this call asks pylance
        try:
            rows = self._read_rows(version)
            if rows is None or (settled and _state(self._versions) != state):
                return None
            snapshot = self._build(state, rows, version, settled)
            self._snapshot = snapshot
            return snapshot
        except Exception:  # an unreadable manifest (or version) is pylance's to report
            return None
        finally:
            self._refreshing.release()

    def _build(
        self,
        state: _State,
        rows: list[dict[str, Any]],
        version: int | None = None,
        settled: bool = False,
    ) -> Snapshot:
        tables: dict[str, str] = {}
        namespaces: set[str] = set()
        children: dict[str, list[str]] = {}
        delimiter = self._delimiter
        for row in rows:
            object_id = row["object_id"]
            kind = row["object_type"]
            if kind == "namespace":
                namespaces.add(object_id)
            elif kind == "table":
                parent, _, name = object_id.rpartition(delimiter)
                children.setdefault(parent, []).append(name)
                location = row["location"]
                if (
                    row["metadata"] is None
                    and row["base_objects"] is None
                    and isinstance(location, str)
                    and _PLAIN_LOCATION.fullmatch(location)
                ):
                    tables[object_id] = location
        for names in children.values():
            names.sort()
        table_ids = frozenset(
            f"{parent}{delimiter}{name}" if parent else name
            for parent, names in children.items()
            for name in names
        )
        return Snapshot(
            state,
            version,
            settled or version is None,
            tables,
            table_ids,
            frozenset(namespaces),
            children,
        )

    def table_added(self, before: Snapshot, object_id: str, location: str | None) -> None:
        """Carry the copy over our own commit that added the table row ``object_id``
        (stored at ``location``, pylance's answer, when the row is a plain one; None
        when the copy must leave that row to pylance), rather than read the manifest
        again on the next call (worker thread).

        Only when ``before`` (proven current just before the commit started) was taken
        at a known version V, and ``_versions`` now names V + 1 as the latest: our
        commit came after V, so with V + 1 the only version after it, V + 1 is ours and
        holds V's rows plus ours. A commit of any other writer in between makes the
        latest version higher, and the copy is then read again as before. The carried
        copy is checked like any copy of a changing manifest: by the latest version,
        on every use.
        """
        version = before.version
        if version is None or object_id in before.table_ids:
            return
        if _latest_version(self._versions) != version + 1:
            return
        state = _state(self._versions)
        if state is None:
            return
        delimiter = self._delimiter
        parent, _, name = object_id.rpartition(delimiter)
        names = list(before.children.get(parent, ()))
        bisect.insort(names, name)
        tables = before.tables
        stored = None
        if location is not None and location.startswith(self._prefix):
            stored = location[len(self._prefix) :]
        if stored is not None and _PLAIN_LOCATION.fullmatch(stored):
            tables = {**tables, object_id: stored}
        with self._refreshing:
            current = self._snapshot
            if current is not None and (current.version or 0) > version:
                return  # a copy of a later version is already here
            self._snapshot = Snapshot(
                state,
                version + 1,
                False,
                tables,
                before.table_ids | {object_id},
                before.namespaces,
                {**before.children, parent: names},
            )

    def described(self, table: tuple[str, ...], stored: str) -> dict[str, Any]:
        """pylance's DescribeTable answer (without options) for a table stored at ``stored``."""
        location = self._prefix + stored
        return {
            "table": table[-1],
            "namespace": list(table[:-1]),
            "location": location,
            "table_uri": location,
        }

    def confirm(self, table: tuple[str, ...], stored: str, answer: dict[str, Any]) -> None:
        """Trust :meth:`described` once pylance answered exactly that for a copied row."""
        if answer == self.described(table, stored):
            self.confirmed = True


def read_manifest_rows(
    uri: str, storage_options: dict[str, str] | None, version: int | None = None
) -> Any:
    """The rows of the manifest at ``uri``, at ``version`` or the latest (None when it
    is too large or has other columns)."""
    import lance

    dataset = lance.dataset(uri, version=version, storage_options=storage_options or None)
    if set(dataset.schema.names) != set(_COLUMNS) or dataset.count_rows() > MAX_ROWS:
        return None
    return dataset.to_table(columns=list(_COLUMNS)).to_pylist()
