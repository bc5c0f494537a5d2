"""``lance-ns serve``: the REST adapter in front of a backend, with its limits."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType

import attrs

from .. import errors
from . import serve_workers
from .common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    _connect,
    _connection,
    _option,
    _port,
    _positive_int,
    _report,
    _Scrubber,
    _seconds,
)
from .profiles import Connection
from .request_limits import add_request_limit_options, request_limits_of


def add_command(command: Callable[..., argparse.ArgumentParser]) -> None:
    """Register ``serve`` with the parser's ``command`` factory."""
    serve = command("serve", "serve a namespace backend as a Lance REST Namespace", output=False)
    serve.epilog = (
        "Without --auth-token-env the server answers every request that reaches it: on the "
        "default loopback address that is every program of this machine's users, but no web "
        "page (requests with an Origin header are refused unless --allow-origin names it, "
        "and requests naming a host other than an IP address, localhost or --host are "
        "refused unless --allow-host names it, so DNS rebinding cannot reach it). JSON bodies "
        "must say Content-Type: application/json and Arrow bodies "
        "application/vnd.apache.arrow.stream. Anywhere else than loopback, set a token."
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    serve.add_argument("--port", type=_port, default=2333, help="TCP port (default: 2333)")
    serve.add_argument(
        "--auth-token-env",
        metavar="VAR",
        help="require 'Authorization: Bearer <token>' with the token read from $VAR",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=1_048_576,
        help="largest request body accepted (default: 1 MiB)",
    )
    serve.add_argument(
        "--max-decoded-body-bytes",
        type=_positive_int,
        metavar="N",
        default=64 * 1024 * 1024,
        help="largest Arrow body once decoded, compression included, else 413 (default: 64 MiB)",
    )
    serve.add_argument(
        "--expose-storage-options",
        action="store_true",
        help="answer DescribeTable/DeclareTable with the backend's storage options, "
        "storage.* credentials included (default: never; give clients their own)",
    )
    serve.add_argument(
        "--expose-vended-credentials",
        action="store_true",
        help="answer DescribeTable with the short-lived credentials the backend's catalog "
        "vended for that table (its vend_credentials), and nothing of storage.* "
        "(default: never)",
    )
    serve.add_argument(
        "--allow-location",
        action="append",
        default=[],
        metavar="PREFIX",
        help="a location prefix (absolute path or URI) outside the storage root whose tables "
        "clients may still use (repeatable; added to allowed_locations). The server's "
        "backend runs with confine_storage=true: every operation on a table stored "
        "elsewhere, and RegisterTable/DeclareTable there, is refused with 403 "
        "(--prop confine_storage=false turns that off, with a warning)",
    )
    serve.add_argument(
        "--allow-storage-option",
        action="append",
        default=[],
        metavar="KEY",
        help="a storage option a table's catalog properties or CreateTable's storage_options "
        "may set for the server's own storage work (e.g. region); repeatable (default: none, "
        "so no request can point the server's credentials at another endpoint)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="answer requests a web page at ORIGIN (scheme://host[:port]) sends; "
        "repeatable (default: none; every request with an Origin header is refused)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="answer requests that name this server NAME in their Host header; repeatable, "
        "'*' for any (default: IP addresses, localhost and --host only)",
    )
    limits = serve.add_argument_group(
        "connection limits", "what any client, with a token or not, can make the server hold"
    )
    limits.add_argument(
        "--max-header-bytes",
        type=_positive_int,
        metavar="N",
        help="request line + headers of one request, else 431 (default: 65536)",
    )
    limits.add_argument(
        "--max-header-fields",
        type=_positive_int,
        metavar="N",
        help="header fields of one request, else 431 (default: 100)",
    )
    limits.add_argument(
        "--header-timeout",
        type=_seconds,
        metavar="S",
        help="seconds to send a request's headers, else 408 (default: 10)",
    )
    limits.add_argument(
        "--body-timeout",
        type=_seconds,
        metavar="S",
        help="seconds to send a request's body once its headers are in, else 408 (default: 30)",
    )
    limits.add_argument(
        "--keep-alive-timeout",
        type=_seconds,
        metavar="S",
        help="seconds an idle connection stays open (default: 5)",
    )
    limits.add_argument(
        "--max-connections",
        type=_positive_int,
        metavar="N",
        help="open connections; one more is answered 503 (default: 1000)",
    )
    observing = serve.add_argument_group(
        "observability",
        "traces: set OTEL_TRACES_EXPORTER (otlp, console) and the other standard OTEL_* "
        "variables (needs lance-namespace-async[otel]); off by default",
    )
    observing.add_argument(
        "--metrics-port",
        type=_port,
        metavar="P",
        help="serve Prometheus metrics at /metrics on this port, apart from the API's "
        "(default: no metrics)",
    )
    observing.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="interface of the metrics port (default: loopback)",
    )
    serve_workers.add_arguments(serve)
    add_request_limit_options(serve)
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level (default: info)",
    )


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


#: the ServerLimits fields ``serve`` takes options for (``--max-header-bytes`` ...)
_LIMIT_OPTIONS = (
    "max_header_bytes",
    "max_header_fields",
    "header_timeout",
    "body_timeout",
    "keep_alive_timeout",
    "max_connections",
)


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace, scrub: _Scrubber) -> int:
    token: str | None = None
    if args.auth_token_env is not None:
        token = os.environ.get(args.auth_token_env)
        if not token:
            parser.error(f"environment variable {args.auth_token_env} is not set or empty")
        scrub.add([token])
    if args.max_body_bytes < 1:
        parser.error("--max-body-bytes must be >= 1")
    connection = _connection(parser, args)
    scrub.add(connection.secret_values())
    from .. import server

    given = {name: getattr(args, name) for name in _LIMIT_OPTIONS}
    try:
        limits = server.ServerLimits(**{k: v for k, v in given.items() if v is not None})
    except errors.InvalidInputError as exc:
        parser.error(str(exc))
    request_limits = request_limits_of(parser, args)
    _check_port_free(args.host, args.port)
    if args.metrics_port is not None:
        if args.metrics_port == args.port and args.metrics_host == args.host:
            parser.error("--metrics-port must differ from --port")
        _check_port_free(args.metrics_host, args.metrics_port)
    connection = _served_connection(connection, args)
    workers = serve_workers.storage_workers(parser, args, connection)
    namespace = _connect(args, connection, scrub)
    # validate before announcing
    server.create_app(
        namespace,
        auth_token=token,
        allowed_origins=args.allow_origin,
        allowed_hosts=args.allow_host,
    )
    # uvicorn re-raises SIGTERM once it has shut down; make that a clean exit
    # that still closes the backend instead of death by signal
    signal.signal(signal.SIGTERM, _interrupt)
    suffix = " (bearer token required)" if token else ""
    print(f"serving {connection.impl} on {_url(args.host, args.port)}{suffix}", flush=True)
    try:
        server.serve(
            namespace,
            host=args.host,
            port=args.port,
            auth_token=token,
            max_body_bytes=args.max_body_bytes,
            limits=limits,
            request_limits=request_limits,
            expose_storage_options=args.expose_storage_options,
            expose_vended_credentials=args.expose_vended_credentials,
            allowed_origins=args.allow_origin,
            allowed_hosts=args.allow_host,
            log_level=args.log_level,
            max_decoded_body_bytes=args.max_decoded_body_bytes,
            storage_workers=workers,
            metrics_port=args.metrics_port,
            metrics_host=args.metrics_host,
        )
    except KeyboardInterrupt:
        pass
    except errors.LanceNamespaceError as exc:
        _report(exc, verbose=_option(args, "verbose", False), scrub=scrub)
        return EXIT_ERROR
    except SystemExit as exc:
        # uvicorn exits 3 when it cannot start (the port taken since the check above)
        print(
            f"lance-ns: error: could not serve on {_url(args.host, args.port)} "
            f"(uvicorn exit status {exc.code}, its log above says why)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    finally:
        if workers is not None:
            workers.close()  # after uvicorn's shutdown: no request is left to serve
        _close(namespace)
    return EXIT_OK


def _served_connection(connection: Connection, args: argparse.Namespace) -> Connection:
    """The connection with what serving changes in the backend's properties
    (``server._serving``)."""
    from ..server._serving import served_properties

    properties = served_properties(
        connection.impl,
        connection.properties,
        allowed_locations=args.allow_location,
        allowed_storage_options=args.allow_storage_option,
    )
    return attrs.evolve(connection, properties=properties)


def _check_port_free(host: str, port: int) -> None:
    """Bind once as uvicorn will (SO_REUSEADDR, like asyncio), so a taken port is a
    one-line usage error before "serving ... on" is printed, not uvicorn's log."""
    import errno
    import socket

    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise errors.InvalidInputError(f"--host {host!r}: {exc.strerror}") from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise errors.InvalidInputError(
                        f"port {port} on {host} is already in use: stop what listens there "
                        "or choose another --port"
                    ) from None
                raise errors.InvalidInputError(
                    f"cannot listen on {_url(host, port)}: {exc.strerror}"
                ) from None


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _close(namespace: object) -> None:
    import asyncio

    from .._core.base import AsyncLanceNamespace

    if isinstance(namespace, AsyncLanceNamespace):
        asyncio.run(namespace.aclose())
