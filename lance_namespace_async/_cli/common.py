"""What every ``lance-ns`` command shares: exit codes, option types, the connection,
identifiers as typed, secret scrubbing and the one-line error report."""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from .._core.identifiers import Identifier, join_identifier, parse_identifier
from .profiles import SOURCE_ARGS, Connection, parse_assignments, resolve_connection

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

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
        choices=["table", "json", "jsonl", "parquet"],
        default=argparse.SUPPRESS,
        help="table (default on a terminal), json, jsonl or parquet (query)",
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


def _connect(
    args: argparse.Namespace, connection: Connection, scrub: _Scrubber
) -> AsyncLanceNamespace:
    """Build the backend (no I/O); with --verbose log the connection, masked, either way."""
    from .._core.registry import connect

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


def _action(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse.ArgumentParser:
    """A subcommand's action (``mv create``, ``jobs describe``...) with the connection and
    output options every command takes."""
    sub = actions.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:])
    _add_connection_options(sub, top=False)
    _add_output_options(sub)
    return sub
