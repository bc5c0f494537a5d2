"""Is a namespace's backend answering? The probe behind the server's ``/readyz``.

A backend is *ready* when one cheap call reaches its catalog and comes back within a
deadline. The call is ListNamespaces of the root with a page limit of 1 (one small
request to every catalog: a REST ``GET``, Glue's ``GetDatabases``, Hive's
``get_all_databases``, a read of a directory's ``__manifest``), unless the namespace
declares its own with an ``async def ready_probe(self) -> None`` method.

A namespace made of several parts (a server mounting several catalogs) reports each
part by implementing :class:`ReadinessParts`: ``readiness_parts()`` names its parts,
each probed on its own and concurrently, so one slow catalog neither hides nor
delays the others. Parts may have parts; their names are joined with ``/``.

What counts as an answer: a result, or a typed error that proves the catalog read the
request (not found, unsupported, throttled). Everything else is *not ready*: the
deadline passing, a refused connection, 5xx answers, and the catalog refusing the
server's own credentials (401/403: every client request would fail the same way).
A reason is a fixed word and the error's class and code, never its message: messages
can hold URLs, hosts and paths, and ``/readyz`` answers without a token.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from .. import errors
from ..models import ListNamespacesRequest

if TYPE_CHECKING:
    from .base import AsyncLanceNamespace

__all__ = [
    "DEFAULT_READY_TIMEOUT",
    "PartReadiness",
    "ReadinessParts",
    "probe_part",
    "readiness_targets",
]

#: seconds a backend gets to answer the readiness call (``--ready-timeout``)
DEFAULT_READY_TIMEOUT = 2.0

#: typed errors that prove the catalog read the request and answered it
_ANSWERS: tuple[type[errors.LanceNamespaceError], ...] = (
    errors.NotFoundError,
    errors.UnsupportedOperationError,
    errors.ThrottlingError,
)


@runtime_checkable
class ReadinessParts(Protocol):
    """A namespace of several parts (mounts), each of which is probed and reported."""

    def readiness_parts(self) -> Mapping[str, AsyncLanceNamespace]:
        """The parts by name; each name appears in ``/readyz`` as it is given here."""
        ...


@attrs.frozen
class PartReadiness:
    """One part's answer: ``reason`` is None when ready, else a word, class and code."""

    name: str
    ready: bool
    seconds: float
    reason: str | None = None

    def to_dict(self) -> dict[str, object]:
        shown: dict[str, object] = {
            "name": self.name,
            "ready": self.ready,
            "ms": round(self.seconds * 1000, 1),
        }
        if self.reason is not None:
            shown["reason"] = self.reason
        return shown


def readiness_targets(
    namespace: AsyncLanceNamespace, prefix: str = ""
) -> list[tuple[str, AsyncLanceNamespace]]:
    """Every part to probe, by name: ``backend`` alone, or the parts (recursively)."""
    if not isinstance(namespace, ReadinessParts):
        return [(prefix or "backend", namespace)]
    found: list[tuple[str, AsyncLanceNamespace]] = []
    for part_name, part in namespace.readiness_parts().items():
        found.extend(readiness_targets(part, f"{prefix}/{part_name}" if prefix else part_name))
    return found


async def _cheap_call(namespace: AsyncLanceNamespace, timeout: float) -> None:
    declared = getattr(namespace, "ready_probe", None)
    if declared is not None:
        await declared()
        return
    # the per-call timeout bounds HTTP retries too; asyncio's bounds everything else
    await namespace.list_namespaces(ListNamespacesRequest(id=[], limit=1), timeout=timeout)


async def probe_part(name: str, namespace: AsyncLanceNamespace, timeout: float) -> PartReadiness:
    """Run the cheap call of one part within ``timeout`` seconds; never raises an Exception."""
    start = time.monotonic()
    reason: str | None = None
    try:
        async with asyncio.timeout(timeout):
            await _cheap_call(namespace, timeout)
    except TimeoutError:
        reason = f"timeout: no answer within {timeout:g} s"
    except _ANSWERS:
        pass
    except errors.LanceNamespaceError as exc:
        reason = f"unavailable: {type(exc).__name__} (code {int(exc.code)})"
    except Exception as exc:  # an untyped failure of a backend is still "not ready"
        reason = f"unavailable: {type(exc).__name__}"
    return PartReadiness(name, reason is None, time.monotonic() - start, reason)
