"""Storage credentials a catalog vends, as Lance storage options that refresh themselves.

Governed catalogs do not let clients hold storage keys: they hand out short-lived,
per-table credentials instead (Unity's ``POST /temporary-table-credentials``, Iceberg
REST's ``X-Iceberg-Access-Delegation: vended-credentials`` on LoadTable). Both backends
turn them into Lance storage options here, once:

* the credential keys pylance's object store reads (``aws_access_key_id``,
  ``aws_secret_access_key``, ``aws_session_token``; Azure's ``azure_storage_sas_token``),
  laid over the operator's ``storage.*`` options (endpoint, region, ...);
* ``expires_at_millis``, the instant the catalog says they expire, and
  ``refresh_offset_millis``, how long before that pylance asks again: a quarter of the
  credential's lifetime, at most a minute (pylance's own default is a minute, which for
  a credential living a few seconds would mean asking on every request).

The refresh itself is pylance's: a dataset opened with ``lance.dataset(namespace_client=ns,
table_id=...)`` calls ``ns.describe_table`` again once the options are within their
refresh offset of ``expires_at_millis``; the backend then vends anew. Unity's separate
credentials call is cached per table and operation by :class:`VendedCredentialCache`
until that same point, so DescribeTable and table operations do not ask Unity for every
call, and a refresh always gets credentials fresher than the ones it replaces.

Vended credentials are secrets: :class:`VendedCredentials` shows only key names and the
expiry in its repr, and malformed answers are reported without their values. A server
(``lance-ns serve``) leaves them out of its answers unless the operator opts in
(``expose_vended_credentials``); :func:`capture_vended` is how it tells them apart from
its own ``storage.*`` options, which it never hands out that way.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import anyio
import attrs

from .. import errors

__all__ = [
    "EXPIRES_AT_MILLIS",
    "REFRESH_OFFSET_MILLIS",
    "VENDED_OPTION_KEYS",
    "VENDING_DOC",
    "VendedCredentialCache",
    "VendedCredentials",
    "capture_vended",
    "from_iceberg",
    "from_unity",
    "record_vended",
    "wants_vending",
    "with_vended",
]

#: the storage option pylance reads the expiry from (epoch milliseconds)
EXPIRES_AT_MILLIS = "expires_at_millis"
#: the storage option that tells pylance how long before the expiry to refresh
REFRESH_OFFSET_MILLIS = "refresh_offset_millis"
#: pylance's default refresh offset, and our upper bound for it
_MAX_REFRESH_OFFSET_MILLIS = 60_000
#: longest credential value accepted from a catalog (session tokens run to a few KiB)
_MAX_VALUE_CHARS = 16_384

# Unity ``aws_temp_credentials`` / ``azure_user_delegation_sas`` members -> Lance keys
_UNITY_AWS = {
    "access_key_id": "aws_access_key_id",
    "secret_access_key": "aws_secret_access_key",
    "session_token": "aws_session_token",
}
_UNITY_AZURE = {"sas_token": "azure_storage_sas_token"}
# Iceberg REST S3 FileIO properties -> Lance keys; the expiry key is Iceberg's S3FileIO one
_ICEBERG_S3 = {
    "s3.access-key-id": "aws_access_key_id",
    "s3.secret-access-key": "aws_secret_access_key",
    "s3.session-token": "aws_session_token",
}
_ICEBERG_EXPIRY = "s3.session-token-expires-at-ms"

#: every key a vended answer may set in storage options (what a server may pass through)
VENDED_OPTION_KEYS = frozenset(
    {*_UNITY_AWS.values(), *_UNITY_AZURE.values(), EXPIRES_AT_MILLIS, REFRESH_OFFSET_MILLIS}
)


#: the ``vend_credentials`` property of the backends whose catalog vends
VENDING_DOC = (
    "ask the catalog for short-lived storage credentials of each table: DescribeTable "
    "(when the request does not say; vend_credentials=true asks anyway) and every table "
    "operation, refreshed before they expire"
)


def wants_vending(request: Mapping[str, Any], configured: bool) -> bool:
    """Whether a DescribeTable request gets vended credentials: its ``vend_credentials``
    when it says (true or false), else the backend's setting (the spec: the server decides).
    pylance's refresh sends no flag, so a backend that vends must be configured to."""
    asked = request.get("vend_credentials")
    if asked is None:
        return configured
    if not isinstance(asked, bool):
        raise errors.InvalidInputError(f"vend_credentials must be a boolean, got {asked!r}")
    return asked


def _now_millis() -> int:
    return time.time_ns() // 1_000_000


@attrs.frozen(repr=False)
class VendedCredentials:
    """Credentials a catalog vended for one table, as Lance storage options.

    ``options``: the credential keys only; ``expires_at_millis``: when they expire
    (None: the catalog said nothing, they are treated as not expiring); ``lifetime_millis``:
    how long they lived when received, which sets the refresh offset.
    """

    options: Mapping[str, str]
    expires_at_millis: int | None = None
    lifetime_millis: int | None = None

    def __repr__(self) -> str:  # the values are secrets
        return (
            f"VendedCredentials(keys={sorted(self.options)!r}, "
            f"expires_at_millis={self.expires_at_millis!r})"
        )

    @property
    def refresh_offset_millis(self) -> int | None:
        if self.expires_at_millis is None:
            return None
        lifetime = self.lifetime_millis or 0
        return max(0, min(_MAX_REFRESH_OFFSET_MILLIS, lifetime // 4))

    def fresh(self, now_millis: int | None = None) -> bool:
        """Still usable without a refresh (before the refresh offset of the expiry)."""
        if self.expires_at_millis is None:
            return False  # never cached: without an expiry, asking again is the only refresh
        now = _now_millis() if now_millis is None else now_millis
        return now < self.expires_at_millis - (self.refresh_offset_millis or 0)

    def storage_options(self) -> dict[str, str]:
        """The Lance storage options these credentials set (expiry and refresh included)."""
        options = dict(self.options)
        if self.expires_at_millis is not None:
            options[EXPIRES_AT_MILLIS] = str(self.expires_at_millis)
            options[REFRESH_OFFSET_MILLIS] = str(self.refresh_offset_millis)
        return options


def _credential_value(value: Any, what: str, member: str) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_VALUE_CHARS:
        # the value itself is never shown: it may be a secret
        raise errors.InternalError(f"{what}: the catalog vended a malformed {member}")
    return value


def _expiry(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise errors.InternalError(f"{what}: the catalog vended a malformed expiration time")
    return value


def _credentials(options: dict[str, str], expires: int | None) -> VendedCredentials | None:
    if not options:
        return None
    lifetime = None if expires is None else max(0, expires - _now_millis())
    return VendedCredentials(options, expires, lifetime)


def from_unity(answer: Mapping[str, Any], what: str) -> VendedCredentials | None:
    """Unity's ``TemporaryCredentials`` answer (AWS or Azure; None when it holds neither)."""
    options: dict[str, str] = {}
    for member, keys in (
        ("aws_temp_credentials", _UNITY_AWS),
        ("azure_user_delegation_sas", _UNITY_AZURE),
    ):
        given = answer.get(member)
        if given is None:
            continue
        if not isinstance(given, Mapping):
            raise errors.InternalError(f"{what}: the catalog vended a malformed {member}")
        for name, key in keys.items():
            if given.get(name) is not None:
                options[key] = _credential_value(given[name], what, f"{member}.{name}")
    if "aws_access_key_id" in options and "aws_secret_access_key" not in options:
        raise errors.InternalError(f"{what}: the catalog vended an access key without its secret")
    return _credentials(options, _expiry(answer.get("expiration_time"), what))


def _iceberg_config(result: Mapping[str, Any], location: str, what: str) -> Mapping[str, Any]:
    """The vended config that applies to ``location``: the longest matching prefix of
    ``storage-credentials`` first, else the table ``config`` (the Iceberg REST spec's order)."""
    entries = result.get("storage-credentials")
    if entries is not None and not isinstance(entries, list):
        raise errors.InternalError(f"{what}: malformed storage-credentials")
    best: tuple[int, Mapping[str, Any]] | None = None
    for entry in entries or []:
        prefix = entry.get("prefix") if isinstance(entry, Mapping) else None
        config = entry.get("config") if isinstance(entry, Mapping) else None
        if not isinstance(prefix, str) or not isinstance(config, Mapping):
            raise errors.InternalError(f"{what}: malformed storage-credentials entry")
        if location.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), config)
    if best is not None:
        return best[1]
    config = result.get("config")
    if config is not None and not isinstance(config, Mapping):
        raise errors.InternalError(f"{what}: malformed LoadTable config")
    return config or {}


def from_iceberg(result: Mapping[str, Any], location: str, what: str) -> VendedCredentials | None:
    """The S3 credentials of an Iceberg ``LoadTableResult`` for the table at ``location``."""
    config = _iceberg_config(result, location, what)
    options = {
        key: _credential_value(config[name], what, name)
        for name, key in _ICEBERG_S3.items()
        if config.get(name) is not None
    }
    if options and "aws_secret_access_key" not in options:
        raise errors.InternalError(f"{what}: the catalog vended an access key without its secret")
    return _credentials(options, _expiry(config.get(_ICEBERG_EXPIRY), what) if options else None)


def with_vended(
    storage_options: Mapping[str, str], vended: VendedCredentials | None
) -> dict[str, str]:
    """``storage_options`` with the vended credentials laid over them (and reported to a
    serving adapter through :func:`capture_vended`)."""
    options = dict(storage_options)
    if vended is not None:
        own = vended.storage_options()
        options.update(own)
        record_vended(own)
    return options


# -- the cache of separately vended credentials --------------------------------------------


class VendedCredentialCache:
    """Credentials per key (a table and an operation) until their refresh point.

    One request per key at a time: concurrent callers of an expired entry wait for the
    same refresh. Bounded: the least recently used entries go first.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        self._entries: OrderedDict[Any, VendedCredentials] = OrderedDict()
        self._locks: dict[Any, anyio.Lock] = {}
        self._max_entries = max_entries

    def __repr__(self) -> str:
        return f"VendedCredentialCache(entries={len(self._entries)})"

    async def get(
        self, key: Any, fetch: Callable[[], Awaitable[VendedCredentials | None]]
    ) -> VendedCredentials | None:
        cached = self._entries.get(key)
        if cached is not None and cached.fresh():
            self._entries.move_to_end(key)
            return cached
        lock = self._locks.setdefault(key, anyio.Lock())
        try:
            async with lock:
                cached = self._entries.get(key)
                if cached is not None and cached.fresh():
                    return cached
                vended = await fetch()
                if vended is None or not vended.fresh():
                    self._entries.pop(key, None)
                    return vended
                self._entries[key] = vended
                self._entries.move_to_end(key)
                while len(self._entries) > self._max_entries:
                    self._entries.popitem(last=False)
                return vended
        finally:
            if not lock.statistics().tasks_waiting and self._locks.get(key) is lock:
                del self._locks[key]


# -- what a serving adapter may pass through -----------------------------------------------

_captured: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "lance_namespace_async_vended", default=None
)


@contextlib.contextmanager
def capture_vended() -> Iterator[dict[str, str]]:
    """Collect the vended options that backend calls in this block lay into their answers.

    The dict is shared, not copied, so calls in child tasks and worker threads report too.
    """
    captured: dict[str, str] = {}
    token = _captured.set(captured)
    try:
        yield captured
    finally:
        _captured.reset(token)


def record_vended(options: Mapping[str, str]) -> None:
    captured = _captured.get()
    if captured is not None:
        captured.clear()
        captured.update(options)
