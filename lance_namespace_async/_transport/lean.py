"""The lean wire under the HTTP transport: httptools on an asyncio Protocol.

What a catalog call needs from a connection pool is small: keep-alive
HTTP/1.1 connections to one origin, a request written in one ``write``, an
answer parsed by a C parser, and failures told apart by whether the request may
have reached the server. aiohttp and httpcore do much more per request (their
own request and response objects, tracing hooks, timers per read, cookie and
redirect handling that httpx above already owns); in benchmarks/client_cpu.py
this wire spends a fraction of their client CPU per call.

The transport's policy (auth, retries, timeouts, cookies; the bounded body read)
stays on top, either through httpx's objects (:meth:`LeanPool.handle_async_request`)
or from request bytes to answer bytes (:meth:`LeanPool.exchange`, the transport's
direct path), so the policy is the one both other wires are held to
(tests/test_http_wire.py):

* connect failures and pool timeouts are "not sent" (``ConnectError``,
  ``ConnectTimeout``, ``PoolTimeout``); a connection lost, reset or answering
  garbage after the request was written is ambiguous (``RemoteProtocolError``,
  ``ReadError``); a silent server is ``ReadTimeout`` at each wait for bytes;
* the body is handed to :func:`.body.read_bounded` as it arrives, and
  the socket stops being read while more than :data:`_HIGH_WATER` bytes wait,
  so an oversized answer never sits in memory whole;
* a head over :data:`MAX_HEAD_BYTES` is a protocol error, as aiohttp's and
  h11's line limits make it;
* a connection goes back to the pool only after a complete answer the server
  did not ask to close; an answer left unread, a cancelled call or any error
  closes it.

asyncio (and uvloop) only: connections belong to the loop that opened them, and
another loop gets a pool of its own.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, cast

import httptools
import httpx

from .body import BoundedBody, check_length, read_limited, too_large

if TYPE_CHECKING:
    from .config import HttpConfig

__all__ = ["MAX_HEAD_BYTES", "LeanPool", "request_head"]

#: the largest status line plus headers accepted (aiohttp's line limits are 64 KiB)
MAX_HEAD_BYTES = 64 * 1024
#: body bytes buffered unread before the socket stops being read
_HIGH_WATER = 256 * 1024
#: body bytes buffered before a reader waiting for more is woken (the end of the answer,
#: an error or the connection's end wake it anyway): a 23 KB answer arriving in a few
#: segments costs one wake-up, not one per segment
_WAKE_BYTES = 64 * 1024
#: an idle connection older than this is closed instead of reused (httpx's default)
_KEEPALIVE_SECONDS = 5.0


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.idle_since = 0.0
        self._error: Exception | None = None
        self._reset()
        self._can_write = True
        self._write_waiter: asyncio.Future[None] | None = None
        self.busy = False  # a request is out and its answer not yet read
        self._timer: asyncio.TimerHandle | None = None  # the read timeout's (see _wait)
        self._due: float | None = None
        self._read_timeout: float | None = None

    def _reset(self) -> None:
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self.head_done = False
        self.complete = False
        self._body: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        self.has_length = False
        self.chunked = False
        self.keep_alive = False
        self.length: str | None = None  # the answer's Content-Length, as sent
        self.codings: list[str] = []  # its Content-Encoding values
        #: set by the direct path: a head announcing at most this many body bytes wakes
        #: nobody, its body's end does (see :meth:`on_headers_complete`)
        self.quiet_head_up_to = 0

    # -- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        if not self.busy or self.complete:  # bytes after the answer: nobody asked for them
            self.close()
            return
        if not self.head_done:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed answer: {exc}"))
            return
        if not self.head_done and self._head_bytes > MAX_HEAD_BYTES:
            self._fail(httpx.RemoteProtocolError("the answer's head is too large"))

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._stop_timer()
        if self.complete:
            self._wake()
            return
        if self.head_done and not self.has_length and exc is None:
            self.complete = True  # a body delimited by the end of the connection
        elif self._error is None:
            if exc is not None:
                self._error = httpx.ReadError(f"{type(exc).__name__}: {exc}")
            elif self.head_done:
                self._error = httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body"
                )
            else:
                self._error = httpx.RemoteProtocolError(
                    "Server disconnected without sending a response."
                )
        self._wake()
        if self._write_waiter is not None and not self._write_waiter.done():
            self._write_waiter.set_result(None)

    def pause_writing(self) -> None:
        self._can_write = False

    def resume_writing(self) -> None:
        self._can_write = True
        if self._write_waiter is not None and not self._write_waiter.done():
            self._write_waiter.set_result(None)

    # -- httptools callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.complete:  # a second answer to one request: stop reading this connection
            raise httpx.RemoteProtocolError("an answer nobody asked for")

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            self.headers = []
            self.reason = b""
            return
        self.status = status
        self.head_done = True
        self.keep_alive = self._parser.should_keep_alive()  # only valid while parsing
        for name, value in self.headers:
            lowered = name.lower()
            if lowered == b"content-length":
                self.has_length = True
                self.length = value.decode("latin-1")
            elif lowered == b"transfer-encoding" and b"chunked" in value.lower():
                self.has_length = self.chunked = True
            elif lowered == b"content-encoding":
                self.codings.extend(
                    part.strip().lower() for part in value.decode("latin-1").split(",")
                )
        if self._quiet_head():
            # the direct path reads a small answer whole: a head arriving before its body
            # (servers that write them apart, as uvicorn does) would wake the reader only
            # for it to wait again. The head's bytes count as bytes arriving.
            if self._due is not None and self._read_timeout is not None:
                self._due = self._loop.time() + self._read_timeout
            return
        self._wake()

    def _quiet_head(self) -> bool:
        """Whether the reader waits for the whole answer instead of its head: asked for,
        and a ``Content-Length`` within the limit it was asked for (a larger one wakes the
        reader to refuse it before its body is read), or a chunked body (no length to
        refuse it by: :meth:`on_body` wakes the reader once ``_WAKE_BYTES`` are buffered,
        and the bounded read counts from there). Compressed answers too: the limit is on
        the bytes buffered here, the bounded read limits what they inflate to."""
        limit = self.quiet_head_up_to
        if not limit:
            return False
        if self.length is None:
            return self.chunked  # a gzipping server (Jetty) sends its small answers so
        length = self.length.strip()
        return length.isdigit() and int(length) <= limit

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        self._buffered += len(body)
        if self._buffered > _HIGH_WATER and not self._reading_paused and self.transport:
            self._reading_paused = True
            self.transport.pause_reading()
        if self._buffered >= _WAKE_BYTES:
            self._wake()
        elif self._due is not None and self._read_timeout is not None:
            # bytes arrived: the reader's wait for them starts again, as if it had woken
            self._due = self._loop.time() + self._read_timeout

    def on_message_complete(self) -> None:
        if not self.head_done:
            return  # the end of an interim answer
        self.complete = True
        self._wake()

    # -- used by the pool -------------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: Exception) -> None:
        if self._error is None:
            self._error = error
        self.close()
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._stop_timer()
        if self.transport is not None:
            if self.transport.get_extra_info("sslcontext") is not None:
                # no TLS close_notify exchange: the answer's framing already told where it
                # ended, and a shutdown still pending when the loop stops leaks the socket
                self.transport.abort()
            else:
                self.transport.close()

    async def _wait(self, timeout: float | None) -> None:
        """Until the parser has more for us (head, body bytes, the end, an error), or
        ``ReadTimeout`` after ``timeout`` seconds without.

        The connection keeps one timer and moves its due time instead of making and
        cancelling a timer per wait (a read waits once or twice per call): the timer
        fires at the earliest due time it was set for, and sets itself again if the
        current wait is due later (:meth:`_check_read_timeout`).
        """
        waiter = self._waiter = self._loop.create_future()
        self._read_timeout = timeout
        if timeout is not None:
            due = self._due = self._loop.time() + timeout
            timer = self._timer
            if timer is None or timer.when() > due:
                if timer is not None:
                    timer.cancel()
                self._timer = self._loop.call_at(due, self._check_read_timeout)
        try:
            await waiter
        finally:
            self._waiter = None
            self._due = None

    def _check_read_timeout(self) -> None:
        self._timer = None
        due, waiter = self._due, self._waiter
        if due is None or waiter is None or waiter.done():
            return  # nothing waits (an idle connection): no timer until the next wait
        if self._loop.time() >= due:
            waiter.set_exception(httpx.ReadTimeout("timed out waiting for the server"))
        else:
            self._timer = self._loop.call_at(due, self._check_read_timeout)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    async def send(
        self,
        head: bytes,
        body: bytes | None,
        stream: Any,
        timeouts: Any,
        quiet_head_up_to: int = 0,
    ) -> None:
        """Write the request, then wait for the answer's head (with ``quiet_head_up_to``:
        for a whole answer announcing at most that many bytes, see :meth:`_quiet_head`)."""
        self._reset()
        self.quiet_head_up_to = quiet_head_up_to
        self.busy = True
        assert self.transport is not None
        self.transport.write(head + body if body else head)
        if stream is not None:
            write_timeout = timeouts.get("write")
            async for chunk in stream:
                if chunk:
                    self.transport.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await self._drain(write_timeout)
            self.transport.write(b"0\r\n\r\n")
        if not self._can_write:
            await self._drain(timeouts.get("write"))
        read_timeout = timeouts.get("read")
        while not self.head_done:
            self._raise_error()
            if self.closed:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
            await self._wait(read_timeout)
        self._raise_error()

    async def _drain(self, timeout: float | None) -> None:
        while not self._can_write and not self.closed:
            self._write_waiter = self._loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._write_waiter
            except TimeoutError:
                raise httpx.WriteTimeout("timed out writing the request") from None
            finally:
                self._write_waiter = None
        if self.closed:
            self._raise_error()
            raise httpx.WriteError("the connection closed while the request was written")

    async def body(self, read_timeout: float | None) -> AsyncIterator[bytes]:
        """The answer's body chunks as they arrive."""
        while True:
            if self._body:
                chunk = b"".join(self._body) if len(self._body) > 1 else self._body[0]
                self._body.clear()
                self._buffered = 0
                if self._reading_paused and self.transport is not None and not self.closed:
                    self._reading_paused = False
                    self.transport.resume_reading()
                yield chunk
                continue
            if self.complete:
                return
            self._raise_error()
            if self.closed:
                raise httpx.RemoteProtocolError("the connection closed during the answer")
            await self._wait(read_timeout)

    def whole_body(self, limit: int) -> bytes:
        """The body of an answer already complete, decoded within ``limit`` (what
        :func:`.body.read_limited` makes of it, without iterating)."""
        chunks = self._body
        content = b"".join(chunks) if len(chunks) != 1 else chunks[0]
        chunks.clear()
        self._buffered = 0
        if self._reading_paused and self.transport is not None and not self.closed:
            self._reading_paused = False
            self.transport.resume_reading()
        if not self.codings:  # most answers
            check_length(self.length, limit)
            if len(content) > limit:
                raise too_large(limit)
            return content
        body = BoundedBody(self.length, self.codings, limit)
        body.feed(content)
        return body.result()

    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed


class _Body(httpx.AsyncByteStream):
    """An answer's body for :func:`.body.read_bounded`; the connection's fate on close."""

    def __init__(self, pool: LeanPool, key: Any, connection: _Connection, timeouts: Any) -> None:
        self._pool = pool
        self._key = key
        self._connection = connection
        self._timeouts = timeouts
        self._released = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._connection.body(self._timeouts.get("read"))

    async def aclose(self) -> None:
        if self._released:
            return
        self._released = True
        connection = self._connection
        connection.idle_since = time.monotonic()
        if connection.reusable():
            connection.busy = False
            self._pool.release(self._key, connection)
        else:
            connection.close()
            self._pool.release(self._key, None)


_Key = tuple[str, str, int]


def request_head(
    method: bytes,
    target: bytes,
    headers: Iterable[tuple[bytes, bytes]],
    netloc: bytes,
    chunked: bool = False,
) -> bytes:
    """A request's status line and headers as written; ``Host`` first if not among them,
    no ``Content-Length`` beside a chunked body."""
    lines = [b"%s %s HTTP/1.1\r\n" % (method, target)]
    has_host = False
    for name, value in headers:
        lowered = name.lower()
        if chunked and lowered == b"content-length":
            continue
        has_host = has_host or lowered == b"host"
        lines.append(b"%s: %s\r\n" % (name, value))
    if not has_host:
        lines.insert(1, b"Host: %s\r\n" % netloc)
    lines.append(b"\r\n")
    return b"".join(lines)


class LeanPool(httpx.AsyncBaseTransport):
    """Keep-alive connections per origin, at most ``max_connections`` open at once.

    ``max_keepalive_connections`` idle ones are kept (the most recently used
    first); a call waiting longer than the pool timeout for a connection is
    ``PoolTimeout``.
    """

    def __init__(self, verify: ssl.SSLContext | bool, config: HttpConfig) -> None:
        self._verify = verify
        self._max_connections = config.max_connections
        self._max_idle = config.max_keepalive_connections
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: dict[_Key, list[_Connection]] = {}
        self._open = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._connections: set[_Connection] = set()  # every one opened on this loop

    def _for_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # connections of another (finished) loop are unusable
            self._loop = loop
            self._idle = {}
            self._open = 0
            self._waiters = collections.deque()
            self._connections = set()
        return loop

    def _ssl(self) -> ssl.SSLContext:
        if isinstance(self._verify, ssl.SSLContext):
            return self._verify
        context = ssl.create_default_context()
        if not self._verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self._verify = context
        return context

    async def _acquire(self, key: _Key, timeouts: Any) -> _Connection:
        loop = self._for_loop()
        while True:
            idle = self._idle.get(key)
            now = time.monotonic()
            while idle:
                connection = idle.pop()
                if connection.closed or now - connection.idle_since > _KEEPALIVE_SECONDS:
                    connection.close()
                    self._open -= 1
                    continue
                return connection
            if self._open < self._max_connections:
                break
            if not self._drop_idle():  # another origin's idle connection makes room
                await self._wait_for_slot(loop, timeouts.get("pool"))
        self._open += 1
        try:
            return await self._connect(loop, key, timeouts.get("connect"))
        except BaseException:
            self._open -= 1
            self._wake_one()
            raise

    def _drop_idle(self) -> bool:
        """Close an idle connection of any origin to make room; whether there was one."""
        for connections in self._idle.values():
            if connections:
                connections.pop(0).close()
                self._open -= 1
                return True
        return False

    async def _wait_for_slot(self, loop: asyncio.AbstractEventLoop, timeout: float | None) -> None:
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self._wake_one()  # woken but leaving: the slot goes to the next in line
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout("timed out waiting for a connection") from None
            raise
        finally:
            if not waiter.done() or waiter.cancelled():  # still queued: _wake_one pops the woken
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)  # a scan of the queue: only when leaving early

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, key: _Key, timeout: float | None
    ) -> _Connection:
        scheme, host, port = key
        try:
            async with asyncio.timeout(timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(loop),
                    host,
                    port,
                    ssl=self._ssl() if scheme == "https" else None,
                    server_hostname=host if scheme == "https" else None,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"timed out connecting to {host}:{port}") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}") from None
        if len(self._connections) >= 2 * self._max_connections:
            self._connections = {known for known in self._connections if not known.closed}
        self._connections.add(connection)
        return connection

    def release(self, key: _Key, connection: _Connection | None) -> None:
        """A connection done with: kept idle for the next call, or its slot freed.

        From another loop than the pool's (a body read after the pool moved on to a
        new loop), the connection belongs to no pool any more: it is closed.
        """
        if asyncio.get_running_loop() is not self._loop:
            if connection is not None:
                with contextlib.suppress(RuntimeError):  # its loop may be closed
                    connection.close()
            return
        if connection is not None:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self._max_idle:
                idle.append(connection)
                self._wake_one()
                return
            connection.close()
        self._open -= 1
        self._wake_one()

    def _head(self, request: httpx.Request, chunked: bool) -> bytes:
        url = request.url
        return request_head(
            request.method.encode("ascii"), url.raw_path, request.headers.raw, url.netloc, chunked
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}")
        key = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        chunked = "transfer-encoding" in request.headers
        stream = request.stream if chunked else None
        body = None if chunked else await request.aread()
        connection = await self._acquire(key, timeouts)
        try:
            await connection.send(self._head(request, chunked), body, stream, timeouts)
        except BaseException:
            connection.close()
            self.release(key, None)
            raise
        if request.method == "HEAD":  # no body follows, whatever the head says
            connection.complete = True
            connection.close()  # its parser would take the next answer for a body
        return httpx.Response(
            connection.status,
            headers=connection.headers,
            stream=_Body(self, key, connection, timeouts),
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": connection.reason},
        )

    async def exchange(
        self, key: _Key, head: bytes, body: bytes | None, timeouts: Any, limit: int
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes]:
        """One request written as ``head`` + ``body`` and its whole answer, read within
        ``limit`` bytes: status, reason, raw headers, decoded body.

        What :meth:`handle_async_request` and :func:`.body.read_bounded` do
        together, for callers that build the request's bytes themselves (the
        transport's direct path): the same connection handling, errors and bounded
        read, without the ``httpx.Request``/``Response`` objects around them.
        """
        connection = await self._acquire(key, timeouts)
        is_head = head.startswith(b"HEAD ")
        try:
            # a small answer is read whole: no wake-up for its head alone
            quiet = 0 if is_head else min(limit, _WAKE_BYTES)
            await connection.send(head, body, None, timeouts, quiet)
        except BaseException:
            connection.close()
            self.release(key, None)
            raise
        if is_head:  # no body follows, whatever the head says
            connection.complete = True
            connection.close()
        status, reason, headers = connection.status, connection.reason, connection.headers
        try:
            if connection.complete and connection._error is None:
                content = connection.whole_body(limit)  # most answers: one packet, read
            else:
                content = await read_limited(
                    connection.body(timeouts.get("read")),
                    connection.length,
                    connection.codings,
                    limit,
                )
        except BaseException:
            connection.close()
            self.release(key, None)
            raise
        connection.idle_since = time.monotonic()
        if connection.reusable():
            connection.busy = False
            self.release(key, connection)
        else:
            connection.close()
            self.release(key, None)
        return status, reason, headers, content

    async def aclose(self) -> None:
        """Close every connection, idle or still serving an answer nobody finished reading."""
        for connection in self._connections:
            if not connection.closed:
                with contextlib.suppress(RuntimeError):  # opened on a loop that is gone
                    connection.close()
        self._connections = set()
        self._idle = {}
        self._open = 0
