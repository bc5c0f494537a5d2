"""Where a table is: a location resolved to one :class:`Place`, and the containment rule.

Deleting data and confining storage are decided on places, never on strings,
because a catalog entry can point anywhere (RegisterTable takes any location, and
other tools write catalogs too). A location resolves to one place (symlinks and
``..`` resolved, ``file:`` URIs and percent-encoding decoded, trailing slashes
ignored; an object-store key with ``.``/``..`` segments never does), compared
segment by segment, so ``/root2`` is not inside ``/root`` and ``s3://b/root`` not
inside ``s3://c/root``. :func:`contained` is the one rule both use: strictly inside
the storage root, or at/below an operator's prefix. The properties that configure
it (``root``, ``drop_allowed_locations``, ``confine_storage``,
``allowed_locations``, ``table_storage_options``) are declared here for every
catalog backend.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import attrs

from .._core.config import parse_bool, prop

if TYPE_CHECKING:
    pass


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")


#: object-store schemes that name the same store
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs"}


#: what Lance keeps inside a table directory: never another table, so not searched
_LANCE_INTERNALS = frozenset(
    {"_versions", "data", "_transactions", "_indices", "_deletions", "_refs", "_alter_transactions"}
)


#: where Lance keeps a table's branches, inside the table (``<table>/tree/<name>``)
_BRANCHES = "tree"


#: the directory manifest's folder name (seed 002)
MANIFEST_NAME = "__manifest"


#: directories searched below a location for nested tables before giving up (and keeping it)
_MAX_DIRECTORIES_SEARCHED = 10_000


DROP_ALLOWED_LOCATIONS_DOC = (
    "comma-separated location prefixes (absolute paths or URIs) outside the storage "
    "root whose tables DropTable may delete; elsewhere outside the root, a drop only "
    "deregisters the table and keeps its data"
)


CONFINE_STORAGE_DOC = (
    "refuse (PermissionDenied, code 15) every operation on a table stored outside the "
    "storage root and allowed_locations, and RegisterTable/DeclareTable there, before "
    "storage is contacted (lance-ns serve sets it; default false)"
)


ALLOWED_LOCATIONS_DOC = (
    "comma-separated location prefixes (absolute paths or URIs) outside the storage "
    "root whose tables a confine_storage backend may still read, write and register"
)


#: ``root`` of the catalog backends whose new tables go under the cwd without one
STORAGE_ROOT_DOC = (
    "storage root of new tables, inside which DropTable deletes data "
    "(default: new tables under the cwd, deleted only at that default location)"
)


@attrs.frozen
class Place:
    """A location resolved to one place: scheme, authority (bucket) and path segments.

    Local paths have scheme ``file`` and an empty authority.
    """

    scheme: str
    authority: str
    parts: tuple[str, ...]

    def within(self, other: Place) -> bool:
        """Whether this place is ``other`` or below it."""
        return (
            self.scheme == other.scheme
            and self.authority == other.authority
            and self.parts[: len(other.parts)] == other.parts
        )

    def below(self, other: Place) -> bool:
        """Whether this place is strictly below ``other``."""
        return self.within(other) and len(self.parts) > len(other.parts)

    @property
    def local(self) -> str | None:
        """The filesystem path of a local place, else None."""
        return "/" + "/".join(self.parts) if self.scheme == "file" else None

    def __str__(self) -> str:
        local = self.local
        if local is not None:
            return local
        return f"{self.scheme}://{self.authority}/{'/'.join(self.parts)}"


def place_of(location: str, *, resolve_links: bool = True) -> Place | None:
    """The one place ``location`` names, or None when that is ambiguous.

    Local forms (``/p``, ``file:/p``, ``file:///p``, ``file://localhost/p``, a path
    relative to the cwd) resolve ``..`` and, with ``resolve_links``, symlinks; ``file:``
    URIs are percent-decoded (plain paths are taken literally, as they are opened).
    Object-store URIs are percent-decoded; a key with ``.`` or ``..`` segments, a query
    or a fragment is ambiguous.
    """
    if not isinstance(location, str) or not location or "\x00" in location:
        return None
    if location.startswith("file:"):
        parsed = urlparse(location)
        if parsed.netloc not in ("", "localhost") or parsed.query or parsed.fragment:
            return None
        path = unquote(parsed.path)
        if not path.startswith("/"):
            return None
    elif "://" in location:
        parsed = urlparse(location)
        if not _SCHEME.match(parsed.scheme) or parsed.query or parsed.fragment:
            return None
        if not parsed.netloc:
            return None
        scheme = parsed.scheme.lower()
        parts = tuple(p for p in unquote(parsed.path).split("/") if p)
        if any(p in (".", "..") for p in parts):
            return None
        return Place(_SCHEME_ALIASES.get(scheme, scheme), parsed.netloc.lower(), parts)
    else:
        path = os.path.abspath(location)
    path = os.path.realpath(path) if resolve_links else os.path.normpath(path)
    return Place("file", "", tuple(p for p in path.split("/") if p))


def storage_root_prop(*, default: str | None = None, doc: str = STORAGE_ROOT_DOC) -> Any:
    """The ``root`` property of a catalog backend: where new tables go by default, and
    inside which DropTable deletes data (``doc`` says what happens without it)."""
    return prop(default=default, doc=doc)


def drop_allowed_locations_prop() -> Any:
    """The ``drop_allowed_locations`` property: prefixes outside the storage root whose
    tables DropTable may delete too (:func:`parse_locations`)."""
    return prop(default=(), parse=parse_locations, doc=DROP_ALLOWED_LOCATIONS_DOC)


TABLE_STORAGE_OPTIONS_DOC = (
    "storage-option keys a table may set for this backend's own storage work, through its "
    "catalog properties or CreateTable's storage_options: '*' any (the default: the spec "
    "reads a table's properties as its storage options), or a comma-separated list ('' "
    "none; lance-ns serve sets that unless --allow-storage-option names keys)"
)


def table_storage_options_prop() -> Any:
    """The ``table_storage_options`` property (:func:`parse_option_keys`): which storage
    options a table's catalog properties, or a request creating it, may set."""
    return prop(default=None, parse=parse_option_keys, doc=TABLE_STORAGE_OPTIONS_DOC)


def parse_option_keys(value: str) -> frozenset[str] | None:
    """``*`` (any key: None) or a comma-separated list of storage-option keys."""
    if value.strip() == "*":
        return None
    return frozenset(part.strip() for part in value.split(",") if part.strip())


def confine_storage_prop() -> Any:
    """The ``confine_storage`` property: refuse tables outside the storage root and
    ``allowed_locations`` (:class:`~.containment.Confinement`)."""
    return prop(default=False, parse=parse_bool, doc=CONFINE_STORAGE_DOC)


def table_version_tracking_prop() -> Any:
    """The ``table_version_tracking_enabled`` property (pylance's DirectoryNamespace's
    name for it): DescribeTable and DeclareTable answer ``managed_versioning=true``, so
    pylance records every version of the catalog's storage-managed tables through
    CreateTableVersion (an atomic put-if-not-exists of its manifest) and finds them with
    ListTableVersions."""
    return prop(
        default=False,
        parse=parse_bool,
        doc="pylance commits the tables' versions through CreateTableVersion "
        "(DescribeTable answers managed_versioning=true)",
    )


def allowed_locations_prop() -> Any:
    """The ``allowed_locations`` property: prefixes outside the storage root that a
    ``confine_storage`` backend may still use (:func:`parse_locations`)."""
    return prop(default=(), parse=parse_locations, doc=ALLOWED_LOCATIONS_DOC)


def parse_locations(value: str) -> tuple[str, ...]:
    """A comma-separated list of absolute locations (paths or URIs)."""
    found = tuple(part.strip() for part in value.split(",") if part.strip())
    for location in found:
        if not (location.startswith(("/", "file:")) or "://" in location):
            raise ValueError(f"{location!r} is not an absolute path or URI")
        if place_of(location, resolve_links=False) is None:
            raise ValueError(f"{location!r} does not name one place")
    return found


#: a backend's answer to "which other table holds this place?" (None: none)
Claims = Callable[[Place], Awaitable[str | None]]


async def layout_claims(
    place: Place,
    root: Place | None,
    own: Sequence[str],
    describe: Callable[[list[str]], Awaitable[str | None]],
    *,
    shortest: int,
    longest: int | None = None,
) -> str | None:
    """Which other table holds ``place``, for catalogs that lay tables out by name.

    Below the storage root, the table at ``<root>/<a>/<b>/<c>`` is table ``a.b.c``:
    each id spelled by ``place``'s path below the root (``shortest`` to ``longest``
    levels) is looked up with ``describe`` (its location, or None when there is no
    such table), and one whose location is ``place`` or holds it, or lies inside
    it, is the other table. ``own`` (the table asking) does not count.
    """
    if root is None or not place.below(root):
        return None
    relative = place.parts[len(root.parts) :]
    top = len(relative) if longest is None else min(longest, len(relative))
    for size in range(shortest, top + 1):
        candidate = list(relative[:size])
        if candidate == list(own):
            continue
        location = await describe(candidate)
        other = place_of(location) if location else None
        if other is not None and (place.within(other) or other.within(place)):
            return f"table {'.'.join(candidate)!r}"
    return None


def _nested_table(path: str) -> str | None:
    """Another Lance table (or the manifest) around or inside the directory ``path``."""
    parent = os.path.dirname(path)
    while True:
        if os.path.isdir(os.path.join(parent, "_versions")):
            return f"it is inside the Lance table at {parent!r}"
        if os.path.basename(parent) == MANIFEST_NAME:
            return "it is inside a namespace manifest"
        above = os.path.dirname(parent)
        if above == parent:
            break
        parent = above
    if not os.path.isdir(path) or os.path.islink(path):
        return None
    pending = [path]
    searched = 0
    while pending:
        directory = pending.pop()
        searched += 1
        if searched > _MAX_DIRECTORIES_SEARCHED:
            return f"it holds more than {_MAX_DIRECTORIES_SEARCHED} directories to check"
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        in_table = os.path.isdir(os.path.join(directory, "_versions"))
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or entry.name in _LANCE_INTERNALS:
                continue
            if in_table and entry.name == _BRANCHES:
                continue  # the table's own branches, not another table
            if entry.name == MANIFEST_NAME:
                return f"it holds a namespace manifest ({entry.path!r})"
            if os.path.isdir(os.path.join(entry.path, "_versions")):
                return f"it holds another Lance table ({entry.path!r})"
            pending.append(entry.path)
    return None


def local_path(location: str) -> str | None:
    """The local filesystem path of a location, or None for an object store."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)  # a URI: non-ASCII names arrive encoded
    if "://" in location:
        return None
    return location


def canonical(location: str) -> str:
    """Local locations as ``file://`` URIs, so every operation reports one form.

    Catalogs store them variously (``/p``, ``file:/p`` as Hadoop writes them,
    ``file:///p``); all three become ``file:///p``.
    """
    if location.startswith("/"):
        return "file://" + os.path.normpath(location)
    if location.startswith("file:") and not location.startswith("file://"):
        return "file://" + os.path.normpath("/" + location[len("file:") :].lstrip("/"))
    return location


def as_uri(location: str) -> str:
    """A complete URI for a location (relative paths against the cwd)."""
    if "://" in location:
        return location
    return "file://" + os.path.abspath(location)


def contained(place: Place, root: Place | None, allowed: Iterable[Place]) -> bool:
    """The one containment rule, for deletion and for confinement: strictly inside
    ``root``, or at/below one of the ``allowed`` prefixes."""
    if root is not None and place.below(root):
        return True
    return any(place.within(prefix) for prefix in allowed)


def _place_or_none(location: str | None) -> Place | None:
    return place_of(location) if location else None
