"""Arrow IPC from the network is checked in full before native code reads it (issue 27).

Three layers, each with the same crafted attacks (bytes built here from pyarrow's own
output, then patched: a buffer length of 2^50, a zstd length prefix of 2^40, a real zstd
bomb of 16 GiB in < 1 MiB, negative lengths, truncated bodies, buffers past their body):

* the validator alone (``lance_namespace_async._core.arrow_guard``), and valid streams and
  files round-tripping exactly, compressed or not, with dictionaries and nested types;
* the real ``lance-ns serve --impl dir`` process (tests/serve_process.py) started under
  ``prlimit --as`` with a bearer token: every attack on CreateTable, InsertIntoTable and
  MergeInsertIntoTable is 400/code 13 (413 past ``max_decoded_body_bytes``), the PID stays
  alive and answering, and its RSS read from /proc stays bounded;
* the REST client against a tiny in-test uvicorn server answering QueryTable with the
  crafted IPC: the client runs in a subprocess under ``prlimit --as``, and every answer
  is InternalError (code 18), with its peak RSS bounded.
"""

from __future__ import annotations

import functools
import json
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from serve_process import ServeProcess, lance_ns_serve

from lance_namespace_async import errors
from lance_namespace_async._core import arrow_guard as guard

ROWS = 12345  # a row count no other field of the metadata holds
LIMIT = 64 * 1024 * 1024
TOKEN = "arrow-guard-token"
ADDRESS_SPACE = 5 * 1024**3  # lance-ns serve maps ~2.5 GiB once pylance's runtime is up
RSS_GROWTH_MB = 300


# -- crafting --------------------------------------------------------------------------


def stream(table: pa.Table, compression: str | None = None) -> bytes:
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def ipc_file(table: pa.Table, compression: str | None = None) -> bytes:
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def ids(rows: int = ROWS) -> pa.Table:
    return pa.table({"id": pa.array(range(rows), pa.int64())})


def body_start(data: bytes, index: int) -> int:
    """Where the body of message ``index`` begins (framing read as the format says)."""
    pos = 0
    for number in range(index + 1):
        assert data[pos : pos + 4] == b"\xff\xff\xff\xff"
        metadata = struct.unpack_from("<i", data, pos + 4)[0]
        message = pa.ipc.read_message(pa.py_buffer(data[pos:]))
        if number == index:
            return pos + 8 + metadata
        pos += 8 + metadata + message.body.size
    raise AssertionError("unreachable")


def patched(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, f"{old.hex()} occurs {data.count(old)} times"
    return data.replace(old, new)


def buffer_length_2_50() -> bytes:
    return patched(stream(ids()), struct.pack("<qq", 0, ROWS * 8), struct.pack("<qq", 0, 2**50))


def zstd_prefix_2_40() -> bytes:
    data = bytearray(stream(ids(), "zstd"))
    start = body_start(bytes(data), 1)  # the data buffer opens the body (no validity)
    assert struct.unpack_from("<q", data, start)[0] == ROWS * 8
    struct.pack_into("<q", data, start, 2**40)
    return bytes(data)


@functools.cache
def zstd_bomb() -> bytes:
    """An honest zstd batch of 2^31 int64 zeros (16 GiB) in about 0.5 MB: concatenated
    zstd frames decode as one, so one 64 MiB frame repeated 256 times."""
    frame = pa.compress(bytes(64 * 1024 * 1024), codec="zstd", asbytes=True)
    compressed = struct.pack("<q", 2**34) + frame * 256
    body = compressed + bytes(-len(compressed) % 8)
    original = stream(ids(), "zstd")
    start, end = _message_start(original, 1), body_start(original, 1)
    message = pa.ipc.read_message(pa.py_buffer(original[start:]))
    metadata = original[start:end]
    compressed_length = _data_buffer_length(metadata, message.body.size)
    metadata = patched(
        metadata,
        struct.pack("<qq", 0, compressed_length),
        struct.pack("<qq", 0, len(compressed)),
    )
    metadata = metadata.replace(struct.pack("<q", ROWS), struct.pack("<q", 2**31))
    metadata = patched(metadata, struct.pack("<q", message.body.size), struct.pack("<q", len(body)))
    bomb = original[:start] + metadata + body + bytes(8)
    assert len(bomb) < 1024 * 1024
    return bomb


def _message_start(data: bytes, index: int) -> int:
    pos = 0
    for _ in range(index):
        metadata = struct.unpack_from("<i", data, pos + 4)[0]
        pos += 8 + metadata + pa.ipc.read_message(pa.py_buffer(data[pos:])).body.size
    return pos


def _data_buffer_length(metadata: bytes, body_size: int) -> int:
    """The compressed data buffer's length: the body's size less its padding."""
    found = [n for n in range(body_size - 7, body_size + 1) if struct.pack("<qq", 0, n) in metadata]
    assert len(found) == 1
    return found[0]


def negative_node_length() -> bytes:
    return patched(stream(ids()), struct.pack("<qq", ROWS, 0), struct.pack("<qq", -1, 0))


def negative_buffer_length() -> bytes:
    return patched(stream(ids()), struct.pack("<qq", 0, ROWS * 8), struct.pack("<qq", 0, -8))


def negative_metadata_length() -> bytes:
    data = bytearray(stream(ids()))
    struct.pack_into("<i", data, _message_start(bytes(data), 1) + 4, -16)
    return bytes(data)


def negative_body_length() -> bytes:
    data = bytearray(stream(ids()))
    start, end = _message_start(bytes(data), 1), body_start(bytes(data), 1)
    buffer = data.index(struct.pack("<qq", 0, ROWS * 8), start) + 8
    found = [
        at
        for at in range(start, end - 7)
        if data[at : at + 8] == struct.pack("<q", ROWS * 8) and at != buffer
    ]
    assert len(found) == 1  # Message.bodyLength, beside the data buffer's length
    struct.pack_into("<q", data, found[0], -(2**40))
    return bytes(data)


def truncated_body() -> bytes:
    data = stream(ids())
    return data[: body_start(data, 1) + ROWS * 4]


def buffer_past_body() -> bytes:
    return patched(
        stream(ids()), struct.pack("<qq", 0, ROWS * 8), struct.pack("<qq", ROWS * 8, ROWS * 8)
    )


def billions_of_null_rows() -> bytes:
    """A null-typed column needs no bytes; 2^40 rows of it is still no table to write."""
    data = stream(pa.table({"n": pa.nulls(ROWS)}))
    return data.replace(struct.pack("<q", ROWS), struct.pack("<q", 2**40))


def unknown_codec() -> bytes:
    """A zstd batch whose BodyCompression codec says 7 (there are two: lz4 0, zstd 1)."""
    data = bytearray(stream(ids(), "zstd"))
    start, end = _message_start(bytes(data), 1), body_start(bytes(data), 1)
    metadata = bytes(data[start + 8 : end])
    # located with the module's reader: a flatbuffer field has no fixed place
    message = guard._Table(metadata, struct.unpack_from("<I", metadata)[0])
    compression = message.table(2).table(3)  # type: ignore[union-attr]
    assert compression is not None
    assert compression.scalar(0, 1, 0) == 1
    codec = compression.pos + compression._offset(0)
    data[start + 8 + codec] = 7
    return bytes(data)


def lying_footer() -> bytes:
    """An IPC file whose footer points its record batch at the schema message."""
    data = ipc_file(ids())
    start, end = _message_start(data[8:], 1), body_start(data[8:], 1)
    block = struct.pack("<qi4xq", start + 8, end - start, ROWS * 8)
    return patched(data, block, struct.pack("<qi4xq", 8, end - start, ROWS * 8))


MALFORMED = {
    "buffer length 2^50": buffer_length_2_50,
    "negative node length": negative_node_length,
    "negative buffer length": negative_buffer_length,
    "negative metadata length": negative_metadata_length,
    "negative body length": negative_body_length,
    "truncated body": truncated_body,
    "unknown compression codec": unknown_codec,
    "buffer past its body": buffer_past_body,
    "not Arrow at all": lambda: b"definitely not an arrow stream",
}
#: declared sizes past the limit: too large (413 on the server), whether true or a lie
TOO_LARGE = {
    "zstd prefix 2^40": zstd_prefix_2_40,
    "zstd bomb of 16 GiB": zstd_bomb,
    "2^40 null rows": billions_of_null_rows,
}


def valid_tables() -> Iterator[pa.Table]:
    rows = 3000
    yield pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "name": pa.array([f"n{i % 13}" for i in range(rows)]).dictionary_encode(),
            "tags": pa.array([[i, None, i + 1] for i in range(rows)], pa.list_(pa.int32())),
            "point": pa.array([{"x": float(i), "label": None} for i in range(rows)]),
            "vec": pa.array([[0.5, float(i)] for i in range(rows)], pa.list_(pa.float32(), 2)),
            "maybe": pa.array([None if i % 3 else i for i in range(rows)], pa.int16()),
        }
    )
    yield pa.table({"empty": pa.array([], pa.string())})


# -- the validator alone ---------------------------------------------------------------


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
@pytest.mark.parametrize("framing", [stream, ipc_file])
def test_a_valid_stream_or_file_round_trips_exactly(
    compression: str | None, framing: Callable[[pa.Table, str | None], bytes]
) -> None:
    for table in valid_tables():
        data = framing(table, compression)
        sent = guard.checked_body_sync(data, LIMIT)
        assert sent.read_all().equals(table)
        assert b"ARROW1" not in sent.to_bytes()[:8]  # re-encoded as a stream, uncompressed
        assert guard.read_answer(data, LIMIT).equals(table)
        guard.check_answer(data, LIMIT)
        for chunk in (1, 997, len(data)):
            decoder = guard.AnswerDecoder(LIMIT)
            batches = []
            for start in range(0, len(data), chunk):
                batches += decoder.feed(data[start : start + chunk])
            decoder.finish()
            assert pa.Table.from_batches(batches, schema=table.schema).equals(table)


def test_batches_after_replaced_dictionaries_decode_with_their_own() -> None:
    schema = pa.schema({"s": pa.dictionary(pa.int8(), pa.string())})
    first = pa.record_batch([pa.array(["a", "b", "a"]).dictionary_encode()], schema=schema)
    second = pa.record_batch([pa.array(["z", "y"]).dictionary_encode()], schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(first)
        writer.write_batch(second)
    data = sink.getvalue().to_pybytes()
    decoder = guard.AnswerDecoder(LIMIT)
    batches = decoder.feed(data)
    assert [batch.column(0).to_pylist() for batch in batches] == [["a", "b", "a"], ["z", "y"]]
    sent = guard.checked_body_sync(data, LIMIT).read_all()
    assert sent.column("s").to_pylist() == ["a", "b", "a", "z", "y"]


@pytest.mark.parametrize("attack", sorted(MALFORMED))
def test_malformed_bodies_are_invalid_input_and_answers_internal(attack: str) -> None:
    data = MALFORMED[attack]()
    with pytest.raises(errors.InvalidInputError, match="not valid Arrow IPC") as caught:
        guard.checked_body_sync(data, LIMIT)
    assert caught.value.http_status == 400
    assert caught.value.code == 13
    with pytest.raises(errors.InternalError, match="not valid Arrow IPC"):
        guard.check_answer(data, LIMIT)
    with pytest.raises(errors.InternalError):
        guard.read_answer(data, LIMIT)
    with pytest.raises(errors.InternalError):
        fed_whole(guard.AnswerDecoder(LIMIT), data)


def fed_whole(decoder: guard.AnswerDecoder, data: bytes) -> list[pa.RecordBatch]:
    """Feed all of ``data`` and finish (a truncated answer fails only at the end)."""
    return decoder.feed(data) + decoder.finish()


@pytest.mark.parametrize("attack", sorted(TOO_LARGE))
def test_declared_sizes_past_the_limit_are_refused_before_decoding(attack: str) -> None:
    bomb = TOO_LARGE[attack]()
    assert len(bomb) < 1024 * 1024
    with pytest.raises(guard.DecodedBodyTooLargeError, match="max_decoded_body_bytes") as caught:
        guard.checked_body_sync(bomb, LIMIT)
    assert caught.value.http_status == 413
    assert caught.value.code == 13
    with pytest.raises(errors.InternalError, match="max_response_bytes"):
        guard.check_answer(bomb, LIMIT)
    with pytest.raises(errors.InternalError, match="max_response_bytes"):
        guard.read_answer(bomb, LIMIT)
    with pytest.raises(errors.InternalError, match="max_response_bytes"):
        guard.AnswerDecoder(LIMIT).feed(bomb)


def test_compressed_data_counts_its_decoded_size_not_its_wire_size() -> None:
    zeros = pa.table({"z": pa.array([0] * 200_000, pa.int64())})  # 1.6 MB decoded
    data = stream(zeros, "zstd")
    assert len(data) < 100_000
    with pytest.raises(guard.DecodedBodyTooLargeError):
        guard.checked_body_sync(data, 1_000_000)
    with pytest.raises(errors.InternalError, match="max_response_bytes"):
        guard.read_answer(data, 1_000_000)
    assert guard.checked_body_sync(data, 2_000_000).read_all().equals(zeros)


def test_a_file_whose_footer_names_no_message_is_refused() -> None:
    with pytest.raises(errors.InternalError, match="footer"):
        guard.check_answer(lying_footer(), LIMIT)


def test_the_limit_must_be_a_positive_integer() -> None:
    for wrong in (0, -1, True, "64"):
        with pytest.raises(errors.InvalidInputError, match="max_decoded_body_bytes"):
            guard.check_decoded_limit(wrong)


# -- the real server -------------------------------------------------------------------


#: not the default (64 MiB), so the answers show the flag was honoured
SERVED_LIMIT = 48 * 1024 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("prlimit (util-linux) is needed to bound the server's address space")
    root = tmp_path_factory.mktemp("arrow-guard")
    with lance_ns_serve(
        {"root": str(root)},
        "--auth-token-env",
        "ARROW_GUARD_TOKEN",
        f"--max-decoded-body-bytes={SERVED_LIMIT}",
        env={"ARROW_GUARD_TOKEN": TOKEN},
        prefix=(prlimit, f"--as={ADDRESS_SPACE}", "--"),
    ) as server:
        created = post(server, "t/create", stream(ids(10)))
        assert created.status_code == 200, created.text
        yield server


def post(server: ServeProcess, path: str, body: bytes) -> httpx.Response:
    return httpx.post(
        f"{server.uri}/v1/table/{path}",
        content=body,
        headers={
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/vnd.apache.arrow.stream",
        },
        timeout=60,
    )


def still_serving(server: ServeProcess) -> None:
    assert server.process.poll() is None, "the server died"
    described = httpx.post(
        f"{server.uri}/v1/table/t/describe",
        json={},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert described.status_code == 200, described.text


DATA_ROUTES = ["attack/create", "t/insert", "t/merge_insert?on=id"]


@pytest.mark.parametrize("attack", sorted(MALFORMED))
def test_the_server_answers_malformed_arrow_400_and_lives(
    served: ServeProcess, attack: str
) -> None:
    data = MALFORMED[attack]()
    before = served.rss_mb
    for route in DATA_ROUTES:
        answer = post(served, route, data)
        assert answer.status_code == 400, (route, answer.text)
        assert answer.json()["code"] == 13
        assert "not valid Arrow IPC" in answer.json()["error"]
        still_serving(served)
    assert served.rss_mb - before < RSS_GROWTH_MB


@pytest.mark.parametrize("attack", sorted(TOO_LARGE))
def test_the_server_answers_declared_sizes_past_its_limit_413_and_lives(
    served: ServeProcess, attack: str
) -> None:
    bomb = TOO_LARGE[attack]()
    before = served.rss_mb
    for route in DATA_ROUTES:
        answer = post(served, route, bomb)
        assert answer.status_code == 413, (route, answer.text)
        assert answer.json()["code"] == 13
        assert f"max_decoded_body_bytes ({SERVED_LIMIT} bytes)" in answer.json()["error"]
        still_serving(served)
    assert served.rss_mb - before < RSS_GROWTH_MB


def test_the_server_stores_exactly_what_a_compressed_valid_body_held(
    served: ServeProcess,
) -> None:
    table = next(valid_tables()).drop_columns(["name", "point"])  # what lance stores as is
    answer = post(served, "valid/create", stream(table, "zstd"))
    assert answer.status_code == 200, answer.text
    queried = httpx.post(
        f"{served.uri}/v1/table/valid/query",
        json={"k": 10_000, "vector": {}},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert queried.status_code == 200, queried.text
    assert guard.read_answer(queried.content).sort_by("id").equals(table)


# -- the client ------------------------------------------------------------------------

_CLIENT = """
import asyncio, json, resource, sys
import lance_namespace_async as lna

async def main(uri, names):
    outcomes = {}
    async with lna.connect("rest", {"uri": uri, "max_response_bytes": str(64 << 20)}) as ns:
        for name in names:
            seen = []
            for how in ("table", "batches", "ipc"):
                request = {"id": [name], "k": 10, "vector": None}
                try:
                    if how == "table":
                        await ns.query_table(request)
                    elif how == "batches":
                        [b async for b in ns.query_table_batches(request)]
                    else:
                        await ns.query_table_ipc(request)
                    seen.append("no error")
                except Exception as exc:
                    seen.append(f"{type(exc).__name__} {getattr(exc, 'code', None)}")
            outcomes[name] = seen
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({"outcomes": outcomes, "peak_mb": peak}))

asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""


def test_the_rest_client_refuses_crafted_answers_as_internal_errors(tmp_path: Path) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route
    from uvicorn_thread import UvicornThread

    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("prlimit (util-linux) is needed to bound the client's address space")
    answers = {
        name.replace(" ", "_").replace("^", ""): craft() for name, craft in MALFORMED.items()
    }
    answers.update({n.replace(" ", "_").replace("^", ""): c() for n, c in TOO_LARGE.items()})
    answers["lying_footer"] = lying_footer()
    answers["valid"] = ipc_file(ids(100), "zstd")

    async def query(request: Request) -> Response:
        return Response(
            answers[request.path_params["name"]], media_type="application/vnd.apache.arrow.file"
        )

    app = Starlette(routes=[Route("/v1/table/{name}/query", query, methods=["POST"])])
    server = UvicornThread(app, name="crafted-arrow", description="the crafted Arrow server")
    uri = server.start()
    try:
        run = subprocess.run(
            [prlimit, "--as=3000000000", "--", sys.executable, "-c", _CLIENT, uri, *answers],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    outcomes = report.pop("outcomes")
    assert outcomes.pop("valid") == ["no error"] * 3
    for name, seen in outcomes.items():
        if name == "lying_footer":  # its stream part is sound: only the raw bytes are refused
            assert seen[2] == "InternalError 18", (name, seen)
            continue
        assert seen == ["InternalError 18"] * 3, (name, seen)
    assert report["peak_mb"] < 1000, report


def test_streamed_answers_count_what_is_held_at_once_whole_answers_everything() -> None:
    table = pa.table({"id": pa.array(range(40_000), pa.int64())})  # 320 KB decoded
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=5_000)  # 8 batches of 40 KB
    data = sink.getvalue().to_pybytes()
    streamed = fed_whole(guard.AnswerDecoder(100_000), data)
    assert pa.Table.from_batches(streamed).equals(table)
    with pytest.raises(errors.InternalError, match=r"max_response_bytes \(100000 bytes\)"):
        guard.read_answer(data, 100_000)


async def test_create_app_refuses_a_decoded_limit_that_is_not_a_positive_integer(
    tmp_path: Path,
) -> None:
    import lance_namespace_async as lna
    from lance_namespace_async.server import create_app

    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        for wrong in (0, True, 1.5):
            with pytest.raises(errors.InvalidInputError, match="max_decoded_body_bytes"):
                create_app(ns, max_decoded_body_bytes=wrong)  # type: ignore[arg-type]
