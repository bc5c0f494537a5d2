"""Local AWS Glue endpoints for the glue backend's tests: moto, and a model-checked fake.

Nothing here talks to real AWS. Both servers bind 127.0.0.1 on a free port and are
stopped by the context manager that started them; :data:`FAKE_AWS_ENV` is the
environment the tests run under (fake credentials, no config files, no instance
metadata, and ``AWS_ENDPOINT_URL`` pointing at a closed local port, so a client built
without an explicit ``endpoint_url`` fails at once instead of reaching AWS).

``moto_glue()``: moto 5.2.5 as a server
=======================================

What moto 5.2.5's Glue and STS do here was measured (``test_glue.py``, section "what
moto supports", asserts each fact, so an upgrade that changes one fails loudly):

* **No catalog APIs.** ``CreateCatalog``, ``GetCatalog``, ``GetCatalogs`` and
  ``DeleteCatalog`` answer HTTP 500 with an HTML page (``NotImplementedError: The
  create_catalog action has not been implemented``), which botocore retries as a
  transient error before raising ``ClientError`` code ``"500"``.
* **No CatalogId scoping.** moto keeps one set of databases per (account, region) and
  ignores the ``CatalogId`` parameter: ``GetDatabases(CatalogId=X)`` lists the databases
  created under every CatalogId, and ``GetDatabase(CatalogId=X, Name=n)`` finds a
  database created with ``CatalogId=Y``. (The ``CatalogId`` given at creation is echoed
  back in the database, nothing more.)
* **No pagination.** ``GetDatabases`` and ``GetTables`` ignore ``MaxResults`` and return
  everything in one page without ``NextToken``.
* **DeleteDatabase cascades** (like real Glue): a database holding tables is deleted with
  them, so a backend must check "restrict" itself.
* Table names are case-sensitive and kept as given (real Glue lower-cases names; moto
  does not, and neither does the fake below).
* **STS works**: ``GetCallerIdentity`` answers account ``123456789012`` and
  ``AssumeRole`` returns ``ASIA...`` credentials whose calls moto serves from the
  *role's* account: Glue resources created with credentials of
  ``arn:aws:iam::111111111111:role/r`` are invisible to the default account and vice
  versa, so "the backend really used the assumed role" is observable on moto.
* Region scoping works (a database made in eu-west-1 is not listed in us-east-1).
* moto's S3 serves pylance's object store (``aws_endpoint``, ``allow_http``), fast.
* ``POST /moto-api/reset`` clears every backend (used between tests).

``fake_glue()``: what moto lacks
================================

A small in-memory Glue served by Starlette/uvicorn, speaking the real wire protocol
(AWS JSON 1.1: ``POST /``, ``X-Amz-Target: AWSGlue.<Action>``, errors as
``{"__type": ..., "message": ...}`` with ``x-amzn-ErrorType``), so the backend's own
aioboto3 client talks to it unchanged through ``endpoint``. It implements:

* catalogs: ``CreateCatalog`` (a child of the caller's account catalog: Glue's
  ``CatalogNameString`` forbids ``/``), ``GetCatalog``, ``GetCatalogs``
  (``ParentCatalogId``, ``Recursive``, ``IncludeRoot``, ``NextToken``, ``MaxResults``),
  ``UpdateCatalog``, ``DeleteCatalog`` (refused with ``InvalidInputException`` while the
  catalog holds catalogs or databases). Deeper catalogs (federated ones such as
  ``s3tablescatalog/bucket``) are seeded with :meth:`FakeGlue.add_catalog`. Catalog ids
  are ``<account>`` for an account's root catalog, ``<account>:<path>`` for the others
  (``123456789012:sales/eu``); a bare ``<path>`` is accepted for the caller's account.
  Any 12-digit id is an (empty at first) root catalog of that account.
* databases and tables, kept apart per catalog id: ``Create/Get/Update/Delete
  Database``, ``GetDatabases``, ``Create/Get/Update/Delete Table``, ``GetTables``
  (``Expression`` as Glue's regex with ``*`` wildcards), ``BatchDeleteTable``.
  ``DeleteDatabase`` cascades to the tables, like Glue.
* pagination: every listing returns at most :attr:`FakeGlue.page_size` items (default
  3) whatever ``MaxResults`` asks, in *creation* order (never sorted, so the backend must
  sort), and a full page always carries a ``NextToken``, even when nothing follows (the
  next page is then empty). Tokens are opaque and only valid for the listing that issued
  them (else ``InvalidInputException``). With :attr:`FakeGlue.endless_pages` a page asked
  for by token names that token again (a catalog whose pages never end).
* STS (query protocol, XML): ``GetCallerIdentity`` and ``AssumeRole``; assumed
  credentials are recorded and accepted on later calls (and resolve "the caller's account"
  to the role's account), ``FakeGlue.sts_lifetime_seconds`` shortens their expiry.
* authentication: every request must be SigV4-signed (service ``glue`` or ``sts``) with
  a known access key (``testing``/``testing``, keys added with
  :meth:`FakeGlue.add_credentials`, and keys issued by ``AssumeRole``) and the
  signature is recomputed with botocore's ``SigV4Auth``: an unknown key is
  ``UnrecognizedClientException``, a wrong secret ``InvalidSignatureException`` (as AWS
  answers). Each request's key, region and session token are in
  :attr:`FakeGlue.requests`.
* faults: :meth:`FakeGlue.fail_next` queues Glue JSON errors and
  :meth:`FakeGlue.slow_next` delays answers (each optionally for one action only); every
  attempt, failed or not, is in :attr:`FakeGlue.calls`.

Validation against botocore's service model (``glue/2017-03-31/service-2.json`` and
``sts/2011-06-15``): each request body is checked against its operation's input shape
(members known, required members present, JSON wire types) and each response against
the output shape. A structural problem is a *violation* (the fake or the client drifted
from the real API): it is answered ``InvalidInputException``, appended to
:attr:`FakeGlue.violations`, and ``fake_glue()`` raises :class:`GlueModelViolation` at
exit. Constraint failures (length, range, enum, pattern: what Glue checks server side)
are answered ``InvalidInputException`` like Glue, without a violation.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import json
import logging
import os
import re
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import anyio
import boto3  # type: ignore[import-untyped]
import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.model import Shape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn_thread import UvicornThread, free_port, running

if TYPE_CHECKING:
    import pytest

__all__ = [
    "ACCOUNT",
    "FAKE_AWS_ENV",
    "REGION",
    "FakeGlue",
    "GlueCall",
    "GlueModelViolation",
    "fake_glue",
    "free_port",
    "glue_client",
    "moto_glue",
    "reset_moto",
    "s3_client",
    "sts_client",
    "use_fake_aws_env",
]

ACCOUNT = "123456789012"
REGION = "us-east-1"
JSON_CONTENT_TYPE = "application/x-amz-json-1.1"

#: the environment every glue test runs under (see the module docstring)
FAKE_AWS_ENV: dict[str, str | None] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": None,
    "AWS_SECURITY_TOKEN": None,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": None,
    "AWS_PROFILE": None,
    "AWS_DEFAULT_PROFILE": None,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_ROLE_ARN": None,
    "AWS_WEB_IDENTITY_TOKEN_FILE": None,
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
    "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": None,
    # a client built without endpoint_url goes here: a closed port, never AWS
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
}


# -- boto3 clients: the independent reader of what the backend wrote --------------------------


def _client(service: str, endpoint: str, **kwargs: Any) -> Any:
    options: dict[str, Any] = {
        "endpoint_url": endpoint,
        "region_name": REGION,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "config": Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    }
    options.update(kwargs)
    return boto3.client(service, **options)


def glue_client(endpoint: str, **kwargs: Any) -> Any:
    """A boto3 Glue client on ``endpoint`` (us-east-1, fake credentials, no retries)."""
    return _client("glue", endpoint, **kwargs)


def sts_client(endpoint: str, **kwargs: Any) -> Any:
    return _client("sts", endpoint, **kwargs)


def s3_client(endpoint: str, **kwargs: Any) -> Any:
    return _client("s3", endpoint, **kwargs)


# -- moto ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def moto_glue() -> Iterator[str]:
    """moto's server (all services: Glue, STS, S3) on 127.0.0.1; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        yield endpoint
    finally:
        server.stop()


def reset_moto(endpoint: str) -> None:
    """Forget every resource moto holds (all accounts, regions and services)."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


# -- botocore's service models -------------------------------------------------------------------


@cache
def _service_model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


_SURROGATE_PAIRS = r"\uD800\uDC00-\uDBFF\uDFFF"  # Java's way of writing U+10000..U+10FFFF


@cache
def _pattern(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern.replace(_SURROGATE_PAIRS, r"\U00010000-\U0010FFFF"))
    except re.error:
        return None


@dataclass
class _Problems:
    structural: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)


def _check(shape: Shape, value: Any, path: str, problems: _Problems, *, wire: str) -> None:
    """Check a JSON value (``wire="json"``) or a query-protocol string against ``shape``."""
    kind = shape.type_name
    meta = shape.metadata
    bad = problems.structural.append
    if kind == "structure":
        if not isinstance(value, dict):
            bad(f"{path}: expected an object, got {type(value).__name__}")
            return
        for name in shape.required_members:
            if name not in value:
                bad(f"{path}: missing required member {name!r}")
        for name, item in value.items():
            member = shape.members.get(name)
            if member is None:
                bad(f"{path}: unknown member {name!r} (not in {shape.name})")
            elif item is not None:
                _check(member, item, f"{path}.{name}", problems, wire=wire)
        return
    if kind == "list":
        if not isinstance(value, list):
            bad(f"{path}: expected a list, got {type(value).__name__}")
            return
        _length(len(value), meta, path, problems)
        for index, item in enumerate(value):
            _check(shape.member, item, f"{path}[{index}]", problems, wire=wire)
        return
    if kind == "map":
        if not isinstance(value, dict):
            bad(f"{path}: expected a map, got {type(value).__name__}")
            return
        _length(len(value), meta, path, problems)
        for key, item in value.items():
            _check(shape.key, key, f"{path}<key>", problems, wire=wire)
            _check(shape.value, item, f"{path}[{key!r}]", problems, wire=wire)
        return
    if wire == "query" and isinstance(value, str) and kind in ("integer", "long", "boolean"):
        try:
            value = {"boolean": lambda v: {"true": True, "false": False}[v]}.get(kind, int)(value)
        except (KeyError, ValueError):
            bad(f"{path}: {value!r} is not a {kind}")
            return
    if kind == "string":
        if not isinstance(value, str):
            bad(f"{path}: expected a string, got {type(value).__name__}")
            return
        _length(len(value), meta, path, problems)
        if "enum" in meta and value not in meta["enum"]:
            problems.constraints.append(f"{path}: {value!r} is not one of {meta['enum']}")
        compiled = _pattern(meta["pattern"]) if "pattern" in meta else None
        if compiled is not None and not compiled.fullmatch(value):
            problems.constraints.append(
                f"{path}: {value!r} does not match the pattern {meta['pattern']}"
            )
    elif kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            bad(f"{path}: expected an integer, got {value!r}")
            return
        if ("min" in meta and value < meta["min"]) or ("max" in meta and value > meta["max"]):
            problems.constraints.append(
                f"{path}: {value} is outside [{meta.get('min')}, {meta.get('max')}]"
            )
    elif kind == "boolean":
        if not isinstance(value, bool):
            bad(f"{path}: expected a boolean, got {value!r}")
    elif kind in ("double", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            bad(f"{path}: expected a number, got {value!r}")
    elif kind == "timestamp":
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            bad(f"{path}: expected a timestamp, got {value!r}")
    elif kind == "blob":
        if not isinstance(value, str):
            bad(f"{path}: expected base64 text, got {type(value).__name__}")
            return
        try:
            base64.b64decode(value, validate=True)
        except ValueError:
            bad(f"{path}: not base64")


def _length(size: int, meta: Mapping[str, Any], path: str, problems: _Problems) -> None:
    if ("min" in meta and size < meta["min"]) or ("max" in meta and size > meta["max"]):
        problems.constraints.append(
            f"{path}: length {size} is outside [{meta.get('min')}, {meta.get('max')}]"
        )


# -- the fake ------------------------------------------------------------------------------------


class GlueModelViolation(AssertionError):
    """A request or response of the fake Glue broke botocore's service model."""


class _GlueError(Exception):
    STATUS: Mapping[str, int] = {
        "InternalServiceException": 500,
        "ServiceUnavailable": 503,
        "ServiceUnavailableException": 503,
        "InvalidSignatureException": 403,
    }

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or self.STATUS.get(code, 400)


@dataclass(frozen=True)
class GlueCall:
    """One request as the fake saw it: the action and who signed it, where."""

    action: str  # "GetDatabases"; STS actions are "sts:AssumeRole"
    body: dict[str, Any]
    access_key_id: str | None
    region: str | None
    session_token: str | None
    answer: str  # "ok" or the error code answered


@dataclass
class _Fault:
    code: str
    status: int | None
    message: str
    action: str | None


def _now() -> float:
    return round(time.time(), 3)


def _parse_authorization(header: str) -> dict[str, str]:
    scheme, _, rest = header.partition(" ")
    if scheme != "AWS4-HMAC-SHA256":
        return {}
    parts = dict(item.strip().split("=", 1) for item in rest.split(",") if "=" in item)
    return parts


class FakeGlue:
    """State and behaviour of the fake Glue (see the module docstring)."""

    def __init__(self, *, account_id: str = ACCOUNT, page_size: int = 3) -> None:
        self.account_id = account_id
        self.page_size = page_size
        self.endpoint = ""
        #: (action, request JSON) of every request, failed ones included
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.requests: list[GlueCall] = []
        self.violations: list[str] = []
        #: credentials AssumeRole issued expire after this many seconds (None: as asked)
        self.sts_lifetime_seconds: int | None = None
        #: a page asked for by token answers that token as its NextToken
        self.endless_pages = False
        self._lock = threading.RLock()
        self._faults: list[_Fault] = []
        self._delays: list[tuple[float, str | None]] = []
        self._stopping = False
        self._credentials: dict[str, tuple[str, str | None, str]] = {
            "testing": ("testing", None, account_id)
        }
        self._catalogs: dict[str, dict[str, Any]] = {}  # child catalog id -> Catalog
        self._databases: dict[str, dict[str, dict[str, Any]]] = {}  # catalog id -> name -> db
        self._tables: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self._tokens: dict[str, tuple[str, int]] = {}
        self.app = Starlette(routes=[Route("/{path:path}", self._endpoint, methods=["POST"])])
        self._http = UvicornThread(self.app, name="fake-glue", description="the fake Glue server")

    # -- seeding and inspection (test side) ------------------------------------------------

    def catalog_id(self, path: str | None = None, *, account: str | None = None) -> str:
        """The Glue catalog id of a catalog path (``None``: the account's root catalog)."""
        root = account or self.account_id
        return root if not path else f"{root}:{path}"

    def add_catalog(
        self,
        path: str,
        parameters: Mapping[str, str] | None = None,
        *,
        account: str | None = None,
        description: str | None = None,
    ) -> str:
        """Seed a child catalog: ``"sales"`` or, below it, ``"sales/eu"``; returns its id."""
        with self._lock:
            parent, _, name = path.rpartition("/")
            if parent and self.catalog_id(parent, account=account) not in self._catalogs:
                raise KeyError(f"parent catalog {parent!r} does not exist")
            catalog_id = self.catalog_id(path, account=account)
            self._catalogs[catalog_id] = self._catalog_record(
                catalog_id, name, {"Parameters": dict(parameters or {})}
            )
            if description is not None:
                self._catalogs[catalog_id]["Description"] = description
            return catalog_id

    def add_database(
        self,
        name: str,
        *,
        catalog: str | None = None,
        account: str | None = None,
        parameters: Mapping[str, str] | None = None,
    ) -> None:
        with self._lock:
            catalog_id = self.catalog_id(catalog, account=account)
            self._databases.setdefault(catalog_id, {})[name] = {
                "Name": name,
                "Parameters": dict(parameters or {}),
                "CreateTime": _now(),
                "CatalogId": catalog_id,
            }
            self._tables.setdefault((catalog_id, name), {})

    def add_table(
        self,
        database: str,
        name: str,
        *,
        catalog: str | None = None,
        account: str | None = None,
        location: str | None = None,
        table_type: str = "EXTERNAL_TABLE",
        parameters: Mapping[str, str] | None = None,
    ) -> None:
        """Seed a table; by default a Lance one (``table_type=lance``)."""
        with self._lock:
            catalog_id = self.catalog_id(catalog, account=account)
            table_input: dict[str, Any] = {
                "Name": name,
                "TableType": table_type,
                "Parameters": dict({"table_type": "lance"} if parameters is None else parameters),
            }
            if location is not None:
                table_input["StorageDescriptor"] = {"Location": location}
            self._tables[(catalog_id, database)][name] = self._table_record(
                catalog_id, database, table_input
            )

    def remove_table(
        self, database: str, name: str, *, catalog: str | None = None, account: str | None = None
    ) -> None:
        with self._lock:
            del self._tables[(self.catalog_id(catalog, account=account), database)][name]

    def catalogs(self) -> dict[str, dict[str, Any]]:
        """Child catalogs by id (copies)."""
        with self._lock:
            return copy.deepcopy(self._catalogs)

    def databases(
        self, catalog: str | None = None, *, account: str | None = None
    ) -> dict[str, dict[str, Any]]:
        with self._lock:
            found = self._databases.get(self.catalog_id(catalog, account=account), {})
            return copy.deepcopy(found)

    def tables(
        self, database: str, *, catalog: str | None = None, account: str | None = None
    ) -> dict[str, dict[str, Any]]:
        with self._lock:
            key = (self.catalog_id(catalog, account=account), database)
            return copy.deepcopy(self._tables.get(key, {}))

    def add_credentials(
        self, access_key_id: str, secret: str, token: str | None = None, account: str = ACCOUNT
    ) -> None:
        with self._lock:
            self._credentials[access_key_id] = (secret, token, account)

    def fail_next(
        self,
        error_code: str,
        http_status: int | None = None,
        count: int = 1,
        *,
        message: str | None = None,
        action: str | None = None,
    ) -> None:
        """Answer the next ``count`` Glue requests (of ``action`` only, if given) with an error.

        The status defaults to Glue's: 500 for ``InternalServiceException``, 503 for
        ``ServiceUnavailable(Exception)``, 400 for the rest (``ThrottlingException``,
        ``AccessDeniedException``, ...).
        """
        with self._lock:
            for _ in range(count):
                self._faults.append(
                    _Fault(error_code, http_status, message or f"injected {error_code}", action)
                )

    def slow_next(self, seconds: float, count: int = 1, *, action: str | None = None) -> None:
        """Hold the next ``count`` Glue requests (of ``action`` only) for ``seconds``."""
        with self._lock:
            self._delays.extend([(seconds, action)] * count)

    def actions(self) -> list[str]:
        with self._lock:
            return [action for action, _ in self.calls]

    def clear_calls(self) -> None:
        with self._lock:
            self.calls.clear()
            self.requests.clear()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self.endpoint = self._http.start()

    def stop(self) -> None:
        self._stopping = True
        self._http.stop()

    # -- HTTP ----------------------------------------------------------------------------------

    async def _endpoint(self, request: Request) -> Response:
        body = await request.body()
        url = str(request.url)
        headers = dict(request.headers)
        action = headers.get("x-amz-target", "").removeprefix("AWSGlue.")
        with self._lock:
            delay = next((d for d in self._delays if d[1] in (None, action)), None)
            if delay is not None:
                self._delays.remove(delay)
        if delay is not None:
            deadline = time.monotonic() + delay[0]
            # stop() runs in the test's thread: poll a flag rather than wait on an anyio.Event
            while time.monotonic() < deadline and not self._stopping:  # noqa: ASYNC110
                await anyio.sleep(0.02)
        return self._handle(url, headers, body)

    def _handle(self, url: str, headers: dict[str, str], body: bytes) -> Response:
        target = headers.get("x-amz-target", "")
        if target.startswith("AWSGlue."):
            return self._handle_glue(target.removeprefix("AWSGlue."), url, headers, body)
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return self._handle_sts(url, headers, body)
        with self._lock:
            self.violations.append(f"a request that is neither Glue nor STS: {headers}")
        return _json_error(_GlueError("UnknownOperationException", "unknown request"))

    def _authenticate(
        self, url: str, headers: dict[str, str], body: bytes, service: str
    ) -> tuple[str | None, str | None, str | None, str]:
        """(access key, region, session token, account) or a _GlueError."""
        parts = _parse_authorization(headers.get("authorization", ""))
        scope = parts.get("Credential", "").split("/")
        if len(scope) != 5 or scope[3] != service or scope[4] != "aws4_request":
            raise _GlueError("MissingAuthenticationTokenException", "request is not signed")
        access_key, _, region, _, _ = scope
        token = headers.get("x-amz-security-token")
        with self._lock:
            known = self._credentials.get(access_key)
        if known is None or known[1] != token:
            raise _GlueError(
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            )
        secret, _, account = known
        signed = parts.get("SignedHeaders", "").split(";")
        aws_request = AWSRequest(method="POST", url=url, headers=headers, data=body)
        aws_request.context["timestamp"] = headers.get("x-amz-date", "")
        verifier = _Verifier(Credentials(access_key, secret, token), service, region, signed)
        canonical = verifier.canonical_request(aws_request)
        expected = verifier.signature(verifier.string_to_sign(aws_request, canonical), aws_request)
        if expected != parts.get("Signature"):
            raise _GlueError(
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided.",
            )
        return access_key, region, token, account

    def _handle_glue(self, action: str, url: str, headers: dict[str, str], body: bytes) -> Response:
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            payload = {"<unparsable>": body.decode(errors="replace")}
        access_key = region = token = None
        answer = "ok"
        try:
            if not headers.get("content-type", "").startswith(JSON_CONTENT_TYPE):
                self._violation(f"{action}: content-type {headers.get('content-type')!r}")
            access_key, region, token, account = self._authenticate(url, headers, body, "glue")
            with self._lock:
                fault = next(
                    (f for f in self._faults if f.action in (None, action)),
                    None,
                )
                if fault is not None:
                    self._faults.remove(fault)
                    raise _GlueError(fault.code, fault.message, fault.status)
            result = self._dispatch(action, payload, account)
        except _GlueError as error:
            answer = error.code
            return _json_error(error)
        finally:
            with self._lock:
                self.calls.append((action, payload))
                self.requests.append(GlueCall(action, payload, access_key, region, token, answer))
        return Response(
            json.dumps(result),
            media_type=JSON_CONTENT_TYPE,
            headers={"x-amzn-RequestId": str(uuid.uuid4())},
        )

    def _violation(self, message: str) -> None:
        with self._lock:
            self.violations.append(message)

    def _dispatch(self, action: str, payload: Any, account: str) -> dict[str, Any]:
        model = _service_model("glue")
        if action not in model.operation_names:
            self._violation(f"{action} is not a Glue operation")
            raise _GlueError("UnknownOperationException", f"Unknown operation {action}")
        handler: Callable[[dict[str, Any], str], dict[str, Any]] | None = getattr(
            self, f"_glue_{action}", None
        )
        if handler is None:
            self._violation(f"the fake Glue does not implement {action}")
            raise _GlueError("UnknownOperationException", f"fake Glue lacks {action}")
        operation = model.operation_model(action)
        problems = _Problems()
        _check(operation.input_shape, payload, action, problems, wire="json")
        if problems.structural:
            self._violation("; ".join(problems.structural))
            raise _GlueError("InvalidInputException", "; ".join(problems.structural))
        if problems.constraints:
            raise _GlueError(
                "InvalidInputException",
                f"{len(problems.constraints)} validation error(s) detected: "
                + "; ".join(problems.constraints),
            )
        with self._lock:
            result = handler(payload, account)
        problems = _Problems()
        if operation.output_shape is not None:
            _check(operation.output_shape, result, f"{action}<response>", problems, wire="json")
        for problem in problems.structural + problems.constraints:
            self._violation(f"the fake's own answer: {problem}")
        return result

    # -- STS (query protocol) ---------------------------------------------------------------

    def _handle_sts(self, url: str, headers: dict[str, str], body: bytes) -> Response:
        params = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        action = params.pop("Action", "")
        version = params.pop("Version", "")
        access_key = region = token = None
        answer = "ok"
        try:
            access_key, region, token, account = self._authenticate(url, headers, body, "sts")
            model = _service_model("sts")
            if action not in model.operation_names or version != "2011-06-15":
                self._violation(f"STS {action!r} version {version!r}")
                raise _GlueError("InvalidAction", f"unknown STS action {action}")
            operation = model.operation_model(action)
            top_level = {k: v for k, v in params.items() if "." not in k}
            problems = _Problems()
            if operation.input_shape is not None:
                _check(operation.input_shape, top_level, action, problems, wire="query")
            elif top_level:
                problems.structural.append(f"{action} takes no parameters: {top_level}")
            if problems.structural:
                self._violation("; ".join(problems.structural))
            if problems.structural or problems.constraints:
                raise _GlueError(
                    "ValidationError", "; ".join(problems.structural + problems.constraints)
                )
            if action == "GetCallerIdentity":
                xml = (
                    f"<GetCallerIdentityResult><Arn>arn:aws:iam::{account}:user/tester</Arn>"
                    f"<UserId>AIDATESTER</UserId><Account>{account}</Account>"
                    "</GetCallerIdentityResult>"
                )
            elif action == "AssumeRole":
                xml = self._assume_role(params)
            else:
                raise _GlueError("InvalidAction", f"the fake STS does not implement {action}")
        except _GlueError as error:
            answer = error.code
            return Response(
                f'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error>'
                f"<Type>Sender</Type><Code>{escape(error.code)}</Code>"
                f"<Message>{escape(error.message)}</Message></Error>"
                f"<RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>",
                status_code=error.status if error.status != 400 else 400,
                media_type="text/xml",
            )
        finally:
            with self._lock:
                self.calls.append((f"sts:{action}", params))
                self.requests.append(
                    GlueCall(f"sts:{action}", params, access_key, region, token, answer)
                )
        return Response(
            f'<{action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/">{xml}'
            f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
            f"</{action}Response>",
            media_type="text/xml",
        )

    def _assume_role(self, params: Mapping[str, str]) -> str:
        arn = params["RoleArn"]
        match = re.fullmatch(r"arn:aws:iam::(\d{12}):role/(.+)", arn)
        if match is None:
            raise _GlueError("ValidationError", f"{arn} is not a role ARN")
        role_account, role_name = match.groups()
        session = params["RoleSessionName"]
        lifetime = self.sts_lifetime_seconds or int(params.get("DurationSeconds", "3600"))
        expiration = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=lifetime)
        key = "ASIA" + uuid.uuid4().hex[:16].upper()
        secret = uuid.uuid4().hex
        token = "FQoGZXIvYXdzE" + uuid.uuid4().hex
        with self._lock:
            self._credentials[key] = (secret, token, role_account)
        return (
            "<AssumeRoleResult><Credentials>"
            f"<AccessKeyId>{key}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey>"
            f"<SessionToken>{token}</SessionToken>"
            f"<Expiration>{expiration.strftime('%Y-%m-%dT%H:%M:%SZ')}</Expiration>"
            "</Credentials><AssumedRoleUser>"
            f"<AssumedRoleId>AROATESTROLE:{escape(session)}</AssumedRoleId>"
            f"<Arn>arn:aws:sts::{role_account}:assumed-role/{escape(role_name)}/{escape(session)}"
            "</Arn></AssumedRoleUser></AssumeRoleResult>"
        )

    # -- Glue: catalogs ----------------------------------------------------------------------

    def _resolve_catalog(self, given: str | None, account: str) -> str:
        """The canonical id of an existing catalog named by a CatalogId parameter."""
        if given is None or re.fullmatch(r"\d{12}", given):
            return given or account
        catalog_id = given if re.fullmatch(r"\d{12}:.+", given) else f"{account}:{given}"
        if catalog_id not in self._catalogs:
            raise _GlueError("EntityNotFoundException", f"Catalog {given} not found.")
        return catalog_id

    def _catalog_record(
        self, catalog_id: str, name: str, catalog_input: Mapping[str, Any]
    ) -> dict[str, Any]:
        root, _, path = catalog_id.partition(":")
        record = {
            key: value
            for key, value in catalog_input.items()
            if key not in ("CatalogProperties", "FederatedCatalog", "TargetRedshiftCatalog")
        }
        now = _now()
        record.update(
            {
                "Name": name,
                "CatalogId": catalog_id,
                "ResourceArn": f"arn:aws:glue:{REGION}:{root}:catalog/{path or ''}".rstrip("/"),
                "CreateTime": now,
                "UpdateTime": now,
            }
        )
        record.setdefault("Parameters", {})
        return record

    def _root_record(self, account: str) -> dict[str, Any]:
        return {
            "Name": account,
            "CatalogId": account,
            "ResourceArn": f"arn:aws:glue:{REGION}:{account}:catalog",
            "Parameters": {},
        }

    @staticmethod
    def _parent_of(catalog_id: str) -> str:
        root, _, path = catalog_id.partition(":")
        parent = path.rpartition("/")[0]
        return f"{root}:{parent}" if parent else root

    def _glue_CreateCatalog(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = f"{account}:{body['Name']}"
        if catalog_id in self._catalogs:
            raise _GlueError("AlreadyExistsException", f"Catalog {body['Name']} already exists.")
        self._catalogs[catalog_id] = self._catalog_record(
            catalog_id, body["Name"], body["CatalogInput"]
        )
        return {}

    def _glue_GetCatalog(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body["CatalogId"], account)
        if ":" not in catalog_id:
            return {"Catalog": self._root_record(catalog_id)}
        return {"Catalog": self._catalogs[catalog_id]}

    def _glue_GetCatalogs(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        parent = self._resolve_catalog(body.get("ParentCatalogId"), account)
        recursive = body.get("Recursive", False)
        found: list[dict[str, Any]] = []
        if body.get("IncludeRoot") and ":" not in parent:
            found.append(self._root_record(parent))
        for catalog_id, record in self._catalogs.items():
            if recursive:
                if catalog_id.startswith(f"{parent}:" if ":" not in parent else f"{parent}/"):
                    found.append(record)
            elif self._parent_of(catalog_id) == parent:
                found.append(record)
        listing = f"catalogs|{parent}|{recursive}|{body.get('IncludeRoot', False)}"
        page, token = self._page(listing, found, body)
        return {"CatalogList": page, **({"NextToken": token} if token else {})}

    def _glue_UpdateCatalog(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body["CatalogId"], account)
        if ":" not in catalog_id:
            raise _GlueError("InvalidInputException", "The root catalog cannot be updated.")
        old = self._catalogs[catalog_id]
        record = self._catalog_record(catalog_id, old["Name"], body["CatalogInput"])
        record["CreateTime"] = old["CreateTime"]
        self._catalogs[catalog_id] = record
        return {}

    def _glue_DeleteCatalog(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body["CatalogId"], account)
        if ":" not in catalog_id:
            raise _GlueError("InvalidInputException", "The root catalog cannot be deleted.")
        children = [c for c in self._catalogs if self._parent_of(c) == catalog_id]
        if children or self._databases.get(catalog_id):
            raise _GlueError(
                "InvalidInputException",
                f"Catalog {body['CatalogId']} is not empty: delete its catalogs and databases.",
            )
        del self._catalogs[catalog_id]
        self._databases.pop(catalog_id, None)
        return {}

    # -- Glue: databases -----------------------------------------------------------------------

    def _database(self, catalog_id: str, name: str) -> dict[str, Any]:
        try:
            return self._databases.get(catalog_id, {})[name]
        except KeyError:
            raise _GlueError("EntityNotFoundException", f"Database {name} not found.") from None

    def _glue_CreateDatabase(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        database_input = body["DatabaseInput"]
        name = database_input["Name"]
        databases = self._databases.setdefault(catalog_id, {})
        if name in databases:
            raise _GlueError("AlreadyExistsException", "Database already exists.")
        databases[name] = {**database_input, "CreateTime": _now(), "CatalogId": catalog_id}
        databases[name].setdefault("Parameters", {})
        self._tables[(catalog_id, name)] = {}
        return {}

    def _glue_GetDatabase(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        return {"Database": self._database(catalog_id, body["Name"])}

    def _glue_GetDatabases(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        found = list(self._databases.get(catalog_id, {}).values())
        page, token = self._page(f"databases|{catalog_id}", found, body)
        return {"DatabaseList": page, **({"NextToken": token} if token else {})}

    def _glue_UpdateDatabase(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        old = self._database(catalog_id, body["Name"])
        if body["DatabaseInput"]["Name"] != body["Name"]:
            raise _GlueError("InvalidInputException", "A database cannot be renamed.")
        record = {**body["DatabaseInput"], "CreateTime": old["CreateTime"]}
        record["CatalogId"] = catalog_id
        record.setdefault("Parameters", {})
        self._databases[catalog_id][body["Name"]] = record
        return {}

    def _glue_DeleteDatabase(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        self._database(catalog_id, body["Name"])
        del self._databases[catalog_id][body["Name"]]
        self._tables.pop((catalog_id, body["Name"]), None)  # Glue cascades
        return {}

    # -- Glue: tables --------------------------------------------------------------------------

    def _table_record(
        self, catalog_id: str, database: str, table_input: Mapping[str, Any]
    ) -> dict[str, Any]:
        record = {k: v for k, v in table_input.items() if k != "ViewDefinition"}
        now = _now()
        record.update(
            {
                "DatabaseName": database,
                "CatalogId": catalog_id,
                "CreateTime": now,
                "UpdateTime": now,
                "IsRegisteredWithLakeFormation": False,
                "VersionId": "1",
            }
        )
        return record

    def _table_map(self, body: dict[str, Any], account: str) -> dict[str, dict[str, Any]]:
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        self._database(catalog_id, body["DatabaseName"])
        return self._tables.setdefault((catalog_id, body["DatabaseName"]), {})

    def _glue_CreateTable(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        if "TableInput" not in body:
            raise _GlueError("InvalidInputException", "TableInput is required.")
        tables = self._table_map(body, account)
        name = body["TableInput"]["Name"]
        if name in tables:
            raise _GlueError("AlreadyExistsException", "Table already exists.")
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        tables[name] = self._table_record(catalog_id, body["DatabaseName"], body["TableInput"])
        return {}

    def _glue_GetTable(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        tables = self._table_map(body, account)
        if body["Name"] not in tables:
            raise _GlueError("EntityNotFoundException", f"Table {body['Name']} not found.")
        return {"Table": tables[body["Name"]]}

    def _glue_GetTables(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        tables = self._table_map(body, account)
        found = list(tables.values())
        expression = body.get("Expression")
        if expression:
            regex = re.compile(expression.replace("*", ".*").replace("..*", ".*"))
            found = [t for t in found if regex.fullmatch(t["Name"])]
        catalog_id = self._resolve_catalog(body.get("CatalogId"), account)
        listing = f"tables|{catalog_id}|{body['DatabaseName']}|{expression}"
        page, token = self._page(listing, found, body)
        return {"TableList": page, **({"NextToken": token} if token else {})}

    def _glue_UpdateTable(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        tables = self._table_map(body, account)
        if "TableInput" not in body:
            raise _GlueError("InvalidInputException", "TableInput is required.")
        name = body["TableInput"]["Name"]
        if name not in tables:
            raise _GlueError("EntityNotFoundException", f"Table {name} not found.")
        old = tables[name]
        record = self._table_record(old["CatalogId"], body["DatabaseName"], body["TableInput"])
        record["CreateTime"] = old["CreateTime"]
        record["VersionId"] = str(int(old["VersionId"]) + 1)
        tables[name] = record
        return {}

    def _glue_DeleteTable(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        tables = self._table_map(body, account)
        if body["Name"] not in tables:
            raise _GlueError("EntityNotFoundException", f"Table {body['Name']} not found.")
        del tables[body["Name"]]
        return {}

    def _glue_BatchDeleteTable(self, body: dict[str, Any], account: str) -> dict[str, Any]:
        tables = self._table_map(body, account)
        errors = []
        for name in body["TablesToDelete"]:
            if tables.pop(name, None) is None:
                errors.append(
                    {
                        "TableName": name,
                        "ErrorDetail": {
                            "ErrorCode": "EntityNotFoundException",
                            "ErrorMessage": f"Table {name} not found.",
                        },
                    }
                )
        return {"Errors": errors}

    # -- pagination ------------------------------------------------------------------------------

    def _page(
        self, listing: str, items: list[dict[str, Any]], body: Mapping[str, Any]
    ) -> tuple[list[dict[str, Any]], str | None]:
        offset = 0
        given = body.get("NextToken")
        if given:
            issued = self._tokens.get(given)
            if issued is None or issued[0] != listing:
                raise _GlueError("InvalidInputException", "Invalid or expired NextToken.")
            offset = issued[1]
            if self.endless_pages:
                return items[offset : offset + self.page_size], given
        size = min(body.get("MaxResults") or self.page_size, self.page_size)
        page = items[offset : offset + size]
        if len(page) < size:
            return page, None
        token = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self._tokens[token] = (listing, offset + size)
        return page, token


class _Verifier(SigV4Auth):  # type: ignore[misc]
    """SigV4Auth over exactly the headers the client said it signed."""

    def __init__(
        self, credentials: Credentials, service: str, region: str, signed: list[str]
    ) -> None:
        super().__init__(credentials, service, region)
        self._signed = signed

    def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
        header_map = HTTPHeaders()
        for name in self._signed:
            header_map[name] = request.headers.get(name, "")
        return header_map


def _json_error(error: _GlueError) -> Response:
    return Response(
        json.dumps({"__type": error.code, "message": error.message}),
        status_code=error.status,
        media_type=JSON_CONTENT_TYPE,
        headers={"x-amzn-ErrorType": error.code, "x-amzn-RequestId": str(uuid.uuid4())},
    )


@contextlib.contextmanager
def fake_glue(*, page_size: int = 3, account_id: str = ACCOUNT) -> Iterator[FakeGlue]:
    """Run the fake Glue (and STS) on a free 127.0.0.1 port for the block's duration.

    Raises :class:`GlueModelViolation` at exit when a request or an answer broke
    botocore's Glue/STS service model.
    """
    fake = FakeGlue(account_id=account_id, page_size=page_size)
    with running(fake, checked="Glue model", error=GlueModelViolation):
        yield fake


def use_fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials, no config files, no metadata service, never AWS."""
    for key, value in FAKE_AWS_ENV.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_STS", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_GLUE", raising=False)
