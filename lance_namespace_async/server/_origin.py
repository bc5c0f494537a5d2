"""Which web pages and which host names may reach the REST adapter.

A catalog server on loopback without a token trusts everything that can open a
connection to it, and a web browser on the same machine can: any page may send a
"simple" cross-origin POST (no preflight: no custom headers, a form content type
or none), and a page whose host name an attacker re-points at 127.0.0.1 (DNS
rebinding) even reads the answers, since the browser then thinks server and page
share an origin. Two checks close both doors, before authentication or routing:

* **Origin.** Browsers name the page that sends a request in ``Origin`` (on every
  cross-origin request and on every POST); the protocol's clients (pylance,
  LanceDB, this package, curl) send none. A request with an ``Origin`` the operator
  did not allow (``--allow-origin``, exact ``scheme://host[:port]``) is refused with
  403 (code 15). ``Origin: null`` (sandboxed pages, file: URLs) is refused too.
* **Host.** A rebound page's requests carry the attacker's host name in ``Host``.
  An IP literal cannot come from rebinding, so it always passes; a name passes
  when it is ``localhost`` or one the operator allowed (``--allow-host``, ``*`` for
  any). A request without ``Host`` (HTTP/1.0) passes: a browser always sends one.
  Refused names get 421 Misdirected Request (code 13).

:func:`~lance_namespace_async.server.create_app` checks origins always (an
embedder adds the origins it serves) and host names only when given the names
(an application mounted behind a proxy sees the proxy's names); ``serve`` and
``lance-ns serve`` always check both. The content types of bodies are the
adapter's own check (JSON or Arrow, never a form type).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from .. import errors

__all__ = ["CrossOriginError", "MisdirectedRequestError", "OriginPolicy"]


class CrossOriginError(errors.PermissionDeniedError):
    """A browser page of an origin the operator did not allow sent the request."""


class MisdirectedRequestError(errors.InvalidInputError):
    """The request names a host this server does not answer for (DNS rebinding)."""

    http_status = 421


def _origin(value: str) -> str:
    """``scheme://host[:port]`` lower-cased, as browsers serialize an origin."""
    text = value.strip().rstrip("/").lower()
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest:
        raise errors.InvalidInputError(
            f"allowed origin {value!r} must be scheme://host[:port] (http or https)"
        )
    return text


def _host_name(value: str) -> str:
    """The name of a ``Host`` header value or an allowed host, without the port."""
    text = value.strip().lower()
    if text.startswith("["):  # [::1]:2333
        return text[: text.find("]") + 1] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


class OriginPolicy:
    """The origins and host names one adapter answers; see the module docstring."""

    __slots__ = ("_any_host", "_hosts", "_origins")

    def __init__(self, origins: Iterable[str] = (), hosts: Iterable[str] | None = None) -> None:
        if isinstance(origins, str) or (hosts is not None and isinstance(hosts, str)):
            raise errors.InvalidInputError("allowed origins and hosts are lists of strings")
        self._origins = frozenset(_origin(value) for value in origins)
        names = None if hosts is None else [_host_name(h) for h in hosts]
        if names is not None and any(not name for name in names):
            raise errors.InvalidInputError("an allowed host must not be empty")
        self._any_host = names is None or "*" in names
        self._hosts = frozenset(names or ()) | {"localhost"}

    def check(self, origin: str | None, host: str | None) -> None:
        """Refuse a request from a foreign page or for a foreign host name."""
        if origin is not None and origin.strip().rstrip("/").lower() not in self._origins:
            raise CrossOriginError(
                "cross-origin request refused: this server answers no web page "
                "unless its operator allows the page's origin (--allow-origin)"
            )
        if host is None or self._any_host:
            return
        name = _host_name(host)
        if name in self._hosts or _is_ip_literal(name):
            return
        raise MisdirectedRequestError(
            f"this server does not answer for the host name {name[:253]!r}: "
            "connect by IP address or localhost, or have its operator allow the name "
            "(--allow-host)"
        )
