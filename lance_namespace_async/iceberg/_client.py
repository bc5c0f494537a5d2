"""The REST side of ``impl="iceberg"``: HTTP, OAuth2, warehouse configs and API paths.

Requests go through the shared :class:`~.._transport.transport.HttpTransport` (deadlines, retries of
what is safe to retry, bounded bodies, bearer token, OAuth2 client credentials against
``<endpoint>/v1/oauth/tokens`` unless configured otherwise) by way of the catalogs'
shared :class:`~.._transport.catalog.CatalogHttp` (JSON answers, typed errors), with
Iceberg's error dialect (:mod:`._errors`). Seed 000's warehouse is
the first namespace level: its configuration comes from ``GET /v1/config?warehouse=``,
fetched once per warehouse whatever the number of waiting calls, layered ``defaults`` <
our properties < ``overrides``; the ``prefix`` found there (else, with
``warehouse_prefix``, the warehouse name) prefixes every API path, and its
``namespace-separator`` (else 0x1F) joins namespace levels, percent-encoded exactly
once in paths and in the ``parent`` query parameter.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import anyio
import attrs

from .. import errors
from .._core.identifiers import Identifier
from .._transport.catalog import CatalogHttp
from .._transport.transport import HttpTransport
from ._errors import classify_iceberg_error
from ._mapping import UNIT_SEPARATOR, separator_of
from ._properties import IcebergConfig

__all__ = ["IcebergRestClient", "Warehouse"]


@attrs.frozen
class Warehouse:
    """A warehouse's API prefix and merged configuration."""

    prefix: str
    config: dict[str, str]
    #: joins namespace levels in paths and ``parent``: the config's ``namespace-separator``
    separator: str = UNIT_SEPARATOR
    #: namespace API paths already built (levels -> path): they depend only on the levels
    #: and this config, and every LoadTable of a listing needs its namespace's
    ns_paths: dict[Identifier, str] = attrs.field(factory=dict, eq=False, repr=False)


_NS_PATHS_KEPT = 4096  # namespace API paths remembered per warehouse

#: LoadTable's ``snapshots=refs``: only the snapshots a branch or tag references, so the
#: current one (``main``'s), which is all this backend reads of them; without it the
#: server sends every snapshot, and a ``managed_by=impl`` table gains one per Lance
#: version. Servers that ignore the parameter send them all, which is as before.
_REFS_ONLY = {"snapshots": "refs"}


class IcebergRestClient:
    """Calls to an Iceberg REST Catalog, with its answers' errors typed."""

    def __init__(self, config: IcebergConfig) -> None:
        self.config = config
        self.transport = HttpTransport(
            config,
            base_url=config.endpoint,
            url_key="endpoint",
            default_token_url=f"{config.endpoint}/v1/oauth/tokens",
            backend="iceberg",
        )
        self.http = CatalogHttp(
            self.transport, catalog="the Iceberg catalog", classify=classify_iceberg_error
        )
        #: a call's 2xx answer / its JSON object, else its typed error (Iceberg's dialect)
        self.send = self.http.send
        self.call = self.http.call
        self._warehouses: dict[str, Warehouse] = {}
        self._warehouse_locks: dict[str, anyio.Lock] = {}
        self.config_requests = 0

    async def aclose(self) -> None:
        await self.transport.aclose()

    # -- warehouses and paths ------------------------------------------------------------------

    async def warehouse(self, name: str) -> Warehouse:
        """The warehouse's config: fetched once, whatever the number of waiting calls."""
        cached = self._warehouses.get(name)
        if cached is not None:
            return cached
        lock = self._warehouse_locks.setdefault(name, anyio.Lock())
        async with lock:
            cached = self._warehouses.get(name)
            if cached is not None:
                return cached
            self.config_requests += 1
            body = await self.call(
                "GET",
                "/v1/config",
                params={"warehouse": name},
                what=f"config of warehouse {name!r}",
                idempotent=True,
                not_found=errors.NamespaceNotFoundError,
            )
            defaults = body.get("defaults") or {}
            overrides = body.get("overrides") or {}
            merged = {
                **{str(k): str(v) for k, v in defaults.items()},
                **self.config.properties,
                **{str(k): str(v) for k, v in overrides.items()},
            }
            fallback = name if self.config.warehouse_prefix else ""
            prefix = str(overrides.get("prefix") or defaults.get("prefix") or fallback)
            warehouse = Warehouse(
                prefix=prefix.strip("/"), config=merged, separator=separator_of(merged)
            )
            self._warehouses[name] = warehouse
            return warehouse

    async def joined(self, warehouse: str, levels: Identifier) -> str:
        """Namespace levels joined by the warehouse's separator (0x1F unless it says else).

        A level that contains the separator could not be told apart from two levels.
        """
        separator = (await self.warehouse(warehouse)).separator
        for level in levels:
            if separator in level:
                raise errors.InvalidInputError(
                    f"namespace level {level!r} contains this catalog's namespace "
                    f"separator {separator!r}"
                )
        return separator.join(levels)

    async def base(self, warehouse: str) -> str:
        """``/v1/<prefix>``, or ``/v1`` for a warehouse without a prefix."""
        prefix = (await self.warehouse(warehouse)).prefix
        return f"/v1/{prefix}" if prefix else "/v1"

    async def namespace_path(self, warehouse: str, levels: Identifier) -> str:
        """The namespace's API path: levels percent-encoded once, joined by the separator
        percent-encoded too (``%1F``; ``%2E`` for ``.``, which ``quote`` would leave as is
        and the server would then read as part of one level)."""
        config = await self.warehouse(warehouse)
        key = tuple(levels)  # hashable whatever sequence a caller holds
        cached = config.ns_paths.get(key)
        if cached is not None:
            return cached
        await self.joined(warehouse, levels)  # refuses a level holding the separator
        encoded = "".join(f"%{byte:02X}" for byte in config.separator.encode())
        joined = encoded.join(quote(level, safe="") for level in levels)
        path = f"{await self.base(warehouse)}/namespaces/{joined}"
        if len(config.ns_paths) >= _NS_PATHS_KEPT:
            config.ns_paths.clear()  # bounded: a crawl of a huge catalog starts over
        config.ns_paths[key] = path
        return path

    async def table_path(self, warehouse: str, namespace: Identifier, name: str) -> str:
        return f"{await self.namespace_path(warehouse, namespace)}/tables/{quote(name, safe='')}"

    # -- tables --------------------------------------------------------------------------------

    async def load_table(
        self, warehouse: str, namespace: Identifier, name: str, what: str, *, vend: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """LoadTable: the table's metadata and the whole LoadTableResult (with vended
        credentials when ``vend``: the ``X-Iceberg-Access-Delegation`` header asks for them),
        with the current snapshot but not the history (:data:`_REFS_ONLY`)."""
        result = await self.call(
            "GET",
            await self.table_path(warehouse, namespace, name),
            params=_REFS_ONLY,
            what=what,
            idempotent=True,
            not_found=errors.TableNotFoundError,
            headers={"X-Iceberg-Access-Delegation": "vended-credentials"} if vend else None,
        )
        return _metadata_of(result, what), result

    async def load_metadata(self, tables: str, name: str, what: str) -> dict[str, Any]:
        """LoadTable's metadata of table ``name`` in the namespace whose tables' API path
        is ``tables`` (``<namespace path>/tables/``, built once for a listing's loads)."""
        result = await self.call(
            "GET",
            tables + quote(name, safe=""),
            params=_REFS_ONLY,
            what=what,
            idempotent=True,
            not_found=errors.TableNotFoundError,
        )
        return _metadata_of(result, what)

    async def update_table(
        self,
        warehouse: str,
        levels: Identifier,
        name: str,
        *,
        requirements: list[dict[str, Any]],
        updates: list[dict[str, Any]],
        what: str,
    ) -> None:
        """UpdateTable (a commit): a catalog whose table no longer meets the
        ``requirements`` answers 409, raised as ConcurrentModification (14)."""
        await self.send(
            "POST",
            await self.table_path(warehouse, levels, name),
            json={
                "identifier": {"namespace": list(levels), "name": name},
                "requirements": requirements,
                "updates": updates,
            },
            what=what,
            idempotent=False,
            not_found=errors.TableNotFoundError,
            conflict=errors.ConcurrentModificationError,
        )


def _metadata_of(result: dict[str, Any], what: str) -> dict[str, Any]:
    metadata = result.get("metadata")
    if not isinstance(metadata, dict):
        raise errors.InternalError(f"{what}: LoadTable answered without metadata")
    return metadata
