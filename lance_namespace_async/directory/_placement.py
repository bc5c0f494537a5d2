"""Where the tables of a namespace directory are, and how their locations are stored.

A root table is the table directory ``<root>/<name>.lance``; a table of a child
namespace has the location its manifest row stores: relative to the root (as
pylance writes and expects it) or, for one we registered outside the root,
absolute. pylance joins every stored location to the root, so an absolute one
comes back "mangled" (``<root>/file:///elsewhere``) and is read from the row.
"""

from __future__ import annotations

import contextlib
import os
import re

from .. import errors
from .._storage.places import local_path

__all__ = [
    "PLACEHOLDER",
    "absolute",
    "check_relative",
    "is_absolute_location",
    "is_outside_root",
    "mangled",
    "relative_to_root",
    "remove_encoded_twins",
    "root_tables",
]

_EMBEDDED_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")
#: the relative location an absolute registration holds until its row is rewritten
PLACEHOLDER = ".lance-namespace-async/registering"


def is_absolute_location(location: str) -> bool:
    return "://" in location or location.startswith("/") or bool(_EMBEDDED_SCHEME.match(location))


def absolute(root: str, stored: str) -> str:
    """A manifest location as a place: relative ones are inside the root."""
    return stored if is_absolute_location(stored) else f"{root}/{stored}"


def relative_to_root(root: str, location: str) -> str:
    """A location inside the root is stored relative, as pylance expects."""
    local = local_path(location)
    root_local = local_path(root)
    if local is not None and root_local is not None and os.path.isabs(local):
        normalized = os.path.normpath(local)
        root_norm = os.path.normpath(root_local)
        if normalized.startswith(root_norm + os.sep):
            return os.path.relpath(normalized, root_norm)
        return "file://" + normalized
    if location.startswith(root + "/"):
        return location[len(root) + 1 :]
    return location


def check_relative(location: str) -> None:
    parts = location.replace("\\", "/").split("/")
    if any(p == ".." for p in parts):
        raise errors.InvalidInputError(f"location {location!r} must not leave the namespace root")


def is_outside_root(root: str, location: str) -> bool:
    local, root_local = local_path(location), local_path(root)
    if local is not None and root_local is not None:
        return not os.path.normpath(local).startswith(os.path.normpath(root_local) + os.sep)
    return not location.startswith(root + "/")


def mangled(root: str, reported: str) -> bool:
    """Whether pylance joined an absolute stored location to the root."""
    for prefix in (f"file://{root}/", f"{root}/"):
        if reported.startswith(prefix) and _EMBEDDED_SCHEME.match(reported[len(prefix) :]):
            return True
    return False


def root_tables(root: str) -> list[tuple[str, str]]:
    """(name, path) of the table directories ``<root>/<name>.lance`` of a local root."""
    root_path = local_path(root)
    if root_path is None or not os.path.isdir(root_path):
        return []
    return [
        (entry.name.removesuffix(".lance"), entry.path)
        for entry in os.scandir(root_path)
        if entry.name.endswith(".lance") and entry.is_dir()
    ]


def remove_encoded_twins(location: str) -> None:
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
