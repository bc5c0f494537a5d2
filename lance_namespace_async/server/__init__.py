"""The REST adapter: any backend served as a Lance REST Namespace (spec/rest.yaml).

The Lance Namespace specification calls a server that exposes some other
catalog over the REST protocol an *adapter*. :func:`create_app` builds one as an
ASGI application (Starlette) around any :class:`AsyncLanceNamespace`, so a
directory catalog, a Glue catalog or a third-party backend becomes reachable
from every REST client (pylance's Rust ``RestNamespace`` included)::

    app = create_app(lance_namespace_async.connect("dir", {"root": "/data"}))
    # uvicorn module:app, or serve(...) below

What the adapter guarantees, whatever the backend:

* every operation of spec/rest.yaml (the routes come from the operation table) at
  exactly its path, method and query parameters; the ``id`` path parameter is
  parsed once, with the request's ``delimiter``, and always wins over an ``id`` in
  the body; Arrow IPC bodies in (CreateTable, InsertIntoTable, MergeInsertIntoTable,
  under the same body limit) and out (QueryTable's IPC file); an operation the
  backend does not implement is 406 with code 0;
* every failure is an ``ErrorResponse`` (``code``, ``error``, ``instance``) with
  the HTTP status the protocol assigns to the code, so clients can rebuild the
  typed error; every 500 (an unexpected exception, or a backend's internal error
  such as a raw pylance/Rust failure) says only "internal server error", the
  detail going (redacted) to the ``lance_namespace_async.server`` logger, and the
  messages of the other errors a backend raises carry no server paths;
* the server's own storage options (``storage.*``, credentials included) are
  never in an answer unless the operator opts in (``expose_storage_options``):
  handing out credentials is a credential vendor's job. Credentials the backend's
  catalog vended for one table (short-lived, scoped by the catalog to that table and
  the server's identity) are left out too unless the operator opts in to those alone
  (``expose_vended_credentials``): the answer then carries just the vended keys
  (credentials, ``expires_at_millis``, ``refresh_offset_millis``), never ``storage.*``;
* an optional bearer token checked in constant time before anything else
  (routing included), and a request-body limit enforced while streaming;
* malformed query values (``limit=x``, ``descending=yes``, a parameter given
  twice) and bodies that are not a JSON object are code 13; query parameters
  the operation does not declare are ignored, so newer clients keep working.

Routing works on the raw (still percent-encoded) path, like pylance's own axum
adapter: ``/v1/table/a%2Fb/describe`` is DescribeTable of the name ``a/b`` (which
backends then refuse with code 13), not an unknown route.

Starlette is imported with :func:`create_app` and :func:`serve` (the names here are
imported on first use) and uvicorn only inside :func:`serve`, so ``import
lance_namespace_async`` stays light and the app runs under any ASGI server.
:func:`serve` runs it under uvicorn's httptools protocol with the connection
bounds of :class:`ServerLimits` (``server._protocol``): capped request heads,
deadlines for heads and bodies, idle connections closed, a connection cap.

The package's private modules: ``_routes`` (the route table, request parsing),
``_adapter`` (one request to the backend and back), ``_app`` (:func:`create_app`,
:func:`serve`), ``_limits`` and ``_protocol`` (the bounded HTTP/1.1 connection),
``_origin`` (Origin and Host checks), ``_request_limits``, ``_table_locks``,
``_storage_workers`` (worker processes for storage work), ``_serving`` (the served
backend's properties), ``_health`` (``/healthz``, ``/readyz``), ``_access_log`` (the JSON
access log).

Layer (ARCHITECTURE.md): above the backends, beside ``_facade``. May import the core,
``errors``, ``models``, and storage (pylance's failures, containment, vended
credentials); backends only by name through ``connect()``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._access_log import AccessLog
    from ._app import create_app, serve
    from ._health import Health
    from ._limits import DEFAULT_MAX_BODY_BYTES, ServerLimits
    from ._request_limits import RequestLimits
    from ._routes import ROUTES, Route
    from ._storage_workers import StorageWorkerLimits, StorageWorkers

#: public name -> the private module that defines it, imported on first use: the
#: command's options (request limits, storage workers) and a storage worker import
#: their modules without Starlette, which only the app needs
_LAZY: dict[str, str] = {
    "AccessLog": "._access_log",
    "Health": "._health",
    "DEFAULT_MAX_BODY_BYTES": "._limits",
    "ROUTES": "._routes",
    "RequestLimits": "._request_limits",
    "Route": "._routes",
    "ServerLimits": "._limits",
    "StorageWorkerLimits": "._storage_workers",
    "StorageWorkers": "._storage_workers",
    "create_app": "._app",
    "serve": "._app",
}

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ROUTES",
    "AccessLog",
    "Health",
    "RequestLimits",
    "Route",
    "ServerLimits",
    "StorageWorkerLimits",
    "StorageWorkers",
    "create_app",
    "serve",
]


def __getattr__(name: str) -> Any:
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
