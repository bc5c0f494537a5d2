"""The async namespace interface every backend implements.

One coroutine per protocol operation, named in snake_case after the operation
id, taking the generated request model and returning the generated response
model. The public coroutines live here and do the uniform part (accepting
``None``, a mapping, or a peer's pydantic model as the request); a backend
overrides the private ``_<operation>`` twin. An operation a backend does not
override raises ``UnsupportedOperationError`` (code 0), and
:meth:`AsyncLanceNamespace.list_operations` reports exactly the overridden ones.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self

import attrs

from ._timeout import USE_DEFAULT, TimeoutTypes, call_timeout
from .errors import InvalidInputError, UnsupportedOperationError

if TYPE_CHECKING:
    from ._config import BackendConfig
    from .models import (
        CreateNamespaceRequest,
        CreateNamespaceResponse,
        DeclareTableRequest,
        DeclareTableResponse,
        DeregisterTableRequest,
        DeregisterTableResponse,
        DescribeNamespaceRequest,
        DescribeNamespaceResponse,
        DescribeTableRequest,
        DescribeTableResponse,
        DropNamespaceRequest,
        DropNamespaceResponse,
        DropTableRequest,
        DropTableResponse,
        ListAllTablesRequest,
        ListNamespacesRequest,
        ListNamespacesResponse,
        ListTablesRequest,
        ListTablesResponse,
        ListTableVersionsRequest,
        ListTableVersionsResponse,
        NamespaceExistsRequest,
        NamespaceExistsResponse,
        RegisterTableRequest,
        RegisterTableResponse,
        RenameTableRequest,
        RenameTableResponse,
        RestoreTableRequest,
        RestoreTableResponse,
        TableExistsRequest,
        TableExistsResponse,
    )

__all__ = ["OPERATIONS", "AsyncLanceNamespace", "Operation"]


class Operation(tuple[str, str, str, str]):
    """(operation id, method name, request model, response model)."""

    __slots__ = ()

    @property
    def operation_id(self) -> str:
        return self[0]

    @property
    def method(self) -> str:
        return self[1]

    @property
    def request_model(self) -> str:
        return self[2]

    @property
    def response_model(self) -> str:
        return self[3]


def _op(operation_id: str, method: str, request: str, response: str) -> Operation:
    return Operation((operation_id, method, request, response))


#: Every operation of spec/rest.yaml, in the order of the spec.
OPERATIONS: tuple[Operation, ...] = (
    _op("CreateNamespace", "create_namespace", "CreateNamespaceRequest", "CreateNamespaceResponse"),
    _op("ListNamespaces", "list_namespaces", "ListNamespacesRequest", "ListNamespacesResponse"),
    _op(
        "DescribeNamespace",
        "describe_namespace",
        "DescribeNamespaceRequest",
        "DescribeNamespaceResponse",
    ),
    _op("DropNamespace", "drop_namespace", "DropNamespaceRequest", "DropNamespaceResponse"),
    _op("NamespaceExists", "namespace_exists", "NamespaceExistsRequest", "NamespaceExistsResponse"),
    _op("ListTables", "list_tables", "ListTablesRequest", "ListTablesResponse"),
    _op("ListAllTables", "list_all_tables", "ListAllTablesRequest", "ListTablesResponse"),
    _op("RegisterTable", "register_table", "RegisterTableRequest", "RegisterTableResponse"),
    _op("DescribeTable", "describe_table", "DescribeTableRequest", "DescribeTableResponse"),
    _op("TableExists", "table_exists", "TableExistsRequest", "TableExistsResponse"),
    _op("DropTable", "drop_table", "DropTableRequest", "DropTableResponse"),
    _op("DeregisterTable", "deregister_table", "DeregisterTableRequest", "DeregisterTableResponse"),
    _op("RestoreTable", "restore_table", "RestoreTableRequest", "RestoreTableResponse"),
    _op("RenameTable", "rename_table", "RenameTableRequest", "RenameTableResponse"),
    _op(
        "ListTableVersions",
        "list_table_versions",
        "ListTableVersionsRequest",
        "ListTableVersionsResponse",
    ),
    _op("DeclareTable", "declare_table", "DeclareTableRequest", "DeclareTableResponse"),
)

OPERATIONS_BY_METHOD: dict[str, Operation] = {op.method: op for op in OPERATIONS}


def coerce_request(request: object, model_name: str) -> Any:
    """Accept the generated model, ``None``, a mapping, or a pydantic peer model.

    pylance hands its own pydantic request models to a namespace client; users
    may prefer plain dicts. Everything becomes the generated model here, once.
    """
    from . import models

    model: Any = getattr(models, model_name)
    if isinstance(request, model):
        return request
    if request is None:
        return model.from_dict({})
    if isinstance(request, Mapping):
        body: Any = dict(request)
        _check_known_keys(model, body, model_name)
    elif hasattr(request, "to_dict") and callable(request.to_dict):
        body = request.to_dict()
    else:
        raise InvalidInputError(
            f"expected a {model_name}, a mapping or None, got {type(request).__name__}"
        )
    body = _drop_none(body)
    _check_field_types(model, body, model_name)
    try:
        return model.from_dict(body)
    except KeyError as exc:
        # the generated from_dict indexes required fields: a KeyError is a missing one
        raise InvalidInputError(f"{model_name}: missing required field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InvalidInputError(f"malformed {model_name}: {exc}") from None


def request_fields(model: type) -> frozenset[str]:
    """The JSON fields a generated request model declares."""
    return frozenset(attrs.fields_dict(model)) - {"additional_properties"}


def _check_known_keys(model: type, body: Mapping[str, Any], model_name: str) -> None:
    """A key the model does not declare is a typo until proven otherwise: a mistyped
    ``idd`` would otherwise be kept as an extra property and the call fail later with
    a misleading "id must not be empty"."""
    known = request_fields(model)
    unknown = sorted(str(key) for key in body if key not in known)
    if unknown:
        raise InvalidInputError(
            f"{model_name} has no field {unknown[0]!r} (fields: {', '.join(sorted(known))})"
        )


@functools.cache
def _field_annotations(model: type) -> dict[str, tuple[str, ...]]:
    """JSON field -> the alternatives of its annotation (``Unset`` left out).

    The generated ``from_dict`` copies values without looking at their type, so
    ``{"location": True}`` would reach a backend; the annotations are the spec's
    types. Only models that map their field names 1:1 to JSON are read here.
    """
    return {
        field.name: tuple(p.strip() for p in str(field.type).split("|") if p.strip() != "Unset")
        for field in attrs.fields(model)
    }


def _check_field_types(model: type, body: Mapping[str, Any], where: str) -> None:
    """Raise InvalidInputError for a value whose JSON type the spec does not allow.

    The message names the field and the type only, never the value (it may be a
    credential of ``identity``).
    """
    for name, annotation in _field_annotations(model).items():
        if name == "additional_properties":
            if annotation == ("dict[str, str]",):  # Context, *Properties: string maps
                bad = next((k for k, v in body.items() if not isinstance(v, str)), None)
                if bad is not None:
                    raise InvalidInputError(f"{where} values must be strings")
            continue
        if name in body and not any(
            _matches(body[name], kind, f"{where}.{name}") for kind in annotation
        ):
            raise InvalidInputError(
                f"{where}.{name} must be {' or '.join(annotation)}, got {type(body[name]).__name__}"
            )


def _matches(value: Any, kind: str, where: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "None":
        return value is None
    if kind == "list[str]":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    from . import models

    nested = getattr(models, kind, None)
    if nested is None or not isinstance(value, Mapping):
        return False
    _check_field_types(nested, value, where)  # Identity, Context, *Properties
    return True


def _drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    # Peer models serialise unset optionals as None; the generated models
    # read an absent key as UNSET, which is what those fields mean.
    return {k: v for k, v in body.items() if v is not None}


class AsyncLanceNamespace:
    """Base class of every async backend.

    Construction never performs I/O; resources are opened lazily or by
    ``async with`` and released by :meth:`aclose`.
    """

    #: the short name users pass as ``impl`` (``dir``, ``rest``, ...)
    impl_name: ClassVar[str] = ""
    #: the identifier delimiter of this backend's string identifiers
    delimiter: str = "$"

    def __init__(self, config: BackendConfig) -> None:
        self.config = config

    @classmethod
    def from_properties(cls, properties: Mapping[str, str] | None) -> Self:
        """Build the backend from the string map lance_namespace users pass."""
        raise NotImplementedError

    def namespace_id(self) -> str:
        """A human-readable id of this instance, safe to log (no secrets)."""
        return f"{type(self).__name__}({self.config!r})"

    def __repr__(self) -> str:
        return self.namespace_id()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release pools, clients and threads held by this instance."""

    @classmethod
    def list_operations(cls) -> list[str]:
        """The snake_case names of the operations this backend implements."""
        return [
            op.method
            for op in OPERATIONS
            if getattr(cls, f"_{op.method}") is not getattr(AsyncLanceNamespace, f"_{op.method}")
        ]

    # -- the public coroutines -------------------------------------------------

    async def create_namespace(
        self, request: CreateNamespaceRequest | None = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> CreateNamespaceResponse:
        with call_timeout(timeout):
            return await self._create_namespace(coerce_request(request, "CreateNamespaceRequest"))

    async def list_namespaces(
        self, request: ListNamespacesRequest | None = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> ListNamespacesResponse:
        with call_timeout(timeout):
            return await self._list_namespaces(coerce_request(request, "ListNamespacesRequest"))

    async def describe_namespace(
        self,
        request: DescribeNamespaceRequest | None = None,
        *,
        timeout: TimeoutTypes = USE_DEFAULT,
    ) -> DescribeNamespaceResponse:
        with call_timeout(timeout):
            return await self._describe_namespace(
                coerce_request(request, "DescribeNamespaceRequest")
            )

    async def drop_namespace(
        self, request: DropNamespaceRequest | None = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> DropNamespaceResponse:
        with call_timeout(timeout):
            return await self._drop_namespace(coerce_request(request, "DropNamespaceRequest"))

    async def namespace_exists(
        self, request: NamespaceExistsRequest | None = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> NamespaceExistsResponse:
        """Succeeds when the namespace exists; raises NamespaceNotFoundError otherwise."""
        with call_timeout(timeout):
            return await self._namespace_exists(coerce_request(request, "NamespaceExistsRequest"))

    async def list_tables(
        self, request: ListTablesRequest | None = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> ListTablesResponse:
        with call_timeout(timeout):
            return await self._list_tables(coerce_request(request, "ListTablesRequest"))

    async def list_all_tables(
        self, request: ListAllTablesRequest | None = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> ListTablesResponse:
        with call_timeout(timeout):
            return await self._list_all_tables(coerce_request(request, "ListAllTablesRequest"))

    async def register_table(
        self, request: RegisterTableRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> RegisterTableResponse:
        with call_timeout(timeout):
            return await self._register_table(coerce_request(request, "RegisterTableRequest"))

    async def describe_table(
        self, request: DescribeTableRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> DescribeTableResponse:
        with call_timeout(timeout):
            return await self._describe_table(coerce_request(request, "DescribeTableRequest"))

    async def table_exists(
        self, request: TableExistsRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> TableExistsResponse:
        """Succeeds when the table exists; raises TableNotFoundError otherwise."""
        with call_timeout(timeout):
            return await self._table_exists(coerce_request(request, "TableExistsRequest"))

    async def drop_table(
        self, request: DropTableRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> DropTableResponse:
        with call_timeout(timeout):
            return await self._drop_table(coerce_request(request, "DropTableRequest"))

    async def deregister_table(
        self, request: DeregisterTableRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> DeregisterTableResponse:
        with call_timeout(timeout):
            return await self._deregister_table(coerce_request(request, "DeregisterTableRequest"))

    async def restore_table(
        self, request: RestoreTableRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> RestoreTableResponse:
        with call_timeout(timeout):
            return await self._restore_table(coerce_request(request, "RestoreTableRequest"))

    async def rename_table(
        self, request: RenameTableRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> RenameTableResponse:
        with call_timeout(timeout):
            return await self._rename_table(coerce_request(request, "RenameTableRequest"))

    async def list_table_versions(
        self, request: ListTableVersionsRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> ListTableVersionsResponse:
        with call_timeout(timeout):
            return await self._list_table_versions(
                coerce_request(request, "ListTableVersionsRequest")
            )

    async def declare_table(
        self, request: DeclareTableRequest, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> DeclareTableResponse:
        with call_timeout(timeout):
            return await self._declare_table(coerce_request(request, "DeclareTableRequest"))

    # -- what a backend overrides ----------------------------------------------

    def _unsupported(self, operation: str) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"{operation} is not supported by the {self.impl_name or type(self).__name__} backend"
        )

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        raise self._unsupported("CreateNamespace")

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        raise self._unsupported("ListNamespaces")

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        raise self._unsupported("DescribeNamespace")

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        raise self._unsupported("DropNamespace")

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        raise self._unsupported("NamespaceExists")

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        raise self._unsupported("ListTables")

    async def _list_all_tables(self, request: ListAllTablesRequest) -> ListTablesResponse:
        raise self._unsupported("ListAllTables")

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        raise self._unsupported("RegisterTable")

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        raise self._unsupported("DescribeTable")

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        raise self._unsupported("TableExists")

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        raise self._unsupported("DropTable")

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        raise self._unsupported("DeregisterTable")

    async def _restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        raise self._unsupported("RestoreTable")

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        raise self._unsupported("RenameTable")

    async def _list_table_versions(
        self, request: ListTableVersionsRequest
    ) -> ListTableVersionsResponse:
        raise self._unsupported("ListTableVersions")

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        raise self._unsupported("DeclareTable")
