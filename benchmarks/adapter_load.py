"""Load test of our REST adapter: many concurrent keep-alive clients, a realistic mix.

    .venv/bin/python benchmarks/adapter_load.py                   # 200 clients, 60 s
    .venv/bin/python benchmarks/adapter_load.py --clients 50 --duration 10

The server is ``lance_namespace_async.server.serve("dir", {"root": ...})`` in its
own process, which is exactly what ``lance-ns serve`` runs (uvicorn's httptools
protocol with the connection bounds of ``ServerLimits``, on an asyncio loop), over a
copy of a 20 namespaces x 50 declared tables catalog. The clients are asyncio
tasks in ``--processes`` load-generator processes, each task with its own
keep-alive HTTP/1.1 connection, sending its next request as soon as the previous
answer is in (closed loop), for ``--duration`` seconds. Every answer is checked:
an unexpected status, a connection error or a timeout (``--timeout``) is an
error, and the run fails unless there are none. Writes
benchmarks/results/adapter_load.md (the full run only; smoke runs write under
/tmp/lna-bench/smoke/; ``--output`` anywhere) and prints it.

Everything listens on 127.0.0.1 only; the helper processes are this file run
with ``--serve`` / ``--worker``, and stop with the benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import _results

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "adapter_load.md"
LOOPBACK = "127.0.0.1"
WORK_ROOT = Path(tempfile.gettempdir()) / "lna-bench" / "adapter_load"

# -- the request mix ---------------------------------------------------------------------

#: operation -> weight (percent of the client's iterations); "create+drop" is two
#: requests: CreateNamespace of a name of the client's own, then DropNamespace of it
MIX: dict[str, int] = {
    "ListNamespaces": 10,
    "ListTables": 15,
    "DescribeNamespace": 15,
    "DescribeTable": 35,
    "TableExists": 20,
    "CreateNamespace+DropNamespace": 5,
}


def namespace_name(index: int) -> str:
    return f"ns{index:02d}"


def table_name(index: int) -> str:
    return f"t{index:03d}"


def http_request(method: str, path: str, port: int, body: bytes | None) -> bytes:
    """One pre-built HTTP/1.1 keep-alive request."""
    head = f"{method} {path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + (body or b"")


@dataclass
class Mix:
    """Builds the requests of one client: ``(operation, request bytes)`` per step."""

    port: int
    namespaces: int
    tables_per_ns: int
    client: str  # unique name part of the namespaces this client creates
    rng: random.Random
    created: int = 0

    def next_steps(self) -> list[tuple[str, bytes]]:
        operation = self.rng.choices(list(MIX), weights=list(MIX.values()))[0]
        ns = namespace_name(self.rng.randrange(self.namespaces))
        table = f"{ns}%24{table_name(self.rng.randrange(self.tables_per_ns))}"
        port = self.port
        if operation == "ListNamespaces":
            return [(operation, http_request("GET", "/v1/namespace/%24/list", port, None))]
        if operation == "ListTables":
            return [(operation, http_request("GET", f"/v1/namespace/{ns}/table/list", port, None))]
        if operation == "DescribeNamespace":
            path = f"/v1/namespace/{ns}/describe"
            return [(operation, http_request("POST", path, port, b"{}"))]
        if operation == "DescribeTable":
            return [(operation, http_request("POST", f"/v1/table/{table}/describe", port, b"{}"))]
        if operation == "TableExists":
            return [(operation, http_request("POST", f"/v1/table/{table}/exists", port, b"{}"))]
        self.created += 1
        name = f"load-{self.client}-{self.created}"
        return [
            ("CreateNamespace", http_request("POST", f"/v1/namespace/{name}/create", port, b"{}")),
            ("DropNamespace", http_request("POST", f"/v1/namespace/{name}/drop", port, b"{}")),
        ]


# -- the load-generator process (--worker) -----------------------------------------------


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Status and body of one response (the adapter always sends Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length: int | None = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise RuntimeError(f"HTTP {status} without Content-Length")
    return status, await reader.readexactly(length)


@dataclass
class ClientResult:
    latencies_us: dict[str, list[int]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)

    def error(self, operation: str, what: str) -> None:
        self.errors[operation] = self.errors.get(operation, 0) + 1
        if len(self.samples) < 5:
            self.samples.append(f"{operation}: {what}")


async def run_client(
    mix: Mix, start: float, deadline: float, timeout: float, result: ClientResult
) -> None:
    """One client: its own connection, one request at a time until the deadline."""
    reader, writer = await asyncio.open_connection(LOOPBACK, mix.port)
    try:
        # warm-up: the connection is open and the server has answered it once
        writer.write(http_request("GET", "/v1/namespace/%24/list?limit=1", mix.port, None))
        await read_response(reader)
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        while time.perf_counter() < deadline:
            for operation, request in mix.next_steps():
                sent = time.perf_counter_ns()
                try:
                    async with asyncio.timeout(timeout):
                        writer.write(request)
                        status, body = await read_response(reader)
                except TimeoutError:
                    result.error(operation, f"no answer within {timeout} s")
                    return  # the connection's framing is lost: this client stops
                except (OSError, asyncio.IncompleteReadError, RuntimeError) as exc:
                    result.error(operation, f"{type(exc).__name__}: {exc}")
                    return
                elapsed_us = (time.perf_counter_ns() - sent) // 1000
                result.latencies_us.setdefault(operation, []).append(elapsed_us)
                if status != 200:
                    result.error(operation, f"HTTP {status}: {body[:200]!r}")
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def worker_main(args: argparse.Namespace) -> dict[str, object]:
    clients = [
        Mix(
            args.port,
            args.namespaces,
            args.tables_per_ns,
            f"w{args.worker}c{i}",
            random.Random(args.worker * 100_003 + i),
        )
        for i in range(args.clients)
    ]
    print("READY", flush=True)
    start_line = await asyncio.to_thread(sys.stdin.readline)
    start, deadline = (float(v) for v in start_line.split())
    cpu = time.process_time()
    results = [ClientResult() for _ in clients]
    await asyncio.gather(
        *(
            run_client(mix, start, deadline, args.timeout, result)
            for mix, result in zip(clients, results, strict=True)
        )
    )
    merged = ClientResult()
    for result in results:
        for operation, values in result.latencies_us.items():
            merged.latencies_us.setdefault(operation, []).extend(values)
        for operation, count in result.errors.items():
            merged.errors[operation] = merged.errors.get(operation, 0) + count
        merged.samples.extend(result.samples[: 5 - len(merged.samples)])
    return {
        "latencies_us": merged.latencies_us,
        "errors": merged.errors,
        "samples": merged.samples,
        "cpu": time.process_time() - cpu,
        "end": time.perf_counter(),
    }


def run_worker(args: argparse.Namespace) -> None:
    try:
        import uvloop  # the cheapest event loop there is: the generator must not be the limit
    except ImportError:
        payload = asyncio.run(worker_main(args))
    else:
        payload = uvloop.run(worker_main(args))
    Path(args.out).write_text(json.dumps(payload))
    print("DONE", flush=True)


# -- the server process (--serve) ----------------------------------------------------------


def run_server(args: argparse.Namespace) -> None:
    """What ``lance-ns serve --impl dir --prop root=...`` runs."""
    from lance_namespace_async.server import serve

    serve("dir", {"root": args.root}, host=LOOPBACK, port=args.port, log_level="warning")


# -- the benchmark ------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with code {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"the server did not listen on port {port} within {seconds:.0f} s")


@contextlib.contextmanager
def spawned(args: Sequence[str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """This file run as a helper process; stopped (SIGTERM, then SIGKILL) on exit."""
    with log_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=HERE,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)


def expect_line(process: subprocess.Popen[bytes], expected: str) -> None:
    assert process.stdout is not None
    line = process.stdout.readline().decode().strip()
    if line != expected:
        raise RuntimeError(f"a load generator said {line!r} instead of {expected!r}")


def percentile(sorted_values: Sequence[int], fraction: float) -> float:
    """Nearest-rank percentile, in milliseconds."""
    if not sorted_values:
        return float("nan")
    rank = max(1, round(fraction * len(sorted_values) + 0.5))
    return sorted_values[min(rank, len(sorted_values)) - 1] / 1000


@dataclass
class Outcome:
    duration: float
    elapsed: float
    clients: int
    processes: int
    latencies_us: dict[str, list[int]]
    errors: dict[str, int]
    samples: list[str]
    generator_cpu: float
    server_cpu: float | None
    namespaces_after: int
    catalog_note: str

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies_us.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def run_load(args: argparse.Namespace, root: Path, logs: Path) -> Outcome:
    from rest_crawl import process_cpu

    port = free_port()
    with spawned(["--serve", "--root", str(root), "--port", str(port)], logs / "server.log") as srv:
        wait_for_port(port, srv, 60)
        log(f"server (pid {srv.pid}) listening on {LOOPBACK}:{port}")
        per_process = [
            args.clients // args.processes + (1 if i < args.clients % args.processes else 0)
            for i in range(args.processes)
        ]
        with contextlib.ExitStack() as stack:
            workers = []
            for index, clients in enumerate(per_process):
                out = logs / f"worker{index}.json"
                worker = stack.enter_context(
                    spawned(
                        [
                            "--worker",
                            str(index),
                            "--port",
                            str(port),
                            "--clients",
                            str(clients),
                            "--namespaces",
                            str(args.namespaces),
                            "--tables-per-ns",
                            str(args.tables_per_ns),
                            "--timeout",
                            str(args.timeout),
                            "--out",
                            str(out),
                        ],
                        logs / f"worker{index}.log",
                    )
                )
                workers.append((worker, out))
            for worker, _ in workers:
                expect_line(worker, "READY")
            # the clients connect and warm up during the first second, then run together
            start = time.perf_counter() + 1.0
            deadline = start + args.duration
            log(f"{args.clients} clients, {args.processes} generator(s), {args.duration:.0f} s")
            for worker, _ in workers:
                assert worker.stdin is not None
                worker.stdin.write(f"{start} {deadline}\n".encode())
                worker.stdin.flush()
            time.sleep(max(0.0, start - time.perf_counter()))
            server_cpu0 = process_cpu(srv.pid)
            for worker, _ in workers:
                expect_line(worker, "DONE")
            server_cpu1 = process_cpu(srv.pid)
            reports = [json.loads(out.read_text()) for _, out in workers]
        end = max(report["end"] for report in reports)
        namespaces_after = asyncio.run(count_root_namespaces(port))
    latencies: dict[str, list[int]] = {}
    errors: dict[str, int] = {}
    samples: list[str] = []
    for report in reports:
        for operation, values in report["latencies_us"].items():
            latencies.setdefault(operation, []).extend(values)
        for operation, count in report["errors"].items():
            errors[operation] = errors.get(operation, 0) + count
        samples.extend(report["samples"])
    server_cpu = None if server_cpu0 is None or server_cpu1 is None else server_cpu1 - server_cpu0
    return Outcome(
        duration=args.duration,
        elapsed=end - start,
        clients=args.clients,
        processes=args.processes,
        latencies_us=latencies,
        errors=errors,
        samples=samples[:5],
        generator_cpu=sum(report["cpu"] for report in reports),
        server_cpu=server_cpu,
        namespaces_after=namespaces_after,
        catalog_note="",
    )


async def count_root_namespaces(port: int) -> int:
    """The root's namespaces after the run (every created one must be dropped again)."""
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    try:
        writer.write(http_request("GET", "/v1/namespace/%24/list", port, None))
        status, body = await read_response(reader)
        if status != 200:
            raise RuntimeError(f"ListNamespaces after the run answered HTTP {status}")
        return len(json.loads(body)["namespaces"])
    finally:
        writer.close()


def prepare_catalog(args: argparse.Namespace) -> tuple[Path, str]:
    """A scratch copy of the cached catalog (the run creates and drops namespaces)."""
    import _catalog

    cached, built = _catalog.ensure_catalog(args.namespaces, args.tables_per_ns, log)
    note = "built in this run" if built is not None else "copied from the benchmark cache"
    scratch = WORK_ROOT / "catalog"
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(cached, scratch)
    return scratch, note


def render(outcome: Outcome, args: argparse.Namespace) -> str:
    from rest_crawl import _git_state, _version

    import lance_namespace_async as lna

    every = sorted(v for values in outcome.latencies_us.values() for v in values)
    rate = outcome.requests / outcome.elapsed

    def row(name: str, values: list[int], errors: int) -> str:
        ordered = sorted(values)
        return (
            f"| {name} | {len(values):,} | {errors} | {len(values) / outcome.elapsed:,.0f} | "
            f"{percentile(ordered, 0.50):.1f} | {percentile(ordered, 0.90):.1f} | "
            f"{percentile(ordered, 0.99):.1f} | {ordered[-1] / 1000 if ordered else 0:.1f} |"
        )

    server = (
        "n/a"
        if outcome.server_cpu is None
        else f"{outcome.server_cpu / outcome.elapsed:.2f} cores "
        f"({outcome.server_cpu * 1000 / max(outcome.requests, 1):.2f} ms CPU per request)"
    )
    mix = ", ".join(f"{name} {weight}%" for name, weight in MIX.items())
    lines = [
        f"# Adapter load: {outcome.clients} concurrent clients for {outcome.duration:.0f} s",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/adapter_load.py` at {_git_state()}: {os.cpu_count()} CPUs (shared with "
        f"other work), Python {platform.python_version()}, lance_namespace_async "
        f"{lna.__version__}, uvicorn {_version('uvicorn')} (httptools "
        f"{_version('httptools')}, uvloop {_version('uvloop')}), starlette "
        f"{_version('starlette')}, pylance {_version('pylance')}.",
        "",
        f"- **Catalog**: {args.namespaces} namespaces x {args.tables_per_ns} declared tables "
        f"(directory backend), {outcome.catalog_note}.",
        '- **Server**: `lance_namespace_async.server.serve("dir", {"root": ...})` in its own '
        "process, what `lance-ns serve` runs: uvicorn's httptools protocol with the bounds of "
        "`ServerLimits`, "
        "one worker, log level warning, on 127.0.0.1.",
        f"- **Clients**: {outcome.clients} asyncio tasks in {outcome.processes} load-generator "
        f"process{'es' if outcome.processes > 1 else ''} (uvloop, bare asyncio streams, "
        "pre-built requests), each task with its own "
        "keep-alive HTTP/1.1 connection, one request at a time (closed loop). "
        f"Mix per iteration: {mix}.",
        f"- **Errors**: any status other than 200, a connection error, or no answer within "
        f"{args.timeout:.0f} s.",
        "",
        "| | |",
        "|---|---|",
        f"| Requests | {outcome.requests:,} in {outcome.elapsed:.1f} s |",
        f"| Errors | **{outcome.error_count}** |",
        f"| Throughput | {rate:,.0f} requests/s |",
        f"| Latency p50 / p90 / p99 / max | {percentile(every, 0.50):.1f} / "
        f"{percentile(every, 0.90):.1f} / {percentile(every, 0.99):.1f} / "
        f"{every[-1] / 1000 if every else 0:.1f} ms |",
        f"| Mean latency | {statistics.fmean(every) / 1000 if every else 0:.1f} ms |",
        f"| Server CPU | {server} |",
        f"| Load-generator CPU | {outcome.generator_cpu / outcome.elapsed:.2f} cores "
        f"({outcome.generator_cpu * 1000 / max(outcome.requests, 1):.3f} ms per request) |",
        f"| Root namespaces after the run | {outcome.namespaces_after} "
        f"(expected {args.namespaces}: every created namespace was dropped) |",
        "",
        "| Operation | Requests | Errors | Requests/s | p50 ms | p90 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for operation in sorted(outcome.latencies_us, key=lambda op: -len(outcome.latencies_us[op])):
        values = outcome.latencies_us[operation]
        lines.append(row(operation, values, outcome.errors.get(operation, 0)))
    lines.append(row("**all**", every, outcome.error_count))
    if outcome.samples:
        lines += ["", "First errors:", ""] + [f"- `{sample}`" for sample in outcome.samples]
    lines += [
        "",
        "Latency is measured in the load generator, from writing the request to reading the "
        "whole answer, so with every client busy it includes the time a request waits for "
        "the server (queueing): at a closed loop, mean latency ~ clients / throughput.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--clients", type=int, default=200, help="concurrent clients")
    parser.add_argument("--processes", type=int, default=1, help="load-generator processes")
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--tables-per-ns", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=10.0, help="per-request timeout (s)")
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help=f"default {RESULTS} for the full 200-client, 60 s run; shorter or smaller runs "
        f"write {_results.SMOKE_ROOT}, never the committed results",
    )
    # helper-process modes (this file spawns itself)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        run_server(args)
        return
    if args.worker is not None:
        run_worker(args)
        return
    if args.clients < 1 or args.processes < 1 or args.duration <= 0:
        parser.error("--clients, --processes and --duration must be positive")
    args.processes = min(args.processes, args.clients)
    args.output = _results.output_path(
        parser, args, RESULTS, ("duration", "clients", "processes", "namespaces", "tables_per_ns")
    )
    logs = WORK_ROOT / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    root, note = prepare_catalog(args)
    outcome = run_load(args, root, logs)
    outcome.catalog_note = note
    report = render(outcome, args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    print()
    print(report, end="")
    log(f"written to {args.output}; helper logs in {logs}")
    if outcome.error_count or outcome.namespaces_after != args.namespaces:
        sys.exit(1)


if __name__ == "__main__":
    main()
