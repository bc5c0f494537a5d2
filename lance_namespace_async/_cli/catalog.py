"""The catalog commands of ``lance-ns``: namespaces and tables (ls, describe, create,
drop, declare, register, rename), the crawl and ``config``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .. import errors
from .common import (
    EXIT_OK,
    _add_properties_option,
    _backend_secret_keys,
    _id,
    _lower,
    _object_properties,
    _option,
    _positive_int,
)
from .output import _cell, _console, _Output, _response_dict
from .profiles import SOURCE_ARGS, Connection

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID
    from rich.text import Text

    from .._core.base import AsyncLanceNamespace
    from ..models import (
        DescribeTableResponse,
        ListNamespacesResponse,
        ListTablesResponse,
    )

CommandFactory = Callable[..., argparse.ArgumentParser]


def add_commands(command: CommandFactory) -> None:
    """Register the catalog commands with the parser's ``command`` factory."""
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
    from .._facade.crawl import iter_namespaces, iter_tables

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
    from .._facade.crawl import crawl

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


COMMANDS = {
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


def _show_config(args: argparse.Namespace, connection: Connection) -> int:
    from .._core.registry import connect

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
