"""Arrow rows as users hold them, and as the protocol carries them.

CreateTable, InsertIntoTable and MergeInsertIntoTable carry an Arrow IPC *stream*;
QueryTable answers with an Arrow IPC *file*. Users hold a ``pyarrow.Table``, a
``RecordBatchReader`` or IPC bytes, so the public coroutines take any of those as
``data`` and no caller writes IPC by hand. :class:`ArrowData` checks the argument
before any I/O (a wrong type or bytes that are not IPC are InvalidInput, code 13)
and gives each backend the form it needs: bytes (pylance, a retryable HTTP body) or
chunks produced batch by batch (a streamed HTTP body for a reader).
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from . import errors

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ArrowData", "ipc_file_bytes", "read_ipc_file"]

_FILE_MAGIC = b"ARROW1"


class ArrowData:
    """The rows of a data-bearing operation; build it with :meth:`of`."""

    __slots__ = ("_bytes", "_reader", "schema")

    def __init__(self, schema: pa.Schema, *, data: bytes | None, reader: Any = None) -> None:
        self.schema = schema
        self._bytes = data
        self._reader = reader

    @classmethod
    def of(cls, data: object) -> ArrowData:
        """Accept a Table, RecordBatch, RecordBatchReader, IPC stream/file bytes or ArrowData."""
        import pyarrow as pa

        if isinstance(data, ArrowData):
            return data
        if isinstance(data, pa.Table | pa.RecordBatch):
            table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
            return cls(table.schema, data=_stream_bytes(table))
        if isinstance(data, pa.RecordBatchReader):
            return cls(data.schema, data=None, reader=data)
        if isinstance(data, bytes | bytearray | memoryview):
            raw = bytes(data)
            try:
                if raw.startswith(_FILE_MAGIC):  # an IPC file: re-framed as the stream
                    table = pa.ipc.open_file(pa.BufferReader(raw)).read_all()
                    return cls(table.schema, data=_stream_bytes(table))
                schema = pa.ipc.open_stream(pa.BufferReader(raw)).schema
            except (pa.ArrowInvalid, OSError, ValueError):
                raise errors.InvalidInputError(
                    "data is not an Arrow IPC stream (nor an IPC file)"
                ) from None
            return cls(schema, data=raw)
        if data is None:
            raise errors.InvalidInputError("data is required: a pyarrow.Table, a reader or bytes")
        raise errors.InvalidInputError(
            "data must be a pyarrow.Table, RecordBatch, RecordBatchReader or Arrow IPC bytes, "
            f"got {type(data).__name__}"
        )

    @property
    def is_stream(self) -> bool:
        """True for a reader: its batches can be read only once."""
        return self._bytes is None

    def to_bytes(self) -> bytes:
        """The whole IPC stream (a reader is drained)."""
        if self._bytes is None:
            self._bytes = b"".join(self._chunks())
            self._reader = None
        return self._bytes

    def _chunks(self) -> Iterator[bytes]:
        import pyarrow as pa

        reader, self._reader = self._reader, None
        if reader is None:
            raise errors.InvalidInputError("the rows of this RecordBatchReader were already sent")
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, reader.schema) as writer:
            for batch in reader:
                writer.write_batch(batch)
                yield _take(sink)
        yield _take(sink)

    async def aiter_chunks(self) -> AsyncIterator[bytes]:
        """The IPC stream in pieces, one batch at a time, read on a worker thread."""
        if self._bytes is not None:
            yield self._bytes
            return
        chunks = self._chunks()
        while True:
            chunk = await anyio.to_thread.run_sync(next, chunks, None)
            if chunk is None:
                return
            if chunk:
                yield chunk

    def read_all(self) -> pa.Table:
        import pyarrow as pa

        return pa.ipc.open_stream(pa.BufferReader(self.to_bytes())).read_all()


def _take(sink: io.BytesIO) -> bytes:
    chunk = sink.getvalue()
    sink.seek(0)
    sink.truncate()
    return chunk


def _stream_bytes(table: pa.Table) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def ipc_file_bytes(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC file (the QueryTable answer)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def read_ipc_file(data: bytes) -> pa.Table:
    """The table of a QueryTable answer: an IPC file (or, leniently, an IPC stream)."""
    import pyarrow as pa

    try:
        if data.startswith(_FILE_MAGIC):
            return pa.ipc.open_file(pa.BufferReader(data)).read_all()
        return pa.ipc.open_stream(pa.BufferReader(data)).read_all()
    except (pa.ArrowInvalid, OSError, ValueError):
        raise errors.InternalError("the query answer is not Arrow IPC data") from None


class IpcFileDecoder:
    """Record batches of an Arrow IPC file (or stream) fed to it chunk by chunk.

    QueryTable answers with an IPC *file*, whose footer comes last; its messages
    before the footer are exactly an IPC stream, so batches can be decoded as their
    bytes arrive (the streaming variant of QueryTable). A message is framed by its
    metadata length, and its body length is read from the flatbuffer ``Message``.
    Dictionary-encoded answers are decoded at the end, in one piece.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._raw = bytearray()
        self._schema: Any = None
        self._started = False
        self._done = False
        self._whole = False  # dictionaries met: decode everything at the end
        self._padding = False

    def feed(self, chunk: bytes) -> list[pa.RecordBatch]:
        self._raw += chunk
        if self._whole or self._done:
            return []
        self._buffer += chunk
        if not self._started:
            if len(self._buffer) < 8:
                return []
            if self._buffer.startswith(_FILE_MAGIC):
                del self._buffer[:8]
                self._padding = True
            self._started = True
        while self._padding and len(self._buffer) >= 8:
            # writers may align the first message (arrow-rs to 64 bytes): zero padding
            if any(self._buffer[:8]):
                self._padding = False
            else:
                del self._buffer[:8]
        if self._padding:
            return []
        return self._messages()

    def finish(self) -> list[pa.RecordBatch]:
        """The batches not yielded yet (all of them for a dictionary-encoded answer)."""
        if self._whole:
            batches: list[pa.RecordBatch] = read_ipc_file(bytes(self._raw)).to_batches()
            return batches
        if not self._done and (self._buffer or self._schema is None):
            raise errors.InternalError("the query answer ended inside an Arrow message")
        return []

    def _messages(self) -> list[pa.RecordBatch]:
        import pyarrow as pa

        batches: list[pa.RecordBatch] = []
        while True:
            framed = _framed_size(self._buffer)
            if framed is None:
                return batches
            if framed == 0:  # end of stream: the file's footer follows
                self._done = True
                return batches
            if len(self._buffer) < framed:
                return batches
            message = pa.ipc.read_message(pa.py_buffer(bytes(self._buffer[:framed])))
            del self._buffer[:framed]
            if message.type == "schema":
                self._schema = pa.ipc.read_schema(message)
            elif message.type == "record batch" and self._schema is not None:
                batches.append(pa.ipc.read_record_batch(message, self._schema))
            else:
                self._whole = True
                return []


def _framed_size(buffer: bytearray) -> int | None:
    """Bytes of the next IPC message (prefix, metadata, body); 0 at end of stream."""
    if len(buffer) < 8:
        return None
    if buffer[:4] == b"\xff\xff\xff\xff":
        prefix, length = 8, int.from_bytes(buffer[4:8], "little", signed=True)
    else:  # the format before 0.15: no continuation marker
        prefix, length = 4, int.from_bytes(buffer[0:4], "little", signed=True)
    if length == 0:
        return 0
    if len(buffer) < prefix + length:
        return None
    return prefix + length + _body_length(bytes(buffer[prefix : prefix + length]))


def _body_length(metadata: bytes) -> int:
    """``Message.bodyLength`` (field 3) of the flatbuffer ``metadata``."""
    table = int.from_bytes(metadata[0:4], "little")
    vtable = table - int.from_bytes(metadata[table : table + 4], "little", signed=True)
    vtable_size = int.from_bytes(metadata[vtable : vtable + 2], "little")
    slot = 4 + 2 * 3
    if slot + 2 > vtable_size:
        return 0
    offset = int.from_bytes(metadata[vtable + slot : vtable + slot + 2], "little")
    if offset == 0:
        return 0
    return int.from_bytes(metadata[table + offset : table + offset + 8], "little", signed=True)
