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
    lance-ns serve [--host H] [--port P] [--auth-token-env VAR]   the REST adapter
                   [--max-connections N] [--header-timeout S] ... (connection limits)

The connection is ``--impl`` + ``--prop key=value``, or a profile (``--profile``,
``$LANCE_NS_PROFILE``) of the config file (``--config``, ``$LANCE_NS_CONFIG``,
``~/.config/lance-ns/config.yaml``) and of ``LANCE_NS_<PROFILE>__<KEY>`` variables;
see :mod:`lance_namespace_async._profiles` for the layering. Options may come before
or after the command. IDs join names with ``--delimiter`` (default ``.``); the empty
string is the root namespace.

Output: ``--output table`` (rich) by default on a terminal; otherwise ``json`` (one
document) or, for ``ls`` and ``crawl``, ``jsonl`` (one object per line, streamed as
found, so a crawl never sits in memory). Responses print as the generated models'
``to_dict()`` without the transport ``context``. Values under secret-looking keys
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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from . import errors
from ._identifiers import Identifier, join_identifier, parse_identifier
from ._profiles import (
    SOURCE_ARGS,
    Connection,
    mask_secrets,
    parse_assignments,
    resolve_connection,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, Task, TaskID
    from rich.text import Text

    from ._base import AsyncLanceNamespace
    from .models import (
        DescribeTableResponse,
        ListNamespacesResponse,
        ListTablesResponse,
    )

__all__ = ["exit_code_for", "main"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_ALREADY_EXISTS = 4
EXIT_CONFLICT = 5
EXIT_AUTH = 6
EXIT_UNAVAILABLE = 7
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

_EXIT_BY_CLASS: tuple[tuple[tuple[type[BaseException], ...], int], ...] = (
    ((errors.InvalidInputError, errors.TableSchemaValidationError), EXIT_USAGE),
    ((errors.NotFoundError,), EXIT_NOT_FOUND),
    ((errors.AlreadyExistsError,), EXIT_ALREADY_EXISTS),
    (
        (
            errors.NamespaceNotEmptyError,
            errors.ConcurrentModificationError,
            errors.InvalidTableStateError,
        ),
        EXIT_CONFLICT,
    ),
    ((errors.UnauthenticatedError, errors.PermissionDeniedError), EXIT_AUTH),
    (
        (errors.ServiceUnavailableError, errors.ThrottlingError, TimeoutError, ConnectionError),
        EXIT_UNAVAILABLE,
    ),
)


def exit_code_for(error: BaseException) -> int:
    """The exit code of the class of ``error`` (see the table in the module docstring)."""
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    for classes, code in _EXIT_BY_CLASS:
        if isinstance(error, classes):
            return code
    return EXIT_ERROR


# -- the parser ------------------------------------------------------------------------------


def _port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be an integer") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError("must be between 1 and 65535")
    return number


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be an integer") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return number


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds") from None
    if not number > 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return number


def _add_connection_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """Options every command takes, before or after the command name.

    Defaults are SUPPRESS so an option given on one side of the command name is not
    reset by the other parser; ``--prop`` keeps one list per side and both are merged.
    """
    group = parser.add_argument_group("connection")
    group.add_argument("--profile", default=argparse.SUPPRESS, help="profile to connect with")
    group.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="config file (default: $LANCE_NS_CONFIG, else ~/.config/lance-ns/config.yaml)",
    )
    group.add_argument(
        "--impl",
        default=argparse.SUPPRESS,
        help="backend: dir, rest, iceberg, unity, glue, hive or a class path",
    )
    group.add_argument(
        "--prop",
        dest="top_prop" if top else "prop",
        action="append",
        metavar="KEY=VALUE",
        default=argparse.SUPPRESS,
        help="backend property, repeatable; overrides the profile's",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log the connection (secrets masked) and print tracebacks of errors",
    )


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument(
        "-o",
        "--output",
        choices=["table", "json", "jsonl"],
        default=argparse.SUPPRESS,
        help="table (default on a terminal), json or jsonl",
    )
    group.add_argument(
        "--delimiter",
        default=argparse.SUPPRESS,
        help="delimiter of the names in IDs (default: '.')",
    )
    group.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        default=argparse.SUPPRESS,
        help="deadline of each catalog call, retries included (default: the backend's)",
    )


def _lower(value: str) -> str:
    return value.lower()


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

    ls = command("ls", "list the namespaces and tables directly under a namespace")
    ls.add_argument("id", nargs="?", default="", metavar="ID", help="namespace (default: root)")

    describe = command("describe", "describe a table, or a namespace with --namespace")
    describe.add_argument("id", nargs="?", default=None, metavar="ID")
    describe.add_argument(
        "--namespace", action="store_true", help="ID names a namespace (no ID: the root)"
    )
    describe.add_argument(
        "--detailed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="load version, schema and stats of a table (default: yes)",
    )
    describe.add_argument("--version", type=int, metavar="N", help="table version to describe")

    create = command("create-namespace", "create a namespace")
    create.add_argument("id", metavar="ID")
    create.add_argument(
        "--mode", type=_lower, choices=["create", "exist_ok", "overwrite"], default="create"
    )
    _add_properties_option(create)

    drop_ns = command("drop-namespace", "drop a namespace")
    drop_ns.add_argument("id", metavar="ID")
    drop_ns.add_argument(
        "--mode",
        type=_lower,
        choices=["fail", "skip"],
        default="fail",
        help="skip: succeed when the namespace does not exist",
    )
    drop_ns.add_argument(
        "--behavior",
        type=_lower,
        choices=["restrict", "cascade"],
        default="restrict",
        help="cascade: drop its tables and child namespaces too",
    )

    declare = command("declare", "declare a table (reserve its name and location, no data)")
    declare.add_argument("id", metavar="ID")
    declare.add_argument("--location", help="storage location (default: the backend's choice)")
    _add_properties_option(declare)

    register = command("register", "register an existing Lance table at LOCATION")
    register.add_argument("id", metavar="ID")
    register.add_argument("location", metavar="LOCATION")
    register.add_argument("--mode", type=_lower, choices=["create", "overwrite"], default="create")
    _add_properties_option(register)

    deregister = command("deregister", "remove a table from the catalog, keeping its data")
    deregister.add_argument("id", metavar="ID")

    drop = command("drop", "drop a table and its data")
    drop.add_argument("id", metavar="ID")

    rename = command("rename", "rename or move a table; NEW_ID is the whole new identifier")
    rename.add_argument("id", metavar="ID")
    rename.add_argument("new_id", metavar="NEW_ID")

    crawl = command("crawl", "list every table below ROOT, following child namespaces")
    crawl.add_argument("root", nargs="?", default="", metavar="ROOT", help="default: root")
    crawl.add_argument(
        "--describe", action="store_true", help="add each table's location, version, properties"
    )
    crawl.add_argument(
        "--concurrency", type=_positive_int, default=64, help="calls in flight (default: 64)"
    )
    crawl.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )

    command("config", "show the resolved connection and where each setting came from")

    serve = command("serve", "serve a namespace backend as a Lance REST Namespace", output=False)
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
        "--expose-storage-options",
        action="store_true",
        help="answer DescribeTable/DeclareTable with the backend's storage options, "
        "storage.* credentials included (default: never; give clients their own)",
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
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level (default: info)",
    )
    return parser


def _add_properties_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--property",
        dest="properties",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="property of the object, repeatable",
    )


# -- options -------------------------------------------------------------------------------------


def _option(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    return getattr(args, name, default)


def _properties(parser: argparse.ArgumentParser, items: Sequence[str]) -> dict[str, str]:
    """``--prop`` items as a map; a malformed one is a usage error that never quotes it."""
    try:
        return parse_assignments(items, "--prop")
    except errors.InvalidInputError as exc:
        parser.error(exc.message)


def _connection(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Connection:
    items = [*_option(args, "top_prop", []), *_option(args, "prop", [])]
    return resolve_connection(
        impl=_option(args, "impl"),
        properties=_properties(parser, items),
        profile=_option(args, "profile"),
        config=_option(args, "config"),
        environ=os.environ,
    )


def _backend_secret_keys(namespace: object) -> frozenset[str]:
    """Keys the backend's own configuration flags as secret (a URL whose password alone
    is masked is not: it is shown, masked, like any other value)."""
    config = getattr(namespace, "config", None)
    redacted = getattr(config, "redacted_properties", None)
    if redacted is None:
        return frozenset()
    shown: dict[str, str] = redacted()
    original = getattr(config, "properties", {})
    return frozenset(k for k, v in shown.items() if original.get(k) != v and v == errors.REDACTED)


class _Scrubber:
    """Removes secrets from text the CLI prints on stderr: redact() plus the known values."""

    def __init__(self) -> None:
        self.values: list[str] = []

    def add(self, values: Sequence[str]) -> None:
        self.values = sorted({*self.values, *values}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        text = errors.redact(text)
        for value in self.values:
            text = text.replace(value, errors.REDACTED)
        return text


def _log_connection(connection: Connection, secret_keys: frozenset[str], scrub: _Scrubber) -> None:
    where = f"profile {connection.profile!r}" if connection.profile else "command line"
    if connection.config_path is not None:
        where += f" (config file {connection.config_path})"
    shown = connection.masked_properties(secret_keys)
    props = ", ".join(
        f"{k}={v} [{connection.sources.get(k, SOURCE_ARGS)}]" for k, v in shown.items()
    )
    print(
        scrub(
            f"lance-ns: connecting to {connection.impl} from {where}: {props or 'no properties'}"
        ),
        file=sys.stderr,
    )


# -- output --------------------------------------------------------------------------------------


def _console(file: TextIO) -> Console:
    try:
        from rich.console import Console
    except ImportError as exc:
        raise errors.MissingDependencyError(
            "table output and the progress bar need rich, a dependency of "
            "lance-namespace-async that is missing here: pip install 'rich>=13' "
            "(or use --output json)"
        ) from exc
    return Console(file=file, soft_wrap=False, highlight=False, emoji=False)


def _response_dict(response: Any) -> dict[str, Any]:
    """The response as JSON data, without the transport ``context`` (response headers)."""
    data: dict[str, Any] = response.to_dict() if hasattr(response, "to_dict") else dict(response)
    data.pop("context", None)
    return data


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


class _Output:
    """Prints results in the chosen format, secrets masked."""

    def __init__(self, fmt: str | None, delimiter: str, *, listing: bool) -> None:
        self.stdout = sys.stdout
        if fmt is None:
            fmt = "table" if self.stdout.isatty() else ("jsonl" if listing else "json")
        self.format = fmt
        self.delimiter = delimiter
        self.secret_keys: frozenset[str] = frozenset()

    def show_id(self, identifier: Sequence[str]) -> str:
        return join_identifier(identifier, self.delimiter) if identifier else "(root)"

    def mask(self, data: Any) -> Any:
        return mask_secrets(data, self.secret_keys)

    def _line(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def result(self, summary: str, data: Mapping[str, Any]) -> None:
        """One response: a summary line and its fields, or the JSON document."""
        masked = self.mask(dict(data))
        if self.format == "json":
            self._line(json.dumps(masked, indent=2, sort_keys=True))
        elif self.format == "jsonl":
            self._line(json.dumps(masked, sort_keys=True))
        else:
            console = _console(self.stdout)
            if summary:
                console.print(summary, markup=False)
            rows = [(k, _cell(v)) for k, v in masked.items() if v not in (None, {}, [])]
            if rows:
                self.table(["FIELD", "VALUE"], rows, console=console)

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        console: Console | None = None,
    ) -> None:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        console = console or _console(self.stdout)
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in columns:
            table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))  # names are data, never markup
        console.print(table)

    def stream(self, columns: Sequence[str], empty: str) -> _Stream:
        return _Stream(self, columns, empty)


class _Stream:
    """Items of a listing: jsonl lines or a JSON array as they come, a table at the end."""

    def __init__(self, output: _Output, columns: Sequence[str], empty: str) -> None:
        self.output = output
        self.columns = columns
        self.empty = empty
        self.rows: list[Sequence[str]] = []
        self.count = 0

    def add(self, item: Mapping[str, Any], row: Sequence[str]) -> None:
        out = self.output
        if out.format == "table":
            self.rows.append(row)
        elif out.format == "jsonl":
            out._line(json.dumps(out.mask(dict(item)), sort_keys=True))
        else:
            prefix = "[\n  " if self.count == 0 else ",\n  "
            out.stdout.write(prefix + json.dumps(out.mask(dict(item)), sort_keys=True))
            out.stdout.flush()
        self.count += 1

    def close(self) -> None:
        out = self.output
        if out.format == "json":
            out._line("[]" if self.count == 0 else "\n]")
        elif out.format == "table":
            if self.rows:
                out.table(self.columns, self.rows)
            else:
                _console(out.stdout).print(self.empty, markup=False)


# -- the commands --------------------------------------------------------------------------------


def _id(args: argparse.Namespace, value: str | None, *, what: str, allow_root: bool) -> Identifier:
    identifier = parse_identifier(value or "", _option(args, "delimiter", "."))
    if not identifier and not allow_root:
        raise errors.InvalidInputError(f"{what} must not be empty (the root namespace)")
    typed: list[Identifier] = args.__dict__.setdefault("typed_ids", [])
    typed.append(identifier)
    return identifier


#: how backends and the REST wire join names in their messages
_MESSAGE_DELIMITERS = ("$", ".")


def _as_typed(message: str, identifiers: Sequence[Identifier], delimiter: str) -> str:
    """Identifiers in ``message`` spelled as the user typed them (``--delimiter``).

    Backends name objects by their wire form (``sales$eu$invoices``) or with dots;
    the user typed ``sales.eu.invoices`` (or used another delimiter). The IDs of the
    command and their parents are rewritten, longest first so a parent never
    splits a longer match.
    """
    forms = {prefix for ident in identifiers for prefix in _prefixes(ident)}
    for ident in sorted(forms, key=lambda i: (-len(i), i)):
        shown = join_identifier(ident, delimiter)
        for internal in _MESSAGE_DELIMITERS:
            if internal != delimiter:
                # a whole word only: a location such as ".../6a94c738_a$b" stays as it is
                pattern = re.escape(join_identifier(ident, internal))
                message = re.sub(
                    rf"(?<![\w$./\\-]){pattern}(?![\w$/\\-]|\.\w)",
                    shown.replace("\\", "\\\\"),  # a literal replacement
                    message,
                )
    return message


def _prefixes(identifier: Identifier) -> list[Identifier]:
    return [identifier[:end] for end in range(2, len(identifier) + 1)]


def _object_properties(args: argparse.Namespace) -> dict[str, str]:
    return parse_assignments(_option(args, "properties", []), "--property")


async def _names(names: AsyncIterator[str]) -> AsyncGenerator[str]:
    """Every name of a paged listing; none when the backend cannot list that kind."""
    pages: Any = names
    try:
        async with aclosing(pages):
            async for name in pages:
                yield name
    except errors.UnsupportedOperationError:
        return


async def _ls(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    from ._crawl import iter_namespaces, iter_tables

    parent = _id(args, args.id, what="ID", allow_root=True)
    stream = out.stream(["TYPE", "ID"], f"no namespaces or tables in {out.show_id(parent)}")
    for kind, listing in (
        ("namespace", iter_namespaces(ns, parent)),
        ("table", iter_tables(ns, parent)),
    ):
        names = _names(listing)
        async with aclosing(names):
            async for name in names:
                child = [*parent, name]
                stream.add({"type": kind, "id": child}, [kind, out.show_id(child)])
    stream.close()


async def _describe(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    if args.namespace:
        if args.version is not None:
            raise errors.InvalidInputError("--version applies to tables, not namespaces")
        identifier = _id(args, args.id, what="namespace ID", allow_root=True)
        response: Any = await ns.describe_namespace({"id": list(identifier)})  # type: ignore[arg-type]
        out.result(f"namespace {out.show_id(identifier)}", _response_dict(response))
        return
    if args.id is None:
        raise errors.InvalidInputError("describe needs a table ID (or --namespace)")
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    request: dict[str, Any] = {"id": list(identifier)}
    if args.detailed:
        request["load_detailed_metadata"] = True
    if args.version is not None:
        if args.version < 0:
            raise errors.InvalidInputError("--version must be >= 0")
        request["version"] = args.version
    response = await ns.describe_table(request)  # type: ignore[arg-type]
    out.result(f"table {out.show_id(identifier)}", _response_dict(response))


async def _create_namespace(
    ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output
) -> None:
    identifier = _id(args, args.id, what="namespace ID", allow_root=False)
    request: dict[str, Any] = {"id": list(identifier), "mode": args.mode}
    properties = _object_properties(args)
    if properties:
        request["properties"] = properties
    response = await ns.create_namespace(request)  # type: ignore[arg-type]
    verb = "created" if args.mode != "exist_ok" else "ensured"
    out.result(f"{verb} namespace {out.show_id(identifier)}", _response_dict(response))


async def _drop_namespace(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="namespace ID", allow_root=False)
    request = {"id": list(identifier), "mode": args.mode, "behavior": args.behavior}
    response = await ns.drop_namespace(request)  # type: ignore[arg-type]
    out.result(f"dropped namespace {out.show_id(identifier)}", _response_dict(response))


async def _declare(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    request: dict[str, Any] = {"id": list(identifier)}
    if args.location:
        request["location"] = args.location
    properties = _object_properties(args)
    if properties:
        request["properties"] = properties
    response = await ns.declare_table(request)  # type: ignore[arg-type]
    out.result(f"declared table {out.show_id(identifier)}", _response_dict(response))


async def _register(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    if not args.location:
        raise errors.InvalidInputError("LOCATION must not be empty")
    request: dict[str, Any] = {"id": list(identifier), "location": args.location, "mode": args.mode}
    properties = _object_properties(args)
    if properties:
        request["properties"] = properties
    response = await ns.register_table(request)  # type: ignore[arg-type]
    out.result(f"registered table {out.show_id(identifier)}", _response_dict(response))


async def _deregister(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    response = await ns.deregister_table({"id": list(identifier)})  # type: ignore[arg-type]
    out.result(f"deregistered table {out.show_id(identifier)}", _response_dict(response))


async def _drop(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    response = await ns.drop_table({"id": list(identifier)})  # type: ignore[arg-type]
    out.result(f"dropped table {out.show_id(identifier)}", _response_dict(response))


async def _rename(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = _id(args, args.id, what="table ID", allow_root=False)
    target = _id(args, args.new_id, what="NEW_ID", allow_root=False)
    # RenameTableRequest: the new name plus the namespace to move to (sent even when
    # unchanged, so NEW_ID always means the whole new identifier)
    request = {
        "id": list(identifier),
        "new_table_name": target[-1],
        "new_namespace_id": list(target[:-1]),
    }
    response = await ns.rename_table(request)  # type: ignore[arg-type]
    summary = f"renamed table {out.show_id(identifier)} to {out.show_id(target)}"
    out.result(summary, _response_dict(response))


class _CountingNamespace:
    """Forwards the crawler's calls and counts the namespaces whose tables it listed."""

    def __init__(self, inner: AsyncLanceNamespace, visited: Callable[[], None]) -> None:
        self._inner = inner
        self._visited = visited

    async def list_namespaces(self, request: Mapping[str, Any]) -> ListNamespacesResponse:
        return await self._inner.list_namespaces(request)  # type: ignore[arg-type]

    async def list_tables(self, request: Mapping[str, Any]) -> ListTablesResponse:
        response = await self._inner.list_tables(request)  # type: ignore[arg-type]
        if not request.get("page_token"):  # the crawler passes dicts; first page only
            self._visited()
        return response

    async def describe_table(self, request: Mapping[str, Any]) -> DescribeTableResponse:
        return await self._inner.describe_table(request)  # type: ignore[arg-type]


class _CrawlProgress:
    """A rich progress line on stderr: namespaces visited, tables found, tables/s."""

    def __init__(self) -> None:
        from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn
        from rich.text import Text

        class Rate(ProgressColumn):
            def render(self, task: Task) -> Text:
                elapsed = task.elapsed or 0.0
                rate = task.completed / elapsed if elapsed > 0 else 0.0
                return Text(f"{rate:,.1f} tables/s")

        self.progress: Progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[namespaces]:,} namespaces visited"),
            TextColumn("{task.completed:,.0f} tables found"),
            Rate(),
            console=_console(sys.stderr),
            transient=False,
            # rich would route stdout through the stderr console: results stay on stdout
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task: TaskID = self.progress.add_task("crawling", total=None, namespaces=0)
        self.namespaces = 0

    def visited(self) -> None:
        self.namespaces += 1
        self.progress.update(self.task, namespaces=self.namespaces)

    def found(self) -> None:
        self.progress.advance(self.task)

    def finish(self, description: str) -> None:
        self.progress.update(self.task, description=description)
        self.progress.stop()


async def _crawl(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    from ._crawl import crawl

    root = _id(args, args.root, what="ROOT", allow_root=True)
    show_progress = args.progress
    if show_progress is None:
        # a live bar and streamed lines on one terminal would garble each other
        streaming_to_terminal = out.format != "table" and out.stdout.isatty()
        show_progress = sys.stderr.isatty() and not streaming_to_terminal
    progress = _CrawlProgress() if show_progress else None
    target: Any = ns if progress is None else _CountingNamespace(ns, progress.visited)
    columns = ["ID", "LOCATION", "VERSION"] if args.describe else ["ID"]
    stream = out.stream(columns, f"no tables below {out.show_id(root)}")
    if progress is not None:
        progress.progress.start()
    outcome = "stopped"
    try:
        tables: Any = crawl(target, root, concurrency=args.concurrency, detailed=args.describe)
        async with aclosing(tables):
            async for table in tables:
                item: dict[str, Any] = {"id": list(table.id)}
                row = [out.show_id(table.id)]
                if table.description is not None:
                    described = _response_dict(table.description)
                    item["location"] = described.get("location")
                    item["version"] = described.get("version")
                    item["properties"] = described.get("properties")
                    row += [_cell(item["location"]), _cell(item["version"])]
                stream.add(item, row)
                if progress is not None:
                    progress.found()
        outcome = "done"
    finally:
        if progress is not None:
            progress.finish(outcome)
    stream.close()


_COMMANDS = {
    "ls": (_ls, True),
    "describe": (_describe, False),
    "create-namespace": (_create_namespace, False),
    "drop-namespace": (_drop_namespace, False),
    "declare": (_declare, False),
    "register": (_register, False),
    "deregister": (_deregister, False),
    "drop": (_drop, False),
    "rename": (_rename, False),
    "crawl": (_crawl, True),
}


async def _run(args: argparse.Namespace, connection: Connection, scrub: _Scrubber) -> None:
    from ._timeout import USE_DEFAULT, call_timeout

    handler, listing = _COMMANDS[args.command]
    out = _Output(_option(args, "output"), _option(args, "delimiter", "."), listing=listing)
    if not out.delimiter:
        raise errors.InvalidInputError("--delimiter must not be empty")
    namespace = _connect(args, connection, scrub)
    out.secret_keys = _backend_secret_keys(namespace)
    async with namespace:
        with call_timeout(_option(args, "timeout", USE_DEFAULT)):
            await handler(namespace, args, out)


def _connect(
    args: argparse.Namespace, connection: Connection, scrub: _Scrubber
) -> AsyncLanceNamespace:
    """Build the backend (no I/O); with --verbose log the connection, masked, either way."""
    from ._registry import connect

    try:
        namespace = connect(connection.impl, connection.properties)
    except Exception:
        if _option(args, "verbose", False):
            _log_connection(connection, frozenset(), scrub)
        raise
    secret_keys = _backend_secret_keys(namespace)
    scrub.add(connection.secret_values(secret_keys))
    if _option(args, "verbose", False):
        _log_connection(connection, secret_keys, scrub)
    return namespace


def _show_config(args: argparse.Namespace, connection: Connection) -> int:
    from ._registry import connect

    try:
        secret_keys = _backend_secret_keys(connect(connection.impl, connection.properties))
    except errors.LanceNamespaceError:
        secret_keys = frozenset()  # show what is configured even when it does not validate
    out = _Output(_option(args, "output"), ".", listing=False)
    masked = connection.masked_properties(secret_keys)
    data = {
        "profile": connection.profile,
        "config_file": str(connection.config_path) if connection.config_path else None,
        "impl": connection.impl,
        "properties": masked,
        "sources": {"impl": connection.impl_source, **dict(sorted(connection.sources.items()))},
        "profiles": list(connection.available_profiles),
    }
    if out.format == "table":
        console = _console(out.stdout)
        where = f"profile {connection.profile}" if connection.profile else "command line"
        if connection.config_path:
            where += f" ({connection.config_path})"
        console.print(f"{connection.impl} from {where}", markup=False)
        rows = [
            ["impl", connection.impl, connection.impl_source],
            *([k, v, connection.sources.get(k, SOURCE_ARGS)] for k, v in masked.items()),
        ]
        out.table(["KEY", "VALUE", "SOURCE"], rows, console=console)
    else:
        # masked above key by key; mask_secrets would hide the "secret"-named keys' sources too
        out._line(json.dumps(data, indent=2 if out.format == "json" else None))
    return EXIT_OK


# -- serve ---------------------------------------------------------------------------------------


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
    from . import server

    given = {name: getattr(args, name) for name in _LIMIT_OPTIONS}
    try:
        limits = server.ServerLimits(**{k: v for k, v in given.items() if v is not None})
    except errors.InvalidInputError as exc:
        parser.error(str(exc))
    _check_port_free(args.host, args.port)
    namespace = _connect(args, connection, scrub)
    server.create_app(namespace, auth_token=token)  # validate before announcing
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
            expose_storage_options=args.expose_storage_options,
            log_level=args.log_level,
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
        _close(namespace)
    return EXIT_OK


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


def _close(namespace: object) -> None:
    import asyncio

    from ._base import AsyncLanceNamespace

    if isinstance(namespace, AsyncLanceNamespace):
        asyncio.run(namespace.aclose())


# -- main ----------------------------------------------------------------------------------------


def _report(
    error: BaseException,
    *,
    verbose: bool,
    scrub: _Scrubber,
    args: argparse.Namespace | None = None,
) -> None:
    if verbose:
        trace = "".join(traceback.format_exception(error))
        print(scrub(trace.rstrip()), file=sys.stderr)
    if isinstance(error, errors.LanceNamespaceError):
        message = error.message
    else:
        message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if args is not None:
        typed = _option(args, "typed_ids", [])
        message = _as_typed(message, typed, _option(args, "delimiter", ".") or ".")
    print(f"lance-ns: error: {scrub(' '.join(message.split()))}", file=sys.stderr)


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
            return _serve(command_parser, args, scrub)
        connection = _connection(command_parser, args)
        scrub.add(connection.secret_values())
        if args.command == "config":
            return _show_config(args, connection)
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
