"""The adapter: one request of any route from its bytes to the backend's answer.

Auth (a bearer token checked in constant time before anything else), origin and host
checks, routing, the bounded body read, Arrow bodies checked before native code
(:mod:`~lance_namespace_async._core.arrow_guard`), request limits, per-table locks,
storage workers, and every failure as an ``ErrorResponse`` whose 500s say only
"internal server error".
"""

from __future__ import annotations

import hmac
import logging
import re
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from .. import errors
from .._core import observe
from .._core.arrow_data import ArrowData
from .._core.arrow_guard import DEFAULT_MAX_DECODED_BODY_BYTES, checked_body
from .._core.identifiers import DEFAULT_DELIMITER, parse_identifier
from .._core.operations import Operation
from .._storage.failures import is_native_panic
from .._storage.vended_credentials import capture_vended
from ._access_log import ROUTE_KEY, AccessLog
from ._health import HEALTH_PATHS, HEALTHZ, Health
from ._origin import OriginPolicy
from ._request_limits import RequestLimits
from ._routes import (
    _ARROW_FILE,
    _ARROW_STREAM,
    _PLANS,
    _REPEATED,
    Route,
    _body_fields,
    _decode_segment,
    _is_json_media_type,
    _json_encoded_query,
    _json_query_object,
    _match,
    _MethodNotAllowedError,
    _parse_json_object,
    _PayloadTooLargeError,
    _query_value,
    _refuse_nulls,
    _single,
    _UnknownRouteError,
)
from ._starlette import (
    ClientDisconnect,
    Headers,
    JSONResponse,
    Receive,
    Request,
    Response,
    Scope,
    Send,
)
from ._storage_workers import (
    StorageWorkerError,
    StorageWorkers,
)
from ._table_locks import TableLocks

if TYPE_CHECKING:
    from .._core.base import AsyncLanceNamespace

logger = logging.getLogger("lance_namespace_async.server")


class _BackendError(Exception):
    """A typed error the backend raised (its message may hold the server's paths)."""

    def __init__(self, error: errors.LanceNamespaceError) -> None:
        super().__init__(str(error))
        self.error = error


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
        health: Health | None = None,
        access_log: AccessLog | None = None,
    ) -> None:
        self.namespace = namespace
        self.health = health or Health(namespace)
        self.access_log = access_log
        self.origins = origins or OriginPolicy()
        self.max_decoded_body_bytes = max_decoded_body_bytes
        self.storage_workers = storage_workers
        self.request_limits = request_limits or RequestLimits()
        self.table_locks = TableLocks()
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.expose_storage_options = expose_storage_options
        self.expose_vended_credentials = expose_vended_credentials
        #: metrics and spans of each request (``server._observe``), when on
        self.observer: Callable[..., Awaitable[Response]] | None = None

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
        log = self.access_log
        observer = self.observer
        if log is None:
            if observer is None:
                response = await self._answer(request, path)
                await response(scope, receive, send)
                return
            await observer(
                self, request, path, scope, self._sender(request, path, scope, receive, send)
            )
            return
        exchange = log.begin(scope, receive, send)
        request = Request(scope, exchange.receive)
        answered: Response | None = None
        answer = self._sender(
            request, path, scope, exchange.receive, exchange.send, exchange.request_id
        )
        try:
            if observer is None:
                answered = await answer()
            else:
                answered = await observer(self, request, path, scope, answer)
        finally:
            log.finish(exchange, scope, path, answered)

    def _sender(
        self,
        request: Request,
        path: str,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: str | None = None,
    ) -> Callable[[], Awaitable[Response]]:
        """The request answered and sent (with its request id when logged): what the
        observer (metrics, spans) wraps."""

        async def answer() -> Response:
            response = await self._answer(request, path)
            if request_id is not None:
                response.raw_headers.append((b"x-request-id", request_id.encode()))
            await response(scope, receive, send)
            return response

        return answer

    async def _answer(self, request: Request, path: str) -> Response:
        if path not in HEALTH_PATHS:
            return await self._respond(request, path)
        request.scope[ROUTE_KEY] = ("Healthz" if path == HEALTHZ else "Readyz", None)
        if path != HEALTHZ:
            # no token, but the Origin and Host checks: see _health
            try:
                self.origins.check(request.headers.get("origin"), request.headers.get("host"))
            except errors.LanceNamespaceError as exc:
                return self._error(exc, path, None)
        return await self.health.answer(request.method, path)

    async def _respond(self, request: Request, path: str) -> Response:
        route: Route | None = None
        try:
            headers = request.headers
            self.origins.check(headers.get("origin"), headers.get("host"))
            self._authenticate(headers)
            route, path_values = self._route(request.method, path)
            request.scope[ROUTE_KEY] = (route.operation_id, path_values.get("id"))
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
            if name in _REPEATED:
                # one value per item (on=a&on=b); one value alone is the older single form
                # ("a" or "a,b"), read as that list when the request is checked
                values = query.getlist(name)
                if values:
                    body[name] = values if len(values) > 1 else values[0]
                continue
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
        observe.refused(413, "max_body_bytes")
        return _PayloadTooLargeError(f"request body larger than {self.max_body_bytes} bytes")
