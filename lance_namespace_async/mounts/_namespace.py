"""The mounting namespace: several backends under one root, each under its mount's name.

Every operation routes by the first name of its id (the mount) to that mount's backend
with the name stripped, and answers carrying ids get it back in front. What the root
itself answers, as a read-only namespace holding only the mounts:

* ListNamespaces of the root lists the mount names (paged as every listing is: sorted,
  the token the last name given); ListTables of the root is empty; DescribeNamespace and
  NamespaceExists of the root answer that it exists, with no properties.
* CreateNamespace of the root or of a mount is NamespaceAlreadyExists (ExistOk answers
  the existing one; Overwrite is InvalidInput: a mount's root is the operator's); of any
  other top-level name it is InvalidInput, since the root holds mounts only.
* DropNamespace of the root or of a mount is InvalidInput; of a missing top-level name
  NamespaceNotFound (nothing with mode Skip).
* A table id naming no mount (``[table]``) is TableNotFound (InvalidInput for the
  operations that would create one there: CreateTable, DeclareTable, RegisterTable,
  CreateMaterializedView); one under a missing mount is NamespaceNotFound for those and
  TableNotFound otherwise.
* A request naming two mounts (RenameTable's ``new_namespace_id``, the entries of
  BatchCreateTableVersions and BatchCommitTables) is InvalidInput before any mount sees
  it: a table id never crosses mounts.

Names a mount cannot be given (``..``, empty, with the delimiter or control
characters) are InvalidInput, not NotFound, in the first place of an id.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Self

import anyio
import attrs

from .. import errors, models
from .._core.base import OPERATIONS, AsyncLanceNamespace, Operation, checked_call
from .._core.identifiers import validate_name
from .._core.modes import CREATE_MODES, DROP_MODES, parse_mode
from .._core.paging import check_limit, page_of, token_of
from .._core.pipeline_hook import is_job_id
from .._core.readiness import DEFAULT_READY_TIMEOUT, PartReadiness, probe_part
from .._core.registry import connect
from ._config import (
    IMPL_KEY,
    MountsConfig,
    check_mount_name,
    masked_mount_properties,
    split_mounts,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["MountNamespace"]

_NAMESPACE_OPERATIONS = frozenset(
    {
        "create_namespace",
        "list_namespaces",
        "describe_namespace",
        "drop_namespace",
        "namespace_exists",
        "list_tables",
    }
)
#: table operations that would make a table where their id points
_CREATING = frozenset(
    {"create_table", "declare_table", "register_table", "create_materialized_view"}
)
_TRANSACTIONS = frozenset({"describe_transaction", "alter_transaction"})
#: ListAllTables' page token: "<mount>:<that mount's own token, empty at its start>"
_TOKEN_SEPARATOR = ":"


@attrs.frozen
class _ListOperations:
    """``list_operations()``: on the class every operation (each is routed); on an
    instance those at least one mount supports. One a mount lacks answers code 0 there,
    from that mount's backend, as it would served alone."""

    def __get__(self, instance: MountNamespace | None, owner: type) -> Callable[[], list[str]]:
        if instance is None:
            return lambda: [op.method for op in OPERATIONS]
        return instance._operations_of_mounts


class MountNamespace(AsyncLanceNamespace):
    """Several backends as one Lance namespace: ``{name: backend}``, each under ``name``.

    From the library, with namespaces you built::

        ns = MountNamespace({"sales": connect("glue", {...}), "ml": connect("dir", {...})})

    or from properties (``connect("mounts", {"mount.sales.impl": "glue",
    "mount.sales.region": "eu-west-1", "mount.ml.impl": "dir", "mount.ml.root": ...})``),
    which is how ``lance-ns serve --mount`` builds it and how its storage workers rebuild
    it. The mounting namespace owns its mounts: :meth:`aclose` closes each.
    """

    impl_name: ClassVar[str] = "mounts"
    list_operations = _ListOperations()

    def __init__(
        self, mounts: Mapping[str, AsyncLanceNamespace], config: MountsConfig | None = None
    ) -> None:
        if not isinstance(mounts, Mapping) or not mounts:
            raise errors.InvalidInputError("MountNamespace needs at least one {name: namespace}")
        for name, backend in mounts.items():
            check_mount_name(name)
            if not isinstance(backend, AsyncLanceNamespace):
                raise errors.InvalidInputError(
                    f"mount {name!r} must be an AsyncLanceNamespace, got {type(backend).__name__}"
                )
            if isinstance(backend, MountNamespace):
                raise errors.InvalidInputError(f"mount {name!r}: mounts do not nest")
        super().__init__(config if config is not None else MountsConfig())
        self._mounts: dict[str, AsyncLanceNamespace] = dict(sorted(mounts.items()))

    @classmethod
    def from_properties(cls, properties: Mapping[str, str] | None) -> Self:
        config = MountsConfig.from_properties(properties)
        backends: dict[str, AsyncLanceNamespace] = {}
        shown: dict[str, str] = {}
        for name, given in split_mounts(config.properties).items():
            impl = given[IMPL_KEY]
            if impl == cls.impl_name:
                raise errors.InvalidInputError(f"mount {name!r}: mounts do not nest")
            own = {key: value for key, value in given.items() if key != IMPL_KEY}
            try:
                backend = connect(impl, own)
            except errors.LanceNamespaceError as exc:
                exc.message = f"mount {name!r}: {exc.message}"
                exc.args = (exc.message, *exc.args[1:])
                raise
            backends[name] = backend
            redacted = getattr(backend.config, "redacted_properties", None)
            shown.update(masked_mount_properties(name, given, redacted))
        return cls(backends, attrs.evolve(config, shown=shown))

    # -- what it is -----------------------------------------------------------------------

    @property
    def mounts(self) -> Mapping[str, AsyncLanceNamespace]:
        """The mounts by name (read-only), in name order."""
        return MappingProxyType(self._mounts)

    @property
    def storage_confined(self) -> bool:
        """Confined when every mount is: a served mount may not reach outside its root."""
        return all(backend.storage_confined for backend in self._mounts.values())

    def namespace_id(self) -> str:
        inner = ", ".join(f"{name}={b.namespace_id()}" for name, b in self._mounts.items())
        return f"MountNamespace({inner})"

    def _operations_of_mounts(self) -> list[str]:
        offered = {method for b in self._mounts.values() for method in b.list_operations()}
        return [op.method for op in OPERATIONS if op.method in offered]

    async def aclose(self) -> None:
        """Close every mount, even when one of them fails to (the first failure raised)."""
        failure: BaseException | None = None
        for backend in self._mounts.values():
            try:
                await backend.aclose()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def readiness_parts(self) -> Mapping[str, AsyncLanceNamespace]:
        """The mounts, each probed and reported on its own by the server's ``/readyz``
        (``_core.readiness.ReadinessParts``)."""
        return self.mounts

    async def mount_health(
        self, timeout: float = DEFAULT_READY_TIMEOUT
    ) -> dict[str, PartReadiness]:
        """Each mount's readiness (``/readyz``'s check), asked concurrently, each within
        ``timeout`` seconds, by mount name."""
        found: dict[str, PartReadiness] = {}

        async def probe(name: str, backend: AsyncLanceNamespace) -> None:
            found[name] = await probe_part(name, backend, timeout)

        async with anyio.create_task_group() as group:
            for name, backend in self._mounts.items():
                group.start_soon(probe, name, backend)
        return {name: found[name] for name in self._mounts}

    # -- finding the mount of an id --------------------------------------------------------

    def _mount_of(self, first: str, missing: type[errors.NotFoundError]) -> AsyncLanceNamespace:
        backend = self._mounts.get(first)
        if backend is None:
            # a name no mount can have is bad input, not a missing mount
            validate_name(first, storage_backed=True, what="mount name")
            raise missing(f"{first!r} is not a mount (mounts: {', '.join(self._mounts)})")
        return backend

    def _table_target(
        self, ident: Sequence[str], method: str
    ) -> tuple[str, AsyncLanceNamespace, list[str]]:
        """The mount, its backend and the id inside it of a table (or transaction) id."""
        creating = method in _CREATING
        if len(ident) < 2:
            if creating:
                raise errors.InvalidInputError(
                    "the root namespace holds only the mounts "
                    f"({', '.join(self._mounts)}): tables live inside one, <mount>$...$<table>"
                )
            if ident:
                validate_name(ident[0], storage_backed=True, what="table name")
            if method in _TRANSACTIONS:
                raise errors.TransactionNotFoundError("no transaction is recorded in the root")
            if not ident:
                raise errors.InvalidInputError("a table id must not be empty (the root)")
            raise errors.TableNotFoundError(
                f"table {ident[0]!r} not found: the root namespace holds only mounts"
            )
        missing: type[errors.NotFoundError] = (
            errors.NamespaceNotFoundError if creating else errors.TableNotFoundError
        )
        if method in _TRANSACTIONS:
            missing = errors.TransactionNotFoundError
        return ident[0], self._mount_of(ident[0], missing), list(ident[1:])


# -- the routes, one per operation -------------------------------------------------------------


def _ids(value: Any) -> tuple[str, ...]:
    """A request's id as a tuple; unset or null is the root."""
    if value is None or isinstance(value, models.Unset):
        return ()
    return tuple(value)


def _twin(backend: AsyncLanceNamespace, method: str) -> Callable[..., Any]:
    return checked_call(backend, method)


def _response(operation: Operation, body: Mapping[str, Any]) -> Any:
    return operation.response_class().from_dict(dict(body))


def _prefixed(answer: Any, field: str, mount: str) -> Any:
    """``answer`` with the id list in ``field`` (if any) given its mount back."""
    value = answer.get(field) if isinstance(answer, dict) else getattr(answer, field, None)
    if not isinstance(value, list):
        return answer
    if isinstance(answer, dict):
        return {**answer, field: [mount, *value]}
    return attrs.evolve(answer, **{field: [mount, *value]})


#: answers that carry ids of the mount's namespace, and their fields
_ANSWER_IDS: dict[str, str] = {
    "describe_table": "namespace",
    "drop_table": "id",
    "deregister_table": "id",
}


def _table_route(operation: Operation) -> Callable[..., Any]:
    method = operation.method

    async def route(self: MountNamespace, request: Any, *data: Any) -> Any:
        if method in _TRANSACTIONS and len(_ids(request.id)) == 1 and is_job_id(request):
            return await _job_of_any_mount(self, method, request)
        mount, backend, inner = self._table_target(_ids(request.id), method)
        changes: dict[str, Any] = {"id": inner}
        if method == "rename_table":
            target = request.new_namespace_id
            if target is not None and not isinstance(target, models.Unset):
                changes["new_namespace_id"] = _same_mount(mount, tuple(target), "RenameTable")
        answer = await _twin(backend, method)(attrs.evolve(request, **changes), *data)
        field = _ANSWER_IDS.get(method)
        return answer if field is None else _prefixed(answer, field, mount)

    return route


async def _job_of_any_mount(self: MountNamespace, method: str, request: Any) -> Any:
    """A job named by its id alone (``[lna-job-...]``, as the starting call answered it):
    the mount whose job it is answers; job ids are random, so at most one has it."""
    for backend in self._mounts.values():
        if not backend.stores_tables and backend.impl_name != "rest":
            continue
        try:
            return await _twin(backend, method)(request)
        except (errors.TransactionNotFoundError, errors.UnsupportedOperationError):
            continue
    raise errors.TransactionNotFoundError(f"no mount has job {request.id[0]!r}")


def _same_mount(mount: str, target: tuple[str, ...], what: str) -> list[str]:
    if not target or target[0] != mount:
        where = f"mount {target[0]!r}" if target else "the root namespace"
        raise errors.InvalidInputError(
            f"{what}: a table of mount {mount!r} cannot move to {where} (ids never cross mounts)"
        )
    return list(target[1:])


async def _query_table_batches(self: MountNamespace, request: Any) -> AsyncIterator[pa.RecordBatch]:
    _, backend, inner = self._table_target(_ids(request.id), "query_table")
    async for batch in backend._query_table_batches(attrs.evolve(request, id=inner)):
        yield batch


def _namespace_route(operation: Operation) -> Callable[..., Any]:
    method = operation.method

    async def route(self: MountNamespace, request: Any) -> Any:
        ident = _ids(request.id)
        if not ident:
            return await _root(self, operation, request)
        if len(ident) == 1 and method in ("create_namespace", "drop_namespace"):
            return await _top_level(self, operation, request, ident[0])
        backend = self._mount_of(ident[0], errors.NamespaceNotFoundError)
        return await _twin(backend, method)(attrs.evolve(request, id=list(ident[1:])))

    return route


async def _root(self: MountNamespace, operation: Operation, request: Any) -> Any:
    """What the read-only root answers."""
    method = operation.method
    if method == "list_namespaces":
        names, token = page_of(self._mounts, request.page_token, request.limit)
        return _response(operation, {"namespaces": names, "page_token": token})
    if method == "list_tables":
        _, token = page_of((), request.page_token, request.limit)
        return _response(operation, {"tables": [], "page_token": token})
    if method in ("describe_namespace", "namespace_exists"):
        return _response(operation, {"properties": {}} if method == "describe_namespace" else {})
    if method == "create_namespace":
        return await _existing(operation, request, "the root namespace", None)
    raise errors.InvalidInputError("the root namespace of mounts cannot be dropped")


async def _top_level(self: MountNamespace, operation: Operation, request: Any, name: str) -> Any:
    """CreateNamespace / DropNamespace of a top-level name: a mount, or not."""
    backend = self._mounts.get(name)
    if operation.method == "create_namespace":
        if backend is None:
            validate_name(name, storage_backed=True, what="namespace name")
            raise errors.InvalidInputError(
                f"the root namespace holds only the mounts ({', '.join(self._mounts)}): "
                "create namespaces inside one"
            )
        return await _existing(operation, request, f"mount {name!r}", backend)
    mode = parse_mode(request.mode, DROP_MODES, default="Fail")
    if backend is not None:
        raise errors.InvalidInputError(f"mount {name!r} is the server's: it cannot be dropped")
    validate_name(name, storage_backed=True, what="namespace name")
    if mode == "Skip":
        return _response(operation, {})
    raise errors.NamespaceNotFoundError(f"{name!r} is not a mount ({', '.join(self._mounts)})")


async def _existing(
    operation: Operation, request: Any, what: str, backend: AsyncLanceNamespace | None
) -> Any:
    """CreateNamespace of a namespace that always exists (the root, a mount's root)."""
    mode = parse_mode(request.mode, CREATE_MODES, default="Create")
    if mode == "Overwrite":
        raise errors.InvalidInputError(f"{what} is the server's: it cannot be overwritten")
    if mode == "Create":
        raise errors.NamespaceAlreadyExistsError(f"{what} already exists")
    properties: dict[str, Any] = {}
    if backend is not None:
        described = await backend.describe_namespace(models.DescribeNamespaceRequest(id=[]))
        extra = getattr(described.properties, "additional_properties", None)
        properties = dict(extra) if isinstance(extra, dict) else {}
    return _response(operation, {"properties": properties})


# -- operations on several tables -------------------------------------------------------------


async def _list_all_tables(self: MountNamespace, request: Any) -> Any:
    """Every mount's tables, mount by mount in name order, each name prefixed."""
    operation = _OPERATION["list_all_tables"]
    delimiter = request.delimiter if isinstance(request.delimiter, str) else self.delimiter
    limit = check_limit(request.limit)
    names = list(self._mounts)
    start, inner = names[0], None
    token = token_of(request.page_token)
    if token is not None:
        start, separator, rest = token.partition(_TOKEN_SEPARATOR)
        if not separator or start not in self._mounts:
            raise errors.InvalidInputError("page_token is not one this server gave")
        inner = rest or None
    found: list[str] = []
    for position in range(names.index(start), len(names)):
        mount = names[position]
        if limit is not None and len(found) >= limit:
            return _response(
                operation, {"tables": found, "page_token": f"{mount}{_TOKEN_SEPARATOR}"}
            )
        asked = attrs.evolve(request, page_token=inner, delimiter=delimiter)
        if limit is not None:
            asked = attrs.evolve(asked, limit=limit - len(found))
        inner = None
        answer = await _twin(self._mounts[mount], "list_all_tables")(asked)
        found.extend(f"{mount}{delimiter}{table}" for table in answer.tables)
        following = token_of(answer.page_token)
        if following is not None:
            return _response(
                operation,
                {"tables": found, "page_token": f"{mount}{_TOKEN_SEPARATOR}{following}"},
            )
    return _response(operation, {"tables": found, "page_token": None})


def _one_mount(self: MountNamespace, idents: Sequence[tuple[str, ...]], method: str) -> str:
    """The one mount every id of a batch names, else InvalidInput."""
    mounts = sorted({self._table_target(ident, method)[0] for ident in idents})
    if len(mounts) > 1:
        raise errors.InvalidInputError(
            f"a batch names tables of mounts {', '.join(map(repr, mounts))}: "
            "one batch acts on one mount (ids never cross mounts)"
        )
    return mounts[0]


async def _batch_create_table_versions(self: MountNamespace, request: Any) -> Any:
    entries = list(request.entries)
    if not entries:
        return _response(_OPERATION["batch_create_table_versions"], {"versions": []})
    mount = _one_mount(self, [_ids(e.id) for e in entries], "batch_create_table_versions")
    stripped = [attrs.evolve(e, id=list(_ids(e.id)[1:])) for e in entries]
    backend = self._mounts[mount]
    return await backend._batch_create_table_versions(attrs.evolve(request, entries=stripped))


#: the kinds of operation one BatchCommitTables entry may hold (one request each)
_COMMIT_KINDS = tuple(
    field.name
    for field in attrs.fields(models.CommitTableOperation)
    if field.name != "additional_properties"
)


async def _batch_commit_tables(self: MountNamespace, request: Any) -> Any:
    operation = _OPERATION["batch_commit_tables"]
    operations = list(request.operations)
    if not operations:
        return _response(operation, {"results": []})
    idents: list[tuple[str, ...]] = []
    for entry in operations:
        if entry.additional_properties:
            raise errors.InvalidInputError(
                "BatchCommitTables: an operation of a kind this server does not know "
                "cannot be routed to a mount"
            )
        idents.extend(
            _ids(getattr(entry, kind).id)
            for kind in _COMMIT_KINDS
            if not isinstance(getattr(entry, kind), models.Unset)
        )
    if not idents:
        raise errors.InvalidInputError("BatchCommitTables: its operations name no table")
    mount = _one_mount(self, idents, "batch_commit_tables")
    stripped = [
        attrs.evolve(
            entry,
            **{
                kind: attrs.evolve(getattr(entry, kind), id=list(_ids(getattr(entry, kind).id)[1:]))
                for kind in _COMMIT_KINDS
                if not isinstance(getattr(entry, kind), models.Unset)
            },
        )
        for entry in operations
    ]
    backend = self._mounts[mount]
    answer = await backend._batch_commit_tables(attrs.evolve(request, operations=stripped))
    results = getattr(answer, "results", None)
    if isinstance(results, list):
        with contextlib.suppress(AttributeError):
            answer = attrs.evolve(
                answer,
                results=[
                    attrs.evolve(r, deregister_table=_prefixed(r.deregister_table, "id", mount))
                    if attrs.has(type(r.deregister_table))
                    else r
                    for r in results
                ],
            )
    return answer


_OPERATION = {op.method: op for op in OPERATIONS}


def _install() -> None:
    """Give :class:`MountNamespace` a route for every operation of the table."""
    special: dict[str, Callable[..., Any]] = {
        "list_all_tables": _list_all_tables,
        "batch_create_table_versions": _batch_create_table_versions,
        "batch_commit_tables": _batch_commit_tables,
    }
    for operation in OPERATIONS:
        method = operation.method
        if method in special:
            route = special[method]
        elif method in _NAMESPACE_OPERATIONS:
            route = _namespace_route(operation)
        elif "id" in operation.path_params:
            route = _table_route(operation)
        else:  # an operation the spec added that names no id: nothing to route by
            raise RuntimeError(f"MountNamespace cannot route {operation.operation_id}")
        route.__name__ = route.__qualname__ = f"_{method}"
        setattr(MountNamespace, f"_{method}", route)
    MountNamespace._query_table_batches = _query_table_batches  # type: ignore[method-assign,assignment]


_install()
