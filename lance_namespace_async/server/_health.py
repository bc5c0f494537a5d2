"""``/healthz`` and ``/readyz``: is the process answering, and is its backend?

Both live at root paths, which the protocol never uses (every route of spec/rest.yaml is
under ``/v1/``), and answer ``GET`` and ``HEAD`` without a token, so a load balancer or a
Kubernetes probe needs no secret:

* ``/healthz`` is 200 ``{"status": "ok"}`` while the event loop runs. It touches nothing
  and its body never changes, so it skips the Origin and Host checks too (a prober may
  call the server by any name).
* ``/readyz`` is 200 when every part of the backend answered its cheap call within the
  deadline (:mod:`.._core.readiness`), else 503; the body lists each part (``backend``,
  or each mount of a mounting namespace) with ``ready``, ``ms`` and, when not ready, a
  reason made of a fixed word and an error class and code, never a message, URL or
  path. It keeps the Origin and Host checks (a DNS-rebound page could otherwise read
  which catalogs are mounted and whether they are up); probers send no ``Origin`` and
  name the server by IP address, as Kubernetes and cloud load balancers do, or by a
  name the operator allows with ``--allow-host``.

A probe storm cannot become a storm on the catalog: one check runs at a time and its
result is reused for ``cache_seconds`` (default 1 s), whatever the number of probers.

:class:`Health` is also an ASGI app answering just these two paths (404 elsewhere), so
another listener of the same process (a metrics port) can serve them on the event
loop that runs the backend.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

from .. import errors
from .._core.readiness import (
    DEFAULT_READY_TIMEOUT,
    PartReadiness,
    probe_part,
    readiness_targets,
)
from ._starlette import Receive, Response, Scope, Send

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

__all__ = ["HEALTH_PATHS", "READY_CACHE_SECONDS", "Health", "check_ready_timeout"]

HEALTHZ = "/healthz"
READYZ = "/readyz"
HEALTH_PATHS = frozenset({HEALTHZ, READYZ})

#: seconds one readiness result answers every probe
READY_CACHE_SECONDS = 1.0

_HEADERS = {"cache-control": "no-store"}
_HEALTHY = json.dumps({"status": "ok"}).encode()


def check_ready_timeout(value: object) -> float:
    """``value`` as the readiness deadline in seconds, or InvalidInputError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise errors.InvalidInputError("ready_timeout must be a number of seconds")
    if not 0 < value <= 300:
        raise errors.InvalidInputError("ready_timeout must be > 0 and <= 300 seconds")
    return float(value)


class Health:
    """The two endpoints of one served namespace, with the readiness cache."""

    def __init__(
        self,
        namespace: AsyncLanceNamespace,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        cache_seconds: float = READY_CACHE_SECONDS,
    ) -> None:
        self.namespace = namespace
        self.ready_timeout = check_ready_timeout(ready_timeout)
        self.cache_seconds = cache_seconds
        self._result: tuple[float, list[PartReadiness]] | None = None
        self._running: asyncio.Task[list[PartReadiness]] | None = None

    async def readiness(self) -> list[PartReadiness]:
        """Each part's readiness: the cached result, the check running, or a new one."""
        cached = self._result
        if cached is not None and time.monotonic() < cached[0]:
            return cached[1]
        running = self._running
        if (
            running is None
            or running.done()
            or running.get_loop() is not asyncio.get_running_loop()
        ):
            self._running = running = asyncio.ensure_future(self._check())
        # shielded: a prober hanging up must not cancel the check the others await
        return await asyncio.shield(running)

    async def _check(self) -> list[PartReadiness]:
        targets = readiness_targets(self.namespace)
        parts = await asyncio.gather(
            *(probe_part(name, part, self.ready_timeout) for name, part in targets)
        )
        result = list(parts)
        self._result = (time.monotonic() + self.cache_seconds, result)
        return result

    async def answer(self, method: str, path: str) -> Response:
        """The answer to ``method`` on ``path``, one of :data:`HEALTH_PATHS`."""
        if method not in ("GET", "HEAD"):
            body = {"code": int(errors.ErrorCode.INVALID_INPUT), "error": "use GET or HEAD"}
            return _json(body, 405, {"allow": "GET, HEAD"})
        if path == HEALTHZ:
            return Response(_HEALTHY, 200, _HEADERS, "application/json")
        parts = await self.readiness()
        ready = all(part.ready for part in parts)
        body = {
            "status": "ready" if ready else "not ready",
            "checks": [part.to_dict() for part in parts],
        }
        return _json(body, 200 if ready else 503)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the two paths alone (for another listener, such as a metrics port)."""
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path in HEALTH_PATHS:
            response = await self.answer(scope["method"], path)
        else:
            response = _json({"code": 13, "error": "not found"}, 404)
        await response(scope, receive, send)


def _json(body: object, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body, separators=(",", ":")).encode(),
        status,
        {**_HEADERS, **(headers or {})},
        "application/json",
    )
