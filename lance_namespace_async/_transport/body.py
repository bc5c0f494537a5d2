"""Reading an HTTP answer's body within a size limit, whichever wire brought it.

Every answer is hostile until read: a catalog (or whatever answers in its
place) may send a body of any size. :func:`read_bounded` reads it into the
response under a limit (``max_response_bytes``) and stops as soon as the limit
is passed:

* a ``Content-Length`` over the limit is refused before a byte of body is read;
* bytes are counted while streaming (chunked answers have no length, and a
  length may lie);
* a compressed body is inflated by at most the remaining budget per step, so a
  gzip bomb stops after ``limit + 1`` bytes of output instead of expanding in
  memory first. Only gzip and deflate are requested (:data:`ACCEPT_ENCODING`):
  zlib can bound its output per step. An answer compressed in another scheme
  that expands (br, zstd) was not asked for and is refused.

Too large is :class:`~.errors.InternalError` (code 18): the server's answer is
unusable, as a malformed body is. It is not a caller's mistake (13), and not a
passing condition worth retrying (17): the same question gets the same answer.
The message names the key that raises the limit.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import anyio
import httpx

from .. import errors

__all__ = [
    "ACCEPT_ENCODING",
    "BoundedBody",
    "check_length",
    "read_bounded",
    "read_limited",
    "too_large",
]

#: the encodings asked of servers: those whose inflation can be bounded per step
ACCEPT_ENCODING = "gzip, deflate"

_INFLATED = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}
#: encodings httpx would inflate (without a bound) that are never requested
_REFUSED = frozenset({"br", "zstd", "compress", "x-compress"})


def too_large(limit: int) -> errors.InternalError:
    return errors.InternalError(
        f"the server's answer is larger than max_response_bytes ({limit} bytes); "
        "raise that key if the catalog really sends such answers"
    )


class _Inflater:
    """gzip or deflate, producing at most the budget it is given per step.

    deflate is tried zlib-wrapped and then raw, as httpx (and browsers) do,
    since servers send both under that name.
    """

    def __init__(self, encoding: str) -> None:
        self._wbits = _INFLATED[encoding]
        self._inflater = zlib.decompressobj(self._wbits)
        self._may_be_raw = self._wbits == zlib.MAX_WBITS

    def decode(self, data: bytes, budget: int) -> bytes:
        try:
            out = self._inflater.decompress(data, budget + 1)
        except zlib.error as exc:
            if not self._may_be_raw:
                raise httpx.DecodingError(f"invalid compressed body: {exc}") from None
            self._may_be_raw = False
            self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.decode(data, budget)
        self._may_be_raw = False
        return out

    def flush(self) -> bytes:
        """What the inflater still holds once every chunk was decoded within budget: all
        their input was consumed then, so nothing is left to inflate but zlib's last
        bytes. (``flush``'s ``length`` is no bound, only its first buffer's size: the
        budget there allocated ``max_response_bytes`` per answer, 40 us each.)"""
        try:
            return self._inflater.flush()
        except zlib.error as exc:
            raise httpx.DecodingError(f"invalid compressed body: {exc}") from None


def _inflater(codings: list[str]) -> _Inflater | None:
    """The bounded inflater of an answer's ``Content-Encoding`` values (comma-split)."""
    codings = [coding for coding in codings if coding and coding != "identity"]
    if not codings:
        return None  # most answers: not compressed
    refused = [coding for coding in codings if coding in _REFUSED]
    if refused:
        raise errors.InternalError(
            f"the server compressed its answer with {refused[0]!r}, which was not asked for "
            f"(Accept-Encoding: {ACCEPT_ENCODING})"
        )
    inflated = [coding for coding in codings if coding in _INFLATED]
    if len(inflated) > 1:
        raise errors.InternalError("the server compressed its answer more than once")
    return _Inflater(inflated[0]) if inflated else None  # unknown codings: as httpx, raw


def _codings(headers: httpx.Headers) -> list[str]:
    if "content-encoding" not in headers:
        return []
    return [value.strip().lower() for value in headers.get_list("content-encoding", True)]


def check_length(length: str | None, limit: int) -> None:
    """``too_large`` when the answer's ``Content-Length`` already says it is over ``limit``
    (before a byte of its body is read)."""
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise too_large(limit)


class BoundedBody:
    """One answer's body, decoded and counted as its chunks arrive: ``too_large`` once it
    passes ``limit`` bytes, on the wire or inflated (the caller closes the connection)."""

    def __init__(self, length: str | None, codings: list[str], limit: int) -> None:
        check_length(length, limit)
        self._inflater = _inflater(codings)
        self._limit = limit
        self._parts: list[bytes] = []
        self._raw = self._size = 0

    def feed(self, chunk: bytes) -> None:
        limit = self._limit
        self._raw += len(chunk)
        if self._raw > limit:
            raise too_large(limit)
        inflater = self._inflater
        data = chunk if inflater is None else inflater.decode(chunk, limit - self._size)
        self._size += len(data)
        if self._size > limit:
            raise too_large(limit)
        self._parts.append(data)

    def result(self) -> bytes:
        parts = self._parts
        if self._inflater is not None:
            tail = self._inflater.flush()
            if self._size + len(tail) > self._limit:
                raise too_large(self._limit)
            parts.append(tail)
        if not parts:
            return b""
        return parts[0] if len(parts) == 1 else b"".join(parts)


async def read_limited(
    chunks: AsyncIterator[bytes], length: str | None, codings: list[str], limit: int
) -> bytes:
    """The decoded body ``chunks`` make, or ``too_large`` once it passes ``limit`` bytes.

    The one bounded read of both paths: :func:`read_bounded` (an httpx response of
    any wire) and the lean wire's direct exchange (which feeds an answer already
    whole to :class:`BoundedBody` without iterating). The caller closes the
    connection when this raises.
    """
    body = BoundedBody(length, codings, limit)
    async for chunk in chunks:
        body.feed(chunk)
    return body.result()


async def _close(response: httpx.Response) -> None:
    """Close (not reuse) the connection of an answer left unread, even when cancelled."""
    with anyio.CancelScope(shield=True):
        await response.aclose()


async def _raw_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """``response.aiter_raw()`` without its re-chunking layer: the wire's chunks as they
    come, failures carrying the request, the response closed (its connection
    released) at the end."""
    if response.is_stream_consumed:
        raise httpx.StreamConsumed()
    if response.is_closed:
        raise httpx.StreamClosed()
    stream = response.stream
    if not isinstance(stream, httpx.AsyncByteStream):
        raise RuntimeError("Attempted to call an async iterator on an sync stream.")
    response.is_stream_consumed = True
    downloaded = 0
    try:
        async for chunk in stream:
            downloaded += len(chunk)
            response._num_bytes_downloaded = downloaded
            if chunk:
                yield chunk
    except httpx.RequestError as exc:
        if response._request is not None:
            exc.request = response._request  # as aiter_raw's request_context does
        raise
    await response.aclose()


async def read_bounded(response: httpx.Response, limit: int) -> None:
    """Read ``response``'s body (decoded) into it, or raise once it passes ``limit`` bytes.

    Afterwards ``response.content`` is the decoded body and httpx reads nothing
    more. Failures while reading are httpx errors, as they would be from httpx.
    """
    try:
        body = await read_limited(
            _raw_chunks(response),
            response.headers.get("content-length"),
            _codings(response.headers),
            limit,
        )
    except BaseException:
        await _close(response)
        raise
    # httpx's own read returns this attribute when set: the body is not read twice
    response._content = body
