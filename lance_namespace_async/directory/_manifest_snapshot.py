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
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any

from ._manifest import MANIFEST_DIR
from ._open_datasets import OpenDatasets

__all__ = ["PLAIN_LOCATION", "ManifestSnapshots", "Snapshot", "TableIds", "TablePlaces"]

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
PLAIN_LOCATION = re.compile(
    r"[A-Za-z0-9_$@+=-][A-Za-z0-9_.$@+=-]*(?:/[A-Za-z0-9_$@+=-][A-Za-z0-9_.$@+=-]*)*"
)

_State = tuple[int, int, int, int]
#: the manifest's rows as columns: object ids, object types, locations, and whether each
#: row has metadata or base objects
ManifestRows = tuple[list[str], list[str], list[str | None], list[bool]]


class TablePlaces:
    """Which table of a copy is stored at, around or inside a place in the root.

    RegisterTable and DropTable must know whether another table of the catalog holds a
    place; asked of every row, that is a scan of the manifest and a ``realpath`` per
    table (a second at 100,000 tables). Here the copy's plain locations are indexed once
    (by location for the places at or around one; the few nested ones, sorted, for the
    places inside one), then kept up to date by the commits the copy is carried over.

    The index answers only for what it can prove: every table has a plain location
    (relative, no dot segments: the place is the root joined with it) and no segment of
    any location is a symbolic link (one listing of the root when built, an ``lstat``
    per segment of the few nested locations). Else :meth:`claimed` answers ``UNKNOWN``
    and the caller asks every row as before.
    """

    UNKNOWN = "?"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: stored location -> the tables stored there (None: not built yet)
        self._owners: dict[str, list[str]] | None = None
        #: the stored locations with more than one segment, sorted
        self._nested: list[str] = []
        self._links: frozenset[str] = frozenset()
        self._usable = True
        self._root = ""

    def claimed(self, snapshot: Snapshot, root: str, relative: tuple[str, ...], own: str) -> str:
        """The object id of a table other than ``own`` stored at, around or inside
        ``<root>/<relative>``, "" for none, or ``UNKNOWN`` (worker thread)."""
        with self._lock:
            if self._owners is None:
                self._build(snapshot, root)
            owners = self._owners
            if not self._usable or owners is None or not relative:
                return self.UNKNOWN
            for depth in range(1, len(relative) + 1):  # a table at or around the place
                for object_id in owners.get("/".join(relative[:depth]), ()):
                    if object_id != own:
                        return object_id
            inside = "/".join(relative) + "/"  # a table inside the place
            at = bisect.bisect_left(self._nested, inside)
            while at < len(self._nested) and self._nested[at].startswith(inside):
                for object_id in owners.get(self._nested[at], ()):
                    if object_id != own:
                        return object_id
                at += 1
            return ""

    def _build(self, snapshot: Snapshot, root: str) -> None:
        self._root = root
        self._owners = {}
        if not snapshot.complete:
            self._usable = False
            return
        try:
            with os.scandir(root) as entries:
                self._links = frozenset(e.name for e in entries if e.is_symlink())
        except OSError:
            self._usable = False
            return
        owners: dict[str, list[str]] = {}
        for object_id, stored in snapshot.tables.items():
            owners.setdefault(stored, []).append(object_id)
        nested = sorted(stored for stored in owners if "/" in stored)
        links = self._links
        if any(stored in links for stored in owners) or not all(
            self._plain(root, stored) for stored in nested
        ):
            self._usable = False
        self._owners = owners
        self._nested = nested

    def _plain(self, root: str, stored: str, *, listed: bool = True) -> bool:
        """No segment of ``<root>/<stored>`` is a symbolic link (``listed``: the root's
        entries were listed since the first segment was made)."""
        segments = stored.split("/")
        if segments[0] in self._links:
            return False
        if not listed and os.path.islink(os.path.join(root, segments[0])):
            return False
        path = os.path.join(root, segments[0])
        for segment in segments[1:]:
            path = os.path.join(path, segment)
            if os.path.islink(path):
                return False
        return True

    def added(self, object_id: str, stored: str | None) -> None:
        with self._lock:
            if self._owners is None:
                return
            if stored is None or not self._plain(self._root, stored, listed=False):
                self._usable = False
                return
            if stored not in self._owners and "/" in stored:
                bisect.insort(self._nested, stored)
            self._owners.setdefault(stored, []).append(object_id)

    def removed(self, object_id: str, stored: str | None) -> None:
        with self._lock:
            if self._owners is None or stored is None:
                return
            ids = self._owners.get(stored)
            if ids is None or object_id not in ids:
                return
            ids.remove(object_id)
            if not ids:
                del self._owners[stored]
                at = bisect.bisect_left(self._nested, stored)
                if at < len(self._nested) and self._nested[at] == stored:
                    del self._nested[at]


@dataclass(frozen=True)
class Snapshot:
    """The manifest's rows at one state of ``_versions``.

    Our own commits carry a snapshot forward in place (:meth:`ManifestSnapshots.table_added`,
    :meth:`~ManifestSnapshots.table_removed`): the containers are shared by the snapshots
    of one lineage and only ever move forward, so a carry costs one table's work, not a
    copy of 100,000 rows' worth of dicts.
    """

    state: _State
    #: the manifest version the rows were read at (None: the latest at a settled state
    #: whose version ``_versions`` did not show)
    version: int | None
    #: whether ``state`` proves the copy current (it was settled when taken): else the
    #: latest version in ``_versions`` must still be ``version``
    settled: bool
    #: object id -> stored location, for tables without metadata or base objects
    tables: dict[str, str]
    #: object ids of the other tables (rows the copy leaves to pylance)
    others: set[str]
    #: object ids of namespaces
    namespaces: frozenset[str]
    #: namespace object id ("" for the root) -> object ids of its tables, sorted (the
    #: same order as their names; no second string per table is kept)
    children: dict[str, list[str]]
    #: where the tables are, for "which table is stored there" (built on first use)
    places: TablePlaces = field(default_factory=lambda: TablePlaces())

    @property
    def table_ids(self) -> TableIds:
        """The object ids of every table."""
        return TableIds(self.tables, self.others)

    @property
    def complete(self) -> bool:
        """Whether every table has a plain location in the root (none left to pylance)."""
        return not self.others


class TableIds(AbstractSet[str]):
    """The object ids of a copy's tables, as a set: its plain rows and the others."""

    def __init__(self, tables: dict[str, str], others: set[str]) -> None:
        self._tables = tables
        self._others = others

    def __contains__(self, object_id: object) -> bool:
        return object_id in self._tables or object_id in self._others

    def __iter__(self) -> Iterator[str]:
        yield from list(self._tables)
        yield from list(self._others)

    def __len__(self) -> int:
        return len(self._tables) + len(self._others)


def _settled(state: _State) -> bool:
    """Whether the directory has been still long enough that a commit changes its times."""
    coarse = state[1] % 1_000_000_000 == 0 and state[2] % 1_000_000_000 == 0
    settled = COARSE_SETTLED_NS if coarse else SETTLED_NS
    return time.time_ns() - max(state[1], state[2]) >= settled


#: the largest manifest version (u64): pylance's V2 names count down from it
_U64_MAX = 2**64 - 1


#: how far past ``latest_version_hint.json`` the latest version is looked for, one ``stat``
#: each, before listing ``_versions`` instead
_PROBES = 64


def _manifest_name(version: int, v2: bool) -> str:
    return f"{_U64_MAX - version:020d}.manifest" if v2 else f"{version}.manifest"


def _latest_version(path: str, *, listing: bool = True) -> int | None:
    """The newest manifest version in ``_versions`` (None when none is readable).

    Lance names a version's manifest ``<version>.manifest`` (V1) or, zero-padded to 20
    digits, ``<u64 max - version>.manifest`` (V2); a commit adds the file of exactly the
    next version (put-if-absent), so the latest changes with every commit, whatever the
    clock. Found from ``latest_version_hint.json`` (written after each commit, so never
    ahead of a version that exists) by checking that its version exists and the next
    ones do not: a few ``stat`` calls, where listing ``_versions`` grows with every
    commit the catalog ever made (pylance keeps them all). Without a usable hint, the
    listing (None instead without ``listing``).
    """
    hinted = _hinted_version(path)
    if hinted is not None:
        for v2 in (True, False):
            if os.path.exists(os.path.join(path, _manifest_name(hinted, v2))):
                latest = hinted
                for _ in range(_PROBES):
                    if not os.path.exists(os.path.join(path, _manifest_name(latest + 1, v2))):
                        return latest
                    latest += 1
                break
    return _listed_latest_version(path) if listing else None


def _hinted_version(path: str) -> int | None:
    try:
        with open(os.path.join(path, "latest_version_hint.json"), "rb") as hint:
            text = hint.read(256)
        value = json.loads(text).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and 0 < value < _U64_MAX else None


def _listed_latest_version(path: str) -> int | None:
    """:func:`_latest_version` by listing every file of ``_versions``."""
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
        self,
        root_path: str,
        delimiter: str,
        read_rows: Callable[[int | None], ManifestRows | None],
        prefix: str,
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

    def cached(self) -> Snapshot | None:
        """The copy, when a ``stat`` or the latest version's few ``stat`` calls prove it
        current (:meth:`current` without ever reading rows or listing ``_versions``):
        cheap enough to ask on the event loop's thread. None: ask :meth:`current` on a
        worker thread."""
        snapshot = self._snapshot
        if snapshot is None:
            return None
        state = _state(self._versions)
        if state is None:
            return None
        if snapshot.settled and snapshot.state == state:
            return snapshot
        if snapshot.version is not None and _latest_version(self._versions, listing=False) == (
            snapshot.version
        ):
            if _settled(state):  # from now on its state proves it current (see current)
                snapshot = replace(snapshot, state=state, settled=True)
                self._snapshot = snapshot
            return snapshot
        return None

    def current(self, *, force: bool = False) -> Snapshot | None:
        """The snapshot of the manifest as it is now, or None (then ask pylance).

        ``force``: copy a manifest that is changing all the time anyway, for a caller
        whose alternative is a scan of every row (which a copy costs about as much as)."""
        proven = self.cached()  # the copy, when its state or the hinted version proves it
        if proven is not None:
            return proven
        state = _state(self._versions)
        if state is None:
            return None
        snapshot = self._snapshot
        latest = _latest_version(self._versions)  # listing _versions where no hint helps
        if _settled(state):
            if snapshot is not None and snapshot.version is not None and latest == snapshot.version:
                # from now on its state proves it current
                snapshot = replace(snapshot, state=state, settled=True)
                self._snapshot = snapshot
                return snapshot
            return self._refresh(state, latest, settled=True)
        # changed a moment ago: the stat cannot see a commit within the same clock tick,
        # the version numbers can
        if latest is None:
            return None
        if snapshot is not None and snapshot.version == latest:
            return snapshot
        now = time.monotonic_ns()
        if not force and snapshot is not None and now < self._refreshed_at + RECHECK_NS:
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
        # another thread reading the rows: wait for its copy (cheaper than any pylance
        # answer, which scans the manifest, or for the root lists every directory)
        self._refreshing.acquire()
        try:
            done = self._snapshot
            if done is not None and version is not None and done.version == version:
                return done  # the other thread copied this very version
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
        rows: ManifestRows,
        version: int | None = None,
        settled: bool = False,
    ) -> Snapshot:
        tables: dict[str, str] = {}
        others: set[str] = set()
        namespaces: set[str] = set()
        children: dict[str, list[str]] = {}
        delimiter = self._delimiter
        plain = PLAIN_LOCATION.fullmatch
        for object_id, kind, location, extra in zip(*rows, strict=True):
            if kind == "namespace":
                namespaces.add(object_id)
            elif kind == "table":
                parent = object_id.rpartition(delimiter)[0]
                children.setdefault(parent, []).append(object_id)
                if not extra and location is not None and plain(location):
                    tables[object_id] = location
                else:
                    others.add(object_id)
        for ids in children.values():
            ids.sort()
        return Snapshot(
            state,
            version,
            settled or version is None,
            tables,
            others,
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
        if object_id in before.table_ids:
            return
        stored = None
        if location is not None and location.startswith(self._prefix):
            stored = location[len(self._prefix) :]
        if stored is not None and not PLAIN_LOCATION.fullmatch(stored):
            stored = None

        def add(snapshot: Snapshot) -> None:
            parent = object_id.rpartition(self._delimiter)[0]
            bisect.insort(snapshot.children.setdefault(parent, []), object_id)
            if stored is not None:
                snapshot.tables[object_id] = stored
            else:
                snapshot.others.add(object_id)
            snapshot.places.added(object_id, stored)

        self._carry(before, add)

    def table_removed(self, before: Snapshot, object_id: str) -> None:
        """:meth:`table_added`'s twin for our own commit that deleted the row ``object_id``."""
        if object_id not in before.table_ids:
            return

        def remove(snapshot: Snapshot) -> None:
            parent = object_id.rpartition(self._delimiter)[0]
            ids = snapshot.children.get(parent, [])
            at = bisect.bisect_left(ids, object_id)
            if at < len(ids) and ids[at] == object_id:
                del ids[at]
            snapshot.others.discard(object_id)
            snapshot.places.removed(object_id, snapshot.tables.pop(object_id, None))

        self._carry(before, remove)

    def _carry(self, before: Snapshot, change: Callable[[Snapshot], None]) -> None:
        """Apply ``change`` to ``before``'s rows in place and make the result the copy at
        version V + 1, when our commit is provably that version (see :meth:`table_added`)."""
        version = before.version
        if version is None or _latest_version(self._versions) != version + 1:
            return
        state = _state(self._versions)
        if state is None:
            return
        with self._refreshing:
            current = self._snapshot
            if current is not before and (current is None or current.version != version):
                return  # another copy (a later one, or a rebuilt one) is here: keep it
            change(before)
            self._snapshot = replace(before, state=state, version=version + 1, settled=False)

    def rows_unchanged(self, version: int, committed: int) -> None:
        """Carry the copy at ``version`` over commits that changed no row (up to
        ``committed``: our compaction of the manifest), when that is still the latest."""
        if _latest_version(self._versions) != committed:
            return
        state = _state(self._versions)
        with self._refreshing:
            current = self._snapshot
            if state is not None and current is not None and current.version == version:
                self._snapshot = replace(current, state=state, version=committed, settled=False)

    @property
    def prefix(self) -> str:
        """What a table's location is: this + its stored (relative) location."""
        return self._prefix

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
) -> ManifestRows | None:
    """The rows of the manifest at ``uri``, at ``version`` or the latest, column by
    column (None when it is too large or has other columns): a column's ``to_pylist``
    costs a fraction of a dict per row."""
    import lance
    import pyarrow.compute as pc

    dataset = lance.dataset(uri, version=version, storage_options=storage_options or None)
    if set(dataset.schema.names) != set(_COLUMNS) or dataset.count_rows() > MAX_ROWS:
        return None
    table = dataset.to_table(columns=list(_COLUMNS))
    extra = pc.or_kleene(pc.is_valid(table["metadata"]), pc.is_valid(table["base_objects"]))
    return (
        table["object_id"].to_pylist(),
        table["object_type"].to_pylist(),
        table["location"].to_pylist(),
        extra.to_pylist(),
    )
