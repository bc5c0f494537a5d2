"""A small but real Apache Iceberg REST Catalog server for tests.

Every warehouse is backed by its own pyiceberg ``SqlCatalog`` on a temporary sqlite
database, so namespace, table and commit semantics are pyiceberg's own. Every request
the server handles and every response it sends is checked against the official
OpenAPI contract, ``tests/contracts/iceberg-rest.yaml`` (written here from the Iceberg
REST specification: the operations, fields and statuses this project uses), by the
machinery of ``openapi_index`` (routing on the raw path, parameters and body against
their schemas, the response's status, media type and schema).

Schemas are validated with ``openapi-schema-validator``'s OAS 3.1 validator (JSON
Schema 2020-12), with ``discriminator`` enforced (OAS 3.1 makes it an annotation; see
``_discriminator``). The few statuses the contract does not declare but this server
sends on purpose are listed in ``_UNDECLARED_BUT_SENT``.

It earns its place beside the Iceberg project's own server (tests/iceberg_real_server.py),
which the iceberg suite also runs against: it injects faults (``fail_next``), enforces
OAuth2, has per-warehouse prefixes, and checks every request and response against the
contract, which the real server does not do.

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
import re
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend
from openapi_index import (
    Answer,
    Call,
    Dialect,
    Fault,
    OpenApiIndex,
    Operation,
    RouteError,
    SpecCheckedServer,
    SpecViolationError,
)
from openapi_index import Reply as _Reply
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
from referencing.jsonschema import DRAFT202012
from uvicorn_thread import running

__all__ = ["SPEC_PATH", "IcebergCatalogServer", "SpecViolationError", "iceberg_catalog"]

#: our contract: the Iceberg REST operations, fields and statuses this project uses
SPEC_PATH = Path(__file__).resolve().parent / "contracts" / "iceberg-rest.yaml"
_SEPARATOR = "\x1f"
# Kept on every namespace this server creates, hidden from every response: pyiceberg's
# SqlCatalog stores a namespace only as rows of properties, so a namespace whose last
# property is removed would silently stop existing.
_NAMESPACE_MARKER = "iceberg-rest-fixture.namespace"
_WAREHOUSE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
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
# (operationId or "*", status) the contract does not declare but this server sends.
_UNDECLARED_BUT_SENT: dict[tuple[str, int], str] = {
    ("createNamespace", 404): (
        "a missing parent namespace is NoSuchNamespaceException; createNamespace declares no 404"
    ),
    ("*", 429): "fail_next(429) simulates throttling; the contract declares 429 nowhere",
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


# -- schema validation --------------------------------------------------------------------

_discriminating = threading.local()


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


_Validator = extend(OAS31Validator, {"discriminator": _discriminator})


class _IcebergApi(OpenApiIndex):
    """Our Iceberg REST contract: OAS 3.1, and what this server sends beyond it."""

    dialect = Dialect("3.1", DRAFT202012, _Validator, _Validator)

    def parse_boolean(self, value: str) -> tuple[bool | None, str | None]:
        # pyiceberg sends Python's repr (``purgeRequested=False``): case-insensitive
        if value.lower() not in ("true", "false"):
            return None, f"{value!r} is not a boolean"
        return value.lower() == "true", None

    def check_undeclared_status(self, answer: Answer) -> list[str]:
        name, status = answer.operation.operation_id, answer.status
        if not {(name, status), ("*", status)} & _UNDECLARED_BUT_SENT.keys():
            return super().check_undeclared_status(answer)
        # sent on purpose (see _UNDECLARED_BUT_SENT): still an IcebergErrorResponse
        at = "/components/responses/IcebergErrorResponse"
        return self.check_content(answer, self.lookup(at), at)


@functools.cache
def _openapi() -> _IcebergApi:
    return _IcebergApi(SPEC_PATH)


# -- the catalog server ------------------------------------------------------------------


class _HttpError(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


@dataclass
class _Call(Call):
    catalog: SqlCatalog | None = None  # the warehouse's, set by dispatch


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


class IcebergCatalogServer(SpecCheckedServer):
    """An Iceberg REST catalog on 127.0.0.1, backed by one SqlCatalog per warehouse."""

    warehouse_root: Path
    config_requests: collections.Counter[str]
    token_requests: int
    call_type = _Call
    blocking_handlers = True  # SqlCatalog waits on sqlite
    one_send = True  # a small answer in one send, as production servers write it

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
        super().__init__(
            _openapi(),
            thread_name="iceberg-rest-server",
            description="the Iceberg REST test server",
        )
        self.prefix_mode = prefix_mode
        self.require_auth = require_auth
        self.client_id = client_id
        self.client_secret = client_secret
        self.warehouse_root = tmp_path / "warehouse"
        self.warehouse_root.mkdir(parents=True, exist_ok=True)
        self._db_dir = tmp_path / "catalog-db"
        self._db_dir.mkdir(parents=True, exist_ok=True)
        self.config_requests = collections.Counter()
        self.token_requests = 0
        #: pages the server makes when the client asks for none (None: everything at once)
        self.server_page_size: int | None = None
        #: a page asked for by token answers that token as its next-page-token
        self.endless_pages = False
        self._catalogs: dict[str, SqlCatalog] = {}
        self._clients: list[RestCatalog] = []
        self._tokens: set[str] = set()
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
            "commitTransaction": self._commit_transaction,
        }
        #: what CommitTransaction answers: the look-alike does not serve it, as a catalog
        #: without the route would answer (404, or 501 Not Implemented)
        self.transactions_status = 404
        #: issues S3 credentials for a table location (``access_key_id``, ``secret_access_key``,
        #: ``session_token``, ``expiration_millis``); None: nothing is vended, header or not
        self.credential_vendor: Callable[[str], dict[str, Any]] | None = None
        #: where vended credentials go: "storage-credentials" (one entry, the table location
        #: as prefix, as current servers do) or "config" (the older place)
        self.vend_in = "storage-credentials"
        #: more properties of every warehouse's SqlCatalog, e.g. its own S3 FileIO settings
        #: (``s3.endpoint``, ``s3.access-key-id``, ...) for tables on object storage
        self.catalog_properties: dict[str, str] = {}
        #: LoadTable requests that asked for vended credentials, by table location
        self.vend_requests: collections.Counter[str] = collections.Counter()
        #: LoadTable requests by their ``snapshots`` query parameter (``all`` when absent)
        self.load_snapshots: collections.Counter[str] = collections.Counter()

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
            catalog = SqlCatalog(
                warehouse,
                uri=f"sqlite:///{database}",
                warehouse=root.as_uri(),
                **self.catalog_properties,
            )
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
        self._queue_faults(Fault(status, dict(headers or {})), count)

    # lifecycle

    def stop(self) -> None:
        for client in self._clients:
            session = getattr(client, "_session", None)
            if session is not None:
                session.close()
        self._clients.clear()
        super().stop()
        with self._lock:
            for catalog in self._catalogs.values():
                catalog.engine.dispose()

    # the request cycle's answers (see SpecCheckedServer)

    def route_error_reply(self, error: RouteError) -> _Reply:
        return _error(error.status, _ERROR_TYPES[error.status], str(error))

    def note_request(self, operation: Operation, query: Mapping[str, list[str]]) -> None:
        if operation.operation_id == "getConfig":
            self.config_requests[query.get("warehouse", [""])[-1]] += 1
        elif operation.operation_id == "getToken":
            with self._lock:
                self.token_requests += 1

    def unauthorized_reply(self, operation: Operation, headers: Mapping[str, str]) -> _Reply | None:
        if operation.operation_id == "getToken" or not self.require_auth:
            return None
        if self._authorized(headers):
            return None
        return _error(401, "NotAuthorizedException", "a valid bearer token is required")

    def invalid_request_reply(self, operation: Operation, message: str) -> _Reply:
        if operation.operation_id == "getToken":
            return _Reply(400, {"error": "invalid_request", "error_description": message})
        return _error(400, "BadRequestException", message)

    def faults_apply_to(self, operation: Operation) -> bool:
        return operation.operation_id not in ("getConfig", "getToken")

    def fault_reply(self, fault: Fault) -> _Reply:
        kind = _ERROR_TYPES.get(fault.status, "InjectedFaultException")
        body = _error_body(fault.status, kind, "injected fault")
        return _Reply(fault.status, body, dict(fault.headers))

    def invalid_response_reply(self, message: str) -> _Reply:
        return _error(500, "ResponseSpecViolation", message)

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        with self._lock:
            return scheme.lower() == "bearer" and token.strip() in self._tokens

    def dispatch(self, call: Call) -> _Reply:
        assert isinstance(call, _Call)
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
        page, token = self._paginate(children, call.query, "namespaces")
        return _Reply(200, {"namespaces": [list(ns) for ns in page], "next-page-token": token})

    def _paginate(
        self, items: list[Any], query: Mapping[str, str], kind: str
    ) -> tuple[list[Any], str | None]:
        if self.server_page_size is not None and query.get("pageSize") is None:
            query = {**query, "pageSize": str(self.server_page_size)}
        page, token = _paginate(items, query, kind)
        asked = query.get("pageToken")
        return page, asked if asked and self.endless_pages else token

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
        page, token = self._paginate(tables, call.query, "tables")
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
        with self._lock:
            self.load_snapshots[call.query.get("snapshots") or "all"] += 1
        if call.query.get("snapshots") == "refs":
            referenced = {ref.snapshot_id for ref in metadata.refs.values()}
            metadata = metadata.model_copy(
                update={"snapshots": [s for s in metadata.snapshots if s.snapshot_id in referenced]}
            )
        result = self._load_result(metadata, table.metadata_location)
        delegation = call.headers.get("X-Iceberg-Access-Delegation", "")
        if "vended-credentials" in [m.strip() for m in delegation.split(",")]:
            self._vend(result, metadata.location)
        return _Reply(200, result)

    def _vend(self, result: dict[str, Any], location: str) -> None:
        """Vended S3 credentials into ``result``, with Iceberg's S3FileIO property names."""
        self.vend_requests[location] += 1
        if self.credential_vendor is None:
            return
        issued = self.credential_vendor(location)
        config = {
            "s3.access-key-id": issued["access_key_id"],
            "s3.secret-access-key": issued["secret_access_key"],
            "s3.session-token": issued["session_token"],
            "s3.session-token-expires-at-ms": str(issued["expiration_millis"]),
        }
        if self.vend_in == "config":
            result["config"].update(config)
        else:
            result["storage-credentials"] = [{"prefix": location, "config": config}]

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

    def _commit_transaction(self, call: _Call) -> _Reply:
        return _error(self.transactions_status, "NotImplementedException", "no transactions")

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
    with running(server, checked="Iceberg REST spec", error=SpecViolationError):
        yield server
