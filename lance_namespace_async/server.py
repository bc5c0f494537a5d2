"""The REST adapter: any backend served as a Lance REST Namespace (spec/rest.yaml).

The Lance Namespace specification calls a server that exposes some other
catalog over the REST protocol an *adapter*. :func:`create_app` builds one as an
ASGI application (Starlette) around any :class:`AsyncLanceNamespace`, so a
directory catalog, a Glue catalog or a third-party backend becomes reachable
from every REST client (pylance's Rust ``RestNamespace`` included)::

    app = create_app(lance_namespace_async.connect("dir", {"root": "/data"}))
    # uvicorn module:app, or serve(...) below

What the adapter guarantees, whatever the backend:

* every operation of spec/rest.yaml (the routes come from the operation table) at
  exactly its path, method and query parameters; the ``id`` path parameter is
  parsed once, with the request's ``delimiter``, and always wins over an ``id`` in
  the body; Arrow IPC bodies in (CreateTable, InsertIntoTable, MergeInsertIntoTable,
  under the same body limit) and out (QueryTable's IPC file); an operation the
  backend does not implement is 406 with code 0;
* every failure is an ``ErrorResponse`` (``code``, ``error``, ``instance``) with
  the HTTP status the protocol assigns to the code, so clients can rebuild the
  typed error; every 500 (an unexpected exception, or a backend's internal error
  such as a raw pylance/Rust failure) says only "internal server error", the
  detail going (redacted) to the ``lance_namespace_async.server`` logger, and the
  messages of the other errors a backend raises carry no server paths;
* the server's own storage options (``storage.*``, credentials included) are
  never in an answer unless the operator opts in (``expose_storage_options``):
  handing out credentials is a credential vendor's job. Credentials the backend's
  catalog vended for one table (short-lived, scoped by the catalog to that table and
  the server's identity) are left out too unless the operator opts in to those alone
  (``expose_vended_credentials``): the answer then carries just the vended keys
  (credentials, ``expires_at_millis``, ``refresh_offset_millis``), never ``storage.*``;
* an optional bearer token checked in constant time before anything else
  (routing included), and a request-body limit enforced while streaming;
* malformed query values (``limit=x``, ``descending=yes``, a parameter given
  twice) and bodies that are not a JSON object are code 13; query parameters
  the operation does not declare are ignored, so newer clients keep working.

Routing works on the raw (still percent-encoded) path, like pylance's own axum
adapter: ``/v1/table/a%2Fb/describe`` is DescribeTable of the name ``a/b`` (which
backends then refuse with code 13), not an unknown route.

Starlette is imported here and uvicorn only inside :func:`serve`, so ``import
lance_namespace_async`` stays light and the app runs under any ASGI server.
:func:`serve` runs it under uvicorn's httptools protocol with the connection
bounds of :class:`ServerLimits` (``_server_protocol``): capped request heads,
deadlines for heads and bodies, idle connections closed, a connection cap.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import ipaddress
import json
import logging
import math
import re
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn
from urllib.parse import quote, unquote

import attrs

from . import errors
from ._arrow_data import ArrowData
from ._arrow_guard import DEFAULT_MAX_DECODED_BODY_BYTES, check_decoded_limit, checked_body
from ._identifiers import DEFAULT_DELIMITER, parse_identifier
from ._lance_tables import is_native_panic
from ._operations import OPERATIONS, Operation
from ._request_limits import RequestLimits
from ._server_origin import OriginPolicy
from ._storage_workers import (
    StorageWorkerError,
    StorageWorkerLimits,
    StorageWorkers,
    serving_workers,
)
from ._table_locks import TableLocks
from ._vended_credentials import capture_vended

try:
    from starlette.applications import Starlette
    from starlette.datastructures import Headers, QueryParams
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, Response
    from starlette.types import Receive, Scope, Send
except ImportError as _exc:  # pragma: no cover - exercised without the extra only
    raise errors.MissingDependencyError(
        f"the REST adapter server needs: pip install 'lance-namespace-async[server]' ({_exc})"
    ) from _exc

if TYPE_CHECKING:
    from ._base import AsyncLanceNamespace

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ROUTES",
    "RequestLimits",
    "Route",
    "ServerLimits",
    "StorageWorkerLimits",
    "StorageWorkers",
    "create_app",
    "serve",
]

logger = logging.getLogger("lance_namespace_async.server")

DEFAULT_MAX_BODY_BYTES = 1_048_576


@dataclass(frozen=True)
class ServerLimits:
    """What one client, token or not, can make :func:`serve` hold, and for how long.

    The defaults suit a catalog server: the protocol's requests have heads of a
    few hundred bytes and bodies of a few kilobytes, sent at once.
    """

    #: request line plus headers of one request; more is answered 431 and closed
    max_header_bytes: int = 65_536
    #: header fields of one request; more is answered 431 and closed
    max_header_fields: int = 100
    #: seconds from a head's first byte (or the connection's opening) to its end; then 408
    header_timeout: float = 10.0
    #: seconds from the end of a head to the end of its body; then 408 and close
    body_timeout: float = 30.0
    #: seconds an idle keep-alive connection stays open
    keep_alive_timeout: float = 5.0
    #: open connections; one more is answered 503 and closed at once
    max_connections: int = 1_000

    def __post_init__(self) -> None:
        for name in ("max_header_bytes", "max_header_fields", "max_connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise errors.InvalidInputError(f"{name} must be an integer >= 1")
        if self.max_header_bytes < 1024:
            raise errors.InvalidInputError("max_header_bytes must be >= 1024")
        for name in ("header_timeout", "body_timeout", "keep_alive_timeout"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise errors.InvalidInputError(f"{name} must be a number of seconds > 0")


# -- the route table -------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One operation of spec/rest.yaml as the adapter serves it (from the operation table)."""

    #: HTTP method
    http_method: str
    #: path template, e.g. ``/v1/table/{id}/describe``
    path: str
    #: operation id of the spec
    operation_id: str
    #: backend coroutine called with the request dict
    method: str
    #: query parameters copied into the request (``delimiter`` is always read)
    query: tuple[str, ...] = ()
    #: whether the request has a body (a JSON model, a bare JSON object or Arrow rows)
    body: bool = True
    #: 200 with an empty body (the Exists operations)
    empty_response: bool = False
    #: the operation's table entry
    operation: Operation | None = None

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.strip("/").split("/"))


def _route_of(operation: Operation) -> Route:
    return Route(
        operation.http_method,
        operation.path,
        operation.operation_id,
        operation.method,
        query=tuple(name for name in operation.query_names if name != "delimiter"),
        body=operation.request_body != "none",
        empty_response=operation.response_body == "empty",
        operation=operation,
    )


#: Every route, in the order of spec/rest.yaml.
ROUTES: tuple[Route, ...] = tuple(_route_of(operation) for operation in OPERATIONS)

_PARAM_KINDS: dict[str, str] = {
    param.name: param.kind for operation in OPERATIONS for param in operation.query_params
}
_PLANS = frozenset({"ExplainTableQueryPlan", "AnalyzeTableQueryPlan"})
_ARROW_STREAM = "application/vnd.apache.arrow.stream"
_ARROW_FILE = "application/vnd.apache.arrow.file"

# -- errors the adapter itself raises ----------------------------------------------
# They are InvalidInput (code 13) on the wire, with the HTTP status of what went
# wrong, so clients that only read the code still see a caller error.


class _UnknownRouteError(errors.InvalidInputError):
    http_status = 404


class _MethodNotAllowedError(errors.InvalidInputError):
    http_status = 405

    def __init__(self, message: str, allowed: list[str]) -> None:
        super().__init__(message)
        self.allowed = allowed


class _PayloadTooLargeError(errors.InvalidInputError):
    http_status = 413


class _BackendError(Exception):
    """A typed error the backend raised (its message may hold the server's paths)."""

    def __init__(self, error: errors.LanceNamespaceError) -> None:
        super().__init__(str(error))
        self.error = error


# -- request parsing -----------------------------------------------------------------

_INTEGER = re.compile(r"-?[0-9]{1,19}")
_JSON_MEDIA_TYPE = re.compile(r"application/(?:[\w.+-]+\+)?json", re.IGNORECASE)


_Layouts = dict[int, list[tuple[tuple[int, ...], dict[tuple[str, ...], list[int]]]]]


def _route_index() -> _Layouts:
    """Route positions by segment count, then by which segments are parameters, then by
    the literal segments: a lookup is a dict hit per parameter layout, not a scan of all."""
    index: dict[int, dict[tuple[int, ...], dict[tuple[str, ...], list[int]]]] = {}
    for position, route in enumerate(ROUTES):
        template = route.segments
        params = tuple(
            i for i, part in enumerate(template) if part.startswith("{") and part.endswith("}")
        )
        literals = tuple(part for i, part in enumerate(template) if i not in params)
        layouts = index.setdefault(len(template), {})
        layouts.setdefault(params, {}).setdefault(literals, []).append(position)
    return {size: list(layouts.items()) for size, layouts in index.items()}


_ROUTE_INDEX = _route_index()
_TEMPLATES = tuple(route.segments for route in ROUTES)


def _match(segments: list[str]) -> tuple[list[Route], dict[str, str]]:
    """The routes whose template fits ``segments`` (in spec order) and their (still
    encoded) path values, those of the last route found."""
    positions: list[int] = []
    for params, by_literals in _ROUTE_INDEX.get(len(segments), ()):
        literals = tuple(part for i, part in enumerate(segments) if i not in params)
        positions.extend(by_literals.get(literals, ()))
    if not positions:
        return [], {}
    positions.sort()
    template = _TEMPLATES[positions[-1]]
    values = {
        part[1:-1]: segments[i]
        for i, part in enumerate(template)
        if part.startswith("{") and part.endswith("}")
    }
    return [ROUTES[p] for p in positions], values


def _decode_segment(value: str) -> str:
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise errors.InvalidInputError("the id path parameter is not valid UTF-8") from None


def _single(query: QueryParams, name: str) -> str | None:
    values = query.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise errors.InvalidInputError(f"query parameter {name!r} given more than once")
    return values[0]


def _query_value(name: str, raw: str) -> Any:
    """Convert one query parameter to its JSON type, or refuse it with code 13."""
    kind = _PARAM_KINDS.get(name)
    if kind == "boolean":
        lowered = raw.lower()
        if lowered not in ("true", "false"):
            raise errors.InvalidInputError(f"query parameter {name!r} must be true or false")
        return lowered == "true"
    if kind == "integer":
        if not _INTEGER.fullmatch(raw):
            raise errors.InvalidInputError(f"query parameter {name!r} must be an integer")
        return int(raw)
    return raw


def _reject_constant(value: str) -> NoReturn:
    raise ValueError(f"{value} is not valid JSON")


def _parse_json_object(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object; an empty body is the empty object."""
    if not raw:  # no body at all; whitespace alone is not JSON (refused below)
        return {}
    try:
        parsed = json.loads(raw, parse_constant=_reject_constant, parse_float=_integral_float)
    except (ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and bodies that are not UTF-8
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not valid JSON"
        raise errors.InvalidInputError(f"malformed JSON body: {reason}") from None
    if not isinstance(parsed, dict):
        raise errors.InvalidInputError("the JSON body must be an object")
    return parsed


def _integral_float(text: str) -> float | int:
    # JSON Schema counts 1.0 as an integer, and every number a request body of
    # spec/rest.yaml holds is an integer (versions): read 1.0 as 1
    value = float(text)
    return int(value) if value.is_integer() else value


@functools.cache
def _non_nullable_fields(method: str) -> frozenset[str]:
    """The body fields the operation's request schema declares and does not allow null."""
    from . import models
    from ._base import OPERATIONS_BY_METHOD

    model = getattr(models, OPERATIONS_BY_METHOD[method].request_model)
    return frozenset(
        name
        for name, field in attrs.fields_dict(model).items()
        if name != "additional_properties"
        and "None" not in str(field.type).replace(" ", "").split("|")
    )


@functools.cache
def _body_fields(method: str) -> frozenset[str]:
    """Every body field the operation's request schema declares (nullable ones too)."""
    from . import models
    from ._base import OPERATIONS_BY_METHOD, request_fields

    return request_fields(getattr(models, OPERATIONS_BY_METHOD[method].request_model))


def _refuse_nulls(body: dict[str, Any], method: str) -> None:
    """Refuse null in a declared field the request schema does not make nullable.

    The backends read None as "unset" (peer models send their unset fields so),
    so the wire's null is refused here; unknown fields stay ignored, null or not.
    (QueryTableRequest's ``vector``, ``columns`` ... are nullable: null passes.)
    """
    for name in _non_nullable_fields(method):
        if name in body and body[name] is None:
            raise errors.InvalidInputError(f"body field {name!r} must not be null")


def _check_token(token: str | None) -> bytes | None:
    if token is None:
        return None
    if not isinstance(token, str) or not token:
        # an empty token is almost always an unset environment variable: refusing
        # it beats silently serving without authentication
        raise errors.InvalidInputError("auth_token must be a non-empty string or None")
    if any(ch.isspace() or not ch.isprintable() or ord(ch) > 126 for ch in token):
        raise errors.InvalidInputError(
            "auth_token must be printable ASCII without spaces (it travels in a header)"
        )
    return token.encode("ascii")


def _is_json_media_type(content_type: str) -> bool:
    return bool(_JSON_MEDIA_TYPE.fullmatch(content_type.split(";", 1)[0].strip()))


#: a URI (``file:///srv/root/t.lance``, ``s3://bucket/key``), an absolute path of two
#: segments or more (``/srv/root/x``) or a relative one of three or more (pylance's
#: object-store spelling, ``srv/root/x``), not preceded by a word character, a dot or a
#: slash, so identifiers and names (``a/b``, ``a$b``) and single segments (``/v1``) stay
_SERVER_PATH = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"`<>()\[\]{},;]+"
    r"|(?<![\w.~/])/[^\s/'\"`<>()\[\]{},;:]+(?:/[^\s/'\"`<>()\[\]{},;:]*)+"
    r"|(?<![\w.~/:])[\w.$@%+=-]+(?:/[\w.$@%+=-]+){2,}/?"
)


def _without_server_paths(message: str) -> str:
    """``message`` with the server's paths and URIs replaced by ``<path>``.

    Typed errors of a backend can embed pylance's text, which names files on the
    server; a client needs the code and the gist, not the server's layout.
    """
    return _SERVER_PATH.sub("<path>", message)


@functools.cache
def _json_encoded_query(method: str) -> frozenset[str]:
    """Query parameters that carry a JSON object in a string (CreateTable's maps).

    They are the string parameters whose request-model field is not a string.
    """
    from . import models
    from ._base import OPERATIONS_BY_METHOD

    operation = OPERATIONS_BY_METHOD[method]
    fields = attrs.fields_dict(getattr(models, operation.request_model))
    return frozenset(
        param.name
        for param in operation.query_params
        if param.kind == "string"
        and param.name in fields
        and "str" not in str(fields[param.name].type).replace(" ", "").split("|")
    )


def _json_query_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise errors.InvalidInputError(f"query parameter {name!r} must be a JSON object") from None
    if not isinstance(value, dict):
        raise errors.InvalidInputError(f"query parameter {name!r} must be a JSON object")
    return value


def _answer_body(operation: Operation, result: Any) -> Any:
    """The JSON the operation answers with: the model, or its one field sent bare."""
    body = result.to_dict()
    if operation.response_body in ("integer", "string", "object"):
        return body.get(operation.response_field or "")
    return body


# -- the adapter -------------------------------------------------------------------


class _Adapter:
    """The ASGI app behind every path: auth, routing, body, call, response."""

    _WWW_AUTHENTICATE: ClassVar[dict[str, str]] = {"WWW-Authenticate": "Bearer"}

    def __init__(
        self,
        namespace: AsyncLanceNamespace,
        token: bytes | None,
        max_body_bytes: int,
        expose_storage_options: bool,
        expose_vended_credentials: bool = False,
        origins: OriginPolicy | None = None,
        max_decoded_body_bytes: int = DEFAULT_MAX_DECODED_BODY_BYTES,
        storage_workers: StorageWorkers | None = None,
        request_limits: RequestLimits | None = None,
    ) -> None:
        self.namespace = namespace
        self.origins = origins or OriginPolicy()
        self.max_decoded_body_bytes = max_decoded_body_bytes
        self.storage_workers = storage_workers
        self.request_limits = request_limits or RequestLimits()
        self.table_locks = TableLocks()
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.expose_storage_options = expose_storage_options
        self.expose_vended_credentials = expose_vended_credentials

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan is Starlette's; websockets are not ours
            return
        request = Request(scope, receive)
        raw_path = scope.get("raw_path")  # optional in ASGI: rebuild it when absent
        path = (
            bytes(raw_path).split(b"?", 1)[0].decode("latin-1")
            if raw_path
            else quote(scope["path"], safe="/")
        )
        response = await self._respond(request, path)
        await response(scope, receive, send)

    async def _respond(self, request: Request, path: str) -> Response:
        route: Route | None = None
        try:
            headers = request.headers
            self.origins.check(headers.get("origin"), headers.get("host"))
            self._authenticate(headers)
            route, path_values = self._route(request.method, path)
            result = await self._call(route, path_values, request)
        except ClientDisconnect:
            return Response(status_code=499)  # nginx's "client closed request": nobody listens
        except _BackendError as failed:
            return self._error(failed.error, path, route, from_backend=True)
        except errors.LanceNamespaceError as exc:
            return self._error(exc, path, route)
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_native_panic(exc):
                raise  # cancellation, exit: not a failure of this request
            operation = route.operation_id if route else "request"
            logger.error(
                "unexpected error in %s %s:\n%s",
                operation,
                path,
                errors.redact(traceback.format_exc()),
            )
            return self._internal_error(path)
        status = route.operation.success_status if route.operation is not None else 200
        if route.empty_response:
            return Response(status_code=status)
        if isinstance(result, bytes):
            return Response(result, status_code=status, media_type=_ARROW_FILE)
        return JSONResponse(result, status_code=status)

    def _error(
        self,
        exc: errors.LanceNamespaceError,
        path: str,
        route: Route | None,
        *,
        from_backend: bool = False,
    ) -> JSONResponse:
        operation = route.operation_id if route else "request"
        if exc.http_status == 500 and not isinstance(exc, StorageWorkerError):
            # a backend's internal error holds raw pylance/Rust text: server paths, even
            # file bytes; the client learns the code, the operator the detail
            logger.error(
                "%s %s failed with code %s: %s%s",
                operation,
                path,
                exc.code,
                exc,
                f" ({exc.detail})" if exc.detail else "",
            )
            return self._internal_error(path, exc.code)
        body = exc.to_error_response()
        if from_backend:
            body["error"] = _without_server_paths(str(body["error"]))
            if "detail" in body:
                body["detail"] = _without_server_paths(str(body["detail"]))
        body["instance"] = path
        headers: dict[str, str] = {}
        if isinstance(exc, errors.UnauthenticatedError):
            headers.update(self._WWW_AUTHENTICATE)
        elif isinstance(exc, _MethodNotAllowedError):
            headers["Allow"] = ", ".join(exc.allowed)
        if exc.http_status >= 500:
            logger.warning("%s %s failed with code %s: %s", operation, path, exc.code, exc)
        return JSONResponse(body, status_code=exc.http_status, headers=headers)

    @staticmethod
    def _internal_error(path: str, code: int = errors.ErrorCode.INTERNAL) -> JSONResponse:
        body = {"code": code, "error": "internal server error", "instance": path}
        return JSONResponse(body, status_code=500)

    def _authenticate(self, headers: Headers) -> None:
        """Require ``Authorization: Bearer <token>`` exactly, when a token is set."""
        if self.token is None:
            return
        values = headers.getlist("authorization")
        if not values:
            raise errors.UnauthenticatedError("missing bearer token")
        # one header, one space, scheme Bearer in any case, then the token verbatim
        value = values[0].encode("latin-1")
        scheme, _, presented = value.partition(b" ")
        well_formed = len(values) == 1 and scheme.lower() == b"bearer" and presented != b""
        # compare even a malformed header, so timing does not tell the two apart
        matches = hmac.compare_digest(presented, self.token)
        if not (well_formed and matches):
            raise errors.UnauthenticatedError("invalid bearer token")

    def _route(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        if not path.startswith("/"):
            raise _UnknownRouteError(f"unknown route {method} {path}")
        found, path_values = _match(path[1:].split("/"))
        if not found:
            raise _UnknownRouteError(f"unknown route {method} {path}")
        for route in found:
            if route.http_method == method:
                return route, path_values
        allowed = sorted({route.http_method for route in found})
        raise _MethodNotAllowedError(f"method {method} not allowed on {path}", allowed)

    async def _call(self, route: Route, path_values: dict[str, str], request: Request) -> Any:
        """Build the request dict from path, query and body; run the operation."""
        operation = route.operation
        assert operation is not None
        query = request.query_params
        delimiter = _single(query, "delimiter")
        body: dict[str, Any] = {}
        data: ArrowData | None = None
        if operation.takes_data:
            arrow = await self._read_body(request, media_type=_ARROW_STREAM)
            data = await checked_body(arrow, self.max_decoded_body_bytes)  # before native code
        elif operation.request_body == "object":  # the body is one field of the request
            field = operation.request_field or "body"
            body = {field: _parse_json_object(await self._read_body(request))}
        elif route.body:
            body = _parse_json_object(await self._read_body(request))
            _refuse_nulls(body, route.method)
            # fields the spec does not declare are ignored, so newer clients keep working
            # (the backends refuse undeclared keys of a dict as typos)
            declared = _body_fields(route.method)
            body = {name: value for name, value in body.items() if name in declared}
        encoded = _json_encoded_query(route.method)
        for name in route.query:
            value = _single(query, name)
            if value is not None:
                body[name] = (
                    _json_query_object(name, value)
                    if name in encoded
                    else _query_value(name, value)
                )
        for name, raw in path_values.items():
            if name != "id":
                body[name] = _decode_segment(raw)
        raw_id = path_values.get("id")
        if raw_id is not None:
            stated = body.get("id")
            if stated is not None and not (
                isinstance(stated, list) and all(isinstance(part, str) for part in stated)
            ):
                # the path's id wins, but a malformed body is still a malformed request
                raise errors.InvalidInputError("the body's id must be a list of strings")
            if raw_id == "":
                raise errors.InvalidInputError(
                    "the id path parameter must not be empty (the delimiter names the root)"
                )
            identifier = parse_identifier(
                _decode_segment(raw_id),
                DEFAULT_DELIMITER if delimiter is None else delimiter,
            )
            body["id"] = list(identifier)
        elif delimiter is not None:
            body["delimiter"] = delimiter  # ListAllTables: the delimiter of the answer
        self.request_limits.check(operation.operation_id, body)
        workers = self.storage_workers
        vended: dict[str, str] = {}
        try:
            # racing upserts of one table wait for each other, in workers or not (_table_locks)
            async with self.table_locks.hold(operation.operation_id, body):
                if workers is not None and workers.handles(route.method):
                    # crash, memory, deadline and disconnect isolation (_storage_workers)
                    result = await workers.call(route.method, body, data, request.receive)
                elif operation.returns_arrow:
                    result = await self.namespace.query_table_ipc(body)
                else:
                    call = getattr(self.namespace, route.method)
                    with capture_vended() as vended:
                        result = await (call(body, data) if data is not None else call(body))
        except errors.LanceNamespaceError as exc:
            raise _BackendError(exc) from exc
        if operation.returns_arrow:
            self.request_limits.check_answer(len(result))
            ipc: bytes = result
            return ipc
        if route.empty_response:
            return None
        answer = _answer_body(operation, result)
        if operation.operation_id in _PLANS and isinstance(answer, str):
            answer = _without_server_paths(answer)  # LanceRead: uri=<the server's path>
        if not self.expose_storage_options and isinstance(answer, dict):
            answered = answer.pop("storage_options", None) is not None
            if self.expose_vended_credentials and vended and answered:
                answer["storage_options"] = dict(vended)  # the catalog's, never our own
        return answer

    async def _read_body(self, request: Request, media_type: str | None = None) -> bytes:
        """Read the body, refusing more than ``max_body_bytes`` as soon as it shows.

        The limit holds for Arrow uploads too; ``media_type`` is the one an Arrow
        body must declare (JSON bodies: any JSON media type, or none).
        """
        declared = request.headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                raise errors.InvalidInputError("malformed Content-Length header")
            if int(declared) > self.max_body_bytes:
                raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise self._too_large()
            chunks.append(chunk)
        raw = b"".join(chunks)
        content_type = request.headers.get("content-type")
        if media_type is not None:
            declared_type = (content_type or "").split(";", 1)[0].strip().lower()
            if declared_type not in (media_type, "application/octet-stream"):
                raise errors.InvalidInputError(f"the request body must be {media_type}")
            return raw
        if raw and (content_type is None or not _is_json_media_type(content_type)):
            # also keeps browsers' CORS-free "simple" posts (form types or none) out
            raise errors.InvalidInputError(
                "the request body must be application/json (say so in Content-Type)"
            )
        return raw

    def _too_large(self) -> _PayloadTooLargeError:
        return _PayloadTooLargeError(f"request body larger than {self.max_body_bytes} bytes")


def create_app(
    namespace: AsyncLanceNamespace,
    *,
    auth_token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    expose_storage_options: bool = False,
    expose_vended_credentials: bool = False,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] | None = None,
    max_decoded_body_bytes: int = DEFAULT_MAX_DECODED_BODY_BYTES,
    storage_workers: StorageWorkers | None = None,
    request_limits: RequestLimits | None = None,
) -> Starlette:
    """The ASGI application serving ``namespace`` as a Lance REST Namespace.

    The caller keeps ownership of ``namespace`` (the app never closes it).
    ``auth_token`` makes every request need ``Authorization: Bearer <token>``;
    bodies above ``max_body_bytes`` are refused with 413 before they are
    buffered, so a client cannot make the server hold arbitrary amounts of data.

    The ``storage_options`` of DescribeTable and DeclareTable answers are left
    out unless ``expose_storage_options`` is true: a backend's are the server's
    own (its ``storage.*`` properties, credentials included), and a client must
    bring its own or get them from a credential vendor. Opt in only when every
    client may hold what the backend answers there.

    ``expose_vended_credentials`` passes on, alone, the credentials the backend's
    catalog vended for the described table (DescribeTable of a backend with
    ``vend_credentials``; see ``_vended_credentials``): short-lived and scoped by the
    catalog, but scoped to this server's identity, not the client's. Opt in only when
    every client may act on storage as the server does for the tables it can describe.

    Requests from web pages (an ``Origin`` header) are refused unless their origin
    is in ``allowed_origins``; given ``allowed_hosts``, so are requests naming
    another host (DNS rebinding): see ``_server_origin``. :func:`serve` always
    checks host names.

    Arrow bodies (CreateTable, InsertIntoTable, MergeInsertIntoTable) are checked in
    full before the backend sees them (:mod:`._arrow_guard`): malformed IPC is 400, and
    more than ``max_decoded_body_bytes`` once decoded (compression included) is 413.

    ``storage_workers`` runs the data-plane operations (``_storage_workers.STORAGE_METHODS``)
    in its worker processes, each with a memory limit, a deadline per request and the
    work killed when its client disconnects; the others stay in-process. The caller
    owns it (start and close it); it must serve the same backend as ``namespace``.

    ``request_limits`` bound the expressions and parameters of every request and the
    size of QueryTable answers (:class:`~._request_limits.RequestLimits`; its defaults
    when None): a request over a limit is code 13 before the backend sees it.
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int):
        raise errors.InvalidInputError("max_body_bytes must be an integer")
    if max_body_bytes < 1:
        raise errors.InvalidInputError("max_body_bytes must be >= 1")
    if not isinstance(expose_storage_options, bool):
        raise errors.InvalidInputError("expose_storage_options must be a boolean")
    if not isinstance(expose_vended_credentials, bool):
        raise errors.InvalidInputError("expose_vended_credentials must be a boolean")
    if storage_workers is not None and not isinstance(storage_workers, StorageWorkers):
        raise errors.InvalidInputError("storage_workers must be a StorageWorkers or None")
    if request_limits is not None and not isinstance(request_limits, RequestLimits):
        raise errors.InvalidInputError("request_limits must be a RequestLimits")
    adapter = _Adapter(
        namespace,
        _check_token(auth_token),
        max_body_bytes,
        expose_storage_options,
        expose_vended_credentials,
        OriginPolicy(allowed_origins, allowed_hosts),
        check_decoded_limit(max_decoded_body_bytes),
        storage_workers,
        request_limits,
    )
    app = _AdapterApp(adapter)
    app.state.namespace = namespace
    from ._containment import warn_if_unconfined

    warn_if_unconfined(namespace)  # a client must not reach storage outside its root
    return app


class _AdapterApp(Starlette):
    """Starlette around the adapter; HTTP requests go straight to it while the app is
    as :func:`create_app` made it.

    The adapter answers every path and turns every exception into an ErrorResponse, so
    Starlette's error middleware, exception middleware and router would only cost CPU on
    each request (a third of the HTTP stack's); routes or middleware a caller adds
    bring the whole stack back.
    """

    def __init__(self, adapter: _Adapter) -> None:
        super().__init__()
        # the router's fallback, not a Mount: Mount("") matches with ``.*``, so a path
        # holding a decoded newline (%0A) missed it and got Starlette's plain-text 404
        self.router.default = adapter
        self._adapter = adapter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.router.routes and not self.user_middleware:
            scope["app"] = self
            await self._adapter(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_host_name(host: str) -> bool:
    """Whether ``host`` (the bind address) is a name clients may use in ``Host``."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host != ""
    return False


def serve(
    namespace_or_impl: AsyncLanceNamespace | str,
    properties: Mapping[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 2333,
    auth_token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    limits: ServerLimits | None = None,
    expose_storage_options: bool = False,
    expose_vended_credentials: bool = False,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    allowed_storage_options: Iterable[str] = (),
    request_limits: RequestLimits | None = None,
    log_level: str = "info",
    max_decoded_body_bytes: int = DEFAULT_MAX_DECODED_BODY_BYTES,
    storage_workers: StorageWorkerLimits | StorageWorkers | None = None,
) -> None:
    """Run the adapter with uvicorn until interrupted (blocking).

    Given an impl name, the backend is built from ``properties`` with
    ``confine_storage=true`` (unless they set it: see ``_containment``) and closed on
    shutdown; a namespace instance stays the caller's to close. The default host
    is the loopback interface: exposing a catalog to the network is a decision,
    so binding elsewhere without a token logs a warning. ``limits`` bound what
    any client, with a token or without, can make the server hold
    (:class:`ServerLimits`; the defaults when None); ``expose_storage_options``
    ``expose_vended_credentials``, ``request_limits`` and ``allowed_origins`` are
    :func:`create_app`'s. Requests must name this server by an IP address,
    ``localhost``, ``host`` (when it is a name) or one of ``allowed_hosts`` (``*``:
    any), so a web page cannot reach it through DNS rebinding. Given an impl name, the
    backend is built with the server's defaults (``_serving``): only the storage options
    in ``allowed_storage_options`` may come from a table's properties or a request.

    Storage work runs in worker processes (:mod:`._storage_workers`): given an impl
    name, by default (``StorageWorkerLimits()``; ``StorageWorkerLimits(workers=0)``
    turns them off); a namespace instance is served in-process unless
    ``storage_workers`` is a :class:`StorageWorkers` for the same backend (the
    caller's to close). On SIGTERM, requests get a short grace to finish, then the
    workers still running are killed.
    """
    from ._base import AsyncLanceNamespace
    from ._registry import connect
    from ._serving import served_properties

    if limits is None:
        limits = ServerLimits()
    elif not isinstance(limits, ServerLimits):
        raise errors.InvalidInputError("limits must be a ServerLimits")
    served: dict[str, str] | None = None
    if isinstance(namespace_or_impl, AsyncLanceNamespace):
        if properties:
            raise errors.InvalidInputError(
                "properties only apply when serving an impl name, not a namespace instance"
            )
        namespace, owned = namespace_or_impl, False
    else:
        served = served_properties(
            namespace_or_impl, properties or {}, allowed_storage_options=allowed_storage_options
        )
        namespace, owned = connect(namespace_or_impl, served), True
    # workers rebuild the backend from the served properties: confined like it
    workers, owned_workers = serving_workers(namespace_or_impl, served, storage_workers)
    app = create_app(
        namespace,
        auth_token=auth_token,
        max_body_bytes=max_body_bytes,
        expose_storage_options=expose_storage_options,
        expose_vended_credentials=expose_vended_credentials,
        allowed_origins=allowed_origins,
        allowed_hosts=[*allowed_hosts, *([host] if _is_host_name(host) else [])],
        max_decoded_body_bytes=max_decoded_body_bytes,
        storage_workers=workers,
        request_limits=request_limits,
    )
    if auth_token is None and not _is_loopback(host):
        logger.warning("serving on %s without authentication: anyone can reach it", host)
    asyncio.run(
        _serve(
            app,
            namespace,
            owned,
            limits=limits,
            max_body_bytes=max_body_bytes,
            host=host,
            port=port,
            log_level=log_level,
            workers=(workers, owned_workers),
        )
    )


async def _serve(
    app: Starlette,
    namespace: AsyncLanceNamespace,
    owned: bool,
    *,
    limits: ServerLimits,
    max_body_bytes: int,
    host: str,
    port: int,
    log_level: str,
    workers: tuple[StorageWorkers | None, bool] = (None, False),
) -> None:
    try:
        from ._server_protocol import guarded_server
    except ImportError as exc:
        raise errors.MissingDependencyError(
            "serving needs uvicorn and httptools: "
            f"pip install 'lance-namespace-async[server]' ({exc})"
        ) from exc
    pool, owned_pool = workers
    server = guarded_server(
        app,
        limits,
        max_body_bytes,
        host=host,
        port=port,
        log_level=log_level,
        # then in-flight requests are cancelled, and with them their workers' tasks
        timeout_graceful_shutdown=pool.limits.shutdown_grace if pool is not None else None,
    )
    try:
        await server.serve()
    finally:
        if pool is not None and owned_pool:
            pool.close()
        if owned:
            await namespace.aclose()
