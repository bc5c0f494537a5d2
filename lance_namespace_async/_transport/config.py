"""The configuration every HTTP backend accepts (:class:`HttpConfig`) and its URL keys.

Below every other module of the transport: the wires read their pool sizes and TLS
settings from it, and nothing here imports them.
"""

from __future__ import annotations

import urllib.parse

import attrs

from .. import errors
from .._core.config import (
    BackendConfig,
    call_timeout_prop,
    max_response_bytes_prop,
    parse_bool,
    parse_non_negative_int,
    parse_positive_int,
    prop,
)
from .._core.timeout import Timeout

__all__ = ["HttpConfig", "parse_http_url", "split_userinfo"]


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
