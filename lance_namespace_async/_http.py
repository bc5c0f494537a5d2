"""The HTTP transport every HTTP backend (rest, iceberg, unity) shares.

One place owns the policy, like openai-python's base client:

* one pooled ``httpx.AsyncClient`` per namespace instance, opened on first use
  (reading a CA bundle is I/O, so not in a constructor) and closed by ``aclose``;
* timeouts from properties in milliseconds, always set, overridable per call
  (:mod:`._timeout`), and a deadline for each whole call (``call_timeout``):
  connecting, headers, body, token requests and retries included, since the
  step timeouts alone let a server trickling a byte a second hold a call for
  ever. A retry whose wait would pass the deadline is not made: the call ends
  with the error it has;
* a size limit on every answer (``max_response_bytes``, :mod:`._http_body`),
  counted while reading and after decompression, on both wires;
* retries with capped exponential backoff and full jitter on connection errors,
  on read timeouts and broken connections of idempotent calls, and on 429, 502,
  503 and 504, honouring ``Retry-After`` (seconds or HTTP date) and
  ``retry-after-ms`` up to a cap; never on other 4xx (409 above all);
* auth: a static bearer token, an API key header, ``header.*`` extras, a
  ``user:password@`` in the server's URL (HTTP Basic on both wires, shown
  masked), or OAuth2 client credentials with a cached token refreshed before
  expiry and on a 401, with exactly one token request in flight however many
  calls wait. ``header.*`` extras go to the catalog's origin only, never to a
  token endpoint elsewhere;
* errors: the body's ``ErrorResponse.code`` decides the exception, else the
  HTTP status; a body that is not JSON (a proxy's HTML 502) is still typed.

**Two paths, one policy.** A call goes through httpx's objects (``httpx.Request``,
the auth flow, the retrying transport, ``httpx.Response``) on any wire, or, on the
lean wire, straight from request bytes to answer bytes (:meth:`HttpTransport.exchange`,
the least client CPU per call: benchmarks/client_cpu.py). Both run the
same pieces: the headers ``_Client`` merges, ``_Auth``'s credentials and 401
refresh, ``_RetryingTransport.attempts`` and ``_http_body.read_limited``;
tests/test_http_wire.py holds both to the same rules and the same request bytes.

**Ambiguous retries.** A non-idempotent call (a create) that failed after its
request may have reached the server (a 502/504, a connection reset while
reading) and is then retried can see ``AlreadyExists`` caused by its own first
attempt. Such an error is raised with ``retried_ambiguously = True`` and says
so in its message, so the caller can check the object instead of guessing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import email.utils
import functools
import json
import logging
import math
import random
import re
import ssl
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, TypeVar

import anyio
import attrs
import httpx
import orjson

from . import errors
from ._config import (
    BackendConfig,
    call_timeout_prop,
    max_response_bytes_prop,
    parse_bool,
    parse_non_negative_int,
    parse_positive_int,
    prop,
)
from ._http_body import ACCEPT_ENCODING, read_bounded
from ._http_lean import LeanPool, request_head
from ._http_wire import wire
from ._timeout import Timeout, UseDefault, chosen_total, current_timeout

__all__ = [
    "CallState",
    "HttpConfig",
    "HttpTransport",
    "OAuth2ClientCredentials",
    "error_from_response",
    "parse_http_url",
    "split_userinfo",
]

_httpx_logger = logging.getLogger("httpx")  # httpx logs each request here; so do we

RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: statuses after which a non-idempotent request may have been applied
AMBIGUOUS_STATUSES = frozenset({502, 504})
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: a URL path or query httpx's urlparse leaves as it is: unreserved characters,
#: sub-delimiters, ":@/" and percent-escapes (dot segments are checked apart)
_PLAIN = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*\Z")
#: what ``urlencode`` (``quote_plus``) leaves as it is
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*\Z")


def _query_string(params: Any) -> str:
    """``str(httpx.QueryParams(params))``, written directly when every name and value is a
    string ``urlencode`` leaves alone or an int (a catalog's names, page sizes and
    tokens): a fifth of the CPU."""
    if not params:
        return ""
    if type(params) is not dict:  # httpx.QueryParams, pairs, a string: httpx's own
        return str(httpx.QueryParams(params))
    parts = []
    for name, value in params.items():
        if type(value) is int:
            value = str(value)
        elif type(value) is not str or not _UNQUOTED.match(value):
            return str(httpx.QueryParams(params))
        if type(name) is not str or not _UNQUOTED.match(name):
            return str(httpx.QueryParams(params))
        parts.append(f"{name}={value}")
    return "&".join(parts)


def parse_http_url(value: str) -> str:
    """A server address of an HTTP backend (``uri``/``endpoint`` keys)."""
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value.rstrip("/")


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@``, and that pair (percent-decoded) if any."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    bare = urllib.parse.urlunsplit(parts._replace(netloc=host))
    return bare, (urllib.parse.unquote(user), urllib.parse.unquote(password))


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


def _parse_http_client(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("auto", "lean", "aiohttp", "httpx"):
        raise ValueError("expected auto, lean, aiohttp or httpx")
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
    call_timeout: int = call_timeout_prop(
        "deadline of a whole call in ms: connect, answer and retries included"
    )
    max_response_bytes: int = max_response_bytes_prop(
        "largest answer read, after decompression (bytes)"
    )
    max_retries: int = prop(default=3, parse=parse_non_negative_int)
    retry_backoff_ms: int = prop(default=250, parse=parse_positive_int)
    retry_max_backoff_ms: int = prop(default=8000, parse=parse_positive_int)
    retry_after_max_ms: int = prop(default=60000, parse=parse_positive_int)
    max_connections: int = prop(default=100, parse=parse_positive_int)
    max_keepalive_connections: int = prop(default=20, parse=parse_positive_int)
    http_client: str = prop(
        default="auto",
        parse=_parse_http_client,
        doc="connection pool: lean (httptools on asyncio, the least CPU per request), "
        "aiohttp, httpx, or auto (lean on asyncio, httpx elsewhere)",
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
        if self.oauth2_server_uri and split_userinfo(self.oauth2_server_uri)[1] is not None:
            raise errors.InvalidInputError(
                "'oauth2_server_uri' must not carry a user:password (the client's "
                "credentials go in 'credential')"
            )

    def timeout(self) -> Timeout:
        return Timeout.from_millis(self.connect_timeout, self.read_timeout, self.call_timeout)


@attrs.define
class CallState:
    """What one logical call asks of the transport, and what happened to it.

    ``max_response_bytes`` is the hook for calls whose answers may be larger than
    the configured limit (Arrow data): they pass their own; ``None`` is the
    configured one. ``deadline`` (``anyio.current_time()`` clock) ends the call.
    """

    idempotent: bool
    headers: dict[str, str] = attrs.field(factory=dict)
    max_response_bytes: int | None = None
    deadline: float | None = None
    attempts: int = 0
    retried_ambiguously: bool = False
    #: the last answer (on the direct path an :class:`Answer`)
    response: httpx.Response | None = None


#: an answer of either path: ``httpx.Response`` or the direct path's :class:`Answer`
_R = TypeVar("_R", bound=httpx.Response)


class Answer(httpx.Response):
    """A whole answer of the direct path (:meth:`HttpTransport.exchange`).

    An ``httpx.Response`` (already read and closed) for whoever reads it, made
    without httpx's constructor: the headers stay the wire's raw list until
    something asks for them.
    """

    def __init__(  # httpx's __init__ would build what is not needed
        self,
        status_code: int,
        reason: bytes,
        raw_headers: list[tuple[bytes, bytes]],
        content: bytes,
    ) -> None:
        self.status_code = status_code
        self.raw_headers = raw_headers
        self._parsed_headers: httpx.Headers | None = None
        self._content = content
        self._request = None
        self.next_request = None
        self.extensions = {"http_version": b"HTTP/1.1", "reason_phrase": reason}
        self.history = []
        self.is_closed = True
        self.is_stream_consumed = True
        self.default_encoding = "utf-8"
        self._num_bytes_downloaded = len(content)

    @property
    def headers(self) -> httpx.Headers:
        if self._parsed_headers is None:
            self._parsed_headers = httpx.Headers(self.raw_headers)
        return self._parsed_headers

    @headers.setter
    def headers(self, value: httpx.Headers) -> None:
        self._parsed_headers = value

    @property
    def stream(self) -> httpx.ByteStream:  # type: ignore[override]
        return httpx.ByteStream(self._content)

    def header_items(self) -> list[tuple[str, str]]:
        """``headers.items()`` (lower-case names, repeated ones joined with ", ")."""
        if self._parsed_headers is None:
            merged: dict[str, str] = {}
            try:
                for name, value in self.raw_headers:
                    key = name.decode("ascii").lower()
                    text = value.decode("ascii")
                    merged[key] = f"{merged[key]}, {text}" if key in merged else text
            except UnicodeDecodeError:
                pass  # httpx's Headers decide the encoding
            else:
                return list(merged.items())
        return list(self.headers.items())

    def json(self, **kwargs: Any) -> Any:
        """The body as JSON: orjson (a third of ``json``'s CPU; nesting past 1,024 levels
        is its ``JSONDecodeError``, a ``ValueError``, where ``json`` would recurse)."""
        if kwargs:
            return json.loads(self._content, **kwargs)
        return orjson.loads(self._content)


def call_timeouts() -> dict[str, float | None] | None:
    """The step timeouts a per-call ``timeout`` asks for (httpx's dict), or ``None``
    when the call keeps the configured ones."""
    timeout = current_timeout()
    if isinstance(timeout, UseDefault):
        return None
    if timeout is None:
        return httpx.Timeout(None).as_dict()
    return httpx.Timeout(
        connect=timeout.connect, read=timeout.read, write=timeout.write, pool=timeout.pool
    ).as_dict()


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


class _Client(httpx.AsyncClient):
    """httpx's client, building the requests our backends send with one URL parse.

    ``AsyncClient.build_request`` merges a relative path into ``base_url`` and then
    the query parameters, parsing the URL three times (a third of a call's client
    CPU in benchmarks/). For a plain relative path with no cookies, files or form
    data the URL string is put together first; anything else takes httpx's path.

    ``catalog_headers`` (the ``header.*`` extras, an API key say) are added only
    to requests for ``base_url``'s origin: an OAuth2 token endpoint elsewhere
    never sees them.
    """

    def __init__(self, *, catalog_headers: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.catalog_headers = httpx.Headers(catalog_headers)
        self._base_headers: tuple[list[Any], list[Any], frozenset[bytes], bool] | None = None

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
            request = super().build_request(
                method, url, params=params, headers=headers, json=json, **kwargs
            )
            if self.catalog_headers and _origin(request.url) == _origin(self.base_url):
                explicit = httpx.Headers(headers)
                for name, value in self.catalog_headers.multi_items():
                    if name not in explicit:
                        request.headers[name] = value
            return request
        query = _query_string(params)
        extensions = {"timeout": self.timeout.as_dict()}
        path = self._base_path + url
        if _PLAIN.match(path) and "/." not in path and _PLAIN.match(query):
            # what urlparse would make of it, without parsing: every character is one
            # it leaves alone, and no dot segment is there to remove
            target = httpx.URL.__new__(httpx.URL)
            target._uri_reference = self._base_reference._replace(path=path, query=query or None)
            return _json_request(method, target, self._merged_headers(headers), json, extensions)
        merged = httpx.Headers(self.headers)
        if self.catalog_headers:
            merged.update(self.catalog_headers)
        if headers:
            merged.update(headers)
        return httpx.Request(
            method,
            self._base + url + ("?" + query if query else ""),
            headers=merged,
            json=json,
            extensions=extensions,
        )

    async def send(
        self,
        request: httpx.Request,
        *,
        stream: bool = False,
        auth: Any = httpx.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx.USE_CLIENT_DEFAULT,
    ) -> httpx.Response:
        """httpx's ``send`` for the calls of our backends, in fewer layers.

        The client's own auth (:class:`_Auth`: a 401 refreshes once), the mounted
        transport (:class:`_RetryingTransport`: the whole policy), cookies, and no
        redirect followed, as httpx does them; without httpx's per-call stream
        wrapper, history lists and hook loops, which cost as much CPU as the auth
        and retry policy they wrap. Another auth, a streamed answer, redirects
        followed or event hooks take httpx's own path.
        """
        if (
            stream
            or auth is not httpx.USE_CLIENT_DEFAULT
            or follow_redirects not in (httpx.USE_CLIENT_DEFAULT, False)
            or self.follow_redirects
            or self._event_hooks["request"]
            or self._event_hooks["response"]
            or self._auth is None
        ):
            return await super().send(
                request, stream=stream, auth=auth, follow_redirects=follow_redirects
            )
        if self.is_closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        self._state = httpx._client.ClientState.OPENED
        if "timeout" not in request.extensions:
            request.extensions = dict(**request.extensions, timeout=self.timeout.as_dict())
        flow = self._auth.async_auth_flow(request)
        try:
            request = await flow.__anext__()
            while True:
                response = await self._send_once(request)
                try:
                    try:
                        next_request = await flow.asend(response)
                    except StopAsyncIteration:
                        break
                    await response.aread()
                    request = next_request
                except BaseException:
                    await response.aclose()
                    raise
        finally:
            await flow.aclose()
        try:
            await response.aread()  # already read within the size limit: returns it
        except BaseException:
            await response.aclose()
            raise
        return response

    async def _send_once(self, request: httpx.Request) -> httpx.Response:
        transport = self._transport_for_url(request.url)  # proxies of the environment
        try:
            response = await transport.handle_async_request(request)
        except httpx.RequestError as exc:
            exc.request = request
            raise
        response.request = request
        self.cookies.extract_cookies(response)
        response.default_encoding = self._default_encoding
        if response.has_redirect_location:  # the answer, not a hop (follow_redirects=False)
            response.next_request = self._build_redirect_request(request, response)
        if _httpx_logger.isEnabledFor(logging.INFO):
            _httpx_logger.info(
                'HTTP Request: %s %s "%s %d %s"',
                request.method,
                request.url,
                response.http_version,
                response.status_code,
                response.reason_phrase,
            )
        return response

    def _merged_headers(self, headers: Any) -> _HeaderList:
        """The client's headers, then the catalog's, then the call's, as ``Headers.update``
        merges them (a name set again moves to the end), normalised once."""
        base = self._base_headers
        if base is None or base[0] != self._headers._list:
            merged = httpx.Headers(self.headers)
            if self.catalog_headers:
                merged.update(self.catalog_headers)
            items = merged._list
            base = self._base_headers = (
                list(self._headers._list),
                items,
                frozenset(lower for _, lower, _ in items),
                all(raw.isascii() and value.isascii() for raw, _, value in items),
            )
        _, items, names, ascii_only = base
        if not headers:
            return _HeaderList(list(items), names, ascii_only)
        extra = httpx.Headers(headers)._list
        again = {lower for _, lower, _ in extra}
        kept = [item for item in items if item[1] not in again] if names & again else list(items)
        kept.extend(extra)
        return _HeaderList(
            kept,
            names | again,
            ascii_only and all(raw.isascii() and value.isascii() for raw, _, value in extra),
        )

    @functools.cached_property
    def _base(self) -> str:
        return str(self.base_url).rstrip("/")

    @functools.cached_property
    def _base_reference(self) -> Any:
        return self.base_url._uri_reference

    @functools.cached_property
    def _base_path(self) -> str:
        path: str = self._base_reference.path
        return path.rstrip("/")

    @property
    def cookies(self) -> httpx.Cookies:
        jar = self._cookies
        if not isinstance(jar, _Cookies):
            jar = self._cookies = _Cookies(jar)
        return jar

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._cookies = _Cookies(cookies)


@attrs.define(slots=True)
class _HeaderList:
    """Normalised header items (``httpx.Headers._list``), their lower-case names, and
    whether all are ASCII (then the ``Headers`` built from them need not find out)."""

    items: list[tuple[bytes, bytes, bytes]]
    names: frozenset[bytes]
    ascii_only: bool


def _json_request(
    method: str,
    url: httpx.URL,
    headers: _HeaderList,
    payload: Any,
    extensions: dict[str, Any],
) -> httpx.Request:
    """``httpx.Request(method, url, headers=headers, json=payload, extensions=...)``.

    The same request (tests/test_http_wire.py compares the two), with the headers
    normalised once instead of four times: httpx copies them, adds the body's and
    then the automatic ones, each time into a new ``Headers``.
    """
    method = method.upper()
    body = b"" if payload is None else _JSON.encode(payload).encode("utf-8")
    items, ascii_only = _request_headers(method, headers, None if payload is None else body, url)
    request_headers = httpx.Headers.__new__(httpx.Headers)
    request_headers._list = items
    request_headers._encoding = "ascii" if ascii_only else None
    request = httpx.Request.__new__(httpx.Request)
    request.method = method
    request.url = url
    request.headers = request_headers
    request.extensions = extensions
    request.stream = httpx.ByteStream(body)
    request._content = body
    return request


def _request_headers(
    method: str, headers: _HeaderList, body: bytes | None, url: httpx.URL
) -> tuple[list[tuple[bytes, bytes, bytes]], bool]:
    """The header items of a request with a JSON ``body`` (``None``: no body), as
    ``httpx.Request`` adds them: the body's length and type, then ``Host`` first."""
    names = headers.names
    items = headers.items
    if body is not None:
        if b"content-length" not in names:
            items.append((b"Content-Length", b"content-length", str(len(body)).encode("ascii")))
        if b"content-type" not in names:
            items.append((b"Content-Type", b"content-type", b"application/json"))
    auto: list[tuple[bytes, bytes, bytes]] = []
    ascii_only = headers.ascii_only
    if b"host" not in names and url.host:
        netloc = url.netloc
        auto.append((b"Host", b"host", netloc))
        ascii_only = ascii_only and netloc.isascii()
    if (
        body is None
        and method in ("POST", "PUT", "PATCH")
        and b"content-length" not in names
        and b"transfer-encoding" not in names
    ):
        auto.append((b"Content-Length", b"content-length", b"0"))
    return (auto + items if auto else items), ascii_only


def _set_header(items: list[tuple[bytes, bytes, bytes]], name: str, value: str) -> None:
    """``httpx.Headers.__setitem__`` on a header item list: the first of that name is
    replaced in place, later ones dropped, else it is appended."""
    raw = name.encode("utf-8")
    lowered = raw.lower()
    encoded = value.encode("utf-8")
    found = [index for index, item in enumerate(items) if item[1] == lowered]
    for index in reversed(found[1:]):
        del items[index]
    if found:
        items[found[0]] = (raw, lowered, encoded)
    else:
        items.append((raw, lowered, encoded))


def _has_cookies(client: httpx.AsyncClient) -> bool:
    """Whether ``client`` has cookies to send (the stdlib jar's dict, not its iterator)."""
    jar = client._cookies.jar
    cookies = getattr(jar, "_cookies", None)
    return bool(client.cookies) if cookies is None else bool(cookies)


def _has_header(items: list[tuple[bytes, bytes, bytes]], lowered: bytes) -> bool:
    return any(item[1] == lowered for item in items)


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
        limit = state.max_response_bytes or self._config.max_response_bytes
        timeouts = call_timeouts()
        if timeouts is not None:
            request.extensions["timeout"] = timeouts
        # a streamed body (an Arrow reader's batches, sent chunked) can be sent once only
        retries = 0 if "transfer-encoding" in request.headers else self._config.max_retries

        async def attempt() -> httpx.Response:
            response = await self._inner.handle_async_request(request)
            await read_bounded(response, limit)  # a body cut off is a transport error too
            return response

        return await self.attempts(state, attempt, retries)

    async def attempts(
        self, state: CallState, attempt: Callable[[], Awaitable[_R]], retries: int
    ) -> _R:
        """``attempt()`` until an answer that is not retried: the one retry policy.

        Both paths use it: httpx's (``attempt`` sends an ``httpx.Request`` down the
        wire) and the direct one (:meth:`HttpTransport.exchange`, request bytes on
        the lean wire). ``attempt`` reads the whole answer within the size limit.
        """
        attempt_number = 0
        while True:
            state.attempts += 1
            try:
                response = await attempt()
            except httpx.TransportError as exc:
                reached_server = not isinstance(exc, _NOT_SENT)
                if attempt_number >= retries or (reached_server and not state.idempotent):
                    raise
                delay = self._delay(attempt_number, None)
                if self._past_deadline(state, delay):
                    raise  # the wait would outlast the call: end with what happened
                if reached_server:
                    state.retried_ambiguously = True
            else:
                if response.status_code not in RETRY_STATUSES or attempt_number >= retries:
                    state.response = response
                    return response
                delay = self._delay(attempt_number, response)
                if self._past_deadline(state, delay):
                    state.response = response
                    return response
                if response.status_code in AMBIGUOUS_STATUSES and not state.idempotent:
                    state.retried_ambiguously = True
            await anyio.sleep(delay)
            attempt_number += 1

    @staticmethod
    def _past_deadline(state: CallState, delay: float) -> bool:
        return state.deadline is not None and anyio.current_time() + delay >= state.deadline

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
        return (await self.renew(client, stale=None))[0]

    async def renew(self, client: httpx.AsyncClient, *, stale: str | None) -> tuple[str, bool]:
        """Fetch a token unless another caller already replaced ``stale``; the token, and
        whether this caller fetched it."""
        async with self._lock:
            if self._token is not None and self._token != stale and self._fresh():
                return self._token, False
            self.requests += 1
            form = {
                "grant_type": "client_credentials",
                "client_id": self._client_id,
                "client_secret": self._client_secret,
            }
            if self._scope:
                form["scope"] = self._scope
            outer = _CALL.get()  # the token request counts against the call's deadline
            token_call = CallState(
                idempotent=True,
                deadline=None if outer is None else outer.deadline,
                max_response_bytes=None if outer is None else outer.max_response_bytes,
            )
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
            return token, True


@attrs.frozen
class _Renewal:
    """A refreshed ``Authorization``: its value, its token, whether this call fetched it."""

    authorization: str
    token: str
    fetched: bool


class _Auth(httpx.Auth):
    """Bearer token, OAuth2 or Basic on every request; on a 401, a retry with a refreshed
    token (fetched at most once per call, see :meth:`refreshed`)."""

    #: a call's 401 renewals: the second only after a token it was handed was refused too
    RENEWALS: ClassVar[int] = 2

    def __init__(
        self,
        config: HttpConfig,
        oauth: OAuth2ClientCredentials | None,
        basic: tuple[str, str] | None = None,
    ) -> None:
        self._config = config
        self._oauth = oauth
        self._basic = (
            None
            if basic is None
            else "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode("ascii")
        )
        self.client: httpx.AsyncClient | None = None

    @property
    def sends_authorization(self) -> bool:
        """Whether :meth:`credentials` gives an ``Authorization`` value."""
        return self._oauth is not None or bool(self._config.auth_token) or self._basic is not None

    async def credentials(self) -> tuple[str | None, str | None]:
        """The ``Authorization`` value to send, and the OAuth2 token in it (if any)."""
        if self._oauth is not None:
            assert self.client is not None
            token = await self._oauth.token(self.client)
            return f"Bearer {token}", token
        if self._config.auth_token:
            return f"Bearer {self._config.auth_token}", self._config.auth_token
        return self._basic, None

    async def refreshed(self, status: int, token: str | None) -> _Renewal | None:
        """After an answer: what to send once more (a 401 with OAuth2 refreshes the token
        ``token`` was), else ``None``.

        A call fetches a token at most once. A token another call had fetched meanwhile
        is no refresh of this call's: if it is refused as well, the call may still fetch
        its own: callers ask up to :attr:`RENEWALS` times, stopping after a fetched one.
        """
        if status != 401 or self._oauth is None:
            return None
        assert self.client is not None
        fresh, fetched = await self._oauth.renew(self.client, stale=token)
        return _Renewal(f"Bearer {fresh}", fresh, fetched)

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
        authorization, token = await self.credentials()
        if authorization is not None:
            request.headers["Authorization"] = authorization
        response = yield request
        for _ in range(self.RENEWALS):
            renewal = await self.refreshed(response.status_code, token)
            if renewal is None:
                return
            request.headers["Authorization"] = renewal.authorization
            response = yield request
            if renewal.fetched:
                return
            token = renewal.token


def _check_no_other_auth(config: HttpConfig, url_key: str) -> None:
    """A ``user:password@`` URL is Basic auth: refuse a second Authorization source."""
    others = [
        key
        for key, present in (
            ("auth_token", bool(config.auth_token)),
            ("credential", bool(config.credential)),
            *(
                (f"header.{name}", True)
                for name in config.headers
                if name.lower() == "authorization"
            ),
        )
        if present
    ]
    if others:
        raise errors.InvalidInputError(
            f"'{url_key}' carries a user:password (HTTP Basic auth) and '{others[0]}' is set "
            "too: both would send the Authorization header; keep one"
        )


def _ssl_context(config: HttpConfig) -> ssl.SSLContext | bool:
    if not config.tls_verify:
        return False
    context = ssl.create_default_context(cafile=config.tls_ca_cert)
    if not config.tls_assert_hostname:
        context.check_hostname = False
    if config.tls_cert_file:
        context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    return context


class _CallScope:
    """The deadline of one call (:meth:`HttpTransport.call`), and its ``CallState`` in context.

    On asyncio the deadline is one timer that cancels the call's task, undone on
    the way out as ``asyncio.timeout`` does (a tenth of an anyio ``CancelScope``'s
    CPU per call); elsewhere (trio) an anyio ``CancelScope`` keeps it. Either way
    the call ends with ``ServiceUnavailableError`` when the deadline passes, and a
    cancellation from outside stays a cancellation.
    """

    __slots__ = (
        "_cancelling",
        "_expired",
        "_handle",
        "_scope",
        "_task",
        "_token",
        "_total",
        "_what",
        "state",
    )

    def __init__(self, state: CallState, total: float | None, what: str) -> None:
        self.state = state
        self._total = total
        self._what = what
        self._task: asyncio.Task[Any] | None = None
        self._expired = False
        self._cancelling = 0
        self._handle: asyncio.TimerHandle | None = None
        self._scope: anyio.CancelScope | None = None
        self._token: contextvars.Token[CallState | None] | None = None

    def __enter__(self) -> CallState:
        state, total = self.state, self._total
        try:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task(loop)
        except RuntimeError:  # no asyncio loop here (trio)
            task = None
        self._task = task
        self._expired = False
        self._handle = None
        self._scope = None
        if task is None:
            scope = self._scope = anyio.CancelScope(
                deadline=math.inf if total is None else anyio.current_time() + total
            )
            state.deadline = None if total is None else scope.deadline
            self._token = _CALL.set(state)
            scope.__enter__()
            return state
        self._cancelling = task.cancelling()
        if total is not None:
            state.deadline = loop.time() + total  # anyio.current_time() on asyncio
            self._handle = loop.call_at(state.deadline, self._expire)
        self._token = _CALL.set(state)
        return state

    def _expire(self) -> None:
        if self._task is not None and not self._task.done():
            self._expired = True
            self._task.cancel()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if self._token is not None:
            _CALL.reset(self._token)
        if self._scope is not None:
            self._scope.__exit__(exc_type, exc, tb)
            if not self._scope.cancelled_caught:
                return
        else:
            if self._handle is not None:
                self._handle.cancel()
            if not self._expired:
                return
            assert self._task is not None
            # undo our cancellation; the call timed out if it was the only one
            ours_alone = self._task.uncancel() <= self._cancelling
            if not (
                ours_alone and exc_type is not None and issubclass(exc_type, asyncio.CancelledError)
            ):
                return
        raise errors.ServiceUnavailableError(
            f"{self._what}: timed out (the call's deadline of {self._total:g} s passed)"
        ) from None


#: placeholders of a cached header block: the body's length and the credentials
_LENGTH_SLOT = b"\x00length\x00"
_AUTH_SLOT = b"\x00authorization\x00"
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@attrs.frozen
class _HeaderBlock:
    """A request head's header lines around the body's length and the credentials."""

    before_length: bytes
    before_auth: bytes
    after_auth: bytes
    auth: bool

    def head(self, request_line: bytes, length: bytes, authorization: bytes) -> bytes:
        return b"".join(
            (
                request_line,
                self.before_length,
                length,
                self.before_auth,
                authorization,
                self.after_auth,
            )
        )


@attrs.frozen
class _DirectRoute:
    """What :meth:`HttpTransport.exchange` needs of the client :meth:`HttpTransport.client`
    made, found once."""

    client: _Client
    retrying: _RetryingTransport
    pool: LeanPool
    auth: _Auth
    key: tuple[str, str, int]
    url: httpx.URL
    origin: str
    base_path: str
    timeouts: dict[str, float | None]
    #: header blocks by request shape (method, body or not, call headers), made with
    #: these client headers
    blocks: dict[Any, _HeaderBlock] = attrs.field(factory=dict)
    client_headers: list[Any] = attrs.field(factory=list)


class HttpTransport:
    """The pooled client of one namespace instance, with the shared policy."""

    #: whether :meth:`exchange` may take calls (tests turn it off to hold the httpx
    #: path on the same wire to the same rules)
    direct: ClassVar[bool] = True

    def __init__(
        self,
        config: HttpConfig,
        *,
        base_url: str,
        url_key: str = "uri",
        default_token_url: str | None = None,
    ) -> None:
        self.config = config
        self.base_url, self._basic = split_userinfo(base_url.rstrip("/"))
        if self._basic is not None:
            _check_no_other_auth(config, url_key)
        if default_token_url is not None:
            default_token_url = split_userinfo(default_token_url)[0]
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
        self._direct: _DirectRoute | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"HttpTransport(base_url={self.base_url!r})"  # userinfo already split off

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
            inner = wire(verify, config)
            auth = _Auth(config, self.oauth, self._basic)
            timeout = config.timeout()
            self._client = _Client(
                base_url=self.base_url,
                transport=_RetryingTransport(inner, config),
                auth=auth,
                headers={"Accept-Encoding": ACCEPT_ENCODING},
                catalog_headers=config.headers,
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

    def _total_timeout(self) -> float | None:
        """The whole call's deadline in seconds: the caller's choice, else ``call_timeout``."""
        return chosen_total(self.config.call_timeout / 1000)

    def call(
        self,
        *,
        idempotent: bool,
        what: str = "request",
        headers: Mapping[str, str] | None = None,
        max_response_bytes: int | None = None,
    ) -> _CallScope:
        """Scope one logical call (all its attempts) for the transport, within its deadline.

        Past the deadline the call is cancelled wherever it is (connecting, waiting
        for a token, reading a trickling body, between retries) and raises
        ``ServiceUnavailableError`` (17) saying it timed out, like the step timeouts.
        """
        state = CallState(
            idempotent=idempotent,
            headers=dict(headers) if headers else {},
            max_response_bytes=max_response_bytes,
        )
        return _CallScope(state, self._total_timeout(), what)

    async def request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        idempotent: bool,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        max_response_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[httpx.Response, CallState]:
        """One logical call of a hand-written backend (any status; errors are the caller's);
        ``headers`` are added to the configured ones."""
        client = self.client()
        query = {k: v for k, v in (params or {}).items() if v is not None}
        with self.call(
            idempotent=idempotent, what=what, max_response_bytes=max_response_bytes
        ) as state:
            try:
                response: httpx.Response | None = await self.exchange(
                    state, method, path, query, json, headers
                )
                if response is None:
                    response = await client.request(
                        method, path, params=query, json=json, headers=headers
                    )
            except httpx.HTTPError as exc:
                raise transport_error(exc, what) from exc
        return response, state

    def _direct_route(self, client: httpx.AsyncClient) -> _DirectRoute | None:
        """How :meth:`exchange` reaches the server, or ``None`` when it cannot: another
        wire, proxies from the environment, cookies to send, or a client changed from
        what :meth:`client` made."""
        if not self.direct:
            return None
        route = self._direct
        if route is None or route.client is not client:
            retrying = getattr(client, "_transport", None)
            inner = getattr(retrying, "_inner", None)
            auth = getattr(client, "_auth", None)
            if not (
                isinstance(client, _Client)
                and isinstance(retrying, _RetryingTransport)
                and isinstance(inner, LeanPool)
                and isinstance(auth, _Auth)
            ):
                return None
            url = client.base_url
            scheme = url.scheme
            route = self._direct = _DirectRoute(
                client=client,
                retrying=retrying,
                pool=inner,
                auth=auth,
                key=(scheme, url.host, url.port or (443 if scheme == "https" else 80)),
                url=url,
                origin=f"{scheme}://{url.netloc.decode('ascii')}",
                base_path=client._base_path,
                timeouts=client.timeout.as_dict(),
            )
        if (
            client.is_closed
            or client._mounts
            or _has_cookies(client)
            or client.params
            or client.follow_redirects
            or client._event_hooks["request"]
            or client._event_hooks["response"]
        ):
            return None
        return route

    def _header_block(
        self,
        route: _DirectRoute,
        method: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        state: CallState,
    ) -> _HeaderBlock:
        """The headers of a request of this shape, as the httpx path would send them
        (client and catalog headers, the call's, the body's, API key, then
        ``Authorization``), with the body's length and the credentials left open."""
        items, _ = _request_headers(method, route.client._merged_headers(headers), body, route.url)
        for name, value in state.headers.items():
            _set_header(items, name, value)
        if self.config.api_key and not _has_header(items, b"x-api-key"):
            _set_header(items, "x-api-key", self.config.api_key)
        auth = not _has_header(items, b"authorization")  # else a per-call header wins
        if auth and route.auth.sends_authorization:
            items.append((b"Authorization", b"authorization", _AUTH_SLOT))
        else:
            auth = False
        pairs = [
            (name, _LENGTH_SLOT if body is not None and lowered == b"content-length" else value)
            for name, lowered, value in items
        ]
        text = request_head(b"-", b"-", pairs, route.url.netloc).split(b"\r\n", 1)[1]
        before_length, _, rest = (
            text.partition(_LENGTH_SLOT) if body is not None else (b"", b"", text)
        )
        before_auth, _, after_auth = rest.partition(_AUTH_SLOT) if auth else (rest, b"", b"")
        return _HeaderBlock(before_length, before_auth, after_auth, auth)

    async def exchange(
        self,
        state: CallState,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        payload: Any,
        headers: Mapping[str, str] | None = None,
    ) -> Answer | None:
        """One call's request and whole answer on the lean wire, from bytes to bytes.

        The httpx path (``client().request``) builds an ``httpx.Request``, runs the
        auth flow, the retrying transport and the bounded read, and wraps the answer
        in an ``httpx.Response``; this sends the same request bytes
        (tests/test_http_wire.py compares them) through the same pieces: the
        headers :class:`_Client` merges, :class:`_Auth`'s credentials and 401
        refresh, :meth:`_RetryingTransport.attempts` and
        :func:`._http_body.read_limited`. ``None`` when this client cannot take it
        (see :meth:`_direct_route`): the caller then takes the httpx path. Call it
        inside :meth:`call`, whose ``state`` it is given.
        """
        client = self.client()
        route = self._direct_route(client)
        if route is None:
            return None
        query = _query_string(params)
        target = route.base_path + path
        if not (_PLAIN.match(target) and "/." not in target and _PLAIN.match(query)):
            return None  # httpx would normalise it: let it
        if query:
            target = f"{target}?{query}"
        method = method.upper()
        body = None if payload is None else _JSON.encode(payload).encode("utf-8")
        key = (method, body is None, tuple(headers.items()) if headers else ())
        if route.client_headers != route.client._headers._list:  # changed by hand: start over
            route.blocks.clear()
            route.client_headers[:] = route.client._headers._list
        block = route.blocks.get(key) if not state.headers else None
        if block is None:
            block = self._header_block(route, method, body, headers, state)
            if not state.headers and len(route.blocks) < 64:
                route.blocks[key] = block
        token: str | None = None
        authorization = b""
        if block.auth:
            value, token = await route.auth.credentials()
            authorization = (value or "").encode("utf-8")
        request_line = b"%s %s HTTP/1.1\r\n" % (method.encode("ascii"), target.encode("ascii"))
        length = b"%d" % len(body) if body is not None else b""
        head = block.head(request_line, length, authorization)
        timeouts = call_timeouts() or route.timeouts
        limit = state.max_response_bytes or self.config.max_response_bytes

        async def attempt() -> Answer:
            status, reason, headers, content = await route.pool.exchange(
                route.key, head, body, timeouts, limit
            )
            return Answer(status, reason, headers, content)

        retries = self.config.max_retries
        answer = await route.retrying.attempts(state, attempt, retries)
        if block.auth:
            for _ in range(route.auth.RENEWALS):
                renewal = await route.auth.refreshed(answer.status_code, token)
                if renewal is None:
                    break
                head = block.head(request_line, length, renewal.authorization.encode("utf-8"))
                answer = await route.retrying.attempts(state, attempt, retries)
                if renewal.fetched:
                    break
                token = renewal.token
        url = route.origin + target
        if any(name.lower() == b"set-cookie" for name, _ in answer.raw_headers):
            client.cookies.extract_cookies(
                httpx.Response(
                    answer.status_code,
                    headers=answer.raw_headers,
                    request=httpx.Request(method, url),
                )
            )
        if _httpx_logger.isEnabledFor(logging.INFO):
            _httpx_logger.info(
                'HTTP Request: %s %s "HTTP/1.1 %d %s"',
                method,
                url,
                answer.status_code,
                answer.reason_phrase,
            )
        return answer

    async def aclose(self) -> None:
        self._closed = True
        self._direct = None
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
