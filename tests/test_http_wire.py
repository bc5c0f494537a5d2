"""Every wire under the HTTP transport (``http_client``) keeps the same policy.

``auto`` (the default) sends through the lean wire on asyncio (httptools on an
asyncio Protocol), ``aiohttp`` through aiohttp, ``httpx`` through httpcore.
Whether a request may have reached the server decides whether a create is
retried, so each wire's failures must map to the same httpx errors; a 503 is
retried, a redirect is an answer, an oversized head a broken one; connections
are kept alive and bounded by ``max_connections``; and a hostile server (one
trickling a byte every 0.2 s, one sending more than the client will read, plain,
chunked, until close or as a gzip bomb) is cut off by the same deadline and size
limit on all, with the client's memory bounded. Driven against a scripted
HTTP/1.1 server (asyncio streams) on a free loopback port; the ``lance-ns
--timeout`` case runs the installed script in a subprocess."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import sys
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.timeout import Timeout
from lance_namespace_async._transport.transport import HttpTransport

#: "lean-httpx-path" is the lean wire with the transport's direct path turned off: the
#: rest backend's calls then go through httpx's request/response objects on it
WIRES = ["lean", "lean-httpx-path", "aiohttp", "httpx"]
FAST = {"retry_backoff_ms": "1", "retry_max_backoff_ms": "5", "read_timeout": "300"}
TRICKLE_GAP = 0.2  # seconds between two bytes of a trickling server
HUGE = 50 * 1024 * 1024  # what an oversized server offers to send
LIMIT = 1024 * 1024  # the max_response_bytes of the oversized cases
CHUNK = b"x" * 65536


def http_client(wire: str) -> str:
    """The ``http_client`` value of a :data:`WIRES` entry."""
    return "lean" if wire == "lean-httpx-path" else wire


@pytest.fixture(autouse=True)
def _request_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The "lean-httpx-path" entry: the direct path off for the test."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("wire") == "lean-httpx-path":
        monkeypatch.setattr(HttpTransport, "direct", False)


@functools.cache
def gzip_bomb() -> bytes:
    """64 MiB of zeros, gzipped (~64 KiB): small on the wire, huge once inflated."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1024 * 1024)
    return b"".join([deflater.compress(block) for _ in range(64)] + [deflater.flush()])


class ScriptedServer:
    """Answers requests in order of ``script``, one action each.

    "ok" answers ("gzip" compressed, "zstd" labelled so, "token" with a new OAuth2
    token, "unauthorized-late" a 401 after 0.3 s, "split" with its head and body 50 ms
    apart, "split-gzip-chunks" gzipped and chunked as Jetty sends it, head and each
    chunk 20 ms apart), "close" closes
    without an answer, "cut-body" in the middle of the body, "stall" answers nothing for a
    second, "head-then-stall" sends a head and then nothing for a second
    ("chunked-head-then-stall": a chunked one, with its first chunk); the hostile
    ones: "trickle-head" / "trickle-body" send the status line
    or the body one byte every TRICKLE_GAP, "big-length" announces and sends HUGE
    bytes, "big-chunked" sends them chunked, "big-until-close" with neither length
    nor chunks, "gzip-bomb" sends :func:`gzip_bomb`. ``sent`` counts body bytes
    the server managed to write.
    """

    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.requests: list[str] = []
        self.heads: list[bytes] = []
        self.sent = 0
        self.server: asyncio.Server | None = None
        self.connections = 0  # connections accepted
        self.open_now = 0
        self.most_open = 0  # connections open at once, at most
        self.tokens = 0  # tokens issued ("token")

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            await self.answer(reader, writer)
        finally:
            self.open_now -= 1

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                self.requests.append(head.split(b" ", 2)[1].decode())
                self.heads.append(head)
                action = self.script.pop(0) if self.script else "ok"
                if action == "close":
                    writer.close()
                    return
                if action == "cut-body":  # the connection drops in the middle of the body
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{")
                    await writer.drain()
                    writer.close()
                    return
                if action == "stall":  # past the client's read timeout
                    await asyncio.sleep(1)
                    writer.close()
                    return
                if action in ("head-then-stall", "chunked-head-then-stall"):  # no end comes
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n"
                        if action == "head-then-stall"
                        else b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"
                    )
                    await writer.drain()
                    await asyncio.sleep(1)
                    writer.close()
                    return
                if action in HOSTILE:
                    await HOSTILE[action](self, writer)
                    writer.close()
                    return
                if action == "unauthorized-late":  # a 401 that takes its time
                    await asyncio.sleep(0.3)
                    action = "unauthorized"
                if action in CANNED:
                    writer.write(CANNED[action])
                    await writer.drain()
                    continue
                if action == "slow-ok":  # a while in flight: concurrent calls pile up
                    await asyncio.sleep(0.05)
                body = json.dumps({"tables": ["t"], "namespaces": []}).encode()
                extra = b"Connection: close\r\n" if action == "ok-close" else b""
                if action == "ok-then-stray":  # a second answer nobody asked for follows
                    asyncio.get_running_loop().call_later(0.05, writer.write, STRAY)
                if action == "ok-with-stray":  # in the same packet as the answer
                    extra = b""
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                        + STRAY
                    )
                    await writer.drain()
                    continue
                if action == "token":  # tk1, tk2, ...: each one new
                    self.tokens += 1
                    token = f"tk{self.tokens}"
                    body = json.dumps({"access_token": token, "expires_in": 3600}).encode()
                if action == "gzip":
                    body, extra = zlib.compress(body, wbits=31), b"Content-Encoding: gzip\r\n"
                if action == "zstd":  # never asked for: httpx would inflate it without a bound
                    extra = b"Content-Encoding: zstd\r\n"
                if action == "split":  # the head in one packet, the body 50 ms later
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    )
                    await writer.drain()
                    await asyncio.sleep(0.05)
                    writer.write(body)
                    await writer.drain()
                    continue
                if action == "split-gzip-chunks":
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                    )
                    gzipped = zlib.compress(body, wbits=31)
                    for piece in (gzipped[:10], gzipped[10:], b""):
                        await writer.drain()
                        await asyncio.sleep(0.02)
                        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    await writer.drain()
                    continue
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + extra
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                if action == "ok-close":
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            writer.close()  # the client went away, or the test is over

    async def trickle(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            self.sent += 1
            await asyncio.sleep(TRICKLE_GAP)

    async def trickle_head(self, writer: asyncio.StreamWriter) -> None:
        await self.trickle(writer, b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"s" * 1000)

    async def trickle_body(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(b"Content-Length: 1000\r\n\r\n")
        await self.trickle(writer, b'{"tables": ["' + b"t" * 980)

    async def send_huge(self, writer: asyncio.StreamWriter, *, chunked: bool = False) -> None:
        while self.sent < HUGE:
            if chunked:
                writer.write(f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n")
            else:
                writer.write(CHUNK)
            await writer.drain()
            self.sent += len(CHUNK)
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    async def big_length(self, writer: asyncio.StreamWriter) -> None:
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {HUGE}\r\n\r\n".encode())
        await self.send_huge(writer)

    async def big_chunked(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        await self.send_huge(writer, chunked=True)

    async def big_until_close(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        await self.send_huge(writer)

    async def bomb(self, writer: asyncio.StreamWriter) -> None:
        body = gzip_bomb()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        self.sent += len(body)


def _answer(
    status: int, body: bytes, content_type: bytes = b"application/json", extra: bytes = b""
) -> bytes:
    return b"HTTP/1.1 %d X\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n%s" % (
        status,
        content_type,
        extra,
        len(body),
        body,
    )


_BUSY = b'{"error": "busy", "code": 17}'
STRAY = b'HTTP/1.1 200 OK\r\nContent-Length: 29\r\n\r\n{"tables": ["stray"], "x": 1}'
CANNED = {
    # retried after the wait the server asks for
    "busy": b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\n"
    b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY), _BUSY),
    # never followed: a catalog's answer, not a hop to another origin
    "redirect": b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:9/v1/x\r\n"
    b"Content-Length: 0\r\n\r\n",
    "unauthorized": _answer(401, b'{"error": "token expired"}'),
    "bad-gateway": _answer(502, b"<html>bad gateway</html>", b"text/html"),
    "conflict": _answer(409, b'{"error": "exists"}'),
    "code-decides": _answer(404, b'{"error": "bad name", "code": 13}'),
    "malformed": _answer(200, b"<html>not json</html>", b"text/html"),
    "deep": _answer(200, b'{"tables": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    "with-headers": _answer(200, b'{"tables": ["t"]}', extra=b"X-Request-Id: r-1\r\n"),
    "set-cookie": _answer(200, b'{"tables": ["t"]}', extra=b"Set-Cookie: session=s1; Path=/\r\n"),
    # a head no wire reads whole (aiohttp's and the lean wire's limit is 64 KiB)
    "huge-head": b"HTTP/1.1 200 OK\r\nX-Big: "
    + b"h" * 200_000
    + b"\r\nContent-Length: 2\r\n\r\n{}",
}

HOSTILE = {
    "trickle-head": ScriptedServer.trickle_head,
    "trickle-body": ScriptedServer.trickle_body,
    "big-length": ScriptedServer.big_length,
    "big-chunked": ScriptedServer.big_chunked,
    "big-until-close": ScriptedServer.big_until_close,
    "gzip-bomb": ScriptedServer.bomb,
}


async def _serve() -> ScriptedServer:
    server = ScriptedServer([])
    server.server = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    return server


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedServer]:
    server = await _serve()
    try:
        yield server
    finally:
        assert server.server is not None
        server.server.close()


@pytest.fixture
async def token_server() -> AsyncIterator[ScriptedServer]:
    """A second origin: an OAuth2 token endpoint apart from the catalog."""
    server = await _serve()
    server.script = ["token"] * 10
    try:
        yield server
    finally:
        assert server.server is not None
        server.server.close()


@pytest.mark.parametrize("wire", WIRES)
async def test_a_read_answered_after_a_dropped_connection_is_retried(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["close"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        response = await ns.list_tables({"id": ["a"]})
    assert response.tables == ["t"]
    assert len(scripted.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_a_create_whose_connection_dropped_is_not_retried(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["close"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        with pytest.raises(errors.ServiceUnavailableError):
            await ns.create_namespace({"id": ["a"]})
    assert len(scripted.requests) == 1  # it may have been applied: never sent twice


@pytest.mark.parametrize("wire", WIRES)
async def test_read_timeouts_are_retried_for_reads_only(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["stall"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        assert len(scripted.requests) == 2
        scripted.script = ["stall"]
        with pytest.raises(errors.ServiceUnavailableError, match="timed out"):
            await ns.create_namespace({"id": ["a"]})
    assert len(scripted.requests) == 3


@pytest.mark.parametrize("wire", WIRES)
async def test_a_head_and_its_body_apart_are_one_answer_and_a_silent_body_a_read_timeout(
    scripted: ScriptedServer, wire: str
) -> None:
    """The direct path waits for a small answer's end rather than its head, whether it
    has a length or comes chunked and gzipped: the answer is the same, and a body that
    never ends is still a read timeout (retried for a read, not for a create)."""
    scripted.script = ["split", "split", "split-gzip-chunks", "split-gzip-chunks"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        for _ in range(4):  # each after the first on the kept-alive connection
            assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        for stall in ("head-then-stall", "chunked-head-then-stall"):
            scripted.script = [stall]
            assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        assert len(scripted.requests) == 8
        for stall in ("head-then-stall", "chunked-head-then-stall"):
            scripted.script = [stall]
            with pytest.raises(errors.ServiceUnavailableError, match="timed out"):
                await ns.create_namespace({"id": ["a"]})
    assert len(scripted.requests) == 10


@pytest.mark.parametrize("wire", WIRES)
async def test_a_body_cut_off_is_retried_for_reads_only(
    scripted: ScriptedServer, wire: str
) -> None:
    """The body is read inside the retry policy on both wires: a read retries, a create not."""
    scripted.script = ["cut-body"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        assert len(scripted.requests) == 2
        scripted.script = ["cut-body"]
        with pytest.raises(errors.ServiceUnavailableError):
            await ns.create_namespace({"id": ["a"]})
    assert len(scripted.requests) == 3


@pytest.mark.parametrize("wire", WIRES)
async def test_a_refused_connection_is_retried_then_service_unavailable(wire: str) -> None:
    properties = {
        "uri": "http://127.0.0.1:9",
        "http_client": http_client(wire),
        "max_retries": "1",
        **FAST,
    }
    async with lna.connect("rest", properties) as ns:
        with pytest.raises(errors.ServiceUnavailableError):
            await ns.create_namespace({"id": ["a"]})  # never sent, so even a create retries


def test_an_unknown_http_client_names_the_key() -> None:
    with pytest.raises(errors.InvalidInputError, match="http_client"):
        lna.connect("rest", {"uri": "http://127.0.0.1:9", "http_client": "curl"})


@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("GET", "/v1/namespace/%24/list", {"limit": 5, "page_token": "a b&c", "flag": True}),
        ("POST", "/v1/table/a%24b/describe", {}),
        ("POST", "/v1/table/a%2Fb/declare", None),
        # not plain (a space, a non-ASCII name, a dot segment): httpx's parse decides
        ("POST", "/v1/table/caf\u00e9 x/describe", {"q": "\u00e9 &"}),
        ("GET", "/v1/namespace/./../list", None),
        ("GET", "/v1/namespace/%zz/list", None),
        ("post", "/v1/table/x/describe", {"with_table_uri": False}),  # as the generated code
    ],
)
def test_requests_are_built_exactly_as_httpx_builds_them(
    method: str, path: str, params: dict[str, object] | None
) -> None:
    from lance_namespace_async._transport.client import _Client

    client = _Client(base_url="http://catalog.test:8080/api/", headers={"X-Tenant": "blue"})
    for json_body, call_headers in [
        ({"id": ["a", "b"], "name": "caf\u00e9"}, {"X-Call": "1"}),
        (None, {"X-Call": "1"}),  # no body: POST gets Content-Length 0
        ({"id": []}, {"Content-Type": "application/json; charset=utf-8"}),
    ]:
        arguments = {"params": params, "json": json_body, "headers": call_headers}
        ours = client.build_request(method, path, **arguments)  # type: ignore[arg-type]
        reference = httpx.AsyncClient.build_request(client, method, path, **arguments)  # type: ignore[arg-type]
        assert str(ours.url) == str(reference.url)
        assert ours.url.raw_path == reference.url.raw_path
        assert ours.headers.raw == reference.headers.raw  # names, case and order
        assert ours.content == reference.content
        assert ours.extensions == reference.extensions
        assert ours.method == reference.method
        assert list(ours.stream) == list(reference.stream)  # type: ignore[arg-type]


async def test_cookies_a_server_sets_are_still_sent_back() -> None:
    from lance_namespace_async._transport.client import _Client

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/login":
            return httpx.Response(200, headers={"set-cookie": "session=s1; Path=/"})
        return httpx.Response(200, json={"cookie": request.headers.get("cookie")})

    async with _Client(base_url="http://catalog.test", transport=httpx.MockTransport(answer)) as c:
        assert (await c.get("/v1/table")).json() == {"cookie": None}
        await c.get("/login")
        assert (await c.get("/v1/table")).json() == {"cookie": "session=s1"}


# -- a whole-call deadline (a server that trickles) -----------------------------------------------


@pytest.mark.parametrize("action", ["trickle-head", "trickle-body"])
@pytest.mark.parametrize("wire", WIRES)
async def test_a_trickling_server_is_cut_off_by_the_call_deadline(
    scripted: ScriptedServer, wire: str, action: str
) -> None:
    """A byte every 0.2 s never trips the 30 s read timeout; call_timeout ends the call."""
    scripted.script = [action] * 10
    properties = {"uri": scripted.url, "http_client": http_client(wire), "call_timeout": "1000"}
    async with lna.connect("rest", properties) as ns:
        started = time.monotonic()
        with pytest.raises(errors.ServiceUnavailableError, match=r"timed out.*deadline of 1 s"):
            await ns.list_tables({"id": ["a"]})
        elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 5, elapsed
    assert scripted.sent >= 3  # it was trickling when the deadline struck


@pytest.mark.parametrize("wire", WIRES)
async def test_the_per_call_timeout_is_the_whole_calls_deadline(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["trickle-body"] * 10
    async with lna.connect("rest", {"uri": scripted.url, "http_client": http_client(wire)}) as ns:
        for timeout in (1.0, Timeout(read=30, total=1)):
            started = time.monotonic()
            with pytest.raises(errors.ServiceUnavailableError, match="timed out"):
                await ns.list_tables({"id": ["a"]}, timeout=timeout)
            assert 0.9 <= time.monotonic() - started < 5


@pytest.mark.parametrize("wire", WIRES)
async def test_retries_do_not_restart_the_deadline(scripted: ScriptedServer, wire: str) -> None:
    """Ten retries of 0.3 s read timeouts would take 3.3 s; the 1 s deadline ends them."""
    scripted.script = ["stall"] * 20
    properties = {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    properties.update(max_retries="10", call_timeout="1000")
    async with lna.connect("rest", properties) as ns:
        started = time.monotonic()
        with pytest.raises(errors.ServiceUnavailableError, match="timed out"):
            await ns.list_tables({"id": ["a"]})
        assert time.monotonic() - started < 2.5
    assert 2 <= len(scripted.requests) <= 5


async def test_lance_ns_timeout_stops_a_trickling_server(
    scripted: ScriptedServer, tmp_path: Path
) -> None:
    scripted.script = ["trickle-body"] * 10
    script = Path(sys.executable).parent / "lance-ns"
    command = (
        [str(script)] if script.exists() else [sys.executable, "-m", "lance_namespace_async._cli"]
    )
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANCE_NS_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *command,
        *("ls", "a", "--impl", "rest", "--prop", f"uri={scripted.url}", "--timeout", "1"),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
    elapsed = time.monotonic() - started
    assert process.returncode == 7, stderr  # unavailable: timeouts
    assert "timed out" in stderr.decode()
    assert stdout == b""
    assert elapsed < 15  # the interpreter's start included; without a deadline: 200 s
    assert scripted.sent >= 3


# -- a size limit on every answer -----------------------------------------------------------------


@pytest.mark.parametrize("action", ["big-length", "big-chunked", "big-until-close", "gzip-bomb"])
@pytest.mark.parametrize("wire", WIRES)
async def test_an_oversized_answer_stops_the_read_with_memory_bounded(
    scripted: ScriptedServer, wire: str, action: str
) -> None:
    """50 MB offered (or 64 MiB once inflated) against a 1 MiB limit: refused, not read."""
    gzip_bomb()  # built before measuring
    scripted.script = ["ok"] + [action] * 10
    properties = {
        "uri": scripted.url,
        "http_client": http_client(wire),
        "max_response_bytes": str(LIMIT),
    }
    async with lna.connect("rest", properties) as ns:
        await ns.list_tables({"id": ["warm-up"]})  # imports and pools: not this answer's cost
        tracemalloc.start()
        try:
            with pytest.raises(errors.InternalError, match="max_response_bytes") as caught:
                await ns.list_tables({"id": ["a"]})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert caught.value.code == 18
    assert peak < 12 * LIMIT, f"peak {peak / 2**20:.1f} MiB"
    assert len(scripted.requests) == 2  # not retried: the same question, the same answer
    if action != "gzip-bomb":
        assert scripted.sent < HUGE  # the client stopped reading; the server could not finish


@pytest.mark.parametrize("wire", WIRES)
async def test_a_compressed_answer_within_the_limit_is_read(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["gzip"]
    async with lna.connect("rest", {"uri": scripted.url, "http_client": http_client(wire)}) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
    assert b"accept-encoding: gzip, deflate\r\n" in scripted.heads[0].lower()


@pytest.mark.parametrize("wire", WIRES)
async def test_an_answer_compressed_in_a_scheme_not_asked_for_is_refused(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["zstd"]
    async with lna.connect("rest", {"uri": scripted.url, "http_client": http_client(wire)}) as ns:
        with pytest.raises(errors.InternalError, match="'zstd', which was not asked for"):
            await ns.list_tables({"id": ["a"]})


# -- credentials in the URL, and headers kept to the catalog's origin ------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_url_password_is_basic_auth_on_both_wires_and_never_shown(
    scripted: ScriptedServer, wire: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    uri = scripted.url.replace("http://", "http://reader:s3cr%40t-pw@")
    async with lna.connect("rest", {"uri": uri, "http_client": http_client(wire)}) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        shown = [repr(ns), ns.namespace_id(), repr(ns.config), str(ns.config.redacted_properties())]
    head = scripted.heads[0].decode()
    expected = httpx.BasicAuth("reader", "s3cr@t-pw")._auth_header  # type: ignore[attr-defined]
    assert f"\r\nauthorization: {expected}".lower() in head.lower()
    assert head.startswith("GET /v1/namespace/a/table/list")  # no userinfo on the wire
    for text in [*shown, caplog.text]:
        assert "s3cr" not in text
    assert "reader:***@127.0.0.1" in shown[1]


@pytest.mark.parametrize("wire", WIRES)
async def test_a_url_password_never_shows_in_connection_errors(wire: str) -> None:
    properties = {
        "uri": "http://reader:s3cr3t-pw@127.0.0.1:9",
        "http_client": http_client(wire),
        **FAST,
    }
    async with lna.connect("rest", {**properties, "max_retries": "0"}) as ns:
        with pytest.raises(errors.ServiceUnavailableError) as caught:
            await ns.list_tables({"id": ["a"]})
    assert "s3cr3t" not in str(caught.value) + repr(caught.value)


@pytest.mark.parametrize("wire", WIRES)
async def test_header_extras_go_to_the_catalog_only_not_to_the_token_endpoint(
    scripted: ScriptedServer, token_server: ScriptedServer, wire: str
) -> None:
    properties = {
        "uri": scripted.url,
        "http_client": http_client(wire),
        "credential": "cid:csecret",
        "oauth2_server_uri": f"{token_server.url}/oauth/tokens",
        "header.X-Catalog-Key": "catalog-only-key",
        "api_key": "catalog-api-key",
    }
    async with lna.connect("rest", properties) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
    token_head = token_server.heads[0].decode().lower()
    catalog_head = scripted.heads[0].decode().lower()
    assert token_head.startswith("post /oauth/tokens")
    assert "catalog-only-key" not in token_head
    assert "catalog-api-key" not in token_head
    assert "x-catalog-key: catalog-only-key" in catalog_head
    assert "authorization: bearer tk" in catalog_head


# -- the same rules for every wire: retries, redirects, heads, the pool ---------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_503_is_retried_after_the_wait_the_server_asks_for(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["busy", "ok"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
    assert len(scripted.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_a_redirect_is_the_answer_not_a_hop(scripted: ScriptedServer, wire: str) -> None:
    scripted.script = ["redirect"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        with pytest.raises(errors.InvalidInputError, match="HTTP 307"):
            await ns.list_tables({"id": ["a"]})
    assert len(scripted.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_an_oversized_head_is_a_broken_answer(scripted: ScriptedServer, wire: str) -> None:
    scripted.script = ["huge-head"] * 3
    properties = {"uri": scripted.url, "http_client": http_client(wire), **FAST, "max_retries": "0"}
    async with lna.connect("rest", properties) as ns:
        with pytest.raises(errors.ServiceUnavailableError):
            await ns.list_tables({"id": ["a"]})


@pytest.mark.parametrize("wire", WIRES)
async def test_connections_are_kept_alive_and_never_more_than_max_connections(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["slow-ok"] * 8
    properties = {
        "uri": scripted.url,
        "http_client": http_client(wire),
        **FAST,
        "max_connections": "2",
    }
    async with lna.connect("rest", properties) as ns:
        answers = await asyncio.gather(*(ns.list_tables({"id": ["a"]}) for _ in range(8)))
        assert [answer.tables for answer in answers] == [["t"]] * 8
        for _ in range(3):
            await ns.list_tables({"id": ["a"]})
    assert len(scripted.requests) == 11
    assert scripted.most_open <= 2
    assert scripted.connections <= 2  # every later call reused one


@pytest.mark.parametrize("wire", WIRES)
async def test_a_connection_the_server_closes_is_not_reused(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["ok-close", "ok", "ok"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        for _ in range(3):
            assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
    assert len(scripted.requests) == 3
    assert scripted.connections == 2


@pytest.mark.parametrize("wire", ["auto", "lean"])
def test_the_default_wire_runs_on_uvloop(wire: str) -> None:
    """uvloop's transports are its own classes: the lean wire needs only the Protocol API."""
    import uvloop  # the server extra and the dev extra install it

    async def scenario() -> tuple[list[list[str]], int]:
        server = await _serve()
        server.script = ["ok", "busy", "ok", "ok"]
        try:
            async with lna.connect(
                "rest", {"uri": server.url, "http_client": http_client(wire), **FAST}
            ) as ns:
                answers = [(await ns.list_tables({"id": ["a"]})).tables for _ in range(3)]
        finally:
            assert server.server is not None
            server.server.close()
        return answers, server.connections

    answers, connections = uvloop.run(scenario())
    assert answers == [["t"]] * 3
    assert connections == 1  # kept alive, the 503 included


# Not every wire passes: aiohttp (3.14) takes a stray answer on an idle pooled connection
# for the next call's (the second call below gets ["stray"]), and httpcore (h11) does so
# when the stray answer comes in the same packet as the real one; the lean wire closes a
# connection at the first byte after an answer
@pytest.mark.parametrize(
    ("wire", "stray"),
    [
        ("lean", "ok-then-stray"),
        ("lean", "ok-with-stray"),
        ("lean-httpx-path", "ok-then-stray"),
        ("lean-httpx-path", "ok-with-stray"),
        ("httpx", "ok-then-stray"),
    ],
)
async def test_an_answer_nobody_asked_for_is_never_taken_for_the_next(
    scripted: ScriptedServer, wire: str, stray: str
) -> None:
    scripted.script = [stray, "ok"]
    async with lna.connect(
        "rest", {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    ) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        await asyncio.sleep(0.2)  # the stray answer has arrived
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]


# -- the direct path and the httpx path send the same bytes and keep the same rules --------------


async def test_the_direct_path_sends_the_bytes_the_httpx_path_sends(
    scripted: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every header source (client defaults, ``header.*`` extras, API key, bearer token,
    request context and identity), query parameters and JSON bodies: byte for byte."""
    properties = {
        "uri": scripted.url,
        "http_client": "lean",
        "delimiter": ".",
        "api_key": "k-1",
        "auth_token": "t-1",
        "header.X-Tenant": "blue",
        **FAST,
    }

    async def calls() -> list[bytes]:
        scripted.heads.clear()
        async with lna.connect("rest", properties) as ns:
            await ns.describe_table({"id": ["a", "t"], "with_table_uri": True})
            await ns.list_tables({"id": ["a"], "limit": 5, "page_token": "p q"})
            await ns.create_namespace({"id": ["caf\u00e9"], "properties": {"k": "\u00e9"}})
            await ns.list_tables(
                {"id": ["a"], "context": {"header.X-Trace": "tr-1"}, "identity": {"api_key": "k-2"}}
            )
            await ns.list_tables({"id": ["a"], "identity": {"auth_token": "t-2"}})
            await ns.table_exists({"id": ["a", "t"]})
        return list(scripted.heads)

    from lance_namespace_async._transport.lean import LeanPool

    through_httpx: list[str] = []
    httpx_path = LeanPool.handle_async_request

    async def counted(pool: LeanPool, request: httpx.Request) -> httpx.Response:
        through_httpx.append(request.url.path)
        return await httpx_path(pool, request)

    monkeypatch.setattr(LeanPool, "handle_async_request", counted)
    direct = await calls()
    assert through_httpx == []  # every call took the direct path
    monkeypatch.setattr(HttpTransport, "direct", False)
    via_httpx = await calls()
    assert len(through_httpx) == 6
    assert len(direct) == 6
    assert direct == via_httpx


@pytest.mark.parametrize("wire", WIRES)
async def test_a_401_refreshes_an_oauth2_token_once_and_retries(
    scripted: ScriptedServer, token_server: ScriptedServer, wire: str
) -> None:
    scripted.script = ["unauthorized", "ok", "unauthorized", "unauthorized"]
    properties = {
        "uri": scripted.url,
        "http_client": http_client(wire),
        "credential": "id:secret",
        "oauth2_server_uri": f"{token_server.url}/token",
        **FAST,
    }
    async with lna.connect("rest", properties) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        with pytest.raises(errors.UnauthenticatedError):  # refreshed once, not again
            await ns.list_tables({"id": ["a"]})
    assert len(token_server.requests) == 3
    assert len(scripted.requests) == 4
    assert all(b"authorization: bearer tk" in head.lower() for head in scripted.heads)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_401_with_a_token_another_call_fetched_lets_the_call_fetch_its_own(
    scripted: ScriptedServer, token_server: ScriptedServer, wire: str
) -> None:
    """Call A's 401 comes late: by then call B has fetched tk2, and A is handed it. When
    tk2 is refused for A too, that was no refresh of A's: A fetches tk3 and succeeds.
    A token a call fetched itself is still retried once only (the test above)."""
    scripted.script = ["unauthorized-late", "unauthorized", "ok", "unauthorized", "ok"]
    properties = {
        "uri": scripted.url,
        "http_client": http_client(wire),
        "credential": "id:secret",
        "oauth2_server_uri": f"{token_server.url}/token",
        **FAST,
        "read_timeout": "5000",  # A's late 401 is an answer, not a timeout
    }
    async with lna.connect("rest", properties) as ns:
        call_a = asyncio.create_task(ns.list_tables({"id": ["a"]}))
        while not scripted.requests:  # noqa: ASYNC110 (A's request is in: B's comes second)
            await asyncio.sleep(0.005)
        call_b = await ns.list_tables({"id": ["b"]})
        call_a_answer = await call_a
    assert call_a_answer.tables == call_b.tables == ["t"]
    assert len(token_server.requests) == 3  # tk1 for both, tk2 fetched by B, tk3 by A
    sent = [re.search(rb"(?i)authorization: bearer (tk\d+)", head) for head in scripted.heads]
    tokens = [match.group(1).decode() if match else None for match in sent]
    paths = [path.rsplit("/", 3)[-3] for path in scripted.requests]
    assert list(zip(paths, tokens, strict=True)) == [
        ("a", "tk1"),  # answered late
        ("b", "tk1"),
        ("b", "tk2"),  # B fetched tk2: ok
        ("a", "tk2"),  # handed to A, refused
        ("a", "tk3"),  # A's own: ok
    ]


@pytest.mark.parametrize("wire", WIRES)
async def test_a_create_retried_after_a_502_that_then_conflicts_says_so(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["bad-gateway", "conflict", "conflict"]
    properties = {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    async with lna.connect("rest", properties) as ns:
        with pytest.raises(errors.AlreadyExistsError) as ambiguous:
            await ns.create_namespace({"id": ["a"]})
        with pytest.raises(errors.AlreadyExistsError) as plain:  # a 409 is never retried
            await ns.create_namespace({"id": ["a"]})
    assert ambiguous.value.retried_ambiguously
    assert "may have created it" in str(ambiguous.value)
    assert not plain.value.retried_ambiguously
    assert len(scripted.requests) == 3


@pytest.mark.parametrize("wire", WIRES)
async def test_answers_are_typed_the_same_on_every_path(
    scripted: ScriptedServer, wire: str
) -> None:
    scripted.script = ["code-decides", "malformed", "deep", "with-headers", "bad-gateway"]
    properties = {"uri": scripted.url, "http_client": http_client(wire), **FAST, "max_retries": "0"}
    async with lna.connect("rest", properties) as ns:
        with pytest.raises(errors.InvalidInputError, match="bad name"):  # the body's code
            await ns.describe_table({"id": ["a", "t"]})
        with pytest.raises(errors.InternalError, match="malformed response body"):
            await ns.list_tables({"id": ["a"]})
        with pytest.raises(errors.InternalError, match="malformed response body"):  # no recursion
            await ns.list_tables({"id": ["a"]})
        answer = await ns.list_tables({"id": ["a"]})
        assert answer.context is not None
        assert answer.context.to_dict()["header.x-request-id"] == "r-1"
        with pytest.raises(errors.InternalError, match="HTTP 502"):
            await ns.list_tables({"id": ["a"]})


@pytest.mark.parametrize("wire", WIRES)
async def test_a_cookie_the_catalog_sets_is_sent_back(scripted: ScriptedServer, wire: str) -> None:
    scripted.script = ["set-cookie", "ok", "ok"]
    properties = {"uri": scripted.url, "http_client": http_client(wire), **FAST}
    async with lna.connect("rest", properties) as ns:
        for _ in range(3):
            await ns.list_tables({"id": ["a"]})
    assert b"cookie: session=s1" not in scripted.heads[0].lower()
    assert all(b"cookie: session=s1" in head.lower() for head in scripted.heads[1:])


def test_a_connection_released_on_another_loop_is_closed_not_leaked() -> None:
    """A body finished on a loop other than the pool's: its connection joins no pool and
    is closed, instead of staying open with nobody to close it."""
    from lance_namespace_async._transport.config import HttpConfig
    from lance_namespace_async._transport.lean import LeanPool

    pool = LeanPool(False, HttpConfig.from_properties({}))

    async def open_one() -> tuple[ScriptedServer, object, object]:
        server = await _serve()
        port = int(server.url.rsplit(":", 1)[1])
        key = ("http", "127.0.0.1", port)
        connection = await pool._acquire(key, {})
        return server, key, connection

    async def scenario() -> None:
        server, key, connection = await open_one()
        try:
            finished = asyncio.Event()

            def release_elsewhere() -> None:
                async def other_loop() -> None:
                    pool.release(key, connection)  # type: ignore[arg-type]

                asyncio.run(other_loop())
                finished.set()

            await asyncio.to_thread(release_elsewhere)
            await finished.wait()
            assert connection.closed  # type: ignore[attr-defined]
            assert not pool._idle.get(key)  # type: ignore[arg-type]
        finally:
            assert server.server is not None
            server.server.close()

    asyncio.run(scenario())
