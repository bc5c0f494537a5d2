"""``lance-ns``: the command line of lance-namespace-async.

    lance-ns ls [ID]                          namespaces and tables directly under ID
    lance-ns describe ID                      a table (--namespace: a namespace; no ID = root)
    lance-ns create-namespace ID [--mode create|exist_ok|overwrite] [--property K=V]...
    lance-ns drop-namespace ID [--mode fail|skip] [--behavior restrict|cascade]
    lance-ns declare ID [--location L] [--property K=V]...
    lance-ns register ID LOCATION [--mode create|overwrite] [--property K=V]...
    lance-ns deregister ID
    lance-ns drop ID
    lance-ns rename ID NEW_ID                 NEW_ID is the whole new identifier
    lance-ns crawl [ROOT] [--describe] [--concurrency N] [--progress|--no-progress]
    lance-ns config                           the resolved connection, secrets masked
    lance-ns create-table NAME --from FILE [--format F] [--mode create|exist-ok|overwrite]
    lance-ns insert NAME --from FILE [--mode append|overwrite]
    lance-ns query NAME [--filter SQL] [--columns a,b] [--limit N]
                   [--nearest COL --vector 1,2,3 --k N] [-o parquet --out FILE]
    lance-ns count NAME [--filter SQL] | versions NAME | restore NAME VERSION
    lance-ns tag list|create|delete ...     lance-ns index list|create|drop ...
    lance-ns add-columns NAME COL=EXPR...     lance-ns drop-columns NAME COL...
    lance-ns mv create NAME --query SQL --schema JSON | mv refresh NAME [--wait]
    lance-ns backfill NAME COLUMN [--where SQL] [--cluster C] [--wait]   (Spark jobs)
    lance-ns jobs describe|cancel|wait JOB_ID [--table NAME]
    lance-ns serve [--host H] [--port P] [--auth-token-env VAR]   the REST adapter
                   [--max-connections N] [--header-timeout S] ... (connection limits)
                   [--workers N] [--config FILE with a 'serve' section; SIGHUP reloads it]

The connection is ``--impl`` + ``--prop key=value``, or a profile (``--profile``,
``$LANCE_NS_PROFILE``) of the config file (``--config``, ``$LANCE_NS_CONFIG``,
``~/.config/lance-ns/config.yaml``) and of ``LANCE_NS_<PROFILE>__<KEY>`` variables;
see :mod:`lance_namespace_async._profiles` for the layering. Options may come before
or after the command. IDs join names with ``--delimiter`` (default ``.``); the empty
string is the root namespace.

Output: ``--output table`` (rich) by default on a terminal; otherwise ``json`` (one
document) or, for ``ls``, ``crawl``, ``query`` and ``versions``, ``jsonl`` (one object
per line, streamed as found, so a crawl never sits in memory). Responses print as the
generated models' ``to_dict()`` without the transport ``context``. Values under secret-looking keys
(token, secret, password, credential, api key, ...) are printed as ``***``
everywhere, and known secret values are scrubbed from every message and traceback.

Exit codes::

    0    success
    1    any other error (internal, unsupported operation, unexpected)
    2    usage, configuration or invalid input (argparse's convention; codes 13, 20)
    3    not found (codes 1, 4, 6, 8, 10, 11, 12, 22)
    4    already exists (codes 2, 5, 7, 9, 23)
    5    conflict with the object's state: namespace not empty (3), concurrent
         modification (14), invalid table state (19)
    6    authentication or permission (codes 16, 15; HTTP 401, 403)
    7    unavailable: service unavailable (17), throttled (21), timeouts, connection failures
    130  interrupted (Ctrl-C)
    141  stdout closed early (``lance-ns crawl | head``)

Errors are one line, ``lance-ns: error: <message>``, on stderr; ``--verbose`` adds the
traceback (scrubbed too) and logs the connection (masked) first.

The commands drive the async API through one ``anyio.run`` per invocation rather than
``connect_sync``: the CLI owns its main thread, so an event loop there needs no portal
thread or cross-thread hop per call, ``crawl`` streams straight from the async
iterator, and Ctrl-C cancels the calls in flight and closes the backend through
``async with``. Every call keeps its backend's timeouts; ``--timeout`` overrides them
and is each call's whole deadline (connecting, the answer, retries), so a server that
trickles its answer cannot hold the command for ever.

``serve`` reads its bearer token from an environment variable rather than an argument,
because arguments are visible to every user of the machine (``ps``) and end up in
shell history; it exits 0 after a clean shutdown (SIGTERM or Ctrl-C).

Layer (ARCHITECTURE.md): the top, beside ``spark`` and ``testing``. May import every
layer below (the server, the facade, the core); backends only by name through
``connect()``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType

from .. import errors
from . import catalog, data, jobs, serve
from .common import (
    EXIT_ALREADY_EXISTS,
    EXIT_AUTH,
    EXIT_BROKEN_PIPE,
    EXIT_CONFLICT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    _add_connection_options,
    _add_output_options,
    _backend_secret_keys,
    _connect,
    _connection,
    _option,
    _report,
    _Scrubber,
    exit_code_for,
)
from .output import _Output
from .profiles import Connection

__all__ = [
    "EXIT_ALREADY_EXISTS",
    "EXIT_AUTH",
    "EXIT_BROKEN_PIPE",
    "EXIT_CONFLICT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "exit_code_for",
    "main",
]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lance-ns",
        description="Manage Lance Namespace catalogs (directory, REST, Iceberg, Unity, Glue, "
        "Hive) and serve them as a Lance REST Namespace.",
        epilog="Exit codes: 0 ok, 1 other error, 2 usage/invalid input, 3 not found, "
        "4 already exists, 5 conflict, 6 auth, 7 unavailable, 130 interrupted.",
    )
    _add_connection_options(parser, top=True)
    _add_output_options(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, help_text: str, *, output: bool = True) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name, help=help_text, description=help_text[0].upper() + help_text[1:] + "."
        )
        _add_connection_options(sub, top=False)
        if output:
            _add_output_options(sub)
        sub.set_defaults(command_parser=sub)
        return sub

    catalog.add_commands(command)
    data.add_commands(command)
    jobs.add_commands(command)
    serve.add_command(command)
    return parser


#: command name -> (handler, whether its output is a listing)
_COMMANDS = {**catalog.COMMANDS, **data.COMMANDS, **jobs.COMMANDS}


async def _run(args: argparse.Namespace, connection: Connection, scrub: _Scrubber) -> None:
    from .._core.timeout import USE_DEFAULT, call_timeout

    handler, listing = _COMMANDS[args.command]
    out = _Output(_option(args, "output"), _option(args, "delimiter", "."), listing=listing)
    if not out.delimiter:
        raise errors.InvalidInputError("--delimiter must not be empty")
    if out.format == "parquet" and args.command not in data.PARQUET_COMMANDS:
        raise errors.InvalidInputError("--output parquet applies to query only")
    namespace = _connect(args, connection, scrub)
    out.secret_keys = _backend_secret_keys(namespace)
    async with namespace:
        with call_timeout(_option(args, "timeout", USE_DEFAULT)):
            await handler(namespace, args, out)


#: how long cleanup may take after Ctrl-C before the process exits anyway
INTERRUPT_GRACE_SECONDS = 5.0


def _exit_interrupted() -> None:
    print("lance-ns: interrupted", file=sys.stderr, flush=True)
    os._exit(EXIT_INTERRUPTED)


@contextlib.contextmanager
def _ctrl_c_always_exits() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt at once, and the process ends within a grace period.

    asyncio's own handler only cancels the main task and waits for it; a call
    that does not finish cancelling (a socket read deep in a transport) would
    then keep the command alive. Here cleanup gets ``INTERRUPT_GRACE_SECONDS``.
    """

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        watchdog = threading.Timer(INTERRUPT_GRACE_SECONDS, _exit_interrupted)
        watchdog.daemon = True
        watchdog.start()
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush stays quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # not a real file (captured output)
    finally:
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lance-ns`` script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    command_parser: argparse.ArgumentParser = args.command_parser
    verbose = bool(_option(args, "verbose", False))
    scrub = _Scrubber()
    try:
        if args.command == "serve":
            given = list(sys.argv[1:] if argv is None else argv)
            return serve.run(parser, command_parser, given, args, scrub)
        connection = _connection(command_parser, args)
        scrub.add(connection.secret_values())
        if args.command == "config":
            return catalog._show_config(args, connection)
        import anyio

        with _ctrl_c_always_exits():
            anyio.run(_run, args, connection, scrub)
        return EXIT_OK
    except KeyboardInterrupt:
        print("lance-ns: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        _report(exc, verbose=verbose, scrub=scrub, args=args)
        return exit_code_for(exc)


if __name__ == "__main__":
    sys.exit(main())
