"""One JSON line per request (``--access-log json``), without secrets and without blocking.

Each line is a JSON object::

    {"time": "2026-11-28T16:25:27.123Z", "request_id": "...", "client": "127.0.0.1",
     "method": "GET", "path": "/v1/table/a$b/describe", "operation": "DescribeTable",
     "id": "a$b", "status": 200, "code": null, "duration_ms": 1.7,
     "request_bytes": 2, "response_bytes": 311}

``time`` is when the request arrived (RFC 3339, UTC); ``operation`` is the protocol's
operation id (``Healthz``/``Readyz`` for the health paths, null for an unknown route);
``id`` the table or namespace id the path names, decoded; ``code`` the protocol error
code of an ``ErrorResponse`` (null on success); ``request_bytes`` and ``response_bytes``
the bodies' sizes as sent on the wire.

What is never in a line: headers (the bearer token travels in ``Authorization``), query
strings (credentials may travel there), bodies (storage options, data), error messages.
Ids and paths are client input: each is cut at :data:`MAX_FIELD_CHARS` characters
(``...`` marks the cut) and written with JSON's escapes, ASCII only, so a control
character, a newline or an escape sequence can neither split a line nor reach a
terminal, and a line stays under 4 KiB.

``request_id`` is the client's ``x-request-id`` when it is 1 to 128 printable ASCII
characters without spaces, else a new random one; it is echoed in the answer's
``x-request-id`` header either way, so a client can quote it to the operator.

A request the connection's bounds refuse before the application sees it (a head too
large: 431, a head or body too slow: 408, a malformed request: 400, one connection too
many: 503) has no operation, id or request id; it gets a line of its own,
``{"time", "event": "refused", "client", "status", "code", "limit"}``, ``limit`` naming the
bound (``max_header_bytes``, ``header_timeout``, ``max_connections``...).

Lines go through a bounded queue to a writer thread: a slow or blocked stderr (a full
pipe) never stalls the event loop. When the queue is full a line is dropped and
counted; the writer then reports the count in an ``{"event": "access_log_dropped"}``
line, and :attr:`AccessLog.dropped` holds it.
"""

from __future__ import annotations

import datetime
import json
import queue
import sys
import threading
import time
import uuid
from typing import IO, Any

from ._starlette import Receive, Response, Scope, Send

__all__ = ["MAX_FIELD_CHARS", "AccessLog", "Exchange", "valid_request_id"]

#: characters kept of a path or an id before the cut
MAX_FIELD_CHARS = 256
#: lines waiting for the writer; one more is dropped
DEFAULT_MAX_QUEUED = 10_000
_REQUEST_ID_CHARS = 128
_STOP = object()
#: where the adapter leaves the route it matched: (operation id, raw id segment or None)
ROUTE_KEY = "lance_namespace_async.route"


def valid_request_id(value: str | None) -> bool:
    """Whether a client's ``x-request-id`` may be kept and logged as it is."""
    return (
        value is not None
        and 0 < len(value) <= _REQUEST_ID_CHARS
        and all("!" <= ch <= "~" for ch in value)
    )


def _bounded(value: str) -> str:
    return value if len(value) <= MAX_FIELD_CHARS else value[:MAX_FIELD_CHARS] + "..."


def _now_rfc3339() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Exchange:
    """One request being served: counts the bytes both ways and the status sent."""

    __slots__ = (
        "_receive",
        "_send",
        "request_bytes",
        "request_id",
        "response_bytes",
        "started",
        "status",
        "time",
    )

    def __init__(self, receive: Receive, send: Send, request_id: str) -> None:
        self._receive = receive
        self._send = send
        self.request_id = request_id
        self.time = _now_rfc3339()
        self.started = time.perf_counter()
        self.request_bytes = 0
        self.response_bytes = 0
        self.status: int | None = None

    async def receive(self) -> Any:
        message = await self._receive()
        if message["type"] == "http.request":
            self.request_bytes += len(message.get("body", b""))
        return message

    async def send(self, message: Any) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            self.response_bytes += len(message.get("body", b""))
        await self._send(message)


class AccessLog:
    """The JSON access log of one server: :meth:`start` it, then :meth:`close` it."""

    def __init__(self, stream: IO[str] | None = None, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        self.stream = stream
        self.dropped = 0
        self._reported = 0
        self._queue: queue.Queue[object] = queue.Queue(max_queued)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._write, name="lance-ns-access-log", daemon=True
            )
            self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Write the lines still queued (within ``timeout`` seconds) and stop the writer."""
        thread = self._thread
        if thread is None:
            return
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)
        self._thread = None

    def begin(self, scope: Scope, receive: Receive, send: Send) -> Exchange:
        """A new exchange for ``scope``, with its request id."""
        given = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value.decode("latin-1")
                break
        request_id = given if given is not None and valid_request_id(given) else uuid.uuid4().hex
        return Exchange(receive, send, request_id)

    def finish(
        self, exchange: Exchange, scope: Scope, path: str, response: Response | None
    ) -> None:
        """Queue the line of a finished exchange (``response`` None: none was made)."""
        operation, raw_id = scope.get(ROUTE_KEY, (None, None))
        status = exchange.status if exchange.status is not None else 499
        client = scope.get("client")
        line = {
            "time": exchange.time,
            "request_id": exchange.request_id,
            "client": client[0] if client else None,
            "method": _bounded(scope["method"]),
            "path": _bounded(path),
            "operation": operation,
            "id": None if raw_id is None else _bounded(_decoded(raw_id)),
            "status": status,
            "code": _error_code(response) if status >= 400 else None,
            "duration_ms": round((time.perf_counter() - exchange.started) * 1000, 3),
            "request_bytes": exchange.request_bytes,
            "response_bytes": exchange.response_bytes,
        }
        self._put(json.dumps(line, ensure_ascii=True, separators=(",", ":")))

    def refused(self, status: int, limit: str, client: str | None) -> None:
        """Queue the line of a request the connection's bounds refused before the app
        saw it (431, 408, 400, 503: ``server._protocol``), named by the limit."""
        code = 17 if status == 503 else 13
        line = {
            "time": _now_rfc3339(),
            "event": "refused",
            "client": client,
            "status": status,
            "code": code,
            "limit": limit,
        }
        self._put(json.dumps(line, separators=(",", ":")))

    def _put(self, text: str) -> None:
        try:
            self._queue.put_nowait(text)
        except queue.Full:
            self.dropped += 1

    def _write(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                self._flush()
                return
            stream = self.stream if self.stream is not None else sys.stderr
            try:
                stream.write(f"{item}\n")
                if self._queue.empty():
                    self._flush()
            except (OSError, ValueError):  # stderr closed: nothing left to tell
                pass

    def _flush(self) -> None:
        """Report lines dropped since the last report, then flush."""
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            if self.dropped != self._reported:
                self._reported = self.dropped
                report = {"time": _now_rfc3339(), "event": "access_log_dropped"}
                stream.write(json.dumps({**report, "dropped": self._reported}) + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass


def _decoded(raw: str) -> str:
    from urllib.parse import unquote

    return unquote(raw, errors="replace")


def _error_code(response: Response | None) -> int | None:
    """The ``code`` of an ErrorResponse body (our own, small; None for anything else)."""
    body = getattr(response, "body", None)
    if not body or len(body) > 65_536 or not body.startswith(b"{"):
        return None
    try:
        code = json.loads(body).get("code")
    except ValueError:
        return None
    return code if isinstance(code, int) and not isinstance(code, bool) else None
