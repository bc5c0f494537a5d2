"""The HTTP transport every HTTP backend (rest, iceberg, unity) shares.

One place owns the policy, like openai-python's base client:

* one pooled ``httpx.AsyncClient`` per namespace instance, opened on first use
  (reading a CA bundle is I/O, so not in a constructor) and closed by ``aclose``;
* timeouts from properties in milliseconds, always set, overridable per call
  (:mod:`._timeout`);
* retries with capped exponential backoff and full jitter on connection errors,
  on read timeouts and broken connections of idempotent calls, and on 429, 502,
  503 and 504, honouring ``Retry-After`` (seconds or HTTP date) and
  ``retry-after-ms`` up to a cap; never on other 4xx (409 above all);
* auth: a static bearer token, an API key header, ``header.*`` extras, or OAuth2
  client credentials with a cached token refreshed before expiry and on a 401,
  with exactly one token request in flight however many calls wait;
* errors: the body's ``ErrorResponse.code`` decides the exception, else the
  HTTP status; a body that is not JSON (a proxy's HTML 502) is still typed.

**Ambiguous retries.** A non-idempotent call (a create) that failed after its
request may have reached the server (a 502/504, a connection reset while
reading) and is then retried can see ``AlreadyExists`` caused by its own first
attempt. Such an error is raised with ``retried_ambiguously = True`` and says
so in its message, so the caller can check the object instead of guessing.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import functools
import json
import math
import random
import ssl
import time
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import anyio
import attrs
import httpx

from . import errors
from ._config import BackendConfig, parse_bool, parse_non_negative_int, parse_positive_int, prop
from ._timeout import Timeout, UseDefault, current_timeout

__all__ = [
    "CallState",
    "HttpConfig",
    "HttpTransport",
    "OAuth2ClientCredentials",
    "error_from_response",
    "parse_http_url",
]

RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: statuses after which a non-idempotent request may have been applied
AMBIGUOUS_STATUSES = frozenset({502, 504})
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def parse_http_url(value: str) -> str:
    """A server address of an HTTP backend (``uri``/``endpoint`` keys)."""
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value.rstrip("/")


def _parse_http_client(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("auto", "aiohttp", "httpx"):
        raise ValueError("expected auto, aiohttp or httpx")
    return choice


@attrs.frozen
class HttpConfig(BackendConfig):
    """Transport keys every HTTP backend accepts (timeouts in milliseconds)."""

    auth_token: str | None = prop(default=None, secret=True, doc="static bearer token")
    api_key: str | None = prop(default=None, secret=True, doc="sent as the x-api-key header")
    credential: str | None = prop(
        default=None, secret=True, doc="OAuth2 client credentials client_id:client_secret"
    )
    oauth2_server_uri: str | None = prop(default=None, doc="OAuth2 token endpoint")
    scope: str | None = prop(default=None, doc="OAuth2 scope")
    connect_timeout: int = prop(default=10000, parse=parse_positive_int)
    read_timeout: int = prop(default=30000, parse=parse_positive_int)
    max_retries: int = prop(default=3, parse=parse_non_negative_int)
    retry_backoff_ms: int = prop(default=250, parse=parse_positive_int)
    retry_max_backoff_ms: int = prop(default=8000, parse=parse_positive_int)
    retry_after_max_ms: int = prop(default=60000, parse=parse_positive_int)
    max_connections: int = prop(default=100, parse=parse_positive_int)
    max_keepalive_connections: int = prop(default=20, parse=parse_positive_int)
    http_client: str = prop(
        default="auto",
        parse=_parse_http_client,
        doc="connection pool: aiohttp (half the CPU per request), httpx, or auto "
        "(aiohttp when installed and running on asyncio)",
    )
    headers: dict[str, str] = prop(prefix="header.", secret=True)
    tls_verify: bool = prop("tls.verify", default=True, parse=parse_bool)
    tls_ca_cert: str | None = prop("tls.ssl_ca_cert", default=None)
    tls_cert_file: str | None = prop("tls.cert_file", default=None)
    tls_key_file: str | None = prop("tls.key_file", default=None)
    tls_assert_hostname: bool = prop("tls.assert_hostname", default=True, parse=parse_bool)

    def __attrs_post_init__(self) -> None:
        if self.credential is not None and ":" not in self.credential:
            raise errors.InvalidInputError(
                "configuration key 'credential' must be client_id:client_secret"
            )
        if self.tls_key_file and not self.tls_cert_file:
            raise errors.InvalidInputError("'tls.key_file' needs 'tls.cert_file'")
        if self.retry_max_backoff_ms < self.retry_backoff_ms:
            raise errors.InvalidInputError("'retry_max_backoff_ms' must be >= 'retry_backoff_ms'")

    def timeout(self) -> Timeout:
        return Timeout.from_millis(self.connect_timeout, self.read_timeout)


@attrs.define
class CallState:
    """What one logical call asks of the transport, and what happened to it."""

    idempotent: bool
    headers: dict[str, str] = attrs.field(factory=dict)
    attempts: int = 0
    retried_ambiguously: bool = False
    response: httpx.Response | None = None


_CALL: contextvars.ContextVar[CallState | None] = contextvars.ContextVar(
    "lance_namespace_async_call", default=None
)


def _retry_after_seconds(headers: httpx.Headers, now: float | None = None) -> float | None:
    """The server's requested wait: ``retry-after-ms``, or ``Retry-After`` seconds/date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, parsed.timestamp() - (time.time() if now is None else now))


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


class _AiohttpPool(httpx.AsyncBaseTransport):
    """HTTP/1.1 through aiohttp's pool and C parser, beneath httpx's client.

    httpx (auth, retries, timeouts, response decoding) stays on top; only the
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
                auto_decompress=False,  # httpx decodes, as it does for httpcore
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
        headers = request.headers.multi_items()
        data: Any
        if "transfer-encoding" in request.headers:
            # a streamed body (an Arrow reader's batches): aiohttp chunks it itself
            headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
            data = request.stream
        else:
            data = await request.aread() or None
        try:
            async with session.request(
                request.method,
                yarl.URL(str(request.url), encoded=True),
                headers=headers,
                data=data,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=None if connect is None or pool is None else connect + pool,
                    sock_connect=connect,
                    sock_read=timeout.get("read"),
                ),
            ) as response:
                content = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _aiohttp_error(exc) from exc
        return httpx.Response(
            response.status,
            headers=list(response.raw_headers),
            stream=httpx.ByteStream(content),
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


def _wire(verify: ssl.SSLContext | bool, config: HttpConfig) -> httpx.AsyncBaseTransport:
    """The connection pool ``http_client`` asks for (``auto``: aiohttp on asyncio)."""
    choice = config.http_client
    if choice == "auto":
        try:
            import aiohttp

            asyncio.get_running_loop()  # absent under trio: httpx serves every loop
            choice = "aiohttp"
        except (ImportError, RuntimeError):
            choice = "httpx"
    if choice == "aiohttp":
        try:
            import aiohttp  # noqa: F401
        except ImportError as exc:
            raise errors.MissingDependencyError(
                f"http_client=aiohttp needs: pip install aiohttp ({exc})"
            ) from None
        return _AiohttpPool(verify, config)
    return _ShardedPool(verify, config)


class _Client(httpx.AsyncClient):
    """httpx's client, building the requests our backends send with one URL parse.

    ``AsyncClient.build_request`` merges a relative path into ``base_url`` and then
    the query parameters, parsing the URL three times (a third of a call's client
    CPU in benchmarks/). For a plain relative path with no cookies, files or form
    data the URL string is put together first; anything else takes httpx's path.
    """

    def build_request(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        params: Any = None,
        headers: Any = None,
        json: Any = None,
        **kwargs: Any,
    ) -> httpx.Request:
        if (
            any(
                value is not None and value is not httpx.USE_CLIENT_DEFAULT
                for value in kwargs.values()
            )
            or not isinstance(url, str)
            or not url.startswith("/")
            or "?" in url
            or "#" in url
            or self.cookies
            or self.params
        ):
            return super().build_request(
                method, url, params=params, headers=headers, json=json, **kwargs
            )
        query = str(httpx.QueryParams(params)) if params else ""
        merged = httpx.Headers(self.headers)
        merged.update(headers)
        return httpx.Request(
            method,
            self._base + url + ("?" + query if query else ""),
            headers=merged,
            json=json,
            extensions={"timeout": self.timeout.as_dict()},
        )

    @functools.cached_property
    def _base(self) -> str:
        return str(self.base_url).rstrip("/")

    @property
    def cookies(self) -> httpx.Cookies:
        jar = self._cookies
        if not isinstance(jar, _Cookies):
            jar = self._cookies = _Cookies(jar)
        return jar

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._cookies = _Cookies(cookies)


class _Cookies(httpx.Cookies):
    """Cookies of one client; a response without ``Set-Cookie`` costs nothing.

    httpx adapts every response to urllib's cookie API before looking for cookies
    (~8% of a call's client CPU in benchmarks/), although catalog servers seldom
    set any.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers:
            super().extract_cookies(response)


class _RetryingTransport(httpx.AsyncBaseTransport):
    """Retries beneath auth, so a refreshed token is used by every later attempt."""

    def __init__(self, inner: httpx.AsyncBaseTransport, config: HttpConfig) -> None:
        self._inner = inner
        self._config = config

    def _backoff(self, attempt: int) -> float:
        cap = self._config.retry_max_backoff_ms / 1000
        base = self._config.retry_backoff_ms / 1000
        return random.uniform(0, min(cap, base * (2**attempt)))

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            wanted = _retry_after_seconds(response.headers)
            if wanted is not None:
                return min(wanted, self._config.retry_after_max_ms / 1000)
        return self._backoff(attempt)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        state = _CALL.get() or CallState(idempotent=request.method in ("GET", "HEAD"))
        timeout = current_timeout()
        if not isinstance(timeout, UseDefault):
            request.extensions["timeout"] = (
                httpx.Timeout(None).as_dict()
                if timeout is None
                else httpx.Timeout(
                    connect=timeout.connect,
                    read=timeout.read,
                    write=timeout.write,
                    pool=timeout.pool,
                ).as_dict()
            )
        attempt = 0
        # a streamed body (an Arrow reader's batches, sent chunked) can be sent once only
        retries = 0 if "transfer-encoding" in request.headers else self._config.max_retries
        while True:
            state.attempts += 1
            response: httpx.Response | None = None
            try:
                response = await self._inner.handle_async_request(request)
            except httpx.TransportError as exc:
                reached_server = not isinstance(exc, _NOT_SENT)
                if attempt >= retries or (reached_server and not state.idempotent):
                    raise
                if reached_server:
                    state.retried_ambiguously = True
            else:
                if response.status_code not in RETRY_STATUSES or (attempt >= retries):
                    state.response = response
                    return response
                if response.status_code in AMBIGUOUS_STATUSES and not state.idempotent:
                    state.retried_ambiguously = True
                await response.aread()
                await response.aclose()
            await anyio.sleep(self._delay(attempt, response))
            attempt += 1

    async def aclose(self) -> None:
        await self._inner.aclose()


class OAuth2ClientCredentials:
    """OAuth2 client-credentials tokens: cached, refreshed early and on 401, single-flight."""

    def __init__(
        self, token_url: str, client_id: str, client_secret: str, scope: str | None
    ) -> None:
        self.token_url = token_url
        self._client_id = client_id
        self._client_secret = client_secret
        self._scope = scope
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = anyio.Lock()
        self.requests = 0

    def __repr__(self) -> str:
        return f"OAuth2ClientCredentials(token_url={self.token_url!r}, client_id=***)"

    def _fresh(self) -> bool:
        return self._token is not None and time.monotonic() < self._expires_at

    async def token(self, client: httpx.AsyncClient) -> str:
        if self._fresh():
            assert self._token is not None
            return self._token
        return await self.refresh(client, stale=None)

    async def refresh(self, client: httpx.AsyncClient, *, stale: str | None) -> str:
        """Fetch a token unless another caller already replaced ``stale``."""
        async with self._lock:
            if self._token is not None and self._token != stale and self._fresh():
                return self._token
            self.requests += 1
            form = {
                "grant_type": "client_credentials",
                "client_id": self._client_id,
                "client_secret": self._client_secret,
            }
            if self._scope:
                form["scope"] = self._scope
            token_call = CallState(idempotent=True)
            reset = _CALL.set(token_call)
            try:
                response = await client.post(self.token_url, data=form, auth=httpx.Auth())
            finally:
                _CALL.reset(reset)
            if response.status_code != 200:
                raise errors.UnauthenticatedError(
                    f"token request to {self.token_url} failed with HTTP {response.status_code}"
                )
            try:
                body = response.json()
                token = str(body["access_token"])
            except (ValueError, KeyError, TypeError):
                raise errors.UnauthenticatedError(
                    f"token endpoint {self.token_url} returned no access_token"
                ) from None
            lifetime = float(body.get("expires_in") or 3600)
            margin = min(60.0, lifetime * 0.1)
            self._token = token
            self._expires_at = time.monotonic() + max(0.0, lifetime - margin)
            return token


class _Auth(httpx.Auth):
    """Bearer token or OAuth2 on every request; one refresh and retry on a 401."""

    def __init__(self, config: HttpConfig, oauth: OAuth2ClientCredentials | None) -> None:
        self._config = config
        self._oauth = oauth
        self.client: httpx.AsyncClient | None = None

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> Any:  # AsyncGenerator[httpx.Request, httpx.Response]
        state = _CALL.get()
        if state is not None:
            for name, value in state.headers.items():
                request.headers[name] = value
        if self._config.api_key and "x-api-key" not in request.headers:
            request.headers["x-api-key"] = self._config.api_key
        if "authorization" in request.headers:
            yield request  # an explicit per-call header wins
            return
        token: str | None = None
        if self._oauth is not None:
            assert self.client is not None
            token = await self._oauth.token(self.client)
        elif self._config.auth_token:
            token = self._config.auth_token
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401 and self._oauth is not None:
            assert self.client is not None
            token = await self._oauth.refresh(self.client, stale=token)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request


def _ssl_context(config: HttpConfig) -> ssl.SSLContext | bool:
    if not config.tls_verify:
        return False
    context = ssl.create_default_context(cafile=config.tls_ca_cert)
    if not config.tls_assert_hostname:
        context.check_hostname = False
    if config.tls_cert_file:
        context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    return context


class HttpTransport:
    """The pooled client of one namespace instance, with the shared policy."""

    def __init__(
        self,
        config: HttpConfig,
        *,
        base_url: str,
        default_token_url: str | None = None,
    ) -> None:
        self.config = config
        self.base_url = base_url.rstrip("/")
        self.oauth: OAuth2ClientCredentials | None = None
        if config.credential:
            client_id, _, client_secret = config.credential.partition(":")
            token_url = config.oauth2_server_uri or default_token_url
            if not token_url:
                raise errors.InvalidInputError(
                    "'credential' needs 'oauth2_server_uri' (the token endpoint)"
                )
            self.oauth = OAuth2ClientCredentials(token_url, client_id, client_secret, config.scope)
        self._client: httpx.AsyncClient | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"HttpTransport(base_url={self.base_url!r})"

    def client(self) -> httpx.AsyncClient:
        """The pooled client, created on first use."""
        if self._closed:
            raise errors.InvalidInputError("this namespace is closed")
        if self._client is None:
            config = self.config
            try:
                verify = _ssl_context(config)
            except (OSError, ssl.SSLError) as exc:
                raise errors.InvalidInputError(f"TLS configuration: {exc}") from None
            inner = _wire(verify, config)
            auth = _Auth(config, self.oauth)
            timeout = config.timeout()
            self._client = _Client(
                base_url=self.base_url,
                transport=_RetryingTransport(inner, config),
                auth=auth,
                headers=dict(config.headers),
                timeout=httpx.Timeout(
                    connect=timeout.connect,
                    read=timeout.read,
                    write=timeout.write,
                    pool=timeout.pool,
                ),
                follow_redirects=False,
            )
            auth.client = self._client
        return self._client

    @contextlib.contextmanager
    def call(
        self, *, idempotent: bool, headers: Mapping[str, str] | None = None
    ) -> Iterator[CallState]:
        """Scope one logical call (all its attempts) for the transport."""
        state = CallState(idempotent=idempotent, headers=dict(headers or {}))
        token = _CALL.set(state)
        try:
            yield state
        finally:
            _CALL.reset(token)

    async def request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        idempotent: bool,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> tuple[httpx.Response, CallState]:
        """One logical call of a hand-written backend (any status; errors are the caller's)."""
        client = self.client()
        with self.call(idempotent=idempotent) as state:
            try:
                response = await client.request(
                    method,
                    path,
                    params={k: v for k, v in (params or {}).items() if v is not None},
                    json=json,
                )
            except httpx.HTTPError as exc:
                raise transport_error(exc, what) from exc
        return response, state

    async def aclose(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def _status_error(status: int) -> type[errors.LanceNamespaceError] | None:
    return {
        400: errors.InvalidInputError,
        401: errors.UnauthenticatedError,
        403: errors.PermissionDeniedError,
        406: errors.UnsupportedOperationError,
        413: errors.InvalidInputError,
        422: errors.InvalidInputError,
        429: errors.ThrottlingError,
        503: errors.ServiceUnavailableError,
    }.get(status)


def error_from_response(
    status: int,
    content: bytes,
    *,
    not_found: type[errors.LanceNamespaceError],
    conflict: type[errors.LanceNamespaceError],
    what: str,
    retried_ambiguously: bool = False,
) -> errors.LanceNamespaceError:
    """The typed error of a failed HTTP response; never a JSON decoding error."""
    message = ""
    error: errors.LanceNamespaceError | None = None
    body: Any = None
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        body = json.loads(content) if content else None
    if isinstance(body, dict):
        nested = body.get("error")
        if isinstance(nested, dict):  # Iceberg-style {"error": {"message", "code"}}
            message = str(nested.get("message") or "")
        else:
            message = str(body.get("error") or body.get("message") or "")
        code = body.get("code")
        detail = body.get("detail") if isinstance(body.get("detail"), str) else None
        instance = body.get("instance") if isinstance(body.get("instance"), str) else None
        if isinstance(code, int) and not isinstance(code, bool) and 0 <= code <= 23:
            text = f"{what}: {message}" if message else what
            error = errors.from_code(code, text, detail=detail, instance=instance)
    if error is None:
        text = f"{what}: {message}" if message else f"{what}: HTTP {status}"
        if status == 404:
            error = not_found(text)
        elif status == 409:
            error = conflict(text)
        elif (cls := _status_error(status)) is not None:
            error = cls(text)
        elif status >= 500:
            error = errors.InternalError(text)
        else:
            error = errors.InvalidInputError(text)
    return flag_ambiguous(error, retried_ambiguously)


def flag_ambiguous(
    error: errors.LanceNamespaceError, retried_ambiguously: bool
) -> errors.LanceNamespaceError:
    """AlreadyExists after an ambiguous retry may be this call's own doing: say so."""
    if not (retried_ambiguously and isinstance(error, errors.AlreadyExistsError)):
        return error
    flagged = type(error)(
        f"{error.message} (an earlier attempt of this call failed ambiguously and may "
        "have created it)",
        detail=error.detail,
        instance=error.instance,
    )
    flagged.retried_ambiguously = True
    return flagged


def transport_error(exc: httpx.HTTPError, what: str) -> errors.LanceNamespaceError:
    """A network failure that survived the retries."""
    if isinstance(exc, httpx.TimeoutException):
        return errors.ServiceUnavailableError(f"{what}: timed out ({type(exc).__name__})")
    return errors.ServiceUnavailableError(f"{what}: {type(exc).__name__}: {exc}")
