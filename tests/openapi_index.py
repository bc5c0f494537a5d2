"""What the OpenAPI-checked test servers (Iceberg REST, Unity Catalog) share.

``OpenApiIndex`` reads an OpenAPI document once and answers three questions:

* which operation a method and a raw (still percent-encoded) path are (``match``): the
  path is matched against the document's path templates, concrete segments winning over
  templated ones;
* whether a request conforms (``check_request``): path, query and header parameters are
  deserialized as their schema's type says and validated against that schema, the JSON
  (or form) body against the operation's ``requestBody`` schema;
* whether a response conforms (``check_response``): its status must be declared for the
  operation (exactly, by its ``NXX`` range, or ``default``) and its body must match the
  declared media type and schema.

Schemas are validated with ``openapi-schema-validator`` over a ``referencing`` registry
that holds the whole document, so every ``$ref`` is followed where it points. A subclass
says what differs between documents: the ``dialect`` (OpenAPI 3.1 with JSON Schema
2020-12, or 3.0 with draft 4), the ``base_path`` its paths live under, how strict the
request checks are, how a boolean query parameter is spelled, and what a response of an
undeclared status must look like.

``SpecCheckedServer`` is the request cycle built on the index, served by uvicorn in a
thread: record the request, route it, check it, then refuse it (unauthorized, invalid),
answer an injected fault or dispatch it to the catalog's handler, and check the answer.
Every problem is appended to ``violations``; an invalid request is answered with the
catalog's 400 and an invalid answer replaced by the catalog's 500. A subclass gives the
catalog's semantics: ``dispatch`` and the replies of those cases.
"""

from __future__ import annotations

import abc
import collections
import json
import re
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml
from referencing import Registry, Specification
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn_thread import UvicornThread

__all__ = [
    "HTTP_METHODS",
    "Answer",
    "Call",
    "Dialect",
    "Fault",
    "OpenApiIndex",
    "Operation",
    "Parameter",
    "Reply",
    "RouteError",
    "SpecCheckedServer",
    "SpecViolationError",
    "escape_pointer",
]

HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")


class SpecViolationError(AssertionError):
    """Raised at exit by a test server's context manager when a request or response broke
    the server's OpenAPI document."""


def escape_pointer(segment: str) -> str:
    """One JSON Pointer segment (RFC 6901)."""
    return segment.replace("~", "~0").replace("/", "~1")


def _stringify_keys(node: Any) -> Any:
    # YAML reads unquoted response codes (``200:``) as integers
    if isinstance(node, dict):
        return {str(key): _stringify_keys(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_stringify_keys(value) for value in node]
    return node


@dataclass(frozen=True)
class Dialect:
    """How the schemas of a document are resolved and validated."""

    openapi: str  # what the document's ``openapi`` field starts with ("3.1", "3.0")
    specification: Specification[Any]  # the JSON Schema dialect its ``$ref``s resolve in
    request_validator: Any  # the jsonschema validator class for requests
    response_validator: Any  # and for responses (requests may be checked more strictly)


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str
    required: bool
    style: str
    explode: bool
    schema_pointer: str


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    template: str
    segments: tuple[str, ...]
    pointer: str
    spec: dict[str, Any]
    parameters: tuple[Parameter, ...]

    @property
    def literal_segments(self) -> int:
        return sum(1 for segment in self.segments if not segment.startswith("{"))


@dataclass(frozen=True)
class Answer:
    """A response being checked against its operation."""

    operation: Operation
    method: str
    status: int
    media_type: str  # of the Content-Type, lower case, without parameters
    body: bytes


class RouteError(Exception):
    """No operation of the document matches a request: 404 (no path) or 405 (no method)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class OpenApiIndex:
    """The operations of a document, and validation of requests and responses."""

    dialect: ClassVar[Dialect]
    #: the prefix of every request path that the document's paths leave out
    base_path: ClassVar[str] = ""
    #: a query parameter the operation does not declare is a problem
    reject_undeclared_query: ClassVar[bool] = False
    #: a request body sent to an operation that declares none is a problem
    reject_unexpected_body: ClassVar[bool] = False

    def __init__(self, path: Path) -> None:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with path.open(encoding="utf-8") as handle:
            self.document: dict[str, Any] = _stringify_keys(yaml.load(handle, Loader=loader))
        self.version = str(self.document.get("openapi", ""))
        expected = self.dialect.openapi
        if not self.version.startswith(expected):
            raise RuntimeError(
                f"{path}: expected an OpenAPI {expected} document, got {self.version!r}"
            )
        self._uri = f"urn:{path.stem}"
        self.registry: Registry[Any] = Registry().with_resource(
            self._uri, self.dialect.specification.create_resource(self.document)
        )
        self._validators: dict[tuple[str, bool], Any] = {}
        self._validators_lock = threading.Lock()
        self.operations: list[Operation] = []
        for template, item in self.document["paths"].items():
            item_pointer = f"/paths/{escape_pointer(template)}"
            shared = item.get("parameters", [])
            for method, operation in item.items():
                if method.upper() not in HTTP_METHODS:
                    continue
                pointer = f"{item_pointer}/{method}"
                parameters = self._parameters(
                    [(p, f"{item_pointer}/parameters/{i}") for i, p in enumerate(shared)]
                    + [
                        (p, f"{pointer}/parameters/{i}")
                        for i, p in enumerate(operation.get("parameters", []))
                    ]
                )
                self.operations.append(
                    Operation(
                        operation_id=operation["operationId"],
                        method=method.upper(),
                        template=template,
                        segments=tuple(template.split("/")),
                        pointer=pointer,
                        spec=operation,
                        parameters=parameters,
                    )
                )

    # document navigation

    def lookup(self, pointer: str) -> Any:
        node: Any = self.document
        for raw in pointer.split("/")[1:]:
            segment = raw.replace("~1", "/").replace("~0", "~")
            node = node[int(segment)] if isinstance(node, list) else node[segment]
        return node

    def deref(self, node: Any, pointer: str) -> tuple[Any, str]:
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/"):
                raise RuntimeError(f"unsupported $ref {ref!r}")
            pointer = ref[1:]
            node = self.lookup(pointer)
        return node, pointer

    def property_names(self, schema_name: str) -> list[str]:
        """The declared properties of a component schema, in document order."""
        return list(self.lookup(f"/components/schemas/{schema_name}")["properties"])

    def _parameters(self, raw: list[tuple[Any, str]]) -> tuple[Parameter, ...]:
        found: dict[tuple[str, str], Parameter] = {}
        for node, pointer in raw:
            parameter, at = self.deref(node, pointer)
            location = parameter["in"]
            style = parameter.get("style", "form" if location == "query" else "simple")
            found[(parameter["name"], location)] = Parameter(
                name=parameter["name"],
                location=location,
                required=bool(parameter.get("required", location == "path")),
                style=style,
                explode=bool(parameter.get("explode", style == "form")),
                schema_pointer=f"{at}/schema",
            )
        return tuple(found.values())

    def schema_type(self, pointer: str) -> str | None:
        schema, _ = self.deref(self.lookup(pointer), pointer)
        kind = schema.get("type")
        if isinstance(kind, list):  # OAS 3.1: ["string", "null"]
            kind = next((k for k in kind if k != "null"), None)
        return kind if isinstance(kind, str) else None

    def errors(self, pointer: str, instance: Any, *, request: bool) -> list[str]:
        key = (pointer, request)
        with self._validators_lock:
            validator = self._validators.get(key)
            if validator is None:
                cls = self.dialect.request_validator if request else self.dialect.response_validator
                validator = cls(
                    {"$ref": f"{self._uri}#{pointer}"},
                    registry=self.registry,
                    format_checker=cls.FORMAT_CHECKER,
                )
                self._validators[key] = validator
        found = []
        for error in validator.iter_errors(instance):
            where = "/".join(str(part) for part in error.absolute_path)
            found.append(f"{where or '<root>'}: {error.message}")
        return found

    # routing

    def match(self, method: str, raw_path: str) -> tuple[Operation, dict[str, str]]:
        relative = raw_path
        if self.base_path:
            if not raw_path.startswith(self.base_path + "/"):
                raise RouteError(404, f"{raw_path!r} is not below {self.base_path}")
            relative = raw_path[len(self.base_path) :]
        segments = relative.split("/")
        candidates: list[tuple[Operation, dict[str, str]]] = []
        for operation in self.operations:
            if len(operation.segments) != len(segments):
                continue
            values: dict[str, str] = {}
            for expected, actual in zip(operation.segments, segments, strict=True):
                if expected.startswith("{") and expected.endswith("}"):
                    if not actual:
                        break
                    values[expected[1:-1]] = actual
                elif expected != actual:
                    break
            else:
                candidates.append((operation, values))
        if not candidates:
            raise RouteError(404, f"no path of the document matches {raw_path!r}")
        allowed = [c for c in candidates if c[0].method == method]
        if not allowed:
            methods = sorted({c[0].method for c in candidates})
            raise RouteError(405, f"{method} is not declared for {raw_path!r} ({methods})")
        # concrete paths win over templated ones
        return max(allowed, key=lambda c: c[0].literal_segments)

    # requests

    def check_request(
        self,
        operation: Operation,
        raw_path_params: Mapping[str, str],
        query: Mapping[str, list[str]],
        headers: Mapping[str, str],
        body: bytes,
    ) -> tuple[list[str], Any]:
        """The problems of a request, and its parsed body (None when absent or unreadable)."""
        problems: list[str] = []
        if self.reject_undeclared_query:
            declared = {p.name for p in operation.parameters if p.location == "query"}
            for name in sorted(set(query) - declared):
                problems.append(f"query parameter {name!r} is not declared for this operation")
        for parameter in operation.parameters:
            where = f"{parameter.location} parameter {parameter.name!r}"
            raw: list[str] | None
            if parameter.location == "path":
                value = raw_path_params.get(parameter.name)
                raw = None if value is None else [urllib.parse.unquote(value)]
            elif parameter.location == "query":
                raw = list(query[parameter.name]) if parameter.name in query else None
            elif parameter.location == "header":
                value = headers.get(parameter.name)
                raw = None if value is None else [value]
            else:
                continue
            if raw is None:
                if parameter.required:
                    problems.append(f"{where} is required")
                continue
            value, problem = self.deserialize(parameter, raw)
            if problem:
                problems.append(f"{where}: {problem}")
                continue
            problems += [
                f"{where}: {e}" for e in self.errors(parameter.schema_pointer, value, request=True)
            ]
        body_problems, parsed = self._check_request_body(operation, headers, body)
        return problems + body_problems, parsed

    def _check_request_body(
        self, operation: Operation, headers: Mapping[str, str], body: bytes
    ) -> tuple[list[str], Any]:
        if "requestBody" not in operation.spec:
            if body and self.reject_unexpected_body:
                return [f"{operation.operation_id} takes no request body"], None
            return [], None
        request_body, at = self.deref(
            operation.spec["requestBody"], f"{operation.pointer}/requestBody"
        )
        if not body:
            return (["the request body is required"] if request_body.get("required") else []), None
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        content = request_body.get("content", {})
        if media_type not in content:
            return [f"request content type {media_type!r} is not one of {sorted(content)}"], None
        problems: list[str] = []
        parsed: Any = None
        if media_type == "application/json":
            try:
                parsed = json.loads(body)
            except ValueError as error:
                return [f"the request body is not JSON: {error}"], None
        elif media_type == "application/x-www-form-urlencoded":
            form = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
            repeated = sorted(key for key, values in form.items() if len(values) > 1)
            if repeated:
                problems.append(f"form fields given more than once: {repeated}")
            parsed = {key: values[-1] for key, values in form.items()}
        schema_pointer = f"{at}/content/{escape_pointer(media_type)}/schema"
        problems += [f"request body {e}" for e in self.errors(schema_pointer, parsed, request=True)]
        return problems, parsed

    def deserialize(self, parameter: Parameter, raw: list[str]) -> tuple[Any, str | None]:
        """A parameter's value as its schema's type says, or the problem with it."""
        kind = self.schema_type(parameter.schema_pointer)
        if kind == "array":
            if parameter.location == "query" and parameter.explode:
                return raw, None
            return [item.strip() for item in raw[-1].split(",")], None
        if len(raw) > 1:
            return None, f"given {len(raw)} times"
        value = raw[0]
        if kind == "integer":
            if not re.fullmatch(r"[+-]?\d+", value):
                return None, f"{value!r} is not an integer"
            return int(value), None
        if kind == "number":
            try:
                return float(value), None
            except ValueError:
                return None, f"{value!r} is not a number"
        if kind == "boolean":
            return self.parse_boolean(value)
        return value, None

    def parse_boolean(self, value: str) -> tuple[bool | None, str | None]:
        """A boolean parameter: exactly ``true`` or ``false``, as OpenAPI's styles write it."""
        if value not in ("true", "false"):
            return None, f"{value!r} is not a boolean (true or false)"
        return value == "true", None

    def query_values(self, operation: Operation, query: Mapping[str, list[str]]) -> dict[str, Any]:
        """The declared query parameters given, deserialized (for a valid request)."""
        return {
            p.name: self.deserialize(p, query[p.name])[0]
            for p in operation.parameters
            if p.location == "query" and p.name in query
        }

    # responses

    def check_response(
        self, operation: Operation, method: str, status: int, content_type: str, body: bytes
    ) -> list[str]:
        responses = operation.spec.get("responses", {})
        key = next(
            (k for k in (str(status), f"{status // 100}XX", "default") if k in responses), None
        )
        media_type = content_type.split(";")[0].strip().lower()
        answer = Answer(operation, method, status, media_type, body)
        if key is None:
            return self.check_undeclared_status(answer)
        response, at = self.deref(responses[key], f"{operation.pointer}/responses/{key}")
        return self.check_content(answer, response, at)

    def check_undeclared_status(self, answer: Answer) -> list[str]:
        """The problems of a response whose status the operation does not declare."""
        name = answer.operation.operation_id
        declared = sorted(answer.operation.spec.get("responses", {}))
        return [f"status {answer.status} is not declared for {name} (declared: {declared})"]

    def check_content(self, answer: Answer, response: Mapping[str, Any], at: str) -> list[str]:
        """The problems of a response's body against ``response`` (the object at ``at``)."""
        if answer.method == "HEAD":  # a HEAD response has no body, whatever the document shows
            return []
        status, media_type, body = answer.status, answer.media_type, answer.body
        content = response.get("content")
        if not content:
            if not body:
                return []
            name = answer.operation.operation_id
            return [f"status {status} of {name} has no content, got {len(body)} bytes"]
        if media_type not in content:
            return [f"response content type {media_type!r} is not one of {sorted(content)}"]
        try:
            parsed = json.loads(body)
        except ValueError as error:
            return [f"the response body is not JSON: {error}"]
        schema_pointer = f"{at}/content/{escape_pointer(media_type)}/schema"
        instance = self.response_instance(parsed)
        return [
            f"{status} response body {e}"
            for e in self.errors(schema_pointer, instance, request=False)
        ]

    def response_instance(self, parsed: Any) -> Any:
        """What of a parsed response body is validated: all of it, unless a server says less."""
        return parsed


# -- the request cycle ----------------------------------------------------------------------


@dataclass
class Reply:
    """An answer, of a catalog's handler or of the request cycle itself."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    text: str | None = None  # a text/plain body instead of JSON


@dataclass
class Call:
    """A valid request, as the catalog's handler sees it."""

    operation: Operation
    path: dict[str, str]  # percent-decoded
    query: dict[str, Any]  # last values as given, or deserialized (``typed_query``)
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)  # case-insensitive lookups


@dataclass(frozen=True)
class Fault:
    """An injected error answer (``fail_next``)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)  # sent with the answer
    code: str | None = None  # the catalog's error code, when the caller chose one

    def __post_init__(self) -> None:
        if not 400 <= self.status < 600:
            raise ValueError("an injected fault must be a 4xx or 5xx status")


class SpecCheckedServer(abc.ABC):
    """A test server whose requests and answers are checked against an OpenAPI document."""

    uri: str
    requests: list[tuple[str, str]]
    violations: list[str]
    #: the class of the Call handed to ``dispatch`` (a server's may carry more)
    call_type: ClassVar[type[Call]] = Call
    #: ``Call.query`` holds deserialized values rather than the last raw value of each
    typed_query: ClassVar[bool] = False
    #: handlers block (on a database): they run in a worker thread, not on the event loop
    blocking_handlers: ClassVar[bool] = False
    json_content_type: ClassVar[str] = "application/json"
    #: an answer's head and body leave in one send (see uvicorn_thread.UvicornThread)
    one_send: ClassVar[bool] = False

    def __init__(self, spec: OpenApiIndex, *, thread_name: str, description: str) -> None:
        self.uri = ""
        self.requests = []
        self.violations = []
        self._spec = spec
        self._lock = threading.RLock()
        self._faults: collections.deque[Fault] = collections.deque()
        self.app = Starlette(
            routes=[Route("/{path:path}", self._endpoint, methods=list(HTTP_METHODS))]
        )
        self._http = UvicornThread(
            self.app, name=thread_name, description=description, one_send=self.one_send
        )

    # the catalog's semantics

    @abc.abstractmethod
    def dispatch(self, call: Call) -> Reply:
        """The catalog's answer to a valid, authorized request."""

    @abc.abstractmethod
    def route_error_reply(self, error: RouteError) -> Reply:
        """The answer to a request no operation of the document matches."""

    @abc.abstractmethod
    def invalid_request_reply(self, operation: Operation, message: str) -> Reply:
        """The answer to a request that broke the document (a 400)."""

    @abc.abstractmethod
    def invalid_response_reply(self, message: str) -> Reply:
        """What replaces an answer that broke the document (a 500)."""

    @abc.abstractmethod
    def fault_reply(self, fault: Fault) -> Reply:
        """The answer of an injected fault."""

    def unauthorized_reply(self, operation: Operation, headers: Mapping[str, str]) -> Reply | None:
        """The refusal of a request that lacks valid credentials; None lets it through."""
        return None

    def faults_apply_to(self, operation: Operation) -> bool:
        """Whether an injected fault may answer this operation."""
        return True

    def note_request(  # noqa: B027 (a hook that does nothing unless overridden)
        self, operation: Operation, query: Mapping[str, list[str]]
    ) -> None:
        """Sees every routed request, valid or not (for servers that count requests)."""

    def encode(self, reply: Reply) -> tuple[bytes, str]:
        """The body and content type a reply is sent with."""
        if reply.text is not None:
            return reply.text.encode(), "text/plain; charset=utf-8"
        if reply.body is None:
            return b"", ""
        return json.dumps(reply.body, separators=(",", ":")).encode(), self.json_content_type

    # faults

    def _queue_faults(self, fault: Fault, count: int) -> None:
        """Answer the next ``count`` requests that faults apply to with ``fault``."""
        with self._lock:
            self._faults.extend([fault] * count)

    def _take_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    # lifecycle

    def start(self) -> None:
        self.uri = self._http.start()

    def stop(self) -> None:
        self._http.stop()

    # HTTP

    async def _endpoint(self, request: Request) -> Response:
        arguments = (
            request.method,
            (request.scope.get("raw_path") or request.url.path.encode()).decode("latin-1"),
            request.scope.get("query_string", b"").decode("latin-1"),
            request.headers,
            await request.body(),
        )
        if self.blocking_handlers:
            reply = await run_in_threadpool(self._handle, *arguments)
        else:
            reply = self._handle(*arguments)
        content, content_type = self.encode(reply)
        headers = dict(reply.headers)
        if content_type:
            headers["content-type"] = content_type
        if request.method == "HEAD":
            content = b""
        return Response(content, status_code=reply.status, headers=headers)

    def _handle(
        self, method: str, raw_path: str, query_string: str, headers: Mapping[str, str], body: bytes
    ) -> Reply:
        target = f"{raw_path}?{query_string}" if query_string else raw_path
        self.requests.append((method, target))
        try:
            operation, path_params = self._spec.match(method, raw_path)
        except RouteError as error:
            self.violations.append(f"request {method} {target}: {error}")
            return self.route_error_reply(error)

        query = urllib.parse.parse_qs(query_string, keep_blank_values=True)
        name = operation.operation_id
        self.note_request(operation, query)
        problems, parsed = self._spec.check_request(operation, path_params, query, headers, body)
        self.violations += [f"request {method} {target} ({name}): {p}" for p in problems]
        injected = False
        refusal = self.unauthorized_reply(operation, headers)
        if refusal is not None:
            reply = refusal
        elif problems:
            reply = self.invalid_request_reply(operation, "; ".join(problems))
        elif self.faults_apply_to(operation) and (fault := self._take_fault()):
            reply = self.fault_reply(fault)
            injected = True
        else:
            call = self.call_type(
                operation=operation,
                path={k: urllib.parse.unquote(v) for k, v in path_params.items()},
                query=(
                    self._spec.query_values(operation, query)
                    if self.typed_query
                    else {k: v[-1] for k, v in query.items()}
                ),
                body=parsed,
                headers=headers,
            )
            reply = self.dispatch(call)

        content, content_type = self.encode(reply)
        response_problems = self._spec.check_response(
            operation, method, reply.status, content_type, content
        )
        if response_problems:
            what = "injected " if injected else ""
            found = [
                f"{what}response to {method} {target} ({name}): {p}" for p in response_problems
            ]
            self.violations += found
            return self.invalid_response_reply("; ".join(found))
        return reply
