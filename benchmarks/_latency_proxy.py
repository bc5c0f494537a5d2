"""A loopback TCP proxy adding a fixed delay to every client->server chunk.

Run as its own process (``python benchmarks/_latency_proxy.py --target-port P``)
so it shares neither the event loop nor the GIL with the client being measured.
It prints ``PORT <n>`` once listening, and exits when its stdin closes, on
SIGTERM, or after ``--max-seconds``.

Each chunk read from the client is stamped with ``arrival + delay`` and written
to the server at that time, in order, so a request waits ``delay`` once (delays
of back-to-back chunks overlap instead of adding up) and keep-alive connections
stay open. Server->client bytes pass through immediately: one round trip costs
``delay`` extra, like a one-way link delay on the request path.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading

LOOPBACK = "127.0.0.1"
CHUNK = 65536


async def _delayed_pump(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float
) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

    async def read_side() -> None:
        try:
            while data := await reader.read(CHUNK):
                queue.put_nowait((loop.time() + delay, data))
        except (ConnectionError, OSError):
            pass
        finally:
            queue.put_nowait(None)

    async def write_side() -> None:
        while (item := await queue.get()) is not None:
            due, data = item
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()

    async with asyncio.TaskGroup() as group:
        group.create_task(read_side())
        group.create_task(write_side())


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


async def _handle(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    target_port: int,
    delay: float,
) -> None:
    try:
        server_reader, server_writer = await asyncio.open_connection(LOOPBACK, target_port)
    except OSError:
        client_writer.close()
        return
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(_delayed_pump(client_reader, server_writer, delay))
            group.create_task(_pump(server_reader, client_writer))
    except* (ConnectionError, OSError):
        pass
    finally:
        for writer in (client_writer, server_writer):
            writer.close()


async def _main(target_port: int, delay_ms: float, max_seconds: float) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)

    def watch_stdin() -> None:  # the parent closing our stdin means: exit
        sys.stdin.read()
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch_stdin, daemon=True).start()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _handle(reader, writer, target_port, delay_ms / 1000)

    server = await asyncio.start_server(handle, LOOPBACK, 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    async with server:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=max_seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target-port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    args = parser.parse_args()
    asyncio.run(_main(args.target_port, args.delay_ms, args.max_seconds))


if __name__ == "__main__":
    main()
