"""Serve a directory catalog over REST, in its own process, on 127.0.0.1.

``--impl pylance``: pylance's Rust ``RestAdapter("dir", {"root": ...})``.
``--impl ours``: ``lance_namespace_async.server.create_app(connect("dir", ...))``
(``--impl synthetic``: the same server over ``_synthetic.SyntheticCatalog``, which
answers without storage, so its CPU per request is the HTTP + ASGI stack alone)
under uvicorn, access log off, configured as ``lance_namespace_async.server.serve()``
does: ``--http auto`` (httptools, which the ``server`` extra installs, with serve()'s
connection limits) on an asyncio loop (``--loop uvloop`` to try uvloop instead;
``--http httptools`` for plain uvicorn without the limits).

Prints ``PORT <n>`` once serving (or ``ERROR <reason>`` and exits 3), and stops
when its stdin closes, on SIGTERM, or after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
import traceback
from typing import Any

LOOPBACK = "127.0.0.1"


def _fail(reason: str) -> None:
    print(f"ERROR {reason}", flush=True)
    sys.exit(3)


def _wait_for_exit(max_seconds: float) -> None:
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())

    def watch_stdin() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    done.wait(timeout=max_seconds)


def serve_pylance(root: str, max_seconds: float) -> None:
    try:
        from lance.namespace import RestAdapter

        adapter = RestAdapter("dir", {"root": root}, host=LOOPBACK, port=0)
        adapter.start()
    except Exception as exc:
        _fail(f"pylance RestAdapter failed to start: {exc!r}")
        return
    print(f"PORT {adapter.port}", flush=True)
    try:
        _wait_for_exit(max_seconds)
    finally:
        adapter.stop()


def serve_ours(
    root: str,
    max_seconds: float,
    http: str = "auto",
    loop_name: str = "asyncio",
    max_body_bytes: int | None = None,
    synthetic: bool = False,
    observe: tuple[bool, bool] = (False, False),
) -> None:
    try:
        import uvicorn

        import lance_namespace_async as lna
        from lance_namespace_async.server import create_app
    except Exception as exc:
        _fail(f"our adapter not available: import failed: {exc!r}")
        return

    async def run() -> None:
        if synthetic:
            from _synthetic import SyntheticCatalog

            namespace: Any = SyntheticCatalog(20, 50)
        else:
            namespace = lna.connect("dir", {"root": root})
        try:
            metrics, tracing = observe
            if tracing:
                _trace_into_nothing()
            extra: dict[str, Any] = {"metrics": True} if metrics else {}
            app = (
                create_app(namespace, **extra)
                if max_body_bytes is None
                else create_app(namespace, max_body_bytes=max_body_bytes, **extra)
            )
        except Exception as exc:
            await namespace.aclose()
            _fail(f"our adapter not available: create_app failed: {exc!r}")
            return
        # uvicorn binds (port 0 = any free port) through loop.create_server, the path
        # lance_namespace_async.server.serve() takes, so accepted sockets get TCP_NODELAY
        options: dict[str, Any] = {
            "host": LOOPBACK,
            "port": 0,
            "log_level": "warning",
            "access_log": False,
            "date_header": False,
            "backlog": 1024,
        }
        server: Any
        if http == "auto":
            # what serve() runs: httptools with the connection limits of issue 14
            from lance_namespace_async.server import DEFAULT_MAX_BODY_BYTES, ServerLimits

            try:
                from lance_namespace_async.server._protocol import guarded_server
            except ImportError:  # a tree from before issue 28 (adapter_cpu.py --baseline)
                from lance_namespace_async._server_protocol import guarded_server

            server = guarded_server(app, ServerLimits(), DEFAULT_MAX_BODY_BYTES, **options)
        else:
            config = uvicorn.Config(app, lifespan="off", http=http, server_header=False, **options)
            server = uvicorn.Server(config)
        loop = asyncio.get_running_loop()

        def watch_stdin() -> None:
            sys.stdin.read()
            loop.call_soon_threadsafe(setattr, server, "should_exit", True)

        threading.Thread(target=watch_stdin, daemon=True).start()
        loop.call_later(max_seconds, setattr, server, "should_exit", True)
        serving = asyncio.create_task(server.serve())
        for _ in range(500):  # up to 5 s for startup
            if server.started or serving.done():
                break
            await asyncio.sleep(0.01)
        if not server.started:
            with contextlib.suppress(BaseException):
                await serving
            await namespace.aclose()
            _fail("our adapter not available: uvicorn did not start")
            return
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)
        try:
            await serving
        finally:
            await namespace.aclose()

    try:
        if loop_name == "uvloop" and _uvloop() is not None:
            _uvloop().run(run())
        else:
            asyncio.run(run())
    except SystemExit:
        raise
    except Exception:
        _fail("our adapter crashed: " + traceback.format_exc().replace("\n", " | "))


def _trace_into_nothing() -> None:
    """The OpenTelemetry SDK as an operator runs it (a batch processor), with an exporter
    that drops the spans: the server's cost of making them, not of a collector's network."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    trace.set_tracer_provider(provider)


def _uvloop() -> Any:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=["pylance", "ours", "synthetic"], required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    parser.add_argument("--http", choices=["auto", "h11", "httptools"], default="auto")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--max-body-bytes", type=int, default=None, help="ours: Arrow uploads")
    parser.add_argument("--metrics", action="store_true", help="ours: Prometheus metrics on")
    parser.add_argument("--tracing", action="store_true", help="ours: OpenTelemetry spans on")
    args = parser.parse_args()
    if args.impl == "pylance":
        serve_pylance(args.root, args.max_seconds)
    else:
        serve_ours(
            args.root,
            args.max_seconds,
            args.http,
            args.loop,
            args.max_body_bytes,
            synthetic=args.impl == "synthetic",
            observe=(args.metrics, args.tracing),
        )


if __name__ == "__main__":
    main()
