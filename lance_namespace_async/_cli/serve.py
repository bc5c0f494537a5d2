"""``lance-ns serve``: the REST adapter in front of a backend, with its limits."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import IO, TYPE_CHECKING

import attrs

from .. import errors
from . import serve_mounts, serve_supervisor, serve_workers
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

if TYPE_CHECKING:
    from ..server import AccessLog, ServerLimits


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
        "application/vnd.apache.arrow.stream. Anywhere else than loopback, set a token. "
        "--config FILE: its 'serve' section sets any option below (keys are the long "
        "option names; the command line wins). With that section, or --workers N > 1, a "
        "supervisor runs the serving processes: it restarts one that dies, passes SIGTERM "
        "on (each drains its requests) and on SIGHUP reads the file again and replaces "
        "the workers (host, port and workers need a restart)."
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    serve.add_argument("--port", type=_port, default=2333, help="TCP port (default: 2333)")
    serve.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        default=1,
        help="serving processes sharing the port, each with its own backend connection and "
        "its own storage workers; a supervisor restarts one that dies (default: 1). "
        "Not --storage-workers",
    )
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
        "--spark-cluster",
        action="append",
        default=[],
        metavar="NAME=MASTER",
        help="a Spark cluster the pipeline's jobs may run on (a request's 'cluster' names "
        "it): a master URL such as local[4] or spark://host:7077; repeatable (default: "
        "'default' = local[2]); the same as --prop spark_cluster.NAME=MASTER",
    )
    serve.add_argument(
        "--allow-udfs",
        action="store_true",
        help="let clients run their own Python code on your Spark clusters (virtual_column "
        "UDFs, udtf/chunker views), with the clusters' rights and storage credentials; only "
        "for clients you trust (default: refused with code 0); the same as "
        "--prop pipeline_allow_udfs=true",
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
    serve_mounts.add_arguments(serve)
    add_request_limit_options(serve)
    operations = serve.add_argument_group(
        "health and access log",
        "GET /healthz (the process answers) and GET /readyz (the backend answers a cheap "
        "call in time, else 503) need no token.",
    )
    operations.add_argument(
        "--ready-timeout",
        type=_seconds,
        metavar="S",
        default=2.0,
        help="seconds the backend gets to answer /readyz's call, else 503 (default: 2)",
    )
    operations.add_argument(
        "--access-log",
        choices=["off", "json"],
        default="off",
        help="one JSON line per request (time, operation, id, status, code, duration, "
        "bytes, request id; never headers, query strings or bodies) (default: off)",
    )
    operations.add_argument(
        "--access-log-file",
        metavar="PATH",
        help="append the access log to PATH instead of stderr",
    )
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


def run(
    top: argparse.ArgumentParser,
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    args: argparse.Namespace,
    scrub: _Scrubber,
) -> int:
    """``lance-ns serve``: one process, a supervisor of ``--workers`` (also whenever the
    config file has a ``serve`` section, so SIGHUP can reload it), or one of its workers."""
    try:
        args, has_section = _with_config_file(top, parser, argv, args)
    except errors.InvalidInputError as exc:
        parser.error(exc.message)
    if serve_supervisor.is_worker():
        _divide_storage_workers(args)
        return _serve(parser, args, scrub, sockets=[serve_supervisor.inherited_socket()])
    if args.workers == 1 and not has_section:
        return _serve(parser, args, scrub)
    impl = _check_serving(parser, args, scrub)  # a broken configuration stops here
    supervisor = serve_supervisor.Supervisor(
        command=[sys.executable, "-m", "lance_namespace_async._cli", *argv],
        workers=args.workers,
        host=args.host,
        port=args.port,
        shutdown_grace=args.shutdown_grace or 5.0,
        reload=lambda: _reloaded(top, parser, argv),
        metrics_at=None if args.metrics_port is None else (args.metrics_host, args.metrics_port),
    )
    try:
        _check_port_free(args.host, args.port)
    except errors.InvalidInputError as exc:
        _report(exc, verbose=False, scrub=scrub)
        return EXIT_USAGE
    suffix = " (bearer token required)" if args.auth_token_env else ""
    print(
        f"serving {impl} on {_url(args.host, args.port)} with {args.workers} "
        f"worker process(es){suffix}",
        flush=True,
    )
    return supervisor.run()


def _with_config_file(
    top: argparse.ArgumentParser,
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    args: argparse.Namespace,
) -> tuple[argparse.Namespace, bool]:
    """``args`` with the config file's ``serve`` section under the command line."""
    from .serve_config import apply_serve_section, read_serve_section

    path = _option(args, "config")
    if path is None:
        return args, False
    section = read_serve_section(path)
    if section is None:
        return args, False
    return apply_serve_section(top, parser, argv, args, section, str(path)), True


def _reloaded(
    top: argparse.ArgumentParser, parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[str, int, int]:
    """The supervisor's SIGHUP: the configuration read and checked again (raises with why,
    the secrets the file or the environment holds scrubbed from it)."""
    scrub = _Scrubber()
    try:
        first = top.parse_args(list(argv))
        args, _ = _with_config_file(top, parser, argv, first)
        _check_serving(parser, args, scrub)
    except errors.LanceNamespaceError as exc:
        raise errors.InvalidInputError(scrub(exc.message)) from None
    except Exception as exc:
        raise errors.InvalidInputError(scrub(f"{type(exc).__name__}: {exc}")) from None
    return args.host, args.port, args.workers


def _divide_storage_workers(args: argparse.Namespace) -> None:
    """In one of N serving processes: the default storage workers and their memory are
    the machine's divided among the N, not N times the machine's."""
    from ..server._storage_workers import default_worker_count, default_worker_memory_mib

    serving = args.workers
    if args.storage_workers is None:
        args.storage_workers = max(1, default_worker_count() // serving)
    if args.worker_memory is None and args.storage_workers > 0:
        args.worker_memory = default_worker_memory_mib(serving * (args.storage_workers + 1) - 1)


def _check_serving(
    parser: argparse.ArgumentParser, args: argparse.Namespace, scrub: _Scrubber
) -> str:
    """Everything serving checks before it binds, the backend built and closed again;
    the backend's impl."""
    _token(parser, args, scrub)
    if args.max_body_bytes < 1:
        parser.error("--max-body-bytes must be >= 1")
    connection = serve_mounts.connection_of(parser, args) or _connection(parser, args)
    scrub.add(connection.secret_values())
    _limits(parser, args)
    if args.access_log_file is not None and args.access_log != "json":
        parser.error("--access-log-file needs --access-log json")
    request_limits_of(parser, args)
    connection = _served_connection(connection, args)
    serve_workers.storage_workers(parser, args, connection)
    namespace = _connect(args, connection, scrub)
    try:
        from .. import server

        server.create_app(
            namespace, allowed_origins=args.allow_origin, allowed_hosts=args.allow_host
        )
    finally:
        _close(namespace)
    return connection.impl


def _token(
    parser: argparse.ArgumentParser, args: argparse.Namespace, scrub: _Scrubber
) -> str | None:
    if args.auth_token_env is None:
        return None
    token = os.environ.get(args.auth_token_env)
    if not token:
        parser.error(f"environment variable {args.auth_token_env} is not set or empty")
    scrub.add([token])
    return token


def _limits(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ServerLimits:
    from .. import server

    given = {name: getattr(args, name) for name in _LIMIT_OPTIONS}
    try:
        return server.ServerLimits(**{k: v for k, v in given.items() if v is not None})
    except errors.InvalidInputError as exc:
        parser.error(str(exc))


def _serve(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    scrub: _Scrubber,
    sockets: list[socket.socket] | None = None,
) -> int:
    token = _token(parser, args, scrub)
    if args.max_body_bytes < 1:
        parser.error("--max-body-bytes must be >= 1")
    connection = serve_mounts.connection_of(parser, args) or _connection(parser, args)
    scrub.add(connection.secret_values())
    from .. import server

    limits = _limits(parser, args)
    request_limits = request_limits_of(parser, args)
    if args.access_log_file is not None and args.access_log != "json":
        parser.error("--access-log-file needs --access-log json")
    if args.metrics_port is not None and (args.metrics_port, args.metrics_host) == (
        args.port,
        args.host,
    ):
        parser.error("--metrics-port must differ from --port")
    if sockets is None:
        _check_port_free(args.host, args.port)
        if args.metrics_port is not None:
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
        ready_timeout=args.ready_timeout,
    )
    access_log, log_file = _access_log(parser, args)
    # uvicorn re-raises SIGTERM once it has shut down; make that a clean exit
    # that still closes the backend instead of death by signal
    signal.signal(signal.SIGTERM, _interrupt)
    suffix = " (bearer token required)" if token else ""
    if sockets is None:
        print(f"serving {connection.impl} on {_url(args.host, args.port)}{suffix}", flush=True)
    else:
        serve_supervisor.signal_ready()
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
            sockets=sockets,
            ready_timeout=args.ready_timeout,
            access_log=access_log,
            # a serving process of --workers counts; its supervisor serves the metrics
            metrics_port=args.metrics_port if sockets is None else None,
            metrics_host=args.metrics_host,
            metrics=args.metrics_port is not None,
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
        if log_file is not None:
            log_file.close()
        _close(namespace)
        jobs = sys.modules.get("lance_namespace_async.pipeline._clusters")
        if jobs is not None:
            jobs.shutdown_drivers()  # the drivers' running jobs fail: their owner stops
    return EXIT_OK


def _access_log(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[AccessLog | None, IO[str] | None]:
    """The access log the options ask for, and the file it writes to (None: stderr)."""
    if args.access_log != "json":
        return None, None
    from ..server import AccessLog

    if args.access_log_file is None:
        return AccessLog(), None
    try:
        log_file = open(args.access_log_file, "a", encoding="ascii")  # noqa: SIM115
    except OSError as exc:
        parser.error(f"--access-log-file {args.access_log_file}: {exc.strerror}")
    return AccessLog(log_file), log_file


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
    for item in args.spark_cluster:
        name, sep, master = item.partition("=")
        if not sep or not name.strip() or not master.strip():
            raise errors.InvalidInputError(f"--spark-cluster expects NAME=MASTER, got {item!r}")
        properties[f"spark_cluster.{name.strip()}"] = master.strip()
    if args.allow_udfs:
        properties["pipeline_allow_udfs"] = "true"
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
