"""What checking Arrow bodies costs (issue 27): the validator alone and inserts through the server.

    .venv/bin/python benchmarks/arrow_guard.py              # ~2 min on 2 CPUs
    .venv/bin/python benchmarks/arrow_guard.py --quick      # smoke run, /tmp/lna-bench/smoke/

"Before" is what the adapter did with a body until issue 27: ``ArrowData.of(bytes)``,
which reads the schema only and hands the client's bytes to the backend. "After" is
``_core.arrow_guard.checked_body`` (on a worker thread): framing and flatbuffers walked in
pure Python, pyarrow decoding with ``validate(full=True)``, and a pyarrow re-encoding of
the validated batches (an uncompressed stream) for the backend. Payloads: ``--rows`` rows
(100,000) and a 1,000-row batch of four columns (id int64, name string, score float64,
vec 8 x float32), uncompressed and zstd.

* validator alone: median wall time of ``--repeat`` calls of each, in this process;
* through the server: ``lance-ns serve --impl dir``'s ``serve()`` in its own process on
  127.0.0.1, twice at once: as it is, and with ``checked_body`` replaced by the old
  ``ArrowData.of`` (the "before" server); ``--inserts`` InsertIntoTable calls of each
  payload, one at a time, alternating between the two: median wall time per call and the
  server's CPU time (user + system, from /proc; 10 ms clock ticks) per call.

Writes benchmarks/results/arrow_guard.md (``--output``) and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
from _results import output_path
from rest_crawl import process_cpu

from lance_namespace_async._core import arrow_guard as _arrow_guard
from lance_namespace_async._core.arrow_data import ArrowData

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "arrow_guard.md"
LIMIT = _arrow_guard.DEFAULT_MAX_DECODED_BODY_BYTES

#: the server process: serve() as lance-ns serve runs it, optionally without the guard
_SERVER = """
import sys
import lance_namespace_async.server as server
import lance_namespace_async.server._adapter as adapter
from lance_namespace_async._core.arrow_data import ArrowData
if sys.argv[3] == "before":
    async def unchecked(raw, limit):
        return ArrowData.of(raw)
    adapter.checked_body = unchecked
server.serve("dir", {"root": sys.argv[1]}, port=int(sys.argv[2]),
             max_body_bytes=256 << 20, log_level="warning")
"""


def payload(rows: int, compression: str | None) -> bytes:
    rng = np.random.default_rng(rows)
    table = pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "name": pa.array([f"name-{i % 977}" for i in range(rows)]),
            "score": pa.array(rng.random(rows)),
            "vec": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.random(rows * 8, dtype=np.float32)), 8
            ),
        }
    )
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def median_ms(call: Callable[[], object], repeat: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def validator_rows(payloads: dict[str, bytes], repeat: int) -> list[str]:
    lines = [
        "| Payload | Wire bytes | Before: `ArrowData.of` ms | After: `checked_body` ms | "
        "of which the pure-Python walk ms | Added ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, data in payloads.items():
        before = median_ms(lambda data=data: ArrowData.of(data), repeat)  # type: ignore[misc]
        after = median_ms(lambda data=data: _arrow_guard.checked_body_sync(data, LIMIT), repeat)  # type: ignore[misc]
        walk = median_ms(lambda data=data: _arrow_guard.check_answer(data, LIMIT), repeat)  # type: ignore[misc]
        lines.append(
            f"| {name} | {len(data):,} | {before:.3f} | {after:.3f} | {walk:.3f} | "
            f"{after - before:+.3f} |"
        )
    return lines


class Server:
    """The adapter over a fresh directory catalog, in its own process."""

    def __init__(self, mode: str) -> None:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.root = tempfile.mkdtemp(prefix=f"lna-arrow-guard-{mode}-")
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, self.root, str(self.port), mode],
            stderr=subprocess.DEVNULL,
        )
        self.uri = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.uri, timeout=1)
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def server_rows(payloads: dict[str, bytes], inserts: int) -> list[str]:
    """Both servers up at once, their inserts alternating, so both see the same load."""
    arrow = {"Content-Type": "application/vnd.apache.arrow.stream"}
    measured: dict[tuple[str, str], tuple[float, float]] = {}
    servers = {mode: Server(mode) for mode in ("before", "after")}
    try:
        clients = {
            mode: httpx.Client(base_url=server.uri, headers=arrow, timeout=120)
            for mode, server in servers.items()
        }
        for index, (name, data) in enumerate(payloads.items()):
            path = f"/v1/table/t{index}"
            times: dict[str, list[float]] = {mode: [] for mode in servers}
            cpu: dict[str, float] = dict.fromkeys(servers, 0.0)
            for client in clients.values():
                assert client.post(f"{path}/create", content=data).status_code == 200
            for _ in range(inserts):
                for mode, client in clients.items():
                    cpu_before = process_cpu(servers[mode].process.pid) or 0.0
                    started = time.perf_counter()
                    answer = client.post(f"{path}/insert", content=data)
                    times[mode].append(time.perf_counter() - started)
                    cpu[mode] += (process_cpu(servers[mode].process.pid) or 0.0) - cpu_before
                    assert answer.status_code == 200, answer.text
            for mode in servers:
                wall = statistics.median(times[mode]) * 1000
                measured[mode, name] = (wall, cpu[mode] / inserts * 1000)
        for client in clients.values():
            client.close()
    finally:
        for server in servers.values():
            server.stop()
    lines = [
        "| Payload | Before ms / call | After ms / call | Before server CPU ms / call | "
        "After server CPU ms / call | Added CPU ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in payloads:
        (wall_b, cpu_b), (wall_a, cpu_a) = measured["before", name], measured["after", name]
        lines.append(
            f"| {name} | {wall_b:.1f} | {wall_a:.1f} | {cpu_b:.1f} | {cpu_a:.1f} | "
            f"{cpu_a - cpu_b:+.1f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch-rows", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=30, help="validator calls per payload")
    parser.add_argument("--inserts", type=int, default=15, help="server inserts per payload")
    parser.add_argument("--quick", action="store_true", help="3 repeats and inserts")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.repeat = args.inserts = 3
    output = output_path(
        parser, args, RESULTS, ["rows", "batch_rows", "repeat", "inserts"], quick=args.quick
    )
    payloads = {
        f"{rows:,} rows{' zstd' if compression else ''}": payload(rows, compression)
        for rows in (args.rows, args.batch_rows)
        for compression in (None, "zstd")
    }
    load = os.getloadavg()[0]
    validator = validator_rows(payloads, args.repeat)
    served = server_rows(payloads, args.inserts)
    text = "\n".join(
        [
            "# What checking Arrow bodies costs (issue 27)",
            "",
            f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
            f"`benchmarks/arrow_guard.py` ({os.cpu_count()} CPUs shared with other work, load "
            f"average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end; Python "
            f"{platform.python_version()}, pyarrow {pa.__version__}). Columns: id int64, name "
            "string, score float64, vec 8 x float32. Medians.",
            "",
            f"## The validator alone ({args.repeat} calls each)",
            "",
            "`checked_body` = the walk + pyarrow decoding with `validate(full=True)` + the "
            "re-encoding the backend gets; the walk alone is `check_answer` (what the REST "
            "client adds to a QueryTable answer before pyarrow decodes it).",
            "",
            *validator,
            "",
            f"## InsertIntoTable through the server ({args.inserts} calls each, one at a time)",
            "",
            "Before: the adapter with `checked_body` replaced by the old `ArrowData.of`. Both "
            "servers run with `max_body_bytes` raised to 256 MiB, since the 100,000-row body is "
            "past the 1 MiB default. Each call also writes a Lance version, so wall time mostly "
            "measures storage and, on a shared machine, load: the server CPU per call (10 ms "
            "clock ticks, summed over the calls) is the measure of what validation adds.",
            "",
            *served,
            "",
        ]
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
