"""The lifecycle the test servers share: uvicorn in a daemon thread on a free loopback port.

``UvicornThread`` serves an ASGI app (the Iceberg REST catalog, the Unity Catalog server,
the fake Glue) on 127.0.0.1 and returns once it accepts connections; ``running`` is the
context manager around a server that records violations: stopped at exit, and the block
fails when anything was recorded.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["UvicornThread", "free_port", "running"]


def free_port() -> int:
    """A loopback port that is free now, for servers that take a port number."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _ClosingServer(uvicorn.Server):
    """uvicorn's server that, once stopped, closes the namespace ``create_app`` serves.

    A served backend (rest, iceberg, unity) opens its connections on this thread's loop;
    they must be closed before ``asyncio.run`` closes the loop, or they are left open.
    """

    async def shutdown(self, sockets: Any = None) -> None:
        await super().shutdown(sockets)
        namespace = getattr(getattr(self.config.app, "state", None), "namespace", None)
        if namespace is not None and hasattr(namespace, "aclose"):
            await namespace.aclose()


class _OneSendTransport:
    """A connection's transport whose writes of one event-loop step leave in one send.

    uvicorn writes an answer's head as soon as the app starts it and its body next, two
    TCP segments, so a client usually wakes once for each; servers in production (hyper
    under pylance's RestAdapter, Netty) send a small answer in one. Same bytes, same
    order; everything but ``write`` and ``close`` is the socket transport's own.
    """

    def __init__(self, transport: Any, loop: Any) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending and not self._transport.is_closing():
            self._transport.write(b"".join(pending))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _OneSendProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol writing through :class:`_OneSendTransport`."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(_OneSendTransport(transport, self.loop))


class UvicornThread:
    """uvicorn serving ``app`` from a daemon thread on a socket bound to 127.0.0.1:0.

    Binding the socket before uvicorn runs leaves no window in which another process could
    take the port between "found free" and "listening". With ``one_send``, an answer's head
    and body leave in one send (:class:`_OneSendTransport`), as a production server's do:
    benchmarks of a client's CPU per answer then count its wake-ups per answer, not
    uvicorn's.
    """

    def __init__(self, app: Any, *, name: str, description: str, one_send: bool = False) -> None:
        self.app = app
        self.one_send = one_send
        self.name = name  # the thread's name, seen in thread dumps
        self.description = description  # "the fake Glue server": for the start failure
        self.uri = ""
        self._server: _ClosingServer | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    def start(self) -> str:
        """Serve; returns ``http://127.0.0.1:<port>`` once uvicorn accepts connections."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # asyncio sets TCP_NODELAY only on sockets it creates; without it keep-alive
        # requests wait for delayed ACKs (~40 ms each)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        self.uri = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            log_config=None,
            access_log=False,
            lifespan="off",
            ws="none",
            timeout_graceful_shutdown=2,
            **({"http": _OneSendProtocol} if self.one_send else {}),
        )
        self._server = _ClosingServer(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=self.name, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.description} did not start")
            time.sleep(0.005)
        return self.uri

    def stop(self) -> None:
        """Ask uvicorn to exit (in-flight requests get 2 s) and release the socket."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()


class _RecordsViolations(Protocol):
    violations: list[str]

    def start(self) -> None: ...

    def stop(self) -> None: ...


_Server = TypeVar("_Server", bound=_RecordsViolations)


@contextlib.contextmanager
def running(server: _Server, *, checked: str, error: type[Exception]) -> Iterator[_Server]:
    """Start ``server`` for the block; at exit stop it and raise ``error`` on violations.

    ``checked`` names what the violations broke ("Iceberg REST spec"). When the block
    itself fails, the violations are added to its exception as a note instead: they
    usually explain the failure.
    """
    server.start()
    try:
        yield server
    except BaseException as failure:
        if server.violations:
            failure.add_note(f"{checked} violations:\n" + "\n".join(server.violations))
        raise
    finally:
        server.stop()
    if server.violations:
        raise error(
            f"{len(server.violations)} {checked} violation(s):\n" + "\n".join(server.violations)
        )
