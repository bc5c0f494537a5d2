"""What every catalog backend does with the Lance tables themselves.

Catalogs (directory, Iceberg, Unity, Glue, Hive) only know where a table lives;
the table's version, schema and statistics come from opening it with pylance,
and dropping a table deletes its directory. That happens here, once: blocking
pylance and filesystem calls run on bounded anyio worker threads, and their
failures become typed errors.

Deleting data is decided here too, once for every backend, because a catalog
entry can point anywhere (RegisterTable takes any location, and other tools
write catalogs too). :meth:`LanceTables.drop_data` deletes a table's directory
only when all of these hold, and otherwise keeps the data (the caller then only
deregisters the table):

* the location resolves to one place (symlinks and ``..`` resolved, ``file:``
  URIs and percent-encoding decoded, trailing slashes ignored; an object-store
  key with ``.``/``..`` segments never does), compared segment by segment, so
  ``/root2`` is not inside ``/root`` and ``s3://b/root`` not inside ``s3://c/root``;
* it is strictly inside the *storage root* (the backend's configured root), or
  at or below a prefix of the operator's ``drop_allowed_locations``; a backend
  without a configured root deletes only the table's own default location;
* it is not the storage root, the namespace root or an ancestor of either, nor
  the directory manifest or anything inside it;
* it is not inside another Lance table and holds no other Lance table (checked
  on local storage), and no other table of the catalog claims it (the backend's
  ``claims`` callback).

:meth:`LanceTables.check_placement` is the same judgement for RegisterTable and
DeclareTable with an explicit location, which refuse (InvalidInput, code 13)
the root, the manifest, and locations inside or holding another table.

A backend with ``confine_storage`` uses no storage outside its root and
``allowed_locations`` at all, by the same rules (``_containment``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlparse

import anyio
import anyio.to_thread
import attrs

from . import errors
from ._arrow_json import json_arrow_schema
from ._config import parse_bool, prop

if TYPE_CHECKING:
    from ._base import AsyncLanceNamespace

__all__ = [
    "ALLOWED_LOCATIONS_DOC",
    "CONFINE_STORAGE_DOC",
    "DROP_ALLOWED_LOCATIONS_DOC",
    "TABLE_TYPE",
    "Claims",
    "LanceTables",
    "Place",
    "allowed_locations_prop",
    "as_uri",
    "canonical",
    "catalog_claims",
    "confine_storage_prop",
    "contained",
    "drop_allowed_locations_prop",
    "has_versions",
    "is_lance_table",
    "lance_parameters",
    "layout_claims",
    "local_path",
    "parse_locations",
    "place_of",
    "storage_failure",
    "storage_root_prop",
    "table_storage_options_prop",
    "translate",
]

T = TypeVar("T")

#: the property or parameter that marks a catalog table as a Lance table
TABLE_TYPE = "table_type"

_RUST_SOURCE_SUFFIX = re.compile(r",\s*/home/runner/\S+?\.rs:\d+:\d+")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")
#: object-store schemes that name the same store
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs"}
#: what Lance keeps inside a table directory: never another table, so not searched
_LANCE_INTERNALS = frozenset(
    {"_versions", "data", "_transactions", "_indices", "_deletions", "_refs"}
)
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

logger = logging.getLogger("lance_namespace_async.tables")


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
    ``allowed_locations`` (:class:`~._containment.Confinement`)."""
    return prop(default=False, parse=parse_bool, doc=CONFINE_STORAGE_DOC)


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


def catalog_claims(
    ns: AsyncLanceNamespace,
    tables: LanceTables,
    own: Sequence[str],
    *,
    shortest: int,
    longest: int | None = None,
) -> Claims:
    """:func:`layout_claims` for a catalog backend, looking ids up with its DescribeTable
    (a missing table, or an id the catalog cannot have, holds nothing)."""
    from .models import DescribeTableRequest

    async def describe(candidate: list[str]) -> str | None:
        try:
            described = await ns.describe_table(DescribeTableRequest.from_dict({"id": candidate}))
        except (errors.NotFoundError, errors.InvalidInputError):
            return None
        return described.location if isinstance(described.location, str) else None

    async def claims(place: Place) -> str | None:
        return await layout_claims(
            place, tables.storage_root, own, describe, shortest=shortest, longest=longest
        )

    return claims


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
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or entry.name in _LANCE_INTERNALS:
                continue
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


def has_data(location: str, storage_options: Mapping[str, str] | None = None) -> bool:
    """Whether a Lance table (any version) is stored at ``location``."""
    path = local_path(location)
    if path is not None:
        return os.path.isdir(os.path.join(path, "_versions"))
    import lance

    try:
        lance.dataset(location, storage_options=dict(storage_options or {}) or None)
    except (ValueError, OSError):
        return False
    return True


def has_versions(location: str) -> bool:
    """Whether a table directory holds Lance versions (object stores: assume so)."""
    path = local_path(location)
    return path is None or os.path.isdir(os.path.join(path, "_versions"))


#: pylance's storage failures: an OS error, as Rust's Debug form or as its Display
_OS_ERROR_DEBUG = re.compile(r'Os \{ code: (\d+), kind: \w+, message: "([^"]*)" \}')
_OS_ERROR_DISPLAY = re.compile(r"(?:operation on|path) (\S+?): ([^,(]+?) \(os error (\d+)\)")
_UNKNOWN_SCHEME = re.compile(r"No object store provider found for scheme: '([^']*)'")
#: errnos that mean "this path cannot hold a table or catalog": ENOENT, ENOTDIR,
#: EISDIR, EROFS, ENAMETOOLONG; EPERM and EACCES are a permission problem
_BAD_PATH_ERRNOS = frozenset({2, 20, 21, 30, 36})
_PERMISSION_ERRNOS = frozenset({1, 13})


def storage_failure(exc: BaseException) -> errors.LanceNamespaceError | None:
    """pylance's failure to reach storage as a typed error with a one-line cause.

    pylance reports them as ``InternalError``/``OSError`` whose text is a Rust
    debug dump (source locations of its build machine included). The typed error
    keeps the OS's own words and the path; the full text stays on the exception
    chain (``lance-ns --verbose`` prints it).
    """
    text = str(exc)
    scheme = _UNKNOWN_SCHEME.search(text)
    if scheme:
        return errors.InvalidInputError(f"no storage provider for the scheme {scheme.group(1)!r}")
    display = _OS_ERROR_DISPLAY.search(text)
    debug = _OS_ERROR_DEBUG.search(text)
    if display:
        path, cause, errno = display.group(1), display.group(2), int(display.group(3))
        message = f"{cause} (at {path})"
    elif debug:
        errno, message = int(debug.group(1)), debug.group(2)
    else:
        return None
    if errno in _PERMISSION_ERRNOS:
        return errors.PermissionDeniedError(message)
    if errno in _BAD_PATH_ERRNOS:
        return errors.InvalidInputError(message)
    return errors.InternalError(f"storage error: {message}")


_MISSING_MANIFEST = re.compile(r"_versions/\d+\.manifest was not found")
_MISSING_COLUMN = re.compile(r"Column \S+ does not exist")
_NOT_IN_SCHEMA = re.compile(r"\S+ not found in schema")


def _data_failure(exc: BaseException, message: str) -> errors.LanceNamespaceError | None:
    """A failure of pylance's dataset API (not its namespace) that is the caller's.

    The dataset API raises plain ValueError/OSError/KeyError/RuntimeError; their
    words say what went wrong: rows of another schema (20), a filter or expression
    it cannot use (13), a missing or existing tag (8, 9), a missing version (11), a
    missing index (6) or column (12).
    """
    if "with different schema" in message or "SchemaMismatch" in message:
        return errors.TableSchemaValidationError(message)
    if "Invalid user input" in message or "LanceError(Schema)" in message:
        return errors.InvalidInputError(message)  # pylance's words for a caller's mistake
    if "Ref not found" in message:
        return errors.TableTagNotFoundError(message)
    if "Ref conflict" in message:
        return errors.TableTagAlreadyExistsError(message)
    if "Version not found" in message or _MISSING_MANIFEST.search(message):
        return errors.TableVersionNotFoundError(message)
    if "Failed to open dataset" in message and "was not found" in message:
        # a declared table (or one whose data went away): nothing to read or change yet;
        # 4, as pylance's namespace answers the other data operations on such a table
        return errors.TableNotFoundError(
            "the table has no Lance data at its location yet (a declared table has none "
            "until data is written)"
        )
    lowered = message.lower()
    if "index" in lowered and "not found" in lowered and isinstance(exc, KeyError | RuntimeError):
        return errors.TableIndexNotFoundError(message.strip("'\""))
    if isinstance(exc, ValueError) and _MISSING_COLUMN.search(message):
        return errors.TableColumnNotFoundError(message)
    if isinstance(exc, KeyError) and _NOT_IN_SCHEMA.search(message):
        # create_scalar_index/create_index on a column the table does not have
        return errors.TableColumnNotFoundError(message.strip("'\""))
    return None


def is_native_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic pyo3 raised (``PanicException``, a BaseException)."""
    return type(exc).__name__ == "PanicException"


#: Rust's ``Location { file: "...", line: N, column: N }`` (a source position in a message)
_RUST_LOCATION = re.compile(r",?\s*location:\s*Location\s*\{[^}]*\}|Location\s*\{[^}]*\}")


def translate(exc: BaseException) -> errors.LanceNamespaceError:
    """Turn an exception of pylance or the OS into our typed error."""
    if isinstance(exc, errors.LanceNamespaceError):
        return exc
    code = getattr(exc, "code", None)
    untyped = code is None or code == errors.ErrorCode.INTERNAL
    if untyped and not isinstance(exc, FileNotFoundError | PermissionError):
        storage = storage_failure(exc)
        if storage is not None:
            return storage
    message = _RUST_LOCATION.sub("", _RUST_SOURCE_SUFFIX.sub("", str(exc)))
    if is_native_panic(exc):  # the native code failed, not the request
        return errors.InternalError(f"the storage engine failed: {message}")
    if isinstance(code, int) and type(exc).__module__.startswith("lance_namespace"):
        if code == errors.ErrorCode.INTERNAL:
            # pylance 14.0.2 reports a caller's mistake inside a data operation as
            # Internal: a filter Lance cannot parse, rows of another schema
            reason = message.removeprefix("Internal error: ")
            if "InvalidInput {" in message:
                return errors.InvalidInputError(reason)
            if "with different schema" in message or "SchemaMismatch" in message:
                return errors.TableSchemaValidationError(reason)
        return errors.from_code(int(code), message)
    data = _data_failure(exc, message)
    if data is not None:
        return data
    if "JSON number out of range" in message:  # a number serde_json cannot hold
        return errors.InvalidInputError(f"a number of the request is out of range: {message}")
    if isinstance(exc, OverflowError):  # a number pylance cannot hold (k=10**20, ...)
        return errors.InvalidInputError(f"a number of the request is out of range: {message}")
    if isinstance(exc, NotImplementedError):
        return errors.UnsupportedOperationError(message)
    if isinstance(exc, FileNotFoundError):
        return errors.TableNotFoundError(message)
    if isinstance(exc, PermissionError):
        return errors.PermissionDeniedError(message)
    return errors.InternalError(f"{type(exc).__name__}: {message}")


def is_lance_table(
    parameters: Mapping[str, Any] | None,
    *,
    table_kind: Any = None,
    external_kind: str | None = None,
) -> bool:
    """Whether a catalog entry is a Lance table, by the rule every catalog seed states:
    its ``parameters`` (properties) hold ``table_type=lance``, case-insensitive; for
    catalogs whose tables have a kind, ``table_kind`` must also be ``external_kind``
    (Glue's and Hive's ``EXTERNAL_TABLE``, Unity's ``EXTERNAL``), case-insensitive."""
    if external_kind is not None and str(table_kind or "").upper() != external_kind:
        return False
    return str((parameters or {}).get(TABLE_TYPE, "")).lower() == "lance"


def lance_parameters(requested: Mapping[str, Any] | None) -> dict[str, str]:
    """A catalog table's properties as strings, marked ``table_type=lance``."""
    parameters = {str(k): str(v) for k, v in (requested or {}).items()}
    parameters[TABLE_TYPE] = "lance"
    return parameters


def _delete_tree(location: str, storage_options: dict[str, str] | None) -> None:
    """Delete a table directory; object stores through the table's storage options."""
    import shutil

    local = local_path(location)
    if local is not None:
        if os.path.islink(local):
            os.unlink(local)  # a link is removed, its target never followed
        elif os.path.exists(local):
            shutil.rmtree(local)
        return
    import lance

    lance.LanceDataset.drop(location, storage_options=storage_options, ignore_not_found=True)


def _version_metadata(dataset: Any) -> dict[str, str]:
    for entry in dataset.versions():
        if int(entry["version"]) == int(dataset.version):
            return {str(k): str(v) for k, v in (entry.get("metadata") or {}).items()}
    return {}


class LanceTables:
    """Opens, inspects and deletes Lance tables for a backend, off the event loop."""

    def __init__(
        self,
        *,
        threads: int,
        storage_options: Mapping[str, str] | None = None,
        storage_root: str | None = None,
        drop_allowed: Iterable[str] = (),
        protected: Iterable[str] = (),
        sealed: Iterable[str] = (),
        table_option_keys: frozenset[str] | None = None,
        confined: bool = False,
        confine_root: str | None = None,
        allowed_locations: Iterable[str] = (),
    ) -> None:
        """``storage_root``: where tables may be deleted (None: only at their default
        location); ``drop_allowed``: further prefixes where they may; ``protected``:
        places never deleted themselves, nor anything above them (the storage root is
        one); ``sealed``: places nothing inside of which is deleted or registered (the
        directory manifest). With ``confined``, tables are used only strictly inside
        ``confine_root`` (default: ``storage_root``; None: nowhere) or at/below an
        ``allowed_locations`` prefix (:attr:`confinement`);
        ``table_option_keys``: the storage options a table's own properties may set
        (None: any), see :meth:`options_for`."""
        self.limiter = anyio.CapacityLimiter(threads)
        self.table_option_keys = table_option_keys
        self.storage_options = dict(storage_options or {}) or None
        self.storage_root = _place_or_none(storage_root)
        self._allowed = [p for p in map(_place_or_none, drop_allowed) if p is not None]
        self._protected = [
            p for p in map(_place_or_none, (*protected, storage_root)) if p is not None
        ]
        self._sealed = [p for p in map(_place_or_none, sealed) if p is not None]
        from ._containment import Confinement

        self.confinement = Confinement(
            confined, confine_root or storage_root, allowed_locations, self.run
        )

    def options_for(
        self, properties: Mapping[str, Any], exclude: frozenset[str] = frozenset({TABLE_TYPE})
    ) -> dict[str, str]:
        """A table's storage options: its properties (less catalog markers) over the
        configured ``storage.*`` options.

        Only the keys ``table_storage_options`` allows come from the properties: anyone
        who can register a table writes them, and a served backend must not let a
        request point its storage traffic, signed with its own credentials, at another
        endpoint (``aws_endpoint``) or swap those credentials. The others are left out.
        """
        options = dict(self.storage_options or {})
        allowed = self.table_option_keys
        options.update(
            {
                str(k): str(v)
                for k, v in properties.items()
                if k not in exclude and (allowed is None or k in allowed)
            }
        )
        return options

    def refuse_request_options(self, requested: Mapping[str, Any] | None) -> None:
        """Refuse (InvalidInput) storage options a request names that
        ``table_storage_options`` does not allow, before anything is written."""
        allowed = self.table_option_keys
        if allowed is None or not requested:
            return
        refused = sorted(str(key) for key in requested if key not in allowed)
        if refused:
            shown = ", ".join(repr(key[:64]) for key in refused[:5])
            raise errors.InvalidInputError(
                f"storage options {shown} may not be set by a request: the server's "
                "operator allows "
                + (", ".join(sorted(allowed)) if allowed else "none")
                + " (table_storage_options, lance-ns serve --allow-storage-option)"
            )

    async def complete(
        self,
        result: dict[str, Any],
        request: Mapping[str, Any],
        location: str,
        version: Any,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        """The parts of a DescribeTable answer that come from the table itself (opened
        with ``storage_options`` when given, e.g. vended credentials, else the configured)."""
        if request.get("with_table_uri") is True:
            result["table_uri"] = canonical(location)
        detailed = request.get("load_detailed_metadata") is True
        if detailed or (isinstance(version, int) and not isinstance(version, bool)):
            await self.describe(
                result, location, version, detailed=detailed, storage_options=storage_options
            )
        elif request.get("check_declared") is True:
            opened = await self.open(location, storage_options=storage_options)
            result["is_only_declared"] = opened is None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking call on a bounded worker thread, with typed errors."""
        try:
            return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)
        except errors.LanceNamespaceError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_native_panic(exc):
                raise  # cancellation, exit
            raise translate(exc) from exc

    async def open(
        self,
        location: str,
        version: int | None = None,
        *,
        storage_options: Mapping[str, str] | None = None,
    ) -> Any:
        """The dataset at ``location`` (at ``version``), or None when it has no data yet."""
        import lance

        options = dict(storage_options) if storage_options is not None else self.storage_options
        await self.confinement.check(location, "reading the table")

        if version is not None and not 0 <= version < 2**64:
            # Lance versions are u64: pylance would raise OverflowError (an internal error)
            raise errors.InvalidInputError(f"version must be >= 0 and < 2**64, got {version}")

        def open_it() -> Any:
            try:
                return lance.dataset(location, version=version, storage_options=options)
            except ValueError as exc:
                text = str(exc)
                missing = "not found" in text.lower()
                if version is not None and missing and has_versions(location):
                    raise errors.TableVersionNotFoundError(
                        f"version {version} of table at {location!r} not found"
                    ) from None
                if "was not found" in text or "Not found" in text:
                    return None
                raise

        return await self.run(open_it)

    async def describe(
        self,
        result: dict[str, Any],
        location: str,
        version: Any,
        *,
        detailed: bool,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        """Fill ``result`` with version, and if ``detailed`` schema, stats and metadata."""
        wanted = version if isinstance(version, int) and not isinstance(version, bool) else None
        dataset = await self.open(location, wanted, storage_options=storage_options)
        if dataset is None:
            if wanted is not None:
                raise errors.TableVersionNotFoundError(
                    f"table at {location!r} is only declared and has no version {wanted}"
                )
            result["is_only_declared"] = True
            return
        result["version"] = int(dataset.version)
        result["is_only_declared"] = False
        if detailed:
            stats = await self.run(dataset.stats.dataset_stats)
            result["schema"] = json_arrow_schema(dataset.schema)
            result["stats"] = {
                "num_deleted_rows": int(stats.get("num_deleted_rows", 0)),
                "num_fragments": int(stats.get("num_fragments", 0)),
            }
            summary = await self.run(_version_metadata, dataset)
            if summary:
                result["metadata"] = summary

    async def require(self, location: str) -> Any:
        """The dataset at ``location``; InvalidInput when no Lance table is there."""
        try:
            dataset = await self.open(location)
        except errors.InternalError as exc:
            raise errors.InvalidInputError(f"no Lance table at {location!r}: {exc}") from None
        if dataset is None:
            raise errors.InvalidInputError(f"no Lance table at {location!r}")
        return dataset

    # -- what may be deleted and registered ---------------------------------------------------

    def _shape_problem(self, place: Place | None) -> str | None:
        """Why nothing may be deleted or registered at ``place`` (None: no reason)."""
        if place is None:
            return "it does not resolve to one place"
        for protected in self._protected:
            if protected.within(place):
                what = "is" if protected == place else "holds"
                return f"it {what} the storage root or namespace root ({protected})"
        for sealed in self._sealed:
            if place.within(sealed) or sealed.within(place):
                return "it is or holds the namespace manifest"
        return None

    async def _resolve(self, location: str) -> Place | None:
        return await self.run(place_of, location)

    async def deletion_refused(
        self,
        location: str,
        *,
        default_location: str | None = None,
        claims: Claims | None = None,
    ) -> str | None:
        """Why the table data at ``location`` must be kept, or None when it may go.

        ``default_location`` is where the backend would create this table: with no
        storage root configured, the only place it deletes. ``claims`` names another
        table of the catalog holding the place.
        """
        place = await self._resolve(location)
        problem = self._shape_problem(place)
        if problem is not None or place is None:
            return problem
        if not contained(place, None, self._allowed):
            if self.storage_root is not None:
                if not contained(place, self.storage_root, ()):
                    return f"it is outside the storage root ({self.storage_root})"
            else:
                default = await self._resolve(default_location) if default_location else None
                if default is None or place != default:
                    return "the backend did not create it (not the table's default location)"
        if place.local is not None:
            nested = await self.run(_nested_table, place.local)
            if nested is not None:
                return nested
        if claims is not None:
            other = await claims(place)
            if other is not None:
                return f"{other} is stored there"
        return None

    async def check_placement(
        self,
        location: str,
        *,
        require_table: bool,
        claims: Claims | None = None,
        what: str = "location",
    ) -> Any:
        """Refuse (InvalidInput) a location a table must not be registered or declared at.

        The root, the manifest, a place inside or holding another Lance table or
        claimed by another table of the catalog. With ``require_table`` (RegisterTable)
        a Lance table must be there (that dataset is returned); without it
        (DeclareTable) none may be, since data already there is some table's (a
        renamed table keeps its directory, which is the old name's default location).
        """
        # before anything else: an outside location's storage is never contacted
        await self.confinement.check_new(location, what)
        place = await self._resolve(location)
        problem = self._shape_problem(place)
        if problem is not None or place is None:
            raise errors.InvalidInputError(f"{what} {location!r} is refused: {problem}")
        if require_table:
            dataset = await self.require(location)
        else:
            dataset = None
            if await self.run(has_data, location, self.storage_options):
                raise errors.InvalidInputError(
                    f"{what} {location!r} is refused: a Lance table is already stored there"
                )
        if place.local is not None:
            nested = await self.run(_nested_table, place.local)
            if nested is not None:
                raise errors.InvalidInputError(f"{what} {location!r} is refused: {nested}")
        if claims is not None:
            other = await claims(place)
            if other is not None:
                raise errors.InvalidInputError(
                    f"{what} {location!r} is refused: {other} is stored there"
                )
        return dataset

    async def drop_data(
        self,
        location: str,
        storage_options: Mapping[str, str] | None = None,
        *,
        default_location: str | None = None,
        claims: Claims | None = None,
    ) -> bool:
        """Delete a dropped table's data if :meth:`deletion_refused` finds no reason not
        to; whether it was deleted (else it is kept, and the reason logged)."""
        reason = await self.deletion_refused(
            location, default_location=default_location, claims=claims
        )
        if reason is not None:
            logger.warning("DropTable keeps the data at %r: %s", location, reason)
            return False
        await self.delete(location, storage_options)
        return True

    async def delete(self, location: str, storage_options: Mapping[str, str] | None = None) -> None:
        """Delete a table's directory (local or object store); a missing one is fine.

        Only for locations :meth:`deletion_refused` accepted: the resolved path is
        deleted (symlinks inside it are removed, never followed). ``storage_options``
        are the table's (see :meth:`options_for`); default: the configured ones.
        """
        options = dict(storage_options) if storage_options is not None else self.storage_options
        place = await self._resolve(location)
        if place is not None and place.local is not None:
            location = place.local
        await self.run(_delete_tree, location, options or None)


def contained(place: Place, root: Place | None, allowed: Iterable[Place]) -> bool:
    """The one containment rule, for deletion and for confinement: strictly inside
    ``root``, or at/below one of the ``allowed`` prefixes."""
    if root is not None and place.below(root):
        return True
    return any(place.within(prefix) for prefix in allowed)


def _place_or_none(location: str | None) -> Place | None:
    return place_of(location) if location else None
