"""Attacks without a token against ``lance-ns serve``, and what a normal client sees meanwhile.

    .venv/bin/python benchmarks/server_attacks.py                  # every attack, ~2 min
    .venv/bin/python benchmarks/server_attacks.py --attacks slowloris,idle --seconds 10
    .venv/bin/python benchmarks/server_attacks.py --serve-arg=--header-timeout=2

The server is the real ``lance-ns serve --impl dir`` process over a one-table catalog on
127.0.0.1 (extra ``--serve-arg``s are passed on), or with ``--server pylance`` pylance's
Rust ``RestAdapter`` over the same catalog (the attacks concern any REST server). Each
attack runs for at most ``--seconds`` while a probe process (its own interpreter, so it
shares neither loop nor GIL with the attackers) sends DescribeTable on a keep-alive
connection every 20 ms. For each attack it
reports the server's RSS (before, peak, after), the server's CPU seconds during the attack,
how long the server took to close (or answer) the attacking connections, and the probe's
latency (p50 / p99 / max) and errors. Writes benchmarks/results/server_attacks.md
(``--output``) and prints it.

The attacks (issue 14):

* ``flood``: 10 connections each sending one endless header line, 100 MB at most, as fast as
  the socket takes it;
* ``big-header``: one connection sending a single 200 MB header;
* ``slowloris``: 200 connections, each sending a request line then one header line a second;
* ``chunked``: 10 connections, each an endless chunked upload (1 KiB chunks every 10 ms) to
  ListNamespaces (a route that reads no body) and CreateNamespace (one that does);
* ``idle``: 200 connections that send nothing, and 200 keep-alive connections left idle after
  one request;
* ``connections``: 3,000 connections opened and held (beyond the default cap).

And the data-plane attacks of issue 27 (``_data_attacks``: hostile Arrow bodies, expressions
and query or index parameters, one request each, on a 20,000-row vector table ``ns$v``).
The server runs under ``prlimit --as`` (``--as-limit-gib``, 8) so that an attack that exhausts
memory fails there, not on the machine; one that kills the server is reported by its answers
(none) and the normal client's errors, and the next attack gets a new server. ``--source
DIR`` serves the package of another checkout, for before/after tables in one run.

Everything listens on 127.0.0.1 only; every loop is bounded by ``--seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from _data_attacks import data_attacks, make_data_tables

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "server_attacks.md"
LOOPBACK = "127.0.0.1"
PROBE_PATH = "/v1/table/ns%24t/describe"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def rss_mb(pid: int) -> float:
    """The process's RSS; NaN once an attack has killed it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# -- the probe (a normal client, in its own process) -----------------------------------------


def request_bytes(port: int) -> bytes:
    return (
        f"POST {PROBE_PATH} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    ).encode()


async def read_answer(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def probe_main(port: int, seconds: float, interval: float) -> None:
    """DescribeTable every ``interval`` s; reconnect when the connection is lost."""
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.perf_counter() + seconds
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(10):
                if connection is None:
                    connection = await asyncio.open_connection(LOOPBACK, port)
                reader, writer = connection
                writer.write(request_bytes(port))
                status = await read_answer(reader)
            if status != 200:
                errors.append(f"HTTP {status}")
            latencies.append(time.perf_counter() - started)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            errors.append(type(exc).__name__)
            connection = None
        await asyncio.sleep(max(0.0, interval - (time.perf_counter() - started)))
    print(json.dumps({"latencies": latencies, "errors": errors}), flush=True)


class Probe:
    def __init__(self, port: int, seconds: float, interval: float = 0.02) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--probe",
                str(port),
                "--seconds",
                str(seconds),
                "--interval",
                str(interval),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )

    def result(self) -> tuple[list[float], list[str]]:
        out, _ = self.process.communicate(timeout=120)
        data = json.loads(out)
        return data["latencies"], data["errors"]


# -- the attacks --------------------------------------------------------------------------------


@dataclass
class Closed:
    """What happened to one attacking connection."""

    seconds: float | None = None  # until the server closed it (None: still open at the end)
    status: str = ""  # the status line it answered with, if any
    sent: int = 0  # bytes the attacker got into the socket


@dataclass
class Attack:
    connections: list[Closed] = field(default_factory=list)
    note: str = ""


async def watch_close(reader: asyncio.StreamReader, started: float, closed: Closed) -> None:
    """Read the server's answer until it closes the connection."""
    received = b""
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            if len(received) < 200:
                received += chunk
                closed.status = received.split(b"\r\n", 1)[0].decode("latin-1")
    closed.seconds = time.perf_counter() - started


async def hold(
    port: int,
    seconds: float,
    opening: bytes,
    step: Callable[[int], bytes | None],
    interval: float,
    limit: int,
) -> Closed:
    """Open a connection, send ``opening``, then ``step(i)`` every ``interval`` s until the
    server closes it, ``limit`` bytes were sent, or ``seconds`` are over."""
    closed = Closed()
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection(LOOPBACK, port)
    except OSError as exc:
        closed.seconds = 0.0
        closed.status = f"connect failed: {type(exc).__name__}"
        return closed
    watcher = asyncio.create_task(watch_close(reader, started, closed))
    deadline = started + seconds
    try:
        writer.write(opening)
        closed.sent += len(opening)
        i = 0
        while time.perf_counter() < deadline and not watcher.done() and closed.sent < limit:
            data = step(i)
            i += 1
            if data is None:
                await asyncio.sleep(min(interval, max(0.0, deadline - time.perf_counter())))
                continue
            writer.write(data)
            closed.sent += len(data)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.01, deadline - time.perf_counter())):
                    await writer.drain()
            if interval:
                await asyncio.sleep(interval)
            else:
                await asyncio.sleep(0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.shield(watcher), max(0.0, deadline - time.perf_counter())
            )
    except OSError:
        await asyncio.sleep(0.05)
    finally:
        if not watcher.done():
            watcher.cancel()
        writer.close()
    return closed


def head(port: int, method: str = "GET", path: str = "/v1/namespace/%24/list") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n".encode()


async def flood(port: int, seconds: float) -> Attack:
    filler = b"a" * 65536
    opening = head(port) + b"X-Flood: "
    tasks = [hold(port, seconds, opening, lambda _i: filler, 0.0, 100_000_000) for _ in range(10)]
    return Attack(list(await asyncio.gather(*tasks)))


async def big_header(port: int, seconds: float) -> Attack:
    filler = b"a" * 262144
    opening = head(port) + b"X-Big: "
    return Attack([await hold(port, seconds, opening, lambda _i: filler, 0.0, 200_000_000)])


async def slowloris(port: int, seconds: float) -> Attack:
    tasks = [
        hold(port, seconds, head(port), lambda i: f"X-{i}: {i}\r\n".encode(), 1.0, 10**9)
        for _ in range(200)
    ]
    return Attack(list(await asyncio.gather(*tasks)))


async def chunked(port: int, seconds: float) -> Attack:
    chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
    tasks = []
    for index in range(10):
        path = f"/v1/namespace/up{index}/create" if index % 2 else "/v1/namespace/%24/list"
        opening = head(port, "POST" if index % 2 else "GET", path)
        opening += b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        tasks.append(hold(port, seconds, opening, lambda _i: chunk, 0.01, 10**9))
    return Attack(list(await asyncio.gather(*tasks)))


async def idle(port: int, seconds: float) -> Attack:
    async def used_once() -> Closed:
        opening = head(port) + b"\r\n"
        return await hold(port, seconds, opening, lambda _i: None, 0.5, 10**9)

    silent = [hold(port, seconds, b"", lambda _i: None, 0.5, 10**9) for _ in range(200)]
    kept = [used_once() for _ in range(200)]
    results = list(await asyncio.gather(*silent, *kept))
    return Attack(results, note="200 silent + 200 idle after one request")


async def connections(port: int, seconds: float) -> Attack:
    async def one() -> Closed:
        return await hold(port, seconds, b"", lambda _i: None, 0.5, 10**9)

    results: list[Closed] = []
    batch = [asyncio.create_task(one()) for _ in range(3000)]
    results = list(await asyncio.gather(*batch))
    return Attack(results, note="3,000 connections")


ATTACKS: dict[str, Callable[[int, float], Awaitable[Attack]]] = {
    "flood": flood,
    "big-header": big_header,
    "slowloris": slowloris,
    "chunked": chunked,
    "idle": idle,
    "connections": connections,
}
ATTACKS.update(data_attacks(hold, Attack))


# -- the server ----------------------------------------------------------------------------------


def make_catalog(root: Path) -> None:
    import lance
    import pyarrow as pa

    import lance_namespace_async as lna

    ns = lna.connect_sync("dir", {"root": str(root)})
    ns.create_namespace({"id": ["ns"]})
    location = ns.declare_table({"id": ["ns", "t"]}).location
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), location)
    ns.close()
    make_data_tables(root)


class Server:
    def __init__(
        self,
        root: Path,
        extra: list[str],
        kind: str = "ours",
        source: Path | None = None,
        as_limit_gib: float | None = None,
    ) -> None:
        if kind == "pylance":
            # any REST server can be attacked: pylance's Rust RestAdapter, for comparison
            self.process = subprocess.Popen(
                [sys.executable, str(HERE / "_serve.py"), "--impl", "pylance", f"--root={root}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert self.process.stdout is not None
            line = self.process.stdout.readline().split()
            if line[:1] != ["PORT"]:
                raise RuntimeError(f"pylance RestAdapter did not start: {line}")
            self.port = int(line[1])
            return
        self.port = free_port()
        # --source: the package of another checkout (the tree before a fix) serves instead;
        # --as-limit: its address space is capped, so an attack cannot take the machine
        cap = int((as_limit_gib or 0) * 2**30)  # prlimit takes bytes (no K/M/G suffixes)
        limit = ["prlimit", f"--as={cap}", "--"] if cap else []
        env = {**os.environ, "PYTHONPATH": str(source)} if source else None
        self.process = subprocess.Popen(
            [
                *limit,
                sys.executable,
                "-m",
                "lance_namespace_async._cli",
                "serve",
                "--impl",
                "dir",
                "--prop",
                f"root={root}",
                "--port",
                str(self.port),
                "--log-level",
                "critical",
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=source,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection((LOOPBACK, self.port), timeout=1):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("lance-ns serve did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# -- the run ------------------------------------------------------------------------------------


@dataclass
class Row:
    attack: str
    rss: tuple[float, float, float]
    cpu: float
    closed: str
    answered: str
    latency: str
    errors: str


async def sample_rss(pid: int, stop: asyncio.Event, peak: list[float]) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError):
            peak[0] = max(peak[0], rss_mb(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


def describe_closing(attack: Attack, seconds: float) -> tuple[str, str]:
    total = len(attack.connections)
    times = [c.seconds for c in attack.connections if c.seconds is not None]
    still_open = total - len(times)
    statuses: dict[str, int] = {}
    for c in attack.connections:
        if c.status:
            key = " ".join(c.status.split(" ", 2)[:2]) if c.status.startswith("HTTP") else c.status
            statuses[key] = statuses.get(key, 0) + 1
    if times:
        closed = (
            f"{len(times)}/{total} closed, median {statistics.median(times):.1f} s, "
            f"max {max(times):.1f} s"
        )
    else:
        closed = f"0/{total} closed"
    if still_open:
        closed += f"; {still_open} still open after {seconds:.0f} s"
    sent = max((c.sent for c in attack.connections), default=0)
    answered = ", ".join(f"{k} x{v}" for k, v in sorted(statuses.items())) or "none"
    answered += f"; most sent by one: {sent / 1e6:.2f} MB"
    return closed, answered


async def run_attack(name: str, server: Server, seconds: float) -> Row:
    pid = server.process.pid
    await asyncio.sleep(1.0)  # let the previous attack's connections go
    rss_before = rss_mb(pid)
    cpu_before = cpu_seconds(pid)
    peak = [rss_before]
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_rss(pid, stop, peak))
    probe = Probe(server.port, seconds + 1.0)
    await asyncio.sleep(0.5)
    attack = await ATTACKS[name](server.port, seconds)
    latencies, errors = await asyncio.to_thread(probe.result)
    cpu = cpu_seconds(pid) - cpu_before
    stop.set()
    await sampler
    await asyncio.sleep(1.0)
    rss_after = rss_mb(pid)
    closed, answered = describe_closing(attack, seconds)
    if attack.note:
        closed = f"{attack.note}: {closed}"
    latency = (
        f"{percentile(latencies, 0.5) * 1000:.1f} / {percentile(latencies, 0.99) * 1000:.1f} / "
        f"{max(latencies, default=float('nan')) * 1000:.1f} ms ({len(latencies)} calls)"
    )
    error_counts: dict[str, int] = {}
    for error in errors:
        error_counts[error] = error_counts.get(error, 0) + 1
    errors_text = ", ".join(f"{k} x{v}" for k, v in error_counts.items()) or "0"
    return Row(name, (rss_before, peak[0], rss_after), cpu, closed, answered, latency, errors_text)


async def baseline(server: Server, seconds: float) -> Row:
    pid = server.process.pid
    await asyncio.to_thread(Probe(server.port, 1.0).result)  # warm-up: the table is opened
    rss = rss_mb(pid)
    cpu_before = cpu_seconds(pid)
    latencies, errors = await asyncio.to_thread(Probe(server.port, seconds).result)
    latency = (
        f"{percentile(latencies, 0.5) * 1000:.1f} / {percentile(latencies, 0.99) * 1000:.1f} / "
        f"{max(latencies) * 1000:.1f} ms ({len(latencies)} calls)"
    )
    return Row(
        "none (baseline)",
        (rss, rss, rss_mb(pid)),
        cpu_seconds(pid) - cpu_before,
        "-",
        "-",
        latency,
        ", ".join(errors) or "0",
    )


def render(rows: list[Row], args: argparse.Namespace, versions: str) -> str:
    lines = [
        f"# Attacks on `lance-ns serve` ({args.label})",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/server_attacks.py` ({os.cpu_count()} CPUs shared with other work; "
        f"{versions}); each attack for at most {args.seconds:.0f} s; server arguments: "
        f"`{' '.join(args.serve_arg) or '(defaults)'}`.",
        "",
        "| Attack | Server RSS MB before / peak / after | Server CPU s | Attacking connections "
        "closed | Answers | Normal DescribeTable p50 / p99 / max | Normal client errors |",
        "|---|---|---:|---|---|---|---|",
    ]
    for row in rows:
        before, peak, after = row.rss
        lines.append(
            f"| {row.attack} | {before:.0f} / {peak:.0f} / {after:.0f} | {row.cpu:.1f} | "
            f"{row.closed} | {row.answered} | {row.latency} | {row.errors} |"
        )
    return "\n".join(lines) + "\n"


async def main_async(args: argparse.Namespace) -> None:
    from importlib.metadata import version

    versions = ", ".join(
        f"{name} {version(name)}" for name in ("uvicorn", "httptools", "uvloop", "starlette")
    )
    names = list(ATTACKS) if args.attacks == "all" else args.attacks.split(",")
    work = Path(tempfile.mkdtemp(prefix="lna-attacks-"))
    try:
        make_catalog(work / "root")
        rows: list[Row] = []

        def start() -> Server:
            return Server(
                work / "root", args.serve_arg, args.server, args.source, args.as_limit_gib
            )

        server = start()
        try:
            rows.append(await baseline(server, 3.0))
            for name in names:
                print(f"[{datetime.datetime.now():%H:%M:%S}] {name} ...", flush=True)
                if server.process.poll() is not None:
                    server = start()
                rows.append(await run_attack(name, server, args.seconds))
        finally:
            server.stop()
        text = render(rows, args, versions)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
        print(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--attacks", default="all", help=f"comma list of {', '.join(ATTACKS)}")
    parser.add_argument("--seconds", type=float, default=15.0, help="per attack (default 15)")
    parser.add_argument("--serve-arg", action="append", default=[], help="passed to serve")
    parser.add_argument("--label", default="this tree")
    parser.add_argument(
        "--server",
        choices=["ours", "pylance"],
        default="ours",
        help="lance-ns serve (default) or pylance's RestAdapter, over the same catalog",
    )
    parser.add_argument(
        "--source", type=Path, help="serve the package of this checkout (e.g. the tree before)"
    )
    parser.add_argument(
        "--as-limit-gib",
        type=float,
        default=8.0,
        help="the server's address-space cap in GiB (prlimit --as; default 8, 0: none)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--probe", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--interval", type=float, default=0.02, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe is not None:
        asyncio.run(probe_main(args.probe, args.seconds, args.interval))
        return
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
