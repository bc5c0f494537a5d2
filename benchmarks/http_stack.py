"""Requests/s of the adapter's HTTP stacks over a backend that does no work.

    .venv/bin/python benchmarks/http_stack.py                  # 3 stacks x 4 rounds x 5 s
    .venv/bin/python benchmarks/http_stack.py --seconds 5 --rounds 1

What the HTTP layer costs, apart from any backend: ``create_app`` over
``_synthetic.NullNamespace`` (NamespaceExists answered at once) served by

* ``guarded``: what ``serve()`` runs, uvicorn's httptools protocol with the bounds of
  ``ServerLimits`` (``lance_namespace_async._server_protocol``);
* ``httptools``: plain uvicorn with httptools, what ``serve()`` ran before issue 14;
* ``h11``: plain uvicorn with its h11 protocol (the one with a built-in head limit);

each in its own process on 127.0.0.1, loaded by one load-generator process (uvloop,
bare asyncio streams) with ``--connections`` keep-alive connections, each sending its
next NamespaceExists as soon as the previous answer is in. Rounds alternate the stacks;
the table shows each stack's best and median requests/s and its median server CPU per
request. Writes benchmarks/results/http_stack.md (``--output``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "http_stack.md"
LOOPBACK = "127.0.0.1"
STACKS = ("guarded", "httptools", "h11")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def serve(stack: str, port: int) -> None:
    sys.path.insert(0, str(HERE))
    import uvicorn
    from _synthetic import NullNamespace

    from lance_namespace_async.server import DEFAULT_MAX_BODY_BYTES, ServerLimits, create_app
    from lance_namespace_async.server._protocol import guarded_server

    app = create_app(NullNamespace.from_properties({}))
    options = {"host": LOOPBACK, "port": port, "log_level": "warning", "access_log": False}
    if stack == "guarded":
        server = guarded_server(app, ServerLimits(), DEFAULT_MAX_BODY_BYTES, **options)
    else:
        config = uvicorn.Config(app, http=stack, lifespan="off", server_header=False, **options)
        server = uvicorn.Server(config)
    asyncio.run(server.serve())


async def load(port: int, connections: int, seconds: float) -> int:
    request = (
        f"POST /v1/namespace/a/exists HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    ).encode()
    count = 0
    stop = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal count
        reader, writer = await asyncio.open_connection(LOOPBACK, port)
        try:
            while time.perf_counter() < stop:
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200 "):
                    raise RuntimeError(head[:100])
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                count += 1
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(connections)))
    return count


def measure(stack: str, connections: int, seconds: float) -> tuple[float, float]:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", stack, "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection((LOOPBACK, port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{stack} server did not start") from None
                time.sleep(0.05)
        try:
            import uvloop

            run = uvloop.run
        except ImportError:
            run = asyncio.run
        run(load(port, connections, 1.0))  # warm-up
        cpu = cpu_seconds(process.pid)
        started = time.perf_counter()
        count = run(load(port, connections, seconds))
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(process.pid) - cpu
        return count / elapsed, cpu * 1e6 / max(count, 1)
    finally:
        process.terminate()
        process.wait(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--serve", choices=STACKS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    runs: dict[str, list[tuple[float, float]]] = {stack: [] for stack in STACKS}
    load_before = os.getloadavg()[0]
    for round_ in range(args.rounds):
        for stack in STACKS:
            rate, cpu_us = measure(stack, args.connections, args.seconds)
            print(f"round {round_ + 1} {stack:<10} {rate:8,.0f} req/s {cpu_us:6.0f} us CPU/req")
            runs[stack].append((rate, cpu_us))
    base_best = max(rate for rate, _ in runs["httptools"])
    base_median = statistics.median(rate for rate, _ in runs["httptools"])
    base_cpu = statistics.median(cpu for _, cpu in runs["httptools"])
    lines = [
        "# The adapter's HTTP stacks: NamespaceExists over a backend that does no work",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/http_stack.py`: {os.cpu_count()} CPUs shared with other work (load "
        f"{load_before:.1f} at start, {os.getloadavg()[0]:.1f} at end), {args.connections} "
        f"keep-alive connections from one process, {args.rounds} rounds x {args.seconds:g} s "
        "alternating the stacks. On a busy machine requests/s swing from round to round; the "
        "server's CPU per request (median) is the steadier measure.",
        "",
        "| Stack | Requests/s best (vs httptools) | Requests/s median (vs httptools) "
        "| Server CPU per request, median (vs httptools) |",
        "|---|---:|---:|---:|",
    ]
    for stack in STACKS:
        best = max(rate for rate, _ in runs[stack])
        median = statistics.median(rate for rate, _ in runs[stack])
        cpu = statistics.median(cpu for _, cpu in runs[stack])
        lines.append(
            f"| {stack} | {best:,.0f} ({best / base_best:.2f}x) | {median:,.0f} "
            f"({median / base_median:.2f}x) | {cpu:.0f} us ({cpu / base_cpu:.2f}x) |"
        )
    text = "\n".join(lines) + "\n"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
