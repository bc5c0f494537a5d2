"""One load-generator process: DescribeTable calls (``--op``: TableExists, ListTables)
against a REST server on 127.0.0.1.

``--mode raw``: a minimal HTTP/1.1 keep-alive client on bare asyncio streams
(pre-built request bytes, Content-Length framing only), the cheapest load this
machine can make from Python. ``--mode ours``: lance_namespace_async's REST
client (``describe_table`` from ``--concurrency`` workers).

Protocol with the parent: connect and warm up, print ``READY``, wait for one line
on stdin, run, print one JSON line ``{"requests", "start", "end", "cpu"}`` whose
times are ``time.perf_counter()`` (CLOCK_MONOTONIC on Linux, so comparable across
processes) and ``cpu`` this process's CPU seconds while running, then exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

import _catalog

LOOPBACK = "127.0.0.1"


def _ids(namespaces: int, tables_per_ns: int, offset: int, count: int) -> list[tuple[str, str]]:
    every = _catalog.expected_ids(namespaces, tables_per_ns)
    return [every[(offset + i) % len(every)] for i in range(count)]


def _request_bytes(port: int, table: tuple[str, str], op: str = "describe") -> bytes:
    if op == "list":  # ListTables of the table's namespace (GET, no body)
        path = f"/v1/namespace/{table[0]}/table/list"
        return f"GET {path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n\r\n".encode()
    body = json.dumps({"id": list(table)}).encode()
    path = f"/v1/table/{table[0]}%24{table[1]}/{op}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise RuntimeError("response without Content-Length")
    await reader.readexactly(length)
    return status


async def run_raw(port: int, concurrency: int, requests: list[bytes]) -> tuple[float, float, float]:
    connections = [await asyncio.open_connection(LOOPBACK, port) for _ in range(concurrency)]
    # warm-up: one call per connection
    for reader, writer in connections:
        writer.write(requests[0])
        if await _read_response(reader) != 200:
            raise RuntimeError("warm-up call failed")
    await _go()
    cpu = time.process_time()
    start = time.perf_counter()

    async def worker(index: int) -> None:
        reader, writer = connections[index]
        for request in requests[index::concurrency]:
            writer.write(request)
            status = await _read_response(reader)
            if status != 200:
                raise RuntimeError(f"the server answered HTTP {status}")

    async with asyncio.TaskGroup() as group:
        for index in range(concurrency):
            group.create_task(worker(index))
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    for _, writer in connections:
        writer.close()
    return start, end, cpu


async def run_ours(
    port: int, concurrency: int, tables: list[tuple[str, str]]
) -> tuple[float, float, float]:
    import lance_namespace_async as lna

    properties = {
        "uri": f"http://{LOOPBACK}:{port}",
        "max_connections": str(max(concurrency, 100)),
        "max_keepalive_connections": str(concurrency),
    }
    async with lna.connect("rest", properties) as ns:
        await ns.describe_table({"id": list(tables[0])})  # warm-up
        await _go()
        cpu = time.process_time()
        start = time.perf_counter()

        async def worker(index: int) -> None:
            for table in tables[index::concurrency]:
                await ns.describe_table({"id": list(table)})

        async with asyncio.TaskGroup() as group:
            for index in range(concurrency):
                group.create_task(worker(index))
        end = time.perf_counter()
        cpu = time.process_time() - cpu
    return start, end, cpu


async def _go() -> None:
    print("READY", flush=True)
    await asyncio.to_thread(sys.stdin.readline)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=["raw", "ours"], required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--namespaces", type=int, required=True)
    parser.add_argument("--tables-per-ns", type=int, required=True)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--op", choices=["describe", "exists", "list"], default="describe")
    args = parser.parse_args()
    tables = _ids(args.namespaces, args.tables_per_ns, args.offset, args.count)
    if args.mode == "raw":
        requests = [_request_bytes(args.port, table, args.op) for table in tables]
        start, end, cpu = asyncio.run(run_raw(args.port, args.concurrency, requests))
    else:
        start, end, cpu = asyncio.run(run_ours(args.port, args.concurrency, tables))
    result = {"requests": len(tables), "start": start, "end": end, "cpu": cpu}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
