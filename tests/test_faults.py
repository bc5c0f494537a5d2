"""The fault matrix, end to end: real clients, a fault-injecting proxy, real servers.

tests/test_http.py checks the transport's policy at the HTTP level (respx); here the
same policy meets real servers through :class:`fault_proxy.FaultProxy`: our rest
client against our REST adapter and against pylance's Rust RestAdapter, the iceberg
and unity backends against their spec-checked test catalogs, and the glue backend
(botocore's own retries) against moto. The iceberg catalog is our look-alike
(tests/iceberg_rest_server.py, contract-checked): what is counted here ("applied once")
is read from its own catalog, which the Iceberg reference server (tests/test_iceberg.py)
does not expose.

Every case checks both sides. The client: the call succeeds within its retries or
raises exactly the typed error the design names. The server: how many creates it
*applied* (a forwarded request it answered 200, from the proxy's record of the
upstream's own answers) and what its catalog holds afterwards, so "no operation is
applied twice" is proven, not assumed:

* 503 bursts and 429 (``Retry-After`` in seconds or ``retry-after-ms``) are retried
  for every call: the create is applied once;
* a reset before the request is forwarded: reads are retried; an HTTP create is
  not (the client cannot know it was not applied) and raises ServiceUnavailable (17)
  with nothing applied;
* a reset after forwarding, or a read timeout: the create *was* applied; it is not
  re-sent blindly and raises ServiceUnavailable (17); applied once;
* a 502/504 after forwarding: re-sent by design (a gateway error), the retry finds
  the object and raises AlreadyExists with ``retried_ambiguously=True``; applied once;
* glue: botocore retries every call after any of these; a retried create that finds
  its own object is AlreadyExists with ``retried_ambiguously=True``; applied once;
* expired OAuth2 tokens (the proxy plays an identity provider whose tokens die
  after 40 requests, long before their announced hour): refreshed and retried,
  nothing lost, nothing applied twice;
* crawls of a few hundred tables under a mix of all of these, and across a server
  restart: every table exactly once. Each prints a line the issue note can quote.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import botocore.retries.standard
import pytest
from conftest import SECRET_CANARY
from fault_proxy import AdapterServer, Fault, FaultProxy, Seen, fault_proxy, pylance_adapter
from glue_fixtures import REGION, glue_client, moto_glue, reset_moto, use_fake_aws_env
from iceberg_rest_server import IcebergCatalogServer, iceberg_catalog
from unity_server import UnityServer, unity_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.base import AsyncLanceNamespace
from lance_namespace_async.iceberg import DUMMY_SCHEMA

WH = "wh"
CATALOG = "main"
TOKEN = f"tok-{SECRET_CANARY}"
#: retries quick enough for tests, through the documented properties
FAST_RETRIES = {"max_retries": "4", "retry_backoff_ms": "1", "retry_max_backoff_ms": "20"}
READ_TIMEOUT_MS = 1000
DELAY_SECONDS = 2.5


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_env(monkeypatch)


@pytest.fixture
def botocore_without_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore retries without sleeping (glue has no backoff property; what is
    retried is unchanged). Our HTTP backends get theirs through properties."""
    monkeypatch.setattr(
        botocore.retries.standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.0
    )


# -- the backends behind the proxy ---------------------------------------------------------------


def target_is(method: str, predicate: Callable[[str], bool]) -> Callable[[Seen], bool]:
    return lambda seen: seen.method == method and predicate(seen.target.split("?")[0])


def glue_action(action: str) -> Callable[[Seen], bool]:
    return lambda seen: seen.header("x-amz-target") == f"AWSGlue.{action}"


@dataclass
class Backend:
    """One backend behind a proxy, and the server's own view of what it holds."""

    name: str
    impl: str
    proxy: FaultProxy
    properties: dict[str, str]  # through the proxy
    direct: dict[str, str]  # straight to the server, to read its state
    parent: list[str]
    is_create: Callable[[Seen], bool]
    is_list: Callable[[Seen], bool]
    #: a 429 as this server family sends it
    throttle_body: bytes = b""
    throttle_headers: dict[str, str] = field(default_factory=dict)
    restart: Callable[[], str] | None = None

    @property
    def botocore(self) -> bool:
        return self.impl == "glue"

    def connect(self, **extra: str) -> AsyncLanceNamespace:
        return lna.connect(self.impl, {**self.properties, **extra})

    def applied_creates(self) -> int:
        return len(self.proxy.forwarded(lambda s: self.is_create(s) and s.status == 200))

    def connect_direct(self) -> AsyncLanceNamespace:
        """A client straight to the server (no proxy), to set up and read its state."""
        return lna.connect(self.impl, self.direct)

    async def held(self, name: str, direct: AsyncLanceNamespace | None = None) -> int:
        """How many namespaces called ``name`` the server holds (read without the proxy)."""
        if direct is None:
            async with self.connect_direct() as ns:
                return await self.held(name, ns)
        return (await direct.list_namespaces({"id": self.parent})).namespaces.count(name)


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module")
def rest_backend(module_dir: Path) -> Iterator[Backend]:
    root = module_dir / "adapter"
    server = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}), auth_token=TOKEN)
    server.start()
    try:
        with fault_proxy(server.uri) as proxy:
            yield Backend(
                "rest",
                "rest",
                proxy,
                {"uri": proxy.uri, "auth_token": TOKEN, **FAST_RETRIES},
                {"uri": server.uri, "auth_token": TOKEN},
                [],
                target_is("POST", lambda p: p.endswith("/create")),
                target_is("GET", lambda p: p.endswith("/list")),
                restart=server.restart,
            )
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pylance_backend(module_dir: Path) -> Iterator[Backend]:
    with pylance_adapter(str(module_dir / "pylance")) as uri, fault_proxy(uri) as proxy:
        yield Backend(
            "rest-pylance",
            "rest",
            proxy,
            {"uri": proxy.uri, **FAST_RETRIES},
            {"uri": uri},
            [],
            target_is("POST", lambda p: p.endswith("/create")),
            target_is("GET", lambda p: p.endswith("/list")),
        )


@pytest.fixture(scope="module")
def iceberg_server(module_dir: Path) -> Iterator[IcebergCatalogServer]:
    with iceberg_catalog(module_dir / "iceberg") as server:
        yield server


@pytest.fixture(scope="module")
def iceberg_backend(iceberg_server: IcebergCatalogServer, module_dir: Path) -> Iterator[Backend]:
    server = iceberg_server

    def restart() -> str:
        server.stop()
        server.start()
        return server.uri

    with fault_proxy(server.uri) as proxy:
        root = str(module_dir / "iceberg-lance")
        yield Backend(
            "iceberg",
            "iceberg",
            proxy,
            {"endpoint": proxy.uri, "root": root, **FAST_RETRIES},
            {"endpoint": server.uri, "root": root},
            [WH],
            target_is("POST", lambda p: p.endswith("/namespaces")),
            target_is("GET", lambda p: p.endswith("/namespaces")),
            restart=restart,
        )


@pytest.fixture(scope="module")
def unity_server() -> Iterator[UnityServer]:
    with unity_catalog(require_token=TOKEN) as server:
        server.add_catalog(CATALOG)
        yield server


@pytest.fixture(scope="module")
def unity_backend(unity_server: UnityServer, module_dir: Path) -> Iterator[Backend]:
    with fault_proxy(unity_server.uri) as proxy:
        root = str(module_dir / "unity-lance")
        yield Backend(
            "unity",
            "unity",
            proxy,
            {"endpoint": proxy.uri, "root": root, "auth_token": TOKEN, **FAST_RETRIES},
            {"endpoint": unity_server.uri, "root": root, "auth_token": TOKEN},
            [CATALOG],
            target_is("POST", lambda p: p.endswith("/schemas")),
            target_is("GET", lambda p: p.endswith("/schemas")),
        )


@pytest.fixture(scope="module")
def glue_server() -> Iterator[str]:
    with moto_glue() as endpoint:
        # moto keeps its resources per process, not per server: the crawls below count
        # every table of the catalog, so nothing an earlier module left may be there
        reset_moto(endpoint)
        yield endpoint


@pytest.fixture(scope="module")
def glue_backend(glue_server: str, module_dir: Path) -> Iterator[Backend]:
    common = {
        "region": REGION,
        "root": str(module_dir / "glue-lance"),
        "child_catalogs": "false",
        "access_key_id": "testing",
        "secret_access_key": f"testing-{SECRET_CANARY}",
    }
    with fault_proxy(glue_server) as proxy:
        yield Backend(
            "glue",
            "glue",
            proxy,
            {"endpoint": proxy.uri, "max_retries": "4", **common},
            {"endpoint": glue_server, **common},
            [],
            glue_action("CreateDatabase"),
            glue_action("GetDatabases"),
            throttle_body=json.dumps(
                {"__type": "ThrottlingException", "message": "Rate exceeded"}
            ).encode(),
            throttle_headers={
                "content-type": "application/x-amz-json-1.1",
                "x-amzn-errortype": "ThrottlingException",
            },
        )


BACKENDS = ["rest", "rest-pylance", "iceberg", "unity", "glue"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    fixture = {"rest-pylance": "pylance_backend"}.get(request.param, f"{request.param}_backend")
    chosen: Backend = request.getfixturevalue(fixture)
    if chosen.botocore:
        request.getfixturevalue("botocore_without_backoff")
    chosen.proxy.clear()
    yield chosen
    chosen.proxy.clear()


# -- the matrix ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A scripted fault, and what a create and a read must then do."""

    name: str
    inject: Callable[[Backend, Callable[[Seen], bool]], int]  # returns faults scripted
    http_create: tuple[type[errors.LanceNamespaceError] | None, int]  # (error, applied)
    glue_create: tuple[type[errors.LanceNamespaceError] | None, int]
    extra: dict[str, str] = field(default_factory=dict)  # client properties


def _burst(backend: Backend, match: Callable[[Seen], bool]) -> int:
    backend.proxy.fail_next(3, 503, match=match)
    return 3


def _throttle(
    headers: dict[str, str], count: int
) -> Callable[[Backend, Callable[[Seen], bool]], int]:
    def inject(backend: Backend, match: Callable[[Seen], bool]) -> int:
        body = backend.throttle_body or None
        backend.proxy.fail_next(
            count, 429, headers={**backend.throttle_headers, **headers}, body=body, match=match
        )
        return count

    return inject


def _reset(after: bool) -> Callable[[Backend, Callable[[Seen], bool]], int]:
    def inject(backend: Backend, match: Callable[[Seen], bool]) -> int:
        backend.proxy.reset_next(1, after_forwarding=after, match=match)
        return 1

    return inject


def _gateway(status: int) -> Callable[[Backend, Callable[[Seen], bool]], int]:
    def inject(backend: Backend, match: Callable[[Seen], bool]) -> int:
        backend.proxy.answer_after_forwarding(1, status, match=match)
        return 1

    return inject


def _slow(backend: Backend, match: Callable[[Seen], bool]) -> int:
    backend.proxy.delay_next(1, DELAY_SECONDS, match=match)
    return 1


UNAVAILABLE = errors.ServiceUnavailableError
EXISTS = errors.NamespaceAlreadyExistsError
SCENARIOS = [
    Scenario("503-burst", _burst, (None, 1), (None, 1)),
    Scenario("429-retry-after-ms", _throttle({"retry-after-ms": "30"}, 2), (None, 1), (None, 1)),
    Scenario("429-retry-after-1s", _throttle({"Retry-After": "1"}, 1), (None, 1), (None, 1)),
    Scenario("reset-before-forwarding", _reset(False), (UNAVAILABLE, 0), (None, 1)),
    Scenario("reset-after-forwarding", _reset(True), (UNAVAILABLE, 1), (EXISTS, 1)),
    Scenario("502-after-forwarding", _gateway(502), (EXISTS, 1), (EXISTS, 1)),
    Scenario("504-after-forwarding", _gateway(504), (EXISTS, 1), (EXISTS, 1)),
    Scenario(
        "read-timeout",
        _slow,
        (UNAVAILABLE, 1),
        (EXISTS, 1),
        {"read_timeout": str(READ_TIMEOUT_MS)},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_fault_matrix(
    backend: Backend, scenario: Scenario, request: pytest.FixtureRequest
) -> None:
    name = f"f{abs(hash(request.node.nodeid)) % 10**9}"
    proxy = backend.proxy
    async with backend.connect_direct() as direct, backend.connect(**scenario.extra) as ns:
        await direct.create_namespace({"id": [*backend.parent, f"{name}_seen"]})
        # a read: always survives (every read is retried)
        scripted = scenario.inject(backend, backend.is_list)
        listed = (await ns.list_namespaces({"id": backend.parent})).namespaces
        assert f"{name}_seen" in listed
        assert proxy.pending == 0
        assert sum(proxy.injected.values()) == scripted
        proxy.clear()

        # a create: succeeds, or raises exactly the designed error; never applied twice
        expected, applied = scenario.glue_create if backend.botocore else scenario.http_create
        scripted = scenario.inject(backend, backend.is_create)
        target = [*backend.parent, name]
        if expected is None:
            await ns.create_namespace({"id": target})
        else:
            with pytest.raises(errors.LanceNamespaceError) as caught:
                await ns.create_namespace({"id": target})
            error = caught.value
            assert type(error) is expected, repr(error)
            assert error.code == expected.code
            # AlreadyExists after an ambiguous retry says it may be this call's own doing
            assert error.retried_ambiguously is (expected is EXISTS)
        assert proxy.pending == 0, "the scripted fault was injected"
        assert sum(proxy.injected.values()) == scripted
        assert backend.applied_creates() == applied, "applied exactly as often as designed"
        assert await backend.held(name, direct) == applied, "the server holds it at most once"
        if expected is not None:
            # the caller's next step when unsure: check the object instead of guessing
            if applied:
                await direct.namespace_exists({"id": target})
            else:
                with pytest.raises(errors.NamespaceNotFoundError):
                    await direct.namespace_exists({"id": target})


async def test_create_with_exist_ok_survives_an_ambiguous_gateway_error(
    rest_backend: Backend,
) -> None:
    """The idempotent spelling of a create: a 502 after it was applied is a success."""
    rest_backend.proxy.clear()
    rest_backend.proxy.answer_after_forwarding(1, 502, match=rest_backend.is_create)
    async with rest_backend.connect() as ns:
        await ns.create_namespace({"id": ["exist_ok_after_502"], "mode": "ExistOk"})
    sent = rest_backend.proxy.forwarded(rest_backend.is_create)
    assert [s.status for s in sent] == [200, 200], "re-sent once; ExistOk makes it a success"
    assert await rest_backend.held("exist_ok_after_502") == 1
    rest_backend.proxy.clear()


async def test_retries_exhausted_is_the_typed_error_of_the_last_answer(
    backend: Backend,
) -> None:
    if backend.botocore:
        backend.proxy.fail_next(
            5, 429, headers=backend.throttle_headers, body=backend.throttle_body
        )
    else:
        backend.proxy.fail_next(5, 429, headers={"retry-after-ms": "1"})
    async with backend.connect() as ns:
        with pytest.raises(errors.ThrottlingError) as caught:
            await ns.list_namespaces({"id": backend.parent})
    assert caught.value.code == 21
    assert len(backend.proxy.requests) == 5, "max_retries=4: five attempts, then the error"


# -- expired tokens ------------------------------------------------------------------------------

ICEBERG_EXPIRED = json.dumps(
    {"error": {"message": "token expired", "type": "NotAuthorizedException", "code": 401}}
).encode()


@pytest.fixture(scope="module")
def iceberg_oauth(module_dir: Path) -> Iterator[IcebergCatalogServer]:
    secret = f"client-{SECRET_CANARY}"
    with iceberg_catalog(
        module_dir / "iceberg-oauth", require_auth=True, client_secret=secret
    ) as server:
        seed_iceberg(server, namespaces=6, tables=20)
        yield server


async def test_tokens_expiring_mid_crawl_are_refreshed_and_nothing_is_applied_twice(
    iceberg_oauth: IcebergCatalogServer, tmp_path: Path
) -> None:
    server = iceberg_oauth
    with fault_proxy(server.uri) as proxy:
        proxy.expire_tokens_every(40, status=401, body=ICEBERG_EXPIRED)
        properties = {
            "endpoint": proxy.uri,
            "credential": f"cid:{server.client_secret}",
            "root": str(tmp_path),
            "list_concurrency": "4",
            **FAST_RETRIES,
        }
        tokens_before = server.token_requests
        async with lna.connect("iceberg", properties) as ns:
            found = [t.id async for t in lna.crawl(ns, [WH], concurrency=4, page_size=7)]
            for index in range(20):
                await ns.create_namespace({"id": [WH, f"after_expiry_{index}"]})
        expired = proxy.injected["token_expired"]
        creates = proxy.forwarded(
            lambda s: s.method == "POST" and s.target.endswith("/namespaces") and s.status == 200
        )
    assert sorted(found) == expected_iceberg_tables(6, 20)
    assert expired >= 2, "tokens did expire during the crawl"
    assert server.token_requests - tokens_before >= 3, "expired tokens were replaced"
    assert len(creates) == 20, "every create applied exactly once"
    names = server.catalog(WH).list_namespaces()
    assert sum(1 for n in names if n[0].startswith("after_expiry_")) == 20
    print(
        f"\ntoken expiry (iceberg, OAuth2): {expired} expired-token faults injected, "
        f"{expired} survived, {server.token_requests - tokens_before} token requests, "
        f"{len(found)} tables crawled, 0 duplicated, 0 lost, 20 creates applied once"
    )


# -- crawls under faults ---------------------------------------------------------------------


def crawl_faults(backend: Backend) -> list[Fault]:
    """The mix a crawl meets: every kind of fault, each survivable by one retry."""
    throttle = Fault(
        "status",
        status=429,
        headers={**backend.throttle_headers, "retry-after-ms": "20"},
        body=backend.throttle_body or b"",
    )
    return [
        Fault("status", status=503),
        throttle,
        Fault("reset_before"),
        Fault("reset_after"),
        Fault("status_after", status=502),
        Fault("status_after", status=504),
        Fault("delay", seconds=DELAY_SECONDS),
    ]


def seed_dir(root: Path, namespaces: int, tables: int) -> list[tuple[str, ...]]:
    expected: list[tuple[str, ...]] = []
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        for i in range(namespaces):
            for path in ([f"n{i}"], [f"n{i}", "inner"]):
                ns.create_namespace({"id": path})
                for t in range(tables):
                    ns.declare_table({"id": [*path, f"t{t}"]})
                    expected.append((*path, f"t{t}"))
    return sorted(expected)


def seed_iceberg(server: IcebergCatalogServer, namespaces: int, tables: int) -> None:
    from pyiceberg.schema import Schema

    catalog = server.catalog(WH)
    schema = Schema.model_validate(DUMMY_SCHEMA)
    for i in range(namespaces):
        catalog.create_namespace((f"n{i}",), {"iceberg-rest-fixture.namespace": "true"})
        for t in range(tables):
            catalog.create_table(
                (f"n{i}", f"t{t}"),
                schema=schema,
                location=f"{server.warehouse_root}/lance/n{i}/t{t}",
                properties={"table_type": "lance"},
            )


def expected_iceberg_tables(namespaces: int, tables: int) -> list[tuple[str, ...]]:
    return sorted((WH, f"n{i}", f"t{t}") for i in range(namespaces) for t in range(tables))


@dataclass
class CrawlCase:
    backend: Backend
    root: list[str]
    expected: list[tuple[str, ...]]


@pytest.fixture(scope="module")
def dir_tree(module_dir: Path) -> list[tuple[str, ...]]:
    """One directory catalog, served by our adapter and by pylance's, 200 tables."""
    return seed_dir(module_dir / "tree", namespaces=5, tables=20)


@pytest.fixture(scope="module")
def tree_servers(module_dir: Path, dir_tree: list[tuple[str, ...]]) -> Iterator[dict[str, Any]]:
    root = module_dir / "tree"
    ours = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}))
    ours.start()
    try:
        with pylance_adapter(str(root)) as pylance_uri:
            yield {"rest": ours, "rest-pylance": pylance_uri}
    finally:
        ours.stop()


@pytest.fixture(params=BACKENDS)
def crawl_case(
    request: pytest.FixtureRequest, dir_tree: list[tuple[str, ...]]
) -> Iterator[CrawlCase]:
    name = request.param
    if name in ("rest", "rest-pylance"):
        servers = request.getfixturevalue("tree_servers")
        upstream = servers["rest"].uri if name == "rest" else servers["rest-pylance"]
        with fault_proxy(upstream) as proxy:
            backend = Backend(
                name, "rest", proxy, {"uri": proxy.uri, **FAST_RETRIES}, {}, [], *_never()
            )
            yield CrawlCase(backend, [], dir_tree)
        return
    if name == "iceberg":
        server = request.getfixturevalue("iceberg_server")
        if not server.catalog(WH).namespace_exists(("n0",)):
            seed_iceberg(server, namespaces=8, tables=25)
        chosen: Backend = request.getfixturevalue("iceberg_backend")
        expected = expected_iceberg_tables(8, 25)
        root = [WH]
    elif name == "unity":
        server = request.getfixturevalue("unity_server")
        if "main.crawl0" not in server.schemas:
            for i in range(8):
                server.add_schema(CATALOG, f"crawl{i}")
                for t in range(25):
                    server.add_table(
                        CATALOG,
                        f"crawl{i}",
                        f"t{t}",
                        storage_location=f"/tmp/lance-unity-crawl/{i}/{t}",
                        properties={"table_type": "lance"},
                    )
        chosen = request.getfixturevalue("unity_backend")
        expected = sorted((CATALOG, f"crawl{i}", f"t{t}") for i in range(8) for t in range(25))
        root = [CATALOG]
        chosen.proxy.clear()
        yield CrawlCase(chosen, root, expected)
        return
    else:
        endpoint = request.getfixturevalue("glue_server")
        request.getfixturevalue("botocore_without_backoff")
        glue = glue_client(endpoint)
        if not any(d["Name"] == "crawl0" for d in glue.get_databases().get("DatabaseList", [])):
            for i in range(8):
                glue.create_database(DatabaseInput={"Name": f"crawl{i}"})
                for t in range(25):
                    glue.create_table(
                        DatabaseName=f"crawl{i}",
                        TableInput={
                            "Name": f"t{t}",
                            "TableType": "EXTERNAL_TABLE",
                            "Parameters": {"table_type": "lance"},
                            "StorageDescriptor": {"Location": f"/tmp/lance-glue/{i}/{t}"},
                        },
                    )
        chosen = request.getfixturevalue("glue_backend")
        expected = sorted((f"crawl{i}", f"t{t}") for i in range(8) for t in range(25))
        root = []
    chosen.proxy.clear()
    yield CrawlCase(chosen, root, expected)


def _never() -> tuple[Callable[[Seen], bool], Callable[[Seen], bool]]:
    return (lambda seen: False), (lambda seen: False)


def summary(
    label: str, proxy: FaultProxy, found: list[tuple[str, ...]], expected: list[Any]
) -> str:
    injected = sum(proxy.injected.values())
    duplicated = len(found) - len(set(found))
    lost = len(set(expected) - set(found))
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(proxy.injected.items()))
    return (
        f"\n{label}: faults: {injected} injected, {injected} survived, {duplicated} "
        f"duplicated, {lost} lost; {len(found)} of {len(expected)} tables; "
        f"{len(proxy.requests)} requests ({kinds})"
    )


async def test_a_crawl_under_a_mix_of_faults_yields_every_table_exactly_once(
    crawl_case: CrawlCase,
) -> None:
    backend = crawl_case.backend
    backend.proxy.inject_every(3, crawl_faults(backend))
    # every third request is faulted, so with 16 calls in flight one call's retries can
    # meet faults several times running (CI once saw five): a budget of 9 attempts
    # makes that a non-event while a lost or doubled table still fails the test
    async with backend.connect(read_timeout=str(READ_TIMEOUT_MS), max_retries="8") as ns:
        found = [t.id async for t in lna.crawl(ns, crawl_case.root, concurrency=16, page_size=7)]
    proxy = backend.proxy
    line = summary(f"crawl {backend.name}", proxy, found, crawl_case.expected)
    print(line)
    assert sorted(found) == crawl_case.expected, line
    assert len(found) == len(set(found)), "no table twice"
    assert set(proxy.injected) >= {"status", "reset_before", "reset_after", "status_after"}
    assert sum(proxy.injected.values()) >= 10
    proxy.clear()


@pytest.fixture
def unity_to_restart() -> Iterator[UnityServer]:
    with unity_catalog() as server:
        server.add_catalog(CATALOG)
        for i in range(8):
            server.add_schema(CATALOG, f"s{i}")
            for t in range(25):
                server.add_table(
                    CATALOG,
                    f"s{i}",
                    f"t{t}",
                    storage_location=f"/tmp/lance-unity-restart/{i}/{t}",
                    properties={"table_type": "lance"},
                )
        yield server


@pytest.mark.parametrize("name", ["rest", "unity"])
async def test_a_crawl_survives_a_server_restart(name: str, request: pytest.FixtureRequest) -> None:
    """The server goes away mid-crawl (refused connections, dropped requests) and
    comes back; with a retry budget longer than the restart, nothing is lost."""
    restart: Callable[[], str]
    if name == "rest":
        server: AdapterServer = request.getfixturevalue("tree_servers")["rest"]
        expected = request.getfixturevalue("dir_tree")
        upstream, restart, root = server.uri, server.restart, []
        properties: dict[str, str] = {}
    else:
        unity: UnityServer = request.getfixturevalue("unity_to_restart")

        def restart() -> str:
            unity.stop()
            unity.start()
            return unity.uri

        expected = sorted((CATALOG, f"s{i}", f"t{t}") for i in range(8) for t in range(25))
        upstream, root = unity.uri, [CATALOG]
        properties = {"root": "/tmp/unused-lance-root"}
    patient = {"max_retries": "12", "retry_backoff_ms": "50", "retry_max_backoff_ms": "1000"}
    with fault_proxy(upstream) as proxy:
        proxy.restart_at(15, restart)
        key = "uri" if name == "rest" else "endpoint"
        async with lna.connect(name, {key: proxy.uri, **properties, **patient}) as ns:
            found = [t.id async for t in lna.crawl(ns, root, concurrency=16, page_size=7)]
        dropped = len([s for s in proxy.requests if not s.forwarded and s.fault is None])
        requests = len(proxy.requests)
    lost = len(set(expected) - set(found))
    print(
        f"\ncrawl {name} across a server restart: {dropped} requests dropped while it was "
        f"down, all survived, {len(found) - len(set(found))} duplicated, {lost} lost; "
        f"{len(found)} of {len(expected)} tables; {requests} requests"
    )
    assert sorted(found) == expected
    assert len(found) == len(set(found))
    assert dropped, "the restart happened while requests were in flight"
