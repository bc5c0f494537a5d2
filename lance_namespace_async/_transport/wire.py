"""The wires under the HTTP transport's httpx client (``http_client``).

httpx (auth, retries, timeouts, the body's size limit) stays on top; only the
connection pool and the HTTP/1.1 parser differ: the lean wire (httptools on an
asyncio Protocol, :mod:`.lean`, the default on asyncio), aiohttp, or
httpcore in small shards. Each wire's failures are the httpx errors the retry
policy reads, so every wire is held to the same rules (tests/test_http_wire.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

from .. import errors

if TYPE_CHECKING:
    from .config import HttpConfig

__all__ = ["wire"]


class _ShardedPool(httpx.AsyncBaseTransport):
    """Connection pools of at most ``connections_per_shard`` each, least busy first.

    httpcore scans every connection of a pool on each request and release (and
    polls idle sockets while doing so), so one pool of many connections costs
    CPU quadratic in its size under load. Small shards keep that scan short.
    """

    connections_per_shard: ClassVar[int] = 16

    def __init__(self, verify: ssl.SSLContext | bool, config: HttpConfig) -> None:
        count = max(1, math.ceil(config.max_connections / self.connections_per_shard))
        self.shards = [
            httpx.AsyncHTTPTransport(
                verify=verify,
                limits=httpx.Limits(
                    max_connections=math.ceil(config.max_connections / count),
                    max_keepalive_connections=math.ceil(config.max_keepalive_connections / count),
                ),
            )
            for _ in range(count)
        ]
        self._busy = [0] * count

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = min(range(len(self.shards)), key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            return await self.shards[index].handle_async_request(request)
        finally:
            self._busy[index] -= 1

    async def aclose(self) -> None:
        for shard in self.shards:
            await shard.aclose()


def _aiohttp_error(exc: Exception) -> httpx.TransportError:
    """aiohttp's failure as the httpx error the retry policy reads.

    What matters is whether the request may have reached the server: failures to
    connect or to get a pool slot are "not sent" (retried for every call), the
    rest (resets, disconnects, read timeouts) are ambiguous.
    """
    import aiohttp

    message = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(message)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message)
    if isinstance(exc, TimeoutError):  # SocketTimeoutError, ServerTimeoutError
        return httpx.ReadTimeout(message)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(message)
    if isinstance(exc, aiohttp.InvalidURL):
        return httpx.UnsupportedProtocol(message)
    return httpx.ReadError(message)  # resets, broken payloads: may have been applied


class _AiohttpBody(httpx.AsyncByteStream):
    """An aiohttp answer's body, for :func:`.body.read_bounded` to read.

    With a ``Content-Length`` (which ``read_bounded`` has checked against the
    limit before iterating, and which aiohttp's parser never reads past) the
    body comes in one read, as before; without one, chunk by chunk, so the
    limit stops it. Failures are the httpx errors the retry policy reads.
    """

    def __init__(self, response: Any) -> None:
        self._response = response
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import aiohttp

        response = self._response
        try:
            if response.content_length is not None:
                yield await response.read()
            else:
                async for chunk in response.content.iter_any():
                    yield chunk
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _aiohttp_error(exc) from exc
        self._done = True

    async def aclose(self) -> None:
        if self._done:
            self._response.release()  # back to the pool
        else:
            self._response.close()  # unread body: the connection cannot be reused


class _AiohttpPool(httpx.AsyncBaseTransport):
    """HTTP/1.1 through aiohttp's pool and C parser, beneath httpx's client.

    httpx (auth, retries, timeouts; the bounded body read decodes) stays on top; only the
    wire moves. In benchmarks/ this halves the client's CPU per request, which
    decides throughput when client and server share few CPUs. asyncio only (the
    session is bound to the loop that opened it: another loop gets a new one).
    Limits: ``max_connections`` caps the pool; idle connections expire after 5 s
    as in httpx; aiohttp has no write timeout.
    """

    def __init__(self, verify: ssl.SSLContext | bool, config: HttpConfig) -> None:
        self._verify = verify
        self._config = config
        self._session: Any = None
        self._loop: Any = None

    def _session_for_loop(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            connector = aiohttp.TCPConnector(
                limit=self._config.max_connections,
                ssl=self._verify,
                keepalive_timeout=5.0,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),  # httpx keeps the cookies
                auto_decompress=False,  # decoded within the size limit, as for httpcore
                trust_env=False,  # httpx mounts the proxies of the environment
                max_line_size=65536,
                max_field_size=65536,
            )
            self._loop = loop
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import aiohttp
        import yarl

        timeout = request.extensions.get("timeout", {})
        connect, pool = timeout.get("connect"), timeout.get("pool")
        session = self._session_for_loop()
        url = yarl.URL(str(request.url), encoded=True)
        if url.user is not None or url.password is not None:
            url = url.with_user(None)  # as over httpcore: auth is the Authorization header only
        headers = request.headers.multi_items()
        data: Any
        if "transfer-encoding" in request.headers:
            # a streamed body (an Arrow reader's batches): aiohttp chunks it itself
            headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
            data = request.stream
        else:
            data = await request.aread() or None
        try:
            response = await session.request(
                request.method,
                url,
                headers=headers,
                data=data,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=None if connect is None or pool is None else connect + pool,
                    sock_connect=connect,
                    sock_read=timeout.get("read"),
                ),
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _aiohttp_error(exc) from exc
        return httpx.Response(
            response.status,
            headers=list(response.raw_headers),
            stream=_AiohttpBody(response),
            request=request,
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
        )

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(RuntimeError):  # opened on a loop that is gone
                await session.close()


def wire(verify: ssl.SSLContext | bool, config: HttpConfig) -> httpx.AsyncBaseTransport:
    """The connection pool ``http_client`` asks for (``auto``: the lean wire on asyncio)."""
    choice = config.http_client
    if choice == "auto":
        try:
            asyncio.get_running_loop()  # absent under trio: httpx serves every loop
            choice = "lean"
        except RuntimeError:
            choice = "httpx"
    if choice == "lean":
        try:
            from .lean import LeanPool
        except ImportError as exc:
            raise errors.MissingDependencyError(
                f"http_client=lean needs: pip install httptools ({exc})"
            ) from None
        return LeanPool(verify, config)
    if choice == "aiohttp":
        try:
            import aiohttp  # noqa: F401
        except ImportError as exc:
            raise errors.MissingDependencyError(
                f"http_client=aiohttp needs: pip install aiohttp ({exc})"
            ) from None
        return _AiohttpPool(verify, config)
    return _ShardedPool(verify, config)
