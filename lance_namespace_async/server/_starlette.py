"""Starlette, the server's one optional dependency imported at import time (uvicorn is
imported only when :func:`~lance_namespace_async.server.serve` runs)."""

from __future__ import annotations

from .. import errors

try:
    from starlette.applications import Starlette
    from starlette.datastructures import Headers, QueryParams
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, Response
    from starlette.types import Receive, Scope, Send
except ImportError as _exc:  # pragma: no cover - exercised without the extra only
    raise errors.MissingDependencyError(
        f"the REST adapter server needs: pip install 'lance-namespace-async[server]' ({_exc})"
    ) from _exc

__all__ = [
    "ClientDisconnect",
    "Headers",
    "JSONResponse",
    "QueryParams",
    "Receive",
    "Request",
    "Response",
    "Scope",
    "Send",
    "Starlette",
]
