"""Per-call timeouts, with a sentinel that is not ``None``.

``timeout=None`` means "no timeout" (as in httpx), so "use the configured
default" needs its own value: :data:`USE_DEFAULT`. The public coroutines put
the caller's choice in a context variable for the duration of the call; the
HTTP transport reads it when it sends, so backends need no extra plumbing.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Final

import attrs

from .errors import InvalidInputError

__all__ = [
    "USE_DEFAULT",
    "Timeout",
    "TimeoutTypes",
    "UseDefault",
    "call_timeout",
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
    """Timeouts of one call in seconds; ``None`` disables that one."""

    connect: float | None = None
    read: float | None = None
    write: float | None = None
    pool: float | None = None

    @classmethod
    def of(cls, total: float | None) -> Timeout:
        return cls(connect=total, read=total, write=total, pool=total)

    @classmethod
    def from_millis(cls, connect_ms: int, read_ms: int) -> Timeout:
        """The properties' form: connect and read timeouts in milliseconds."""
        return cls(
            connect=connect_ms / 1000,
            read=read_ms / 1000,
            write=read_ms / 1000,
            pool=connect_ms / 1000,
        )


TimeoutTypes = Timeout | float | None | UseDefault

_CURRENT: contextvars.ContextVar[Timeout | UseDefault | None] = contextvars.ContextVar(
    "lance_namespace_async_timeout", default=USE_DEFAULT
)


def _normalize(timeout: object) -> Timeout | UseDefault | None:
    if isinstance(timeout, UseDefault | Timeout) or timeout is None:
        return timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise InvalidInputError(f"timeout must be seconds, a Timeout or None, got {timeout!r}")
    if timeout <= 0:
        raise InvalidInputError(f"timeout must be > 0 seconds, got {timeout}")
    return Timeout.of(float(timeout))


@contextlib.contextmanager
def call_timeout(timeout: object) -> Iterator[None]:
    """Use ``timeout`` for the calls made inside the block (USE_DEFAULT: no change)."""
    value = _normalize(timeout)
    if value is USE_DEFAULT:
        yield
        return
    token = _CURRENT.set(value)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_timeout() -> Timeout | UseDefault | None:
    return _CURRENT.get()
