"""Glue and STS answers read within ``max_response_bytes``.

botocore parses an answer only once it has it whole, and aiobotocore's aiohttp session
reads it with no size limit: an endpoint (``endpoint``, ``sts_endpoint``) streaming
without end would be held in memory until the call's deadline. This session asks
aiobotocore for the answer as a stream and reads the body itself, chunk by chunk,
stopping past the limit; read failures become the botocore errors aiobotocore's own
read raises, so botocore retries them as before.
"""

from __future__ import annotations

import functools
from typing import Any

import aiohttp
from aiobotocore.httpsession import AIOHTTPSession
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

__all__ = ["AnswerTooLarge", "bounded_session"]


class AnswerTooLarge(Exception):
    """A Glue or STS answer went past ``max_response_bytes``; never retried."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than max_response_bytes ({limit} bytes)")


@functools.cache
def bounded_session(limit: int) -> type[AIOHTTPSession]:
    """aiobotocore's session class (``AioConfig(http_session_cls=...)``) reading at most
    ``limit`` bytes of each answer; one class per limit, not one per client made."""

    class BoundedSession(AIOHTTPSession):  # type: ignore[misc]
        async def send(self, request: Any) -> Any:
            if request.stream_output:  # the caller reads the stream itself
                return await super().send(request)
            request.stream_output = True
            try:
                response = await super().send(request)
            finally:
                request.stream_output = False
            raw: aiohttp.ClientResponse = response.raw
            try:
                response._content = await _read_within(raw, limit)
            except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
                raise ConnectionClosedError(
                    error=exc, request=request, endpoint_url=request.url
                ) from exc
            except TimeoutError as exc:  # aiohttp's sock_read timeout
                raise ReadTimeoutError(endpoint_url=request.url, error=exc) from exc
            finally:
                raw.release()  # read whole: back to the pool; else closed
            return response

    return BoundedSession


async def _read_within(raw: aiohttp.ClientResponse, limit: int) -> bytes:
    declared = raw.content_length
    if declared is not None and declared > limit:
        raw.close()
        raise AnswerTooLarge(limit)
    body = bytearray()
    async for chunk in raw.content.iter_any():
        body += chunk
        if len(body) > limit:
            raw.close()
            raise AnswerTooLarge(limit)
    return bytes(body)
