"""One logical call for the transport: its :class:`CallState`, its deadline, its answer.

:class:`CallState` is what a call asks (idempotent or not, extra headers, a size
limit) and what happened to it (attempts, an ambiguous retry); :class:`_CallScope`
puts it in context for the whole call and ends the call at its deadline;
:class:`Answer` is a whole answer of the direct path (:mod:`.direct`).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
from typing import Any, TypeVar

import anyio
import attrs
import httpx
import orjson

from .. import errors
from .._core.observe import BackendCall, backend_call
from .._core.timeout import UseDefault, current_timeout

__all__ = ["Answer", "CallState", "call_timeouts"]


@attrs.define
class CallState:
    """What one logical call asks of the transport, and what happened to it.

    ``max_response_bytes`` is the hook for calls whose answers may be larger than
    the configured limit (Arrow data): they pass their own; ``None`` is the
    configured one. ``deadline`` (``anyio.current_time()`` clock) ends the call.
    """

    idempotent: bool
    headers: dict[str, str] = attrs.field(factory=dict)
    max_response_bytes: int | None = None
    deadline: float | None = None
    attempts: int = 0
    retried_ambiguously: bool = False
    #: the last answer (on the direct path an :class:`Answer`)
    response: httpx.Response | None = None


#: an answer of either path: ``httpx.Response`` or the direct path's :class:`Answer`
_R = TypeVar("_R", bound=httpx.Response)


class Answer(httpx.Response):
    """A whole answer of the direct path (:meth:`HttpTransport.exchange`).

    An ``httpx.Response`` (already read and closed) for whoever reads it, made
    without httpx's constructor: the headers stay the wire's raw list until
    something asks for them.
    """

    def __init__(  # httpx's __init__ would build what is not needed
        self,
        status_code: int,
        reason: bytes,
        raw_headers: list[tuple[bytes, bytes]],
        content: bytes,
    ) -> None:
        self.status_code = status_code
        self.raw_headers = raw_headers
        self._parsed_headers: httpx.Headers | None = None
        self._content = content
        self._request = None
        self.next_request = None
        self.extensions = {"http_version": b"HTTP/1.1", "reason_phrase": reason}
        self.history = []
        self.is_closed = True
        self.is_stream_consumed = True
        self.default_encoding = "utf-8"
        self._num_bytes_downloaded = len(content)

    @property
    def headers(self) -> httpx.Headers:
        if self._parsed_headers is None:
            self._parsed_headers = httpx.Headers(self.raw_headers)
        return self._parsed_headers

    @headers.setter
    def headers(self, value: httpx.Headers) -> None:
        self._parsed_headers = value

    @property
    def stream(self) -> httpx.ByteStream:  # type: ignore[override]
        return httpx.ByteStream(self._content)

    def header_items(self) -> list[tuple[str, str]]:
        """``headers.items()`` (lower-case names, repeated ones joined with ", ")."""
        if self._parsed_headers is None:
            merged: dict[str, str] = {}
            try:
                for name, value in self.raw_headers:
                    key = name.decode("ascii").lower()
                    text = value.decode("ascii")
                    merged[key] = f"{merged[key]}, {text}" if key in merged else text
            except UnicodeDecodeError:
                pass  # httpx's Headers decide the encoding
            else:
                return list(merged.items())
        return list(self.headers.items())

    def json(self, **kwargs: Any) -> Any:
        """The body as JSON: orjson (a third of ``json``'s CPU; nesting past 1,024 levels
        is its ``JSONDecodeError``, a ``ValueError``, where ``json`` would recurse)."""
        if kwargs:
            return json.loads(self._content, **kwargs)
        return orjson.loads(self._content)


def call_timeouts() -> dict[str, float | None] | None:
    """The step timeouts a per-call ``timeout`` asks for (httpx's dict), or ``None``
    when the call keeps the configured ones."""
    timeout = current_timeout()
    if isinstance(timeout, UseDefault):
        return None
    if timeout is None:
        return httpx.Timeout(None).as_dict()
    return httpx.Timeout(
        connect=timeout.connect, read=timeout.read, write=timeout.write, pool=timeout.pool
    ).as_dict()


_CALL: contextvars.ContextVar[CallState | None] = contextvars.ContextVar(
    "lance_namespace_async_call", default=None
)


class _CallScope:
    """The deadline of one call (:meth:`HttpTransport.call`), and its ``CallState`` in context.

    On asyncio the deadline is one timer that cancels the call's task, undone on
    the way out as ``asyncio.timeout`` does (a tenth of an anyio ``CancelScope``'s
    CPU per call); elsewhere (trio) an anyio ``CancelScope`` keeps it. Either way
    the call ends with ``ServiceUnavailableError`` when the deadline passes, and a
    cancellation from outside stays a cancellation.
    """

    __slots__ = (
        "_backend",
        "_cancelling",
        "_expired",
        "_handle",
        "_observed",
        "_scope",
        "_task",
        "_token",
        "_total",
        "_what",
        "state",
    )

    def __init__(
        self, state: CallState, total: float | None, what: str, backend: str = "http"
    ) -> None:
        self.state = state
        self._total = total
        self._what = what
        self._backend = backend
        self._observed: BackendCall | None = None
        self._task: asyncio.Task[Any] | None = None
        self._expired = False
        self._cancelling = 0
        self._handle: asyncio.TimerHandle | None = None
        self._scope: anyio.CancelScope | None = None
        self._token: contextvars.Token[CallState | None] | None = None

    def __enter__(self) -> CallState:
        state, total = self.state, self._total
        # observed once per call, not per attempt: its latency is what the operation waited
        # (retries and backoff included) and every attempt carries the same traceparent
        observed = self._observed = backend_call(self._backend, "catalog_http", "call", self._what)
        observed.__enter__()
        propagated = observed.headers()
        if propagated:
            state.headers.update(propagated)
        try:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task(loop)
        except RuntimeError:  # no asyncio loop here (trio)
            task = None
        self._task = task
        self._expired = False
        self._handle = None
        self._scope = None
        if task is None:
            scope = self._scope = anyio.CancelScope(
                deadline=math.inf if total is None else anyio.current_time() + total
            )
            state.deadline = None if total is None else scope.deadline
            self._token = _CALL.set(state)
            scope.__enter__()
            return state
        self._cancelling = task.cancelling()
        if total is not None:
            state.deadline = loop.time() + total  # anyio.current_time() on asyncio
            self._handle = loop.call_at(state.deadline, self._expire)
        self._token = _CALL.set(state)
        return state

    def _expire(self) -> None:
        if self._task is not None and not self._task.done():
            self._expired = True
            self._task.cancel()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if self._token is not None:
            _CALL.reset(self._token)
        if self._observed is not None:
            self._observed.__exit__(exc_type, exc, tb)
            self._observed = None
        if self._scope is not None:
            self._scope.__exit__(exc_type, exc, tb)
            if not self._scope.cancelled_caught:
                return
        else:
            if self._handle is not None:
                self._handle.cancel()
            if not self._expired:
                return
            assert self._task is not None
            # undo our cancellation; the call timed out if it was the only one
            ours_alone = self._task.uncancel() <= self._cancelling
            if not (
                ours_alone and exc_type is not None and issubclass(exc_type, asyncio.CancelledError)
            ):
                return
        raise errors.ServiceUnavailableError(
            f"{self._what}: timed out (the call's deadline of {self._total:g} s passed)"
        ) from None
