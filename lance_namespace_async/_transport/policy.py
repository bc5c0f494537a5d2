"""The retry policy, one for both paths (httpx's objects and the direct route).

Capped exponential backoff with full jitter on connection errors, on read timeouts
and broken connections of idempotent calls, and on 429, 502, 503 and 504, honouring
``Retry-After`` (seconds or HTTP date) and ``retry-after-ms`` up to a cap; never on
other 4xx. A retry whose wait would pass the call's deadline is not made. A
non-idempotent call retried after its request may have reached the server is marked
``retried_ambiguously`` (:func:`.failures.flag_ambiguous` says so in the error).
"""

from __future__ import annotations

import contextlib
import email.utils
import random
import time
from collections.abc import Awaitable, Callable

import anyio
import httpx

from .body import read_bounded
from .calls import _CALL, _R, CallState, call_timeouts
from .config import HttpConfig

__all__ = ["AMBIGUOUS_STATUSES", "RETRY_STATUSES"]


RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: statuses after which a non-idempotent request may have been applied
AMBIGUOUS_STATUSES = frozenset({502, 504})
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def _retry_after_seconds(headers: httpx.Headers, now: float | None = None) -> float | None:
    """The server's requested wait: ``retry-after-ms``, or ``Retry-After`` seconds/date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, parsed.timestamp() - (time.time() if now is None else now))


class _RetryingTransport(httpx.AsyncBaseTransport):
    """Retries beneath auth, so a refreshed token is used by every later attempt."""

    def __init__(self, inner: httpx.AsyncBaseTransport, config: HttpConfig) -> None:
        self._inner = inner
        self._config = config

    def _backoff(self, attempt: int) -> float:
        cap = self._config.retry_max_backoff_ms / 1000
        base = self._config.retry_backoff_ms / 1000
        return random.uniform(0, min(cap, base * (2**attempt)))

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            wanted = _retry_after_seconds(response.headers)
            if wanted is not None:
                return min(wanted, self._config.retry_after_max_ms / 1000)
        return self._backoff(attempt)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        state = _CALL.get() or CallState(idempotent=request.method in ("GET", "HEAD"))
        limit = state.max_response_bytes or self._config.max_response_bytes
        timeouts = call_timeouts()
        if timeouts is not None:
            request.extensions["timeout"] = timeouts
        # a streamed body (an Arrow reader's batches, sent chunked) can be sent once only
        retries = 0 if "transfer-encoding" in request.headers else self._config.max_retries

        async def attempt() -> httpx.Response:
            response = await self._inner.handle_async_request(request)
            await read_bounded(response, limit)  # a body cut off is a transport error too
            return response

        return await self.attempts(state, attempt, retries)

    async def attempts(
        self, state: CallState, attempt: Callable[[], Awaitable[_R]], retries: int
    ) -> _R:
        """``attempt()`` until an answer that is not retried: the one retry policy.

        Both paths use it: httpx's (``attempt`` sends an ``httpx.Request`` down the
        wire) and the direct one (:meth:`HttpTransport.exchange`, request bytes on
        the lean wire). ``attempt`` reads the whole answer within the size limit.
        """
        attempt_number = 0
        while True:
            state.attempts += 1
            try:
                response = await attempt()
            except httpx.TransportError as exc:
                reached_server = not isinstance(exc, _NOT_SENT)
                if attempt_number >= retries or (reached_server and not state.idempotent):
                    raise
                delay = self._delay(attempt_number, None)
                if self._past_deadline(state, delay):
                    raise  # the wait would outlast the call: end with what happened
                if reached_server:
                    state.retried_ambiguously = True
            else:
                if response.status_code not in RETRY_STATUSES or attempt_number >= retries:
                    state.response = response
                    return response
                delay = self._delay(attempt_number, response)
                if self._past_deadline(state, delay):
                    state.response = response
                    return response
                if response.status_code in AMBIGUOUS_STATUSES and not state.idempotent:
                    state.retried_ambiguously = True
            await anyio.sleep(delay)
            attempt_number += 1

    @staticmethod
    def _past_deadline(state: CallState, delay: float) -> bool:
        return state.deadline is not None and anyio.current_time() + delay >= state.deadline

    async def aclose(self) -> None:
        await self._inner.aclose()
