"""Credentials on every request: a static bearer token, an API key, HTTP Basic from a
``user:password@`` URL, or OAuth2 client credentials.

OAuth2 tokens are cached, refreshed before expiry and on a 401, with exactly one
token request in flight however many calls wait; the token request counts against
the call's deadline. ``header.*`` extras are the client's (:mod:`.client`), sent to
the catalog's origin only.
"""

from __future__ import annotations

import base64
import time
from typing import Any, ClassVar

import anyio
import attrs
import httpx

from .. import errors
from .calls import _CALL, CallState
from .config import HttpConfig

__all__ = ["OAuth2ClientCredentials"]


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
