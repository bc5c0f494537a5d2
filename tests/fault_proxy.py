"""A scriptable fault-injecting HTTP/1.1 proxy for the end-to-end fault tests.

The proxy sits on a free 127.0.0.1 port between a backend's client and a real
server (our REST adapter, pylance's RestAdapter, the Iceberg and Unity test
catalogs, moto's Glue) and forwards every request unchanged, except those a
test scripted a fault for:

* ``fail_next(n, status, headers=...)``: answer without forwarding (a 503 burst,
  a 429 with ``Retry-After``); nothing reaches the server;
* ``reset_next(n, after_forwarding=False)``: reset the TCP connection (RST) after
  reading the request, before forwarding it: the server never saw it;
* ``reset_next(n, after_forwarding=True)``: forward, let the server apply it, then
  reset instead of relaying the answer: the ambiguous case;
* ``answer_after_forwarding(n, status)``: forward, then answer ``status`` (a
  gateway's 502/504 whose backend did apply the request);
* ``delay_next(n, seconds)``: forward at once, hold the answer past the client's
  read timeout;
* ``expire_tokens_every(n)``: play an identity provider whose bearer tokens live
  for n requests (counted from a token's first use) and are then answered 401: the
  tokens a client holds expire in the middle of its work, earlier than announced;
* ``inject_every(k, faults)``: every k-th request gets the next fault of a cycle,
  but never two in a row for the same request, so a client retrying at least
  once must survive every one of them;
* ``restart(upstream_restart)``: the upstream goes away and comes back (new port
  allowed): while it is down the proxy refuses new connections and drops the
  requests of open ones without an answer, exactly what a restarting server does.

Every request is recorded in :attr:`FaultProxy.requests` with the fault it got, so
a test can prove both sides: what the client saw and what reached the server.
The proxy runs its own event loop in a daemon thread (like the test servers), so
sync and async tests use it alike.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import h11
import httpx

__all__ = ["AdapterServer", "Fault", "FaultProxy", "Seen", "fault_proxy", "pylance_adapter"]

FaultKind = Literal[
    "status", "reset_before", "reset_after", "status_after", "delay", "token_expired"
]

#: headers that belong to one connection, never forwarded (RFC 9110 7.6.1)
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
    }
)


@dataclass(frozen=True)
class Seen:
    """One request the proxy received, and what it did with it."""

    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    fault: FaultKind | None
    forwarded: bool
    #: the upstream's status, when it answered (whatever the client then got)
    status: int | None = None

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers if k == lowered), None)


Match = Callable[[Seen], bool]


@dataclass
class Fault:
    """One scripted fault; ``match`` restricts it to some requests (default: any)."""

    kind: FaultKind
    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    seconds: float = 0.0
    match: Match | None = None


def _gateway_page(status: int) -> bytes:
    """What a gateway sends: an HTML page, not an ErrorResponse."""
    return f"<html><body><h1>{status}</h1>injected by the fault proxy</body></html>".encode()


class _Down(Exception):
    """The upstream is restarting: drop the request like a dead server would."""


class FaultProxy:
    """See the module docstring."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.uri = ""
        self.requests: list[Seen] = []
        self.injected: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._queue: collections.deque[Fault] = collections.deque()
        self._every: tuple[int, list[Fault]] | None = None
        self._cycle = 0
        self._last_faulted: set[tuple[str, str, bytes]] = set()
        self._token_limit: tuple[int, int, bytes] | None = None
        self._token_first_use: dict[str, int] = {}
        self._restart_at: tuple[int, Callable[[], str]] | None = None
        self._arrivals = 0  # requests received (recorded ones are appended on completion)
        self._down = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._port = 0
        self._client: httpx.AsyncClient | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._started = threading.Event()

    # -- scripting (any thread) ----------------------------------------------------------

    def add(self, fault: Fault, count: int = 1) -> None:
        with self._lock:
            self._queue.extend(Fault(**vars(fault)) for _ in range(count))

    def fail_next(
        self,
        count: int,
        status: int,
        *,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        match: Match | None = None,
    ) -> None:
        self.add(
            Fault(
                "status",
                status=status,
                headers=dict(headers or {}),
                body=_gateway_page(status) if body is None else body,
                match=match,
            ),
            count,
        )

    def reset_next(self, count: int, *, after_forwarding: bool, match: Match | None = None) -> None:
        self.add(Fault("reset_after" if after_forwarding else "reset_before", match=match), count)

    def answer_after_forwarding(
        self, count: int, status: int, *, match: Match | None = None
    ) -> None:
        self.add(
            Fault("status_after", status=status, body=_gateway_page(status), match=match), count
        )

    def delay_next(self, count: int, seconds: float, *, match: Match | None = None) -> None:
        self.add(Fault("delay", seconds=seconds, match=match), count)

    def inject_every(self, every: int, faults: Sequence[Fault]) -> None:
        with self._lock:
            self._every = (every, list(faults))
            self._cycle = 0

    def expire_tokens_every(self, requests: int, *, status: int = 401, body: bytes = b"") -> None:
        with self._lock:
            self._token_limit = (requests, status, body)

    def restart_at(self, request_number: int, restart: Callable[[], str]) -> None:
        """At the n-th request, run ``restart`` (blocking; returns the new upstream URL)."""
        with self._lock:
            self._restart_at = (request_number, restart)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
            self._every = None
            self._token_limit = None
            self._token_first_use.clear()
            self._restart_at = None
            self.requests.clear()
            self.injected.clear()
            self._last_faulted.clear()
            self._arrivals = 0

    @property
    def pending(self) -> int:
        """Scripted faults not injected yet."""
        with self._lock:
            return len(self._queue)

    def forwarded(self, match: Match | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self.requests if s.forwarded and (match is None or match(s))]

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._started.wait(15):
            raise RuntimeError("the fault proxy did not start")
        self.uri = f"http://127.0.0.1:{self._port}"

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(15)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(15)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.run_until_complete(self._open())
        self._started.set()
        loop.run_forever()
        loop.close()

    async def _open(self) -> None:
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(120),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )
        await self._listen()

    async def _listen(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", self._port))
        self._port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._connection, sock=sock, backlog=512)

    async def _close_listener(self) -> None:
        """Stop listening without leaking a connection accepted just before.

        asyncio accepts a connection in one loop step and sets it up in a task of its own;
        a server closed in between makes that task fail to attach (an assertion it
        swallows), and the socket is never closed. So accepting stops first, the tasks
        already under way get their steps (up to the connection's own handler), and only
        then is the server closed.
        """
        server = self._server
        if server is None:
            return
        loop = asyncio.get_running_loop()
        for sock in server.sockets:
            loop.remove_reader(sock.fileno())
        for _ in range(3):  # set-up task, connection_made, handler's first step
            await asyncio.sleep(0)
        server.close()

    async def _shutdown(self) -> None:
        await self._close_listener()
        for writer in list(self._writers):
            writer.transport.abort()
        if self._client is not None:
            await self._client.aclose()

    # -- one client connection ---------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        connection = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read_request(connection, reader)
                if request is None:
                    return
                keep_open = await self._handle(connection, writer, *request)
                if not keep_open or connection.our_state is h11.MUST_CLOSE:
                    return
                connection.start_next_cycle()
        except (ConnectionError, h11.ProtocolError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.transport.abort()

    @staticmethod
    async def _read_request(
        connection: h11.Connection, reader: asyncio.StreamReader
    ) -> tuple[h11.Request, bytes] | None:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            else:  # ConnectionClosed, PAUSED
                return None

    def _choose(self, seen: Seen) -> Fault | None:
        """The fault this request gets, if any (called under the lock)."""
        self._arrivals += 1
        for index, fault in enumerate(self._queue):
            if fault.match is None or fault.match(seen):
                del self._queue[index]
                return fault
        if self._token_limit is not None:
            lifetime, status, body = self._token_limit
            auth = seen.header("authorization") or ""
            if auth.lower().startswith("bearer "):
                first_use = self._token_first_use.setdefault(auth[7:], self._arrivals)
                if self._arrivals - first_use >= lifetime:
                    return Fault("token_expired", status=status, body=body)
        if self._every is not None:
            every, cycle = self._every
            key = (seen.method, seen.target, seen.body)
            if key in self._last_faulted:
                self._last_faulted.discard(key)  # its retry goes through
                return None
            self._cycle += 1
            if self._cycle % every == 0:
                fault = cycle[(self._cycle // every - 1) % len(cycle)]
                self._last_faulted.add(key)
                return fault
        return None

    async def _handle(
        self,
        connection: h11.Connection,
        writer: asyncio.StreamWriter,
        request: h11.Request,
        body: bytes,
    ) -> bool:
        headers = tuple(
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in request.headers
        )
        probe = Seen(
            request.method.decode(), request.target.decode("latin-1"), headers, body, None, False
        )
        restart: Callable[[], str] | None = None
        with self._lock:
            if self._down:
                fault: Fault | None = None
            else:
                fault = self._choose(probe)
                if self._restart_at is not None and self._arrivals >= self._restart_at[0]:
                    restart, self._restart_at = self._restart_at[1], None
                    self._down = True
            down = self._down
        if restart is not None:
            await self._restart(restart)
        if down:
            self._record(probe, None, forwarded=False)
            return False  # like a dead server: the connection closes without an answer
        kind = fault.kind if fault else None
        if fault is not None:
            with self._lock:
                self.injected[fault.kind] += 1
        if fault is not None and fault.kind in ("status", "token_expired"):
            self._record(probe, kind, forwarded=False)
            await self._send(connection, writer, fault.status, fault.headers, fault.body, request)
            return True
        if fault is not None and fault.kind == "reset_before":
            self._record(probe, kind, forwarded=False)
            self._reset(writer)
            return False
        try:
            status, response_headers, content = await self._forward(request, body)
        except httpx.TransportError:
            # the upstream is unreachable: a gateway answers 502
            self._record(probe, kind, forwarded=False)
            await self._send(connection, writer, 502, {}, _gateway_page(502), request)
            return True
        self._record(probe, kind, forwarded=True, status=status)
        if fault is not None and fault.kind == "reset_after":
            self._reset(writer)
            return False
        if fault is not None and fault.kind == "status_after":
            await self._send(connection, writer, fault.status, {}, fault.body, request)
            return True
        if fault is not None and fault.kind == "delay":
            await asyncio.sleep(fault.seconds)
        await self._send(connection, writer, status, response_headers, content, request)
        return True

    def _record(
        self, probe: Seen, kind: FaultKind | None, *, forwarded: bool, status: int | None = None
    ) -> None:
        seen = Seen(probe.method, probe.target, probe.headers, probe.body, kind, forwarded, status)
        with self._lock:
            self.requests.append(seen)

    async def _restart(self, restart: Callable[[], str]) -> None:
        """Refuse connections and drop open ones while the upstream restarts."""
        await self._close_listener()
        for writer in list(self._writers):
            writer.transport.abort()
        try:
            self.upstream = (await asyncio.to_thread(restart)).rstrip("/")
        finally:
            await self._listen()
            with self._lock:
                self._down = False

    async def _forward(
        self, request: h11.Request, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        assert self._client is not None
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in request.headers
            if k.lower() not in _HOP_BY_HOP and k.lower() != b"accept-encoding"
        ]
        headers.append(("accept-encoding", "identity"))
        upstream = httpx.Request(
            request.method.decode(),
            self.upstream + request.target.decode("latin-1"),
            headers=headers,
            content=body,
        )
        response = await self._client.send(upstream)
        kept = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in response.headers.raw
            if k.lower() not in _HOP_BY_HOP
        }
        if request.method == b"HEAD" and "content-length" in response.headers:
            kept["content-length"] = response.headers["content-length"]
        return response.status_code, kept, response.content

    @staticmethod
    async def _send(
        connection: h11.Connection,
        writer: asyncio.StreamWriter,
        status: int,
        headers: dict[str, str],
        content: bytes,
        request: h11.Request,
    ) -> None:
        out = [(k, v) for k, v in headers.items() if k.lower() != "content-length"]
        is_head = request.method == b"HEAD"
        if status not in (204, 304):  # these never carry a length (RFC 9110 8.6)
            length = headers.get("content-length", "0") if is_head else str(len(content))
            out.append(("content-length", length))
        data = connection.send(h11.Response(status_code=status, headers=out))
        if content and not is_head:
            data += connection.send(h11.Data(data=content))
        data += connection.send(h11.EndOfMessage())
        writer.write(data)
        await writer.drain()

    @staticmethod
    def _reset(writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()


@contextlib.contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    """A running :class:`FaultProxy` in front of ``upstream`` for the block's duration."""
    proxy = FaultProxy(upstream)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


def wait_until(predicate: Callable[[], bool], timeout: float = 10) -> None:
    """Poll a condition another thread makes true (never an assertion on timing)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


# -- real servers to put behind the proxy ----------------------------------------------------


class AdapterServer:
    """Our REST adapter under uvicorn on 127.0.0.1, restartable on the same port.

    ``factory`` builds the backend; a restart builds a new one, as a new server
    process would (a directory catalog keeps its state on disk). ``tls`` is a
    ``(certfile, keyfile)`` pair to serve https.
    """

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        tls: tuple[str, str] | None = None,
        app: Any = None,
        **options: Any,
    ) -> None:
        self._factory = factory
        self._tls = tls
        self._app = app
        self._options = options
        self.port = 0
        self.namespace: Any = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def uri(self) -> str:
        scheme = "https" if self._tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> str:
        import uvicorn

        from lance_namespace_async.server import create_app

        app = self._app
        if app is None:
            self.namespace = self._factory()
            app = create_app(self.namespace, **self._options)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        tls: dict[str, str] = {}
        if self._tls:
            tls = {"ssl_certfile": self._tls[0], "ssl_keyfile": self._tls[1]}
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2, **tls
        )
        self._server = uvicorn.Server(config)
        # uvicorn installs signal handlers only on the main thread; this is not it
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self.uri

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(15)
            assert not self._thread.is_alive(), "uvicorn did not stop"
        namespace, self.namespace = self.namespace, None
        if namespace is not None:
            # a loop of its own: the caller may be inside a running event loop
            closer = threading.Thread(target=asyncio.run, args=(namespace.aclose(),))
            closer.start()
            closer.join(15)

    def restart(self) -> str:
        """Stop, then serve a freshly built backend on the same port."""
        self.stop()
        return self.start()


@contextlib.contextmanager
def pylance_adapter(root: str) -> Iterator[str]:
    """pylance's own Rust RestAdapter serving its DirectoryNamespace on a free port."""
    from lance.namespace import RestAdapter

    adapter = RestAdapter("dir", {"root": root}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        yield f"http://127.0.0.1:{adapter.port}"
    finally:
        adapter.stop()
