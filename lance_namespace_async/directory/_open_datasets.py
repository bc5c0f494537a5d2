"""Datasets of a local directory catalog kept open between reads, while they hold.

A k-NN query on a freshly opened dataset costs more than on one kept open (pylance
builds its per-dataset state, the fragments' readers, again: about 0.5 ms at 100,000
rows), and a server answers every QueryTable and CountTableRows by opening the table.
A dataset opened at a version is immutable, so an open one answers every read of that
version; what must never happen is answering "the latest" with a version another
writer has already moved past.

So each kept dataset is stored with the identity of the manifest file it was opened
from (version, inode, mtime, size) and reused only while ``_versions`` still shows that
file as the one wanted: the latest for a read without a version, which a commit by any
writer (another process, pylance directly) changes, since a commit adds a manifest with
a higher version. One directory listing per read, the step pylance takes on every open
anyway. A table dropped and created again at the same location has new manifest files
(new inodes), so its old dataset is not reused either.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any

__all__ = ["OpenDatasets"]

#: datasets kept open per catalog (the least recently used goes first)
MAX_OPEN = 64
_U64_MAX = 2**64 - 1
_Identity = tuple[int, int, int, int]


def manifest_identity(versions: str, version: int | None) -> _Identity | None:
    """(version, inode, mtime, size) of the manifest of ``version`` (the latest for
    None) in the ``_versions`` directory ``versions``; None when there is none."""
    best: tuple[int, os.DirEntry[str]] | None = None
    try:
        with os.scandir(versions) as entries:
            for entry in entries:
                stem, _, suffix = entry.name.partition(".")
                if suffix != "manifest" or not stem.isdigit() or not stem.isascii():
                    continue
                number = int(stem)
                found = _U64_MAX - number if len(stem) == 20 else number
                if version is not None:
                    if found == version:
                        best = (found, entry)
                        break
                elif best is None or found > best[0]:
                    best = (found, entry)
            if best is None:
                return None
            st = best[1].stat()
    except OSError:
        return None
    return (best[0], st.st_ino, st.st_mtime_ns, st.st_size)


class OpenDatasets:
    """``lance.dataset(location, version=..., session=...)`` for local ``file://``
    locations, reusing a dataset opened before while its manifest is still the one
    wanted (thread-safe: called on worker threads)."""

    def __init__(self) -> None:
        self._open: collections.OrderedDict[tuple[str, int | None], tuple[_Identity, Any]] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()

    def open(self, location: str, version: int | None, session: Any) -> Any:
        import lance

        identity = None
        if location.startswith("file:///"):
            path = location[len("file://") :]
            identity = manifest_identity(os.path.join(path, "_versions"), version)
        if identity is None:
            return lance.dataset(location, version=version, session=session)
        key = (location, version)
        with self._lock:
            kept = self._open.get(key)
            if kept is not None and kept[0] == identity:
                self._open.move_to_end(key)
                return kept[1]
        dataset = lance.dataset(location, version=version, session=session)
        if dataset.version != identity[0]:
            return dataset  # a commit landed in between: keep nothing
        with self._lock:
            self._open[key] = (identity, dataset)
            self._open.move_to_end(key)
            while len(self._open) > MAX_OPEN:
                self._open.popitem(last=False)
        return dataset
