"""A small in-memory look-alike of the Unity Catalog OSS server, for tests.

It serves the catalogs, schemas and tables calls of our own contract
(``tests/contracts/unity-catalog.yaml``) under ``/api/2.1/unity-catalog`` and behaves like
the Unity Catalog OSS server (its ``CatalogRepository``, ``SchemaRepository``,
``TableRepository``, ``PagedListingHelper`` and ``GlobalExceptionHandler``) of one of three
release lines, ``release``:

* ``"0.6"`` (the default; Unity 0.5.0 to 0.6.0, the newest): a missing object is 404
  ``CATALOG_NOT_FOUND`` / ``SCHEMA_NOT_FOUND`` / ``TABLE_NOT_FOUND``; a duplicate is **HTTP
  400** ``CATALOG_ALREADY_EXISTS`` / ``SCHEMA_ALREADY_EXISTS`` / ``TABLE_ALREADY_EXISTS``
  (Unity keeps 400 for backwards compatibility); every column must carry a ``type_json`` that
  is a Spark StructField of the same name and nullability (``ColumnUtils.validateTypeJson``)
  and ``type_text`` is stored lower-cased;
* ``"0.4.1"``: the same duplicates, but every missing object is 404 ``NOT_FOUND``, and
  columns are stored as sent;
* ``"0.3"`` (Unity 0.1 to 0.3; 0.4.0 differs only in its locations): a missing object is 404
  ``NOT_FOUND``, a duplicate 409 ``ALREADY_EXISTS``; a plain local ``storage_location``
  becomes ``Paths.get(p).toUri()`` (with a trailing ``/`` when the path is an existing
  directory, as ``FileOperations.convertRelativePathToURI`` did), ``file:/x`` becomes
  ``file:///x``, other URIs are kept.

From 0.4.0 on, a ``storage_location`` is normalised like Unity's ``NormalizedURL``: a plain
path becomes an absolute ``file:///`` URI, trailing slashes go, ``.``/``..`` segments are
resolved, only file/s3/gs/abfs/abfss are accepted and a bucket alone is refused.

In all three:

* full names are ``catalog.schema`` and ``catalog.schema.table``; names must match
  ``[a-zA-Z0-9_@-]{1,255}`` (Unity's ``ValidationUtils.validateSqlObjectName``);
* deleting a catalog that holds schemas or a schema that holds tables without
  ``force=true`` is 400 ``FAILED_PRECONDITION``; ``force=true`` cascades;
* listings are in ascending name order, pages hold ``min(max_results, page_size_limit)``
  items (``0`` or absent: ``page_size_limit``, default 100, like Unity's
  ``DEFAULT_PAGE_SIZE``; negative: 400), and a full page always carries a
  ``next_page_token`` even when nothing follows (the next page is then empty), exactly like
  Unity. The token is opaque here (Unity's is the last name): a token that was not issued
  for the same listing is 400 ``INVALID_ARGUMENT``. At the end ``next_page_token`` is JSON
  ``null`` (Unity's Jackson writes every unset field as ``null``); ``end_of_list`` selects
  ``""`` or an absent key instead; ``endless_pages`` makes a page asked for by token name
  that token again (a catalog whose pages never end);
* unset fields are written as ``null`` (``null_fields=False`` omits them);
* errors are ``{"error_code": ..., "message": ..., "details": [{"@type":
  "google.rpc.ErrorInfo", "reason": ...}]}`` as ``application/json`` with the HTTP status of
  ``ERROR_CODES``; a path or method the contract does not have is answered like Armeria,
  ``text/plain`` ``Status: 404`` / ``Status: 405``;
* catalogs and schemas carry ``updated_at`` from their creation on, tables other than views
  ``view_dependencies: null``; VIEW creation needs a ``view_definition`` and keeps no
  location; creating an EXTERNAL table without a location is a 500 ``INTERNAL`` (Unity
  0.6.0 fails on a null pointer there);
* deletes answer 200 ``text/plain; charset=utf-8`` ``200 OK`` (Armeria's
  ``HttpResponse.of(HttpStatus.OK)``, which is what Unity sends), or ``{}`` as
  ``application/json`` with ``json_delete_bodies=True``.

Deliberate differences: the look-alike is stricter than Unity about requests (undeclared
members and query parameters, null members, page tokens it did not issue: see
``SPEC_SPECIAL_CASES`` and ``_page``), so that a client bug shows here first; METRIC_VIEW
creation is refused; MANAGED creation needs only DELTA and a location (Unity also needs a
staging table).

Every request and every response is checked against the contract by the machinery of
``openapi_index`` (an OpenAPI 3.0 document, so schemas are validated with
``openapi-schema-validator``'s ``OAS30Validator``); the conventions the checker adds are
listed in ``SPEC_SPECIAL_CASES``. A violation is appended to ``UnityServer.violations``: an
invalid request is answered 400 ``INVALID_ARGUMENT``, an invalid response is replaced by a 500
``INTERNAL`` naming the violation, and ``unity_catalog`` raises ``SpecViolationError`` at exit
if any was recorded.

Why a look-alike: the Unity Catalog OSS server itself is not published to the package
registries this suite may use (Maven Central serves ``io.unitycatalog:unitycatalog-client``
and ``unitycatalog-hadoop``, not ``unitycatalog-server``), so its behaviour is taken from its
source, release by release, and was compared request by request with Unity 0.6.0 built from
that source; every divergence found was fixed here. tests/unity_real.py runs the unity suite
against a real server when one is given (``LANCE_NS_UNITY_URI``). The look-alike also does
what a real server cannot: fault injection (``fail_next``), the error shapes of older
releases, seeding foreign tables of any type (``add_table``), forbidding catalog creation,
bearer tokens, and checking every request we send against the contract.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import dataclasses
import functools
import json
import posixpath
import re
import time
import traceback
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend
from openapi_index import (
    Answer,
    Dialect,
    Fault,
    OpenApiIndex,
    Operation,
    RouteError,
    SpecCheckedServer,
    SpecViolationError,
)
from openapi_index import Call as _Call
from openapi_index import Reply as _Reply
from openapi_schema_validator import OAS30Validator
from referencing.jsonschema import DRAFT4
from uvicorn_thread import running

__all__ = [
    "BASE_PATH",
    "ERROR_CODES",
    "RELEASES",
    "SPEC_PATH",
    "SPEC_SPECIAL_CASES",
    "SpecViolationError",
    "UnityError",
    "UnityServer",
    "unity_catalog",
]

SPEC_PATH = Path(__file__).resolve().parent / "contracts" / "unity-catalog.yaml"
BASE_PATH = "/api/2.1/unity-catalog"
_NAME = re.compile(r"[a-zA-Z0-9_@-]+")
_MAX_NAME_LENGTH = 255

RELEASES = ("0.6", "0.4.1", "0.3")
# Unity's io.unitycatalog.server.exception.ErrorCode, name -> HTTP status, over its releases:
# 0.1-0.4 had the gRPC names only (ALREADY_EXISTS 409, NOT_FOUND 404, ...); 0.5 added the
# per-object codes, its *_ALREADY_EXISTS answered with 400 for backwards compatibility.
ERROR_CODES: dict[str, int] = {
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "UNSUPPORTED_TABLE_FORMAT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "CATALOG_NOT_FOUND": 404,
    "SCHEMA_NOT_FOUND": 404,
    "TABLE_NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "RESOURCE_ALREADY_EXISTS": 400,
    "CATALOG_ALREADY_EXISTS": 400,
    "SCHEMA_ALREADY_EXISTS": 400,
    "TABLE_ALREADY_EXISTS": 400,
    "STORAGE_CREDENTIAL_ALREADY_EXISTS": 400,
    "EXTERNAL_LOCATION_ALREADY_EXISTS": 400,
    "PERMISSION_DENIED": 403,
    "UNAUTHENTICATED": 401,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "COMMIT_VERSION_CONFLICT": 409,
    "UPDATE_REQUIREMENT_CONFLICT": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
    "COMMIT_STATE_UNKNOWN": 500,
}
# what older releases said instead of the per-object codes of 0.5+
_BEFORE_0_5: dict[str, str] = {
    "CATALOG_NOT_FOUND": "NOT_FOUND",
    "SCHEMA_NOT_FOUND": "NOT_FOUND",
    "TABLE_NOT_FOUND": "NOT_FOUND",
}
_BEFORE_0_4_1: dict[str, str] = {
    **_BEFORE_0_5,
    "CATALOG_ALREADY_EXISTS": "ALREADY_EXISTS",
    "SCHEMA_ALREADY_EXISTS": "ALREADY_EXISTS",
    "TABLE_ALREADY_EXISTS": "ALREADY_EXISTS",
}
_RENAMED_CODES = {"0.6": {}, "0.4.1": _BEFORE_0_5, "0.3": _BEFORE_0_4_1}
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
_ERROR_POINTER = "/components/schemas/UnityError"

SPEC_SPECIAL_CASES: dict[str, str] = {
    "openapi-3.0": (
        "the contract is OpenAPI 3.0: schemas are JSON Schema draft 4 plus OAS 3.0 "
        "keywords (OAS30Validator), not the 2020-12 dialect of 3.1"
    ),
    "errors": (
        "no operation declares its error answers: every 4xx/5xx is validated against the "
        "contract's UnityError body, and its error_code must be one of ERROR_CODES with the "
        "response's status"
    ),
    "null-fields": (
        "Unity's Jackson writes unset fields as null (`next_page_token: null` at the end "
        "of a listing, `owner: null`, ...) and the contract's schemas describe the values: "
        "object members whose value is null are dropped before a response is validated (null "
        "array items still fail; requests are not relaxed)"
    ),
    "delete-body": (
        "deleteCatalog/deleteSchema/deleteTable answer text/plain `200 OK`: a text/plain "
        "answer is validated as a string against the contract's text/plain schema"
    ),
    "optional-request-bodies": (
        "no requestBody is `required: true`, so an absent body passes the contract; the "
        "handlers answer it 400 INVALID_ARGUMENT like Unity"
    ),
    "max-results": (
        "max_results declares only a maximum (1000, tables 50): a negative value passes "
        "the contract and is answered 400 INVALID_ARGUMENT like Unity's "
        "PagedListingHelper"
    ),
    "strict-query": (
        "a query parameter the operation does not declare (e.g. Unity's undocumented "
        "omit_columns) is recorded as a violation"
    ),
    "strict-body": (
        "a request-body member its schema does not declare (schemas leave "
        "additionalProperties open) is recorded as a violation"
    ),
    "strict-boolean": (
        "boolean query parameters must be exactly `true` or `false` (OpenAPI's form "
        "style); Python's `True` is recorded as a violation"
    ),
}


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


def _drop_nulls(node: Any) -> Any:
    """Object members whose value is null removed, recursively (see SPEC_SPECIAL_CASES)."""
    if isinstance(node, dict):
        return {k: _drop_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_drop_nulls(v) for v in node]
    return node


class _UnityApi(OpenApiIndex):
    """Our Unity Catalog contract: OAS 3.0, with the conventions of SPEC_SPECIAL_CASES."""

    dialect = Dialect("3.0", DRAFT4, _RequestValidator, _ResponseValidator)
    base_path = BASE_PATH
    reject_undeclared_query = True  # SPEC_SPECIAL_CASES["strict-query"]
    reject_unexpected_body = True

    def check_undeclared_status(self, answer: Answer) -> list[str]:
        if answer.status < 400:
            return super().check_undeclared_status(answer)
        # SPEC_SPECIAL_CASES["errors"]
        return self.check_error(answer.status, answer.media_type, answer.body)

    #: answers whose verdict is kept (see check_content)
    _VERDICTS_KEPT = 256

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._verdicts: dict[tuple[str, int, str, bool, bytes], list[str]] = {}

    def check_content(self, answer: Answer, response: Mapping[str, Any], at: str) -> list[str]:
        """The verdict on an answer, checked once per distinct answer: a listing sends the
        same bytes each time it is asked, and jsonschema's check of a 50-table page was
        most of the time the server took to answer it (the benchmarks' client then slept
        longer per answer than against pylance's server)."""
        key = (at, answer.status, answer.media_type, answer.method == "HEAD", answer.body)
        verdicts = self._verdicts
        found = verdicts.get(key)
        if found is None:
            found = self._check_content(answer, response, at)
            if len(verdicts) >= self._VERDICTS_KEPT:
                verdicts.clear()
            verdicts[key] = found
        return list(found)

    def _check_content(self, answer: Answer, response: Mapping[str, Any], at: str) -> list[str]:
        content = response.get("content") or {}
        if answer.media_type != "text/plain" or "text/plain" not in content:
            return super().check_content(answer, response, at)
        # SPEC_SPECIAL_CASES["delete-body"]
        text = answer.body.decode("utf-8", errors="replace")
        pointer = f"{at}/content/text~1plain/schema"
        found = self.errors(pointer, text, request=False)
        return [f"{answer.status} text/plain body {e}" for e in found]

    def response_instance(self, parsed: Any) -> Any:
        return _drop_nulls(parsed)  # SPEC_SPECIAL_CASES["null-fields"]

    def check_error(self, status: int, media_type: str, body: bytes) -> list[str]:
        if media_type != "application/json":
            return [f"error response content type {media_type!r} is not application/json"]
        try:
            parsed = json.loads(body)
        except ValueError as error:
            return [f"the error body is not JSON: {error}"]
        found = self.errors(_ERROR_POINTER, parsed, request=False)
        problems = [f"{status} error body {e}" for e in found]
        code = str(parsed.get("error_code")) if isinstance(parsed, dict) else ""
        if not problems and code not in ERROR_CODES:
            problems.append(f"error_code {code!r} is not one of Unity's")
        elif not problems and status in ERROR_CODES.values() and ERROR_CODES[code] != status:
            problems.append(f"error_code {code!r} is HTTP {ERROR_CODES[code]}, sent {status}")
        return problems


@functools.cache
def _openapi() -> _UnityApi:
    return _UnityApi(SPEC_PATH)


# -- the catalog server ------------------------------------------------------------------


class UnityError(ValueError):
    """A Unity error: ``code`` is a name of ERROR_CODES, which gives the HTTP status.

    The seeding helpers (``add_catalog``, ...) raise it for an invalid or duplicate name.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


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


def _managed_storage(storage_root: Any, kind: str, entity_id: str) -> dict[str, Any]:
    """``storage_root`` as given, and the managed ``storage_location`` Unity derives from it."""
    location = (
        f"{storage_root.rstrip('/')}/__unitystorage/{kind}/{entity_id}" if storage_root else None
    )
    return {"storage_root": storage_root, "storage_location": location}


def _legacy_storage_uri(location: str) -> str:
    """Unity 0.1-0.3's FileOperations.convertRelativePathToURI (see the module docstring)."""
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


# characters java.net.URI refuses anywhere (URISyntaxException: Unity says "Unsupported path")
_NOT_IN_URIS = re.compile(r'[\x00-\x20"<>\\^`{|}\x7f]|%(?![0-9A-Fa-f]{2})')
_CLOUD_SCHEMES = ("s3", "gs", "abfs", "abfss")


def _strip_slashes(path: str) -> str:
    """NormalizedURL.removeExtraSlashes: one leading slash at most, no trailing ones."""
    if len(path) <= 1:
        return path
    core = path.strip("/")
    return ("/" + core) if path.startswith("/") else core


def _normalized_url(location: str) -> str:
    """Unity 0.4.0+'s NormalizedURL.normalize (see the module docstring)."""
    if not location.strip():
        raise UnityError("INVALID_ARGUMENT", "Path cannot be null or empty")
    if "/" not in location:
        raise UnityError("INVALID_ARGUMENT", f"Ambiguous path: {location}")
    if _NOT_IN_URIS.search(location):
        raise UnityError("INVALID_ARGUMENT", f"Unsupported path: {location}")
    parts = urllib.parse.urlsplit(location)
    scheme = parts.scheme.lower()
    if not scheme:  # a local path: Paths.get(p).toAbsolutePath().toUri().normalize()
        uri = Path(posixpath.normpath(Path(location).absolute())).as_uri()
        return "file://" + _strip_slashes(uri[len("file:") :])
    path = posixpath.normpath(parts.path) if parts.path else ""  # URI.normalize()
    if scheme == "file":
        return "file://" + _strip_slashes(path)
    if scheme in _CLOUD_SCHEMES:
        uri = f"{parts.scheme}://{parts.netloc}{path}"
        if not path.strip("/"):
            raise UnityError(
                "INVALID_ARGUMENT",
                f"External table storage location must include a non-empty path prefix: {location}",
            )
        return uri.rstrip("/")
    raise UnityError("INVALID_ARGUMENT", f"Unsupported URI scheme: {parts.scheme}")


def _check_type_json(column: Mapping[str, Any]) -> None:
    """Unity 0.5+'s ColumnUtils.validateTypeJson for non-Delta formats (a shallow check)."""
    name = column.get("name")
    raw = column.get("type_json")
    problem = ""
    if not raw:
        problem = f"Column {name} has null/empty typeJson"
    else:
        try:
            field = json.loads(raw)
        except ValueError:
            field = None
        if not isinstance(field, dict):
            problem = f"Failed to parse typeJson for column {name}: {raw}"
        elif missing := [
            k for k in ("name", "type", "nullable", "metadata") if field.get(k) is None
        ]:
            problem = f"type_json.{missing[0]} is required."
        elif field["name"] != name:
            problem = f"field name {field['name']} does not match column name {name}"
        elif column.get("nullable") is not None and field["nullable"] != column["nullable"]:
            problem = (
                f"field nullable {json.dumps(field['nullable'])} does not match column "
                f"nullable {json.dumps(column['nullable'])}"
            )
    if problem.endswith("is required."):  # Unity checks the JSON's members before the rest
        raise UnityError("INVALID_ARGUMENT", problem)
    if problem:
        raise UnityError("INVALID_ARGUMENT", f"Invalid type_json for column {name}: {problem}")


class UnityServer(SpecCheckedServer):
    """An in-memory Unity Catalog OSS server on 127.0.0.1 (see the module docstring)."""

    catalogs: dict[str, dict[str, Any]]
    schemas: dict[str, dict[str, Any]]
    tables: dict[str, dict[str, Any]]
    allow_catalog_create: bool
    page_size_limit: int
    end_of_list: str
    null_fields: bool
    json_delete_bodies: bool
    typed_query = True
    json_content_type = "application/json"
    one_send = True  # a small answer in one send, as production servers write it

    def __init__(self, *, require_token: str | None = None, release: str = "0.6") -> None:
        super().__init__(
            _openapi(),
            thread_name="unity-catalog-server",
            description="the Unity Catalog test server",
        )
        if release not in RELEASES:
            raise ValueError(f"release must be one of {RELEASES}, not {release!r}")
        self.require_token = require_token
        self.release = release
        self.catalogs = {}
        self.schemas = {}
        self.tables = {}
        self.fault_operations: frozenset[str] | None = None
        self.allow_catalog_create = True
        # Unity's PagedListingHelper.DEFAULT_PAGE_SIZE: the server's page-length bound
        self.page_size_limit = 100
        # what the last page's next_page_token is: "null" (Unity), "empty" ("") or "absent"
        self.end_of_list = "null"
        #: a page asked for by token answers that token as its next_page_token
        self.endless_pages = False
        self.null_fields = True
        self.json_delete_bodies = False
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
            "generateTemporaryTableCredentials": self._temporary_table_credentials,
        }
        #: issues credentials for (table storage_location, operation); None: Unity's answer
        #: for a location with no cloud credentials configured (no credential member set)
        self.credential_vendor: Callable[[str, str], dict[str, Any]] | None = None
        #: every temporary-table-credentials request: (full table name, operation)
        self.credential_requests: list[tuple[str, str]] = []
        #: table full names whose READ_WRITE requests are refused (PERMISSION_DENIED)
        self.read_only_tables: set[str] = set()

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
        operations: tuple[str, ...] = (),
    ) -> None:
        """Answer the next `count` valid, authorized requests with `status` and a Unity error.

        `operations` (operation ids, e.g. ``("createTable",)``) limits the fault to those
        operations; other requests pass.

        The error_code defaults to the one Unity uses for the status (409: ABORTED, 429:
        RESOURCE_EXHAUSTED, 503: UNAVAILABLE, ...); `headers` (e.g. Retry-After) are sent.
        """
        fault = Fault(status, dict(headers or {}), error_code)
        if error_code is not None and error_code not in ERROR_CODES:
            raise ValueError(f"unknown Unity error_code {error_code!r}")
        self.fault_operations = frozenset(operations) if operations else None
        self._queue_faults(fault, count)

    def faults_apply_to(self, operation: Operation) -> bool:
        return self.fault_operations is None or operation.operation_id in self.fault_operations

    # the request cycle's answers (see SpecCheckedServer)

    def error_reply(self, code: str, message: str) -> _Reply:
        """The error of `code` (a name of Unity 0.5+) as this server's release says it."""
        return _error(_RENAMED_CODES[self.release].get(code, code), message)

    def route_error_reply(self, error: RouteError) -> _Reply:
        # Armeria's own answer; the violation (which path or method) is recorded anyway
        description = {404: "Not Found", 405: "Method Not Allowed"}[error.status]
        return _Reply(error.status, text=f"Status: {error.status}\nDescription: {description}\n")

    def unauthorized_reply(self, operation: Operation, headers: Mapping[str, str]) -> _Reply | None:
        if self.require_token is None or self._authorized(headers):
            return None
        return _error("UNAUTHENTICATED", "No valid bearer token in the Authorization header")

    def invalid_request_reply(self, operation: Operation, message: str) -> _Reply:
        return _error("INVALID_ARGUMENT", message)

    def fault_reply(self, fault: Fault) -> _Reply:
        code = fault.code or _FAULT_CODES.get(fault.status, "UNKNOWN")
        body = _error_body(code, f"injected fault ({fault.status})")
        return _Reply(fault.status, body, dict(fault.headers))

    def invalid_response_reply(self, message: str) -> _Reply:
        return _error("INTERNAL", message)

    def encode(self, reply: _Reply) -> tuple[bytes, str]:
        if not self.null_fields and reply.body is not None:
            reply = dataclasses.replace(reply, body=_drop_nulls(reply.body))
        return super().encode(reply)

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and token.strip() == self.require_token

    def dispatch(self, call: _Call) -> _Reply:
        name = call.operation.operation_id
        handler = self._handlers.get(name)
        if handler is None:
            return _error("UNIMPLEMENTED", f"{name} is not implemented by this test server")
        try:
            with self._lock:
                return handler(call)
        except UnityError as error:
            return self.error_reply(error.code, error.message)
        except Exception as error:
            self.violations.append(f"server error in {name}: {traceback.format_exc()}")
            return _error("INTERNAL", f"{type(error).__name__}: {error}")

    # state

    def _blank(self, schema_name: str) -> dict[str, Any]:
        return dict.fromkeys(self._spec.property_names(schema_name))

    def _require_catalog(self, name: str) -> dict[str, Any]:
        catalog = self.catalogs.get(name)
        if catalog is None:
            raise UnityError("CATALOG_NOT_FOUND", f"Catalog not found: {name}")
        return catalog

    def _require_schema(self, catalog: str, schema: str) -> dict[str, Any]:
        self._require_catalog(catalog)
        found = self.schemas.get(f"{catalog}.{schema}")
        if found is None:
            raise UnityError("SCHEMA_NOT_FOUND", f"Schema not found: {catalog}.{schema}")
        return found

    @staticmethod
    def _split(full_name: str, parts: int, kind: str) -> list[str]:
        names = full_name.split(".")
        if len(names) != parts or not all(names):
            label = "schema full name" if kind == "schema" else "table name"
            raise UnityError("INVALID_ARGUMENT", f"Invalid {label}: {full_name}")
        return names

    @staticmethod
    def _body(call: _Call) -> dict[str, Any]:
        if not isinstance(call.body, dict):
            raise UnityError("INVALID_ARGUMENT", "Malformed request body: no content")
        return call.body

    def _new_catalog(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _check_name(body.get("name"))
        if name in self.catalogs:
            raise UnityError("CATALOG_ALREADY_EXISTS", f"Catalog already exists: {name}")
        catalog = self._blank("CatalogInfo")
        catalog_id = str(uuid.uuid4())
        catalog.update(
            name=name,
            comment=body.get("comment"),
            properties=dict(body.get("properties") or {}),
            created_at=(now := _now_ms()),
            updated_at=now,
            id=catalog_id,
            **_managed_storage(body.get("storage_root"), "catalogs", catalog_id),
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
            raise UnityError("SCHEMA_ALREADY_EXISTS", f"Schema already exists: {name}")
        schema = self._blank("SchemaInfo")
        schema_id = str(uuid.uuid4())
        schema.update(
            name=name,
            catalog_name=catalog_name,
            comment=body.get("comment"),
            properties=dict(body.get("properties") or {}),
            full_name=full_name,
            created_at=(now := _now_ms()),
            updated_at=now,
            schema_id=schema_id,
            **_managed_storage(body.get("storage_root"), "schemas", schema_id),
        )
        self.schemas[full_name] = schema
        return schema

    def _new_table(self, body: Mapping[str, Any], *, check_type: bool = True) -> dict[str, Any]:
        name = _check_name(body.get("name"))
        catalog_name, schema_name = body.get("catalog_name"), body.get("schema_name")
        if not isinstance(catalog_name, str) or not isinstance(schema_name, str):
            raise UnityError("INVALID_ARGUMENT", "catalog_name and schema_name are required")
        given_columns = list(body.get("columns") or [])
        checks_columns = self.release == "0.6"
        if check_type and checks_columns:
            for given in given_columns:
                _check_type_json(given)
        self._require_schema(catalog_name, schema_name)
        full_name = f"{catalog_name}.{schema_name}.{name}"
        if full_name in self.tables:
            raise UnityError("TABLE_ALREADY_EXISTS", f"Table already exists: {full_name}")
        table_type = body.get("table_type")
        data_source_format = body.get("data_source_format")
        location = body.get("storage_location")
        if check_type:
            self._check_table_type(table_type, data_source_format, location, body, full_name)
        columns = []
        for given in given_columns:
            column = self._blank("ColumnInfo")
            column.update(given)
            if column.get("nullable") is None:
                column["nullable"] = True
            if checks_columns and isinstance(column.get("type_text"), str):
                column["type_text"] = column["type_text"].lower()
            columns.append(column)
        stored_location = None
        if location and table_type != "VIEW":
            normalise = check_type and self.release != "0.3"
            stored_location = (_normalized_url if normalise else _legacy_storage_uri)(location)
        now = _now_ms()
        table = self._blank("TableInfo")
        table.update(
            name=name,
            catalog_name=catalog_name,
            schema_name=schema_name,
            table_type=table_type,
            data_source_format=data_source_format,
            columns=columns,
            storage_location=stored_location,
            comment=body.get("comment"),
            properties=dict(body.get("properties") or {}),
            created_at=now,
            updated_at=now,
            table_id=str(uuid.uuid4()),
            view_definition=body.get("view_definition"),
            view_dependencies={"dependencies": []} if table_type == "VIEW" else None,
        )
        self.tables[full_name] = table
        return table

    @staticmethod
    def _check_table_type(
        table_type: Any, data_source_format: Any, location: Any, body: Mapping[str, Any], name: str
    ) -> None:
        """What POST /tables accepts of each table_type (TableRepository.createTable)."""
        if table_type == "EXTERNAL":
            if not location:  # Unity 0.6.0 dereferences the missing location
                raise UnityError("INTERNAL", f"Error creating table: {name}: no storage_location")
        elif table_type == "MANAGED":
            if data_source_format != "DELTA":
                raise UnityError(
                    "INVALID_ARGUMENT", "Managed table creation is only supported for Delta format."
                )
            if not location:
                raise UnityError(
                    "INVALID_ARGUMENT",
                    "MANAGED table creation needs the location of its staging table",
                )
        elif table_type == "VIEW":
            if not body.get("view_definition"):
                raise UnityError("INVALID_ARGUMENT", "view_definition is required for view")
        elif table_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW"):
            spelled = str(table_type).replace("_", " ")
            raise UnityError("INVALID_ARGUMENT", f"{spelled} creation is not supported yet.")
        else:
            raise UnityError("INVALID_ARGUMENT", f"{table_type} creation is not supported here")

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
        if token and self.endless_pages:
            extra["next_page_token"] = token
        elif page and len(page) == size:  # Unity: a full page always has a next token
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
                raise UnityError("CATALOG_ALREADY_EXISTS", f"Catalog already exists: {new_name}")
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
                raise UnityError("SCHEMA_ALREADY_EXISTS", f"Schema already exists: {new_name}")
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
            raise UnityError("TABLE_NOT_FOUND", f"Table not found: {full_name}")
        return table

    def _get_table(self, call: _Call) -> _Reply:
        return _Reply(200, copy.deepcopy(self._find_table(call.path["full_name"])))

    def _delete_table(self, call: _Call) -> _Reply:
        full_name = call.path["full_name"]
        _, _, name = self._split(full_name, 3, "table")
        try:
            self._find_table(full_name)
        except UnityError as error:  # Unity names only the table when deleting
            if error.code == "TABLE_NOT_FOUND":
                raise UnityError(error.code, f"Table not found: {name}") from None
            raise
        del self.tables[full_name]
        return self._ok_deleted()

    def _temporary_table_credentials(self, call: _Call) -> _Reply:
        body = self._body(call)
        found = [t for t in self.tables.values() if t.get("table_id") == body["table_id"]]
        if not found:
            raise UnityError("TABLE_NOT_FOUND", f"Table not found: {body['table_id']}")
        table, operation = found[0], body["operation"]
        full_name = f"{table['catalog_name']}.{table['schema_name']}.{table['name']}"
        self.credential_requests.append((full_name, operation))
        if operation == "UNKNOWN_TABLE_OPERATION":
            raise UnityError("INVALID_ARGUMENT", "Unknown table operation")
        if operation == "READ_WRITE" and full_name in self.read_only_tables:
            raise UnityError("PERMISSION_DENIED", f"MODIFY is not granted on {full_name}")
        answer = self._blank("TemporaryCredentials")
        answer["url"] = table.get("storage_location")
        if self.credential_vendor is not None:
            issued = self.credential_vendor(str(table.get("storage_location")), operation)
            answer["aws_temp_credentials"] = {
                "access_key_id": issued["access_key_id"],
                "secret_access_key": issued["secret_access_key"],
                "session_token": issued["session_token"],
            }
            answer["expiration_time"] = issued["expiration_millis"]
        return _Reply(200, answer)


@contextlib.contextmanager
def unity_catalog(
    *, require_token: str | None = None, release: str = "0.6"
) -> Iterator[UnityServer]:
    """Run a Unity Catalog look-alike of `release` on a free 127.0.0.1 port for the block.

    With `require_token`, every request needs ``Authorization: Bearer <token>`` (else 401
    UNAUTHENTICATED). Raises SpecViolationError at exit when any request or response
    broke the OpenAPI document.
    """
    server = UnityServer(require_token=require_token, release=release)
    with running(server, checked="Unity Catalog spec", error=SpecViolationError):
        yield server
