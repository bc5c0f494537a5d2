"""``lance-ns``: the command line of lance-namespace-async.

    lance-ns serve --impl dir --prop root=/data --host 127.0.0.1 --port 2333 \\
        [--auth-token-env LANCE_NS_TOKEN]

``serve`` runs the REST adapter (:mod:`lance_namespace_async.server`) over any
backend. The bearer token is read from an environment variable rather than
taken as an argument, because arguments are visible to every user of the
machine (``ps``) and end up in shell history. Nothing secret is ever printed:
property values are not echoed, not even in error messages.

Exit codes: 0 after a clean shutdown, 2 for usage and configuration errors
(argparse's convention), 1 when serving fails.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from . import errors

__all__ = ["main"]

_USAGE_ERROR = 2


def _port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be an integer") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError("must be between 1 and 65535")
    return number


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lance-ns", description="Tools of the Lance Namespace async SDK."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve a namespace backend as a Lance REST Namespace",
        description="Serve a namespace backend as a Lance REST Namespace (spec/rest.yaml).",
    )
    serve.add_argument("--impl", required=True, help="backend: dir, rest, ... or a class path")
    serve.add_argument(
        "--prop",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="backend property (repeatable), e.g. --prop root=/data",
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
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level (default: info)",
    )
    serve.set_defaults(command_parser=serve)
    return parser


def _properties(parser: argparse.ArgumentParser, items: Sequence[str]) -> dict[str, str]:
    """``key=value`` items as a map; errors name the item's position, never its text."""
    properties: dict[str, str] = {}
    for position, item in enumerate(items, start=1):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            parser.error(f"--prop #{position} must be KEY=VALUE (no '=' found)")
        if not key:
            parser.error(f"--prop #{position} has an empty key")
        if key in properties:
            parser.error(f"--prop {key} is given more than once")
        properties[key] = value
    return properties


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    properties = _properties(parser, args.prop)
    token: str | None = None
    if args.auth_token_env is not None:
        token = os.environ.get(args.auth_token_env)
        if not token:
            parser.error(f"environment variable {args.auth_token_env} is not set or empty")
    if args.max_body_bytes < 1:
        parser.error("--max-body-bytes must be >= 1")
    try:
        from . import server
    except errors.MissingDependencyError as exc:
        print(f"lance-ns: {exc}", file=sys.stderr)
        return 1
    from ._registry import connect

    try:
        namespace = connect(args.impl, properties)
        server.create_app(namespace, auth_token=token)  # validate before announcing
    except errors.LanceNamespaceError as exc:
        # messages are redacted by the error classes and never quote values
        print(f"lance-ns: {exc}", file=sys.stderr)
        return _USAGE_ERROR
    # uvicorn re-raises SIGTERM once it has shut down; make that a clean exit
    # that still closes the backend instead of death by signal
    signal.signal(signal.SIGTERM, _interrupt)
    suffix = " (bearer token required)" if token else ""
    print(f"serving {args.impl} on {_url(args.host, args.port)}{suffix}", flush=True)
    try:
        server.serve(
            namespace,
            host=args.host,
            port=args.port,
            auth_token=token,
            max_body_bytes=args.max_body_bytes,
            log_level=args.log_level,
        )
    except KeyboardInterrupt:
        pass
    except errors.LanceNamespaceError as exc:
        print(f"lance-ns: {exc}", file=sys.stderr)
        return 1
    finally:
        _close(namespace)
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _close(namespace: object) -> None:
    import asyncio

    from ._base import AsyncLanceNamespace

    if isinstance(namespace, AsyncLanceNamespace):
        asyncio.run(namespace.aclose())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lance-ns`` script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args.command_parser, args)
    parser.print_help(sys.stderr)
    return _USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
