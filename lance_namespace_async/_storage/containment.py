"""Confinement: a backend that uses no storage outside its root and allow-list.

``lance-ns serve`` runs its backend with ``confine_storage=true``: a catalog entry can
point anywhere (RegisterTable takes any location, and other tools write catalogs
too), and a server must not read, write or delete tables elsewhere on its machine or
in its buckets on a client's say-so. A confined backend uses a table's storage only
when its location is strictly inside the storage root or at/below a prefix of the
operator's ``allowed_locations``, judged by the rule DropTable's deletion uses
(:func:`~.places.place_of`: symlinks and ``..`` resolved, ``file:`` URIs
decoded, segment-wise comparison, so ``/root2`` is not inside ``/root`` and a link
inside the root pointing out is outside). Any other location is refused with
PermissionDenied (code 15) before storage is contacted.

Every operation that reads, writes or deletes a table's storage goes through
:meth:`Confinement.check`: :meth:`~.tables.LanceTables.open` (DescribeTable's
details and versions, RestoreTable, ...), ``_storage.operations``' table resolution (every
data, index, tag, version and schema operation of the catalog backends), the
directory backend's hand-over to pylance and its batches; RegisterTable and
DeclareTable check their location with :meth:`Confinement.check_new` first. The
catalog-only operations (plain DescribeTable, TableExists, DeregisterTable, and
DropTable, which keeps data outside the root anyway) keep working on such tables.

A server confines its backend: :func:`confined_properties`, through ``server._serving``
(``serve()`` given an impl name, ``lance-ns serve``), and :func:`warn_if_unconfined`
(``create_app``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from .places import contained, place_of

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

__all__ = ["OUTSIDE", "Confinement", "confined_properties", "warn_if_unconfined"]

#: why a location is refused (never the location: it may be a server path)
OUTSIDE = "outside the storage root and the operator's allowed_locations"
#: set while a backend puts back a registration it removed a moment ago (an undo step)
_RESTORING: contextvars.ContextVar[bool] = contextvars.ContextVar("restoring", default=False)


class Confinement:
    """Where a backend may use storage: strictly inside ``root`` (None: nowhere) or
    at/below an ``allowed`` prefix; everywhere when not ``enabled``."""

    def __init__(
        self,
        enabled: bool,
        root: str | None,
        allowed: Iterable[str],
        run: Callable[..., Awaitable[Any]],
    ) -> None:
        self.enabled = enabled
        self._root = place_of(root) if root else None
        self._allowed = [p for p in (place_of(a) for a in allowed) if p is not None]
        self._run = run

    def outside(self, location: str) -> bool:
        """Whether ``location`` is outside (blocking: symlinks are resolved)."""
        place = place_of(location)
        return place is None or not contained(place, self._root, self._allowed)

    def refuse(self, location: str, what: str) -> None:
        """PermissionDenied for an outside ``location`` of a confined backend (blocking:
        on a worker thread, inside a call that goes on to use the location)."""
        if self.enabled and self.outside(location):
            raise errors.PermissionDeniedError(
                f"{what} is refused: the table's location is {OUTSIDE}"
            )

    async def check(self, location: str, what: str) -> None:
        """:meth:`refuse`, on a worker thread (nothing to do when not enabled)."""
        if self.enabled and not _RESTORING.get():
            await self._run(self.refuse, location, what)

    async def check_new(self, location: str, what: str) -> None:
        """Refuse registering or declaring a table at an outside ``location`` (the
        location is the client's own, so it is named)."""
        if self.enabled and not _RESTORING.get() and await self._run(self.outside, location):
            raise errors.PermissionDeniedError(f"{what} {location!r} is refused: it is {OUTSIDE}")

    @staticmethod
    @contextlib.contextmanager
    def restoring() -> Iterator[None]:
        """Put back a registration removed a moment ago (a batch's undo step): neither
        it nor the look at the table it takes is refused for lying outside, since
        refusing would lose the catalog entry."""
        token = _RESTORING.set(True)
        try:
            yield
        finally:
            _RESTORING.reset(token)


def refuse_outside(namespace: AsyncLanceNamespace, location: str, what: str) -> None:
    """PermissionDenied when ``namespace`` is confined and ``location`` lies outside
    (blocking). For code above the backends that opens a table at the location a
    DescribeTable answered (the Spark data source, the pipeline's jobs): DescribeTable
    is catalog-only, so the check is theirs to make before storage is contacted."""
    tables = getattr(namespace, "tables", None)
    confinement = getattr(tables, "confinement", None)
    if isinstance(confinement, Confinement):
        confinement.refuse(location, what)


# -- serving: a server's backend is confined -----------------------------------------------

logger = logging.getLogger("lance_namespace_async.server")

#: what ``--allow-location`` and ``confine_storage`` apply to
_STORAGE_BACKENDS = "backends that store tables (dir, iceberg, unity, glue, hive)"


def confined_properties(
    impl: str, properties: Mapping[str, str], allow: Sequence[str] = ()
) -> dict[str, str]:
    """The properties a server builds ``impl`` from: ``confine_storage=true`` for a
    backend that stores tables, unless the operator set it (``false`` is honoured, with
    a warning), and the ``allow`` prefixes (``--allow-location``) added to its
    ``allowed_locations``. Confinement travels in the properties, so a backend rebuilt
    from them elsewhere (a worker process) is confined too."""
    from .._core.registry import resolve_impl

    served = dict(properties)
    if not resolve_impl(impl).stores_tables:
        if allow:
            raise errors.InvalidInputError(f"--allow-location applies to {_STORAGE_BACKENDS} only")
        return served
    given = served.setdefault("confine_storage", "true")
    if given.strip().lower() in ("false", "0", "no", "off"):
        logger.warning(
            "serving %s with confine_storage=false: a client can make the server read, write "
            "and delete tables anywhere its storage credentials reach",
            impl,
        )
    if allow:
        listed = [served["allowed_locations"]] if served.get("allowed_locations") else []
        served["allowed_locations"] = ",".join([*listed, *allow])
    return served


def warn_if_unconfined(namespace: AsyncLanceNamespace) -> None:
    """Log a WARNING when a server is handed a backend whose storage is not confined."""
    if not namespace.storage_confined:
        logger.warning(
            "serving %s without confine_storage=true: a client can make the server read, "
            "write and delete tables outside its storage root (build it with "
            "confine_storage=true, as lance-ns serve does)",
            namespace.impl_name or type(namespace).__name__,
        )
