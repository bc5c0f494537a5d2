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

from .. import errors

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ArrowData", "ipc_file_bytes"]

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
