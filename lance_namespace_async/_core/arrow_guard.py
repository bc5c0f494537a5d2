"""Arrow IPC from the network, checked in pure Python before any native decoder reads it.

An IPC message is a flatbuffer header plus a body, and the header says where each
buffer lies in the body and, for a compressed body, how large each buffer becomes.
Native decoders believe it: a buffer length patched to 2^50, or a zstd length prefix
patched to 2^40, made pylance's Rust decoder allocate that much and abort the whole
server, and a 537 KB zstd body legitimately decoded to 16 GiB. So, before pyarrow or
Rust sees a byte:

1. the framing is walked (continuation marker, metadata length, body length, all
   inside the bytes) and each ``Message`` flatbuffer is read with bounds checks;
2. every ``RecordBatch`` / ``DictionaryBatch`` has non-negative, bounded node
   lengths and null counts, buffers inside its body, a known codec, and its declared
   decoded size (buffer lengths, or the 8-byte uncompressed-length prefix of each
   compressed buffer) is summed against a limit;
3. only then does pyarrow decode, batch by batch, ``validate(full=True)`` each batch
   and count what it decoded against the same limit.

The server hands its backend only batches that passed all three, re-encoded by
pyarrow as an uncompressed stream (:func:`checked_body`); the REST client checks
QueryTable answers the same way with ``max_response_bytes`` as the limit
(:func:`check_answer`, :func:`read_answer`, :class:`AnswerDecoder`).

The flatbuffer reader is hand-written rather than the ``flatbuffers`` package: that
runtime has no verifier for Python and reads offsets unchecked (a negative one wraps
to the end of the buffer), so every read here needs its own bounds check anyway.
"""

from __future__ import annotations

import asyncio
import io
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import errors
from .arrow_data import ArrowData
from .observe import refused

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "DEFAULT_MAX_DECODED_BODY_BYTES",
    "AnswerDecoder",
    "DecodedBodyTooLargeError",
    "IpcFileDecoder",
    "check_answer",
    "check_decoded_limit",
    "checked_body",
    "checked_body_sync",
    "read_answer",
    "read_ipc_file",
]

#: the server's default limit on a request's decoded Arrow: 64 times the default wire
#: limit (1 MiB), past what lz4/zstd reach on real columns (2-10x), while a handful of
#: concurrent inserts still hold well under a GiB
DEFAULT_MAX_DECODED_BODY_BYTES = 64 * 1024 * 1024

_CONTINUATION = b"\xff\xff\xff\xff"
_FILE_MAGIC = b"ARROW1"
_EOS = _CONTINUATION + b"\x00\x00\x00\x00"
_SCHEMA, _DICTIONARY, _RECORD_BATCH = 1, 2, 3
_HEADERS = {_SCHEMA: "Schema", _DICTIONARY: "DictionaryBatch", _RECORD_BATCH: "RecordBatch"}
_CODECS = {0: "lz4_frame", 1: "zstd"}
_METADATA_VERSIONS = (3, 4)  # V4 and V5, what pyarrow and arrow-rs read
#: request bodies decoded at once; the others wait their turn. Each holds up to about
#: twice the limit (the re-encoded stream and its copy as bytes), so a burst of bombs
#: just under the limit holds a few hundred MiB, not one limit per connection
VALIDATIONS_AT_ONCE = 2
_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_UNLIMITED = 1 << 60  # a backend's own answer: checked and validated, not size-limited


class DecodedBodyTooLargeError(errors.InvalidInputError):
    """A request's Arrow decodes past ``max_decoded_body_bytes``: 413, code 13."""

    http_status = 413


class _Malformed(Exception):
    """The bytes are not well-formed Arrow IPC (the reason is the message)."""


class _TooLarge(Exception):
    """The bytes decode past the limit."""


def check_decoded_limit(value: object) -> int:
    """``max_decoded_body_bytes`` as given to ``create_app``/``serve``: an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.InvalidInputError("max_decoded_body_bytes must be an integer")
    if value < 1:
        raise errors.InvalidInputError("max_decoded_body_bytes must be >= 1")
    return value


# -- the flatbuffer reader ---------------------------------------------------------


def _int(buf: bytes, pos: int, size: int, *, signed: bool = False) -> int:
    if pos < 0 or pos + size > len(buf):
        raise _Malformed("a flatbuffer offset points outside the message metadata")
    return int.from_bytes(buf[pos : pos + size], "little", signed=signed)


class _Table:
    """One flatbuffer table: fields by index, each read with bounds checks."""

    __slots__ = ("buf", "pos", "vtable", "vtable_size")

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf = buf
        self.pos = pos
        self.vtable = pos - _int(buf, pos, 4, signed=True)
        self.vtable_size = _int(buf, self.vtable, 2)
        if (
            self.vtable_size < 4
            or self.vtable_size % 2
            or self.vtable + self.vtable_size > len(buf)
        ):
            raise _Malformed("a flatbuffer vtable is malformed")

    def _offset(self, index: int) -> int:
        slot = 4 + 2 * index
        if slot + 2 > self.vtable_size:
            return 0
        return _int(self.buf, self.vtable + slot, 2)

    def scalar(self, index: int, size: int, default: int, *, signed: bool = True) -> int:
        offset = self._offset(index)
        if offset == 0:
            return default
        return _int(self.buf, self.pos + offset, size, signed=signed)

    def table(self, index: int) -> _Table | None:
        offset = self._offset(index)
        if offset == 0:
            return None
        at = self.pos + offset
        return _Table(self.buf, at + _int(self.buf, at, 4))

    def structs(self, index: int, size: int) -> tuple[int, int]:
        """(start, count) of a vector of ``size``-byte structs; (0, 0) when absent."""
        offset = self._offset(index)
        if offset == 0:
            return 0, 0
        at = self.pos + offset
        vector = at + _int(self.buf, at, 4)
        count = _int(self.buf, vector, 4)
        if vector + 4 + count * size > len(self.buf):
            raise _Malformed("a flatbuffer vector runs past the message metadata")
        return vector + 4, count


# -- one message ----------------------------------------------------------------------


@dataclass
class _Budget:
    """What the messages so far declared: decoded bytes and rows, against the limit."""

    limit: int
    decoded: int = 0
    rows: int = 0

    @property
    def max_rows(self) -> int:
        # a bit-packed column of ``limit`` bytes holds 8 * limit values; more rows than
        # that can only be columns with no data (null type), which nobody needs by billions
        return 8 * self.limit

    def add(self, decoded: int, rows: int = 0) -> None:
        self.decoded += decoded
        self.rows += rows
        if self.decoded > self.limit:
            raise _TooLarge(f"the Arrow data decodes to more than {self.limit} bytes")
        if self.rows > self.max_rows:
            raise _TooLarge(f"the Arrow data declares more than {self.max_rows} rows")


@dataclass
class _Message:
    kind: int
    start: int  # where its framing begins
    framed: int  # bytes of prefix + metadata (the IPC file's Block.metaDataLength)
    body_length: int


def _frame(data: bytes, pos: int) -> tuple[int, int] | None:
    """(prefix, metadata length) of the message at ``pos``; None at end of stream."""
    if pos + 4 > len(data):
        raise _Malformed("the Arrow stream ends inside a message prefix")
    if data[pos : pos + 4] == _CONTINUATION:
        prefix, length = 8, _int(data, pos + 4, 4, signed=True)
    else:  # the format before 0.15: no continuation marker
        prefix, length = 4, _int(data, pos, 4, signed=True)
    if length == 0:
        return None
    if length < 0:
        raise _Malformed(f"an Arrow message declares a negative metadata length ({length})")
    return prefix, length


def _check_message(metadata: bytes, body: memoryview, budget: _Budget) -> tuple[int, int]:
    """(header kind, body length) of one message, its declared sizes added to ``budget``."""
    if len(metadata) < 4:
        raise _Malformed("an Arrow message's metadata is too short")
    message = _Table(metadata, _int(metadata, 0, 4))
    version = message.scalar(0, 2, 0)
    if version not in _METADATA_VERSIONS:
        raise _Malformed(f"unsupported Arrow metadata version {version}")
    kind = message.scalar(1, 1, 0, signed=False)
    if kind not in _HEADERS:
        raise _Malformed(f"an Arrow stream cannot carry a message of header type {kind}")
    header = message.table(2)
    if header is None:
        raise _Malformed("an Arrow message has no header")
    body_length = message.scalar(3, 8, 0)
    if body_length < 0:
        raise _Malformed(f"an Arrow message declares a negative body length ({body_length})")
    if body_length > len(body):
        raise _Malformed(
            f"an Arrow message declares a {body_length}-byte body; {len(body)} bytes follow it"
        )
    if kind == _SCHEMA:
        if body_length:
            raise _Malformed("an Arrow Schema message has a body")
        return kind, 0
    if kind == _DICTIONARY:
        batch = header.table(1)
        if batch is None:
            raise _Malformed("an Arrow DictionaryBatch has no data")
        _check_batch(batch, body[:body_length], budget, rows_count=False)
    else:
        _check_batch(header, body[:body_length], budget, rows_count=True)
    return kind, body_length


def _check_batch(batch: _Table, body: memoryview, budget: _Budget, *, rows_count: bool) -> None:
    length = batch.scalar(0, 8, 0)
    if length < 0:
        raise _Malformed(f"an Arrow batch declares {length} rows")
    start, count = batch.structs(1, 16)  # FieldNode {length: long, null_count: long}
    for at in range(start, start + 16 * count, 16):
        node_length = _int(batch.buf, at, 8, signed=True)
        null_count = _int(batch.buf, at + 8, 8, signed=True)
        if node_length < 0:
            raise _Malformed(f"an Arrow field node declares {node_length} values")
        if node_length > budget.max_rows:
            raise _TooLarge(f"an Arrow field node declares more than {budget.max_rows} values")
        if not 0 <= null_count <= node_length:
            raise _Malformed(f"an Arrow field node declares {null_count} nulls of {node_length}")
    compression = batch.table(3)
    compressed = compression is not None
    if compression is not None:
        codec = compression.scalar(0, 1, 0)
        if codec not in _CODECS:
            raise _Malformed(f"unknown Arrow compression codec {codec}")
        if compression.scalar(1, 1, 0) != 0:
            raise _Malformed("unknown Arrow body compression method")
    start, count = batch.structs(2, 16)  # Buffer {offset: long, length: long}
    decoded = 0
    for at in range(start, start + 16 * count, 16):
        offset = _int(batch.buf, at, 8, signed=True)
        length_ = _int(batch.buf, at + 8, 8, signed=True)
        if offset < 0 or length_ < 0 or offset + length_ > len(body):
            raise _Malformed(
                f"an Arrow buffer (offset {offset}, length {length_}) lies outside its "
                f"{len(body)}-byte body"
            )
        if compressed and length_:
            if length_ < 8:
                raise _Malformed("a compressed Arrow buffer is shorter than its length prefix")
            declared = int.from_bytes(body[offset : offset + 8], "little", signed=True)
            if declared < -1:
                raise _Malformed(f"a compressed Arrow buffer declares {declared} bytes")
            decoded += length_ - 8 if declared == -1 else declared
        else:
            decoded += length_
        if budget.decoded + decoded > budget.limit:  # stop at the first buffer past it
            budget.add(decoded)
    start, count_variadic = batch.structs(4, 8)  # variadicBufferCounts: [long]
    for at in range(start, start + 8 * count_variadic, 8):
        if not 0 <= _int(batch.buf, at, 8, signed=True) <= count:
            raise _Malformed("an Arrow batch declares more variadic buffers than it has")
    budget.add(decoded, length if rows_count else 0)


# -- a whole stream or file --------------------------------------------------------


@dataclass
class _Checked:
    """The messages of checked IPC bytes and where its stream part lies."""

    stream_start: int
    stream_end: int  # after the last message (before the EOS marker, if any)
    messages: list[_Message] = field(default_factory=list)


def _stream_start(data: bytes) -> int:
    """Where the messages begin: after the file magic and any zero padding."""
    if not data.startswith(_FILE_MAGIC):
        return 0
    pos = 8
    while data[pos : pos + 8] == bytes(8):  # arrow-rs aligns the first message to 64 bytes
        pos += 8
    return pos


def _walk(data: bytes, budget: _Budget) -> _Checked:
    view = memoryview(data)
    checked = _Checked(_stream_start(data), 0)
    pos = checked.stream_start
    schema_seen = False
    while pos < len(data):
        framing = _frame(data, pos)
        if framing is None:
            break
        prefix, length = framing
        meta_end = pos + prefix + length
        if meta_end > len(data):
            raise _Malformed("the Arrow stream ends inside a message's metadata")
        kind, body_length = _check_message(data[pos + prefix : meta_end], view[meta_end:], budget)
        if (kind == _SCHEMA) == schema_seen:
            raise _Malformed(
                "an Arrow stream has a second Schema message"
                if schema_seen
                else "an Arrow stream must begin with its Schema"
            )
        schema_seen = True
        checked.messages.append(_Message(kind, pos, prefix + length, body_length))
        pos = meta_end + body_length
    if not schema_seen:
        raise _Malformed("the bytes hold no Arrow Schema message")
    checked.stream_end = pos
    if checked.stream_start:
        _check_footer(data, checked)
    return checked


def _check_footer(data: bytes, checked: _Checked) -> None:
    """An IPC file's footer names exactly messages already checked (readers trust it)."""
    if len(data) < checked.stream_end + 10 or not data.endswith(_FILE_MAGIC):
        raise _Malformed("the Arrow file has no footer")
    length = _int(data, len(data) - 10, 4, signed=True)
    footer_start = len(data) - 10 - length
    if length < 4 or footer_start < checked.stream_end:
        raise _Malformed("the Arrow file's footer length is out of range")
    footer = data[footer_start : len(data) - 10]
    table = _Table(footer, _int(footer, 0, 4))
    by_start = {message.start: message for message in checked.messages}
    for index, kind in ((2, _DICTIONARY), (3, _RECORD_BATCH)):
        start, count = table.structs(index, 24)  # Block {offset, metaDataLength, bodyLength}
        for at in range(start, start + 24 * count, 24):
            message = by_start.get(_int(footer, at, 8, signed=True))
            if (
                message is None
                or message.kind != kind
                or _int(footer, at + 8, 4, signed=True) != message.framed
                or _int(footer, at + 16, 8, signed=True) != message.body_length
            ):
                raise _Malformed("the Arrow file's footer names a block that is no message")


# -- decoding what was checked ---------------------------------------------------------


class _DecodedCount:
    """Bytes of the decoded batches, each shared dictionary counted once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._dictionaries: set[tuple[int, int]] = set()

    def add(self, batch: pa.RecordBatch) -> None:
        size = batch.get_total_buffer_size()
        for column in batch.columns:
            dictionary = getattr(column, "dictionary", None)
            if dictionary is None:
                continue
            buffers = [buffer for buffer in dictionary.buffers() if buffer is not None]
            key = (buffers[-1].address, buffers[-1].size) if buffers else (0, 0)
            if key in self._dictionaries:  # the same dictionary as an earlier batch
                size -= dictionary.get_total_buffer_size()
            self._dictionaries.add(key)
        self.total += size
        if self.total > self.limit:
            raise _TooLarge(f"the Arrow data decodes to more than {self.limit} bytes")


def _decoded_batches(stream: Any, count: _DecodedCount) -> tuple[pa.Schema, Iterator[Any]]:
    """The schema and the fully validated batches of checked ``stream`` bytes (or a
    pyarrow buffer over them): the reader stops where the walk did, at the end-of-stream
    marker or at the end of the bytes."""
    import pyarrow as pa

    try:
        reader = pa.ipc.open_stream(
            stream if isinstance(stream, pa.Buffer) else pa.py_buffer(stream)
        )
    except Exception as exc:  # any failure of untrusted bytes is "malformed"
        raise _Malformed(f"the Arrow schema is invalid: {_reason(exc)}") from None

    def batches() -> Iterator[Any]:
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except Exception as exc:
                raise _Malformed(f"an Arrow batch is invalid: {_reason(exc)}") from None
            try:
                batch.validate(full=True)
            except Exception as exc:
                raise _Malformed(f"an Arrow batch is invalid: {_reason(exc)}") from None
            count.add(batch)
            yield batch

    return reader.schema, batches()


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _validated(data: bytes, limit: int) -> tuple[pa.Schema, Iterator[Any]]:
    """Walk all of ``data``, then its schema and its batches decoded one by one."""
    import pyarrow as pa

    checked = _walk(data, _Budget(limit))
    stream = pa.py_buffer(data).slice(checked.stream_start)  # no copy of the body
    return _decoded_batches(stream, _DecodedCount(limit))


# -- the server's side -------------------------------------------------------------


async def checked_body(raw: bytes, limit: int) -> ArrowData:
    """The rows of a request body, validated in full, as a fresh uncompressed stream.

    Malformed bytes are InvalidInput (400, code 13); more than ``limit`` decoded bytes
    is :class:`DecodedBodyTooLargeError` (413, code 13). What the backend gets was
    written by pyarrow from validated batches, never the client's bytes. The work (up
    to ``limit`` bytes decompressed and validated) runs on a worker thread, so the
    event loop keeps serving other requests meanwhile.
    """
    import anyio.to_thread

    loop = asyncio.get_running_loop()
    limiter = _LIMITERS.get(loop)
    if limiter is None:
        limiter = _LIMITERS[loop] = anyio.CapacityLimiter(VALIDATIONS_AT_ONCE)
    return await anyio.to_thread.run_sync(checked_body_sync, raw, limit, limiter=limiter)


def checked_body_sync(raw: bytes, limit: int) -> ArrowData:
    """:func:`checked_body` on the calling thread."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    try:
        schema, batches = _validated(raw, limit)
        with pa.ipc.new_stream(sink, schema) as writer:
            for batch in batches:  # each written, then dropped: one decoded batch at a time
                writer.write_batch(batch)
    except _TooLarge as exc:
        refused(413, "max_decoded_body_bytes")
        raise DecodedBodyTooLargeError(
            f"{exc}: past max_decoded_body_bytes ({limit} bytes)"
        ) from None
    except _Malformed as exc:
        raise errors.InvalidInputError(f"the request body is not valid Arrow IPC: {exc}") from None
    return ArrowData(schema, data=sink.getvalue().to_pybytes())


# -- the client's side -------------------------------------------------------------


def _answer_error(exc: Exception, limit: int) -> errors.InternalError:
    if isinstance(exc, _TooLarge):
        return errors.InternalError(
            f"the query answer decodes past max_response_bytes ({limit} bytes)"
        )
    return errors.InternalError(f"the query answer is not valid Arrow IPC: {exc}")


def check_answer(data: bytes, limit: int) -> None:
    """Check a QueryTable answer's structure and declared decoded size (no decoding);
    InternalError (code 18) when malformed or past ``limit``."""
    try:
        _walk(data, _Budget(limit))
    except (_Malformed, _TooLarge) as exc:
        raise _answer_error(exc, limit) from None


def read_answer(data: bytes, limit: int | None = None) -> pa.Table:
    """The table of a QueryTable answer (IPC file or stream), validated in full."""
    import pyarrow as pa

    budget = _UNLIMITED if limit is None else limit
    try:
        schema, batches = _validated(data, budget)
        return pa.Table.from_batches(list(batches), schema=schema)
    except (_Malformed, _TooLarge) as exc:
        raise _answer_error(exc, budget) from None


class AnswerDecoder:
    """Record batches of a QueryTable answer (IPC file or stream) fed chunk by chunk.

    Each message is checked as its bytes complete (framing first: a message declaring
    more than ``limit`` bytes is refused before it is buffered), then decoded by
    pyarrow with the schema and the dictionaries so far, and validated in full. What is
    held at once (the schema, the dictionaries, one batch) counts against ``limit``.
    """

    def __init__(self, limit: int | None = None) -> None:
        self._limit = _UNLIMITED if limit is None else limit
        self._buffer = bytearray()
        self._prefix = io.BytesIO()  # the schema and dictionary messages, as framed
        self._dictionaries = _Budget(self._limit)
        self._started = False
        self._padding = False
        self._done = False
        self._schema_seen = False

    def feed(self, chunk: bytes) -> list[pa.RecordBatch]:
        if self._done:
            return []
        self._buffer += chunk
        try:
            return self._messages()
        except (_Malformed, _TooLarge) as exc:
            self._done = True
            raise _answer_error(exc, self._limit) from None

    def finish(self) -> list[pa.RecordBatch]:
        """Require a complete answer (nothing left inside a message)."""
        if not self._done and (self._buffer or not self._schema_seen):
            raise errors.InternalError("the query answer ended inside an Arrow message")
        return []

    def _messages(self) -> list[pa.RecordBatch]:
        if not self._started:
            if len(self._buffer) < 8:
                return []
            self._started = True
            if self._buffer.startswith(_FILE_MAGIC):
                del self._buffer[:8]
                self._padding = True
        while self._padding and len(self._buffer) >= 8:
            if any(self._buffer[:8]):
                self._padding = False
            else:
                del self._buffer[:8]
        batches: list[pa.RecordBatch] = []
        while not self._padding and len(self._buffer) >= 8:
            framing = _frame(bytes(self._buffer[:8]), 0)
            if framing is None:  # end of stream: an IPC file's footer follows
                if not self._schema_seen:
                    raise _Malformed("the bytes hold no Arrow Schema message")
                self._done = True
                break
            prefix, length = framing
            if prefix + length > self._limit:
                raise _TooLarge(f"an Arrow message's metadata is larger than {self._limit}")
            if len(self._buffer) < prefix + length:
                break
            metadata = bytes(self._buffer[prefix : prefix + length])
            body_length = _declared_body_length(metadata)
            framed = prefix + length + body_length
            if framed > self._limit:
                raise _TooLarge(f"an Arrow message is larger than {self._limit} bytes")
            if len(self._buffer) < framed:
                break
            message = bytes(self._buffer[:framed])
            del self._buffer[:framed]
            batch = self._message(message, metadata, prefix + length)
            if batch is not None:
                batches.append(batch)
        return batches

    def _message(self, message: bytes, metadata: bytes, meta_end: int) -> pa.RecordBatch | None:
        body = memoryview(message)[meta_end:]
        if self._schema_seen:
            budget = _Budget(self._limit, self._dictionaries.decoded, self._dictionaries.rows)
        else:
            budget = self._dictionaries
        kind, _ = _check_message(metadata, body, budget)
        if (kind == _SCHEMA) == self._schema_seen:
            raise _Malformed(
                "an Arrow stream has a second Schema message"
                if self._schema_seen
                else "an Arrow stream must begin with its Schema"
            )
        self._schema_seen = True
        if kind != _RECORD_BATCH:  # held for every later batch, so counted for good
            self._dictionaries = budget
            self._prefix.write(message)
            return None
        stream = self._prefix.getvalue() + message + _EOS
        _, batches = _decoded_batches(stream, _DecodedCount(self._limit))
        decoded = list(batches)
        return decoded[0] if decoded else None


def _declared_body_length(metadata: bytes) -> int:
    """``Message.bodyLength``, read with bounds checks (>= 0)."""
    if len(metadata) < 4:
        raise _Malformed("an Arrow message's metadata is too short")
    length = _Table(metadata, _int(metadata, 0, 4)).scalar(3, 8, 0)
    if length < 0:
        raise _Malformed(f"an Arrow message declares a negative body length ({length})")
    return length


def read_ipc_file(data: bytes, limit: int | None = None) -> pa.Table:
    """The table of a QueryTable answer: an IPC file (or, leniently, an IPC stream),
    checked and validated in full first (above); InternalError else."""
    return read_answer(data, limit)


#: QueryTable answers decoded batch by batch as their bytes arrive (checked per message)
IpcFileDecoder = AnswerDecoder
