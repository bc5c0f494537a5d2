"""A small but real Apache Iceberg REST Catalog server for tests.

Every warehouse is backed by its own pyiceberg ``SqlCatalog`` on a temporary sqlite
database, so namespace, table and commit semantics are pyiceberg's own. Every request
the server handles and every response it sends is checked against the official
OpenAPI document (``shared/reference/iceberg-rest-catalog-open-api.yaml``):

* the operation is found by matching the raw (still percent-encoded) request path
  against the document's path templates;
* path, query and header parameters are deserialized as their schema's type says and
  validated against that schema; the JSON (or form) body against the operation's
  ``requestBody`` schema;
* the response status must be declared for the operation (exactly, by its ``NXX``
  range, or ``default``) and its body must match the declared media type and schema.

Schemas are validated with ``openapi-schema-validator``'s OAS 3.1 validator (JSON
Schema 2020-12) over a ``referencing`` registry that holds the whole document, so every
``$ref`` is followed where it points. Two keywords are added to it because the document
relies on them although OAS 3.1 no longer defines them (see ``_type_or_nullable`` and
``_discriminator``). The few statuses the document does not declare but this server
sends on purpose are listed in ``_UNDECLARED_BUT_SENT``.

A violation is appended to ``IcebergCatalogServer.violations``: a bad request is answered
400, a bad response is replaced by a 500 ``IcebergErrorResponse`` naming the violation,
and ``iceberg_catalog`` raises ``SpecViolationError`` at exit if any was recorded.
"""

from __future__ import annotations

import base64
import binascii
import collections
import contextlib
import functools
import json
import os
import re
import socket
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend
from openapi_schema_validator import OAS31Validator
from pyiceberg.catalog import (
    MANIFEST,
    MANIFEST_LIST,
    METADATA,
    PREVIOUS_METADATA,
    delete_data_files,
    delete_files,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.manifest import ManifestFile
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import CommitTableRequest
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["SPEC_PATH", "IcebergCatalogServer", "SpecViolationError", "iceberg_catalog"]

SPEC_PATH = Path(
    os.environ.get(
        "ICEBERG_REST_SPEC",
        Path(__file__).resolve().parents[2]
        / "shared"
        / "reference"
        / "iceberg-rest-catalog-open-api.yaml",
    )
)
_DOC_URI = "urn:iceberg-rest-catalog-open-api"
_SEPARATOR = "\x1f"
# Kept on every namespace this server creates, hidden from every response: pyiceberg's
# SqlCatalog stores a namespace only as rows of properties, so a namespace whose last
# property is removed would silently stop existing.
_NAMESPACE_MARKER = "iceberg-rest-fixture.namespace"
_WAREHOUSE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
_ERROR_TYPES = {
    400: "BadRequestException",
    401: "NotAuthorizedException",
    403: "ForbiddenException",
    404: "NotFoundException",
    405: "MethodNotAllowedException",
    406: "UnsupportedOperationException",
    409: "CommitFailedException",
    419: "AuthenticationTimeoutException",
    422: "UnprocessableEntityException",
    429: "TooManyRequestsException",
    500: "InternalServerError",
    501: "NotImplementedException",
    502: "BadGatewayException",
    503: "ServiceUnavailableException",
    504: "GatewayTimeoutException",
}
# (operationId or "*", status) the document does not declare but this server sends.
_UNDECLARED_BUT_SENT: dict[tuple[str, int], str] = {
    ("createNamespace", 404): (
        "a missing parent namespace is NoSuchNamespaceException; createNamespace declares no 404"
    ),
    ("*", 429): "fail_next(429) simulates throttling; the document declares 429 nowhere",
}
_ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/tables/rename",
]


class SpecViolationError(AssertionError):
    """Raised by ``iceberg_catalog`` at exit when a request or response broke the spec."""


# -- schema validation --------------------------------------------------------------------

_BASE_TYPE = OAS31Validator.VALIDATORS["type"]
_discriminating = threading.local()


def _type_or_nullable(
    validator: Any, types: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``type``, honouring OAS 3.0's ``nullable: true``.

    The document says ``openapi: 3.1.1`` but still marks nullable fields the 3.0 way
    (``PageToken``, ``AssertRefSnapshotId.snapshot-id``, ``LoadTableResult.metadata-location``,
    ``GetNamespaceResponse.properties``, ...). Under plain 3.1 semantics ``null`` would be
    rejected there although the document's prose requires it (``next-page-token: null``).
    """
    if instance is None and schema.get("nullable") is True:
        return
    yield from _BASE_TYPE(validator, types, instance, schema)


def _discriminator(
    validator: Any, discriminator: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """Enforce ``discriminator.mapping``: the named property selects the schema to apply.

    In OAS 3.1 the keyword is an annotation only, but ``CommitTableRequest.requirements``
    items are ``$ref: TableRequirement``, a schema that requires nothing but a string
    ``type``: without this, ``{"type": "assert-ref-snapshot-id"}`` (no ``ref``, no
    ``snapshot-id``) or ``{"type": "assert-anything"}`` would pass.
    """
    if not isinstance(instance, dict) or not isinstance(discriminator, dict):
        return
    mapping = discriminator.get("mapping")
    name = discriminator.get("propertyName")
    if not mapping or name not in instance:
        return
    value = instance[name]
    target = mapping.get(value) if isinstance(value, str) else None
    if target is None:
        yield ValidationError(
            f"{value!r} is not a known {name!r} (one of: {', '.join(sorted(mapping))})"
        )
        return
    # the mapped schemas refer back to the discriminating one through allOf
    active: set[tuple[int, str]] = _discriminating.__dict__.setdefault("active", set())
    key = (id(instance), target)
    if key in active:
        return
    active.add(key)
    try:
        errors = list(validator.descend(instance, {"$ref": target}))
    finally:
        active.discard(key)
    yield from errors


_Validator = extend(OAS31Validator, {"type": _type_or_nullable, "discriminator": _discriminator})


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def _stringify_keys(node: Any) -> Any:
    # YAML reads unquoted response codes (``200:``) as integers
    if isinstance(node, dict):
        return {str(key): _stringify_keys(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_stringify_keys(value) for value in node]
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
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _OpenApi:
    """The operations of the document, and validation of requests and responses."""

    def __init__(self, path: Path) -> None:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with path.open(encoding="utf-8") as handle:
            self.document: dict[str, Any] = _stringify_keys(yaml.load(handle, Loader=loader))
        self.version = str(self.document.get("openapi", ""))
        if not self.version.startswith("3.1"):
            raise RuntimeError(f"{path}: expected an OpenAPI 3.1 document, got {self.version!r}")
        self.registry: Registry[Any] = Registry().with_resource(
            _DOC_URI, DRAFT202012.create_resource(self.document)
        )
        self._validators: dict[str, Any] = {}
        self._validators_lock = threading.Lock()
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
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        return kind if isinstance(kind, str) else None

    def errors(self, pointer: str, instance: Any) -> list[str]:
        with self._validators_lock:
            validator = self._validators.get(pointer)
            if validator is None:
                validator = _Validator(
                    {"$ref": f"{_DOC_URI}#{pointer}"},
                    registry=self.registry,
                    format_checker=_Validator.FORMAT_CHECKER,
                )
                self._validators[pointer] = validator
        found = []
        for error in validator.iter_errors(instance):
            where = "/".join(str(part) for part in error.absolute_path)
            found.append(f"{where or '<root>'}: {error.message}")
        return found

    # routing

    def match(self, method: str, raw_path: str) -> tuple[_Operation, dict[str, str]]:
        segments = raw_path.split("/")
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
            raise _RouteError(404, f"no path of the document matches {raw_path!r}")
        allowed = [c for c in candidates if c[0].method == method]
        if not allowed:
            methods = sorted({c[0].method for c in candidates})
            raise _RouteError(405, f"{method} is not declared for {raw_path!r} ({methods})")
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
            problems += [f"{where}: {e}" for e in self.errors(parameter.schema_pointer, value)]

        parsed: Any = None
        if "requestBody" not in operation.spec:
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
        if media_type == "application/json":
            try:
                parsed = json.loads(body)
            except ValueError as error:
                problems.append(f"the request body is not JSON: {error}")
                return problems, None
        elif media_type == "application/x-www-form-urlencoded":
            form = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
            repeated = sorted(key for key, values in form.items() if len(values) > 1)
            if repeated:
                problems.append(f"form fields given more than once: {repeated}")
            parsed = {key: values[-1] for key, values in form.items()}
        schema_pointer = f"{at}/content/{_escape(media_type)}/schema"
        problems += [f"request body {e}" for e in self.errors(schema_pointer, parsed)]
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
            # pyiceberg sends Python's repr (``purgeRequested=False``): case-insensitive
            if value.lower() not in ("true", "false"):
                return None, f"{value!r} is not a boolean"
            return value.lower() == "true", None
        return value, None

    # responses

    def check_response(
        self, operation: _Operation, method: str, status: int, content_type: str, body: bytes
    ) -> list[str]:
        responses = operation.spec.get("responses", {})
        key = next(
            (k for k in (str(status), f"{status // 100}XX", "default") if k in responses), None
        )
        name = operation.operation_id
        if key is None:
            if not {(name, status), ("*", status)} & _UNDECLARED_BUT_SENT.keys():
                declared = sorted(responses)
                return [f"status {status} is not declared for {name} (declared: {declared})"]
            # sent on purpose (see _UNDECLARED_BUT_SENT): still an IcebergErrorResponse
            at = "/components/responses/IcebergErrorResponse"
            response: dict[str, Any] = self.lookup(at)
        else:
            response, at = self.deref(responses[key], f"{operation.pointer}/responses/{key}")
        if method == "HEAD":  # a HEAD response has no body, whatever the document shows
            return []
        content = response.get("content")
        if not content:
            return (
                [f"status {status} of {name} has no content, got {len(body)} bytes"] if body else []
            )
        media_type = content_type.split(";")[0].strip().lower()
        if media_type not in content:
            return [f"response content type {media_type!r} is not one of {sorted(content)}"]
        try:
            parsed = json.loads(body)
        except ValueError as error:
            return [f"the response body is not JSON: {error}"]
        schema_pointer = f"{at}/content/{_escape(media_type)}/schema"
        return [f"{status} response body {e}" for e in self.errors(schema_pointer, parsed)]


@functools.cache
def _openapi() -> _OpenApi:
    return _OpenApi(SPEC_PATH)


# -- the catalog server ------------------------------------------------------------------


class _HttpError(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


@dataclass
class _Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Call:
    operation: _Operation
    path: dict[str, str]
    query: dict[str, str]
    body: Any
    catalog: SqlCatalog | None = None


def _error_body(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": status}}


def _error(status: int, kind: str, message: str) -> _Reply:
    return _Reply(status, _error_body(status, kind, message))


def _is_lance(properties: Mapping[str, str]) -> bool:
    return any(
        key.lower() == "table_type" and value.lower() == "lance"
        for key, value in properties.items()
    )


def _metadata_json(metadata: TableMetadata) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(metadata.model_dump_json())
    return result


def _namespace_levels(levels: Any) -> tuple[str, ...]:
    namespace = tuple(levels)
    if not namespace:
        raise _HttpError(400, "BadRequestException", "a namespace needs at least one level")
    for level in namespace:
        if not level or "." in level:
            raise _HttpError(
                400,
                "BadRequestException",
                f"namespace level {level!r} is empty or contains '.' "
                "(pyiceberg's SqlCatalog joins levels with '.')",
            )
    return namespace


def _path_namespace(decoded: str) -> tuple[str, ...]:
    return _namespace_levels(decoded.split(_SEPARATOR))


class IcebergCatalogServer:
    """An Iceberg REST catalog on 127.0.0.1, backed by one SqlCatalog per warehouse."""

    uri: str
    warehouse_root: Path
    config_requests: collections.Counter[str]
    token_requests: int
    requests: list[tuple[str, str]]
    violations: list[str]

    def __init__(
        self,
        tmp_path: Path,
        *,
        prefix_mode: str = "defaults",
        require_auth: bool = False,
        client_id: str = "cid",
        client_secret: str = "csecret",
    ) -> None:
        if prefix_mode not in ("defaults", "none"):
            raise ValueError(f"prefix_mode must be 'defaults' or 'none', not {prefix_mode!r}")
        self.prefix_mode = prefix_mode
        self.require_auth = require_auth
        self.client_id = client_id
        self.client_secret = client_secret
        self.uri = ""
        self.warehouse_root = tmp_path / "warehouse"
        self.warehouse_root.mkdir(parents=True, exist_ok=True)
        self._db_dir = tmp_path / "catalog-db"
        self._db_dir.mkdir(parents=True, exist_ok=True)
        self.config_requests = collections.Counter()
        self.token_requests = 0
        self.requests = []
        self.violations = []
        self._spec = _openapi()
        self._lock = threading.RLock()
        self._catalogs: dict[str, SqlCatalog] = {}
        self._clients: list[RestCatalog] = []
        self._tokens: set[str] = set()
        self._faults: collections.deque[tuple[int, dict[str, str]]] = collections.deque()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._handlers: dict[str, Callable[[_Call], _Reply]] = {
            "listNamespaces": self._list_namespaces,
            "createNamespace": self._create_namespace,
            "loadNamespaceMetadata": self._load_namespace,
            "namespaceExists": self._namespace_exists,
            "dropNamespace": self._drop_namespace,
            "updateProperties": self._update_properties,
            "listTables": self._list_tables,
            "createTable": self._create_table,
            "loadTable": self._load_table,
            "tableExists": self._table_exists,
            "updateTable": self._update_table,
            "dropTable": self._drop_table,
            "renameTable": self._rename_table,
        }
        self.app = Starlette(
            routes=[Route("/{path:path}", self._endpoint, methods=list(_HTTP_METHODS))]
        )

    # public helpers

    def catalog(self, warehouse: str) -> SqlCatalog:
        """The SqlCatalog behind a warehouse (created on first use)."""
        with self._lock:
            existing = self._catalogs.get(warehouse)
            if existing is not None:
                return existing
            if not _WAREHOUSE_NAME.fullmatch(warehouse):
                raise ValueError(f"invalid warehouse name {warehouse!r}")
            root = self.warehouse_root / warehouse
            root.mkdir(parents=True, exist_ok=True)
            database = self._db_dir / f"{len(self._catalogs)}.db"
            catalog = SqlCatalog(warehouse, uri=f"sqlite:///{database}", warehouse=root.as_uri())
            self._catalogs[warehouse] = catalog
            return catalog

    def rest_client(self, warehouse: str) -> RestCatalog:
        """pyiceberg's own RestCatalog pointed at this server for a warehouse."""
        properties = {"uri": self.uri, "warehouse": warehouse}
        if self.prefix_mode == "none":
            properties["prefix"] = warehouse
        if self.require_auth:
            properties["credential"] = f"{self.client_id}:{self.client_secret}"
            properties["oauth2-server-uri"] = f"{self.uri}/v1/oauth/tokens"
        client = RestCatalog(f"rest-{warehouse}", **properties)
        self._clients.append(client)
        return client

    def fail_next(
        self, status: int, count: int = 1, *, headers: dict[str, str] | None = None
    ) -> None:
        """Answer the next `count` non-config, non-token requests with `status`."""
        if not 400 <= status < 600:
            raise ValueError("an injected fault must be a 4xx or 5xx status")
        with self._lock:
            for _ in range(count):
                self._faults.append((status, dict(headers or {})))

    # lifecycle

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
            name="iceberg-rest-server",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Iceberg REST test server did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        for client in self._clients:
            session = getattr(client, "_session", None)
            if session is not None:
                session.close()
        self._clients.clear()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        with self._lock:
            for catalog in self._catalogs.values():
                catalog.engine.dispose()

    # HTTP

    async def _endpoint(self, request: Request) -> Response:
        body = await request.body()
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        reply = await run_in_threadpool(
            self._handle,
            request.method,
            raw_path.decode("latin-1"),
            request.scope.get("query_string", b"").decode("latin-1"),
            request.headers,
            body,
        )
        content = b"" if request.method == "HEAD" or reply.body is None else _encode(reply.body)
        headers = dict(reply.headers)
        if reply.body is not None:
            headers["content-type"] = "application/json"
        return Response(content, status_code=reply.status, headers=headers)

    def _handle(
        self, method: str, raw_path: str, query_string: str, headers: Mapping[str, str], body: bytes
    ) -> _Reply:
        target = f"{raw_path}?{query_string}" if query_string else raw_path
        self.requests.append((method, target))
        try:
            operation, path_params = self._spec.match(method, raw_path)
        except _RouteError as error:
            self.violations.append(f"request {method} {target}: {error}")
            return _error(error.status, _ERROR_TYPES[error.status], str(error))

        query_lists = urllib.parse.parse_qs(query_string, keep_blank_values=True)
        name = operation.operation_id
        if name == "getConfig":
            self.config_requests[query_lists.get("warehouse", [""])[-1]] += 1
        elif name == "getToken":
            with self._lock:
                self.token_requests += 1

        problems, parsed = self._spec.check_request(
            operation, path_params, query_lists, headers, body
        )
        self.violations += [f"request {method} {target} ({name}): {p}" for p in problems]
        injected = False
        if name != "getToken" and self.require_auth and not self._authorized(headers):
            reply = _error(401, "NotAuthorizedException", "a valid bearer token is required")
        elif problems:
            message = "; ".join(problems)
            if name == "getToken":
                reply = _Reply(400, {"error": "invalid_request", "error_description": message})
            else:
                reply = _error(400, "BadRequestException", message)
        elif name not in ("getConfig", "getToken") and (fault := self._take_fault()):
            status, fault_headers = fault
            kind = _ERROR_TYPES.get(status, "InjectedFaultException")
            reply = _Reply(status, _error_body(status, kind, "injected fault"), fault_headers)
            injected = True
        else:
            call = _Call(
                operation=operation,
                path={k: urllib.parse.unquote(v) for k, v in path_params.items()},
                query={k: v[-1] for k, v in query_lists.items()},
                body=parsed,
            )
            reply = self._dispatch(call)

        content = b"" if reply.body is None else _encode(reply.body)
        content_type = "application/json" if reply.body is not None else ""
        response_problems = self._spec.check_response(
            operation, method, reply.status, content_type, content
        )
        if response_problems:
            what = "injected " if injected else ""
            found = [
                f"{what}response to {method} {target} ({name}): {p}" for p in response_problems
            ]
            self.violations += found
            return _error(500, "ResponseSpecViolation", "; ".join(found))
        return reply

    def _take_fault(self) -> tuple[int, dict[str, str]] | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        with self._lock:
            return scheme.lower() == "bearer" and token.strip() in self._tokens

    def _dispatch(self, call: _Call) -> _Reply:
        name = call.operation.operation_id
        try:
            if name == "getConfig":
                return self._get_config(call)
            if name == "getToken":
                return self._get_token(call)
            handler = self._handlers.get(name)
            if handler is None:
                return _error(501, "NotImplementedException", f"{name} is not implemented here")
            with self._lock:
                call.catalog = self._catalog_for_prefix(call.path["prefix"])
                return handler(call)
        except _HttpError as error:
            return _error(error.status, error.kind, error.message)
        except NoSuchNamespaceError as error:
            return _error(404, "NoSuchNamespaceException", str(error))
        except NoSuchTableError as error:
            return _error(404, "NoSuchTableException", str(error))
        except (NamespaceAlreadyExistsError, TableAlreadyExistsError) as error:
            return _error(409, "AlreadyExistsException", str(error))
        except NamespaceNotEmptyError as error:
            return _error(409, "NamespaceNotEmptyException", str(error))
        except CommitFailedException as error:
            return _error(409, "CommitFailedException", str(error))
        except ValueError as error:  # includes pydantic's ValidationError
            return _error(400, "BadRequestException", str(error))
        except Exception as error:
            self.violations.append(f"server error in {name}: {traceback.format_exc()}")
            return _error(500, "InternalServerError", f"{type(error).__name__}: {error}")

    def _catalog_for_prefix(self, prefix: str) -> SqlCatalog:
        if self.prefix_mode == "defaults":
            if not prefix.startswith("pfx-"):
                raise _HttpError(400, "BadRequestException", f"unknown prefix {prefix!r}")
            prefix = prefix[len("pfx-") :]
        if not _WAREHOUSE_NAME.fullmatch(prefix):
            raise _HttpError(400, "BadRequestException", f"invalid warehouse {prefix!r}")
        return self.catalog(prefix)

    # configuration and tokens

    def _get_config(self, call: _Call) -> _Reply:
        warehouse = call.query.get("warehouse", "")
        if not warehouse:
            raise _HttpError(
                400, "BadRequestException", "the warehouse query parameter is required"
            )
        if not _WAREHOUSE_NAME.fullmatch(warehouse):
            raise _HttpError(400, "BadRequestException", f"invalid warehouse {warehouse!r}")
        self.catalog(warehouse)
        defaults = {"lance.test.default": "1"}
        if self.prefix_mode == "defaults":
            defaults["prefix"] = f"pfx-{warehouse}"
        body = {
            "defaults": defaults,
            "overrides": {"lance.test.override": "1"},
            "endpoints": _ENDPOINTS,
        }
        return _Reply(200, body)

    def _get_token(self, call: _Call) -> _Reply:
        form: dict[str, str] = call.body or {}
        grant = form.get("grant_type")
        if grant == "client_credentials":
            if (
                form.get("client_id") != self.client_id
                or form.get("client_secret") != self.client_secret
            ):
                return _Reply(
                    401,
                    {"error": "invalid_client", "error_description": "wrong client credentials"},
                )
        elif form.get("subject_token") not in self._tokens:
            return _Reply(
                400, {"error": "invalid_grant", "error_description": "unknown subject token"}
            )
        with self._lock:
            token = f"tok-{len(self._tokens) + 1}"
            self._tokens.add(token)
        body = {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": 3600,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }
        return _Reply(200, body)

    # namespaces

    @staticmethod
    def _require_namespace(catalog: SqlCatalog, namespace: tuple[str, ...]) -> None:
        if not catalog.namespace_exists(namespace):
            raise _HttpError(
                404, "NoSuchNamespaceException", f"namespace does not exist: {list(namespace)}"
            )

    @staticmethod
    def _visible(properties: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in properties.items() if k != _NAMESPACE_MARKER}

    def _list_namespaces(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        parent_raw = call.query.get("parent", "")
        parent: tuple[str, ...] = ()
        if parent_raw:  # "empty string is treated as absent"
            parent = _path_namespace(parent_raw)
            self._require_namespace(catalog, parent)
        children = sorted(catalog.list_namespaces(parent))
        page, token = _paginate(children, call.query, "namespaces")
        return _Reply(200, {"namespaces": [list(ns) for ns in page], "next-page-token": token})

    def _create_namespace(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        namespace = _namespace_levels(call.body["namespace"])
        properties = dict(call.body.get("properties") or {})
        if catalog.namespace_exists(namespace):
            raise _HttpError(
                409, "AlreadyExistsException", f"namespace already exists: {list(namespace)}"
            )
        if len(namespace) > 1 and not catalog.namespace_exists(namespace[:-1]):
            raise _HttpError(
                404,
                "NoSuchNamespaceException",
                f"parent namespace does not exist: {list(namespace[:-1])}",
            )
        properties.pop(_NAMESPACE_MARKER, None)
        catalog.create_namespace(namespace, {**properties, _NAMESPACE_MARKER: "true"})
        stored = self._visible(catalog.load_namespace_properties(namespace))
        return _Reply(200, {"namespace": list(namespace), "properties": stored})

    def _load_namespace(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        namespace = _path_namespace(call.path["namespace"])
        self._require_namespace(catalog, namespace)
        properties = self._visible(catalog.load_namespace_properties(namespace))
        return _Reply(200, {"namespace": list(namespace), "properties": properties})

    def _namespace_exists(self, call: _Call) -> _Reply:
        namespace = _path_namespace(call.path["namespace"])
        self._require_namespace(_catalog(call), namespace)
        return _Reply(204)

    def _drop_namespace(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        namespace = _path_namespace(call.path["namespace"])
        self._require_namespace(catalog, namespace)
        if children := catalog.list_namespaces(namespace):
            raise _HttpError(
                409,
                "NamespaceNotEmptyException",
                f"namespace {list(namespace)} has {len(children)} child namespace(s)",
            )
        catalog.drop_namespace(namespace)  # NamespaceNotEmptyError when it holds tables
        return _Reply(204)

    def _update_properties(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        namespace = _path_namespace(call.path["namespace"])
        self._require_namespace(catalog, namespace)
        removals = set(call.body.get("removals") or [])
        updates = dict(call.body.get("updates") or {})
        if overlap := sorted(removals & set(updates)):
            raise _HttpError(
                422, "UnprocessableEntityException", f"keys both removed and updated: {overlap}"
            )
        hidden_removal = _NAMESPACE_MARKER in removals
        removals.discard(_NAMESPACE_MARKER)
        updates.pop(_NAMESPACE_MARKER, None)
        summary = catalog.update_namespace_properties(namespace, removals, updates)
        missing = sorted({*summary.missing, *([_NAMESPACE_MARKER] if hidden_removal else [])})
        body = {
            "updated": sorted(summary.updated),
            "removed": sorted(summary.removed),
            "missing": missing,
        }
        return _Reply(200, body)

    # tables

    def _table_identifier(self, call: _Call) -> tuple[str, ...]:
        namespace = _path_namespace(call.path["namespace"])
        table = call.path["table"]
        if not table:
            raise _HttpError(400, "BadRequestException", "empty table name")
        return (*namespace, table)

    @staticmethod
    def _load_result(metadata: TableMetadata, metadata_location: str) -> dict[str, Any]:
        result: dict[str, Any] = {"metadata": _metadata_json(metadata), "config": {}}
        # Lance spec: LoadTable of a table_type=lance table must not return metadata-location
        if not _is_lance(metadata.properties):
            result["metadata-location"] = metadata_location
        return result

    def _list_tables(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        namespace = _path_namespace(call.path["namespace"])
        self._require_namespace(catalog, namespace)
        tables = sorted(catalog.list_tables(namespace))
        page, token = _paginate(tables, call.query, "tables")
        identifiers = [{"namespace": list(t[:-1]), "name": t[-1]} for t in page]
        return _Reply(200, {"identifiers": identifiers, "next-page-token": token})

    def _create_table(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        namespace = _path_namespace(call.path["namespace"])
        body = call.body
        identifier = (*namespace, body["name"])
        if body.get("stage-create"):
            raise _HttpError(400, "BadRequestException", "stage-create is not supported here")
        self._require_namespace(catalog, namespace)
        if catalog.table_exists(identifier):
            raise _HttpError(409, "AlreadyExistsException", f"table already exists: {identifier}")
        table = catalog.create_table(
            identifier,
            schema=Schema.model_validate(body["schema"]),
            location=body.get("location"),
            partition_spec=PartitionSpec.model_validate(body["partition-spec"])
            if "partition-spec" in body
            else UNPARTITIONED_PARTITION_SPEC,
            sort_order=SortOrder.model_validate(body["write-order"])
            if "write-order" in body
            else UNSORTED_SORT_ORDER,
            properties=body.get("properties") or {},
        )
        return _Reply(200, self._load_result(table.metadata, table.metadata_location))

    def _load_table(self, call: _Call) -> _Reply:
        table = _catalog(call).load_table(self._table_identifier(call))
        metadata = table.metadata
        if call.query.get("snapshots") == "refs":
            referenced = {ref.snapshot_id for ref in metadata.refs.values()}
            metadata = metadata.model_copy(
                update={"snapshots": [s for s in metadata.snapshots if s.snapshot_id in referenced]}
            )
        return _Reply(200, self._load_result(metadata, table.metadata_location))

    def _table_exists(self, call: _Call) -> _Reply:
        if not _catalog(call).table_exists(self._table_identifier(call)):
            raise _HttpError(404, "NoSuchTableException", "table does not exist")
        return _Reply(204)

    def _update_table(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        identifier = self._table_identifier(call)
        expected = {"namespace": list(identifier[:-1]), "name": identifier[-1]}
        given = call.body.get("identifier")
        if given is not None and given != expected:
            raise _HttpError(
                400, "BadRequestException", f"body identifier {given} does not match the path"
            )
        request = CommitTableRequest.model_validate({**call.body, "identifier": expected})
        table = catalog.load_table(identifier)
        response = catalog.commit_table(table, request.requirements, request.updates)
        body = {
            "metadata-location": response.metadata_location,
            "metadata": _metadata_json(response.metadata),
        }
        return _Reply(200, body)

    def _drop_table(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        identifier = self._table_identifier(call)
        if call.query.get("purgeRequested", "false").lower() == "true":
            _purge(catalog, identifier)
        else:
            catalog.drop_table(identifier)  # files stay where they are
        return _Reply(204)

    def _rename_table(self, call: _Call) -> _Reply:
        catalog = _catalog(call)
        source = (*_namespace_levels(call.body["source"]["namespace"]), call.body["source"]["name"])
        destination_namespace = _namespace_levels(call.body["destination"]["namespace"])
        destination = (*destination_namespace, call.body["destination"]["name"])
        if not catalog.table_exists(source):
            raise _HttpError(404, "NoSuchTableException", f"table does not exist: {list(source)}")
        self._require_namespace(catalog, destination_namespace)
        if catalog.table_exists(destination):
            raise _HttpError(
                409, "AlreadyExistsException", f"table already exists: {list(destination)}"
            )
        catalog.rename_table(source, destination)
        return _Reply(204)


def _catalog(call: _Call) -> SqlCatalog:
    assert call.catalog is not None
    return call.catalog


def _encode(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _paginate(
    items: list[Any], query: Mapping[str, str], kind: str
) -> tuple[list[Any], str | None]:
    """Server-side pages with an opaque token.

    Without ``pageToken`` and ``pageSize`` everything is returned at once. A ``pageSize``
    alone starts paging (it is the client's upper bound; pyiceberg's RestCatalog sends it
    without a token on the first request, like Iceberg's Java client sends an empty one).
    """
    token = query.get("pageToken")
    size = query.get("pageSize")
    if token is None and size is None:
        return items, None
    offset = 0
    if token:
        try:
            padded = token + "=" * (-len(token) % 4)
            found_kind, _, number = base64.urlsafe_b64decode(padded).decode().partition(":")
            offset = int(number)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            found_kind, offset = "", -1
        if found_kind != kind or not 0 <= offset <= len(items):
            raise _HttpError(400, "BadRequestException", f"invalid pageToken {token!r}")
    end = len(items) if size is None else offset + int(size)
    following = None
    if end < len(items):
        following = base64.urlsafe_b64encode(f"{kind}:{end}".encode()).decode().rstrip("=")
    return items[offset:end], following


def _purge(catalog: SqlCatalog, identifier: tuple[str, ...]) -> None:
    """Drop, then delete the table's files, like pyiceberg's ``purge_table``.

    pyiceberg's own ``purge_table`` drops the row first and then reads every snapshot's
    manifest list: with a snapshot whose manifest list does not exist (a client-made
    snapshot) it raises FileNotFoundError after the drop, leaving the metadata files behind.
    Here unreadable manifest lists are skipped; deletion failures only log warnings.
    """
    table = catalog.load_table(identifier)
    catalog.drop_table(identifier)
    io = table.io
    metadata = table.metadata
    manifests: list[ManifestFile] = []
    manifest_lists: set[str] = set()
    for snapshot in metadata.snapshots:
        manifest_lists.add(snapshot.manifest_list)
        with contextlib.suppress(OSError):
            manifests += snapshot.manifests(io)
    delete_data_files(io, manifests)
    delete_files(io, {manifest.manifest_path for manifest in manifests}, MANIFEST)
    delete_files(io, manifest_lists, MANIFEST_LIST)
    delete_files(io, {log.metadata_file for log in metadata.metadata_log}, PREVIOUS_METADATA)
    delete_files(io, {table.metadata_location}, METADATA)


@contextlib.contextmanager
def iceberg_catalog(
    tmp_path: Path,
    *,
    prefix_mode: str = "defaults",
    require_auth: bool = False,
    client_id: str = "cid",
    client_secret: str = "csecret",
) -> Iterator[IcebergCatalogServer]:
    """Run an Iceberg REST catalog on a free 127.0.0.1 port for the block's duration.

    Raises SpecViolationError at exit when any request or response broke the spec.
    """
    server = IcebergCatalogServer(
        tmp_path,
        prefix_mode=prefix_mode,
        require_auth=require_auth,
        client_id=client_id,
        client_secret=client_secret,
    )
    server.start()
    try:
        yield server
    except BaseException as error:
        if server.violations:
            error.add_note("Iceberg REST spec violations:\n" + "\n".join(server.violations))
        raise
    finally:
        server.stop()
    if server.violations:
        raise SpecViolationError(
            f"{len(server.violations)} Iceberg REST spec violation(s):\n"
            + "\n".join(server.violations)
        )
