"""What every catalog backend does with the Lance tables themselves: :class:`LanceTables`.

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

* the location resolves to one place (:mod:`.places`), compared segment by
  segment, so ``/root2`` is not inside ``/root``;
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
``allowed_locations`` at all, by the same rules (:mod:`.containment`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from .. import errors
from .._core.arrow_json import json_arrow_schema
from .._core.observe import backend_call
from .containment import Confinement
from .failures import is_native_panic, translate
from .places import (
    Claims,
    Place,
    _nested_table,
    _place_or_none,
    canonical,
    contained,
    layout_claims,
    local_path,
    place_of,
)

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

T = TypeVar("T")


#: the property or parameter that marks a catalog table as a Lance table
TABLE_TYPE = "table_type"


logger = logging.getLogger("lance_namespace_async.tables")


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
    from ..models import DescribeTableRequest

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
        backend: str = "storage",
    ) -> None:
        """``backend``: its name in metrics and spans (``_core.observe``);
        ``storage_root``: where tables may be deleted (None: only at their default
        location); ``drop_allowed``: further prefixes where they may; ``protected``:
        places never deleted themselves, nor anything above them (the storage root is
        one); ``sealed``: places nothing inside of which is deleted or registered (the
        directory manifest). With ``confined``, tables are used only strictly inside
        ``confine_root`` (default: ``storage_root``; None: nowhere) or at/below an
        ``allowed_locations`` prefix (:attr:`confinement`);
        ``table_option_keys``: the storage options a table's own properties may set
        (None: any), see :meth:`options_for`."""
        self.limiter = anyio.CapacityLimiter(threads)
        self.backend = backend
        #: run blocking calls on the calling thread (set by a storage worker process,
        #: which runs one operation at a time: a thread hop there only adds latency)
        self.inline = False
        self.table_option_keys = table_option_keys
        self.storage_options = dict(storage_options or {}) or None
        self.storage_root = _place_or_none(storage_root)
        self._allowed = [p for p in map(_place_or_none, drop_allowed) if p is not None]
        self._protected = [
            p for p in map(_place_or_none, (*protected, storage_root)) if p is not None
        ]
        self._sealed = [p for p in map(_place_or_none, sealed) if p is not None]
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

    async def run(self, fn: Callable[..., T], *args: Any, kind: str = "storage") -> T:
        """Run a blocking call on a bounded worker thread, with typed errors.

        Every pylance call of the storage operations and of the directory backend comes
        here, so this is where they are observed (``kind``: what the call reaches; hive's
        metastore calls run here too, as ``thrift``)."""
        try:
            with backend_call(self.backend, kind, getattr(fn, "__name__", "call")):
                if self.inline:
                    return fn(*args)
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
