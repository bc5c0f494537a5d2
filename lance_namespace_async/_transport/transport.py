"""The HTTP transport every HTTP backend (rest, iceberg, unity) shares: :class:`HttpTransport`.

One place owns the policy, like openai-python's base client:

* one pooled ``httpx.AsyncClient`` per namespace instance, opened on first use
  (reading a CA bundle is I/O, so not in a constructor) and closed by ``aclose``;
* timeouts from properties in milliseconds, always set, overridable per call
  (:mod:`.._core.timeout`), and a deadline for each whole call (``call_timeout``):
  connecting, headers, body, token requests and retries included, since the
  step timeouts alone let a server trickling a byte a second hold a call for
  ever. A retry whose wait would pass the deadline is not made: the call ends
  with the error it has;
* a size limit on every answer (``max_response_bytes``, :mod:`.body`),
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
refresh, ``_RetryingTransport.attempts`` and ``_transport.body.read_limited``;
tests/test_http_wire.py holds both to the same rules and the same request bytes.

**Ambiguous retries.** A non-idempotent call (a create) that failed after its
request may have reached the server (a 502/504, a connection reset while
reading) and is then retried can see ``AlreadyExists`` caused by its own first
attempt. Such an error is raised with ``retried_ambiguously = True`` and says
so in its message, so the caller can check the object instead of guessing.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

import httpx

from .. import errors
from .._core.timeout import chosen_total
from .auth import OAuth2ClientCredentials, _Auth, _check_no_other_auth
from .body import ACCEPT_ENCODING
from .calls import CallState, _CallScope
from .client import _Client
from .config import HttpConfig, split_userinfo
from .direct import DirectRoutes, _DirectRoute
from .failures import transport_error
from .policy import _RetryingTransport
from .wire import wire

__all__ = ["HttpTransport"]


def _ssl_context(config: HttpConfig) -> ssl.SSLContext | bool:
    if not config.tls_verify:
        return False
    context = ssl.create_default_context(cafile=config.tls_ca_cert)
    if not config.tls_assert_hostname:
        context.check_hostname = False
    if config.tls_cert_file:
        context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    return context


class HttpTransport(DirectRoutes):
    """The pooled client of one namespace instance, with the shared policy."""

    def __init__(
        self,
        config: HttpConfig,
        *,
        base_url: str,
        url_key: str = "uri",
        default_token_url: str | None = None,
        backend: str = "rest",
    ) -> None:
        self.config = config
        #: the backend's name in metrics and spans (``_core.observe``)
        self.backend = backend
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
        return _CallScope(state, self._total_timeout(), what, self.backend)

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

    async def aclose(self) -> None:
        self._closed = True
        self._direct = None
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
