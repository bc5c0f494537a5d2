"""The HTTP/1.1 connection of :func:`lance_namespace_async.server.serve`, bounded.

uvicorn's httptools protocol is the fastest HTTP/1.1 server in pure-Python reach, but it
puts no bound on what a client without a token can make it hold: request heads of any size
(and the parser's callbacks concatenate them, so a 200 MB header costs quadratic CPU), heads
and bodies trickled for ever, and any number of connections. :class:`GuardedHttpToolsProtocol`
keeps the parser and adds, per connection, before any byte reaches the application (so before
authentication):

* a head cap: the request line and headers of one request fit in ``max_header_bytes`` and
  ``max_header_fields``, else ``431`` and the connection closes; the parser is fed at most
  ``max_header_bytes`` of a head, so memory and CPU per connection stay bounded;
* a head deadline: a head must be complete ``header_timeout`` seconds after its first byte
  (after the connection opened, for the first request), else ``408`` and close;
* a body deadline and cap: a body must be complete ``body_timeout`` seconds after its head,
  else ``408`` (or, once answered, just close); a body still coming after the answer is
  dropped up to ``max_body_bytes``, then the connection closes (an endless chunked upload
  cannot keep it);
* idle keep-alive connections close after ``keep_alive_timeout`` (uvicorn's own timer);
* at most ``max_connections`` connections: one more is answered ``503`` and closed at once;
* a refusal is read, not reset: the server sends FIN and closes when the client hangs up,
  ``LINGER_SECONDS`` later, or once it dropped ``LINGER_BYTES`` more.

Deadlines are checked by one sweep over the open connections on each tick of uvicorn's main
loop (10 a second, :class:`GuardedServer`) rather than by a timer per request, so a request
pays a few attribute stores, not a timer; the sweep costs a microsecond or so per
connection. Deadlines are not charged while the server itself has paused reading (flow
control), so a slow application never gets a client's request refused.

The answers are ``ErrorResponse`` JSON bodies like the adapter's, with ``Connection: close``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import uvicorn
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from .. import errors
from .._core import observe

if TYPE_CHECKING:
    from ._limits import ServerLimits

logger = logging.getLogger("lance_namespace_async.server")

_CODE_13 = errors.ErrorCode.INVALID_INPUT

#: after a refusal the server sends FIN but closes only when the client hangs up, this much
#: later, or once it dropped this many more bytes: closing with unread bytes makes the
#: kernel reset the connection, and a client still sending would lose the answer
LINGER_SECONDS = 2.0
LINGER_BYTES = 1_048_576


class _HeadTooLarge(Exception):
    """Raised inside a parser callback to stop parsing a head over the cap."""


def error_response(status: int, reason: str, code: int, message: str) -> bytes:
    """A complete HTTP/1.1 answer holding an ErrorResponse; the connection then closes."""
    body = json.dumps({"code": code, "error": message}).encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class _HeadHoldingTransport:
    """The transport as one response's cycle sees it: the head waits for the body.

    uvicorn writes a response's status line and headers, then its body, each with a
    ``send`` syscall of its own; the adapter's answers are a few hundred bytes, so
    holding the head until the body's write (or a close) sends each answer in one
    syscall and one TCP segment, a sixth of the HTTP stack's CPU per request.
    """

    __slots__ = ("_held", "_transport")

    #: a larger body goes out in its own write (no copy of a big Arrow answer)
    JOIN_LIMIT = 65_536

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = b""  # None once the head went out

    def write(self, data: bytes) -> None:
        held = self._held
        if held is None:
            self._transport.write(data)
        elif held == b"":  # the first write of the cycle: the head
            if data.startswith(b"HTTP/1.1 1"):  # an interim answer (100 Continue): now
                self._transport.write(data)
                return
            self._held = bytes(data) or None
        else:
            self._held = None
            if len(data) <= self.JOIN_LIMIT:
                self._transport.write(held + data)
            else:
                self._transport.write(held)
                self._transport.write(data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held:
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of the module docstring.

    ``limits`` and ``max_body_bytes`` are set on a subclass made per server by
    :func:`guarded_server`.
    """

    limits: ServerLimits
    max_body_bytes: int
    #: told of every refusal the bounds make: (status, what was refused, client address)
    on_refusal: Callable[[int, str, str | None], None] | None = None
    #: when a refused connection was last logged (one warning per 10 s, not per connection)
    _last_refusal_logged: float = -1e9

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._rejected = False
        self._in_head = True  # the next bytes belong to a request head
        self._head_bytes = 0  # bytes of the current head fed to the parser
        self._head_fields = 0
        self._too_large = ""  # why the head was refused (431), once it was
        self._head_deadline: float | None = None
        self._body_deadline: float | None = None
        self._body_bytes = 0
        self._linger_until: float | None = None  # set once refused: close at that time
        self._discarded = 0  # bytes dropped since

    # -- the connection ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            # refused before anything else is set up: the parser never sees a byte
            self._rejected = True
            self.transport = transport
            transport.write(_ANSWER_503)
            transport.close()
            self._refused(503, "max_connections")
            now = time.monotonic()
            if now - GuardedHttpToolsProtocol._last_refusal_logged >= 10:
                GuardedHttpToolsProtocol._last_refusal_logged = now
                logger.warning(
                    "refusing connections: %d open, the limit (max_connections)",
                    len(self.connections),
                )
            return
        super().connection_made(transport)
        self._head_deadline = self.loop.time() + self.limits.header_timeout

    def connection_lost(self, exc: Exception | None) -> None:
        if self._rejected:
            return
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._rejected:
            return
        if self._linger_until is not None:  # refused: drop what still comes, up to a limit
            self._discarded += len(data)
            if self._discarded > LINGER_BYTES:
                self.transport.close()  # it does not read the answer: no reason to wait
            return
        while data:
            if not self._in_head:
                super().data_received(data)
                return
            if self._head_deadline is None:
                self._head_deadline = self.loop.time() + self.limits.header_timeout
            room = self.limits.max_header_bytes - self._head_bytes
            if room <= 0:
                self._refuse_head(f"request head larger than {self.limits.max_header_bytes} bytes")
                return
            piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            super().data_received(piece)
            if self.transport.is_closing():
                return

    # -- parser callbacks -------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_fields += 1
        if self._head_fields > self.limits.max_header_fields:
            self._too_large = f"more than {self.limits.max_header_fields} header fields"
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_deadline = None
        self._body_bytes = 0
        self._body_deadline = self.loop.time() + self.limits.body_timeout
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and getattr(cycle, "transport", None) is self.transport:
            # duck-typed: every other call goes to the real transport
            cycle.transport = cast("asyncio.Transport", _HeadHoldingTransport(self.transport))

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)
        if self.cycle.response_complete and self._body_bytes > self.max_body_bytes:
            # answered already, and what still comes is more than any body we accept
            self._hang_up()

    def on_message_complete(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._head_fields = 0
        self._body_deadline = None
        super().on_message_complete()

    def on_response_complete(self) -> None:
        cycle = self.cycle
        if cycle is not None and isinstance(cycle.transport, _HeadHoldingTransport):
            cycle.transport.flush()
        super().on_response_complete()
        if not self._in_head and self._body_bytes > self.max_body_bytes:
            self._hang_up()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a parser error; ours is an ErrorResponse (431 when too large)."""
        if self._too_large:
            self._refuse_head(self._too_large)
            return
        self._refused(400, "malformed_request")
        self._close_with(error_response(400, "Bad Request", _CODE_13, msg))

    # -- refusals ---------------------------------------------------------------------------

    def _refused(self, status: int, what: str) -> None:
        """Count a refusal (metrics) and tell ``on_refusal`` (the access log); never raises."""
        observe.refused(status, what)
        hook = self.on_refusal
        if hook is None:
            return
        peer = self.transport.get_extra_info("peername") if self.transport else None
        client = str(peer[0]) if isinstance(peer, tuple) and peer else None
        try:
            hook(status, what, client)
        except Exception:  # a log must never break the connection handling
            logger.exception("on_refusal failed")

    def _refuse_head(self, message: str) -> None:
        self._refused(431, "max_header_bytes" if "bytes" in message else "max_header_fields")
        self._close_with(error_response(431, "Request Header Fields Too Large", _CODE_13, message))

    def _close_with(self, answer: bytes) -> None:
        """Send ``answer`` (unless a response is under way or sent) and close."""
        if self.transport.is_closing():
            return
        cycle = self.cycle
        answered = False
        if cycle is not None:
            if not cycle.response_complete:
                # the application is still at it: its answer goes nowhere now
                cycle.disconnected = True
                cycle.message_event.set()
            # a response already began, or this body's request was answered: no second one
            answered = cycle.response_started and (not cycle.response_complete or not self._in_head)
        if not answered:
            self.transport.write(answer)
        self._hang_up()

    def _hang_up(self) -> None:
        """Close after the answer: FIN now, close ``LINGER_SECONDS`` later (or when the
        client hangs up)."""
        if self.transport.is_closing() or self._linger_until is not None:
            return
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._linger_until = self.loop.time() + LINGER_SECONDS
        if self.flow is not None:
            self.flow.resume_reading()  # to see the client hang up

    def check_deadlines(self, now: float) -> None:
        """Close the connection if its head or body is overdue (called by the sweep)."""
        if self._rejected or self.transport is None or self.transport.is_closing():
            return
        if self._linger_until is not None:
            if now >= self._linger_until:
                self.transport.close()
            return
        if self.flow is not None and self.flow.read_paused:
            # the server stopped reading (pipelined request, unread body): not the client's
            # fault, so its clock does not run meanwhile
            if self._head_deadline is not None:
                self._head_deadline = now + self.limits.header_timeout
            if self._body_deadline is not None:
                self._body_deadline = now + self.limits.body_timeout
            return
        if self._head_deadline is not None and now >= self._head_deadline:
            if self._head_bytes == 0 and self._in_head:
                self.transport.close()  # nothing was ever sent: nothing to answer
                return
            message = f"request head not received within {self.limits.header_timeout:g} s"
            self._refused(408, "header_timeout")
            self._close_with(error_response(408, "Request Timeout", _CODE_13, message))
            return
        if self._body_deadline is not None and now >= self._body_deadline:
            message = f"request body not received within {self.limits.body_timeout:g} s"
            self._refused(408, "body_timeout")
            self._close_with(error_response(408, "Request Timeout", _CODE_13, message))


_ANSWER_503 = error_response(
    503,
    "Service Unavailable",
    errors.ErrorCode.SERVICE_UNAVAILABLE,
    "too many connections, try again later",
)


#: the methods of uvicorn's protocol the bounds override or call
_HOOKS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_header",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "on_response_complete",
    "send_400_response",
)


class GuardedServer(uvicorn.Server):
    """uvicorn's server, sweeping the connections' deadlines on every tick of its loop."""

    async def on_tick(self, counter: int) -> bool:
        now = asyncio.get_running_loop().time()
        for connection in list(self.server_state.connections):
            if isinstance(connection, GuardedHttpToolsProtocol):
                connection.check_deadlines(now)
        return await super().on_tick(counter)


def guarded_server(
    app: Any,
    limits: ServerLimits,
    max_body_bytes: int,
    on_refusal: Callable[[int, str, str | None], None] | None = None,
    **options: Any,
) -> GuardedServer:
    """The uvicorn server :func:`~lance_namespace_async.server.serve` runs, with ``limits``.

    ``on_refusal`` hears of each refusal the bounds make (431, 408, 400, 503);
    ``options`` go to :class:`uvicorn.Config` (host, port, log_level, ...).
    """
    missing = [name for name in _HOOKS if not callable(getattr(HttpToolsProtocol, name, None))]
    if missing:  # the bounds hook into these: refuse to serve without them
        raise errors.MissingDependencyError(
            f"this uvicorn ({uvicorn.__version__}) lacks {', '.join(missing)} in its httptools "
            "protocol: install the versions of lance-namespace-async[server]"
        )
    protocol = type(
        "GuardedHttpToolsProtocol",
        (GuardedHttpToolsProtocol,),
        {
            "limits": limits,
            "max_body_bytes": max_body_bytes,
            "on_refusal": staticmethod(on_refusal) if on_refusal else None,
        },
    )
    config = uvicorn.Config(
        app,
        http=protocol,
        ws="none",  # the protocol has no WebSocket route; an upgrade stays plain HTTP
        lifespan="off",
        server_header=False,
        timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
        # the adapter never reads the client's address or scheme, so X-Forwarded-* rewriting
        # (uvicorn's ProxyHeadersMiddleware, one more layer per request) buys nothing
        **{"proxy_headers": False, **options},
    )
    return GuardedServer(config)
