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
    create.add_argument(
        "--kind",
        choices=["query", "udtf", "chunker"],
        help="query (default), or a view mapping the query's rows through a Python callable "
        "(needs --udtf-spec or --udtf-pickle; refused unless the operator allows UDFs)",
    )
    code = create.add_mutually_exclusive_group()
    code.add_argument(
        "--udtf-spec",
        metavar="FILE",
        help="the view's udtf_spec (the protocol's MaterializedViewUdtfEntry) as JSON "
        "(- reads stdin)",
    )
    code.add_argument(
        "--udtf-pickle",
        metavar="FILE",
        help="the callable pickled with cloudpickle; its base64 and SHA-256 are computed here",
    )
    create.add_argument(
        "--udtf-name", metavar="NAME", help="with --udtf-pickle (default: FILE's stem)"
    )
    create.add_argument("--udtf-version", metavar="V", default="1", help="with --udtf-pickle")
    create.add_argument(
        "--input-columns", metavar="A,B", help="with --udtf-pickle: the query's columns it reads"
    )
    create.add_argument("--with-no-data", action="store_true", help="create it empty")
    _add_wait_options(create)  # the first refresh's job, when not --with-no-data
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

    jobs = command("jobs", "describe, cancel or wait for a job; prune old job records")
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
    prune = _action(actions, "prune", "delete the records of jobs finished long ago")
    prune.add_argument(
        "--older-than-days",
        type=_positive_float,
        metavar="DAYS",
        help="finished more than DAYS ago (default: the backend's job_retention_days, 30)",
    )


def _fields(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


async def _mv(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    identifier = list(_id(args, args.id, what="view ID", allow_root=False))
    shown = out.show_id(identifier)
    if args.action == "create":
        request: dict[str, Any] = {
            "id": identifier,
            "source_query": args.query,
            "output_schema": args.schema,
            "with_no_data": bool(args.with_no_data),
        }
        spec = _udtf_spec(args)
        request["kind"] = args.kind or (spec or {}).get("kind") or "query"
        if spec is not None:
            request["udtf_spec"] = spec
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


#: the most bytes --udtf-spec or --udtf-pickle reads (the payload's own bound is 1 MiB
#: decoded, checked by the backend; base64 and JSON add a third)
_MAX_UDTF_FILE_BYTES = 2 * 1024 * 1024


def _read_bounded(path: str, what: str) -> bytes:
    try:
        if path == "-":
            data = sys.stdin.buffer.read(_MAX_UDTF_FILE_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(_MAX_UDTF_FILE_BYTES + 1)
    except OSError as exc:
        raise errors.InvalidInputError(f"{what}: cannot read {path!r}: {exc.strerror}") from None
    if len(data) > _MAX_UDTF_FILE_BYTES:
        raise errors.InvalidInputError(f"{what}: {path!r} exceeds {_MAX_UDTF_FILE_BYTES} bytes")
    return data


def _udtf_spec(args: argparse.Namespace) -> dict[str, Any] | None:
    """The request's ``udtf_spec`` from ``--udtf-spec`` (JSON, as the protocol writes it) or
    ``--udtf-pickle`` (the pickled callable: base64 and SHA-256 computed here, never
    unpickled); None for a query view. The backend checks it again and refuses a UDF view
    (code 0) unless its operator allows UDFs."""
    import base64
    import hashlib
    import json
    from pathlib import Path

    kind = args.kind
    if args.udtf_spec is None and args.udtf_pickle is None:
        if kind in ("udtf", "chunker"):
            raise errors.InvalidInputError(f"a {kind} view needs --udtf-spec or --udtf-pickle")
        return None
    if kind == "query":
        raise errors.InvalidInputError("a query view takes no --udtf-spec or --udtf-pickle")
    if args.udtf_spec is not None:
        try:
            spec = json.loads(_read_bounded(args.udtf_spec, "--udtf-spec"))
        except ValueError:
            raise errors.InvalidInputError("--udtf-spec: the file is not JSON") from None
        if not isinstance(spec, dict):
            raise errors.InvalidInputError("--udtf-spec: the file must hold a JSON object")
        if kind is not None:
            spec.setdefault("kind", kind)
        if spec.get("kind") not in ("udtf", "chunker"):
            raise errors.InvalidInputError("--udtf-spec: its kind must be udtf or chunker")
        return spec
    if kind is None:
        raise errors.InvalidInputError("--udtf-pickle needs --kind udtf or --kind chunker")
    payload = _read_bounded(args.udtf_pickle, "--udtf-pickle")
    columns = [c.strip() for c in (args.input_columns or "").split(",") if c.strip()]
    return {
        "kind": kind,
        "udtf": base64.b64encode(payload).decode(),
        "udtf_sha": hashlib.sha256(payload).hexdigest(),
        "udtf_name": args.udtf_name or Path(args.udtf_pickle).stem,
        "udtf_version": args.udtf_version,
        **({"input_columns": columns} if columns else {}),
    }


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


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number") from None
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError("must be > 0")
    return number


async def _jobs(ns: AsyncLanceNamespace, args: argparse.Namespace, out: _Output) -> None:
    if args.action == "prune":
        from ..pipeline._jobs import prune_jobs

        pruned = await prune_jobs(ns, older_than_days=args.older_than_days)
        out.result(f"pruned {len(pruned)} job record(s)", {"pruned": pruned})
        return
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
