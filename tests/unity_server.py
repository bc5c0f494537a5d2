"""A small in-memory Unity Catalog OSS server for tests.

It serves the catalogs, schemas and tables endpoints of the official OpenAPI document
(``shared/reference/unity-catalog-api.yaml``) under ``/api/2.1/unity-catalog`` and behaves
like the Unity Catalog OSS server (its ``CatalogRepository``, ``SchemaRepository``,
``TableRepository``, ``PagedListingHelper`` and ``GlobalExceptionHandler``):

* full names are ``catalog.schema`` and ``catalog.schema.table``; names must match
  ``[a-zA-Z0-9_@-]{1,255}`` (Unity's ``ValidationUtils.validateSqlObjectName``);
* a missing parent is 404 ``NOT_FOUND``, a duplicate 409 ``ALREADY_EXISTS``, deleting a
  catalog that holds schemas or a schema that holds tables without ``force=true`` is 400
  ``FAILED_PRECONDITION`` (Unity maps FAILED_PRECONDITION to 400); ``force=true`` cascades;
* listings are in ascending name order, pages hold ``min(max_results, page_size_limit)``
  items (``0`` or absent: ``page_size_limit``, default 100, like Unity's
  ``DEFAULT_PAGE_SIZE``; negative: 400), and a full page always carries a
  ``next_page_token`` even when nothing follows (the next page is then empty), exactly like
  Unity. The token is opaque here (Unity's is the last name): a token that was not issued
  for the same listing is 400 ``INVALID_ARGUMENT``. At the end ``next_page_token`` is JSON
  ``null`` (Unity's Jackson writes every unset field as ``null``); ``end_of_list`` selects
  ``""`` or an absent key instead;
* unset fields are written as ``null`` (``null_fields=False`` omits them);
* a plain local ``storage_location`` is turned into a ``file://`` URI the way Unity's
  ``FileOperations.convertRelativePathToURI`` does (``Paths.get(p).toUri()``: absolute,
  and with a trailing ``/`` when the path is an existing directory); ``file:/x`` becomes
  ``file:///x``; other URIs are kept as given;
* errors are ``{"error_code": ..., "message": ..., "details": [{"@type":
  "google.rpc.ErrorInfo", "reason": ...}]}`` with Unity's ``ErrorCode`` HTTP statuses;
* deletes answer 200 ``text/plain; charset=utf-8`` ``200 OK`` (Armeria's
  ``HttpResponse.of(HttpStatus.OK)``, which is what Unity sends), or ``{}`` as
  ``application/json`` with ``json_delete_bodies=True``.

Every request and every response is checked against the OpenAPI document (an OpenAPI
3.0.0 document, so schemas are validated with ``openapi-schema-validator``'s
``OAS30Validator`` over a ``referencing`` registry holding the whole document). The
special cases the document forced are listed in ``SPEC_SPECIAL_CASES``. A violation is
appended to ``UnityServer.violations``: an invalid request is answered 400
``INVALID_ARGUMENT``, an invalid response is replaced by a 500 ``INTERNAL`` naming the
violation, and ``unity_catalog`` raises ``SpecViolationError`` at exit if any was recorded.
"""

from __future__ import annotations

import base64
import binascii
import collections
import contextlib
import copy
import functools
import json
import os
import re
import socket
import threading
import time
import traceback
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend
from openapi_schema_validator import OAS30Validator
from referencing import Registry
from referencing.jsonschema import DRAFT4
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = [
    "BASE_PATH",
    "ERROR_CODES",
    "SPEC_PATH",
    "SPEC_SPECIAL_CASES",
    "SpecViolationError",
    "UnityError",
    "UnityServer",
    "unity_catalog",
]

SPEC_PATH = Path(
    os.environ.get(
        "UNITY_CATALOG_SPEC",
        Path(__file__).resolve().parents[2] / "shared" / "reference" / "unity-catalog-api.yaml",
    )
)
BASE_PATH = "/api/2.1/unity-catalog"
_DOC_URI = "urn:unity-catalog-api"
_HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
_NAME = re.compile(r"[a-zA-Z0-9_@-]+")
_MAX_NAME_LENGTH = 255
_JSON = "application/json; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"

# Unity's io.unitycatalog.server.exception.ErrorCode: name -> HTTP status
ERROR_CODES: dict[str, int] = {
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "UNAUTHENTICATED": 401,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
}
# the error_code an injected fault of a status carries unless told otherwise
_FAULT_CODES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# The body of every Unity error (GlobalExceptionHandler.createErrorResponse).
_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error_code", "message", "details"],
    "additionalProperties": False,
    "properties": {
        "error_code": {"type": "string", "enum": sorted(ERROR_CODES)},
        "message": {"type": "string"},
        "stack_trace": {"type": "string"},
        "details": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["@type", "reason"],
                "properties": {
                    "@type": {"type": "string", "enum": ["google.rpc.ErrorInfo"]},
                    "reason": {"type": "string"},
                    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        },
    },
}
_DELETE_OPERATIONS = frozenset({"deleteCatalog", "deleteSchema", "deleteTable"})

SPEC_SPECIAL_CASES: dict[str, str] = {
    "openapi-3.0": (
        "the document is OpenAPI 3.0.0: schemas are JSON Schema draft 4 plus OAS 3.0 "
        "keywords (OAS30Validator), not the 2020-12 dialect of 3.1"
    ),
    "no-error-responses": (
        "no operation declares any error response nor a `default`: every 4xx/5xx is "
        "validated against Unity's own error body (_ERROR_SCHEMA, from "
        "GlobalExceptionHandler) and its error_code must map to the response status"
    ),
    "null-fields": (
        "Unity's Jackson writes unset fields as null (`next_page_token: null` at the end "
        "of a listing, `owner: null`, ...) but no schema is `nullable`: object members "
        "whose value is null are dropped before a response is validated (null array items "
        "still fail; requests are not relaxed)"
    ),
    "delete-body": (
        "deleteCatalog/deleteSchema/deleteTable declare 200 application/json `schema: {}`, "
        "Unity (Armeria HttpResponse.of(OK)) sends text/plain `200 OK`: that exact "
        "response is accepted for those three operations"
    ),
    "optional-request-bodies": (
        "no requestBody is `required: true`, so an absent body passes the document; the "
        "handlers answer it 400 INVALID_ARGUMENT like Unity"
    ),
    "nullable-default": (
        "ColumnInfo.nullable has `default: 'true'` (a string); defaults are not "
        "validated, and a column sent without `nullable` is stored as true"
    ),
    "max-results": (
        "max_results declares only a maximum (1000, tables 50): a negative value passes "
        "the document and is answered 400 INVALID_ARGUMENT like Unity's "
        "PagedListingHelper"
    ),
    "strict-query": (
        "stricter than the document: a query parameter the operation does not declare "
        "(e.g. Unity's undocumented omit_columns) is recorded as a violation"
    ),
    "strict-body": (
        "stricter than the document: a request-body member its schema does not declare "
        "(schemas leave additionalProperties open) is recorded as a violation"
    ),
    "strict-boolean": (
        "boolean query parameters must be exactly `true` or `false` (OpenAPI's form "
        "style); Python's `True` is recorded as a violation"
    ),
}


class SpecViolationError(AssertionError):
    """Raised by ``unity_catalog`` at exit when a request or response broke the spec."""


# -- schema validation --------------------------------------------------------------------

_BASE_PROPERTIES = OAS30Validator.VALIDATORS["properties"]


def _closed_properties(
    validator: Any, properties: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``properties``, also rejecting undeclared members where additionalProperties is unset."""
    yield from _BASE_PROPERTIES(validator, properties, instance, schema)
    if not isinstance(instance, dict) or "additionalProperties" in schema:
        return
    extra = sorted(set(instance) - set(properties))
    if extra:
        yield ValidationError(f"undeclared member(s) {extra}")


_ResponseValidator = OAS30Validator
_RequestValidator = extend(OAS30Validator, {"properties": _closed_properties})


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def _stringify_keys(node: Any) -> Any:
    # YAML reads unquoted response codes (``200:``) as integers
    if isinstance(node, dict):
        return {str(key): _stringify_keys(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_stringify_keys(value) for value in node]
    return node


def _drop_nulls(node: Any) -> Any:
    """Object members whose value is null removed, recursively (see SPEC_SPECIAL_CASES)."""
    if isinstance(node, dict):
        return {k: _drop_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_drop_nulls(v) for v in node]
    return node


@dataclass(frozen=True)
class _Parameter:
    name: str
    location: str
    required: bool
    style: str
    explode: bool
    schema_pointer: str


@dataclass(frozen=True)
class _Operation:
    operation_id: str
    method: str
    template: str
    segments: tuple[str, ...]
    pointer: str
    spec: dict[str, Any]
    parameters: tuple[_Parameter, ...]

    @property
    def literal_segments(self) -> int:
        return sum(1 for segment in self.segments if not segment.startswith("{"))


class _RouteError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class _OpenApi:
    """The operations of the document, and validation of requests and responses."""

    def __init__(self, path: Path) -> None:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with path.open(encoding="utf-8") as handle:
            self.document: dict[str, Any] = _stringify_keys(yaml.load(handle, Loader=loader))
        self.version = str(self.document.get("openapi", ""))
        if not self.version.startswith("3.0"):
            raise RuntimeError(f"{path}: expected an OpenAPI 3.0 document, got {self.version!r}")
        self.registry: Registry[Any] = Registry().with_resource(
            _DOC_URI, DRAFT4.create_resource(self.document)
        )
        self._validators: dict[tuple[str, bool], Any] = {}
        self._validators_lock = threading.Lock()
        self._error_validator = OAS30Validator(_ERROR_SCHEMA)
        self.operations: list[_Operation] = []
        for template, item in self.document["paths"].items():
            item_pointer = f"/paths/{_escape(template)}"
            shared = item.get("parameters", [])
            for method, operation in item.items():
                if method.upper() not in _HTTP_METHODS:
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
                    _Operation(
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

    def _parameters(self, raw: list[tuple[Any, str]]) -> tuple[_Parameter, ...]:
        found: dict[tuple[str, str], _Parameter] = {}
        for node, pointer in raw:
            parameter, at = self.deref(node, pointer)
            location = parameter["in"]
            style = parameter.get("style", "form" if location == "query" else "simple")
            found[(parameter["name"], location)] = _Parameter(
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
        return kind if isinstance(kind, str) else None

    def errors(self, pointer: str, instance: Any, *, request: bool) -> list[str]:
        key = (pointer, request)
        with self._validators_lock:
            validator = self._validators.get(key)
            if validator is None:
                cls = _RequestValidator if request else _ResponseValidator
                validator = cls(
                    {"$ref": f"{_DOC_URI}#{pointer}"},
                    registry=self.registry,
                    format_checker=OAS30Validator.FORMAT_CHECKER,
                )
                self._validators[key] = validator
        found = []
        for error in validator.iter_errors(instance):
            where = "/".join(str(part) for part in error.absolute_path)
            found.append(f"{where or '<root>'}: {error.message}")
        return found

    # routing

    def match(self, method: str, raw_path: str) -> tuple[_Operation, dict[str, str]]:
        if not raw_path.startswith(BASE_PATH + "/"):
            raise _RouteError(404, "NOT_FOUND", f"{raw_path!r} is not below {BASE_PATH}")
        segments = raw_path[len(BASE_PATH) :].split("/")
        candidates: list[tuple[_Operation, dict[str, str]]] = []
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
            raise _RouteError(404, "NOT_FOUND", f"no path of the document matches {raw_path!r}")
        allowed = [c for c in candidates if c[0].method == method]
        if not allowed:
            methods = sorted({c[0].method for c in candidates})
            raise _RouteError(
                405, "UNIMPLEMENTED", f"{method} is not declared for {raw_path!r} ({methods})"
            )
        # concrete paths win over templated ones
        return max(allowed, key=lambda c: c[0].literal_segments)

    # requests

    def check_request(
        self,
        operation: _Operation,
        raw_path_params: Mapping[str, str],
        query: Mapping[str, list[str]],
        headers: Mapping[str, str],
        body: bytes,
    ) -> tuple[list[str], Any]:
        problems: list[str] = []
        declared_query = {p.name for p in operation.parameters if p.location == "query"}
        for name in sorted(set(query) - declared_query):
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
            value, problem = self._deserialize(parameter, raw)
            if problem:
                problems.append(f"{where}: {problem}")
                continue
            problems += [
                f"{where}: {e}" for e in self.errors(parameter.schema_pointer, value, request=True)
            ]

        parsed: Any = None
        if "requestBody" not in operation.spec:
            if body:
                problems.append(f"{operation.operation_id} takes no request body")
            return problems, parsed
        request_body, at = self.deref(
            operation.spec["requestBody"], f"{operation.pointer}/requestBody"
        )
        if not body:
            if request_body.get("required"):
                problems.append("the request body is required")
            return problems, parsed
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        content = request_body.get("content", {})
        if media_type not in content:
            problems.append(f"request content type {media_type!r} is not one of {sorted(content)}")
            return problems, parsed
        try:
            parsed = json.loads(body)
        except ValueError as error:
            problems.append(f"the request body is not JSON: {error}")
            return problems, None
        schema_pointer = f"{at}/content/{_escape(media_type)}/schema"
        problems += [f"request body {e}" for e in self.errors(schema_pointer, parsed, request=True)]
        return problems, parsed

    def _deserialize(self, parameter: _Parameter, raw: list[str]) -> tuple[Any, str | None]:
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
            if value not in ("true", "false"):
                return None, f"{value!r} is not a boolean (true or false)"
            return value == "true", None
        return value, None

    # responses

    def check_response(
        self, operation: _Operation, status: int, content_type: str, body: bytes
    ) -> list[str]:
        name = operation.operation_id
        responses = operation.spec.get("responses", {})
        key = next(
            (k for k in (str(status), f"{status // 100}XX", "default") if k in responses), None
        )
        media_type = content_type.split(";")[0].strip().lower()
        if key is None:
            if status < 400:
                return [f"status {status} is not declared for {name} ({sorted(responses)})"]
            return self.check_error(status, media_type, body)
        response, at = self.deref(responses[key], f"{operation.pointer}/responses/{key}")
        if name in _DELETE_OPERATIONS and media_type == "text/plain" and body == b"200 OK":
            return []  # what Unity sends (SPEC_SPECIAL_CASES["delete-body"])
        content = response.get("content")
        if not content:
            return (
                [f"status {status} of {name} has no content, got {len(body)} bytes"] if body else []
            )
        if media_type not in content:
            return [f"response content type {media_type!r} is not one of {sorted(content)}"]
        try:
            parsed = json.loads(body)
        except ValueError as error:
            return [f"the response body is not JSON: {error}"]
        schema_pointer = f"{at}/content/{_escape(media_type)}/schema"
        return [
            f"{status} response body {e}"
            for e in self.errors(schema_pointer, _drop_nulls(parsed), request=False)
        ]

    def check_error(self, status: int, media_type: str, body: bytes) -> list[str]:
        if media_type != "application/json":
            return [f"error response content type {media_type!r} is not application/json"]
        try:
            parsed = json.loads(body)
        except ValueError as error:
            return [f"the error body is not JSON: {error}"]
        problems = [
            f"{status} error body {'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in self._error_validator.iter_errors(parsed)
        ]
        code = str(parsed.get("error_code")) if isinstance(parsed, dict) else ""
        if not problems and status in ERROR_CODES.values() and ERROR_CODES.get(code) != status:
            problems.append(f"error_code {code!r} is HTTP {ERROR_CODES.get(code)}, sent {status}")
        return problems


@functools.cache
def _openapi() -> _OpenApi:
    return _OpenApi(SPEC_PATH)


# -- the catalog server ------------------------------------------------------------------


class UnityError(ValueError):
    """A Unity error: ``code`` is a name of ERROR_CODES, which gives the HTTP status.

    The seeding helpers (``add_catalog``, ...) raise it for an invalid or duplicate name.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class _Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    text: str | None = None  # a text/plain body instead of JSON


@dataclass
class _Call:
    operation: _Operation
    path: dict[str, str]
    query: dict[str, Any]
    body: Any


def _error_body(code: str, message: str) -> dict[str, Any]:
    return {
        "error_code": code,
        "message": message,
        "details": [{"@type": "google.rpc.ErrorInfo", "reason": code}],
    }


def _error(code: str, message: str, status: int | None = None) -> _Reply:
    return _Reply(ERROR_CODES[code] if status is None else status, _error_body(code, message))


def _now_ms() -> int:
    return int(time.time() * 1000)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise UnityError("INVALID_ARGUMENT", "Name cannot be empty")
    if len(name) > _MAX_NAME_LENGTH:
        raise UnityError(
            "INVALID_ARGUMENT", f"Name cannot be longer than {_MAX_NAME_LENGTH} characters"
        )
    if not _NAME.fullmatch(name):
        raise UnityError(
            "INVALID_ARGUMENT",
            "Name cannot contain a period, space, forward-slash, or control characters",
        )
    return name


def _storage_uri(location: str) -> str:
    """Unity's FileOperations.convertRelativePathToURI (see the module docstring)."""
    scheme = urllib.parse.urlsplit(location).scheme.lower()
    if scheme == "file":
        if location.startswith("file:/") and not location.startswith("file:///"):
            return "file://" + location[len("file:") :]
        return location
    if len(scheme) > 1:  # s3, gs, abfss, ... (a one-letter "scheme" is a drive letter)
        return location
    path = Path(location).absolute()
    uri = path.as_uri()
    if path.is_dir() and not uri.endswith("/"):
        uri += "/"  # java.nio.file.Path.toUri() of an existing directory
    return uri


class UnityServer:
    """An in-memory Unity Catalog OSS server on 127.0.0.1 (see the module docstring)."""

    uri: str
    requests: list[tuple[str, str]]
    violations: list[str]
    catalogs: dict[str, dict[str, Any]]
    schemas: dict[str, dict[str, Any]]
    tables: dict[str, dict[str, Any]]
    allow_catalog_create: bool
    page_size_limit: int
    end_of_list: str
    null_fields: bool
    json_delete_bodies: bool

    def __init__(self, *, require_token: str | None = None) -> None:
        self.require_token = require_token
        self.uri = ""
        self.requests = []
        self.violations = []
        self.catalogs = {}
        self.schemas = {}
        self.tables = {}
        self.allow_catalog_create = True
        # Unity's PagedListingHelper.DEFAULT_PAGE_SIZE: the server's page-length bound
        self.page_size_limit = 100
        # what the last page's next_page_token is: "null" (Unity), "empty" ("") or "absent"
        self.end_of_list = "null"
        self.null_fields = True
        self.json_delete_bodies = False
        self._spec = _openapi()
        self._lock = threading.RLock()
        self._faults: collections.deque[tuple[int, dict[str, str], str | None]] = (
            collections.deque()
        )
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._handlers: dict[str, Callable[[_Call], _Reply]] = {
            "listCatalogs": self._list_catalogs,
            "createCatalog": self._create_catalog,
            "getCatalog": self._get_catalog,
            "updateCatalog": self._update_catalog,
            "deleteCatalog": self._delete_catalog,
            "listSchemas": self._list_schemas,
            "createSchema": self._create_schema,
            "getSchema": self._get_schema,
            "updateSchema": self._update_schema,
            "deleteSchema": self._delete_schema,
            "listTables": self._list_tables,
            "createTable": self._create_table,
            "getTable": self._get_table,
            "deleteTable": self._delete_table,
        }
        self.app = Starlette(
            routes=[Route("/{path:path}", self._endpoint, methods=list(_HTTP_METHODS))]
        )

    # public helpers

    def add_catalog(self, name: str, properties: dict[str, str] | None = None) -> None:
        """Seed a catalog directly (no HTTP, no validation of the spec)."""
        with self._lock:
            self._new_catalog({"name": name, "properties": properties or {}})

    def add_schema(self, catalog: str, name: str, properties: dict[str, str] | None = None) -> None:
        """Seed a schema directly."""
        with self._lock:
            self._new_schema(
                {"catalog_name": catalog, "name": name, "properties": properties or {}}
            )

    def add_table(
        self,
        catalog: str,
        schema: str,
        name: str,
        *,
        table_type: str = "EXTERNAL",
        data_source_format: str | None = None,
        storage_location: str | None = None,
        columns: list[dict[str, Any]] | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        """Seed a table directly, of any table_type (POST /tables refuses some of them)."""
        with self._lock:
            self._new_table(
                {
                    "catalog_name": catalog,
                    "schema_name": schema,
                    "name": name,
                    "table_type": table_type,
                    "data_source_format": data_source_format,
                    "storage_location": storage_location,
                    "columns": columns or [],
                    "properties": properties or {},
                },
                check_type=False,
            )

    def fail_next(
        self,
        status: int,
        count: int = 1,
        *,
        headers: dict[str, str] | None = None,
        error_code: str | None = None,
    ) -> None:
        """Answer the next `count` valid, authorized requests with `status` and a Unity error.

        The error_code defaults to the one Unity uses for the status (409: ABORTED, 429:
        RESOURCE_EXHAUSTED, 503: UNAVAILABLE, ...); `headers` (e.g. Retry-After) are sent.
        """
        if not 400 <= status < 600:
            raise ValueError("an injected fault must be a 4xx or 5xx status")
        if error_code is not None and error_code not in ERROR_CODES:
            raise ValueError(f"unknown Unity error_code {error_code!r}")
        with self._lock:
            for _ in range(count):
                self._faults.append((status, dict(headers or {}), error_code))

    # lifecycle

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # asyncio sets TCP_NODELAY only on sockets it creates; without it keep-alive
        # requests wait for delayed ACKs (~40 ms each)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        self.uri = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            log_config=None,
            access_log=False,
            lifespan="off",
            ws="none",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name="unity-catalog-server",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Unity Catalog test server did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()

    # HTTP

    async def _endpoint(self, request: Request) -> Response:
        body = await request.body()
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        reply = self._handle(
            request.method,
            raw_path.decode("latin-1"),
            request.scope.get("query_string", b"").decode("latin-1"),
            request.headers,
            body,
        )
        content, content_type = self._encode(reply)
        headers = dict(reply.headers)
        if content_type:
            headers["content-type"] = content_type
        if request.method == "HEAD":
            content = b""
        return Response(content, status_code=reply.status, headers=headers)

    def _encode(self, reply: _Reply) -> tuple[bytes, str]:
        if reply.text is not None:
            return reply.text.encode(), _TEXT
        if reply.body is None:
            return b"", ""
        body = reply.body if self.null_fields else _drop_nulls(reply.body)
        return json.dumps(body, separators=(",", ":")).encode(), _JSON

    def _handle(
        self, method: str, raw_path: str, query_string: str, headers: Mapping[str, str], body: bytes
    ) -> _Reply:
        target = f"{raw_path}?{query_string}" if query_string else raw_path
        self.requests.append((method, target))
        try:
            operation, path_params = self._spec.match(method, raw_path)
        except _RouteError as error:
            self.violations.append(f"request {method} {target}: {error}")
            return _error(error.code, str(error), error.status)

        query_lists = urllib.parse.parse_qs(query_string, keep_blank_values=True)
        name = operation.operation_id
        problems, parsed = self._spec.check_request(
            operation, path_params, query_lists, headers, body
        )
        self.violations += [f"request {method} {target} ({name}): {p}" for p in problems]
        injected = False
        if self.require_token is not None and not self._authorized(headers):
            reply = _error("UNAUTHENTICATED", "No valid bearer token in the Authorization header")
        elif problems:
            reply = _error("INVALID_ARGUMENT", "; ".join(problems))
        elif fault := self._take_fault():
            status, fault_headers, code = fault
            code = code or _FAULT_CODES.get(status, "UNKNOWN")
            reply = _Reply(status, _error_body(code, f"injected fault ({status})"), fault_headers)
            injected = True
        else:
            call = _Call(
                operation=operation,
                path={k: urllib.parse.unquote(v) for k, v in path_params.items()},
                query={
                    p.name: self._spec._deserialize(p, query_lists[p.name])[0]
                    for p in operation.parameters
                    if p.location == "query" and p.name in query_lists
                },
                body=parsed,
            )
            reply = self._dispatch(call)

        content, content_type = self._encode(reply)
        response_problems = self._spec.check_response(
            operation, reply.status, content_type, content
        )
        if response_problems:
            what = "injected " if injected else ""
            found = [
                f"{what}response to {method} {target} ({name}): {p}" for p in response_problems
            ]
            self.violations += found
            return _error("INTERNAL", "; ".join(found))
        return reply

    def _take_fault(self) -> tuple[int, dict[str, str], str | None] | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and token.strip() == self.require_token

    def _dispatch(self, call: _Call) -> _Reply:
        name = call.operation.operation_id
        handler = self._handlers.get(name)
        if handler is None:
            return _error("UNIMPLEMENTED", f"{name} is not implemented by this test server")
        try:
            with self._lock:
                return handler(call)
        except UnityError as error:
            return _error(error.code, error.message)
        except Exception as error:
            self.violations.append(f"server error in {name}: {traceback.format_exc()}")
            return _error("INTERNAL", f"{type(error).__name__}: {error}")

    # state

    def _blank(self, schema_name: str) -> dict[str, Any]:
        return dict.fromkeys(self._spec.property_names(schema_name))

    def _require_catalog(self, name: str) -> dict[str, Any]:
        catalog = self.catalogs.get(name)
        if catalog is None:
            raise UnityError("NOT_FOUND", f"Catalog not found: {name}")
        return catalog

    def _require_schema(self, catalog: str, schema: str) -> dict[str, Any]:
        self._require_catalog(catalog)
        found = self.schemas.get(f"{catalog}.{schema}")
        if found is None:
            raise UnityError("NOT_FOUND", f"Schema not found: {catalog}.{schema}")
        return found

    @staticmethod
    def _split(full_name: str, parts: int, kind: str) -> list[str]:
        names = full_name.split(".")
        if len(names) != parts or not all(names):
            raise UnityError("INVALID_ARGUMENT", f"Invalid {kind} name: {full_name}")
        return names

    @staticmethod
    def _body(call: _Call) -> dict[str, Any]:
        if not isinstance(call.body, dict):
            raise UnityError("INVALID_ARGUMENT", "Malformed request body: no content")
        return call.body

    def _new_catalog(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _check_name(body.get("name"))
        if name in self.catalogs:
            raise UnityError("ALREADY_EXISTS", f"Catalog already exists: {name}")
        catalog = self._blank("CatalogInfo")
        catalog_id = str(uuid.uuid4())
        storage_root = body.get("storage_root")
        catalog.update(
            name=name,
            comment=body.get("comment"),
            properties=dict(body.get("properties") or {}),
            created_at=_now_ms(),
            id=catalog_id,
            storage_root=storage_root,
            storage_location=(
                f"{storage_root.rstrip('/')}/__unitystorage/catalogs/{catalog_id}"
                if storage_root
                else None
            ),
        )
        self.catalogs[name] = catalog
        return catalog

    def _new_schema(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _check_name(body.get("name"))
        catalog_name = body.get("catalog_name")
        if not isinstance(catalog_name, str):
            raise UnityError("INVALID_ARGUMENT", "catalog_name is required")
        self._require_catalog(catalog_name)
        full_name = f"{catalog_name}.{name}"
        if full_name in self.schemas:
            raise UnityError("ALREADY_EXISTS", f"Schema already exists: {name}")
        schema = self._blank("SchemaInfo")
        schema_id = str(uuid.uuid4())
        storage_root = body.get("storage_root")
        schema.update(
            name=name,
            catalog_name=catalog_name,
            comment=body.get("comment"),
            properties=dict(body.get("properties") or {}),
            full_name=full_name,
            created_at=_now_ms(),
            schema_id=schema_id,
            storage_root=storage_root,
            storage_location=(
                f"{storage_root.rstrip('/')}/__unitystorage/schemas/{schema_id}"
                if storage_root
                else None
            ),
        )
        self.schemas[full_name] = schema
        return schema

    def _new_table(self, body: Mapping[str, Any], *, check_type: bool = True) -> dict[str, Any]:
        name = _check_name(body.get("name"))
        catalog_name, schema_name = body.get("catalog_name"), body.get("schema_name")
        if not isinstance(catalog_name, str) or not isinstance(schema_name, str):
            raise UnityError("INVALID_ARGUMENT", "catalog_name and schema_name are required")
        self._require_schema(catalog_name, schema_name)
        full_name = f"{catalog_name}.{schema_name}.{name}"
        if full_name in self.tables:
            raise UnityError("ALREADY_EXISTS", f"Table already exists: {full_name}")
        table_type = body.get("table_type")
        data_source_format = body.get("data_source_format")
        location = body.get("storage_location")
        if check_type:
            if table_type == "MANAGED":
                if data_source_format != "DELTA" or not location:
                    raise UnityError(
                        "INVALID_ARGUMENT",
                        "MANAGED table creation needs data_source_format DELTA and the "
                        "storage_location of its staging table",
                    )
            elif table_type == "EXTERNAL":
                if not location:
                    raise UnityError(
                        "INVALID_ARGUMENT", "Storage location is required for external table"
                    )
            else:
                raise UnityError(
                    "INVALID_ARGUMENT", f"{table_type} table creation is not supported"
                )
        columns = []
        for given in body.get("columns") or []:
            column = self._blank("ColumnInfo")
            column.update(given)
            if column.get("nullable") is None:
                column["nullable"] = True
            columns.append(column)
        now = _now_ms()
        table = self._blank("TableInfo")
        table.update(
            name=name,
            catalog_name=catalog_name,
            schema_name=schema_name,
            table_type=table_type,
            data_source_format=data_source_format,
            columns=columns,
            storage_location=_storage_uri(location) if location else None,
            comment=body.get("comment"),
            properties=dict(body.get("properties") or {}),
            created_at=now,
            updated_at=now,
            table_id=str(uuid.uuid4()),
            view_definition=body.get("view_definition"),
            view_dependencies=body.get("view_dependencies"),
        )
        self.tables[full_name] = table
        return table

    def _page(
        self, kind: str, parent: str, items: list[dict[str, Any]], query: Mapping[str, Any]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """One page of `items` (sorted by name) and the next_page_token member(s)."""
        max_results = query.get("max_results")
        if max_results is not None and max_results < 0:
            raise UnityError("INVALID_ARGUMENT", "maxResults must be greater than or equal to 0")
        size = self.page_size_limit
        if max_results:
            size = min(max_results, size)
        after = ""
        token = query.get("page_token")
        if token:
            try:
                padded = token + "=" * (-len(token) % 4)
                found_kind, found_parent, after = json.loads(base64.urlsafe_b64decode(padded))
            except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
                found_kind = found_parent = None
            if (found_kind, found_parent) != (kind, parent) or not isinstance(after, str):
                raise UnityError("INVALID_ARGUMENT", f"Invalid page token: {token}")
        ordered = sorted((item for item in items if item["name"] > after), key=lambda i: i["name"])
        page = ordered[:size]
        extra: dict[str, Any] = {}
        if page and len(page) == size:  # Unity: a full page always has a next token
            raw = json.dumps([kind, parent, page[-1]["name"]]).encode()
            extra["next_page_token"] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        elif self.end_of_list == "null":
            extra["next_page_token"] = None
        elif self.end_of_list == "empty":
            extra["next_page_token"] = ""
        return [copy.deepcopy(item) for item in page], extra

    def _ok_deleted(self) -> _Reply:
        return _Reply(200, {}) if self.json_delete_bodies else _Reply(200, text="200 OK")

    # catalogs

    def _list_catalogs(self, call: _Call) -> _Reply:
        page, extra = self._page("catalogs", "", list(self.catalogs.values()), call.query)
        return _Reply(200, {"catalogs": page, **extra})

    def _create_catalog(self, call: _Call) -> _Reply:
        if not self.allow_catalog_create:
            raise UnityError("PERMISSION_DENIED", "Not authorized to create a catalog")
        return _Reply(200, copy.deepcopy(self._new_catalog(self._body(call))))

    def _get_catalog(self, call: _Call) -> _Reply:
        return _Reply(200, copy.deepcopy(self._require_catalog(call.path["name"])))

    def _update_catalog(self, call: _Call) -> _Reply:
        name = call.path["name"]
        catalog = self._require_catalog(name)
        body = call.body if isinstance(call.body, dict) else {}
        new_name = body.get("new_name")
        if new_name is not None:
            _check_name(new_name)
            if new_name != name and new_name in self.catalogs:
                raise UnityError("ALREADY_EXISTS", f"Catalog already exists: {new_name}")
        if body.get("comment") is not None:
            catalog["comment"] = body["comment"]
        if body.get("properties"):  # Unity replaces the map when a non-empty one is given
            catalog["properties"] = dict(body["properties"])
        if new_name is not None and new_name != name:
            self._rename_catalog(name, new_name)
        if body:
            catalog["updated_at"] = _now_ms()
        return _Reply(200, copy.deepcopy(catalog))

    def _rename_catalog(self, old: str, new: str) -> None:
        catalog = self.catalogs.pop(old)
        catalog["name"] = new
        self.catalogs[new] = catalog
        for full_name in [f for f in self.schemas if f.split(".")[0] == old]:
            schema = self.schemas.pop(full_name)
            schema["catalog_name"] = new
            schema["full_name"] = f"{new}.{schema['name']}"
            self.schemas[schema["full_name"]] = schema
        for full_name in [f for f in self.tables if f.split(".")[0] == old]:
            table = self.tables.pop(full_name)
            table["catalog_name"] = new
            self.tables[f"{new}.{table['schema_name']}.{table['name']}"] = table

    def _delete_catalog(self, call: _Call) -> _Reply:
        name = call.path["name"]
        self._require_catalog(name)
        children = [f for f, s in self.schemas.items() if s["catalog_name"] == name]
        if children and not call.query.get("force"):
            raise UnityError(
                "FAILED_PRECONDITION",
                "Cannot delete catalog with schemas. Use force=true to force deletion.",
            )
        for full_name in children:
            self._drop_schema(full_name)
        del self.catalogs[name]
        return self._ok_deleted()

    # schemas

    def _list_schemas(self, call: _Call) -> _Reply:
        catalog_name = call.query["catalog_name"]
        self._require_catalog(catalog_name)
        children = [s for s in self.schemas.values() if s["catalog_name"] == catalog_name]
        page, extra = self._page("schemas", catalog_name, children, call.query)
        return _Reply(200, {"schemas": page, **extra})

    def _create_schema(self, call: _Call) -> _Reply:
        return _Reply(200, copy.deepcopy(self._new_schema(self._body(call))))

    def _get_schema(self, call: _Call) -> _Reply:
        catalog, schema = self._split(call.path["full_name"], 2, "schema")
        return _Reply(200, copy.deepcopy(self._require_schema(catalog, schema)))

    def _update_schema(self, call: _Call) -> _Reply:
        catalog_name, name = self._split(call.path["full_name"], 2, "schema")
        schema = self._require_schema(catalog_name, name)
        body = call.body if isinstance(call.body, dict) else {}
        new_name = body.get("new_name")
        if new_name is not None:
            _check_name(new_name)
            if new_name != name and f"{catalog_name}.{new_name}" in self.schemas:
                raise UnityError("ALREADY_EXISTS", f"Schema already exists: {new_name}")
        if body.get("comment") is not None:
            schema["comment"] = body["comment"]
        if body.get("properties"):
            schema["properties"] = dict(body["properties"])
        if new_name is not None and new_name != name:
            del self.schemas[f"{catalog_name}.{name}"]
            schema["name"] = new_name
            schema["full_name"] = f"{catalog_name}.{new_name}"
            self.schemas[schema["full_name"]] = schema
            prefix = f"{catalog_name}.{name}."
            for full_name in [f for f in self.tables if f.startswith(prefix)]:
                table = self.tables.pop(full_name)
                table["schema_name"] = new_name
                self.tables[f"{catalog_name}.{new_name}.{table['name']}"] = table
        if body:
            schema["updated_at"] = _now_ms()
        return _Reply(200, copy.deepcopy(schema))

    def _delete_schema(self, call: _Call) -> _Reply:
        catalog_name, name = self._split(call.path["full_name"], 2, "schema")
        self._require_schema(catalog_name, name)
        full_name = f"{catalog_name}.{name}"
        if self._tables_of(full_name) and not call.query.get("force"):
            raise UnityError("FAILED_PRECONDITION", "Cannot delete schema with tables")
        self._drop_schema(full_name)
        return self._ok_deleted()

    def _tables_of(self, schema_full_name: str) -> list[str]:
        return [f for f in self.tables if f.rsplit(".", 1)[0] == schema_full_name]

    def _drop_schema(self, full_name: str) -> None:
        for table in self._tables_of(full_name):
            del self.tables[table]
        del self.schemas[full_name]

    # tables

    def _list_tables(self, call: _Call) -> _Reply:
        catalog_name, schema_name = call.query["catalog_name"], call.query["schema_name"]
        self._require_schema(catalog_name, schema_name)
        full_name = f"{catalog_name}.{schema_name}"
        children = [self.tables[f] for f in self._tables_of(full_name)]
        page, extra = self._page("tables", full_name, children, call.query)
        return _Reply(200, {"tables": page, **extra})

    def _create_table(self, call: _Call) -> _Reply:
        return _Reply(200, copy.deepcopy(self._new_table(self._body(call))))

    def _find_table(self, full_name: str) -> dict[str, Any]:
        catalog, schema, _ = self._split(full_name, 3, "table")
        self._require_schema(catalog, schema)
        table = self.tables.get(full_name)
        if table is None:
            raise UnityError("NOT_FOUND", f"Table not found: {full_name}")
        return table

    def _get_table(self, call: _Call) -> _Reply:
        return _Reply(200, copy.deepcopy(self._find_table(call.path["full_name"])))

    def _delete_table(self, call: _Call) -> _Reply:
        full_name = call.path["full_name"]
        self._find_table(full_name)
        del self.tables[full_name]
        return self._ok_deleted()


@contextlib.contextmanager
def unity_catalog(*, require_token: str | None = None) -> Iterator[UnityServer]:
    """Run a Unity Catalog server on a free 127.0.0.1 port for the block's duration.

    With `require_token`, every request needs ``Authorization: Bearer <token>`` (else 401
    UNAUTHENTICATED). Raises SpecViolationError at exit when any request or response
    broke the OpenAPI document.
    """
    server = UnityServer(require_token=require_token)
    server.start()
    try:
        yield server
    except BaseException as error:
        if server.violations:
            error.add_note("Unity Catalog spec violations:\n" + "\n".join(server.violations))
        raise
    finally:
        server.stop()
    if server.violations:
        raise SpecViolationError(
            f"{len(server.violations)} Unity Catalog spec violation(s):\n"
            + "\n".join(server.violations)
        )
