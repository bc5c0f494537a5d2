"""What one client can make :func:`~lance_namespace_async.server.serve` hold: the limits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import errors

if TYPE_CHECKING:
    pass


DEFAULT_MAX_BODY_BYTES = 1_048_576


@dataclass(frozen=True)
class ServerLimits:
    """What one client, token or not, can make :func:`serve` hold, and for how long.

    The defaults suit a catalog server: the protocol's requests have heads of a
    few hundred bytes and bodies of a few kilobytes, sent at once.
    """

    #: request line plus headers of one request; more is answered 431 and closed
    max_header_bytes: int = 65_536
    #: header fields of one request; more is answered 431 and closed
    max_header_fields: int = 100
    #: seconds from a head's first byte (or the connection's opening) to its end; then 408
    header_timeout: float = 10.0
    #: seconds from the end of a head to the end of its body; then 408 and close
    body_timeout: float = 30.0
    #: seconds an idle keep-alive connection stays open
    keep_alive_timeout: float = 5.0
    #: open connections; one more is answered 503 and closed at once
    max_connections: int = 1_000

    def __post_init__(self) -> None:
        for name in ("max_header_bytes", "max_header_fields", "max_connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise errors.InvalidInputError(f"{name} must be an integer >= 1")
        if self.max_header_bytes < 1024:
            raise errors.InvalidInputError("max_header_bytes must be >= 1024")
        for name in ("header_timeout", "body_timeout", "keep_alive_timeout"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise errors.InvalidInputError(f"{name} must be a number of seconds > 0")
