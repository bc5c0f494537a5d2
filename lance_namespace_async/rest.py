"""The Lance REST Namespace of the Lance Namespace specification: ``impl="rest"``.

Every operation goes through the client generated from spec/rest.yaml
(``asyncio_detailed``), over the shared HTTP transport (:mod:`._transport.transport`), which
owns pooling, timeouts, retries, auth and error mapping. The catalog operations
have their own methods below; every other operation of the operation table is
sent by :meth:`RestNamespace._operation_call`, driven by its table entry (path and
query parameters from the request's fields, Arrow IPC bodies as raw bytes, a
reader's rows streamed batch by batch, bare answers wrapped in their models). Properties are the
ones pylance's ``RestNamespace`` takes (``uri``, ``delimiter``, ``header.*``,
``tls.*``) plus the transport keys. The root namespace is addressed as the
protocol does: by the bare delimiter (``/v1/namespace/$/list``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar, Self

import attrs
import httpx

from . import errors
from ._core.arrow_data import ArrowData
from ._core.base import AsyncLanceNamespace, json_data
from ._core.config import mask_url_userinfo, prop
from ._core.identifiers import Identifier, join_identifier, validate_identifier, validate_name
from ._core.operations import OPERATIONS, OPERATIONS_BY_METHOD, Operation, generated_module
from ._transport.config import HttpConfig, parse_http_url
from ._transport.failures import error_from_response, transport_error
from ._transport.transport import HttpTransport
from .models import (
    UNSET,
    Context,
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

__all__ = ["RestConfig", "RestNamespace"]


def _delimiter(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    return value


@attrs.frozen
class RestConfig(HttpConfig):
    """Properties of ``impl="rest"`` (timeouts in milliseconds)."""

    ignored_keys: ClassVar[frozenset[str]] = frozenset({"tls.reload_interval_seconds"})

    uri: str = prop(
        parse=parse_http_url,
        shown=mask_url_userinfo,
        doc="the server, e.g. http://127.0.0.1:2333 (a user:password@ is HTTP Basic auth)",
    )
    delimiter: str = prop(default="$", parse=_delimiter)


class RestNamespace(AsyncLanceNamespace):
    """``impl="rest"``: a client of any Lance REST Namespace server."""

    impl_name: ClassVar[str] = "rest"
    config: RestConfig

    def __init__(self, config: RestConfig) -> None:
        super().__init__(config)
        self.delimiter = config.delimiter
        self.transport = HttpTransport(config, base_url=config.uri, url_key="uri")
        self._generated: Any = None

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(RestConfig.from_properties(properties))

    def namespace_id(self) -> str:
        uri = mask_url_userinfo(self.config.uri)
        return f"RestNamespace(uri={uri!r}, delimiter={self.delimiter!r})"

    async def aclose(self) -> None:
        await self.transport.aclose()

    # -- plumbing --------------------------------------------------------------

    def _client(self) -> Any:
        if self._generated is None:
            from lance_namespace_rest_client.client import Client

            generated = Client(base_url=self.transport.base_url, raise_on_unexpected_status=False)
            generated.set_async_httpx_client(self.transport.client())
            self._generated = generated
        return self._generated

    def _path_id(self, parts: Identifier) -> str:
        """The ``{id}`` path parameter; the root is the bare delimiter."""
        return join_identifier(parts, self.delimiter) if parts else self.delimiter

    def _ids(self, body: dict[str, Any], *, allow_root: bool, what: str) -> Identifier:
        value = body.get("id")
        # storage_backed: "." and ".." would be removed from the URL path as dot
        # segments (another route), and most servers turn names into storage paths
        return validate_identifier(
            value,
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=allow_root,
            what=what,
        )

    @functools.cached_property
    def _query(self) -> dict[str, Any]:
        """The ``delimiter`` query parameter, sent when it is not the default ``$``."""
        return {"delimiter": self.delimiter} if self.delimiter != "$" else {}

    @staticmethod
    def _headers(body: dict[str, Any]) -> dict[str, str]:
        """Request context ``header.*`` entries and identity become HTTP headers."""
        headers: dict[str, str] = {}
        context = body.get("context")
        if isinstance(context, dict):
            for key, value in context.items():
                if key.startswith("header.") and len(key) > len("header."):
                    headers[key[len("header.") :]] = str(value)
        identity = body.get("identity")
        if isinstance(identity, dict):
            if identity.get("api_key"):
                headers["x-api-key"] = str(identity["api_key"])
            if identity.get("auth_token"):
                headers["Authorization"] = f"Bearer {identity['auth_token']}"
        return headers

    async def _send(
        self,
        module: Any,
        *args: Any,
        what: str,
        idempotent: bool,
        not_found: type[errors.LanceNamespaceError],
        conflict: type[errors.LanceNamespaceError] = errors.ConcurrentModificationError,
        headers: dict[str, str] | None = None,
        empty: Callable[..., Any] | None = None,
        success: int = 200,
        **kwargs: Any,
    ) -> Any:
        """One protocol call: the generated module's request and answer (``module``), the
        transport policy, typed errors. ``success`` is the operation's success status
        (201 for CreateMaterializedView).

        The response headers come back as the response's ``context`` (``header.<name>``
        entries, as the protocol maps them); ``empty`` builds the response of the
        operations whose answer has no body (the exists checks).
        """
        client = self._client()
        with self.transport.call(idempotent=idempotent, what=what, headers=headers) as state:
            answer = None
            try:
                spec = module._get_kwargs(*args, **self._query, **kwargs)
                if spec.keys() <= _DIRECT_KEYS:
                    answer = await self.transport.exchange(
                        state,
                        spec["method"],
                        spec["url"],
                        spec.get("params"),
                        spec.get("json"),
                        spec.get("headers"),
                    )
                if answer is None:  # another wire or request shape: the generated call
                    response = await module.asyncio_detailed(
                        *args, client=client, **self._query, **kwargs
                    )
                    status, content, parsed = (
                        response.status_code,
                        response.content,
                        response.parsed,
                    )
                    header_items = list(response.headers.items())
            except httpx.HTTPError as exc:
                raise transport_error(exc, what) from exc
            except (ValueError, KeyError, TypeError, RecursionError):
                # the generated parser met a body off the spec (an HTML 502, JSON nested
                # deeper than json.loads recurses, ...)
                final = state.response
                if final is None:
                    raise
                status, content, parsed = final.status_code, final.content, None
                header_items = list(final.headers.items())
                if status == success:
                    raise errors.InternalError(f"{what}: malformed response body") from None
        if answer is not None:
            status, content, parsed = answer.status_code, answer.content, None
            header_items = answer.header_items()
            if status == success and empty is None:
                try:
                    parsed = module._parse_response(client=client, response=answer)
                except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                    raise errors.InternalError(f"{what}: malformed response body") from None
        if status == success:
            context = Context.from_dict({f"header.{k}": v for k, v in header_items})
            if empty is not None:
                return empty(context=context)
            if parsed is not None and hasattr(parsed, "context"):
                parsed.context = context
            return parsed
        raise error_from_response(
            int(status),
            content,
            not_found=not_found,
            conflict=conflict,
            what=what,
            retried_ambiguously=state.retried_ambiguously,
        )

    @staticmethod
    def _api(tag: str, name: str) -> Any:
        """The generated module of operation ``name`` under ``tag`` (``table``, ...)."""
        return generated_module(f"{tag}.{name}")

    # -- namespaces --------------------------------------------------------------

    async def _namespace_call(
        self,
        operation: str,
        module: str,
        request: Any,
        *,
        allow_root: bool,
        idempotent: bool,
        conflict: type[errors.LanceNamespaceError] = errors.ConcurrentModificationError,
        with_body: bool = True,
        **kwargs: Any,
    ) -> Any:
        return await self._object_call(
            "namespace",
            operation,
            module,
            request,
            allow_root=allow_root,
            idempotent=idempotent,
            conflict=conflict,
            with_body=with_body,
            **kwargs,
        )

    async def _object_call(
        self,
        kind: str,
        operation: str,
        module: str,
        request: Any,
        *,
        allow_root: bool,
        idempotent: bool,
        conflict: type[errors.LanceNamespaceError],
        with_body: bool,
        **kwargs: Any,
    ) -> Any:
        """One call about a namespace or a table: its id in the path, typed by route."""
        body = request.to_dict()
        parts = self._ids(body, allow_root=allow_root, what=f"{kind} id")
        if with_body:
            kwargs["body"] = request
        return await self._send(
            self._api(kind, module),
            self._path_id(parts),
            what=f"{operation} {'.'.join(parts) or '<root>'}",
            idempotent=idempotent,
            not_found=(
                errors.NamespaceNotFoundError if kind == "namespace" else errors.TableNotFoundError
            ),
            conflict=conflict,
            headers=self._headers(body),
            **kwargs,
        )

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        result: CreateNamespaceResponse = await self._namespace_call(
            "CreateNamespace",
            "create_namespace",
            request,
            allow_root=False,
            idempotent=False,
            conflict=errors.NamespaceAlreadyExistsError,
        )
        return result

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        result: ListNamespacesResponse = await self._namespace_call(
            "ListNamespaces",
            "list_namespaces",
            request,
            allow_root=True,
            idempotent=True,
            with_body=False,
            page_token=request.page_token,
            limit=request.limit,
        )
        return result

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        result: DescribeNamespaceResponse = await self._namespace_call(
            "DescribeNamespace", "describe_namespace", request, allow_root=True, idempotent=True
        )
        return result

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        result: DropNamespaceResponse = await self._namespace_call(
            "DropNamespace",
            "drop_namespace",
            request,
            allow_root=False,
            idempotent=False,
            conflict=errors.NamespaceNotEmptyError,
        )
        return result

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        result: NamespaceExistsResponse = await self._namespace_call(
            "NamespaceExists",
            "namespace_exists",
            request,
            allow_root=True,
            idempotent=True,
            empty=NamespaceExistsResponse,
        )
        return result

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        result: ListTablesResponse = await self._namespace_call(
            "ListTables",
            "list_tables",
            request,
            allow_root=True,
            idempotent=True,
            with_body=False,
            page_token=request.page_token,
            limit=request.limit,
            include_declared=request.include_declared,
        )
        return result

    # -- tables ----------------------------------------------------------------------

    async def _list_all_tables(self, request: ListAllTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        client = self._client()
        delimiter = body.get("delimiter")
        kwargs: dict[str, Any] = {
            "page_token": request.page_token,
            "limit": request.limit,
            "include_declared": request.include_declared,
        }
        api = self._api("table", "list_all_tables").asyncio_detailed
        with self.transport.call(
            idempotent=True, what="ListAllTables", headers=self._headers(body)
        ) as state:
            try:
                response = await api(
                    client=client,
                    delimiter=delimiter if isinstance(delimiter, str) else UNSET,
                    **kwargs,
                )
            except httpx.HTTPError as exc:
                raise transport_error(exc, "ListAllTables") from exc
            except (ValueError, KeyError, TypeError):
                final = state.response
                if final is None or final.status_code == 200:
                    raise errors.InternalError("ListAllTables: malformed response") from None
                response = final
        if response.status_code == 200:
            result: ListTablesResponse = response.parsed
            result.context = Context.from_dict(
                {f"header.{k}": v for k, v in response.headers.items()}
            )
            return result
        raise error_from_response(
            int(response.status_code),
            response.content,
            not_found=errors.NamespaceNotFoundError,
            conflict=errors.ConcurrentModificationError,
            what="ListAllTables",
        )

    async def _table_call(
        self,
        operation: str,
        module: str,
        request: Any,
        *,
        idempotent: bool,
        conflict: type[errors.LanceNamespaceError] = errors.ConcurrentModificationError,
        with_body: bool = True,
        **kwargs: Any,
    ) -> Any:
        return await self._object_call(
            "table",
            operation,
            module,
            request,
            allow_root=False,
            idempotent=idempotent,
            conflict=conflict,
            with_body=with_body,
            **kwargs,
        )

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        result: RegisterTableResponse = await self._table_call(
            "RegisterTable",
            "register_table",
            request,
            idempotent=False,
            conflict=errors.TableAlreadyExistsError,
        )
        return result

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        result: DeclareTableResponse = await self._table_call(
            "DeclareTable",
            "declare_table",
            request,
            idempotent=False,
            conflict=errors.TableAlreadyExistsError,
        )
        return result

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        result: DescribeTableResponse = await self._table_call(
            "DescribeTable",
            "describe_table",
            request,
            idempotent=True,
            with_table_uri=request.with_table_uri,
            load_detailed_metadata=request.load_detailed_metadata,
            check_declared=request.check_declared,
        )
        return result

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        result: TableExistsResponse = await self._table_call(
            "TableExists", "table_exists", request, idempotent=True, empty=TableExistsResponse
        )
        return result

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        result: DropTableResponse = await self._table_call(
            "DropTable", "drop_table", request, idempotent=False, with_body=False
        )
        return result

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        result: DeregisterTableResponse = await self._table_call(
            "DeregisterTable", "deregister_table", request, idempotent=False
        )
        return result

    async def _restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        result: RestoreTableResponse = await self._table_call(
            "RestoreTable", "restore_table", request, idempotent=False
        )
        return result

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        body = request.to_dict()  # the target's names travel in the body: checked alike
        validate_name(
            body.get("new_table_name"),  # type: ignore[arg-type]
            delimiter=self.delimiter,
            storage_backed=True,
            what="new_table_name",
        )
        if body.get("new_namespace_id") is not None:
            self._ids({"id": body["new_namespace_id"]}, allow_root=True, what="new_namespace_id")
        result: RenameTableResponse = await self._table_call(
            "RenameTable",
            "rename_table",
            request,
            idempotent=False,
            conflict=errors.TableAlreadyExistsError,
        )
        return result

    async def _list_table_versions(
        self, request: ListTableVersionsRequest
    ) -> ListTableVersionsResponse:
        result: ListTableVersionsResponse = await self._table_call(
            "ListTableVersions",
            "list_table_versions",
            request,
            idempotent=True,
            with_body=False,
            page_token=request.page_token,
            limit=request.limit,
            descending=request.descending,
            branch=request.branch,
        )
        return result

    # -- every other operation, from the operation table ---------------------------------

    async def _operation_call(
        self, operation: Operation, request: Any, data: ArrowData | None = None
    ) -> Any:
        """Send ``operation`` as its table entry says; the answer as its response model."""
        from lance_namespace_rest_client.types import File

        body: dict[str, Any] = json_data(request)
        args: list[Any] = []
        label = operation.operation_id
        for name in operation.path_params:
            if name == "id":
                parts = self._ids(
                    body, allow_root=False, what=_ID_WHAT[operation.path.split("/")[2]]
                )
                args.append(self._path_id(parts))
                label = f"{operation.operation_id} {'.'.join(parts)}"
            else:
                value = body.get(name)
                if not isinstance(value, str) or not value:
                    raise errors.InvalidInputError(f"{name} must be a non-empty string")
                args.append(value)
        kwargs: dict[str, Any] = {}
        for param in operation.query_params:
            if param.name == "delimiter" or body.get(param.name) is None:
                if param.required and param.name != "delimiter":
                    raise errors.InvalidInputError(
                        f"{operation.request_model}.{param.name} is required"
                    )
                continue
            value = body[param.name]
            if param.kind == "string" and not isinstance(value, str):
                value = json.dumps(value, separators=(",", ":"))  # CreateTable's maps
            kwargs[param.name] = value
        if operation.request_body == "json":
            kwargs["body"] = request
            if _null_vector(body):  # pylance's server (14.0.2) refuses the spec's null
                kwargs["body"] = operation.request_class().from_dict(body)
        elif operation.request_body == "arrow":
            assert data is not None
            rows: Any = data.aiter_chunks() if data.is_stream else data.to_bytes()
            kwargs["body"] = File(payload=rows, mime_type="application/vnd.apache.arrow.stream")
        elif operation.request_body == "object":
            field = operation.request_field or ""
            kwargs["body"] = _body_model(operation).from_dict(body.get(field) or {})
        kind = operation.path.split("/")[2]
        parsed = await self._send(
            operation.generated(),
            *args,
            what=label,
            idempotent=operation.idempotent,
            not_found=_NOT_FOUND.get(kind, errors.TableNotFoundError),
            headers=self._headers(body),
            empty=operation.response_class() if operation.response_body == "empty" else None,
            success=operation.success_status,
            **kwargs,
        )
        return _answer(operation, parsed)

    async def _query_table(self, request: Any) -> bytes:
        """QueryTable's IPC file, checked before anything decodes it: its declared
        decoded size counts against ``max_response_bytes`` (compression included), and a
        malformed answer is InternalError (:mod:`._core.arrow_guard`)."""
        from ._core.arrow_guard import check_answer

        answer: bytes = await self._operation_call(OPERATIONS_BY_METHOD["query_table"], request)
        check_answer(answer, self.config.max_response_bytes)
        return answer

    async def _query_table_batches(self, request: Any) -> AsyncIterator[Any]:
        """QueryTable's batches decoded as the answer's bytes arrive (not held whole).

        The request is the generated client's own (``_get_kwargs``), sent in streaming
        mode; context headers and identity travel as for every call. With the aiohttp
        pool the answer is read whole first (its bytes are still decoded batch by batch).
        """
        from ._core.arrow_guard import IpcFileDecoder

        operation = OPERATIONS_BY_METHOD["query_table"]
        body: dict[str, Any] = json_data(request)
        parts = self._ids(body, allow_root=False, what="table id")
        _null_vector(body)
        kwargs = operation.generated()._get_kwargs(
            self._path_id(parts), body=operation.request_class().from_dict(body), **self._query
        )
        kwargs["headers"] = {**kwargs.get("headers", {}), **self._headers(body)}
        what = f"QueryTable {'.'.join(parts)}"
        decoder = IpcFileDecoder(self.config.max_response_bytes)  # per message held
        client = self._client().get_async_httpx_client()
        try:
            async with client.stream(**kwargs) as response:
                if response.status_code != 200:
                    raise error_from_response(
                        response.status_code,
                        await response.aread(),
                        not_found=errors.TableNotFoundError,
                        conflict=errors.ConcurrentModificationError,
                        what=what,
                    )
                async for chunk in response.aiter_bytes():
                    for batch in decoder.feed(chunk):
                        yield batch
        except httpx.HTTPError as exc:
            raise transport_error(exc, what) from exc
        for batch in decoder.finish():
            yield batch


#: what a generated ``_get_kwargs`` may hold for :meth:`HttpTransport.exchange` to send it
#: the statuses that carry an operation's answer: 200; 201 for CreateMaterializedView and
#: 202 for the operations that start a job (AlterTableBackfillColumns,
#: RefreshMaterializedView answer its id), as the spec has them

_DIRECT_KEYS = frozenset({"method", "url", "params", "json", "headers"})


_ID_WHAT = {
    "namespace": "namespace id",
    "table": "table id",
    "materialized_view": "view id",
    "transaction": "transaction id",
}
_NOT_FOUND: dict[str, type[errors.LanceNamespaceError]] = {
    "namespace": errors.NamespaceNotFoundError,
    "table": errors.TableNotFoundError,
    "materialized_view": errors.TableNotFoundError,
    "transaction": errors.TransactionNotFoundError,
}


@functools.cache
def _body_model(operation: Operation) -> Any:
    """The generated model of a bare JSON-object body (UpdateTableSchemaMetadata's map),
    as the generated function annotates its ``body``."""
    import typing

    return typing.get_type_hints(operation.generated()._get_kwargs)["body"]


def _null_vector(body: dict[str, Any]) -> bool:
    """Send a query's null ``vector`` (no vector search) as the empty object instead."""
    changed = False
    for holder in (body, body.get("query")):
        if isinstance(holder, dict) and "vector" in holder and holder["vector"] is None:
            holder["vector"] = {}
            changed = True
    return changed


def _answer(operation: Operation, parsed: Any) -> Any:
    """The generated client's parsed answer as what the interface returns."""
    kind = operation.response_body
    if kind in ("json", "empty"):
        return parsed
    if kind == "arrow":  # a File over the IPC file's bytes
        data: bytes = parsed.payload.read()
        return data
    value = parsed.to_dict() if hasattr(parsed, "to_dict") else parsed
    return operation.response_class().from_dict({operation.response_field: value})


def _install_operations() -> None:
    """A ``_<operation>`` for every operation without a method of its own above."""
    for operation in OPERATIONS:
        name = f"_{operation.method}"
        if name in vars(RestNamespace):
            continue
        if operation.takes_data:

            async def call_with_data(
                self: RestNamespace, request: Any, data: ArrowData, _op: Operation = operation
            ) -> Any:
                return await self._operation_call(_op, request, data)

            setattr(RestNamespace, name, call_with_data)
        else:

            async def call(self: RestNamespace, request: Any, _op: Operation = operation) -> Any:
                return await self._operation_call(_op, request)

            setattr(RestNamespace, name, call)


_install_operations()
