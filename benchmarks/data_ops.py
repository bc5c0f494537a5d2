"""Table data through REST (issue 16): our rest client <-> our adapter vs pylance's pair.

    .venv/bin/python benchmarks/data_ops.py              # 100,000 rows, 128-d vectors
    .venv/bin/python benchmarks/data_ops.py --rows 20000 --repeat 2

Both servers run in their own process on 127.0.0.1 (benchmarks/_serve.py) over a fresh
directory catalog: ours is ``create_app(connect("dir", ...))`` under uvicorn with the
body limit raised for the upload, pylance's is its Rust ``RestAdapter("dir", ...)``.
The clients are ours (``connect("rest", ...)``, async) and pylance's Rust
``RestNamespace``. Measured, each ``--repeat`` times, best run kept:

* InsertIntoTable of ``--rows`` rows (id int64, vec 128 x float32) into an existing table,
  in inserts of ``--batch-rows`` rows on both stacks: pylance 14.0.2's RestAdapter refuses
  bodies above 2 MB (axum's default limit; 413), so 100,000 rows cannot go in one call
  there (ours takes them in one call when its ``max_body_bytes`` allows);
* QueryTable k-NN (k=10, no index: a full scan) on the table, ``--queries`` times;
* CountTableRows and DescribeTable latency per call (median of ``--calls`` calls);
* the server process's CPU time (user + system, all threads, from /proc) per call of
  each phase: what serving the call costs, whatever the client.

``--interleave`` measures k-NN once more with both servers up, in alternating blocks
(the other measures stay one stack after the other): on a shared machine both stacks
then see the same load, which a run of one stack after the other does not promise.

Writes benchmarks/results/data_ops.md (``--output``) and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from rest_crawl import process_cpu

HERE = Path(__file__).resolve().parent
DIM = 128


def table_of(rows: int, start: int = 0) -> pa.Table:
    vectors = np.random.default_rng(start).random((rows, DIM), dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(np.arange(start, start + rows, dtype=np.int64)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
        }
    )


def chunks(table: pa.Table, rows: int) -> list[pa.Table]:
    return [table.slice(start, rows) for start in range(0, table.num_rows, rows)]


def ipc_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


class ServerCpu:
    """CPU seconds the server process used since the last call (per phase)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last = process_cpu(pid) or 0.0

    def lap(self) -> float:
        now = process_cpu(self.pid) or 0.0
        used, self.last = now - self.last, now
        return used


@contextlib.contextmanager
def server(impl: str, root: str) -> Iterator[tuple[str, ServerCpu]]:
    command = [sys.executable, str(HERE / "_serve.py"), "--impl", impl, "--root", root]
    if impl == "ours":
        command += ["--max-body-bytes", str(1 << 30)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("PORT "):
            raise RuntimeError(f"{impl} server did not start: {line}")
        yield f"http://127.0.0.1:{line.split()[1]}", ServerCpu(process.pid)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def best(times: list[float]) -> float:
    return min(times)


async def run_ours(uri: str, cpu: ServerCpu, args: argparse.Namespace) -> dict[str, float]:
    import lance_namespace_async as lna

    table = ["b", "t"]
    data = table_of(args.rows)
    query = {"id": table, "k": 10, "vector": {"single_vector": [0.5] * DIM}, "vector_column": "vec"}
    async with lna.connect("rest", {"uri": uri, "read_timeout": "600000"}) as ns:
        await ns.create_namespace({"id": ["b"]})
        await ns.create_table({"id": table}, table_of(10, start=10**9))
        server: dict[str, float] = {}
        cpu.lap()
        inserts = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            for part in chunks(data, args.batch_rows):
                await ns.insert_into_table({"id": table}, part)
            inserts.append(time.perf_counter() - started)
        server["insert"] = cpu.lap()
        knn = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            for _ in range(args.queries):
                result = await ns.query_table(query)
                assert result.num_rows == 10
            knn.append(time.perf_counter() - started)
        server["knn"] = cpu.lap()
        count = await timed_async(lambda: ns.count_table_rows({"id": table}), args.calls)
        server["count"] = cpu.lap()
        describe = await timed_async(lambda: ns.describe_table({"id": table}), args.calls)
        server["describe"] = cpu.lap()
    return summary(args, inserts, knn, count, describe, server)


def run_pylance(uri: str, cpu: ServerCpu, args: argparse.Namespace) -> dict[str, float]:
    import lance_namespace as ln
    from lance.namespace import RestNamespace

    ns = RestNamespace(uri=uri)
    table = ["b", "t"]
    data = table_of(args.rows)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["b"]))
    ns.create_table(ln.CreateTableRequest(id=table), ipc_stream(table_of(10, start=10**9)))
    server: dict[str, float] = {}
    cpu.lap()
    inserts = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        for part in chunks(data, args.batch_rows):
            # pylance's interface takes IPC bytes: the conversion is part of its cost
            ns.insert_into_table(ln.InsertIntoTableRequest(id=table), ipc_stream(part))
        inserts.append(time.perf_counter() - started)
    server["insert"] = cpu.lap()
    request = ln.QueryTableRequest(
        id=table, k=10, vector={"single_vector": [0.5] * DIM},
        vector_column="vec",
    )  # fmt: skip
    knn = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        for _ in range(args.queries):
            answer = ns.query_table(request)
            assert pa.ipc.open_file(pa.BufferReader(answer.data)).read_all().num_rows == 10
        knn.append(time.perf_counter() - started)
    server["knn"] = cpu.lap()
    count = timed(lambda: ns.count_table_rows(ln.CountTableRowsRequest(id=table)), args.calls)
    server["count"] = cpu.lap()
    describe = timed(lambda: ns.describe_table(ln.DescribeTableRequest(id=table)), args.calls)
    server["describe"] = cpu.lap()
    return summary(args, inserts, knn, count, describe, server)


async def timed_async(call: Callable[[], Any], calls: int) -> float:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def timed(call: Callable[[], Any], calls: int) -> float:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def summary(
    args: argparse.Namespace,
    inserts: list[float],
    knn: list[float],
    count: float,
    describe: float,
    server: dict[str, float],
) -> dict[str, float]:
    insert_calls = args.repeat * len(range(0, args.rows, args.batch_rows))
    return {
        "insert_rows_per_s": args.rows / best(inserts),
        "knn_queries_per_s": args.queries / best(knn),
        "count_ms": count * 1000,
        "describe_ms": describe * 1000,
        "insert_server_ms": server["insert"] * 1000 / insert_calls,
        "knn_server_ms": server["knn"] * 1000 / (args.repeat * args.queries),
        "count_server_ms": server["count"] * 1000 / args.calls,
        "describe_server_ms": server["describe"] * 1000 / args.calls,
    }


def report(args: argparse.Namespace, ours: dict[str, float], theirs: dict[str, float]) -> str:
    knn = (
        f"{2 * args.repeat} alternating blocks of {args.queries} queries per stack, median query"
        if args.interleave
        else f"{args.queries} queries"
    )
    lines = [
        "# Table data through REST: ours vs pylance",
        "",
        f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; {args.rows:,} rows x {DIM}-d float32 in inserts "
        f"of {args.batch_rows:,} rows (pylance's server refuses bodies over 2 MB), best of "
        f"{args.repeat}; k-NN: {knn}; latency: median of {args.calls} calls.",
        "",
        "| Measure | ours (rest client <-> our adapter) | pylance (RestNamespace <-> "
        "RestAdapter) | ours / pylance |",
        "|---|---:|---:|---:|",
    ]
    rows = [
        ("InsertIntoTable, rows/s (higher is better)", "insert_rows_per_s", True),
        ("QueryTable k-NN k=10, queries/s (higher is better)", "knn_queries_per_s", True),
        ("CountTableRows, ms per call (lower is better)", "count_ms", False),
        ("DescribeTable, ms per call (lower is better)", "describe_ms", False),
        (
            f"Server CPU per InsertIntoTable of {args.batch_rows:,} rows, ms (lower is better)",
            "insert_server_ms",
            False,
        ),
        ("Server CPU per k-NN query, ms (lower is better)", "knn_server_ms", False),
        ("Server CPU per CountTableRows, ms (lower is better)", "count_server_ms", False),
        ("Server CPU per DescribeTable, ms (lower is better)", "describe_server_ms", False),
    ]
    for title, key, higher in rows:
        ratio = ours[key] / theirs[key] if higher else theirs[key] / ours[key]
        lines.append(f"| {title} | {ours[key]:,.1f} | {theirs[key]:,.1f} | {ratio:.2f}x |")
    lines += [
        "",
        "Ratios are throughput ratios (latency and CPU ratios inverted): > 1 means ours is "
        "faster or cheaper. Server CPU: user + system time of the server process (all "
        f"threads) over each phase, per call; load average {os.getloadavg()[0]:.2f} at the end.",
    ]
    return "\n".join(lines) + "\n"


async def interleaved_knn(
    ours_at: tuple[str, ServerCpu], theirs_at: tuple[str, ServerCpu], args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """The k-NN phase again, both stacks in turns (``--interleave``): blocks of
    ``--queries`` queries alternate (which goes first alternates too), so both see the same
    machine; median seconds per query, server CPU per query over all blocks."""
    import lance_namespace as ln
    from lance.namespace import RestNamespace

    import lance_namespace_async as lna

    table = ["b", "t"]
    vector = {"single_vector": [0.5] * DIM}
    query = {"id": table, "k": 10, "vector": vector, "vector_column": "vec"}
    request = ln.QueryTableRequest(id=table, k=10, vector=vector, vector_column="vec")
    theirs = RestNamespace(uri=theirs_at[0])

    def pylance_query() -> int:
        answer = theirs.query_table(request)
        return int(pa.ipc.open_file(pa.BufferReader(answer.data)).read_all().num_rows)

    async with lna.connect("rest", {"uri": ours_at[0], "read_timeout": "600000"}) as ns:

        async def our_query() -> int:
            return int((await ns.query_table(query)).num_rows)

        async def their_query() -> int:
            return pylance_query()

        calls = {"ours": (our_query, ours_at[1]), "pylance": (their_query, theirs_at[1])}
        seconds: dict[str, list[float]] = {"ours": [], "pylance": []}
        cpu = dict.fromkeys(calls, 0.0)
        for block in range(2 * args.repeat):
            for name in ("ours", "pylance") if block % 2 == 0 else ("pylance", "ours"):
                call, server_cpu = calls[name]
                server_cpu.lap()
                for _ in range(args.queries):
                    started = time.perf_counter()
                    assert await call() == 10
                    seconds[name].append(time.perf_counter() - started)
                cpu[name] += server_cpu.lap()
    done = 2 * args.repeat * args.queries
    return {
        name: {
            "knn_queries_per_s": 1 / statistics.median(seconds[name]),
            "knn_server_ms": cpu[name] * 1000 / done,
        }
        for name in calls
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--batch-rows", type=int, default=3000, help="rows per insert")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="measure k-NN with both servers up, in alternating blocks of --queries "
        "(2 x --repeat blocks each; queries/s from the median query)",
    )
    parser.add_argument("--output", default=str(HERE / "results" / "data_ops.md"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lna-bench-data-") as tmp:
        (Path(tmp) / "ours").mkdir()
        (Path(tmp) / "pylance").mkdir()
        with contextlib.ExitStack() as servers:
            ours_at = servers.enter_context(server("ours", f"{tmp}/ours"))
            ours = asyncio.run(run_ours(*ours_at, args))
            if not args.interleave:  # one server at a time
                servers.close()
            theirs_at = servers.enter_context(server("pylance", f"{tmp}/pylance"))
            theirs = run_pylance(*theirs_at, args)
            if args.interleave:
                knn = asyncio.run(interleaved_knn(ours_at, theirs_at, args))
                ours.update(knn["ours"])
                theirs.update(knn["pylance"])
    text = report(args, ours, theirs)
    Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
