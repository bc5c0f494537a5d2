"""The direct route: one call's request and whole answer on the lean wire, bytes to bytes.

The httpx path builds an ``httpx.Request``, runs the auth flow, the retrying
transport and the bounded read, and wraps the answer in an ``httpx.Response``; the
direct route (:meth:`DirectRoutes.exchange`) sends the same request bytes
(tests/test_http_wire.py compares them) through the same pieces: the headers
:class:`~.client._Client` merges, :class:`~.auth._Auth`'s credentials and 401
refresh, :meth:`~.policy._RetryingTransport.attempts` and
:func:`.body.read_limited`. It is the least client CPU per call
(benchmarks/client_cpu.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import httpx

from .auth import _Auth
from .calls import Answer, CallState, call_timeouts
from .client import (
    _JSON,
    _PLAIN,
    _Client,
    _has_cookies,
    _has_header,
    _query_string,
    _request_headers,
    _set_header,
)
from .config import HttpConfig
from .lean import LeanPool, request_head
from .policy import _RetryingTransport

__all__ = ["DirectRoutes"]


_httpx_logger = logging.getLogger("httpx")  # httpx logs each request here; so do we

#: placeholders of a cached header block: the body's length and the credentials
_LENGTH_SLOT = b"\x00length\x00"
_AUTH_SLOT = b"\x00authorization\x00"


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


class DirectRoutes:
    """The direct route of :class:`~.transport.HttpTransport` (its base class)."""

    #: whether :meth:`exchange` may take calls (tests turn it off to hold the httpx
    #: path on the same wire to the same rules)
    direct: ClassVar[bool] = True
    config: HttpConfig
    _direct: _DirectRoute | None

    def client(self) -> httpx.AsyncClient:
        raise NotImplementedError

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
        :func:`.body.read_limited`. ``None`` when this client cannot take it
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
