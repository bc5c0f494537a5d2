"""Lance tables in the AWS Glue Data Catalog: ``impl="glue"``, extra ``glue``.

Mapping (the Lance Namespace's Glue implementation spec).
The root namespace is the starting catalog: ``catalog_id``
or, unset, the caller's account catalog. Child catalogs (GetCatalogs /
GetCatalog / CreateCatalog / DeleteCatalog) are inner namespace levels and
databases are the leaf level; identifiers join with ``$``. So users can write
``["mydb", "mytable"]`` as pyiceberg's Glue users do, a one-level namespace is
a database of the starting catalog unless a child catalog of that name exists;
deeper identifiers walk child catalogs down to a database
(``catalog$database$table``). A child catalog has the id
``<root id>:<name>[/<name>...]``; it is created by CreateNamespace with the
property ``glue.namespace_type=catalog`` (otherwise a database is created).
ListNamespaces of a catalog returns its databases and its child catalogs,
merged and sorted. ``child_catalogs=false`` turns the catalog hierarchy off for
Glue-compatible metastores without the catalog APIs (databases only); unset, the
backend finds out itself: the first catalog call that such an endpoint answers as an
unknown operation (moto answers an HTML page with status 500) turns the hierarchy off
for this connection, logged once at INFO. ``child_catalogs=true`` never falls back.

A Lance table is an ``EXTERNAL_TABLE`` with ``Parameters.table_type=lance``
(case-insensitive when read) and ``StorageDescriptor.Location`` its root.
Access denied is code 16 as the seed says, throttling 21, an unavailable
service 17. One aioboto3 client per instance, owned by an async exit stack;
botocore's own retry (standard mode, ``max_retries``) and timeouts apply, and
assumed-role credentials refresh before they expire without blocking other
calls (aiobotocore's refreshable credentials).

Deletion (decided once in ``_lance_tables``): the storage root is ``root`` when
configured; DropTable deletes a table's data only strictly inside it (or below a
``drop_allowed_locations`` prefix; for S3, bucket and key prefix are compared),
never the root itself, a directory inside or holding another Lance table, nor
the place of the table whose default location (``<root>/<namespace...>/<name>``)
it is. Without ``root`` only a table's own default location (under the cwd) is
deleted. Elsewhere a drop deregisters the table and keeps its data.
RegisterTable (a Lance table required) and DeclareTable (no data yet) refuse
the root and places inside, holding or belonging to another table.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any, ClassVar, Self

import anyio
import attrs

from .. import errors
from .._arrow_json import spark_type
from .._config import BackendConfig, parse_bool, parse_non_negative_int, parse_positive_int, prop
from .._http import flag_ambiguous
from .._identifiers import Identifier, validate_identifier
from .._lance_tables import (
    DROP_ALLOWED_LOCATIONS_DOC,
    TABLE_TYPE,
    Claims,
    LanceTables,
    catalog_claims,
    lance_parameters,
    parse_locations,
)
from .._modes import CREATE_MODES, DROP_BEHAVIORS, DROP_MODES, REGISTER_MODES, parse_mode
from .._namespace_guard import NamespaceGuard
from .._paging import page_of
from .._storage_ops import StorageTable, StorageTableOperations
from .._unique_names import refuse_existing_table
from ..errors import MissingDependencyError
from ..models import (
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
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)

try:
    import aioboto3
    from botocore.config import Config as BotocoreConfig
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError as _missing:  # pragma: no cover - exercised without the extra only
    raise MissingDependencyError(
        f"impl 'glue' needs: pip install 'lance-namespace-async[glue]' ({_missing})"
    ) from _missing

__all__ = ["GlueConfig", "GlueNamespace"]

NAMESPACE_TYPE = "glue.namespace_type"
logger = logging.getLogger("lance_namespace_async.glue")
#: the catalog APIs a Glue-compatible metastore may lack (moto 5 does)
_CATALOG_APIS = frozenset({"get_catalog", "get_catalogs", "create_catalog", "delete_catalog"})
#: the reads among them that find out, sent once (see ``GlueNamespace._probe``)
_PROBES = frozenset({"get_catalog", "get_catalogs"})
#: error codes of endpoints that do not know an operation
_UNKNOWN_OPERATION_CODES = frozenset(
    {
        "UnknownOperationException",
        "UnknownOperation",
        "InvalidAction",
        "InvalidActionException",
        "UnsupportedOperation",
        "UnsupportedOperationException",
        "NotImplemented",
        "NotImplementedException",
    }
)


@attrs.frozen
class GlueConfig(BackendConfig):
    """Properties of ``impl="glue"`` as the Glue implementation spec lists them, plus client
    settings."""

    catalog_id: str | None = prop(default=None, doc="starting catalog (default: the account's)")
    endpoint: str | None = prop(default=None, doc="Glue endpoint of an API-compatible metastore")
    sts_endpoint: str | None = prop(default=None, doc="STS endpoint for assume-role")
    region: str | None = prop(default=None)
    access_key_id: str | None = prop(default=None, secret=True)
    secret_access_key: str | None = prop(default=None, secret=True)
    session_token: str | None = prop(default=None, secret=True)
    assume_role_arn: str | None = prop(default=None)
    assume_role_region: str | None = prop(default=None)
    assume_role_external_id: str | None = prop(default=None, secret=True)
    assume_role_session_name: str = prop(default="lance-namespace-async")
    assume_role_timeout_sec: int = prop(default=3600, parse=parse_positive_int)
    root: str | None = prop(
        default=None,
        doc="storage root of new tables, inside which DropTable deletes data "
        "(default: new tables under the cwd, deleted only at that default location)",
    )
    drop_allowed_locations: tuple[str, ...] = prop(
        default=(), parse=parse_locations, doc=DROP_ALLOWED_LOCATIONS_DOC
    )
    child_catalogs: bool | None = prop(
        default=None,
        parse=parse_bool,
        doc="child catalogs as namespace levels; unset: on unless the endpoint lacks the "
        "catalog APIs (then databases only, for this connection)",
    )
    max_retries: int = prop(default=3, parse=parse_non_negative_int)
    connect_timeout: int = prop(default=10000, parse=parse_positive_int)
    read_timeout: int = prop(default=30000, parse=parse_positive_int)
    max_pool_connections: int = prop(default=32, parse=parse_positive_int)
    worker_threads: int = prop(default=8, parse=parse_positive_int)
    storage: dict[str, str] = prop(prefix="storage.", secret=True)

    def __attrs_post_init__(self) -> None:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise errors.InvalidInputError("'access_key_id' and 'secret_access_key' go together")


def _is_lance(table: Mapping[str, Any]) -> bool:
    parameters = table.get("Parameters") or {}
    return str(table.get("TableType", "")).upper() == "EXTERNAL_TABLE" and (
        str(parameters.get(TABLE_TYPE, "")).lower() == "lance"
    )


_GLUE_CODES: dict[str, type[errors.LanceNamespaceError]] = {
    "AccessDeniedException": errors.UnauthenticatedError,  # code 16, as seed 004 says
    "UnrecognizedClientException": errors.UnauthenticatedError,
    "InvalidSignatureException": errors.UnauthenticatedError,
    "IncompleteSignature": errors.UnauthenticatedError,
    "IncompleteSignatureException": errors.UnauthenticatedError,
    "MissingAuthenticationTokenException": errors.UnauthenticatedError,
    "SignatureDoesNotMatch": errors.UnauthenticatedError,
    "InvalidClientTokenId": errors.UnauthenticatedError,
    "ExpiredTokenException": errors.UnauthenticatedError,
    "ThrottlingException": errors.ThrottlingError,
    "ResourceNumberLimitExceededException": errors.ThrottlingError,
    "InternalServiceException": errors.ServiceUnavailableError,
    "ServiceUnavailableException": errors.ServiceUnavailableError,
    "OperationTimeoutException": errors.ServiceUnavailableError,
    "InvalidInputException": errors.InvalidInputError,
    "ValidationException": errors.InvalidInputError,
    "ConcurrentModificationException": errors.ConcurrentModificationError,
    "FederationSourceException": errors.ServiceUnavailableError,
}


def _unknown_operation(exc: ClientError) -> bool:
    """Whether an answer says the endpoint lacks the operation (not that an entity does)."""
    error = exc.response.get("Error") or {}
    code = str(error.get("Code") or "")
    if code in _UNKNOWN_OPERATION_CODES:
        return True
    # no AWS error document, only a status (botocore then uses it as the code): an HTML
    # page of a 500 (moto: "The ... action has not been implemented"), or 404/405/501
    status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    message = str(error.get("Message") or "").lstrip()
    if code != str(status):
        return False
    return status in (404, 405, 501) or (status == 500 and message.startswith("<"))


def _glue_columns(schema: Any) -> list[dict[str, str]]:
    """A Lance schema as Glue columns (Hive type names, as Athena and Spark read them)."""
    return [
        {
            "Name": field.name,
            "Type": spark_type(field.type)[1].replace("timestamp_ntz", "timestamp"),
        }
        for field in schema
    ]


def _table_input(
    name: str, location: str, parameters: dict[str, str], columns: list[dict[str, str]] | None
) -> dict[str, Any]:
    descriptor: dict[str, Any] = {"Location": location}
    if columns:
        descriptor["Columns"] = columns
    return {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": parameters,
        "StorageDescriptor": descriptor,
    }


class _NoCatalogApis(errors.UnsupportedOperationError):
    """The endpoint has no catalog APIs: namespaces are databases on this connection."""


@attrs.frozen
class _Database:
    catalog_id: str | None  # None: the caller's account catalog
    name: str
    path: Identifier  # the namespace identifier, for locations and messages


class GlueNamespace(StorageTableOperations):
    """``impl="glue"``: Lance tables as EXTERNAL_TABLEs of the AWS Glue Data Catalog."""

    impl_name: ClassVar[str] = "glue"
    delimiter = "$"
    config: GlueConfig

    def __init__(self, config: GlueConfig) -> None:
        super().__init__(config)
        import os

        self.root = (config.root or os.getcwd()).rstrip("/")
        self.tables = LanceTables(
            threads=config.worker_threads,
            storage_options=config.storage,
            storage_root=config.root,
            drop_allowed=config.drop_allowed_locations,
        )
        self._stack: AsyncExitStack | None = None
        self._client: Any = None
        self._session_obj: Any = None
        self._open_lock = anyio.Lock()
        self._account: str | None = config.catalog_id
        self._known_catalogs: set[str] = set()
        #: found out on this connection: the endpoint answers catalog calls as unknown
        self._no_catalog_apis = False
        #: ... or it answered one as Glue does: no more probing
        self._catalog_apis_seen = False
        self._probe_client: Any = None
        # DeleteDatabase cascades: a Restrict drop checks "empty" itself, so creations
        # inside a namespace are kept apart from its drop (in this process)
        self._guard = NamespaceGuard()

    @classmethod
    def from_properties(cls, properties: Any) -> Self:
        return cls(GlueConfig.from_properties(properties))

    def namespace_id(self) -> str:
        return (
            f"GlueNamespace(catalog_id={self.config.catalog_id!r}, "
            f"region={self.config.region!r}, endpoint={self.config.endpoint!r})"
        )

    async def aclose(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    # -- client ----------------------------------------------------------------------

    def _botocore_config(self) -> BotocoreConfig:
        return BotocoreConfig(
            # total_max_attempts counts the first try; botocore's max_attempts would not
            retries={"total_max_attempts": self.config.max_retries + 1, "mode": "standard"},
            connect_timeout=self.config.connect_timeout / 1000,
            read_timeout=self.config.read_timeout / 1000,
            max_pool_connections=self.config.max_pool_connections,
        )

    def _sts_endpoint(self) -> str | None:
        """STS for assume-role and the account id: ``sts_endpoint``, else the Glue endpoint
        (an API-compatible stack serves both), else the SDK's default."""
        return self.config.sts_endpoint or self.config.endpoint

    async def _session(self) -> Any:
        """One aioboto3 session per instance (assumed-role credentials refresh in place)."""
        if self._session_obj is None:
            self._session_obj = await self._new_session()
        return self._session_obj

    async def _new_session(self) -> Any:
        config = self.config
        base = aioboto3.Session(
            aws_access_key_id=config.access_key_id,
            aws_secret_access_key=config.secret_access_key,
            aws_session_token=config.session_token,
            region_name=config.region,
        )
        if not config.assume_role_arn:
            return base
        from aiobotocore.credentials import AioRefreshableCredentials
        from aiobotocore.session import get_session

        async def assume() -> dict[str, str]:
            arguments: dict[str, Any] = {
                "RoleArn": config.assume_role_arn,
                "RoleSessionName": config.assume_role_session_name,
                "DurationSeconds": config.assume_role_timeout_sec,
            }
            if config.assume_role_external_id:
                arguments["ExternalId"] = config.assume_role_external_id
            async with base.client(
                "sts",
                region_name=config.assume_role_region or config.region,
                endpoint_url=self._sts_endpoint(),
                config=self._botocore_config(),
            ) as sts:
                answer = await sts.assume_role(**arguments)
            credentials = answer["Credentials"]
            return {
                "access_key": credentials["AccessKeyId"],
                "secret_key": credentials["SecretAccessKey"],
                "token": credentials["SessionToken"],
                "expiry_time": credentials["Expiration"].isoformat(),
            }

        # botocore refreshes 15 (advisory) / 10 (mandatory) minutes before expiry, which
        # would re-assume before every call for short sessions: scale to the session length
        lifetime = config.assume_role_timeout_sec
        refreshable = AioRefreshableCredentials.create_from_metadata(
            metadata=await self._aws(assume(), "AssumeRole"),
            refresh_using=assume,
            method="sts-assume-role",
            advisory_timeout=min(15 * 60, lifetime // 4),
            mandatory_timeout=min(10 * 60, lifetime // 8),
        )
        botocore_session = get_session()
        botocore_session._credentials = refreshable
        return aioboto3.Session(botocore_session=botocore_session, region_name=config.region)

    async def _glue(self) -> Any:
        if self._client is None:
            async with self._open_lock:
                if self._client is None:
                    stack = AsyncExitStack()
                    session = await self._session()
                    self._client = await stack.enter_async_context(
                        session.client(
                            "glue",
                            endpoint_url=self.config.endpoint,
                            region_name=self.config.region,
                            config=self._botocore_config(),
                        )
                    )
                    self._stack = stack
        return self._client

    async def _aws(self, call: Any, what: str, **route: Any) -> Any:
        """Await a botocore call; its errors become ours (``route`` types not-found/exists)."""
        try:
            return await call
        except ClientError as exc:
            raise _glue_error(exc, what, **route) from None
        except BotoCoreError as exc:
            raise errors.ServiceUnavailableError(f"{what}: {type(exc).__name__}: {exc}") from None

    async def _call(self, action: str, what: str, **kwargs: Any) -> dict[str, Any]:
        route: dict[str, Any] = {k: kwargs.pop(k) for k in ("not_found", "exists") if k in kwargs}
        client = await self._glue()
        arguments = {k: v for k, v in kwargs.items() if v is not None}
        if action in _PROBES and self.config.child_catalogs is None:
            probed = await self._probe(action, what, arguments, route)
            if probed is not None:
                return probed
        try:
            result: dict[str, Any] = await getattr(client, action)(**arguments)
        except ClientError as exc:
            if action in _CATALOG_APIS and _unknown_operation(exc):
                self._catalog_apis_missing(action)
            raise _glue_error(exc, what, **route) from None
        except BotoCoreError as exc:
            raise errors.ServiceUnavailableError(f"{what}: {type(exc).__name__}: {exc}") from None
        if action in _CATALOG_APIS:
            self._catalog_apis_seen = True
        return result

    async def _probe(
        self, action: str, what: str, arguments: dict[str, Any], route: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The first catalog read, sent once by a client that does not retry.

        An endpoint without the catalog APIs would otherwise be asked again through
        botocore's retries of its 500 (seconds on moto). Any other failure returns None:
        the read is then sent by the usual client, with its retries.
        """
        if self._catalog_apis_seen or self._no_catalog_apis:
            return None
        if self._probe_client is None:
            session = await self._session()
            async with self._open_lock:
                if self._probe_client is None and self._stack is not None:
                    once = BotocoreConfig(retries={"total_max_attempts": 1, "mode": "standard"})
                    self._probe_client = await self._stack.enter_async_context(
                        session.client(
                            "glue",
                            endpoint_url=self.config.endpoint,
                            region_name=self.config.region,
                            config=self._botocore_config().merge(once),
                        )
                    )
        if self._probe_client is None:
            return None
        try:
            result: dict[str, Any] = await getattr(self._probe_client, action)(**arguments)
        except ClientError as exc:
            if _unknown_operation(exc):
                self._catalog_apis_missing(action)
            if (exc.response.get("Error") or {}).get("Code") != "EntityNotFoundException":
                return None
            self._catalog_apis_seen = True
            raise _glue_error(exc, what, **route) from None
        except BotoCoreError:
            return None
        self._catalog_apis_seen = True
        return result

    @property
    def _child_catalogs(self) -> bool:
        """Child catalogs are namespace levels: configured, else unless found missing."""
        if self.config.child_catalogs is not None:
            return self.config.child_catalogs
        return not self._no_catalog_apis

    def _catalog_apis_missing(self, action: str) -> None:
        """Fall back to databases only (unless ``child_catalogs=true`` was asked for)."""
        if self.config.child_catalogs:
            return
        if not self._no_catalog_apis:
            self._no_catalog_apis = True
            logger.info(
                "glue endpoint %s does not support %s: child catalogs are off for this "
                "connection, namespaces are databases (set child_catalogs=false to skip "
                "the probe, true to never fall back)",
                self.config.endpoint or "<aws>",
                action,
            )
        raise _NoCatalogApis(f"the Glue endpoint does not support {action}")

    async def _pages(
        self, action: str, field: str, what: str, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Every item of a Glue listing, following NextToken to the end."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = await self._call(action, what, NextToken=token, **kwargs)
            items.extend(page.get(field) or [])
            token = page.get("NextToken") or None
            if token is None:
                return items

    # -- identifiers ------------------------------------------------------------------

    async def _root_catalog(self) -> str:
        """The starting catalog's id (the account id when ``catalog_id`` is unset)."""
        if self._account is None:
            session = await self._session()
            async with session.client(
                "sts",
                endpoint_url=self._sts_endpoint(),
                region_name=self.config.region,
                config=self._botocore_config(),
            ) as sts:
                identity = await self._aws(sts.get_caller_identity(), "GetCallerIdentity")
            self._account = str(identity["Account"])
        return self._account

    async def _child_id(self, path: Identifier) -> str:
        return f"{await self._root_catalog()}:{'/'.join(path)}"

    async def _catalog_exists(self, path: Identifier) -> bool:
        if not path:
            return True
        catalog_id = await self._child_id(path)
        if catalog_id in self._known_catalogs:
            return True
        try:
            await self._call(
                "get_catalog",
                f"GetCatalog {'$'.join(path)}",
                CatalogId=catalog_id,
                not_found=errors.NamespaceNotFoundError,
            )
        except (errors.NamespaceNotFoundError, _NoCatalogApis):
            return False
        self._known_catalogs.add(catalog_id)
        return True

    def _ids(self, body: Mapping[str, Any], what: str, *, allow_root: bool = True) -> Identifier:
        # storage_backed: default table locations are built from the names
        return validate_identifier(
            body.get("id"),
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=allow_root,
            what=what,
        )

    async def _catalog_of(self, path: Identifier) -> str | None:
        """The CatalogId of a catalog path (None: the default account catalog)."""
        if not path:
            return self.config.catalog_id
        if not self._child_catalogs:
            raise errors.InvalidInputError(
                "child catalogs are off (child_catalogs=false, or the endpoint lacks the "
                "catalog APIs): namespaces are databases"
            )
        if not await self._catalog_exists(path):
            raise errors.NamespaceNotFoundError(f"catalog {'$'.join(path)!r} not found")
        return await self._child_id(path)

    async def _database(self, path: Identifier) -> _Database:
        """A namespace that must be a database: child catalogs, then the database."""
        if not path:
            raise errors.InvalidInputError("tables live in a database, not in the root catalog")
        return _Database(await self._catalog_of(path[:-1]), path[-1], path)

    async def _kind(self, path: Identifier) -> str:
        """``catalog`` or ``database``: a child catalog of that name wins (seed 004)."""
        if not path:
            return "catalog"
        if self._child_catalogs and len(path) >= 1:
            await self._catalog_of(path[:-1])
            if await self._catalog_exists(path):
                return "catalog"
        return "database"

    # -- namespaces ------------------------------------------------------------------------

    async def _get_database(self, database: _Database, what: str) -> dict[str, Any]:
        answer = await self._call(
            "get_database",
            what,
            CatalogId=database.catalog_id,
            Name=database.name,
            not_found=errors.NamespaceNotFoundError,
        )
        return dict(answer.get("Database") or {})

    async def _namespace_parameters(self, path: Identifier, what: str) -> dict[str, str]:
        if await self._kind(path) == "catalog":
            if not path:
                return {}
            answer = await self._call(
                "get_catalog",
                what,
                CatalogId=await self._child_id(path),
                not_found=errors.NamespaceNotFoundError,
            )
            return dict((answer.get("Catalog") or {}).get("Parameters") or {})
        database = await self._get_database(await self._database(path), what)
        return dict(database.get("Parameters") or {})

    async def _create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        path = self._ids(request.to_dict(), "namespace id", allow_root=False)
        async with self._guard.filling(path[:-1]):
            return await self._create_namespace_guarded(request)

    async def _create_namespace_guarded(
        self, request: CreateNamespaceRequest
    ) -> CreateNamespaceResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id", allow_root=False)
        mode = parse_mode(body.get("mode"), CREATE_MODES, default="Create")
        parameters = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
        as_catalog = parameters.pop(NAMESPACE_TYPE, "database").lower() == "catalog"
        what = f"CreateNamespace {'$'.join(path)}"
        parent = await self._catalog_of(path[:-1])  # the parent must exist (seed 004)
        try:
            existing = await self._namespace_parameters(path, what)
        except errors.NamespaceNotFoundError:
            existing = None
        if existing is not None:
            if mode == "Create":
                raise errors.NamespaceAlreadyExistsError(f"{what}: it exists already")
            if mode == "ExistOk":
                return CreateNamespaceResponse.from_dict({"properties": existing})
            await self._drop_tree(path, what)
        if as_catalog:
            if not self._child_catalogs:
                raise errors.InvalidInputError(
                    "child catalogs are off (child_catalogs=false, or the endpoint lacks the "
                    "catalog APIs)"
                )
            await self._call(
                "create_catalog",
                what,
                Name="/".join(path),
                CatalogInput={"Parameters": parameters},
                exists=errors.NamespaceAlreadyExistsError,
            )
        else:
            await self._call(
                "create_database",
                what,
                CatalogId=parent,
                DatabaseInput={"Name": path[-1], "Parameters": parameters},
                not_found=errors.NamespaceNotFoundError,
                exists=errors.NamespaceAlreadyExistsError,
            )
        return CreateNamespaceResponse.from_dict({"properties": parameters})

    async def _list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id")
        what = f"ListNamespaces {'$'.join(path) or '<root>'}"
        names: list[str] = []
        if await self._kind(path) == "catalog":
            catalog_id = await self._catalog_of(path)
            databases = await self._pages(
                "get_databases", "DatabaseList", what, CatalogId=catalog_id
            )
            names += [str(d["Name"]) for d in databases if d.get("Name")]
            if self._child_catalogs:
                parent = catalog_id or await self._root_catalog()
                with contextlib.suppress(_NoCatalogApis):
                    children = await self._pages(
                        "get_catalogs", "CatalogList", what, ParentCatalogId=parent, Recursive=False
                    )
                    names += [str(c["Name"]).rsplit("/", 1)[-1] for c in children if c.get("Name")]
        else:
            await self._get_database(await self._database(path), what)  # databases are leaves
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListNamespacesResponse.from_dict({"namespaces": page, "page_token": token})

    async def _describe_namespace(
        self, request: DescribeNamespaceRequest
    ) -> DescribeNamespaceResponse:
        path = self._ids(request.to_dict(), "namespace id")
        parameters = await self._namespace_parameters(path, f"DescribeNamespace {'$'.join(path)}")
        return DescribeNamespaceResponse.from_dict({"properties": parameters})

    async def _namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        path = self._ids(request.to_dict(), "namespace id")
        await self._namespace_parameters(path, f"NamespaceExists {'$'.join(path)}")
        return NamespaceExistsResponse()

    async def _drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        path = self._ids(request.to_dict(), "namespace id", allow_root=False)
        async with self._guard.dropping(path):
            return await self._drop_namespace_guarded(request)

    async def _drop_namespace_guarded(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id", allow_root=False)
        mode = parse_mode(body.get("mode"), DROP_MODES, default="Fail")
        behavior = parse_mode(body.get("behavior"), DROP_BEHAVIORS, default="Restrict")
        what = f"DropNamespace {'$'.join(path)}"
        try:
            parameters = await self._namespace_parameters(path, what)
        except errors.NamespaceNotFoundError:
            if mode == "Skip":
                return DropNamespaceResponse.from_dict({})
            raise
        if behavior == "Cascade":
            await self._drop_tree(path, what)
        else:
            await self._drop_one(path, what)
        return DropNamespaceResponse.from_dict({"properties": parameters})

    async def _children(self, path: Identifier, what: str) -> tuple[list[str], list[str]]:
        """(databases, child catalogs) of a catalog namespace."""
        catalog_id = await self._catalog_of(path)
        databases = await self._pages("get_databases", "DatabaseList", what, CatalogId=catalog_id)
        catalogs: list[dict[str, Any]] = []
        if self._child_catalogs:
            with contextlib.suppress(_NoCatalogApis):
                catalogs = await self._pages(
                    "get_catalogs",
                    "CatalogList",
                    what,
                    ParentCatalogId=catalog_id or await self._root_catalog(),
                    Recursive=False,
                )
        return (
            [str(d["Name"]) for d in databases],
            [str(c["Name"]).rsplit("/", 1)[-1] for c in catalogs],
        )

    async def _drop_one(self, path: Identifier, what: str) -> None:
        """Restrict: verified empty before anything is deleted (seed 004)."""
        if await self._kind(path) == "catalog":
            databases, catalogs = await self._children(path, what)
            if databases or catalogs:
                raise errors.NamespaceNotEmptyError(
                    f"{what}: holds {len(databases)} database(s) and {len(catalogs)} catalog(s)"
                )
            catalog_id = await self._child_id(path)
            await self._call(
                "delete_catalog",
                what,
                CatalogId=catalog_id,
                not_found=errors.NamespaceNotFoundError,
            )
            self._known_catalogs.discard(catalog_id)
            return
        database = await self._database(path)
        tables = await self._pages(
            "get_tables",
            "TableList",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            not_found=errors.NamespaceNotFoundError,
        )
        if tables:
            raise errors.NamespaceNotEmptyError(f"{what}: holds {len(tables)} table(s)")
        await self._call(
            "delete_database",
            what,
            CatalogId=database.catalog_id,
            Name=database.name,
            not_found=errors.NamespaceNotFoundError,
        )

    async def _drop_tree(self, path: Identifier, what: str) -> None:
        """Cascade: Lance tables (with data) and children; a foreign table stops it."""
        if await self._kind(path) == "catalog":
            databases, catalogs = await self._children(path, what)
            for name in catalogs:
                await self._drop_tree((*path, name), what)
            for name in databases:
                await self._drop_tree((*path, name), what)
            await self._drop_one(path, what)
            return
        database = await self._database(path)
        tables = await self._pages(
            "get_tables",
            "TableList",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            not_found=errors.NamespaceNotFoundError,
        )
        foreign = [str(t.get("Name")) for t in tables if not _is_lance(t)]
        if foreign:
            raise errors.NamespaceNotEmptyError(
                f"{what}: holds tables that are not Lance tables: {', '.join(foreign)}"
            )
        for table in tables:
            await self._purge(database, table, what)
        await self._drop_one(path, what)

    # -- tables --------------------------------------------------------------------------------

    async def _table_ref(self, body: Mapping[str, Any]) -> tuple[_Database, str]:
        parts = self._ids(body, "table id", allow_root=False)
        if len(parts) < 2:
            raise errors.InvalidInputError("a Glue table id is [catalog..., database, table]")
        return await self._database(parts[:-1]), parts[-1]

    async def _get_table(self, database: _Database, name: str, what: str) -> dict[str, Any]:
        answer = await self._call(
            "get_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            Name=name,
            not_found=errors.TableNotFoundError,
        )
        return dict(answer.get("Table") or {})

    async def _get_lance_table(self, database: _Database, name: str, what: str) -> dict[str, Any]:
        table = await self._get_table(database, name, what)
        if not _is_lance(table):
            raise errors.InvalidInputError(f"{what}: {name!r} is not a Lance table")
        return table

    async def _create_catalog_entry(
        self,
        database: _Database,
        name: str,
        location: str,
        parameters: dict[str, str],
        what: str,
        columns: list[dict[str, str]] | None = None,
    ) -> None:
        await self._call(
            "create_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            TableInput=_table_input(name, location, parameters, columns),
            not_found=errors.NamespaceNotFoundError,
            exists=errors.TableAlreadyExistsError,
        )

    async def _schema_changed(self, table: StorageTable, dataset: Any) -> None:
        """Keep ``StorageDescriptor.Columns`` the table's, so Athena and Spark-on-Glue
        users see the real columns after an added, altered or dropped column."""
        database, name = await self._table_ref({"id": table.id})
        what = f"update the columns of {'$'.join((*database.path, name))}"
        stored = await self._get_lance_table(database, name, what)
        location = str((stored.get("StorageDescriptor") or {}).get("Location") or "")
        parameters = {str(k): str(v) for k, v in (stored.get("Parameters") or {}).items()}
        await self._call(
            "update_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            TableInput=_table_input(name, location, parameters, _glue_columns(dataset.schema)),
            not_found=errors.TableNotFoundError,
        )

    async def _list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        body = request.to_dict()
        path = self._ids(body, "namespace id")
        what = f"ListTables {'$'.join(path) or '<root>'}"
        names: list[str] = []
        if await self._kind(path) == "database":
            database = await self._database(path)
            await self._get_database(database, what)  # seed 004: verify it exists
            tables = await self._pages(
                "get_tables",
                "TableList",
                what,
                CatalogId=database.catalog_id,
                DatabaseName=database.name,
                not_found=errors.NamespaceNotFoundError,
            )
            names = [str(t["Name"]) for t in tables if t.get("Name") and _is_lance(t)]
        page, token = page_of(names, body.get("page_token"), body.get("limit"))
        return ListTablesResponse.from_dict({"tables": page, "page_token": token})

    async def _declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        parts = self._ids(request.to_dict(), "table id", allow_root=False)
        async with self._guard.filling(parts[:-1]):
            return await self._declare_table_guarded(request)

    async def _declare_table_guarded(self, request: DeclareTableRequest) -> DeclareTableResponse:
        body = request.to_dict()
        database, name = await self._table_ref(body)
        what = f"DeclareTable {'$'.join((*database.path, name))}"
        await self._get_database(database, what)  # seed 004: verify the parent
        location = body.get("location") or self._default_location(database, name)
        parameters = lance_parameters(body.get("properties"))
        await refuse_existing_table(self, (*database.path, name))
        await self.tables.check_placement(
            location,
            require_table=False,
            claims=self._claims(database, name),
            what=f"{what}: location",
        )
        await self._create_catalog_entry(database, name, location, parameters, what)
        return DeclareTableResponse.from_dict(
            {
                "location": location,
                "storage_options": self.tables.options_for(parameters),
                "properties": parameters,
            }
        )

    async def _register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        parts = self._ids(request.to_dict(), "table id", allow_root=False)
        async with self._guard.filling(parts[:-1]):
            return await self._register_table_guarded(request)

    async def _register_table_guarded(self, request: RegisterTableRequest) -> RegisterTableResponse:
        body = request.to_dict()
        database, name = await self._table_ref(body)
        location = body.get("location")
        if not isinstance(location, str) or not location.strip():
            raise errors.InvalidInputError("RegisterTable needs a non-empty location")
        mode = parse_mode(body.get("mode"), REGISTER_MODES, default="Create")
        what = f"RegisterTable {'$'.join((*database.path, name))}"
        if mode == "Create":  # a taken name is TableAlreadyExists, whatever the location
            await refuse_existing_table(self, (*database.path, name))
        dataset = await self.tables.check_placement(
            location,
            require_table=True,
            claims=self._claims(database, name),
            what=f"{what}: location",
        )
        parameters = lance_parameters(body.get("properties"))
        if mode == "Overwrite":
            with contextlib.suppress(errors.TableNotFoundError):
                await self._deregister(database, name, what)
        columns = _glue_columns(dataset.schema)
        await self._create_catalog_entry(database, name, location, parameters, what, columns)
        return RegisterTableResponse.from_dict({"location": location, "properties": parameters})

    async def _describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        body = request.to_dict()
        database, name = await self._table_ref(body)
        what = f"DescribeTable {'$'.join((*database.path, name))}"
        table = await self._get_lance_table(database, name, what)
        parameters = {str(k): str(v) for k, v in (table.get("Parameters") or {}).items()}
        location = str((table.get("StorageDescriptor") or {}).get("Location") or "")
        result: dict[str, Any] = {
            "table": name,
            "namespace": list(database.path),
            "location": location,
            "storage_options": self.tables.options_for(parameters),
            "properties": parameters,
        }
        await self.tables.complete(result, body, location, body.get("version"))
        return DescribeTableResponse.from_dict(result)

    async def _table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        if isinstance(request.to_dict().get("version"), int):  # that version must exist too
            body = request.to_dict()
            await self._describe_table(
                DescribeTableRequest.from_dict({"id": body.get("id"), "version": body["version"]})
            )
            return TableExistsResponse()
        database, name = await self._table_ref(request.to_dict())
        await self._get_lance_table(
            database, name, f"TableExists {'$'.join((*database.path, name))}"
        )
        return TableExistsResponse()

    async def _deregister(self, database: _Database, name: str, what: str) -> dict[str, Any]:
        table = await self._get_lance_table(database, name, what)
        await self._call(
            "delete_table",
            what,
            CatalogId=database.catalog_id,
            DatabaseName=database.name,
            Name=name,
            not_found=errors.TableNotFoundError,
        )
        return table

    async def _deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        database, name = await self._table_ref(request.to_dict())
        table = await self._deregister(
            database, name, f"DeregisterTable {'$'.join((*database.path, name))}"
        )
        return DeregisterTableResponse.from_dict(
            {
                "id": [*database.path, name],
                "location": (table.get("StorageDescriptor") or {}).get("Location"),
                "properties": table.get("Parameters") or {},
            }
        )

    async def _purge(self, database: _Database, table: Mapping[str, Any], what: str) -> None:
        """Data first: a failed delete leaves the table registered, never orphaned data."""
        location = str((table.get("StorageDescriptor") or {}).get("Location") or "")
        name = str(table["Name"])
        if location:
            await self.tables.drop_data(
                location,
                self.tables.options_for(table.get("Parameters") or {}),
                default_location=self._default_location(database, name),
                claims=self._claims(database, name),
            )
        await self._deregister(database, name, what)

    async def _creation_location(self, table: list[str]) -> str:
        database, name = await self._table_ref({"id": table})
        return self._default_location(database, name)

    def _default_location(self, database: _Database, name: str) -> str:
        return "/".join((self.root, *database.path, name))

    def _claims(self, database: _Database, name: str) -> Claims:
        """Other tables at a place below the root, by the default layout."""
        return catalog_claims(self, self.tables, (*database.path, name), shortest=2)

    async def _drop_table(self, request: DropTableRequest) -> DropTableResponse:
        database, name = await self._table_ref(request.to_dict())
        what = f"DropTable {'$'.join((*database.path, name))}"
        table = await self._get_lance_table(database, name, what)
        await self._purge(database, table, what)
        return DropTableResponse.from_dict(
            {
                "id": [*database.path, name],
                "location": (table.get("StorageDescriptor") or {}).get("Location"),
                "properties": table.get("Parameters") or {},
            }
        )

    async def _rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """Glue has no rename: create the new entry (conflict-checked), then drop the old."""
        body = request.to_dict()
        database, name = await self._table_ref(body)
        new_name = body.get("new_table_name")
        target_name = validate_identifier(
            [new_name] if isinstance(new_name, str) else new_name,
            delimiter=self.delimiter,
            storage_backed=True,
            allow_root=False,
            what="new_table_name",
        )[0]
        new_parent = body.get("new_namespace_id")
        target = (
            await self._database(
                self._ids({"id": new_parent}, "new_namespace_id", allow_root=False)
            )
            if new_parent is not None
            else database
        )
        what = f"RenameTable {'$'.join((*database.path, name))}"
        table = await self._get_lance_table(database, name, what)
        await self._get_database(target, what)
        location = str((table.get("StorageDescriptor") or {}).get("Location") or "")
        parameters = {str(k): str(v) for k, v in (table.get("Parameters") or {}).items()}
        columns = (table.get("StorageDescriptor") or {}).get("Columns")
        async with self._guard.filling(target.path):
            await self._create_catalog_entry(
                target, target_name, location, parameters, what, columns
            )
        try:
            await self._call(
                "delete_table",
                what,
                CatalogId=database.catalog_id,
                DatabaseName=database.name,
                Name=name,
                not_found=errors.TableNotFoundError,
            )
        except BaseException:
            with contextlib.suppress(errors.LanceNamespaceError):
                await self._call(
                    "delete_table",
                    what,
                    CatalogId=target.catalog_id,
                    DatabaseName=target.name,
                    Name=target_name,
                )
            raise
        return RenameTableResponse()


def _glue_error(
    exc: ClientError,
    what: str,
    *,
    not_found: type[errors.LanceNamespaceError] = errors.InternalError,
    exists: type[errors.LanceNamespaceError] = errors.ConcurrentModificationError,
) -> errors.LanceNamespaceError:
    error = exc.response.get("Error") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or "")
    text = f"{what}: {message}" if message else f"{what}: {code}"
    if code == "EntityNotFoundException":
        return not_found(text)
    if code in ("AlreadyExistsException", "ResourceAlreadyExistsException"):
        # botocore retries every call (creates too) after resets, timeouts and 5xx:
        # the earlier attempt may have created what the retry finds
        retried = int((exc.response.get("ResponseMetadata") or {}).get("RetryAttempts") or 0)
        return flag_ambiguous(exists(text), retried > 0)
    cls = _GLUE_CODES.get(code)
    if cls is not None:
        return cls(text)
    status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 500)
    if status in (502, 503, 504):
        return errors.ServiceUnavailableError(text)
    if status == 429:
        return errors.ThrottlingError(text)
    if 400 <= status < 500:
        return errors.InvalidInputError(text)
    return errors.InternalError(text)
