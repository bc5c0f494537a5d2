"""``lance-ns serve --workers N``: DescribeTable requests/s for N=1 and N=2, with the CPU.

    .venv/bin/python benchmarks/serve_workers.py                 # 10,000 calls x 5 rounds
    .venv/bin/python benchmarks/serve_workers.py --calls 3000 --rounds 1

The server is the real ``lance-ns serve --impl dir --storage-workers 0 --log-level warning``
(DescribeTable never goes to a storage worker) over a copy of the 20 namespaces x 50
declared tables catalog, with ``--workers 1`` (one process, as before) and ``--workers 2``
(a supervisor and two serving processes sharing its listening socket). The load is
``_loadgen.py --mode raw`` (pre-built requests on bare asyncio streams, the cheapest
client this machine can run) in ``--loadgens`` processes of 32 keep-alive connections
each, closed loop. Server CPU is the utime+stime of the supervisor and every serving
process (``/proc/<pid>/stat``) over the run; the load generators report their own.

The ceiling: a Python server process is one thread on one core, so N processes serve at
most ``min(N, cores) / server CPU per request`` requests/s, and on one machine the
load generator's CPU shares the same cores: ``cores / (server + load-generator CPU per
request)``. Writes benchmarks/results/serve_workers.md (the full run only; smoke runs
write under /tmp/lna-bench/smoke/; ``--output`` anywhere) and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import _catalog
import _results

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "serve_workers.md"
NAMESPACES, TABLES_PER_NS = 20, 50
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def _server(root: Path, workers: int) -> Iterator[tuple[int, list[int]]]:
    """``lance-ns serve`` with ``workers``; yields (port, the pids doing the serving)."""
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lance_namespace_async._cli",
            "serve",
            "--impl",
            "dir",
            "--prop",
            f"root={root}",
            "--storage-workers",
            "0",
            "--log-level",
            "warning",
            "--workers",
            str(workers),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if workers == 1 or len(_children(process.pid)) == workers:
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("lance-ns serve did not start")
            time.sleep(0.1)
        time.sleep(2 if workers > 1 else 0)  # both workers past their imports
        yield port, [process.pid, *(_children(process.pid) if workers > 1 else [])]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        if process.returncode != 0:
            raise RuntimeError(f"lance-ns serve exited with status {process.returncode}")


@dataclass
class Round:
    requests: int
    seconds: float
    server_cpu: float
    per_process_cpu: list[float]
    loadgen_cpu: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def _round(port: int, pids: list[int], calls: int, loadgens: int) -> Round:
    share = calls // loadgens
    generators = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "_loadgen.py"),
                "--port",
                str(port),
                "--mode",
                "raw",
                "--concurrency",
                "32",
                "--namespaces",
                str(NAMESPACES),
                "--tables-per-ns",
                str(TABLES_PER_NS),
                "--offset",
                str(i * share),
                "--count",
                str(share),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(loadgens)
    ]
    for generator in generators:
        assert generator.stdout is not None
        if generator.stdout.readline().strip() != "READY":
            raise RuntimeError("a load generator did not start")
    before = [_cpu_seconds(pid) for pid in pids]
    for generator in generators:
        assert generator.stdin is not None
        generator.stdin.write("go\n")
        generator.stdin.flush()
    results = [json.loads(g.communicate()[0].strip().splitlines()[-1]) for g in generators]
    after = [_cpu_seconds(pid) for pid in pids]
    start = min(r["start"] for r in results)
    end = max(r["end"] for r in results)
    per_process = [b - a for a, b in zip(before, after, strict=True)]
    return Round(
        sum(r["requests"] for r in results),
        end - start,
        sum(per_process),
        per_process,
        sum(r["cpu"] for r in results),
    )


def _load_average() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10_000, help="DescribeTable calls a round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--loadgens", type=int, default=1, help="load-generator processes")
    parser.add_argument("--output")
    args = parser.parse_args()
    output = _results.output_path(parser, args, RESULTS, ["calls", "rounds", "loadgens"])
    source, _ = _catalog.ensure_catalog(NAMESPACES, TABLES_PER_NS, print)
    work = Path(tempfile.mkdtemp(prefix="lna-bench-serve-workers-"))
    root = work / "catalog"
    shutil.copytree(source, root)
    load_before = _load_average()
    rows: dict[int, list[Round]] = {1: [], 2: []}
    try:
        # both servers up at once, their rounds interleaved: the machine's other load
        # drifts over minutes, and interleaving spreads it over both alike
        with _server(root, 1) as one, _server(root, 2) as two:
            servers = {1: one, 2: two}
            for port, pids in servers.values():
                _round(port, pids, min(2000, args.calls), args.loadgens)  # warm-up
            for _ in range(args.rounds):
                for workers, (port, pids) in servers.items():
                    r = _round(port, pids, args.calls, args.loadgens)
                    rows[workers].append(r)
                    print(
                        f"workers={workers}: {r.rps:,.0f} requests/s, server CPU "
                        f"{1000 * r.server_cpu / r.requests:.3f} ms/request"
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = _report(rows, args, load_before, _load_average())
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text)


def _median_round(rounds: list[Round]) -> Round:
    return sorted(rounds, key=lambda r: r.rps)[len(rounds) // 2]


def _report(
    rows: dict[int, list[Round]], args: argparse.Namespace, load_before: str, load_after: str
) -> str:
    import lance

    cores = os.cpu_count() or 1
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    lines = [
        "# `lance-ns serve --workers N`: DescribeTable requests/s for N = 1 and 2",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/serve_workers.py` at commit {commit}: {cores} CPUs (shared with other "
        f"work; load average {load_before} before, {load_after} after), Python "
        f"{platform.python_version()}, pylance {lance.__version__}.",
        "",
        f"- **Server**: `lance-ns serve --impl dir --storage-workers 0 --log-level warning "
        f"--workers N` over a copy of {NAMESPACES} namespaces x {TABLES_PER_NS} declared "
        "tables; N = 1 is one process, N = 2 a supervisor and two serving processes sharing "
        "its listening socket.",
        f"- **Load**: {args.loadgens} `_loadgen.py --mode raw` process(es) x 32 keep-alive "
        f"connections, closed loop, {args.calls:,} DescribeTable calls a round, "
        f"{args.rounds} round(s) after a warm-up; the median round by requests/s is shown.",
        "- **CPU**: server = supervisor + serving processes (utime+stime from /proc); the "
        "load generator's own CPU is reported beside it, as it runs on the same 2 cores.",
        "",
        "| N | requests/s (median) | rounds | server CPU ms/request | per process (s) "
        "| load-generator CPU ms/request | cores busy |",
        "|---:|---:|---|---:|---|---:|---:|",
    ]
    for workers, rounds in rows.items():
        r = _median_round(rounds)
        busy = (r.server_cpu + r.loadgen_cpu) / r.seconds
        lines.append(
            f"| {workers} | {r.rps:,.0f} | "
            + ", ".join(f"{x.rps:,.0f}" for x in rounds)
            + f" | {1000 * r.server_cpu / r.requests:.3f} | "
            + ", ".join(f"{c:.2f}" for c in r.per_process_cpu)
            + f" | {1000 * r.loadgen_cpu / r.requests:.3f} | {busy:.2f} |"
        )
    lines += ["", "## The ceiling arithmetic", ""]
    for workers, rounds in rows.items():
        r = _median_round(rounds)
        server = r.server_cpu / r.requests
        loadgen = r.loadgen_cpu / r.requests
        alone = min(workers, cores) / server
        shared = cores / (server + loadgen)
        lines.append(
            f"- N = {workers}: server CPU {1000 * server:.3f} ms/request, so "
            f"{min(workers, cores)} process(es) on their own cores serve at most "
            f"{min(workers, cores)} / {server:.6f} = {alone:,.0f} requests/s; with the load "
            f"generator's {1000 * loadgen:.3f} ms/request on the same {cores} cores, "
            f"{cores} / ({server:.6f} + {loadgen:.6f}) = {shared:,.0f} requests/s. "
            f"Measured: {r.rps:,.0f} ({100 * r.rps / min(alone, shared):.0f}% of the "
            "lower ceiling)."
        )
    one, two = _median_round(rows[1]), _median_round(rows[2])
    cpu_one, cpu_two = one.server_cpu / one.requests, two.server_cpu / two.requests
    busy_one = (one.server_cpu + one.loadgen_cpu) / one.seconds
    busy_two = (two.server_cpu + two.loadgen_cpu) / two.seconds
    serving = two.per_process_cpu[1:]
    lines += [
        "",
        "## Reading it",
        "",
        f"- N = 2 / N = 1: **{two.rps / one.rps:.2f}x** requests/s; server CPU per request "
        f"{1000 * cpu_two:.3f} vs {1000 * cpu_one:.3f} ms ({100 * (cpu_two / cpu_one - 1):+.0f}%"
        "): each of two processes holds half the connections, so it finds fewer requests "
        "per wake-up of its event loop and pays its loop's and the kernel's per-wake-up "
        f"work over fewer of them. The supervisor took {two.per_process_cpu[0]:.2f} s of "
        "CPU in the round (it only polls its workers).",
        f"- Cores: the benchmark's processes kept {busy_one:.2f} (N = 1) and {busy_two:.2f} "
        f"(N = 2) of the {cores} cores busy. N = 1 is bound by its one process (one core); "
        "N = 2 by the cores its two processes share with the load generator on this "
        "machine. Compare each measurement with its lower ceiling above: a figure well "
        "below it means other work on the machine took the rest (see the load average).",
        "- The kernel hands each connection to whichever worker accepts it first (one "
        "shared listening socket); here the two serving processes' CPU was "
        + " and ".join(f"{c:.2f} s" for c in serving)
        + ". With few long keep-alive connections the split can be uneven; SO_REUSEPORT "
        "would balance by a hash of the connection, but a worker leaving (SIGTERM, a "
        "reload) would then drop the connections waiting in its own accept queue, which the "
        "shared socket never does.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
