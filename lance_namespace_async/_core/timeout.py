"""Per-call timeouts, with a sentinel that is not ``None``.

``timeout=None`` means "no timeout" (as in httpx), so "use the configured
default" needs its own value: :data:`USE_DEFAULT`. The public coroutines put
the caller's choice in a context variable for the duration of the call; the
HTTP transport reads it when it sends, so backends need no extra plumbing.

``total`` is the deadline of the whole call: connecting, the answer's headers
and body, and every retry (the clock is not restarted by a retry). The other
four bound one step each, so a server trickling a byte per second stays within
``read`` for ever; only ``total`` ends such a call.
"""

from __future__ import annotations

import contextvars
from typing import Any, Final

import attrs

from ..errors import InvalidInputError

__all__ = [
    "USE_DEFAULT",
    "Timeout",
    "TimeoutTypes",
    "UseDefault",
    "call_timeout",
    "chosen_step",
    "chosen_total",
    "current_timeout",
]


class UseDefault:
    """Type of :data:`USE_DEFAULT`: keep the namespace's configured timeout."""

    _instance: UseDefault | None = None

    def __new__(cls) -> UseDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "USE_DEFAULT"

    def __reduce__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT: Final = UseDefault()


@attrs.frozen
class Timeout:
    """Timeouts of one call in seconds; ``None`` disables that one.

    ``total`` is the whole call's deadline, retries included; left out, the
    namespace's configured deadline (``call_timeout``) still applies.
    """

    connect: float | None = None
    read: float | None = None
    write: float | None = None
    pool: float | None = None
    total: float | UseDefault | None = USE_DEFAULT

    @classmethod
    def of(cls, total: float | None) -> Timeout:
        """One number for everything: each step and the whole call (``--timeout``)."""
        return cls(connect=total, read=total, write=total, pool=total, total=total)

    @classmethod
    def from_millis(cls, connect_ms: int, read_ms: int, total_ms: int | None = None) -> Timeout:
        """The properties' form: connect, read and whole-call timeouts in milliseconds."""
        return cls(
            connect=connect_ms / 1000,
            read=read_ms / 1000,
            write=read_ms / 1000,
            pool=connect_ms / 1000,
            total=None if total_ms is None else total_ms / 1000,
        )


TimeoutTypes = Timeout | float | None | UseDefault

_CURRENT: contextvars.ContextVar[Timeout | UseDefault | None] = contextvars.ContextVar(
    "lance_namespace_async_timeout", default=USE_DEFAULT
)


def _normalize(timeout: object) -> Timeout | UseDefault | None:
    if isinstance(timeout, Timeout):
        total = timeout.total
        if isinstance(total, bool) or not (
            total is None or isinstance(total, UseDefault | int | float)
        ):
            raise InvalidInputError(f"Timeout.total must be seconds or None, got {total!r}")
        if isinstance(total, int | float) and not total > 0:
            raise InvalidInputError(f"Timeout.total must be > 0 seconds, got {total}")
        return timeout
    if isinstance(timeout, UseDefault) or timeout is None:
        return timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise InvalidInputError(f"timeout must be seconds, a Timeout or None, got {timeout!r}")
    if not timeout > 0:  # NaN too
        raise InvalidInputError(f"timeout must be > 0 seconds, got {timeout}")
    return Timeout.of(float(timeout))


class call_timeout:
    """Use ``timeout`` for the calls made inside the block (USE_DEFAULT: no change).

    A class rather than a ``contextmanager`` generator: every call of every
    operation enters one, and USE_DEFAULT (most calls) costs two attribute reads.
    """

    __slots__ = ("_token", "_value")

    def __init__(self, timeout: object) -> None:
        self._value = _normalize(timeout)
        self._token: contextvars.Token[Any] | None = None

    def __enter__(self) -> None:
        if self._value is not USE_DEFAULT:
            self._token = _CURRENT.set(self._value)

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None


def current_timeout() -> Timeout | UseDefault | None:
    return _CURRENT.get()


def chosen_total(configured: float | None) -> float | None:
    """The whole call's deadline in seconds: the caller's ``timeout=`` when it sets one,
    else ``configured`` (a backend's ``call_timeout``); ``timeout=None`` removes it."""
    chosen = _CURRENT.get()
    if chosen is None:
        return None
    if isinstance(chosen, Timeout) and not isinstance(chosen.total, UseDefault):
        return chosen.total
    return configured


def chosen_step(step: str, configured: float | None) -> float | None:
    """One step's timeout in seconds (``connect``, ``read``, ``write``, ``pool``): the
    caller's ``Timeout`` when it gives one (its ``None`` is no limit, as in httpx), else
    ``configured``."""
    chosen = _CURRENT.get()
    if chosen is None:
        return None
    if isinstance(chosen, Timeout):
        value: float | None = getattr(chosen, step)
        return value
    return configured
