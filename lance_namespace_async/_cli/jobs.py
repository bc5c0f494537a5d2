"""``lance-ns mv create|refresh``, ``lance-ns backfill``, ``lance-ns jobs describe|cancel|wait``.

The commands only call the protocol's operations (CreateMaterializedView,
RefreshMaterializedView, AlterTableBackfillColumns, DescribeTransaction,
AlterTransaction) with their fields as options, so they work on every backend, ``rest``
included. Refresh and backfill answer a job id at once; ``--wait`` then follows the job
with a progress bar on stderr (rich, which the CLI already draws its bars with) until it
ends, and exits with the job's error code if it failed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import errors
from .common import _action, _id, _positive_int
from .output import _Output, _response_dict

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from .._core.base import AsyncLanceNamespace

Handler = Callable[["AsyncLanceNamespace", argparse.Namespace, _Output], Any]


def _add_job_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="NAME", help="the Spark cluster (default: default)")
    _add_wait_options(parser)


def _add_wait_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        action="store_true",
        help="follow the job until it ends (always, unless the backend is rest: a job of "
        "another backend runs in this command's own Spark driver, which stops with it)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --wait: progress bar on stderr (default: when stderr is a terminal)",
    )


def add_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    mv = command("mv", "create or refresh a materialized view")
    views = mv.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = _action(views, "create", "create a materialized view of a SQL query")
    create.add_argument("id", metavar="NAME")
    create.add_argument("--query", required=True, help="SQL over tables of the same namespace")
    create.add_argument(
        "--schema", required=True, metavar="JSON", help="the output schema (JsonArrowSchema)"
    )
    create.add_argument("--kind", default="query", choices=["query", "udtf", "chunker"])
    create.add_argument("--with-no-data", action="store_true", help="create it empty")
    refresh = _action(views, "refresh", "recompute a materialized view on Spark (a job)")
    refresh.add_argument("id", metavar="NAME")
    refresh.add_argument("--src-version", type=int, metavar="N")
    refresh.add_argument("--max-rows-per-fragment", type=_positive_int, metavar="N")
    refresh.add_argument("--concurrency", type=_positive_int, metavar="N")
    refresh.add_argument("--source-task-size", type=_positive_int, metavar="N")
    _add_job_options(refresh)

    backfill = command("backfill", "fill a computed column on Spark (a job)")
    backfill.add_argument("id", metavar="NAME")
    backfill.add_argument("column", metavar="COLUMN")
    backfill.add_argument("--where", metavar="SQL", help="fill only the rows it selects")
    backfill.add_argument("--read-version", type=int, metavar="N")
    for option in ("task-size", "num-frags", "commit-granularity", "concurrency"):
        backfill.add_argument(f"--{option}", type=_positive_int, metavar="N")
    _add_job_options(backfill)

    jobs = command("jobs", "describe, cancel or wait for a job")
    actions = jobs.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (
        ("describe", "a job's status and properties"),
        ("cancel", "cancel a queued or running job"),
        ("wait", "follow a job until it ends"),
    ):
        sub = _action(actions, name, text)
        sub.add_argument("job_id", metavar="JOB_ID")
        sub.add_argument("--table", metavar="NAME", help="the job's table (optional)")
        if name == "wait":
            sub.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)


def _fields(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


async def _mv(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = list(_id(args, args.id, what="view ID", allow_root=False))
    shown = out.show_id(identifier)
    if args.action == "create":
        request: dict[str, Any] = {
            "id": identifier,
            "kind": args.kind,
            "source_query": args.query,
            "output_schema": args.schema,
            "with_no_data": bool(args.with_no_data),
        }
        response: Any = await ns.create_materialized_view(request)  # type: ignore[arg-type]
        job_id = getattr(response, "job_id", None)
        if isinstance(job_id, str) and job_id and (args.wait or _runs_here(ns)):
            await _follow(ns, args, out, f"created view {shown}, first refresh", job_id)
            return
        out.result(f"created view {shown}", _response_dict(response))
        return
    names = ("src_version", "max_rows_per_fragment", "concurrency", "source_task_size", "cluster")
    request = {"id": identifier, **_fields(args, names)}
    response = await ns.refresh_materialized_view(request)  # type: ignore[arg-type]
    await _started(ns, args, out, f"refreshing {shown}", response.job_id)


async def _backfill(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = list(_id(args, args.id, what="table ID", allow_root=False))
    names = (
        "where",
        "read_version",
        "task_size",
        "num_frags",
        "commit_granularity",
        "concurrency",
        "cluster",
    )
    request = {"id": identifier, "column": args.column, **_fields(args, names)}
    response: Any = await ns.alter_table_backfill_columns(request)  # type: ignore[arg-type]
    shown = f"backfilling {args.column} of {out.show_id(identifier)}"
    await _started(ns, args, out, shown, response.job_id)


def _runs_here(ns: AsyncLanceNamespace) -> bool:
    """Whether a job this command starts runs in this process's Spark driver (a storage
    backend, not ``rest``): the driver is this command's child and stops when it exits,
    so the command follows the job to its end, ``--wait`` or not."""
    return type(ns).stores_tables


async def _started(
    ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output, doing: str, job_id: str
) -> None:
    if not args.wait and not _runs_here(ns):
        out.result(f"{doing}: job {job_id}", {"job_id": job_id})
        return
    await _follow(ns, args, out, doing, job_id)


def _job_ids(args: argparse.Namespace) -> list[str]:
    table = (
        [] if args.table is None else list(_id(args, args.table, what="table", allow_root=False))
    )
    return [*table, args.job_id]


async def _jobs(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    ids = _job_ids(args)
    if args.action == "describe":
        response: Any = await ns.describe_transaction({"id": ids})  # type: ignore[arg-type]
        out.result(f"job {args.job_id}: {response.status}", _response_dict(response))
    elif args.action == "cancel":
        request = {"id": ids, "actions": [{"setStatusAction": {"status": "CANCELLED"}}]}
        response = await ns.alter_transaction(request)  # type: ignore[arg-type]
        out.result(f"job {args.job_id}: cancel requested", _response_dict(response))
    else:
        await _follow(ns, args, out, f"job {args.job_id}", args.job_id)


class _JobProgress:
    """A rich progress bar on stderr: units (fragments, slices) done of the total."""

    def __init__(self, description: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from .output import _console

        self.progress: Progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=_console(sys.stderr),
            transient=False,
        )
        self.task: TaskID = self.progress.add_task(description, total=None)
        self.progress.start()

    def update(self, done: int, total: int) -> None:
        self.progress.update(self.task, completed=done, total=total)

    def stop(self) -> None:
        self.progress.stop()


async def _follow(
    ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output, doing: str, job_id: str
) -> None:
    from ..pipeline import JobCancelled, wait_for_job

    wanted = args.progress if args.progress is not None else sys.stderr.isatty()
    bar = _JobProgress(doing) if wanted else None
    try:
        final = await wait_for_job(ns, job_id, on_progress=bar.update if bar else None)
    except JobCancelled:
        raise errors.ConcurrentModificationError(f"job {job_id} was cancelled") from None
    finally:
        if bar is not None:
            bar.stop()
    shown = _response_dict(final)
    version = (shown.get("properties") or {}).get("version")
    out.result(f"{doing}: job {job_id} succeeded (version {version})", {"job_id": job_id, **shown})


COMMANDS: dict[str, tuple[Handler, bool]] = {
    "mv": (_mv, False),
    "backfill": (_backfill, False),
    "jobs": (_jobs, False),
}
