"""One namespace instance's connection to Glue: session, credentials, retries, calls.

Seed 004's authentication: the default AWS credential chain, static or session
credentials, or an assumed role whose credentials refresh before they expire without
blocking other calls (aiobotocore's refreshable credentials). One aioboto3 client per
instance, owned by an async exit stack; botocore's own retry (standard mode,
``max_retries``) and timeouts apply, and every failure becomes a typed error
(:mod:`._errors`).

Whether the endpoint has the catalog APIs is learned here too, because it is learned
from the answers: the first catalog call that an endpoint answers as an unknown
operation (moto answers an HTML page with status 500) turns child catalogs off for this
connection, logged once at INFO, unless ``child_catalogs`` was set.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio

from .. import errors
from .._core.observe import backend_call
from .._core.paging import PageTrail
from .._core.timeout import chosen_total
from ..errors import MissingDependencyError
from ._errors import NoCatalogApis, glue_error, unknown_operation
from ._properties import GlueConfig

try:
    import aioboto3
    from aiobotocore.config import AioConfig
    from botocore.exceptions import BotoCoreError, ClientError

    from ._session import AnswerTooLarge, bounded_session
except ImportError as _missing:  # pragma: no cover - exercised without the extra only
    raise MissingDependencyError.for_extra("impl 'glue'", "glue", _missing) from _missing

__all__ = ["GlueClient"]

T = TypeVar("T")

logger = logging.getLogger("lance_namespace_async.glue")
#: the catalog APIs a Glue-compatible metastore may lack (moto 5 does)
_CATALOG_APIS = frozenset({"get_catalog", "get_catalogs", "create_catalog", "delete_catalog"})
#: the reads among them that find out, sent once (see ``GlueClient._probe``)
_PROBES = frozenset({"get_catalog", "get_catalogs"})


class GlueClient:
    """The Glue (and STS) calls of one namespace instance; opened on first use."""

    def __init__(self, config: GlueConfig) -> None:
        self.config = config
        self._stack: AsyncExitStack | None = None
        self._client: Any = None
        self._session_obj: Any = None
        self._open_lock = anyio.Lock()
        #: found out on this connection: the endpoint answers catalog calls as unknown
        self._no_catalog_apis = False
        #: ... or it answered one as Glue does: no more probing
        self._catalog_apis_seen = False
        self._probe_client: Any = None

    async def aclose(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    # -- session and credentials (seed 004: Authentication) -------------------------------

    def _botocore_config(self, attempts: int | None = None) -> AioConfig:
        """botocore's settings for our clients (AioConfig's ``merge`` would drop the
        session class, so a variant is made here, not merged)."""
        return AioConfig(
            http_session_cls=bounded_session(self.config.max_response_bytes),
            # total_max_attempts counts the first try; botocore's max_attempts would not
            retries={
                "total_max_attempts": attempts or self.config.max_retries + 1,
                "mode": "standard",
            },
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

    async def caller_account(self) -> str:
        """The caller's AWS account id (STS GetCallerIdentity)."""
        session = await self._session()
        async with session.client(
            "sts",
            endpoint_url=self._sts_endpoint(),
            region_name=self.config.region,
            config=self._botocore_config(),
        ) as sts:
            identity = await self._aws(sts.get_caller_identity(), "GetCallerIdentity")
        return str(identity["Account"])

    # -- calls -------------------------------------------------------------------------------

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
        """Await a botocore call within its deadline; its errors become ours (``route``
        types not-found/exists)."""
        with backend_call("glue", "aws", "aws", what):
            return await self._bounded(self._typed(call, what, route), what)

    async def _bounded(self, call: Awaitable[T], what: str) -> T:
        """``call`` within the call's deadline and answer size limit."""
        total = chosen_total(self.config.call_timeout / 1000)
        with anyio.move_on_after(total):
            try:
                return await call
            except AnswerTooLarge as exc:
                raise errors.InternalError(
                    f"{what}: {exc}; raise that key if the catalog really sends such answers"
                ) from None
        raise errors.ServiceUnavailableError(
            f"{what}: timed out (the call's deadline of {total:g} s passed)"
        )

    @staticmethod
    async def _typed(call: Any, what: str, route: dict[str, Any]) -> Any:
        try:
            return await call
        except ClientError as exc:
            raise glue_error(exc, what, **route) from None
        except BotoCoreError as exc:
            raise errors.ServiceUnavailableError(f"{what}: {type(exc).__name__}: {exc}") from None

    async def call(self, action: str, what: str, **kwargs: Any) -> dict[str, Any]:
        """One Glue call (``None`` arguments left out) within its deadline: botocore's
        timeouts bound each wait, ``call_timeout`` (or the caller's ``timeout=``) the whole
        call, its retries and any credentials it needs first. ``not_found=`` and
        ``exists=`` name the errors its EntityNotFound and AlreadyExists answers become."""
        with backend_call("glue", "glue", action, what):
            return await self._bounded(self._call(action, what, **kwargs), what)

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
            if action in _CATALOG_APIS and unknown_operation(exc):
                self._catalog_apis_missing(action)
            raise glue_error(exc, what, **route) from None
        except BotoCoreError as exc:
            raise errors.ServiceUnavailableError(f"{what}: {type(exc).__name__}: {exc}") from None
        if action in _CATALOG_APIS:
            self._catalog_apis_seen = True
        return result

    async def pages(
        self, action: str, field: str, what: str, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Every item of a Glue listing, following NextToken to the end."""
        items: list[dict[str, Any]] = []
        trail = PageTrail(what)
        token: str | None = None
        while True:
            page = await self.call(action, what, NextToken=token, **kwargs)
            items.extend(page.get(field) or [])
            token = trail.follow(page.get("NextToken"))
            if token is None:
                return items

    # -- whether the endpoint has the catalog APIs --------------------------------------------

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
                    self._probe_client = await self._stack.enter_async_context(
                        session.client(
                            "glue",
                            endpoint_url=self.config.endpoint,
                            region_name=self.config.region,
                            config=self._botocore_config(attempts=1),
                        )
                    )
        if self._probe_client is None:
            return None
        try:
            result: dict[str, Any] = await getattr(self._probe_client, action)(**arguments)
        except ClientError as exc:
            if unknown_operation(exc):
                self._catalog_apis_missing(action)
            if (exc.response.get("Error") or {}).get("Code") != "EntityNotFoundException":
                return None
            self._catalog_apis_seen = True
            raise glue_error(exc, what, **route) from None
        except BotoCoreError:
            return None
        self._catalog_apis_seen = True
        return result

    @property
    def child_catalogs(self) -> bool:
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
        raise NoCatalogApis(f"the Glue endpoint does not support {action}")
