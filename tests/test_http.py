"""The shared HTTP transport policy, at the HTTP level (respx): retries, auth, errors.

Driven through the rest backend, the transport's first user; iceberg and unity
use the same module. No server: respx answers in-process (the cases that need a
real socket, trickling and oversized answers, are in test_http_wire.py).
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import anyio
import httpx
import pytest
import respx

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._cli import main
from lance_namespace_async._core.timeout import Timeout
from lance_namespace_async._transport.calls import _CALL
from lance_namespace_async._transport.policy import _retry_after_seconds
from lance_namespace_async.rest import RestNamespace

URI = "http://catalog.test"
FAST = {"retry_backoff_ms": "1", "retry_max_backoff_ms": "5", "http_client": "httpx"}  # respx
LIST_A = f"{URI}/v1/namespace/a/table/list"


def rest(**properties: str) -> RestNamespace:
    namespace = lna.connect("rest", {"uri": URI, **FAST, **properties})
    assert isinstance(namespace, RestNamespace)
    return namespace


def tables(*names: str) -> httpx.Response:
    return httpx.Response(200, json={"tables": list(names)})


def error(status: int, code: int, message: str = "nope") -> httpx.Response:
    return httpx.Response(status, json={"code": code, "error": message})


# -- retries -------------------------------------------------------------------------


@respx.mock
async def test_a_503_burst_is_retried_until_success() -> None:
    route = respx.get(LIST_A).mock(side_effect=[httpx.Response(503)] * 3 + [tables("t")])
    async with rest() as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
    assert route.call_count == 4


@respx.mock
async def test_retries_stop_at_max_retries_with_the_typed_error() -> None:
    route = respx.get(LIST_A).mock(return_value=error(503, 17, "busy"))
    async with rest(max_retries="2") as ns:
        with pytest.raises(errors.ServiceUnavailableError) as caught:
            await ns.list_tables({"id": ["a"]})
    assert caught.value.code == 17
    assert route.call_count == 3


@pytest.mark.parametrize(
    ("status", "code", "error_class"),
    [
        (400, 13, errors.InvalidInputError),
        (404, 1, errors.NamespaceNotFoundError),
        (409, 5, errors.TableAlreadyExistsError),
        (401, 16, errors.UnauthenticatedError),
        (403, 15, errors.PermissionDeniedError),
    ],
)
@respx.mock
async def test_other_4xx_are_never_retried(
    status: int, code: int, error_class: type[Exception]
) -> None:
    route = respx.get(LIST_A).mock(return_value=error(status, code))
    async with rest() as ns:
        with pytest.raises(error_class):
            await ns.list_tables({"id": ["a"]})
    assert route.call_count == 1


@respx.mock
async def test_429_honours_retry_after_seconds() -> None:
    route = respx.get(LIST_A).mock(
        side_effect=[httpx.Response(429, headers={"Retry-After": "0.2"}), tables()]
    )
    async with rest() as ns:
        started = time.monotonic()
        await ns.list_tables({"id": ["a"]})
        waited = time.monotonic() - started
    assert route.call_count == 2
    assert waited >= 0.2


@respx.mock
async def test_retry_after_ms_wins_and_is_capped() -> None:
    route = respx.get(LIST_A).mock(
        side_effect=[
            httpx.Response(503, headers={"retry-after-ms": "50", "Retry-After": "30"}),
            httpx.Response(429, headers={"Retry-After": "3600"}),
            tables(),
        ]
    )
    async with rest(retry_after_max_ms="100") as ns:
        started = time.monotonic()
        await ns.list_tables({"id": ["a"]})
        waited = time.monotonic() - started
    assert route.call_count == 3
    assert 0.15 <= waited < 5, "an hour-long Retry-After is capped"


def test_retry_after_parses_http_dates() -> None:
    now = time.time()
    in_ten = email.utils.formatdate(now + 10, usegmt=True)
    assert 8 <= (_retry_after_seconds(httpx.Headers({"Retry-After": in_ten}), now) or 0) <= 11
    assert _retry_after_seconds(httpx.Headers({"Retry-After": "garbage"})) is None
    assert _retry_after_seconds(httpx.Headers({})) is None


@respx.mock
async def test_connection_errors_are_retried_for_every_call() -> None:
    route = respx.post(f"{URI}/v1/namespace/a/create").mock(
        side_effect=[httpx.ConnectError("refused"), httpx.Response(200, json={})]
    )
    async with rest() as ns:
        await ns.create_namespace({"id": ["a"]})
    assert route.call_count == 2


@respx.mock
async def test_read_timeouts_are_retried_only_for_idempotent_calls() -> None:
    listing = respx.get(LIST_A).mock(side_effect=[httpx.ReadTimeout("slow"), tables("t")])
    create = respx.post(f"{URI}/v1/namespace/a/create").mock(side_effect=httpx.ReadTimeout("slow"))
    async with rest() as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
        with pytest.raises(errors.ServiceUnavailableError, match="timed out"):
            await ns.create_namespace({"id": ["a"]})
    assert listing.call_count == 2
    assert create.call_count == 1, "a create is not re-sent after it may have been applied"


@respx.mock
async def test_connection_reset_is_retried_for_reads_not_for_creates() -> None:
    listing = respx.get(LIST_A).mock(side_effect=[httpx.ReadError("reset"), tables()])
    declare = respx.post(f"{URI}/v1/table/a$t/declare").mock(side_effect=httpx.ReadError("reset"))
    async with rest() as ns:
        await ns.list_tables({"id": ["a"]})
        with pytest.raises(errors.ServiceUnavailableError):
            await ns.declare_table({"id": ["a", "t"]})
    assert listing.call_count == 2
    assert declare.call_count == 1


@respx.mock
async def test_an_ambiguous_create_that_then_exists_says_so() -> None:
    """A 502 may hide an applied create: its retry's 409 is flagged, not a bare failure."""
    respx.post(f"{URI}/v1/namespace/a/create").mock(
        side_effect=[httpx.Response(502, text="<html>bad gateway</html>"), error(409, 2, "a")]
    )
    async with rest() as ns:
        with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
            await ns.create_namespace({"id": ["a"]})
    assert caught.value.retried_ambiguously is True
    assert "may have created it" in str(caught.value)


@respx.mock
async def test_a_plain_409_is_not_flagged() -> None:
    respx.post(f"{URI}/v1/namespace/a/create").mock(return_value=error(409, 2, "a"))
    async with rest() as ns:
        with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
            await ns.create_namespace({"id": ["a"]})
    assert caught.value.retried_ambiguously is False


# -- errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, errors.InvalidInputError),
        (401, errors.UnauthenticatedError),
        (403, errors.PermissionDeniedError),
        (404, errors.TableNotFoundError),
        (409, errors.ConcurrentModificationError),
        (429, errors.ThrottlingError),
        (500, errors.InternalError),
        (502, errors.InternalError),
        (503, errors.ServiceUnavailableError),
    ],
)
@respx.mock
async def test_a_non_json_error_body_is_still_typed(status: int, error_class: type) -> None:
    respx.post(url__regex=rf"{URI}/v1/table/.*/describe.*").mock(
        return_value=httpx.Response(status, text="<html><body>proxy error</body></html>")
    )
    async with rest(max_retries="0") as ns:
        with pytest.raises(error_class) as caught:
            await ns.describe_table({"id": ["a", "t"]})
    assert type(caught.value) is error_class
    assert f"HTTP {status}" in str(caught.value)


@respx.mock
async def test_the_error_code_in_the_body_decides_over_the_status() -> None:
    respx.post(url__regex=rf"{URI}/v1/table/.*/describe.*").mock(
        return_value=error(400, 11, "no such version")
    )
    async with rest() as ns:
        with pytest.raises(errors.TableVersionNotFoundError, match="no such version"):
            await ns.describe_table({"id": ["a", "t"], "version": 9})


@respx.mock
async def test_404_without_a_code_is_not_found_by_route() -> None:
    respx.get(LIST_A).mock(return_value=httpx.Response(404))
    respx.post(url__regex=rf"{URI}/v1/table/.*/exists").mock(return_value=httpx.Response(404))
    async with rest() as ns:
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.list_tables({"id": ["a"]})
        with pytest.raises(errors.TableNotFoundError):
            await ns.table_exists({"id": ["a", "t"]})


@respx.mock
async def test_a_malformed_success_body_is_internal_not_a_crash() -> None:
    respx.get(LIST_A).mock(return_value=httpx.Response(200, text="not json"))
    async with rest() as ns:
        with pytest.raises(errors.InternalError):
            await ns.list_tables({"id": ["a"]})


# -- auth, headers, timeouts ------------------------------------------------------------


@respx.mock
async def test_bearer_api_key_and_extra_headers_are_sent() -> None:
    route = respx.get(LIST_A).mock(return_value=tables())
    async with rest(auth_token="tok-1", api_key="key-1", **{"header.X-Tenant": "blue"}) as ns:
        await ns.list_tables({"id": ["a"]})
    sent = route.calls.last.request.headers
    assert sent["authorization"] == "Bearer tok-1"
    assert sent["x-api-key"] == "key-1"
    assert sent["x-tenant"] == "blue"


@respx.mock
async def test_request_context_headers_are_sent() -> None:
    route = respx.get(LIST_A).mock(return_value=tables())
    async with rest() as ns:
        await ns.list_tables({"id": ["a"], "context": {"header.X-Trace": "t-9", "other": "x"}})
    sent = route.calls.last.request.headers
    assert sent["x-trace"] == "t-9"
    assert "other" not in sent


@respx.mock
async def test_response_headers_come_back_as_context() -> None:
    respx.get(LIST_A).mock(
        return_value=httpx.Response(200, json={"tables": []}, headers={"x-request-id": "r-1"})
    )
    respx.post(f"{URI}/v1/table/a$t/exists").mock(
        return_value=httpx.Response(200, headers={"x-request-id": "r-2"})
    )
    respx.get(f"{URI}/v1/table").mock(
        return_value=httpx.Response(200, json={"tables": []}, headers={"x-request-id": "r-3"})
    )
    async with rest() as ns:
        listed = await ns.list_tables({"id": ["a"]})
        exists = await ns.table_exists({"id": ["a", "t"]})
        everything = await ns.list_all_tables()
    assert everything.context.additional_properties["header.x-request-id"] == "r-3"
    assert listed.context.additional_properties["header.x-request-id"] == "r-1"
    assert exists.context.additional_properties["header.x-request-id"] == "r-2"


@respx.mock
async def test_a_static_token_401_is_unauthenticated_without_retry() -> None:
    route = respx.get(LIST_A).mock(return_value=error(401, 16, "expired"))
    async with rest(auth_token="tok") as ns:
        with pytest.raises(errors.UnauthenticatedError):
            await ns.list_tables({"id": ["a"]})
    assert route.call_count == 1


def token_endpoint(counter: list[int], *, lifetime: int = 3600, delay: float = 0.0) -> Any:
    async def respond(request: httpx.Request) -> httpx.Response:
        form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
        assert form["grant_type"] == "client_credentials"
        assert form["client_id"] == "cid"
        assert form["client_secret"] == "csecret"
        counter.append(1)
        if delay:
            await anyio.sleep(delay)
        return httpx.Response(
            200, json={"access_token": f"token-{len(counter)}", "expires_in": lifetime}
        )

    return respond


OAUTH = {"credential": "cid:csecret", "oauth2_server_uri": f"{URI}/oauth/tokens"}


@respx.mock
async def test_one_thousand_concurrent_first_calls_make_one_token_request() -> None:
    issued: list[int] = []
    respx.post(f"{URI}/oauth/tokens").mock(side_effect=token_endpoint(issued, delay=0.05))
    route = respx.get(LIST_A).mock(return_value=tables())
    async with rest(**OAUTH) as ns, anyio.create_task_group() as group:
        for _ in range(1000):
            group.start_soon(ns.list_tables, {"id": ["a"]})
    assert len(issued) == 1
    assert route.call_count == 1000
    assert {c.request.headers["authorization"] for c in route.calls} == {"Bearer token-1"}


@respx.mock
async def test_a_401_refreshes_the_token_once_and_retries() -> None:
    issued: list[int] = []
    respx.post(f"{URI}/oauth/tokens").mock(side_effect=token_endpoint(issued))

    def answer(request: httpx.Request) -> httpx.Response:
        if request.headers["authorization"] == "Bearer token-1":
            return error(401, 16, "token expired")
        return tables("t")

    route = respx.get(LIST_A).mock(side_effect=answer)
    async with rest(**OAUTH) as ns:
        assert (await ns.list_tables({"id": ["a"]})).tables == ["t"]
    assert len(issued) == 2
    assert route.call_count == 2


@respx.mock
async def test_tokens_expiring_in_the_middle_of_a_crawl_are_refreshed() -> None:
    """The server expires each token after five uses; the crawl still sees everything."""
    issued: list[int] = []
    respx.post(f"{URI}/oauth/tokens").mock(side_effect=token_endpoint(issued))
    uses: dict[str, int] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        token = request.headers["authorization"].removeprefix("Bearer ")
        uses[token] = uses.get(token, 0) + 1
        if uses[token] > 5:
            return error(401, 16, "expired")
        namespace = request.url.path.split("/")[3]
        if request.url.path.endswith("/table/list"):
            return tables() if namespace == "$" else tables("t0", "t1", "t2")
        children = [f"n{i}" for i in range(5)] if namespace == "$" else []
        return httpx.Response(200, json={"namespaces": children})

    respx.get(url__regex=rf"{URI}/v1/namespace/.*").mock(side_effect=answer)
    async with rest(**OAUTH) as ns:
        found = [t.id async for t in lna.crawl(ns, concurrency=4)]
    assert len(found) == 15
    assert len(issued) >= 2, "expired tokens were refreshed"


@respx.mock
async def test_a_failing_token_endpoint_is_unauthenticated_without_leaking_the_secret() -> None:
    respx.post(f"{URI}/oauth/tokens").mock(return_value=httpx.Response(401, json={"error": "no"}))
    async with rest(**OAUTH) as ns:
        with pytest.raises(errors.UnauthenticatedError) as caught:
            await ns.list_tables({"id": ["a"]})
    assert "csecret" not in str(caught.value)
    assert "csecret" not in repr(ns)
    assert "csecret" not in repr(ns.transport.oauth)


@respx.mock
async def test_per_call_timeout_overrides_the_configured_one() -> None:
    seen: list[dict[str, float | None]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return tables()

    respx.get(LIST_A).mock(side_effect=answer)
    async with rest(connect_timeout="1500", read_timeout="2500") as ns:
        await ns.list_tables({"id": ["a"]})
        await ns.list_tables({"id": ["a"]}, timeout=0.5)
        await ns.list_tables({"id": ["a"]}, timeout=Timeout(connect=1, read=9))
        await ns.list_tables({"id": ["a"]}, timeout=None)
    assert seen[0]["connect"] == 1.5
    assert seen[0]["read"] == 2.5
    assert seen[1]["read"] == 0.5
    assert seen[2]["read"] == 9
    assert seen[3]["read"] is None


async def test_bad_timeouts_are_invalid_input() -> None:
    async with rest() as ns:
        for bad in (0, -1, "5", True, float("nan"), Timeout(total=0), Timeout(total="5")):  # type: ignore[arg-type]
            with pytest.raises(errors.InvalidInputError):
                await ns.list_tables({"id": ["a"]}, timeout=bad)  # type: ignore[arg-type]


@respx.mock
async def test_every_call_has_a_deadline_unless_the_caller_asks_for_none() -> None:
    """call_timeout (60 s by default) bounds a call; timeout= sets it, None removes it."""
    left: list[float | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        state = _CALL.get()
        assert state is not None
        left.append(None if state.deadline is None else state.deadline - anyio.current_time())
        return tables()

    respx.get(LIST_A).mock(side_effect=answer)
    async with rest() as ns:
        await ns.list_tables({"id": ["a"]})
        await ns.list_tables({"id": ["a"]}, timeout=2)
        await ns.list_tables({"id": ["a"]}, timeout=Timeout(read=9))  # total left out: config's
        await ns.list_tables({"id": ["a"]}, timeout=Timeout(read=9, total=5))
        await ns.list_tables({"id": ["a"]}, timeout=None)
    assert rest().config.call_timeout == 60000
    assert [None if x is None else round(x) for x in left] == [60, 2, 60, 5, None]


@respx.mock
async def test_a_retry_whose_wait_outlasts_the_deadline_is_not_made() -> None:
    """The server asks for 30 s; the call has 1 s: it ends at once with the server's answer."""
    route = respx.get(LIST_A).mock(
        return_value=httpx.Response(429, headers={"Retry-After": "30"}, json={"code": 21})
    )
    async with rest(call_timeout="1000") as ns:
        with pytest.raises(errors.ThrottlingError):
            await ns.list_tables({"id": ["a"]})
    assert route.call_count == 1


@respx.mock
async def test_an_oversized_answer_is_internal_and_names_the_key() -> None:
    """Content-Length over the limit is refused before reading (respx: httpx wire)."""
    route = respx.get(LIST_A).mock(return_value=httpx.Response(200, content=b"x" * 2048))
    async with rest(max_response_bytes="1024") as ns:
        with pytest.raises(errors.InternalError, match="max_response_bytes") as caught:
            await ns.list_tables({"id": ["a"]})
    assert caught.value.code == 18
    assert route.call_count == 1  # not retried
    assert rest().config.max_response_bytes == 64 * 1024 * 1024


@pytest.mark.parametrize(
    ("impl", "key", "other"),
    [
        ("rest", "uri", {"auth_token": "t"}),
        ("rest", "uri", {"credential": "id:s", "oauth2_server_uri": f"{URI}/t"}),
        ("rest", "uri", {"header.authorization": "Bearer x"}),
        ("iceberg", "endpoint", {"auth_token": "t"}),
        ("unity", "endpoint", {"auth_token": "t"}),
    ],
)
def test_a_url_password_and_another_authorization_are_invalid_input_naming_both(
    impl: str, key: str, other: dict[str, str]
) -> None:
    properties = {key: "http://user:pw-S3CRET@catalog.test", **other}
    with pytest.raises(errors.InvalidInputError) as caught:
        lna.connect(impl, properties)
    message = str(caught.value)
    assert f"'{key}'" in message
    assert f"'{next(iter(other))}'" in message
    assert "S3CRET" not in message


def test_a_token_endpoint_url_with_a_password_is_refused() -> None:
    with pytest.raises(errors.InvalidInputError, match="oauth2_server_uri"):
        rest(credential="id:s", oauth2_server_uri="http://id:S3CRET@auth.test/token")


@pytest.mark.parametrize("impl", ["iceberg", "unity"])
def test_url_passwords_are_masked_in_every_backend(impl: str) -> None:
    namespace = lna.connect(impl, {"endpoint": "http://user:pw-S3CRET@catalog.test"})
    for text in (repr(namespace), namespace.namespace_id(), repr(namespace.config)):
        assert "S3CRET" not in text
        assert "user:***@catalog.test" in text


def test_the_cli_config_shows_a_url_password_masked(capsys: pytest.CaptureFixture[str]) -> None:
    uri = "http://user:pw-S3CRET@catalog.test"
    code = main(["config", "--impl", "rest", "--prop", f"uri={uri}", "-o", "json"])
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert "S3CRET" not in shown.out + shown.err
    assert "http://user:***@catalog.test" in shown.out


# -- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "key"),
    [
        ({}, "uri"),
        ({"uri": "ftp://x"}, "uri"),
        ({"uri": URI, "max_retries": "-1"}, "max_retries"),
        ({"uri": URI, "read_timeout": "soon"}, "read_timeout"),
        ({"uri": URI, "credential": "no-colon"}, "credential"),
        ({"uri": URI, "tls.verify": "perhaps"}, "tls.verify"),
        ({"uri": URI, "call_timeout": "0"}, "call_timeout"),
        ({"uri": URI, "max_response_bytes": "lots"}, "max_response_bytes"),
        ({"uri": URI, "mystery": "1"}, "mystery"),
    ],
)
def test_configuration_errors_name_the_key(properties: dict[str, str], key: str) -> None:
    with pytest.raises(errors.InvalidInputError, match=key.replace(".", r"\.")):
        lna.connect("rest", properties)


def test_secrets_are_redacted_everywhere() -> None:
    namespace = rest(
        auth_token="S3CRET-T",
        api_key="S3CRET-K",
        credential="id:S3CRET-C",
        oauth2_server_uri=f"{URI}/oauth/tokens",
        **{"header.Authorization": "Bearer S3CRET-H"},
    )
    for text in (
        repr(namespace),
        repr(namespace.config),
        str(namespace.config.redacted_properties()),
    ):
        for secret in ("S3CRET-T", "S3CRET-K", "S3CRET-C", "S3CRET-H"):
            assert secret not in text


async def test_tls_verification_is_on_by_default() -> None:
    namespace = rest()
    client = namespace.transport.client()
    for shard in client._transport._inner.shards:  # type: ignore[attr-defined]
        assert shard._pool._ssl_context.verify_mode.name == "CERT_REQUIRED"
        assert shard._pool._ssl_context.check_hostname is True
    await namespace.aclose()


async def test_a_closed_namespace_refuses_calls() -> None:
    namespace = rest()
    await namespace.aclose()
    with pytest.raises(errors.InvalidInputError, match="closed"):
        await namespace.list_tables({"id": ["a"]})


async def test_unreachable_server_is_service_unavailable() -> None:
    async with lna.connect("rest", {"uri": "http://127.0.0.1:9", "max_retries": "1", **FAST}) as ns:
        with pytest.raises(errors.ServiceUnavailableError):
            await ns.list_namespaces()
