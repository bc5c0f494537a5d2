"""Server CPU per DescribeTable of ``lance-ns serve`` with the access log off and on.

    .venv/bin/python benchmarks/access_log_cpu.py

The real command (``lance-ns serve --impl dir --storage-workers 0``) over the cached
directory catalog of adapter_cpu.py (``--namespaces`` x ``--tables-per-ns`` declared
tables), once as is (``--access-log off``, the default) and once with ``--access-log
json --access-log-file`` (a file on the temporary folder: the writer thread's cost
included, no terminal in the way). The load is adapter_cpu.py's: _loadgen.py's raw client,
``--connections`` keep-alive connections, ``--requests`` DescribeTable calls per round; the
two servers take turns ``--rounds`` times and each cell is the best round (the machine is
shared). Server CPU is user + system time of the server process, all threads, from /proc.
A ``/readyz`` storm row checks the readiness cache: requests/s and CPU per probe.

Writes benchmarks/results/access_log_cpu.md (``--output``) and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import _catalog
from adapter_cpu import Sample, load
from rest_crawl import _git_state, process_cpu

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@contextlib.contextmanager
def lance_ns_serve(root: Path, *options: str) -> Iterator[tuple[int, int]]:
    """(port, pid) of ``lance-ns serve --impl dir`` over ``root``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "generated")])}
    command = [sys.executable, "-m", "lance_namespace_async._cli", "serve", "--impl", "dir"]
    process = subprocess.Popen(
        [
            *command,
            "--prop",
            f"root={root}",
            "--port",
            str(port),
            "--storage-workers",
            "0",
            "--log-level",
            "error",
            *options,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("lance-ns serve did not start") from None
                time.sleep(0.05)
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def readyz_storm(port: int, pid: int, count: int) -> Sample:
    """``count`` sequential GET /readyz on one keep-alive connection."""
    request = b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port)) as connection:
        reader = connection.makefile("rb")
        before = process_cpu(pid) or 0.0
        start = time.perf_counter()
        for _ in range(count):
            connection.sendall(request)
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line.startswith(b"HTTP/1.1 ") and not line.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"/readyz answered {line!r}")
            reader.read(length)
        seconds = time.perf_counter() - start
        after = process_cpu(pid) or 0.0
    return Sample(count, seconds, after - before, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--tables-per-ns", type=int, default=50)
    parser.add_argument("--requests", type=int, default=3000, help="per round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "access_log_cpu.md")
    args = parser.parse_args()
    root, _ = _catalog.ensure_catalog(args.namespaces, args.tables_per_ns, print)
    load_before = os.getloadavg()
    samples: dict[str, list[Sample]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        log_file = Path(scratch) / "access.log"
        servers = {
            "access log off (default)": (),
            "--access-log json (to a file)": (
                "--access-log",
                "json",
                "--access-log-file",
                str(log_file),
            ),
        }
        for round_ in range(args.rounds):
            for label, options in servers.items():
                with lance_ns_serve(root, *options) as (port, pid):
                    sample = load(port, pid, "describe", args)
                    samples.setdefault(label, []).append(sample)
                    print(
                        f"round {round_ + 1} {label:<32} {sample.rate:7,.0f} req/s  "
                        f"server {sample.server_ms:.3f} ms CPU/req",
                        flush=True,
                    )
                    if label.startswith("access log off"):
                        storm = readyz_storm(port, pid, 1000)
                        samples.setdefault("/readyz x 1000, one connection", []).append(storm)
        lines = log_file.read_text().count("\n")
    load_after = os.getloadavg()
    text = render(args, samples, lines, load_before, load_after)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)


def render(
    args: argparse.Namespace,
    samples: dict[str, list[Sample]],
    log_lines: int,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> str:
    import lance

    now = datetime.datetime.now().isoformat(timespec="seconds")
    commit = _git_state()
    rows = []
    base = min(s.server_ms for s in samples["access log off (default)"])
    for label, runs in samples.items():
        rate = max(s.rate for s in runs)
        cpu = min(s.server_ms for s in runs)
        extra = "" if label.startswith("/readyz") else f"{cpu - base:+.3f}"
        rows.append(f"| {label} | {rate:,.0f} | {cpu:.3f} | {extra} |")
    return "\n".join(
        [
            "# Access log and /readyz: server CPU per request",
            "",
            f"Generated {now} by `benchmarks/access_log_cpu.py` at {commit}: "
            f"{os.cpu_count()} CPUs (shared; load average {load_before[0]:.2f} before, "
            f"{load_after[0]:.2f} after), Python {platform.python_version()}, "
            f"pylance {lance.__version__}.",
            "",
            f"`lance-ns serve --impl dir --storage-workers 0` over {args.namespaces} x "
            f"{args.tables_per_ns} declared tables; DescribeTable x {args.requests:,} per round "
            f"from _loadgen.py raw ({args.connections} keep-alive connections); best of "
            f"{args.rounds} rounds. The JSON server wrote {log_lines:,} lines in all.",
            "",
            "| Server | Requests/s | Server CPU ms/req | vs off |",
            "|---|---:|---:|---:|",
            *rows,
            "",
            "The /readyz row: 1,000 probes in a row; the readiness check runs once a second "
            "(its cache), so a probe costs about what /healthz does, not a catalog call.",
            "",
        ]
    )


if __name__ == "__main__":
    main()
