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
characters without spaces, else a new one (a random prefix per process and a counter:
unique, without a random draw per request); it is echoed in the answer's
``x-request-id`` header either way, so a client can quote it to the operator.

A request the connection's bounds refuse before the application sees it (a head too
large: 431, a head or body too slow: 408, a malformed request: 400, one connection too
many: 503) has no operation, id or request id; it gets a line of its own,
``{"time", "event": "refused", "client", "status", "code", "limit"}``, ``limit`` naming the
bound (``max_header_bytes``, ``header_timeout``, ``max_connections``...).

Lines go through a bounded queue to a writer thread, which formats them and writes them
in batches every 50 ms: a slow or blocked stderr (a full pipe) never stalls the event
loop. When the queue is full a line is dropped and counted; the writer then reports the
count in an ``{"event": "access_log_dropped"}`` line, and :attr:`AccessLog.dropped`
holds it.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import json
import os
import sys
import threading
import time
from typing import IO, Any

from ._starlette import Receive, Response, Scope, Send

__all__ = ["MAX_FIELD_CHARS", "AccessLog", "Exchange", "valid_request_id"]

#: characters kept of a path or an id before the cut
MAX_FIELD_CHARS = 256
#: lines waiting for the writer; one more is dropped
DEFAULT_MAX_QUEUED = 10_000
#: seconds between the writer's batches
WRITE_INTERVAL = 0.05
_REQUEST_ID_CHARS = 128
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


def _rfc3339(when: float) -> str:
    moment = datetime.datetime.fromtimestamp(when, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        self.time = time.time()
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


#: what the event loop queues for one request; the writer thread makes the line of it
_Entry = tuple[float, str, Any, str, str, Any, "str | None", int, "bytes | None", float, int, int]


class AccessLog:
    """The JSON access log of one server: :meth:`start` it, then :meth:`close` it.

    The event loop only appends a tuple to a deque (or counts it dropped); the writer
    thread wakes every :data:`WRITE_INTERVAL` seconds, makes the lines of everything
    queued and writes them in one call, so a line costs the loop no formatting and no
    system call, and reaches the stream within that interval.
    """

    def __init__(self, stream: IO[str] | None = None, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        self.stream = stream
        self.max_queued = max_queued
        self.dropped = 0
        self._reported = 0
        self._entries: collections.deque[_Entry | str] = collections.deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # request ids: unique per process (a random prefix) without a random draw each
        self._id_prefix = os.urandom(6).hex() + "-"
        self._id_counter = itertools.count(1)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._write, name="lance-ns-access-log", daemon=True
            )
            self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Write the lines still queued (within ``timeout`` seconds) and stop the writer."""
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout)
        self._thread = None

    def begin(self, scope: Scope, receive: Receive, send: Send) -> Exchange:
        """A new exchange for ``scope``, with its request id."""
        given = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value.decode("latin-1")
                break
        if given is None or not valid_request_id(given):
            given = f"{self._id_prefix}{next(self._id_counter):x}"
        return Exchange(receive, send, given)

    def finish(
        self, exchange: Exchange, scope: Scope, path: str, response: Response | None
    ) -> None:
        """Queue the line of a finished exchange (``response`` None: none was made)."""
        operation, raw_id = scope.get(ROUTE_KEY, (None, None))
        status = exchange.status if exchange.status is not None else 499
        self._put(
            (
                exchange.time,
                exchange.request_id,
                scope.get("client"),
                scope["method"],
                path,
                operation,
                raw_id,
                status,
                getattr(response, "body", None) if status >= 400 else None,
                time.perf_counter() - exchange.started,
                exchange.request_bytes,
                exchange.response_bytes,
            )
        )

    def refused(self, status: int, limit: str, client: str | None) -> None:
        """Queue the line of a request the connection's bounds refused before the app
        saw it (431, 408, 400, 503: ``server._protocol``), named by the limit."""
        line = {
            "time": _rfc3339(time.time()),
            "event": "refused",
            "client": client,
            "status": status,
            "code": 17 if status == 503 else 13,
            "limit": limit,
        }
        self._put(json.dumps(line, separators=(",", ":")))

    def _put(self, entry: _Entry | str) -> None:
        if len(self._entries) >= self.max_queued:
            self.dropped += 1
            return
        self._entries.append(entry)

    def _write(self) -> None:
        while True:
            stopping = self._stop.wait(WRITE_INTERVAL)
            lines: list[str] = []
            while self._entries:
                entry = self._entries.popleft()
                lines.append(entry if isinstance(entry, str) else _line(entry))
            dropped = self.dropped
            if dropped != self._reported:
                report = {"time": _rfc3339(time.time()), "event": "access_log_dropped"}
                lines.append(json.dumps({**report, "dropped": dropped}))
                self._reported = dropped
            if lines:
                stream = self.stream if self.stream is not None else sys.stderr
                try:
                    stream.write("\n".join(lines) + "\n")
                    stream.flush()
                except (OSError, ValueError):  # stderr closed: nothing left to tell
                    pass
            if stopping and not self._entries:
                return


def _line(entry: _Entry) -> str:
    (when, request_id, client, method, path, operation, raw_id, status, body, seconds,
     request_bytes, response_bytes) = entry  # fmt: skip
    line = {
        "time": _rfc3339(when),
        "request_id": request_id,
        "client": client[0] if client else None,
        "method": _bounded(method),
        "path": _bounded(path),
        "operation": operation,
        "id": None if raw_id is None else _bounded(_decoded(raw_id)),
        "status": status,
        "code": _error_code(body),
        "duration_ms": round(seconds * 1000, 3),
        "request_bytes": request_bytes,
        "response_bytes": response_bytes,
    }
    return json.dumps(line, ensure_ascii=True, separators=(",", ":"))


def _decoded(raw: str) -> str:
    from urllib.parse import unquote

    return unquote(raw, errors="replace")


def _error_code(body: bytes | None) -> int | None:
    """The ``code`` of an ErrorResponse body (our own, small; None for anything else)."""
    if not body or len(body) > 65_536 or not body.startswith(b"{"):
        return None
    try:
        code = json.loads(body).get("code")
    except ValueError:
        return None
    return code if isinstance(code, int) and not isinstance(code, bool) else None
