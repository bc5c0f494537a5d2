"""httpx's client for the calls of our backends: requests built with one URL parse,
sent in fewer layers, cookies that cost nothing when there are none.

The headers merged here (the client's, the catalog's ``header.*`` extras for its
origin only, the call's) are the ones the direct route (:mod:`.direct`) sends too.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

import attrs
import httpx

_httpx_logger = logging.getLogger("httpx")  # httpx logs each request here; so do we

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


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


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
